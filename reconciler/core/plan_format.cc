#include "reconciler/core/plan_format.h"

#include <algorithm>
#include <vector>

#include "reconciler/core/escape.h"
#include "reconciler/core/markdown.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/secrets.h"
#include "reconciler/core/text_table.h"
#include "reconciler/core/time_format.h"
#include "reconciler/core/value.h"

namespace rg::core {
namespace {

struct Row {
  std::string action;
  std::string name;
  std::string submission_id;
  std::string phase;
  std::string reason;
};

// A removed job whose runs have all ended: its record stays in the ledger for a revert, but
// it is no news in a plan, which would otherwise list every spec ever deleted.
bool Settled(const PlanActionIndex& acts, const JobPlan& jp) {
  return jp.phase == Phase::kRemoved && !acts.Acted(jp.name) &&
         (!jp.observed || IsTerminal(jp.observed->status));
}

// The name of what a plan does to a job, from whether it submits it and whether it stops it.
std::string ActionName(const JobPlan& job, bool submit, bool stop) {
  if (submit && stop) return "replace";
  if (submit) return "submit";
  if (stop) return "stop";
  if (job.phase == Phase::kWaiting) return "wait";
  return job.phase == Phase::kBlocked ? "blocked" : "keep";
}

// The phase a row shows: for a stop, the run being stopped as Ray last reported it (a RUNNING
// run is Running, not the Pending of the run that replaces it); else the job's phase.
std::string ActionPhase(const Plan& plan, const Action& a) {
  if (a.kind == ActionKind::kStop && a.stopped_status != RayJobStatus::kUnknown) {
    return std::string(PhaseName(PhaseForRayStatus(a.stopped_status)));
  }
  const JobPlan* jp = plan.FindJob(a.name);
  return jp != nullptr ? std::string(PhaseName(jp->phase)) : "";
}

// A scheduled job's reason, followed by when its next slot comes.
std::string WithNextSlot(std::string reason, const JobPlan* jp) {
  if (jp == nullptr || !jp->next_slot_ms()) return reason;
  if (!reason.empty()) reason += "; ";
  return reason + "next slot " + FormatRfc3339Seconds(*jp->next_slot_ms());
}

// One row per action, then one per job the plan leaves as it is.
std::vector<Row> Rows(const Plan& plan) {
  const PlanActionIndex acts(plan);
  std::vector<Row> rows;
  for (const Action& a : plan.actions) {
    const bool submit = a.kind == ActionKind::kSubmit;
    rows.push_back({submit ? "submit" : "stop", a.name, a.submission_id, ActionPhase(plan, a),
                    submit ? WithNextSlot(a.reason, plan.FindJob(a.name)) : a.reason});
  }
  for (const JobPlan& jp : plan.jobs) {
    if (acts.Acted(jp.name) || Settled(acts, jp)) continue;
    rows.push_back({ActionName(jp, false, false), jp.name,
                    jp.submission_id.empty() ? "-" : jp.submission_id,
                    std::string(PhaseName(jp.phase)), WithNextSlot(jp.message, &jp)});
  }
  return rows;
}

std::string Summary(const Plan& plan) {
  const int submits = plan.CountActions(ActionKind::kSubmit);
  const int stops = plan.CountActions(ActionKind::kStop);
  int keeps = 0;
  int settled = 0;
  const PlanActionIndex acts(plan);
  for (const JobPlan& jp : plan.jobs) {
    if (Settled(acts, jp)) {
      ++settled;
    } else if (!acts.Acted(jp.name)) {
      ++keeps;
    }
  }
  std::string s = std::to_string(submits) + " to submit, " + std::to_string(stops) + " to stop, " +
                  std::to_string(keeps) + " unchanged";
  if (settled > 0) {
    s += ", " + std::to_string(settled) + " removed (kept in the ledger: a revert restores them)";
  }
  if (!plan.unmanaged.empty()) {
    s += ", " + std::to_string(plan.unmanaged.size()) + " unmanaged job(s) left alone";
  }
  return s;
}

const JobSpec* FindSpec(const DesiredState& desired, std::string_view path) {
  for (const JobSpec& s : desired.jobs) {
    if (s.path == path) return &s;
  }
  return nullptr;
}

Value OptionalInt(const std::optional<int>& v) { return v ? Value(*v) : Value(nullptr); }

// Where a submit's run keeps its files (docs/artifacts.md): its run folder, shared by all its
// attempts, and for a verl spec the checkpoint folder in it (trainer.default_local_dir). Empty
// without a shared_root; checkpoint_dir empty for a custom spec or one that sets its own.
struct SubmitFolders {
  std::string run_dir;
  std::string checkpoint_dir;
};

SubmitFolders FoldersOf(const PlanView& view, const Action& submit) {
  SubmitFolders out;
  if (submit.kind != ActionKind::kSubmit || !view.desired->cluster ||
      !view.desired->cluster->shared_root) {
    return out;
  }
  const std::string run_id = RunIdOf(submit.submission_id, submit.attempt);
  out.run_dir = RunDirectory(*view.desired->cluster->shared_root, run_id);
  if (const JobSpec* spec = FindSpec(*view.desired, submit.spec_path); spec != nullptr) {
    out.checkpoint_dir =
        VerlCheckpointDirectory(*spec, *view.desired->cluster, run_id).value_or("");
  }
  return out;
}

// For a retry, what its shared checkpoint folder means: " (attempt N resumes ...)"; else "".
std::string ResumeNote(const Action& submit) {
  if (submit.attempt < 1) return "";
  return " (attempt " + std::to_string(submit.attempt) +
         " resumes from the latest checkpoint its run saved there, if any)";
}

// The text plan's block of verl checkpoint folders, one line per submit of a verl spec.
std::string CheckpointsText(const PlanView& view) {
  std::string lines;
  for (const Action& a : view.plan->actions) {
    const SubmitFolders folders = FoldersOf(view, a);
    if (folders.checkpoint_dir.empty()) continue;
    lines += EscapedLine("  " + a.submission_id + ": " + folders.checkpoint_dir + ResumeNote(a));
  }
  if (lines.empty()) return "";
  return "\nCheckpoints (trainer.default_local_dir, shared by every attempt of a run):\n" + lines;
}

// The JSON plan's `foreign` and `adopted_previous` arrays (docs/plan-format.md).
void AddOwnershipJson(const Plan& plan, Value& root) {
  Value::Array foreign;
  for (const ForeignRepository& other : GroupForeignJobs(plan.foreign)) {
    Value v = Value::Object{};
    v["repo"] = other.repo;
    v["jobs"] = other.jobs;
    v["message"] = ForeignJobsMessage(plan.instance, other);
    foreign.push_back(std::move(v));
  }
  root["foreign"] = std::move(foreign);
  Value::Array previous;
  for (const auto& [url, runs] : plan.adopted_previous) {
    Value v = Value::Object{};
    v["repo"] = url;
    v["runs"] = runs;
    previous.push_back(std::move(v));
  }
  root["adopted_previous"] = std::move(previous);
}

}  // namespace

std::vector<std::string> OwnershipNotices(const Plan& plan) {
  std::vector<std::string> out;
  for (const ForeignRepository& other : GroupForeignJobs(plan.foreign)) {
    out.push_back("Warning: " + ForeignJobsMessage(plan.instance, other));
  }
  for (const auto& [url, runs] : plan.adopted_previous) {
    out.push_back("Note: adopting " + std::to_string(runs) + (runs == 1 ? " run" : " runs") +
                  " recorded under " + url + " (--previous-repo)");
  }
  return out;
}

PlanActionIndex::PlanActionIndex(const Plan& plan) {
  by_name_.reserve(plan.actions.size());
  for (const Action& a : plan.actions) by_name_[a.name].push_back(&a);
}

std::string PlanActionIndex::JobActionName(const JobPlan& job) const {
  bool submit = false;
  bool stop = false;
  if (auto it = by_name_.find(job.name); it != by_name_.end()) {
    for (const Action* a : it->second) (a->kind == ActionKind::kSubmit ? submit : stop) = true;
  }
  return ActionName(job, submit, stop);
}

std::vector<const Action*> PlanActionIndex::Stops(std::string_view name) const {
  std::vector<const Action*> stops;
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    for (const Action* a : it->second) {
      if (a->kind == ActionKind::kStop) stops.push_back(a);
    }
  }
  return stops;
}

namespace {

// With secret_delivery node: the names the Ray nodes' environment must hold, "A, B".
std::string NodeSecretList(const PlanView& view) {
  std::string out;
  for (const std::string& name : NodeSecretNames(*view.desired)) {
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

}  // namespace

std::string FormatPlanText(const PlanView& view) {
  const Plan& plan = *view.plan;
  const std::vector<Row> rows = Rows(plan);
  std::string out;
  if (!view.commit.empty()) {
    out += EscapedLine("Plan for " + view.commit + ": " + Summary(plan));
  } else {
    out += EscapedLine("Plan: " + Summary(plan));
  }
  if (plan.blocked) out += EscapedLine("BLOCKED: " + plan.blocked_reason);
  if (!view.ledger_note.empty()) out += EscapedLine("Note: " + view.ledger_note);
  for (const std::string& notice : OwnershipNotices(plan)) out += EscapedLine(notice);
  for (const Diagnostic& d : view.desired->AllDiagnostics()) out += EscapedLine(d.ToString());
  if (const std::string names = NodeSecretList(view); !names.empty()) {
    out += EscapedLine("Secrets expected in the Ray nodes' environment: " + names +
                       " (secret_delivery: node: Ray expands ${NAME} on each node from its "
                       "environment; ray-gitops sends no value)");
  }
  if (rows.empty()) return out + "No jobs.\n";
  std::vector<TextRow> table = {{"ACTION", "NAME", "SUBMISSION_ID", "PHASE", "REASON"}};
  for (const Row& r : rows) {
    table.push_back({r.action, r.name, r.submission_id, r.phase, r.reason});
  }
  AppendTextTable(table, out);
  out += CheckpointsText(view);
  const PlanActionIndex acts(plan);
  for (const auto& [name, change] : view.job_changes) {
    const JobPlan* jp = plan.FindJob(name);
    const std::string text = JobChangesText(change, "  ");
    if (jp == nullptr || text.empty()) continue;
    out += "\n";
    out += EscapedLine(acts.JobActionName(*jp) + " " + name + ":");
    out += text;
  }
  for (const ClusterDiff& c : view.cluster_changes) out += "\n" + ClusterChangesText(c);
  return out;
}

namespace {

std::string MarkdownHeader(const PlanView& view) {
  const Plan& plan = *view.plan;
  std::string out = "### ray-gitops plan";
  if (!view.commit.empty()) out += " for " + MarkdownCode(view.commit.substr(0, 12));
  out += "\n\n**" + EscapeMarkdownText(Summary(plan)) + ".**\n\n";
  if (plan.blocked) out += "> **Blocked:** " + EscapeMarkdownText(plan.blocked_reason) + "\n\n";
  if (!view.ledger_note.empty()) {
    out += "> **Note:** " + EscapeMarkdownText(view.ledger_note) + "\n\n";
  }
  for (const std::string& notice : OwnershipNotices(plan)) {
    out += "> " + EscapeMarkdownText(notice) + "\n\n";
  }
  if (const std::vector<std::string> names = NodeSecretNames(*view.desired); !names.empty()) {
    out += "> **Secrets expected in the Ray nodes' environment:**";
    for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? " " : ", ") + MarkdownCode(names[i]);
    out += " (" + MarkdownCode("secret_delivery: node") + ": Ray expands " +
           MarkdownCode("${NAME}") +
           " on each node from its environment; ray-gitops sends no value)\n\n";
  }
  const Diagnostics diagnostics = view.desired->AllDiagnostics();
  if (!diagnostics.empty()) {
    out += "Invalid files (their jobs are frozen: nothing is submitted or stopped):\n\n";
    for (const Diagnostic& d : diagnostics) out += "- " + MarkdownCode(d.ToString()) + "\n";
    out += "\n";
  }
  return out;
}

std::string MarkdownTable(const Plan& plan) {
  const std::vector<Row> rows = Rows(plan);
  if (rows.empty()) return "";
  std::string out = "| action | job | submission id | phase | reason |\n|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    out += "| " + r.action + " | " + EscapeMarkdownText(r.name) + " | " +
           MarkdownCodeCell(r.submission_id) + " | " + r.phase + " | " +
           EscapeMarkdownText(r.reason) + " |\n";
  }
  return out + "\n";
}

// Why a submit starts a new run: a rename, or a changed spec whose old run is stopped first.
std::string MarkdownSubmitCause(const PlanView& view, const PlanActionIndex& acts,
                                const Action& submit) {
  const Plan& plan = *view.plan;
  const JobPlan* jp = plan.FindJob(submit.name);
  if (jp == nullptr) return "";
  std::string out;
  if (!jp->renamed_from.empty()) {
    out += "Renamed from " + MarkdownCode(jp->renamed_from) + " (" +
           MarkdownCode(jp->renamed_from_path) +
           "): the content is the same, but the name is part of the submission id, so this "
           "starts a new run. Pin " +
           MarkdownCode("name: " + jp->renamed_from) + " in the spec to keep the run.\n\n";
  }
  if (jp->spec_changed) {
    const JobSpec* spec = FindSpec(*view.desired, submit.spec_path);
    out += "Spec changed: hash " + MarkdownCode(jp->previous_spec_hash) + " -> " +
           MarkdownCode(spec != nullptr ? spec->spec_hash : std::string("?")) + ".";
    for (const Action* s : acts.Stops(submit.name)) {
      out += " The old run " + MarkdownCode(s->submission_id) + " is stopped first.";
    }
    out += "\n\n";
  }
  return out;
}

// What the submission changes: the field and rendered diff of a replaced job, else the rendered
// submission of a new one, one entrypoint word per line.
std::string MarkdownSubmitChanges(const PlanView& view, const Action& submit) {
  if (auto it = view.job_changes.find(submit.name); it != view.job_changes.end()) {
    return JobChangesMarkdown(it->second);
  }
  const JobSpec* spec = FindSpec(*view.desired, submit.spec_path);
  if (spec == nullptr || !view.desired->cluster) return "";
  const RayConfig& cluster = *view.desired->cluster;
  return JobChangesMarkdown(DiffJob(nullptr, nullptr, spec, &cluster, view.context.instance));
}

// A verl submit's checkpoint folder, shared by the attempts of its run.
std::string MarkdownCheckpoints(const PlanView& view, const Action& submit) {
  const SubmitFolders folders = FoldersOf(view, submit);
  if (folders.checkpoint_dir.empty()) return "";
  return "Checkpoints: " + MarkdownCode(folders.checkpoint_dir) + ResumeNote(submit) + ".\n\n";
}

std::string MarkdownSubmitDetails(const PlanView& view, const PlanActionIndex& acts,
                                  const Action& submit) {
  return "<details><summary>submit <code>" + EscapeHtml(submit.submission_id) + "</code> (<code>" +
         EscapeHtml(submit.spec_path) + "</code>)</summary>\n\n" +
         MarkdownSubmitCause(view, acts, submit) + MarkdownCheckpoints(view, submit) +
         MarkdownSubmitChanges(view, submit) + "</details>\n\n";
}

}  // namespace

std::string FormatPlanMarkdown(const PlanView& view) {
  const Plan& plan = *view.plan;
  std::string out = MarkdownHeader(view) + MarkdownTable(plan);
  const PlanActionIndex acts(plan);
  for (const Action& a : plan.actions) {
    if (a.kind == ActionKind::kSubmit) out += MarkdownSubmitDetails(view, acts, a);
  }
  for (const ClusterDiff& c : view.cluster_changes) out += ClusterChangesMarkdown(c);
  if (plan.CountActions(ActionKind::kSubmit) > 0) {
    out +=
        "_cluster.yaml defaults apply to the next submission; running jobs are not "
        "restarted when only cluster.yaml changes._\n";
  }
  return out;
}

namespace {

Value SummaryJson(const Plan& plan) {
  Value summary = Value::Object{};
  summary["submit"] = plan.CountActions(ActionKind::kSubmit);
  summary["stop"] = plan.CountActions(ActionKind::kStop);
  summary["blocked"] = plan.blocked;
  summary["blocked_reason"] = plan.blocked_reason;
  summary["has_changes"] = plan.HasChanges();
  return summary;
}

Value ActionsJson(const PlanView& view) {
  Value::Array actions;
  for (const Action& a : view.plan->actions) {
    Value v = Value::Object{};
    v["action"] = a.kind == ActionKind::kStop ? "stop" : "submit";
    v["name"] = a.name;
    v["submission_id"] = a.submission_id;
    v["attempt"] = a.attempt;
    v["reason"] = a.reason;
    if (a.kind == ActionKind::kStop) v["stop_reason"] = std::string(StopReasonName(a.stop_reason));
    if (a.kind == ActionKind::kSubmit) {
      v["spec_path"] = a.spec_path;
      const SubmitFolders folders = FoldersOf(view, a);
      v["run_dir"] = folders.run_dir.empty() ? Value(nullptr) : Value(folders.run_dir);
      v["checkpoint_dir"] =
          folders.checkpoint_dir.empty() ? Value(nullptr) : Value(folders.checkpoint_dir);
    }
    if (!a.slot.empty()) v["slot"] = a.slot;
    actions.push_back(std::move(v));
  }
  return actions;
}

Value JobJson(const PlanActionIndex& acts, const JobPlan& jp) {
  Value v = Value::Object{};
  v["name"] = jp.name;
  v["action"] = acts.JobActionName(jp);
  v["spec_path"] = jp.spec_path;
  v["phase"] = std::string(PhaseName(jp.phase));
  v["submission_id"] = jp.submission_id;
  v["attempt"] = OptionalInt(jp.attempt);
  v["message"] = jp.message;
  v["ray_status"] =
      jp.observed ? Value(std::string(RayJobStatusName(jp.observed->status))) : Value(nullptr);
  v["spec_changed"] = jp.spec_changed;
  v["previous_spec_hash"] = jp.previous_spec_hash;
  Value renamed = nullptr;
  if (!jp.renamed_from.empty()) {
    renamed = Value::Object{};
    renamed["name"] = jp.renamed_from;
    renamed["spec_path"] = jp.renamed_from_path;
  }
  v["renamed_from"] = std::move(renamed);
  v["next_slot"] =
      jp.next_slot_ms() ? Value(FormatRfc3339Seconds(*jp.next_slot_ms())) : Value(nullptr);
  return v;
}

Value UnmanagedJson(const Plan& plan) {
  Value::Array unmanaged;
  for (const RayJob& job : plan.unmanaged) {
    Value v = Value::Object{};
    v["submission_id"] = job.submission_id;
    v["status"] = std::string(RayJobStatusName(job.status));
    unmanaged.push_back(std::move(v));
  }
  return unmanaged;
}

}  // namespace

std::string FormatPlanJson(const PlanView& view) {
  const Plan& plan = *view.plan;
  Value root = Value::Object{};
  root["format_version"] = kPlanFormatVersion;
  root["commit"] = view.commit;
  root["ledger_note"] = view.ledger_note;
  root["summary"] = SummaryJson(plan);
  root["actions"] = ActionsJson(view);
  Value::Array jobs;
  const PlanActionIndex acts(plan);
  for (const JobPlan& jp : plan.jobs) {
    Value job = JobJson(acts, jp);
    auto change = view.job_changes.find(jp.name);
    job["changes"] =
        change == view.job_changes.end() ? Value(nullptr) : JobChangesJson(change->second);
    jobs.push_back(std::move(job));
  }
  root["jobs"] = std::move(jobs);
  Value::Array cluster_changes;
  for (const ClusterDiff& c : view.cluster_changes) {
    cluster_changes.push_back(ClusterChangesJson(c));
  }
  root["cluster_changes"] = std::move(cluster_changes);
  Value::Array node_secrets;
  for (std::string& name : NodeSecretNames(*view.desired)) {
    node_secrets.emplace_back(std::move(name));
  }
  root["node_secrets"] = std::move(node_secrets);
  root["unmanaged"] = UnmanagedJson(plan);
  AddOwnershipJson(plan, root);
  Value::Array diagnostics;
  for (const Diagnostic& d : view.desired->AllDiagnostics()) diagnostics.push_back(d.ToString());
  root["diagnostics"] = std::move(diagnostics);
  return ToPrettyJson(root) + "\n";
}

}  // namespace rg::core
