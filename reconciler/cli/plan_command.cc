// `ray-gitops plan`: what a sync of the commit would do to the live cluster. Reads the
// ledger, never writes, never submits. Exit 0 nothing to do, 2 changes pending, 1 error.
// The commit is under review (a pull request's, perhaps from a fork): its cluster.yaml address
// never gets the Ray token or headers (docs/hooks.md, "Pull requests from others").

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "reconciler/cli/global_options.h"
#include "reconciler/cli/leave_to_exit.h"
#include "reconciler/cli/logging.h"
#include "reconciler/cli/pass_runner.h"
#include "reconciler/cli/plan_changes.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/plan_format.h"

namespace rg::cli {
namespace {

// Exit statuses of `plan` (docs/plan-format.md).
constexpr int kPlanNothingToDo = 0;
constexpr int kPlanError = 1;
constexpr int kPlanChangesPending = 2;

struct PlanFlags {
  RepoOptions repo;
  std::string format = "text";
};

int RunPlan(const GlobalOptions& global, const PlanFlags& flags) {
  ConfigureLogging(global);
  engine::ReconcileOptions options;
  options.ref = flags.repo.ref;
  options.dry_run = true;
  options.record_status = false;
  options.build_records = false;  // what `plan` prints needs the plan and the ledger only
  options.overlap_reads = true;
  std::string ledger_from;
  core::Result<RepoHandles> handles = OpenRepoForReading(flags.repo, &ledger_from);
  if (!handles.ok()) {
    LogEvent("error", handles.error().ToString());
    return kPlanError;
  }
  PassWiring wiring;
  wiring.cluster_address = AddressTrust::kUnderReview;
  core::Result<PassRun> run =
      RunPassOnRepo(global, flags.repo, *handles->source, handles->store.get(), options, wiring);
  // What the pass built is freed by the process's exit, not object by object here.
  const AtScopeEnd leave([&]() {
    LeaveToExit(std::move(run));
    LeaveRepoToExit(std::move(*handles));
  });
  if (!run.ok()) {
    LogEvent("error", run.error().ToString());
    return kPlanError;
  }
  const engine::PassResult& r = run->result;
  for (const core::Error& e : r.errors) LogEvent("error", e.ToString());
  LogClockSkew(r);
  if (!r.planned) {
    ReportDiagnostics(r.diagnostics);
    return kPlanError;
  }
  core::PlanView view;
  view.plan = &r.plan;
  view.desired = &run->snapshot->state;
  view.commit = r.spec_commit;
  view.context.instance = flags.repo.instance;
  view.context.repo_url = run->snapshot->repo_url;
  PlanChanges changes = ComputePlanChanges(*handles->source, r.plan, *view.desired, r.spec_commit,
                                           *r.ledger, flags.repo.instance);
  view.job_changes = std::move(changes.jobs);
  view.cluster_changes = std::move(changes.cluster);
  view.ledger_note = NoLedgerNote(*handles->store, flags.repo, ledger_from);
  if (!view.ledger_note.empty()) LogEvent("warn", view.ledger_note);
  // The pass redacted its records; the rendered entrypoints and anything else the formats
  // add go through the same step before they are printed.
  std::string text;
  if (flags.format == "json") {
    text = core::FormatPlanJson(view);
  } else if (flags.format == "markdown") {
    text = core::FormatPlanMarkdown(view);
  } else {
    text = core::FormatPlanText(view);
  }
  r.redactor.ApplyInPlace(text);
  std::cout << text;
  if (!r.errors.empty() || !r.diagnostics.empty()) return kPlanError;
  return r.plan.HasChanges() ? kPlanChangesPending : kPlanNothingToDo;
}

}  // namespace

void AddPlanCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* cmd =
      app.add_subcommand("plan",
                         "compare a commit with the live cluster: submit/stop/keep per job (exit 0 "
                         "nothing to do, 2 changes pending, 1 error). The Ray token and headers go "
                         "only to --ray-address or RAY_ADDRESS, never to the commit's cluster.yaml "
                         "address");
  AddRepoOptions(cmd, &flags->repo, /*with_ref=*/true, /*with_artifacts=*/false);
  AddPreviousRepoOption(cmd, &flags->repo);
  cmd->add_option("-o,--format", flags->format, "text, markdown or json")
      ->check(CLI::IsMember({"text", "markdown", "json"}));
  cmd->callback([&global, flags, exit_code]() {
    PrepareGitSsh(global, &flags->repo);
    *exit_code = RunPlan(global, *flags);
  });
}

}  // namespace rg::cli
