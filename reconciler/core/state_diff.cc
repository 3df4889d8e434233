#include "reconciler/core/state_diff.h"

#include <algorithm>
#include <map>
#include <optional>

#include "reconciler/core/escape.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/markdown.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/render.h"
#include "reconciler/core/text_table.h"

namespace rg::core {
namespace {

// Lines of context around each changed rendered line.
constexpr int kRenderedContext = 2;

Result<std::vector<std::string>> RenderedLines(const JobSpec& spec, const RayConfig& cluster,
                                               std::string_view instance) {
  RenderContext context;
  context.instance = std::string(instance);
  Result<Value> body = RenderSubmission(spec, cluster, context);
  if (!body.ok()) return body.error();
  return SubmissionLines(RedactSecrets(*body));
}

// One side's rendered lines; empty with `error` set when it cannot be rendered.
std::vector<std::string> SideLines(const JobSpec* spec, const RayConfig* cluster,
                                   std::string_view instance, std::string_view side,
                                   std::string& error) {
  if (spec == nullptr || cluster == nullptr) return {};
  Result<std::vector<std::string>> lines = RenderedLines(*spec, *cluster, instance);
  if (lines.ok()) return std::move(*lines);
  if (!error.empty()) error += "; ";
  error += std::string(side) + " cannot be rendered: " + lines.error().message();
  return {};
}

// The values of secret-named env vars (IsSecretEnvName) in a field diff: that one changed is
// news for a reviewer, its value is not.
void RedactSecretFields(std::vector<FieldChange>& fields) {
  for (FieldChange& f : fields) {
    const size_t env = f.field.find("env_vars.");
    if (env == std::string::npos) continue;
    if (!IsSecretEnvName(std::string_view(f.field).substr(env + 9))) continue;
    if (f.before) f.before = std::string(kRedacted);
    if (f.after) f.after = std::string(kRedacted);
  }
}

bool SameRun(const JobSpec& base, const JobSpec& head) {
  return head.IsCurrentHash(base.spec_hash) || base.IsCurrentHash(head.spec_hash);
}

// The names of the fields that changed, at their top level: "annotations, retries".
std::string ChangedTopFields(const std::vector<FieldChange>& fields) {
  std::vector<std::string> tops;
  for (const FieldChange& f : fields) {
    std::string top = f.field.substr(0, f.field.find('.'));
    if (std::ranges::find(tops, top) == tops.end()) tops.push_back(std::move(top));
  }
  std::string out;
  for (const std::string& t : tops) out += (out.empty() ? "" : ", ") + t;
  return out;
}

void DecideBothSides(const JobSpec& base, const JobSpec& head, JobDiff& d) {
  const bool same = SameRun(base, head);
  const std::string hashes = " (spec hash " + base.spec_hash + " -> " + head.spec_hash + ")";
  if (head.suspend) {
    if (same && base.suspend) {
      d.action = DiffAction::kUnchanged;
      d.reason = "suspended";
    } else {
      d.action = DiffAction::kStop;
      d.reason = same ? "suspended: the run is stopped if active"
                      : "spec changed and suspended: the old run is stopped if active, nothing "
                        "new is submitted" +
                            hashes;
    }
  } else if (!same && d.fields.empty() && !head.pipeline().after.empty()) {
    // Its own file is as it was: the identity it takes from its upstreams changed.
    std::string after;
    for (const std::string& name : head.pipeline().after) {
      if (!after.empty()) after += ", ";
      after += name;
    }
    d.action = DiffAction::kReplace;
    d.reason = "a job it runs after changed (after: " + after + ")" + hashes +
               ": the old run is stopped if active, a new one starts once the new upstream run "
               "has succeeded";
  } else if (!same) {
    d.action = DiffAction::kReplace;
    d.reason = "spec changed" + hashes + ": the old run is stopped if active, a new one starts";
  } else if (base.suspend) {
    d.action = DiffAction::kSubmit;
    d.reason = "resumed (suspend: true -> false)";
  } else {
    d.action = DiffAction::kUnchanged;
    d.reason =
        d.fields.empty() ? "" : "only " + ChangedTopFields(d.fields) + " changed: the run is kept";
  }
  if (base.path != head.path) {
    d.reason += std::string(d.reason.empty() ? "" : "; ") + "moved from " + base.path;
  }
}

void Decide(const JobSpec* base, const JobSpec* head, JobDiff& d) {
  if (base == nullptr && head != nullptr) {
    d.action = head->suspend ? DiffAction::kUnchanged : DiffAction::kSubmit;
    d.reason = head->suspend ? "new spec, suspended: nothing is submitted" : "new spec";
  } else if (base != nullptr && head == nullptr) {
    const bool keep = base->on_remove == OnRemove::kKeep;
    d.action = keep ? DiffAction::kUnchanged : DiffAction::kStop;
    d.reason = keep ? "spec removed; on_remove: keep leaves its run alone"
                    : "spec removed: its run is stopped if active";
  } else if (base != nullptr && head != nullptr) {
    DecideBothSides(*base, *head, d);
  }
}

}  // namespace

std::string_view DiffActionName(DiffAction action) {
  switch (action) {
    case DiffAction::kSubmit:
      return "submit";
    case DiffAction::kReplace:
      return "replace";
    case DiffAction::kStop:
      return "stop if active";
    case DiffAction::kUnchanged:
      return "unchanged";
    case DiffAction::kInvalid:
      return "invalid";
  }
  return "unchanged";
}

bool StateDiff::RunsChange() const {
  return !cluster.reached.empty() ||
         std::ranges::any_of(jobs, [](const JobDiff& j) { return j.ChangesRuns(); });
}

bool StateDiff::HasErrors() const {
  return !cluster.diagnostics.empty() || std::ranges::any_of(jobs, [](const JobDiff& j) {
    return j.action == DiffAction::kInvalid;
  });
}

int StateDiff::Count(DiffAction action) const {
  return static_cast<int>(
      std::ranges::count_if(jobs, [action](const JobDiff& j) { return j.action == action; }));
}

JobDiff DiffJob(const JobSpec* base, const RayConfig* base_cluster, const JobSpec* head,
                const RayConfig* head_cluster, std::string_view instance) {
  JobDiff d;
  d.name = head != nullptr ? head->name : (base != nullptr ? base->name : "");
  if (base != nullptr) {
    d.base_path = base->path;
    d.base_submission_id = SubmissionIdForAttempt(*base, 0);
  }
  if (head != nullptr) {
    d.head_path = head->path;
    d.head_submission_id = SubmissionIdForAttempt(*head, 0);
  }
  if (base != nullptr && head != nullptr) d.fields = DiffFields(base->document, head->document);
  RedactSecretFields(d.fields);
  Decide(base, head, d);
  if (head == nullptr) return d;  // removed: nothing is rendered again
  const std::vector<std::string> before =
      SideLines(base, base_cluster, instance, "the base spec", d.render_error);
  const std::vector<std::string> after =
      SideLines(head, head_cluster, instance, "the head spec", d.render_error);
  d.rendered = DiffLines(before, after);
  return d;
}

namespace {

template <typename T>
using ByName = std::map<std::string, const T*, std::less<>>;

template <typename T>
ByName<T> IndexByName(const std::vector<T>& items) {
  ByName<T> out;
  for (const T& item : items) out.emplace(item.name, &item);
  return out;
}

JobDiff InvalidJobDiff(const InvalidSpec& invalid, const JobSpec* base) {
  JobDiff d;
  d.name = invalid.name;
  d.action = DiffAction::kInvalid;
  d.reason = "invalid: nothing is submitted or stopped for it until it is fixed";
  d.head_path = invalid.path;
  if (base != nullptr) {
    d.base_path = base->path;
    d.base_submission_id = SubmissionIdForAttempt(*base, 0);
  }
  d.diagnostics = invalid.diagnostics;
  return d;
}

// A spec that moved to a path with another derived name keeps its content (the hash leaves the
// name out) but gets a new id: say so on both sides.
void MarkRenames(std::vector<JobDiff>& jobs, const ByName<JobSpec>& base,
                 const ByName<JobSpec>& head) {
  for (JobDiff& added : jobs) {
    if (added.action != DiffAction::kSubmit || !added.base_path.empty()) continue;
    const JobSpec& spec = *head.at(added.name);
    for (JobDiff& removed : jobs) {
      if (!removed.head_path.empty() || removed.base_path.empty()) continue;
      const JobSpec& old = *base.at(removed.name);
      if (!SameRun(old, spec)) continue;
      added.reason = "renamed from " + removed.name + " (" + removed.base_path +
                     "): the name is part of the submission id, so this is a new run; pin "
                     "`name: " +
                     removed.name + "` to keep the old one";
      removed.reason += " (renamed to " + added.name + ")";
      break;
    }
  }
}

ClusterDiff DiffClusters(const DesiredState& base, const DesiredState& head,
                         std::string_view instance, std::vector<JobDiff>& jobs) {
  std::vector<const JobSpec*> specs;
  for (const JobDiff& job : jobs) {
    if (job.head_path.empty() || job.action == DiffAction::kInvalid) continue;
    for (const JobSpec& s : head.jobs) {
      if (s.name == job.name) specs.push_back(&s);
    }
  }
  ClusterDiff c = DiffCluster(base.cluster ? &*base.cluster : nullptr,
                              head.cluster ? &*head.cluster : nullptr, specs, instance);
  c.diagnostics = head.cluster_diagnostics;
  for (JobDiff& job : jobs) {
    if (std::ranges::find(c.reached, job.name) == c.reached.end()) continue;
    job.reached_by_cluster = true;
    if (job.reason.empty()) job.reason = c.path + " changes its next submission";
  }
  return c;
}

}  // namespace

ClusterDiff DiffCluster(const RayConfig* base, const RayConfig* head,
                        const std::vector<const JobSpec*>& specs, std::string_view instance) {
  ClusterDiff c;
  if (head != nullptr) c.path = head->path;
  const Value before = base != nullptr ? ClusterDocument(*base) : Value(Value::Object{});
  const Value after = head != nullptr ? ClusterDocument(*head) : Value(Value::Object{});
  c.fields = DiffFields(before, after);
  RedactSecretFields(c.fields);
  if (c.fields.empty() || head == nullptr) return c;
  for (const JobSpec* spec : specs) {
    std::string ignored;
    const std::vector<std::string> now = SideLines(spec, head, instance, "", ignored);
    const std::vector<std::string> was = SideLines(spec, base, instance, "", ignored);
    if (now != was) c.reached.push_back(spec->name);
  }
  return c;
}

namespace {

// A job whose code folder's tree moved: the reason says so, and which files changed.
void NoteCodeChange(const JobSpec& base, const JobSpec& head, const CodeChangeLister& lister,
                    JobDiff& d) {
  if (!head.has_code() || d.action != DiffAction::kReplace) return;
  const std::string& from = base.code().tree_id;
  const std::string& to = head.code().tree_id;
  if (from == to || to.empty()) return;
  if (from.empty()) {
    d.reason = "code added: " + head.code().folder + "; " + d.reason;
    return;
  }
  const std::string change = DescribeCodeChange(head.code().folder, from, to, lister);
  if (d.fields.empty()) {
    d.reason = change + " (spec hash " + base.spec_hash + " -> " + head.spec_hash +
               "): the old run is stopped if active, a new one starts";
  } else {
    d.reason = change + "; " + d.reason;
  }
}

}  // namespace

StateDiff DiffStates(const DesiredState& base, const DesiredState& head, std::string_view instance,
                     const CodeChangeLister& code_changes) {
  const ByName<JobSpec> base_jobs = IndexByName(base.jobs);
  const ByName<JobSpec> head_jobs = IndexByName(head.jobs);
  const ByName<InvalidSpec> head_invalid = IndexByName(head.invalid);
  const RayConfig* base_cluster = base.cluster ? &*base.cluster : nullptr;
  const RayConfig* head_cluster = head.cluster ? &*head.cluster : nullptr;
  std::map<std::string, bool, std::less<>> names;
  for (const auto& index : {base_jobs, head_jobs}) {
    for (const auto& [name, spec] : index) names[name] = true;
  }
  for (const auto& [name, invalid] : head_invalid) names[name] = true;

  StateDiff diff;
  for (const auto& [name, unused] : names) {
    auto b = base_jobs.find(name);
    const JobSpec* base_spec = b == base_jobs.end() ? nullptr : b->second;
    if (auto bad = head_invalid.find(name); bad != head_invalid.end()) {
      diff.jobs.push_back(InvalidJobDiff(*bad->second, base_spec));
      continue;
    }
    auto h = head_jobs.find(name);
    const JobSpec* head_spec = h == head_jobs.end() ? nullptr : h->second;
    diff.jobs.push_back(DiffJob(base_spec, base_cluster, head_spec, head_cluster, instance));
    if (base_spec != nullptr && head_spec != nullptr) {
      NoteCodeChange(*base_spec, *head_spec, code_changes, diff.jobs.back());
    }
  }
  MarkRenames(diff.jobs, base_jobs, head_jobs);
  diff.cluster = DiffClusters(base, head, instance, diff.jobs);
  return diff;
}

std::vector<DiffLine> RenderedChanges(const JobDiff& diff) {
  if (diff.base_path.empty() || diff.head_path.empty()) return diff.rendered;  // all new
  return TrimToContext(diff.rendered, kRenderedContext);
}

// ---- formats ----

namespace {

std::string Plural(int n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string Summary(const StateDiff& diff) {
  std::string s = std::to_string(diff.Count(DiffAction::kSubmit)) + " to submit, " +
                  std::to_string(diff.Count(DiffAction::kReplace)) + " to replace, " +
                  std::to_string(diff.Count(DiffAction::kStop)) + " to stop if active, " +
                  std::to_string(diff.Count(DiffAction::kUnchanged)) + " unchanged";
  if (const int invalid = diff.Count(DiffAction::kInvalid); invalid > 0) {
    s += ", " + std::to_string(invalid) + " invalid";
  }
  if (!diff.cluster.reached.empty()) {
    s += "; " + diff.cluster.path + " changes the next submission of " +
         Plural(static_cast<int>(diff.cluster.reached.size()), "job", "jobs");
  } else if (!diff.cluster.fields.empty()) {
    s += "; " + diff.cluster.path + " changed, reaching no job's submission";
  }
  return s;
}

// Worth a row and a details block: it acts, it is invalid, or something about it changed.
bool Notable(const JobDiff& j) {
  return j.action != DiffAction::kUnchanged || !j.fields.empty() || j.reached_by_cluster ||
         !j.reason.empty();
}

std::string IdChange(const JobDiff& j) {
  if (j.base_submission_id.empty()) return j.head_submission_id;
  if (j.head_submission_id.empty() || j.head_submission_id == j.base_submission_id) {
    return j.base_submission_id;
  }
  return j.base_submission_id + " -> " + j.head_submission_id;
}

std::string ClusterNote(const ClusterDiff& c) {
  std::string names;
  for (const std::string& n : c.reached) names += (names.empty() ? "" : ", ") + n;
  return "reaches the next submission of " +
         Plural(static_cast<int>(c.reached.size()), "job", "jobs") + ": " + names +
         " (a running run keeps what it was submitted with; a retry or a replace takes the "
         "change)";
}

}  // namespace

std::string JobChangesText(const JobDiff& d, std::string_view indent) {
  const std::string in(indent);
  const std::string item = in + "  ";
  std::string out;
  for (const Diagnostic& diag : d.diagnostics) out += EscapedLine(diag.ToString(), in);
  if (!d.fields.empty()) {
    out += in + "fields:\n";
    for (const FieldChange& f : d.fields) out += EscapedLine(FormatFieldChange(f), item);
  }
  const std::vector<DiffLine> rendered = RenderedChanges(d);
  if (HasChanges(rendered)) {
    out += in + "rendered submission:\n";
    for (const DiffLine& l : rendered) {
      out += EscapedLine(std::string(1, l.op) + " " + l.text, item);
    }
  }
  if (!d.render_error.empty()) out += EscapedLine(d.render_error, in);
  return out;
}

std::string ClusterChangesText(const ClusterDiff& c) {
  if (c.fields.empty() && c.diagnostics.empty()) return "";
  std::string out = EscapedLine(c.path + (c.fields.empty() ? "" : " changed") +
                                (c.since.empty() ? "" : " since " + c.since) + ":");
  for (const Diagnostic& diag : c.diagnostics) out += EscapedLine(diag.ToString(), "  ");
  for (const FieldChange& f : c.fields) out += EscapedLine(FormatFieldChange(f), "  ");
  if (!c.reached.empty()) out += EscapedLine(ClusterNote(c), "  ");
  return out;
}

std::string FormatDiffText(const StateDiff& diff) {
  std::string out =
      EscapedLine("Diff " + diff.base_label + " -> " + diff.head_label + ": " + Summary(diff));
  std::vector<TextRow> table = {{"ACTION", "NAME", "SUBMISSION_ID", "SPEC", "REASON"}};
  for (const JobDiff& j : diff.jobs) {
    if (!Notable(j)) continue;
    table.push_back({std::string(DiffActionName(j.action)), j.name, IdChange(j),
                     j.head_path.empty() ? j.base_path : j.head_path, j.reason});
  }
  if (table.size() > 1) out += "\n" + FormatTextTable(table);
  for (const JobDiff& j : diff.jobs) {
    const std::string changes = JobChangesText(j, "  ");
    if (changes.empty()) continue;
    out += "\n" + EscapedLine(std::string(DiffActionName(j.action)) + " " + j.name + ":") + changes;
  }
  if (const std::string c = ClusterChangesText(diff.cluster); !c.empty()) out += "\n" + c;
  return out;
}

// ---- Markdown ----

// Markdown (markdown.h): every value is escaped text, a code span, or, in the <summary> of
// an HTML block, EscapeHtml; the lines of a code block are EscapeText's, each value on one.

std::string JobChangesMarkdown(const JobDiff& d) {
  std::string out;
  if (!d.diagnostics.empty()) {
    std::string text;
    for (const Diagnostic& diag : d.diagnostics) text += EscapedLine(diag.ToString());
    out += CodeBlock(text, "text") + "\n";
  }
  if (!d.fields.empty()) {
    out += "Fields:\n\n";
    for (const FieldChange& f : d.fields) out += "- " + MarkdownCode(FormatFieldChange(f)) + "\n";
    out += "\n";
  }
  const std::vector<DiffLine> rendered = RenderedChanges(d);
  if (HasChanges(rendered)) {
    std::string text;
    for (const DiffLine& l : rendered) text += EscapedLine(std::string(1, l.op) + " " + l.text);
    out += "Rendered submission:\n\n" + CodeBlock(text, "diff") + "\n";
  }
  if (!d.render_error.empty()) out += "> " + EscapeMarkdownText(d.render_error) + "\n\n";
  return out;
}

std::string ClusterChangesMarkdown(const ClusterDiff& c) {
  if (c.fields.empty() && c.diagnostics.empty()) return "";
  std::string body;
  for (const Diagnostic& diag : c.diagnostics) body += EscapedLine(diag.ToString());
  for (const FieldChange& f : c.fields) body += EscapedLine(FormatFieldChange(f));
  std::string out = "<details><summary><code>" + EscapeHtml(c.path) + "</code> changed";
  if (!c.since.empty()) out += " since <code>" + EscapeHtml(c.since) + "</code>";
  if (!c.reached.empty()) {
    out += ": " + Plural(static_cast<int>(c.reached.size()), "job", "jobs") + " reached";
  }
  out += "</summary>\n\n" + CodeBlock(body, "text") + "\n";
  if (!c.reached.empty()) out += EscapeMarkdownText(ClusterNote(c)) + "\n\n";
  return out + "</details>\n\n";
}

std::string FormatDiffMarkdown(const StateDiff& diff) {
  std::string out = "### ray-gitops diff " + MarkdownCode(diff.base_label) + " → " +
                    MarkdownCode(diff.head_label) + "\n\n";
  out += std::string(diff.RunsChange() ? "**Runs change:** " : "**No effect on runs:** ") +
         EscapeMarkdownText(Summary(diff)) + ".\n\n";
  std::string table;
  for (const JobDiff& j : diff.jobs) {
    if (!Notable(j)) continue;
    table += "| " + std::string(DiffActionName(j.action)) + " | " + EscapeMarkdownText(j.name) +
             " | " + MarkdownCodeCell(IdChange(j)) + " | " +
             EscapeMarkdownText(j.head_path.empty() ? j.base_path : j.head_path) + " | " +
             EscapeMarkdownText(j.reason) + " |\n";
  }
  if (!table.empty()) {
    out +=
        "| action | job | submission id | spec | reason |\n|---|---|---|---|---|\n" + table + "\n";
  }
  for (const JobDiff& j : diff.jobs) {
    const std::string changes = JobChangesMarkdown(j);
    if (changes.empty()) continue;
    out += "<details><summary>" + std::string(DiffActionName(j.action)) + " <code>" +
           EscapeHtml(j.name) + "</code></summary>\n\n" + changes + "</details>\n\n";
  }
  return out + ClusterChangesMarkdown(diff.cluster);
}

// ---- JSON ----

namespace {

Value OptionalString(const std::optional<std::string>& s) { return s ? Value(*s) : Value(nullptr); }

Value FieldsJson(const std::vector<FieldChange>& fields) {
  Value::Array out;
  for (const FieldChange& f : fields) {
    Value v = Value::Object{};
    v["field"] = f.field;
    v["before"] = OptionalString(f.before);
    v["after"] = OptionalString(f.after);
    v["item"] = f.item;
    v["text"] = FormatFieldChange(f);
    out.push_back(std::move(v));
  }
  return out;
}

Value LinesJson(const std::vector<DiffLine>& lines) {
  Value::Array out;
  for (const DiffLine& l : lines) {
    Value v = Value::Object{};
    v["op"] = std::string(1, l.op);
    v["text"] = l.text;
    out.push_back(std::move(v));
  }
  return out;
}

Value DiagnosticsJson(const Diagnostics& diagnostics) {
  Value::Array out;
  for (const Diagnostic& d : diagnostics) out.emplace_back(d.ToString());
  return out;
}

}  // namespace

Value JobChangesJson(const JobDiff& d) {
  Value v = Value::Object{};
  v["fields"] = FieldsJson(d.fields);
  v["rendered"] = LinesJson(RenderedChanges(d));
  v["render_error"] = d.render_error;
  v["reached_by_cluster"] = d.reached_by_cluster;
  v["diagnostics"] = DiagnosticsJson(d.diagnostics);
  return v;
}

Value ClusterChangesJson(const ClusterDiff& c) {
  Value v = Value::Object{};
  v["path"] = c.path;
  v["since"] = c.since;
  v["fields"] = FieldsJson(c.fields);
  Value::Array reached;
  for (const std::string& n : c.reached) reached.emplace_back(n);
  v["reaches"] = std::move(reached);
  v["diagnostics"] = DiagnosticsJson(c.diagnostics);
  return v;
}

std::string FormatDiffJson(const StateDiff& diff) {
  Value root = Value::Object{};
  root["format_version"] = kDiffFormatVersion;
  root["base"] = diff.base_label;
  root["head"] = diff.head_label;
  Value summary = Value::Object{};
  for (DiffAction a : {DiffAction::kSubmit, DiffAction::kReplace, DiffAction::kStop,
                       DiffAction::kUnchanged, DiffAction::kInvalid}) {
    std::string key(DiffActionName(a));
    std::ranges::replace(key, ' ', '_');
    summary[key] = diff.Count(a);
  }
  summary["runs_change"] = diff.RunsChange();
  summary["errors"] = diff.HasErrors();
  root["summary"] = std::move(summary);
  Value::Array jobs;
  for (const JobDiff& j : diff.jobs) {
    Value v = JobChangesJson(j);
    v["name"] = j.name;
    v["action"] = std::string(DiffActionName(j.action));
    v["reason"] = j.reason;
    v["base_spec_path"] = j.base_path;
    v["head_spec_path"] = j.head_path;
    v["base_submission_id"] = j.base_submission_id;
    v["head_submission_id"] = j.head_submission_id;
    jobs.push_back(std::move(v));
  }
  root["jobs"] = std::move(jobs);
  root["cluster"] = ClusterChangesJson(diff.cluster);
  return ToPrettyJson(root) + "\n";
}

}  // namespace rg::core
