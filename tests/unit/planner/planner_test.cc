// The state machine and the guards (docs/reconcile.md), row by row.

#include "reconciler/core/planner.h"

#include <catch2/catch.hpp>

#include "reconciler/core/render.h"
#include "reconciler/core/time_format.h"
#include "tests/unit/planner/plan_fixtures.h"

namespace rg::core {
namespace {

using fixtures::Describe;
using fixtures::Desired;

using fixtures::Attempt;
using fixtures::Job;
using fixtures::kHash;
using fixtures::kOldHash;
using fixtures::Record;
using fixtures::Spec;

struct Row {
  std::string title;
  JobSpec spec;
  std::vector<RayJob> observed;
  Ledger ledger;
  Phase phase;
  std::string actions;  // as Describe() prints them
};

TEST_CASE("each row of the per-job state machine gives its action and phase") {
  JobSpec plain = Spec("a");
  JobSpec suspended = Spec("a");
  suspended.suspend = true;
  JobSpec retry2 = Spec("a");
  retry2.retries = 2;
  JobSpec no_infra = Spec("a");
  no_infra.infra_retries = 0;

  const std::vector<Row> rows = {
      {"no attempt: submit attempt 0", plain, {}, {}, Phase::kPending, "submit a-aaaaaaaaaa;"},
      {"no attempt, suspended: nothing", suspended, {}, {}, Phase::kSuspended, ""},
      {"pending: nothing", plain, {Job("a", 0, RayJobStatus::kPending)}, {}, Phase::kPending, ""},
      {"running: nothing", plain, {Job("a", 0, RayJobStatus::kRunning)}, {}, Phase::kRunning, ""},
      {"running, suspended: stop it",
       suspended,
       {Job("a", 0, RayJobStatus::kRunning)},
       {},
       Phase::kStopping,
       "stop a-aaaaaaaaaa;"},
      {"succeeded: nothing",
       plain,
       {Job("a", 0, RayJobStatus::kSucceeded)},
       {},
       Phase::kSucceeded,
       ""},
      {"failed, no retries: nothing",
       plain,
       {Job("a", 0, RayJobStatus::kFailed)},
       {},
       Phase::kFailed,
       ""},
      {"failed with retries left: next attempt",
       retry2,
       {Job("a", 0, RayJobStatus::kFailed)},
       {},
       Phase::kPending,
       "submit a-aaaaaaaaaa-r1;"},
      {"failed on the last retry: nothing",
       retry2,
       {Job("a", 0, RayJobStatus::kFailed), Job("a", 1, RayJobStatus::kFailed),
        Job("a", 2, RayJobStatus::kFailed)},
       {},
       Phase::kFailed,
       ""},
      {"stopped by us for suspend, now unsuspended: next attempt",
       plain,
       {Job("a", 0, RayJobStatus::kStopped)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "suspend")})}},
       Phase::kPending,
       "submit a-aaaaaaaaaa-r1;"},
      {"stopped by us for suspend, still suspended: nothing",
       suspended,
       {Job("a", 0, RayJobStatus::kStopped)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "suspend")})}},
       Phase::kSuspended,
       ""},
      {"stopped by a person: nothing",
       plain,
       {Job("a", 0, RayJobStatus::kStopped)},
       {},
       Phase::kStopped,
       ""},
      {"lost (ledger active, Ray forgot), the pass's time unknown: Lost, its retry waits",
       retry2,
       {},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning)})}},
       Phase::kLost,
       ""},
      {"lost, no infrastructure retries: reported, nothing submitted",
       no_infra,
       {},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning)})}},
       Phase::kLost,
       ""},
      {"missing while the ledger says succeeded: never re-run",
       retry2,
       {},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kSucceeded)})}},
       Phase::kSucceeded,
       ""},
      {"missing while the ledger says failed on the last retry: nothing",
       Spec("a"),
       {},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kFailed)})}},
       Phase::kFailed,
       ""},
      // A run ray-gitops stopped comes back when its spec is desired again (docs/reconcile.md).
      {"stopped by us as replaced, desired again (a revert): next attempt",
       plain,
       {Job("a", 0, RayJobStatus::kStopped)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "replaced")})}},
       Phase::kPending,
       "submit a-aaaaaaaaaa-r1;"},
      {"stopped by us as removed, spec restored: next attempt",
       plain,
       {Job("a", 0, RayJobStatus::kStopped)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "removed")})}},
       Phase::kPending,
       "submit a-aaaaaaaaaa-r1;"},
      {"stopped by us as replaced, desired again but suspended: nothing",
       suspended,
       {Job("a", 0, RayJobStatus::kStopped)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "replaced")})}},
       Phase::kSuspended,
       ""},
      {"stopped by us, Ray no longer has it (ledger says stopped): restored",
       plain,
       {},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "replaced")})}},
       Phase::kPending,
       "submit a-aaaaaaaaaa-r1;"},
      {"restored twice: the attempt number keeps counting",
       plain,
       {Job("a", 0, RayJobStatus::kStopped), Job("a", 1, RayJobStatus::kStopped)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "replaced"),
                           Attempt("a", 1, RayJobStatus::kStopped, "removed")})}},
       Phase::kPending,
       "submit a-aaaaaaaaaa-r2;"},
      {"failed after we sent it a stop: restored, not retried",
       plain,
       {Job("a", 0, RayJobStatus::kFailed)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kFailed, "replaced")})}},
       Phase::kPending,
       "submit a-aaaaaaaaaa-r1;"},
      {"failed after a stop for suspend, still suspended: nothing",
       suspended,
       {Job("a", 0, RayJobStatus::kFailed)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kFailed, "suspend")})}},
       Phase::kSuspended,
       ""},
      {"stop sent with no reason recorded, then failed: counts as stopped by us",
       plain,
       {Job("a", 0, RayJobStatus::kFailed)},
       {{"a", Record("a", {[] {
                       AttemptRecord a = Attempt("a", 0, RayJobStatus::kFailed);
                       a.stop_sent_ms = 1;
                       return a;
                     }()})}},
       Phase::kPending,
       "submit a-aaaaaaaaaa-r1;"},
      {"stop sent, Ray forgot the run before it ended: restored, not lost",
       plain,
       {},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning, "removed")})}},
       Phase::kPending,
       "submit a-aaaaaaaaaa-r1;"},
      {"stop sent but Ray still runs it: nothing until it ends",
       plain,
       {Job("a", 0, RayJobStatus::kRunning)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning, "replaced")})}},
       Phase::kRunning,
       ""},
      {"succeeded though we sent it a stop: finished work is never re-run",
       plain,
       {Job("a", 0, RayJobStatus::kSucceeded)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kSucceeded, "replaced")})}},
       Phase::kSucceeded,
       ""},
      {"stopped for a reason a newer version wrote: nothing",
       plain,
       {Job("a", 0, RayJobStatus::kStopped)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "quota")})}},
       Phase::kStopped,
       ""},
      {"stopped by us for its deadline: never restored",
       plain,
       {Job("a", 0, RayJobStatus::kStopped)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "deadline")})}},
       Phase::kDeadlineExceeded,
       ""},
      {"failed after a stop for its deadline, retries left: not retried",
       retry2,
       {Job("a", 0, RayJobStatus::kFailed)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kFailed, "deadline")})}},
       Phase::kDeadlineExceeded,
       ""},
      {"stopped for its deadline, then Ray forgot it, retries left: not lost, not resubmitted",
       retry2,
       {},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning, "deadline")})}},
       Phase::kDeadlineExceeded,
       ""},
      {"succeeded before the stop for its deadline took: succeeded",
       plain,
       {Job("a", 0, RayJobStatus::kSucceeded)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kSucceeded, "deadline")})}},
       Phase::kSucceeded,
       ""},
      {"latest attempt wins over earlier ones",
       retry2,
       {Job("a", 0, RayJobStatus::kFailed), Job("a", 1, RayJobStatus::kRunning)},
       {},
       Phase::kRunning,
       ""},
  };
  for (const auto& row : rows) {
    SECTION(row.title) {
      Plan plan = PlanActions(Desired({row.spec}), row.observed, row.ledger, PlanPolicy{});
      REQUIRE(plan.jobs.size() == 1);
      CHECK(PhaseName(plan.jobs[0].phase) == PhaseName(row.phase));
      CHECK(Describe(plan) == row.actions);
      CHECK_FALSE(plan.blocked);
    }
  }
}

// A spec with `deadline`, its run submitted (Ray's start_time) at `start_ms`.
JobSpec WithDeadline(int64_t deadline_ms) {
  JobSpec spec = Spec("a");
  spec.mutable_lifecycle().deadline_ms = deadline_ms;
  return spec;
}

RayJob StartedAt(RayJobStatus status, int64_t start_ms) {
  RayJob job = Job("a", 0, status);
  job.start_time_ms = start_ms;
  return job;
}

TEST_CASE("a run active longer than its deadline is stopped, counted from the submission") {
  const JobSpec spec = WithDeadline(5'000);
  PlanPolicy at;
  SECTION("running, within the deadline: nothing, and the plan names when it falls due") {
    at.now_ms = 14'999;
    Plan plan = PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, 10'000)}, {}, at);
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs[0].phase == Phase::kRunning);
    CHECK(plan.recheck_at_ms == 15'000);
  }
  SECTION("running, at the deadline: stopped for it, not retried") {
    at.now_ms = 15'000;
    Plan plan = PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, 10'000)}, {}, at);
    CHECK(Describe(plan) == "stop a-aaaaaaaaaa;");
    CHECK(plan.actions[0].stop_reason == StopReason::kDeadline);
    CHECK(plan.jobs[0].phase == Phase::kDeadlineExceeded);
    CHECK_THAT(plan.jobs[0].message, Catch::StartsWith("deadline 5s exceeded (submitted at "));
    CHECK_FALSE(plan.recheck_at_ms);
  }
  SECTION("pending for longer than the deadline: the time spent waiting counts") {
    at.now_ms = 20'000;
    Plan plan = PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kPending, 10'000)}, {}, at);
    CHECK(Describe(plan) == "stop a-aaaaaaaaaa;");
    CHECK(plan.jobs[0].phase == Phase::kDeadlineExceeded);
  }
  SECTION("the stop already sent and not carried out: not sent again within ten minutes") {
    at.now_ms = 20'000;
    AttemptRecord sent = Attempt("a", 0, RayJobStatus::kRunning, "deadline");
    sent.stop_sent_ms = 16'000;
    Plan plan = PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, 10'000)},
                            {{"a", Record("a", {sent})}}, at);
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs[0].phase == Phase::kDeadlineExceeded);
    CHECK_THAT(plan.jobs[0].message, Catch::Contains("Ray still reports RUNNING"));
  }
  SECTION("the earliest deadline of several runs is the plan's recheck time") {
    JobSpec b = WithDeadline(60'000);
    b.name = "b";
    b.path = "jobs/b.yaml";
    RayJob run_b = Job("b", 0, RayJobStatus::kRunning);
    run_b.start_time_ms = 1'000;
    at.now_ms = 12'000;
    Plan plan =
        PlanActions(Desired({spec, b}), {StartedAt(RayJobStatus::kRunning, 10'000), run_b}, {}, at);
    CHECK(Describe(plan).empty());
    CHECK(plan.recheck_at_ms == 15'000);
  }
  SECTION("no deadline, a finished run, a suspended spec or no pass time: no deadline stop") {
    at.now_ms = 100'000;
    Plan none =
        PlanActions(Desired({Spec("a")}), {StartedAt(RayJobStatus::kRunning, 10'000)}, {}, at);
    CHECK(Describe(none).empty());
    CHECK_FALSE(none.recheck_at_ms);
    Plan done = PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kSucceeded, 10'000)}, {}, at);
    CHECK(Describe(done).empty());
    CHECK(done.jobs[0].phase == Phase::kSucceeded);
    JobSpec suspended = spec;
    suspended.suspend = true;
    Plan paused =
        PlanActions(Desired({suspended}), {StartedAt(RayJobStatus::kRunning, 10'000)}, {}, at);
    REQUIRE(Describe(paused) == "stop a-aaaaaaaaaa;");
    CHECK(paused.actions[0].stop_reason == StopReason::kSuspend);
    Plan unknown_time =
        PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, 10'000)}, {}, {});
    CHECK(Describe(unknown_time).empty());
  }
}

// Ray's times are on the head's clock: a deadline is compared with the head's time
// (PlanPolicy::ray_now_ms, from the Date header of its answers), never with the daemon's.
TEST_CASE("a deadline is counted on the Ray head's clock, whatever the daemon's says") {
  const JobSpec spec = WithDeadline(3'600'000);  // deadline: 1h
  constexpr int64_t kHour = 3'600'000;
  constexpr int64_t kStart = 1'800'000'000'000;  // the run's start_time, on the head's clock
  PlanPolicy at;
  SECTION("the daemon 2 h ahead, the run 10 s old on the head: not exceeded") {
    at.ray_now_ms = kStart + 10'000;
    at.now_ms = at.ray_now_ms + 2 * kHour;
    Plan plan = PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, kStart)}, {}, at);
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs[0].phase == Phase::kRunning);
    // Due in 3,590 s of the head's time: on the daemon's clock, 3,590 s from its now.
    CHECK(plan.recheck_at_ms == at.now_ms + 3'590'000);
  }
  SECTION("the daemon 2 h behind, the run past its deadline on the head: exceeded") {
    at.ray_now_ms = kStart + kHour + 1;
    at.now_ms = at.ray_now_ms - 2 * kHour;  // before the run's start_time, on its own clock
    Plan plan = PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, kStart)}, {}, at);
    CHECK(Describe(plan) == "stop a-aaaaaaaaaa;");
    CHECK(plan.actions[0].stop_reason == StopReason::kDeadline);
    CHECK(plan.jobs[0].phase == Phase::kDeadlineExceeded);
    // The stop is sent at the daemon's time: the resend rule and the record use its clock.
    CHECK_THAT(plan.jobs[0].message,
               Catch::Contains("stop sent at " + FormatRfc3339Millis(at.now_ms)));
  }
  SECTION("the head exactly at the deadline: exceeded; a millisecond before: not yet") {
    at.now_ms = kStart - 5 * kHour;
    at.ray_now_ms = kStart + kHour;
    CHECK(Describe(PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, kStart)}, {},
                               at)) == "stop a-aaaaaaaaaa;");
    at.ray_now_ms = kStart + kHour - 1;
    Plan plan = PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, kStart)}, {}, at);
    CHECK(Describe(plan).empty());
    CHECK(plan.recheck_at_ms == at.now_ms + 1);
  }
  SECTION("the head's time unknown: the daemon's stands in") {
    at.now_ms = kStart + kHour;
    CHECK(Describe(PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, kStart)}, {},
                               at)) == "stop a-aaaaaaaaaa;");
  }
  SECTION("a stop sent on the daemon's clock is resent after ten minutes of the daemon's") {
    at.ray_now_ms = kStart + 2 * kHour;
    at.now_ms = at.ray_now_ms - 3 * kHour;
    AttemptRecord sent = Attempt("a", 0, RayJobStatus::kRunning, "deadline");
    sent.stop_sent_ms = at.now_ms - 60'000;
    Plan held = PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, kStart)},
                            {{"a", Record("a", {sent})}}, at);
    CHECK(Describe(held).empty());
    CHECK(held.jobs[0].phase == Phase::kDeadlineExceeded);
    sent.stop_sent_ms = at.now_ms - 600'000;
    Plan again = PlanActions(Desired({spec}), {StartedAt(RayJobStatus::kRunning, kStart)},
                             {{"a", Record("a", {sent})}}, at);
    CHECK(Describe(again) == "stop a-aaaaaaaaaa;");
  }
}

TEST_CASE("a changed spec stops the old attempt and submits the new id") {
  Plan plan = PlanActions(
      Desired({Spec("a")}), {Job("a", 0, RayJobStatus::kRunning, kOldHash)},
      {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning, "", kOldHash)})}}, PlanPolicy{});
  CHECK(Describe(plan) == "stop a-bbbbbbbbbb;submit a-aaaaaaaaaa;");
  CHECK(plan.actions[0].stop_reason == StopReason::kReplacement);
  REQUIRE(plan.jobs.size() == 1);
  CHECK(plan.jobs[0].spec_changed);
  CHECK(plan.jobs[0].previous_spec_hash == kOldHash);
}

TEST_CASE("a run recorded under the earlier hash rule is still the current run") {
  // A named spec hashed with its name by an older ray-gitops: upgrading restarts nothing.
  JobSpec spec = Spec("a");
  spec.legacy_spec_hashes = {kOldHash};
  Plan running = PlanActions(
      Desired({spec}), {Job("a", 0, RayJobStatus::kRunning, kOldHash)},
      {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning, "", kOldHash)})}}, PlanPolicy{});
  CHECK(Describe(running).empty());
  REQUIRE(running.jobs.size() == 1);
  CHECK(running.jobs[0].phase == Phase::kRunning);
  CHECK_FALSE(running.jobs[0].spec_changed);
  // Its end is remembered too: a finished run is not run again once Ray forgot it.
  Plan done =
      PlanActions(Desired({spec}), {},
                  {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kSucceeded, "", kOldHash)})}},
                  PlanPolicy{});
  CHECK(Describe(done).empty());
  CHECK(done.jobs[0].phase == Phase::kSucceeded);
}

TEST_CASE("a changed spec whose old run finished submits without stopping") {
  Plan plan = PlanActions(Desired({Spec("a")}), {Job("a", 0, RayJobStatus::kSucceeded, kOldHash)},
                          {}, PlanPolicy{});
  CHECK(Describe(plan) == "submit a-aaaaaaaaaa;");
}

TEST_CASE("the empty-desired-state guard counts the specs desired outside the part planned") {
  const std::vector<RayJob> running = {Job("gone", 0, RayJobStatus::kRunning)};
  const Ledger ledger = {{"gone", Record("gone", {Attempt("gone", 0, RayJobStatus::kRunning)})}};
  // Nothing desired at all: the guard holds the stop back.
  Plan empty = PlanActions(Desired({}), running, ledger, PlanPolicy{});
  CHECK(empty.blocked);
  CHECK(Describe(empty).empty());
  // The part planned is empty, but 3 specs are desired elsewhere: a plain removal.
  Plan narrow = PlanActions(Desired({}), running, ledger, PlanPolicy{.desired_elsewhere = 3});
  CHECK_FALSE(narrow.blocked);
  CHECK(Describe(narrow) == "stop gone-aaaaaaaaaa;");
}

TEST_CASE("a removed spec stops its active run, and on_remove keep leaves it running") {
  SECTION("stop") {
    Plan plan =
        PlanActions(Desired({}), {Job("gone", 0, RayJobStatus::kRunning)},
                    {{"gone", Record("gone", {Attempt("gone", 0, RayJobStatus::kRunning)})}},
                    PlanPolicy{.max_stops_explicit = true});
    CHECK(Describe(plan) == "stop gone-aaaaaaaaaa;");
    CHECK(plan.actions[0].stop_reason == StopReason::kRemoval);
    CHECK(plan.jobs.at(0).phase == Phase::kStopping);
  }
  SECTION("keep") {
    Plan plan = PlanActions(
        Desired({Spec("other")}), {Job("gone", 0, RayJobStatus::kRunning)},
        {{"gone", Record("gone", {Attempt("gone", 0, RayJobStatus::kRunning)}, OnRemove::kKeep)}},
        PlanPolicy{});
    CHECK(Describe(plan) == "submit other-aaaaaaaaaa;");
    const JobPlan* gone = plan.FindJob("gone");
    REQUIRE(gone != nullptr);
    CHECK(gone->phase == Phase::kRemoved);
  }
  SECTION("a removed job with no active run keeps its record (a revert needs it)") {
    Plan plan = PlanActions(
        Desired({Spec("other")}), {Job("gone", 0, RayJobStatus::kSucceeded)},
        {{"gone", Record("gone", {Attempt("gone", 0, RayJobStatus::kSucceeded)})}}, PlanPolicy{});
    const JobPlan* gone = plan.FindJob("gone");
    REQUIRE(gone != nullptr);
    CHECK(gone->phase == Phase::kRemoved);
    CHECK(Describe(plan) == "submit other-aaaaaaaaaa;");
  }
}

TEST_CASE("an invalid spec freezes its job: nothing submitted, nothing stopped") {
  DesiredState d = Desired({});
  d.invalid.push_back({"jobs/a.yaml", "a", {Diagnostic{"jobs/a.yaml", 3, 1, "bad"}}});
  SECTION("by name") {
    Plan plan = PlanActions(d, {Job("a", 0, RayJobStatus::kRunning)}, {}, PlanPolicy{});
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kInvalid);
    CHECK_FALSE(plan.blocked);
  }
  SECTION("by path, when the file is too broken to tell its name") {
    d.invalid[0].name = "jobs-a-unreadable";
    Plan plan = PlanActions(d, {Job("a", 0, RayJobStatus::kRunning)}, {}, PlanPolicy{});
    CHECK(Describe(plan).empty());
    const JobPlan* a = plan.FindJob("a");
    REQUIRE(a != nullptr);
    CHECK(a->phase == Phase::kInvalid);
  }
}

TEST_CASE("unmanaged jobs and other instances' jobs are never touched") {
  RayJob by_hand;
  by_hand.type = "SUBMISSION";
  by_hand.submission_id = "raysubmit_123";
  by_hand.status = RayJobStatus::kRunning;
  RayJob driver;
  driver.type = "DRIVER";
  driver.status = RayJobStatus::kRunning;
  RayJob other = Job("x", 0, RayJobStatus::kRunning, kHash, "another-instance");
  Plan plan = PlanActions(Desired({}), {by_hand, driver, other}, {}, PlanPolicy{});
  CHECK(Describe(plan).empty());
  CHECK(plan.unmanaged.size() == 2);
  CHECK(plan.jobs.empty());
}

TEST_CASE("a pinned id taken by a run of different content is a conflict, not a resubmit") {
  JobSpec pinned = Spec("a");
  pinned.submission_id = "my-run";
  RayJob old = Job("a", 0, RayJobStatus::kRunning, kOldHash);
  old.submission_id = "my-run";
  Plan plan = PlanActions(Desired({pinned}), {old}, {}, PlanPolicy{});
  CHECK(Describe(plan).empty());
  CHECK(plan.jobs.at(0).phase == Phase::kConflict);
  CHECK_THAT(plan.jobs.at(0).message, Catch::Contains("pinned"));
}

TEST_CASE("an id taken by a job someone else submitted is a conflict") {
  RayJob squatter;
  squatter.type = "SUBMISSION";
  squatter.submission_id = "a-aaaaaaaaaa";
  squatter.status = RayJobStatus::kRunning;
  Plan plan = PlanActions(Desired({Spec("a")}), {squatter}, {}, PlanPolicy{});
  CHECK(Describe(plan).empty());
  CHECK(plan.jobs.at(0).phase == Phase::kConflict);
}

TEST_CASE("more stops than --max-stops blocks every stop and the replacements that need them") {
  std::vector<JobSpec> specs;
  std::vector<RayJob> observed;
  for (int i = 0; i < 6; ++i) {
    const std::string name = "j" + std::to_string(i);
    specs.push_back(Spec(name));
    observed.push_back(Job(name, 0, RayJobStatus::kRunning, kOldHash));
  }
  specs.push_back(Spec("fresh"));
  Plan plan = PlanActions(Desired(specs), observed, {}, PlanPolicy{});
  CHECK(plan.blocked);
  CHECK(plan.CountActions(ActionKind::kStop) == 0);
  CHECK(Describe(plan) == "submit fresh-aaaaaaaaaa;");
  CHECK(plan.FindJob("j0")->phase == Phase::kBlocked);
  CHECK(plan.FindJob("fresh")->phase == Phase::kPending);

  SECTION("an explicit --max-stops large enough lets them through") {
    Plan forced = PlanActions(Desired(specs), observed, {},
                              PlanPolicy{.max_stops = 6, .max_stops_explicit = true});
    CHECK_FALSE(forced.blocked);
    CHECK(forced.CountActions(ActionKind::kStop) == 6);
    CHECK(forced.CountActions(ActionKind::kSubmit) == 7);
    CHECK(forced.actions.front().kind == ActionKind::kStop);  // stops first
    CHECK(forced.actions.back().kind == ActionKind::kSubmit);
  }
}

TEST_CASE("emptying the desired set while jobs run is blocked until --max-stops is given") {
  std::vector<RayJob> observed = {Job("a", 0, RayJobStatus::kRunning),
                                  Job("b", 0, RayJobStatus::kPending)};
  Plan plan = PlanActions(Desired({}), observed, {}, PlanPolicy{});
  CHECK(plan.blocked);
  CHECK(Describe(plan).empty());
  CHECK(plan.FindJob("a")->phase == Phase::kBlocked);

  Plan forced = PlanActions(Desired({}), observed, {},
                            PlanPolicy{.max_stops = 2, .max_stops_explicit = true});
  CHECK_FALSE(forced.blocked);
  CHECK(Describe(forced) == "stop a-aaaaaaaaaa;stop b-aaaaaaaaaa;");
}

TEST_CASE("a pass over a converged state plans nothing") {
  Plan plan =
      PlanActions(Desired({Spec("a"), Spec("b")}),
                  {Job("a", 0, RayJobStatus::kRunning), Job("b", 0, RayJobStatus::kSucceeded)}, {},
                  PlanPolicy{});
  CHECK_FALSE(plan.HasChanges());
}

// A stop was sent but Ray still reports the run active (docs/reconcile.md, "Stopping").
TEST_CASE("a stop Ray has not carried out is remembered, not repeated, and resent after 10 min") {
  constexpr int64_t kSent = 1'800'000'000'000;
  AttemptRecord stopping = Attempt("gone", 0, RayJobStatus::kPending, "removed");
  stopping.stop_sent_ms = kSent;
  const Ledger ledger = {{"gone", Record("gone", {stopping})}};
  const std::vector<RayJob> still_pending = {Job("gone", 0, RayJobStatus::kPending)};

  SECTION("the pass that sends the stop already says Stopping, since now") {
    Ledger fresh = {{"gone", Record("gone", {Attempt("gone", 0, RayJobStatus::kPending)})}};
    Plan plan =
        PlanActions(Desired({Spec("other")}), still_pending, fresh, PlanPolicy{.now_ms = kSent});
    CHECK(Describe(plan) == "stop gone-aaaaaaaaaa;submit other-aaaaaaaaaa;");
    const JobPlan* gone = plan.FindJob("gone");
    REQUIRE(gone != nullptr);
    CHECK(gone->phase == Phase::kStopping);
    CHECK(gone->message ==
          "spec removed; stop sent at 2027-01-15T08:00:00.000Z, Ray still reports PENDING");
  }
  for (int64_t later : {int64_t{1}, int64_t{60'000}, kStopResendAfterMs - 1}) {
    DYNAMIC_SECTION("within 10 minutes (+" << later << " ms) nothing is planned") {
      Plan plan = PlanActions(Desired({Spec("other", kHash)}), still_pending, ledger,
                              PlanPolicy{.now_ms = kSent + later});
      CHECK(Describe(plan) == "submit other-aaaaaaaaaa;");
      const JobPlan* gone = plan.FindJob("gone");
      REQUIRE(gone != nullptr);
      CHECK(gone->phase == Phase::kStopping);
      CHECK(gone->message ==
            "spec removed; stop sent at 2027-01-15T08:00:00.000Z, Ray still reports PENDING");
    }
  }
  SECTION("a plan with only a pending stop has no changes (plan exits 0)") {
    Plan plan = PlanActions(Desired({}), still_pending, ledger, PlanPolicy{.now_ms = kSent + 1000});
    CHECK(plan.actions.empty());
    CHECK_FALSE(plan.HasChanges());
    CHECK(plan.FindJob("gone")->phase == Phase::kStopping);
  }
  SECTION("after 10 minutes the stop is sent once more") {
    Plan plan =
        PlanActions(Desired({}), still_pending, ledger,
                    PlanPolicy{.max_stops_explicit = true, .now_ms = kSent + kStopResendAfterMs});
    CHECK(Describe(plan) == "stop gone-aaaaaaaaaa;");
    CHECK(plan.actions[0].reason.find("has not taken; sending it again") != std::string::npos);
    const JobPlan* gone = plan.FindJob("gone");
    CHECK(gone->phase == Phase::kStopping);
    CHECK(gone->message.find("stop sent at 2027-01-15T08:10:00.000Z") != std::string::npos);
  }
  SECTION("once Ray ends the run, the stop is done: the record stays, Removed") {
    Plan plan = PlanActions(Desired({}), {Job("gone", 0, RayJobStatus::kStopped)}, ledger,
                            PlanPolicy{.now_ms = kSent + 1000});
    CHECK(plan.actions.empty());
    REQUIRE(plan.FindJob("gone") != nullptr);
    CHECK(plan.FindJob("gone")->phase == Phase::kRemoved);
  }
  SECTION("a suspended run whose stop is pending is Stopping, not stopped again") {
    JobSpec suspended = Spec("s");
    suspended.suspend = true;
    AttemptRecord a = Attempt("s", 0, RayJobStatus::kRunning, "suspend");
    a.stop_sent_ms = kSent;
    Plan plan = PlanActions(Desired({suspended}), {Job("s", 0, RayJobStatus::kRunning)},
                            {{"s", Record("s", {a})}}, PlanPolicy{.now_ms = kSent + 5000});
    CHECK(plan.actions.empty());
    CHECK(plan.FindJob("s")->phase == Phase::kStopping);
  }
  SECTION("a replaced run whose stop is pending is not stopped again") {
    AttemptRecord old = Attempt("r", 0, RayJobStatus::kRunning, "replaced", kOldHash);
    old.stop_sent_ms = kSent;
    Plan plan = PlanActions(
        Desired({Spec("r")}),
        {Job("r", 0, RayJobStatus::kRunning, kOldHash), Job("r", 0, RayJobStatus::kPending)},
        {{"r", Record("r", {old, Attempt("r", 0, RayJobStatus::kPending)})}},
        PlanPolicy{.now_ms = kSent + 5000});
    CHECK(plan.actions.empty());
    CHECK(plan.FindJob("r")->phase == Phase::kPending);
  }
}

TEST_CASE("finished runs of removed specs leave the plan once their end is recorded") {
  // The ledger no longer holds the name (its end was recorded and the record deleted); Ray
  // still remembers the finished run. Nothing is shown for it, now or ever.
  Plan plan = PlanActions(
      Desired({Spec("other")}),
      {Job("gone", 0, RayJobStatus::kSucceeded), Job("other", 0, RayJobStatus::kRunning)}, {},
      PlanPolicy{});
  CHECK(plan.FindJob("gone") == nullptr);
  CHECK_FALSE(plan.HasChanges());
}

// Issue 9, point 2: edit v1 -> v2 (v1 stopped as replaced), then revert to v1.
TEST_CASE("a revert stops the newer version and restores the older run as its next attempt") {
  const Ledger ledger = {
      {"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "replaced"),
                         Attempt("a", 0, RayJobStatus::kRunning, "", kOldHash)})}};
  Plan plan = PlanActions(
      Desired({Spec("a")}),
      {Job("a", 0, RayJobStatus::kStopped), Job("a", 0, RayJobStatus::kRunning, kOldHash)}, ledger,
      PlanPolicy{});
  CHECK(Describe(plan) == "stop a-bbbbbbbbbb;submit a-aaaaaaaaaa-r1;");
  CHECK(plan.actions[0].stop_reason == StopReason::kReplacement);
  const JobPlan* a = plan.FindJob("a");
  REQUIRE(a != nullptr);
  CHECK(a->phase == Phase::kPending);
  CHECK(a->attempt == 1);
  CHECK(a->message ==
        "restored: a-aaaaaaaaaa was stopped by ray-gitops when its spec was replaced; its spec is "
        "desired again: submitting attempt 1");
  CHECK(a->message.find("outside") == std::string::npos);
}

// Issue 9, point 10: moving an unnamed spec file changes its derived name.
TEST_CASE("a new job with the content of a removed job's run says it is a rename") {
  JobSpec moved = Spec("b");
  Plan plan =
      PlanActions(Desired({moved}), {Job("a", 0, RayJobStatus::kRunning)},
                  {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning)})}}, PlanPolicy{});
  CHECK(Describe(plan) == "stop a-aaaaaaaaaa;submit b-aaaaaaaaaa;");
  const JobPlan* b = plan.FindJob("b");
  REQUIRE(b != nullptr);
  CHECK(b->renamed_from == "a");
  CHECK(b->renamed_from_path == "jobs/a.yaml");
  const std::string expected =
      "renamed from a (jobs/a.yaml); this starts a new run; pin `name: a` to keep the run";
  CHECK(b->message == expected);
  CHECK(plan.actions[1].reason == expected);

  SECTION("a finished run of the removed job counts too, from Ray's labels alone") {
    Plan p =
        PlanActions(Desired({moved}), {Job("a", 0, RayJobStatus::kSucceeded)}, {}, PlanPolicy{});
    REQUIRE(p.FindJob("b") != nullptr);
    CHECK(p.FindJob("b")->renamed_from == "a");
  }
  SECTION("other content is no rename") {
    Plan p = PlanActions(Desired({Spec("b", kOldHash)}), {Job("a", 0, RayJobStatus::kSucceeded)},
                         {}, PlanPolicy{});
    CHECK(p.FindJob("b")->renamed_from.empty());
    CHECK(p.FindJob("b")->message == "new job");
  }
}

TEST_CASE("a moved spec whose pinned name and hash are those of the run keeps the run") {
  JobSpec moved = Spec("a");
  moved.path = "jobs/team/b.yaml";
  Plan plan =
      PlanActions(Desired({moved}), {Job("a", 0, RayJobStatus::kRunning)},
                  {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning)})}}, PlanPolicy{});
  CHECK_FALSE(plan.HasChanges());
  REQUIRE(plan.FindJob("a") != nullptr);
  CHECK(plan.FindJob("a")->phase == Phase::kRunning);
  CHECK(plan.FindJob("a")->spec_path == "jobs/team/b.yaml");
}

// Issue 9, point 7: a status file that cannot be read freezes its own job only.
TEST_CASE("a job whose status file is unreadable is frozen: no submit, no stop") {
  PlanPolicy policy;
  policy.frozen_jobs = {{"a", "status/a.yaml cannot be read: bad YAML; frozen"},
                        {"gone", "status/gone.yaml cannot be read: bad YAML; frozen"}};
  Plan plan = PlanActions(
      Desired({Spec("a"), Spec("b")}),
      {Job("gone", 0, RayJobStatus::kRunning), Job("a", 0, RayJobStatus::kFailed, kOldHash)}, {},
      policy);
  CHECK(Describe(plan) == "submit b-aaaaaaaaaa;");
  const JobPlan* a = plan.FindJob("a");
  REQUIRE(a != nullptr);
  CHECK(a->phase == Phase::kInvalid);
  CHECK(a->message == "status/a.yaml cannot be read: bad YAML; frozen");
  CHECK(a->spec_path == "jobs/a.yaml");
  const JobPlan* gone = plan.FindJob("gone");
  REQUIRE(gone != nullptr);
  CHECK(gone->phase == Phase::kInvalid);
  CHECK(plan.FindJob("b")->phase == Phase::kPending);
}

}  // namespace
}  // namespace rg::core
