// Pipelines in the planner (docs/reconcile.md, "Pipelines"): a job with `after` waits for the
// current run of every job it names to have SUCCEEDED, row by row.

#include <catch2/catch.hpp>

#include "reconciler/core/planner.h"
#include "reconciler/core/render.h"
#include "tests/unit/planner/plan_fixtures.h"

namespace rg::core {
namespace {

using fixtures::Attempt;
using fixtures::Describe;
using fixtures::Desired;
using fixtures::Job;
using fixtures::kHash;
using fixtures::Record;
using fixtures::Spec;

constexpr const char* kDownHash = "dddddddddd";

JobSpec Downstream(const std::string& name, std::vector<std::string> after,
                   const std::string& hash = kDownHash) {
  JobSpec s = Spec(name, hash);
  PipelineFields& p = s.mutable_pipeline();
  p.after = std::move(after);
  p.after_pos.assign(p.after.size(), SourcePos{3, 9});
  return s;
}

const JobPlan& Row(const Plan& plan, const std::string& name) {
  const JobPlan* jp = plan.FindJob(name);
  REQUIRE(jp != nullptr);
  return *jp;
}

const Action* SubmitOf(const Plan& plan, const std::string& name) {
  for (const Action& a : plan.actions) {
    if (a.kind == ActionKind::kSubmit && a.name == name) return &a;
  }
  return nullptr;
}

TEST_CASE("a job waits while its upstream is new, pending or running") {
  const DesiredState desired = Desired({Spec("a"), Downstream("b", {"a"})});
  // Nothing yet: a is submitted, b waits on a's new run.
  Plan plan = PlanActions(desired, {}, {}, PlanPolicy{});
  CHECK(Describe(plan) == "submit a-aaaaaaaaaa;");
  CHECK(Row(plan, "b").phase == Phase::kWaiting);
  CHECK(Row(plan, "b").message == "on a: Pending");
  CHECK(Row(plan, "b").submission_id.empty());
  // a runs.
  plan = PlanActions(desired, {Job("a", 0, RayJobStatus::kRunning)}, {}, PlanPolicy{});
  CHECK(Describe(plan).empty());
  CHECK(Row(plan, "b").phase == Phase::kWaiting);
  CHECK(Row(plan, "b").message == "on a: Running");
}

TEST_CASE("a job is submitted in the first plan after its upstream SUCCEEDED, with its run") {
  JobSpec a = Spec("a");
  a.retries = 2;
  DesiredState desired = Desired({a, Downstream("b", {"a"})});
  desired.cluster->shared_root = "/shared";
  const std::vector<RayJob> observed = {Job("a", 0, RayJobStatus::kFailed),
                                        Job("a", 1, RayJobStatus::kSucceeded)};
  // a's attempt 1 succeeded (attempt 0 failed): b's ${runs.a.dir} is a's run folder, which
  // both attempts shared, as a's record says.
  StatusRecord recorded = Record(
      "a", {Attempt("a", 0, RayJobStatus::kFailed), Attempt("a", 1, RayJobStatus::kSucceeded)});
  recorded.run_dir = "/shared/jobs/a-aaaaaaaaaa";
  const Plan plan = PlanActions(desired, observed, {{"a", recorded}}, PlanPolicy{});
  CHECK(Describe(plan) == "submit b-dddddddddd;");
  CHECK(Row(plan, "b").phase == Phase::kPending);
  const Action* submit = SubmitOf(plan, "b");
  REQUIRE(submit != nullptr);
  CHECK(submit->upstream_runs ==
        UpstreamRuns{{"a", UpstreamRun{"a-aaaaaaaaaa-r1", "/shared/jobs/a-aaaaaaaaaa"}}});
  // Run before run folders existed (a record without run_dir): attempt 1's own folder, which
  // its checkpoints went to.
  recorded.run_dir.clear();
  const Plan legacy = PlanActions(desired, observed, {{"a", recorded}}, PlanPolicy{});
  const Action* legacy_submit = SubmitOf(legacy, "b");
  REQUIRE(legacy_submit != nullptr);
  CHECK(legacy_submit->upstream_runs == UpstreamRuns{{"a", UpstreamRun{"a-aaaaaaaaaa-r1", ""}}});
  // No ledger at all: the run was this version's, so its run folder.
  const Plan unrecorded = PlanActions(desired, observed, {}, PlanPolicy{});
  const Action* unrecorded_submit = SubmitOf(unrecorded, "b");
  REQUIRE(unrecorded_submit != nullptr);
  CHECK(unrecorded_submit->upstream_runs ==
        UpstreamRuns{{"a", UpstreamRun{"a-aaaaaaaaaa-r1", "/shared/jobs/a-aaaaaaaaaa"}}});
  // An upstream that Ray forgot but the ledger remembers SUCCEEDED still counts.
  const Plan remembered = PlanActions(
      desired, {}, {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kSucceeded)})}}, PlanPolicy{});
  CHECK(Describe(remembered) == "submit b-dddddddddd;");
}

TEST_CASE("a failed upstream keeps the job waiting with the failure, never submitted") {
  const DesiredState desired = Desired({Spec("a"), Downstream("b", {"a"})});
  RayJob failed = Job("a", 0, RayJobStatus::kFailed);
  failed.message = "Job entrypoint command failed with exit code 3\nTraceback ...";
  const Plan plan = PlanActions(desired, {failed}, {}, PlanPolicy{});
  CHECK(Describe(plan).empty());
  CHECK(Row(plan, "a").phase == Phase::kFailed);
  CHECK(Row(plan, "b").phase == Phase::kWaiting);
  CHECK(Row(plan, "b").message ==
        "on a: Failed (Job entrypoint command failed with exit code 3...)");
  // Retrying upstream: b still waits, on the retry.
  JobSpec retried = Spec("a");
  retried.retries = 1;
  const Plan retry =
      PlanActions(Desired({retried, Downstream("b", {"a"})}), {failed}, {}, PlanPolicy{});
  CHECK(Describe(retry) == "submit a-aaaaaaaaaa-r1;");
  CHECK(Row(retry, "b").message == "on a: Pending");
}

TEST_CASE("the waiting chain: each job names the upstream it waits on and that one's state") {
  const DesiredState desired =
      Desired({Spec("a"), Downstream("b", {"a"}), Downstream("c", {"b"}, "cccccccccc"),
               Downstream("d", {"a", "x"}, "eeeeeeeeee"), Spec("x", "ffffffffff")});
  const Plan plan = PlanActions(
      desired,
      {Job("a", 0, RayJobStatus::kRunning), Job("x", 0, RayJobStatus::kSucceeded, "ffffffffff")},
      {}, PlanPolicy{});
  CHECK(Describe(plan).empty());
  CHECK(Row(plan, "b").message == "on a: Running");
  CHECK(Row(plan, "c").message == "on b: Waiting (on a: Running)");
  CHECK(Row(plan, "d").message == "on a: Running");  // x succeeded: only a is named
}

TEST_CASE("a job waiting on an invalid spec is frozen: nothing submitted or stopped") {
  DesiredState desired = Desired({Downstream("b", {"a"}), Downstream("c", {"b"}, "cccccccccc")});
  desired.invalid.push_back({"jobs/a.yaml", "a", {{"jobs/a.yaml", 2, 1, "boom"}}});
  // b's run of an older version is still running: a frozen job stops nothing.
  const Plan plan =
      PlanActions(desired, {Job("b", 0, RayJobStatus::kRunning, "0000000000")}, {}, PlanPolicy{});
  CHECK(Describe(plan).empty());
  const JobPlan& b = Row(plan, "b");
  CHECK(b.phase == Phase::kWaiting);
  CHECK(b.frozen);
  CHECK(b.message.starts_with("on a: Invalid ("));
  CHECK(b.submission_id == "b-0000000000");  // the latest run it knows
  const JobPlan& c = Row(plan, "c");
  CHECK(c.frozen);
  CHECK(c.message.starts_with("on b: Waiting (on a: Invalid"));
}

TEST_CASE("a downstream's own runs follow the state machine once submitted") {
  const DesiredState desired = Desired({Spec("a"), Downstream("b", {"a"})});
  const std::vector<RayJob> a_done = {Job("a", 0, RayJobStatus::kSucceeded)};
  std::vector<RayJob> running = a_done;
  running.push_back(Job("b", 0, RayJobStatus::kRunning, kDownHash));
  CHECK(Row(PlanActions(desired, running, {}, PlanPolicy{}), "b").phase == Phase::kRunning);
  // The spec of b changed (a new hash, e.g. because a changed): the old run is replaced, and
  // the new one waits for the new a.
  const DesiredState changed =
      Desired({Spec("a", "1111111111"), Downstream("b", {"a"}, "2222222222")});
  const Plan plan = PlanActions(changed, running, {}, PlanPolicy{});
  CHECK(Describe(plan) == "stop b-dddddddddd;submit a-1111111111;");
  CHECK(Row(plan, "b").phase == Phase::kWaiting);
  CHECK(Row(plan, "b").message == "on a: Pending");
}

TEST_CASE("an upstream whose status file cannot be read holds the job waiting, not frozen") {
  const DesiredState desired = Desired({Spec("a"), Downstream("b", {"a"})});
  PlanPolicy policy;
  policy.frozen_jobs = {{"a", "status/a.yaml cannot be read"}};
  const Plan plan = PlanActions(desired, {Job("a", 0, RayJobStatus::kSucceeded)}, {}, policy);
  CHECK(Describe(plan).empty());
  CHECK(Row(plan, "b").phase == Phase::kWaiting);
  CHECK_FALSE(Row(plan, "b").frozen);
  CHECK(Row(plan, "b").message == "on a: Invalid (status/a.yaml cannot be read)");
}

TEST_CASE("a suspended upstream holds the job waiting") {
  JobSpec a = Spec("a");
  a.suspend = true;
  const Plan plan = PlanActions(Desired({a, Downstream("b", {"a"})}), {}, {}, PlanPolicy{});
  CHECK(Describe(plan).empty());
  CHECK(Row(plan, "b").message == "on a: Suspended (suspend: true; nothing submitted)");
}

}  // namespace
}  // namespace rg::core
