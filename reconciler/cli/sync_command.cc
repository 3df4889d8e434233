// `ray-gitops sync`: one reconcile pass. Exit 0 applied, 1 error, 3 blocked by a guard.

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "reconciler/cli/global_options.h"
#include "reconciler/cli/leave_to_exit.h"
#include "reconciler/cli/logging.h"
#include "reconciler/cli/pass_runner.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/plan_format.h"

namespace rg::cli {
namespace {

struct SyncFlags {
  RepoOptions repo;
  bool dry_run = false;
  PassFlags pass;
};

int RunSync(const GlobalOptions& global, const SyncFlags& flags) {
  ConfigureLogging(global);
  engine::ReconcileOptions options;
  options.ref = flags.repo.ref;
  options.dry_run = flags.dry_run;
  options.overlap_reads = true;
  ApplyPassFlags(flags.pass, &options);
  core::Result<PassRun> run = RunPassFromFlags(global, flags.repo, options, true);
  // The pass's plan and records are freed by the process's exit, not object by object here.
  const AtScopeEnd leave([&]() { LeaveToExit(std::move(run)); });
  if (!run.ok()) {
    LogEvent("error", run.error().ToString());
    return engine::kExitError;
  }
  const engine::PassResult& r = run->result;
  LogPass(r);
  LogClockSkew(r);
  if (r.planned) {
    core::PlanView view;
    view.plan = &r.plan;
    view.desired = &run->snapshot->state;
    view.commit = r.spec_commit;
    std::cout << r.redactor.Apply(core::FormatPlanText(view));
    if (flags.dry_run) std::cout << "Dry run: nothing was sent to Ray or recorded.\n";
  }
  return r.exit_status;
}

}  // namespace

void AddSyncCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto flags = std::make_shared<SyncFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sync", "one reconcile pass (exit 0 applied, 1 error, 3 blocked by a guard)");
  AddRepoOptions(cmd, &flags->repo, /*with_ref=*/true, /*with_artifacts=*/true);
  AddPreviousRepoOption(cmd, &flags->repo);
  cmd->add_flag("--dry-run", flags->dry_run, "plan only: send nothing to Ray, record nothing");
  CLI::Option* max_stops = AddPassFlags(cmd, &flags->pass, "");
  cmd->callback([&global, flags, exit_code, max_stops]() {
    flags->pass.max_stops_given = max_stops->count() > 0;
    PrepareGitSsh(global, &flags->repo);
    *exit_code = RunSync(global, *flags);
  });
}

}  // namespace rg::cli
