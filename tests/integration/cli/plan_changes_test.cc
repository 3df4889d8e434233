// `plan`'s diffs against a real repository, its status branch and the fake head: a replaced
// job shows its field and rendered diff (its old spec read from the commit the ledger records),
// the stop row shows the phase of the run being stopped, and a cluster.yaml change names the
// running jobs it reaches on their next submission.

#include "reconciler/cli/plan_changes.h"

#include <catch2/catch.hpp>
#include <string>

#include "reconciler/cli/pass_runner.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/plan_format.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

std::string Ppo(int steps) {
  return "workload: ppo\n"
         "code_path: /shared/code\n"
         "model_id: Qwen/Qwen2.5-0.5B-Instruct\n"
         "train_file: /shared/train.parquet\n"
         "val_file: /shared/test.parquet\n"
         "total_training_steps: " +
         std::to_string(steps) + "\n";
}

struct Setup {
  Setup() {
    remote.person->Write("cluster.yaml", Cluster(""));
    remote.person->Write("jobs/ppo.yaml", Ppo(100));
    remote.person->Write("jobs/keep.yaml", "workload: custom\nentrypoint: python serve.py\n");
    remote.person->CommitAndPush("main", "initial");
    global.ray_address = ray.address();
    repo.repo = remote.remote;
    repo.cache_dir = remote.tmp.Sub("cache");
    repo.ref = "main";
    repo.no_artifacts = true;
  }

  std::string Cluster(const std::string& extra) const {
    return "address: " + ray.address() + "\n" + extra;
  }

  // A pass as `sync` (dry_run false) or `plan` (dry_run true) runs it, with `plan`'s changes.
  core::PlanView Pass(bool dry_run) {
    core::Result<cli::RepoHandles> handles = cli::OpenRepo(repo);
    REQUIRE(handles.ok());
    engine::ReconcileOptions options;
    options.ref = repo.ref;
    options.dry_run = dry_run;
    options.record_status = !dry_run;
    core::Result<cli::PassRun> run = cli::RunPassOnRepo(
        global, repo, *handles->source, handles->store.get(), options, cli::PassWiring{});
    REQUIRE(run.ok());
    REQUIRE(run->result.planned);
    last = std::make_unique<cli::PassRun>(std::move(*run));
    core::PlanView view;
    view.plan = &last->result.plan;
    view.desired = &last->snapshot->state;
    view.commit = last->result.spec_commit;
    cli::PlanChanges changes =
        cli::ComputePlanChanges(*handles->source, last->result.plan, last->snapshot->state,
                                last->result.spec_commit, *last->result.ledger, repo.instance);
    view.job_changes = std::move(changes.jobs);
    view.cluster_changes = std::move(changes.cluster);
    return view;
  }

  testing::FakeClock clock;
  testing::FakeRayServer ray{testing::FrozenHeadOptions(&clock)};
  testing::TestRemote remote;
  cli::GlobalOptions global;
  cli::RepoOptions repo;
  std::unique_ptr<cli::PassRun> last;
};

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("plan shows what changed in a replaced job and whom a cluster change reaches") {
  Setup s;
  const core::PlanView first = s.Pass(/*dry_run=*/false);  // valid until the next Pass
  REQUIRE(first.plan->CountActions(core::ActionKind::kSubmit) == 2);
  std::string old_id;  // ppo's first run
  for (const core::Action& a : first.plan->actions) {
    REQUIRE(s.ray.SetStatus(a.submission_id, core::RayJobStatus::kRunning));
    if (a.name == "ppo") old_id = a.submission_id;
  }

  s.remote.person->Write("jobs/ppo.yaml", Ppo(200));
  s.remote.person->Write("cluster.yaml", s.Cluster("entrypoint_num_gpus: 1\n"));
  s.remote.person->CommitAndPush("main", "more steps, a GPU per driver");
  const core::PlanView view = s.Pass(/*dry_run=*/true);

  REQUIRE(view.job_changes.count("ppo") == 1);
  const core::JobDiff& ppo = view.job_changes.at("ppo");
  REQUIRE(ppo.fields.size() == 1);
  CHECK(core::FormatFieldChange(ppo.fields[0]) == "total_training_steps: 100 -> 200");

  const std::string text = core::FormatPlanText(view);
  INFO(text);
  CHECK(Has(text, "total_training_steps: 100 -> 200"));
  CHECK(Has(text, "+ trainer.total_training_steps=200"));
  CHECK(Has(text, "- trainer.total_training_steps=100"));
  // The stop row is about the run being stopped: RUNNING, so Running.
  const size_t stop_row = text.find("stop    ppo   " + old_id);
  REQUIRE(stop_row != std::string::npos);
  CHECK(text.substr(stop_row, text.find('\n', stop_row) - stop_row).find(" Running ") !=
        std::string::npos);
  // keep was submitted from the first commit; the new cluster.yaml reaches its next submission.
  REQUIRE(view.cluster_changes.size() == 1);
  CHECK(view.cluster_changes[0].reached == std::vector<std::string>{"keep"});
  CHECK(Has(text, "entrypoint_num_gpus: (unset) -> 1"));
  CHECK(Has(text, "reaches the next submission of 1 job: keep"));

  const std::string md = core::FormatPlanMarkdown(view);
  CHECK(Has(md, "- `total_training_steps: 100 -> 200`"));
  CHECK(Has(md, "<code>cluster.yaml</code> changed since"));
}

}  // namespace
}  // namespace rg
