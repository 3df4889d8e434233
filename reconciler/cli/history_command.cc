// `ray-gitops history NAME`: the audit trail of one job from the status branch, newest
// first. Exit 0; 1 when the name has no history or the branch cannot be read.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <vector>

#include "reconciler/cli/global_options.h"
#include "reconciler/cli/logging.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/status_model.h"
#include "reconciler/core/text_table.h"
#include "reconciler/core/time_format.h"

namespace rg::cli {
namespace {

struct HistoryFlags {
  RepoOptions repo;
  std::string name;
};

int RunHistory(const GlobalOptions& global, const HistoryFlags& flags) {
  ConfigureLogging(global);
  core::Result<RepoHandles> handles = OpenRepo(flags.repo);
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
  if (history->empty()) {
    return Fail("no history for " + flags.name + " on " + flags.repo.status_branch);
  }
  std::vector<core::TextRow> rows = {
      {"TIME", "COMMIT", "PHASE", "SUBMISSION_ID", "RAY_STATUS", "SUBJECT"}};
  for (const ports::StatusHistoryEntry& e : *history) {
    const core::StatusRecord* rec = e.record ? &*e.record : nullptr;
    rows.push_back({core::FormatRfc3339Millis(e.time_ms), e.commit.substr(0, 10),
                    rec != nullptr ? std::string(core::PhaseName(rec->phase)) : "deleted",
                    rec != nullptr && !rec->submission_id.empty() ? rec->submission_id : "-",
                    rec != nullptr ? std::string(core::RayJobStatusName(rec->status)) : "-",
                    e.subject});
  }
  std::cout << core::FormatTextTable(rows);
  return 0;
}

}  // namespace

void AddHistoryCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto flags = std::make_shared<HistoryFlags>();
  CLI::App* cmd =
      app.add_subcommand("history", "the audit trail of one job from the status branch");
  cmd->add_option("name", flags->name, "job name")->required();
  AddRepoOptions(cmd, &flags->repo, /*with_ref=*/false, /*with_artifacts=*/false);
  cmd->callback([&global, flags, exit_code]() { *exit_code = RunHistory(global, *flags); });
}

}  // namespace rg::cli
