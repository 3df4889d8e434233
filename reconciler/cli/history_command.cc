// `ray-gitops history NAME`: the audit trail of one job from the status branch, oldest first,
// one row per transition of each attempt (core::JobHistory), an attempt's end with Ray's
// error_type and its failure class, and the commit that caused the transition (a submit's, a
// stop's; else the spec commit) with its author. --format text (a table) or json. Exit 0; 1 when the name has no history or the
// branch cannot be read.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/adapters/git_commit_author.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/cli/logging.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/status_transitions.h"
#include "reconciler/core/text_table.h"
#include "reconciler/core/time_format.h"
#include "reconciler/core/value.h"

namespace rg::cli {
namespace {

constexpr size_t kShortCommit = 10;
constexpr size_t kShortTree = 10;

struct HistoryFlags {
  RepoOptions repo;
  std::string name;
  std::string format = "text";
};

// The spec commits' authors, looked up once each in the clone.
class Authors {
 public:
  explicit Authors(adapters::GitWorkspace& workspace) : workspace_(workspace) {}

  const std::optional<adapters::CommitAuthor>& Of(const std::string& commit) {
    auto it = cache_.find(commit);
    if (it == cache_.end()) {
      std::optional<adapters::CommitAuthor> author;
      if (!commit.empty()) author = adapters::LookUpCommitAuthor(workspace_, commit);
      it = cache_.emplace(commit, std::move(author)).first;
    }
    return it->second;
  }

 private:
  adapters::GitWorkspace& workspace_;
  std::map<std::string, std::optional<adapters::CommitAuthor>> cache_;
};

// The store's entries, newest first, as the record's versions, oldest first.
std::vector<core::RecordVersion> Versions(const std::vector<ports::StatusHistoryEntry>& entries) {
  std::vector<core::RecordVersion> out;
  out.reserve(entries.size());
  for (const ports::StatusHistoryEntry& e : entries) {
    core::RecordVersion v;
    v.commit = e.commit;
    v.time_ms = e.time_ms;
    v.record = e.record;
    out.push_back(std::move(v));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

std::string StatusText(core::RayJobStatus status) {
  if (status == core::RayJobStatus::kUnknown) return "-";
  return std::string(core::RayJobStatusName(status));
}

// "src/trainer@1a2b3c4d5e (commit 0f1e2d3c4b5a)": the code a run got; "-" without code.
std::string CodeText(const core::HistoryRow& row) {
  if (row.code_tree.empty()) return "-";
  std::string out = row.code_folder.empty() ? std::string("tree") : row.code_folder;
  out.append("@").append(row.code_tree.substr(0, kShortTree));
  if (!row.code_commit.empty()) {
    out.append(" (commit ").append(row.code_commit.substr(0, kShortCommit)).append(")");
  }
  return out;
}

void PrintText(const std::vector<core::HistoryRow>& rows, Authors& authors) {
  // The CODE column only when some run of the job shipped code from the repository.
  const bool code =
      std::ranges::any_of(rows, [](const core::HistoryRow& row) { return !row.code_tree.empty(); });
  core::TextRow header = {"TIME",       "ATTEMPT",     "SUBMISSION_ID", "TRANSITION",
                          "RAY_STATUS", "SPEC_COMMIT", "AUTHOR",        "STATUS_COMMIT"};
  if (code) header.insert(header.begin() + 6, "CODE");
  std::vector<core::TextRow> table = {std::move(header)};
  for (const core::HistoryRow& row : rows) {
    const core::Transition& t = row.transition;
    const auto& author = authors.Of(row.spec_commit);
    core::TextRow cells = {core::FormatRfc3339Millis(row.time_ms),
                           t.attempt ? std::to_string(*t.attempt) : "-",
                           OrDash(t.submission_id),
                           t.from + " -> " + core::TransitionTarget(t),
                           StatusText(t.status),
                           OrDash(row.spec_commit.substr(0, kShortCommit)),
                           author ? OrDash(author->name) : "-",
                           row.status_commit.substr(0, kShortCommit)};
    if (code) cells.insert(cells.begin() + 6, CodeText(row));
    table.push_back(std::move(cells));
  }
  std::cout << core::FormatTextTable(table);
}

core::Value OrNull(const std::string& text) {
  return text.empty() ? core::Value() : core::Value(text);
}

core::Value RowJson(const core::HistoryRow& row, Authors& authors) {
  const core::Transition& t = row.transition;
  const auto& author = authors.Of(row.spec_commit);
  core::Value::Object o;
  o["time"] = core::FormatRfc3339Millis(row.time_ms);
  o["attempt"] = t.attempt ? core::Value(*t.attempt) : core::Value();
  o["submission_id"] = OrNull(t.submission_id);
  o["from"] = t.from;
  o["to"] = t.to;
  o["ray_status"] = t.status == core::RayJobStatus::kUnknown
                        ? core::Value()
                        : core::Value(std::string(core::RayJobStatusName(t.status)));
  o["error_type"] = OrNull(t.error_type);
  o["failure_class"] = OrNull(std::string(core::FailureClassName(t.failure_class)));
  o["spec_commit"] = OrNull(row.spec_commit);
  o["author"] = author ? OrNull(author->name) : core::Value();
  o["author_email"] = author ? OrNull(author->email) : core::Value();
  o["status_commit"] = row.status_commit;
  if (!row.code_tree.empty()) {
    core::Value::Object code;
    code["folder"] = OrNull(row.code_folder);
    code["tree"] = row.code_tree;
    code["commit"] = OrNull(row.code_commit);
    o["code"] = core::Value(std::move(code));
  }
  return {std::move(o)};
}

void PrintJson(const std::string& name, const std::vector<core::HistoryRow>& rows,
               Authors& authors) {
  core::Value::Array transitions;
  for (const core::HistoryRow& row : rows) transitions.push_back(RowJson(row, authors));
  core::Value::Object doc;
  doc["version"] = 1;
  doc["name"] = name;
  doc["transitions"] = std::move(transitions);
  std::cout << core::ToPrettyJson(core::Value(std::move(doc))) << "\n";
}

int RunHistory(const GlobalOptions& global, const HistoryFlags& flags) {
  ConfigureLogging(global);
  std::string ledger_from;
  core::Result<RepoHandles> handles = OpenRepoForReading(flags.repo, &ledger_from);
  if (!handles.ok()) {
    LogEvent("error", handles.error().ToString());
    return 1;
  }
  core::Result<std::vector<ports::StatusHistoryEntry>> history =
      handles->store->History(flags.name);
  if (!history.ok()) {
    LogEvent("error", history.error().ToString());
    return 1;
  }
  if (const std::string note = NoLedgerNote(*handles->store, flags.repo, ledger_from);
      !note.empty()) {
    return Fail("no history for " + flags.name + ": " + note);
  }
  if (history->empty()) {
    return Fail("no history for " + flags.name + " on " + ledger_from);
  }
  const std::vector<core::HistoryRow> rows = core::JobHistory(Versions(*history));
  Authors authors(*handles->workspace);
  if (flags.format == "json") {
    PrintJson(flags.name, rows, authors);
  } else {
    PrintText(rows, authors);
  }
  return 0;
}

}  // namespace

void AddHistoryCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto flags = std::make_shared<HistoryFlags>();
  CLI::App* cmd =
      app.add_subcommand("history", "the audit trail of one job from the status branch");
  cmd->add_option("name", flags->name, "job name")->required();
  cmd->add_option("-o,--format", flags->format, "text or json (default text)")
      ->check(CLI::IsMember({"text", "json"}));
  AddRepoOptions(cmd, &flags->repo, /*with_ref=*/false, /*with_artifacts=*/false);
  cmd->callback([&global, flags, exit_code]() {
    PrepareGitSsh(global, &flags->repo);
    *exit_code = RunHistory(global, *flags);
  });
}

}  // namespace rg::cli
