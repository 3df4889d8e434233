// The failure classes of DESIGN §3.1 in the planner (docs/reconcile.md, "Failure classes"):
// the cluster's failures (and Lost) spend `infra_retries` after a backoff, every other FAILED
// spends `retries`, each budget counted apart from the run's attempts in Ray and the ledger; a
// stop ray-gitops sent outranks both; `deadline` counts from the run's first attempt.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/planner.h"
#include "reconciler/core/render.h"
#include "tests/unit/planner/plan_fixtures.h"

namespace rg::core {
namespace {

using fixtures::Attempt;
using fixtures::Describe;
using fixtures::Desired;
using fixtures::Job;
using fixtures::Record;
using fixtures::Spec;

constexpr int64_t kNow = 1'800'000'000'000;  // the daemon's time at the pass
constexpr int64_t kSecond = 1000;

// Attempt `attempt` of "a" as Ray lists it, FAILED with `error_type` ("" for none) at `end_ms`.
RayJob FailedJob(int attempt, const std::string& error_type, int64_t end_ms = kNow - 3'600'000) {
  RayJob job = Job("a", attempt, RayJobStatus::kFailed);
  if (!error_type.empty()) job.error_type = error_type;
  job.end_time_ms = end_ms;
  return job;
}

// The ledger's record of an attempt that FAILED with `error_type`; `cls` as a writer of this
// version records it (kNone: as a record from before classes).
AttemptRecord FailedAttempt(int attempt, const std::string& error_type,
                            FailureClass cls = FailureClass::kNone) {
  AttemptRecord a = Attempt("a", attempt, RayJobStatus::kFailed);
  a.ending.mutable_get().error_type = error_type;
  a.failure_class = cls;
  a.end_time_ms = kNow - 3'600'000;
  return a;
}

AttemptRecord LostAttempt(int attempt, std::optional<int64_t> lost_ms) {
  AttemptRecord a = Attempt("a", attempt, RayJobStatus::kRunning);
  a.phase = Phase::kLost;
  a.failure_class = FailureClass::kInfra;
  a.ending.mutable_get().lost_ms = lost_ms;
  return a;
}

JobSpec Budgets(int64_t retries, int64_t infra_retries) {
  JobSpec spec = Spec("a");
  spec.retries = retries;
  spec.infra_retries = infra_retries;
  return spec;
}

Plan PlanNow(const JobSpec& spec, const std::vector<RayJob>& ray, const Ledger& ledger = {},
             int64_t ray_now_ms = 0) {
  PlanPolicy policy;
  policy.now_ms = kNow;
  policy.ray_now_ms = ray_now_ms;
  return PlanActions(Desired({spec}), ray, ledger, policy);
}

struct ClassRow {
  std::string error_type;
  bool infra;
};

TEST_CASE("a FAILED run's error_type decides which budget its retry spends") {
  const std::vector<ClassRow> rows = {
      {"JOB_SUPERVISOR_ACTOR_DIED", true},
      {"JOB_SUPERVISOR_ACTOR_START_TIMEOUT", true},
      {"JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE", true},
      {"JOB_SUPERVISOR_ACTOR_START_FAILURE", false},
      {"JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE", false},
      {"RUNTIME_ENV_SETUP_FAILURE", false},
      {"JOB_ENTRYPOINT_COMMAND_ERROR", false},
      {"JOB_ENTRYPOINT_COMMAND_START_ERROR", false},
      {"", false},  // no error_type: the entrypoint's exit code (or a Ray before 2.9)
  };
  for (const ClassRow& row : rows) {
    SECTION(row.error_type.empty() ? std::string("no error_type") : row.error_type) {
      // retries: 0, infra_retries: 3 (the defaults).
      const Plan plan = PlanNow(Budgets(0, 3), {FailedJob(0, row.error_type)});
      const JobPlan& jp = plan.jobs.at(0);
      if (row.infra) {
        CHECK(Describe(plan) == "submit a-aaaaaaaaaa-r1;");
        CHECK(jp.phase == Phase::kPending);
        CHECK(jp.message ==
              "retrying after " + row.error_type + ", 1 of 3: attempt 1 is submitted");
        REQUIRE(plan.actions.size() == 1);
        CHECK(plan.actions[0].attempt == 1);
      } else {
        CHECK(Describe(plan).empty());
        CHECK(jp.phase == Phase::kFailed);
      }
      // The other way round: retries: 1, infra_retries: 0.
      const Plan other = PlanNow(Budgets(1, 0), {FailedJob(0, row.error_type)});
      if (row.infra) {
        CHECK(Describe(other).empty());
        CHECK(other.jobs.at(0).phase == Phase::kFailed);
        CHECK(other.jobs.at(0).message ==
              "infrastructure retries exhausted (the spec allows "
              "none) after " +
                  row.error_type);
      } else {
        CHECK(Describe(other) == "submit a-aaaaaaaaaa-r1;");
        CHECK(other.jobs.at(0).message ==
              "a-aaaaaaaaaa failed; retrying as attempt 1 (retry 1 of 1)");
      }
    }
  }
}

TEST_CASE("an infrastructure retry waits min(30 s x 2^n, 10 min) after the attempt's end") {
  const JobSpec spec = Budgets(0, 9);
  SECTION("the first retry, 10 s after the end on the head's clock: waits, recheck when due") {
    // The head's clock 5 min behind the daemon's: the due time moves onto the daemon's clock.
    const int64_t head_now = kNow - 300 * kSecond;
    const Plan plan = PlanNow(
        spec, {FailedJob(0, "JOB_SUPERVISOR_ACTOR_DIED", head_now - 10 * kSecond)}, {}, head_now);
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kPending);
    CHECK(plan.jobs.at(0).message ==
          "retrying after JOB_SUPERVISOR_ACTOR_DIED, 1 of 9: attempt 1 waits 30s after "
          "a-aaaaaaaaaa ended");
    CHECK(plan.recheck_at_ms == kNow + 20 * kSecond);
  }
  SECTION("the first retry, 30 s after the end: submitted") {
    const Plan plan =
        PlanNow(spec, {FailedJob(0, "JOB_SUPERVISOR_ACTOR_DIED", kNow - 30 * kSecond)});
    CHECK(Describe(plan) == "submit a-aaaaaaaaaa-r1;");
    CHECK_FALSE(plan.recheck_at_ms);
  }
  SECTION("the third retry waits 2 min: two earlier infrastructure failures") {
    const std::vector<RayJob> ray = {FailedJob(0, "JOB_SUPERVISOR_ACTOR_DIED"),
                                     FailedJob(1, "JOB_SUPERVISOR_ACTOR_START_TIMEOUT"),
                                     FailedJob(2, "JOB_SUPERVISOR_ACTOR_DIED", kNow - 119'999)};
    const Plan early = PlanNow(spec, ray);
    CHECK(Describe(early).empty());
    CHECK(early.recheck_at_ms == kNow + 1);
    CHECK(early.jobs.at(0).message ==
          "retrying after JOB_SUPERVISOR_ACTOR_DIED, 3 of 9: attempt 3 waits 2m after "
          "a-aaaaaaaaaa-r2 ended");
    std::vector<RayJob> later = ray;
    later[2].end_time_ms = kNow - 120'000;
    CHECK(Describe(PlanNow(spec, later)) == "submit a-aaaaaaaaaa-r3;");
  }
  SECTION("the wait is never longer than 10 min") {
    CHECK(InfraRetryBackoffMs(0) == 30 * kSecond);
    CHECK(InfraRetryBackoffMs(4) == 480 * kSecond);
    CHECK(InfraRetryBackoffMs(5) == 600 * kSecond);
    CHECK(InfraRetryBackoffMs(60) == 600 * kSecond);
  }
  SECTION("the pass's time unknown: never submitted, no recheck") {
    const Plan plan =
        PlanActions(Desired({spec}), {FailedJob(0, "JOB_SUPERVISOR_ACTOR_DIED")}, {}, PlanPolicy{});
    CHECK(Describe(plan).empty());
    CHECK_FALSE(plan.recheck_at_ms);
  }
}

TEST_CASE("the budgets are counted by class, so restores and infra retries leave retries alone") {
  SECTION("restored once, then a cluster failure, then its own failure: retry 1 of 1") {
    const std::vector<RayJob> ray = {Job("a", 0, RayJobStatus::kStopped),
                                     FailedJob(1, "JOB_SUPERVISOR_ACTOR_DIED"),
                                     FailedJob(2, "JOB_ENTRYPOINT_COMMAND_ERROR")};
    const Ledger ledger = {
        {"a", Record("a", {Attempt("a", 0, RayJobStatus::kStopped, "suspend"),
                           FailedAttempt(1, "JOB_SUPERVISOR_ACTOR_DIED", FailureClass::kInfra),
                           FailedAttempt(2, "JOB_ENTRYPOINT_COMMAND_ERROR", FailureClass::kOwn)})}};
    const Plan plan = PlanNow(Budgets(1, 1), ray, ledger);
    CHECK(Describe(plan) == "submit a-aaaaaaaaaa-r3;");
    CHECK(plan.jobs.at(0).message ==
          "a-aaaaaaaaaa-r2 failed; retrying as attempt 3 (retry 1 of 1)");
  }
  SECTION("an own failure, then a cluster failure: the infra budget is whole") {
    const Plan plan = PlanNow(Budgets(1, 1), {FailedJob(0, ""), Job("a", 1, RayJobStatus::kFailed),
                                              FailedJob(2, "JOB_SUPERVISOR_ACTOR_DIED")});
    CHECK(Describe(plan) == "submit a-aaaaaaaaaa-r3;");
    CHECK(plan.jobs.at(0).message ==
          "retrying after JOB_SUPERVISOR_ACTOR_DIED, 1 of 1: attempt 3 is submitted");
  }
  SECTION("own, infra, own with retries 1: the own budget is spent") {
    const Plan plan =
        PlanNow(Budgets(1, 1), {FailedJob(0, ""), FailedJob(1, "JOB_SUPERVISOR_ACTOR_DIED"),
                                FailedJob(2, "RUNTIME_ENV_SETUP_FAILURE")});
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kFailed);
  }
  SECTION("infra, infra with infra_retries 1: the infra budget is spent") {
    const Plan plan =
        PlanNow(Budgets(5, 1), {FailedJob(0, "JOB_SUPERVISOR_ACTOR_DIED"),
                                FailedJob(1, "JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE")});
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kFailed);
    CHECK(plan.jobs.at(0).message ==
          "infrastructure retries exhausted (1 of 1 used) after "
          "JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE");
  }
}

TEST_CASE("the budgets survive a head restart: they are rebuilt from the ledger alone") {
  // Ray forgot everything; the ledger remembers attempts 0 to 2. Attempt 2, the latest, ended
  // FAILED (the cluster's) before the restart, and was never retried.
  const Ledger with_classes = {
      {"a", Record("a", {FailedAttempt(0, "JOB_SUPERVISOR_ACTOR_DIED", FailureClass::kInfra),
                         LostAttempt(1, kNow - 3'600'000),
                         FailedAttempt(2, "JOB_SUPERVISOR_ACTOR_DIED", FailureClass::kInfra)})}};
  // The same history written before classes were recorded: the class comes from the status,
  // the error_type and the phase.
  Ledger without_classes = with_classes;
  for (AttemptRecord& a : without_classes.at("a").attempts) a.failure_class = FailureClass::kNone;
  for (const Ledger* ledger : {&with_classes, static_cast<const Ledger*>(&without_classes)}) {
    CHECK(Describe(PlanNow(Budgets(0, 3), {}, *ledger)) == "submit a-aaaaaaaaaa-r3;");
    const Plan spent = PlanNow(Budgets(0, 2), {}, *ledger);
    CHECK(Describe(spent).empty());
    CHECK(spent.jobs.at(0).phase == Phase::kFailed);
    CHECK(spent.jobs.at(0).message ==
          "infrastructure retries exhausted (2 of 2 used) after JOB_SUPERVISOR_ACTOR_DIED");
  }
}

TEST_CASE("a run ray-gitops sent a stop is never retried, whatever error_type Ray gives it") {
  // A stopped PENDING run ends FAILED with JOB_SUPERVISOR_ACTOR_START_TIMEOUT.
  const RayJob timed_out = FailedJob(0, "JOB_SUPERVISOR_ACTOR_START_TIMEOUT");
  const JobSpec spec = Budgets(3, 3);
  SECTION("stopped for its deadline: DeadlineExceeded") {
    const Plan plan =
        PlanNow(spec, {timed_out},
                {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kFailed, "deadline")})}});
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kDeadlineExceeded);
  }
  SECTION("stopped for suspend, still suspended: Suspended") {
    JobSpec suspended = spec;
    suspended.suspend = true;
    const Plan plan =
        PlanNow(suspended, {timed_out},
                {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kFailed, "suspend")})}});
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kSuspended);
  }
  SECTION("stopped for a reason a newer version wrote: Failed, not retried") {
    const Plan plan = PlanNow(
        spec, {timed_out}, {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kFailed, "quota")})}});
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kFailed);
  }
  SECTION("stopped as replaced and desired again: restored (not a retry), budgets untouched") {
    AttemptRecord stopped = Attempt("a", 0, RayJobStatus::kFailed, "replaced");
    stopped.ending.mutable_get().error_type = "JOB_SUPERVISOR_ACTOR_START_TIMEOUT";
    const Plan plan = PlanNow(Budgets(0, 0), {timed_out}, {{"a", Record("a", {stopped})}});
    CHECK(Describe(plan) == "submit a-aaaaaaaaaa-r1;");
    CHECK_THAT(plan.jobs.at(0).message, Catch::StartsWith("restored: "));
  }
}

TEST_CASE("a head restart resubmits each active run once as Lost, and finished runs never re-run") {
  Ledger ledger = {
      {"a", Record("a", {LostAttempt(0, std::nullopt)})},
      {"b", Record("b", {Attempt("b", 0, RayJobStatus::kSucceeded)})},
      {"c", Record("c", {Attempt("c", 0, RayJobStatus::kFailed)})},
  };
  ledger.at("a").attempts[0].phase = Phase::kRunning;  // as the ledger had it before the restart
  ledger.at("a").attempts[0].failure_class = FailureClass::kNone;
  const DesiredState desired = Desired({Budgets(0, 1), Spec("b"), Spec("c")});
  PlanPolicy policy;
  policy.now_ms = kNow;
  SECTION("the pass that finds it lost: Lost, its retry due after the backoff") {
    const Plan plan = PlanActions(desired, {}, ledger, policy);
    CHECK(Describe(plan).empty());
    CHECK(plan.FindJob("a")->phase == Phase::kLost);
    CHECK(plan.FindJob("a")->message ==
          "Ray no longer knows a-aaaaaaaaaa (was RUNNING; the head restarted?); retrying after "
          "Lost, 1 of 1: attempt 1 waits 30s after it was found lost");
    CHECK(plan.recheck_at_ms == kNow + 30 * kSecond);
    CHECK(plan.FindJob("b")->phase == Phase::kSucceeded);
    CHECK(plan.FindJob("c")->phase == Phase::kFailed);
  }
  SECTION("once the backoff from the recorded lost time is over: attempt 1, nothing else") {
    ledger.at("a").attempts[0] = LostAttempt(0, kNow - 30 * kSecond);
    const Plan plan = PlanActions(desired, {}, ledger, policy);
    CHECK(Describe(plan) == "submit a-aaaaaaaaaa-r1;");
    CHECK(plan.FindJob("a")->phase == Phase::kPending);
  }
  SECTION("lost again with infra_retries 1: not retried") {
    AttemptRecord second = Attempt("a", 1, RayJobStatus::kRunning);
    second.ending.mutable_get().lost_ms = kNow - 3'600'000;
    ledger.at("a") = Record("a", {LostAttempt(0, kNow - 7'200'000), second});
    const Plan plan = PlanActions(desired, {}, ledger, policy);
    CHECK(Describe(plan).empty());
    CHECK(plan.FindJob("a")->phase == Phase::kLost);
    CHECK(plan.FindJob("a")->message ==
          "Ray no longer knows a-aaaaaaaaaa-r1 (was RUNNING; the head restarted?); "
          "infrastructure retries exhausted (1 of 1 used) after Lost");
  }
}

TEST_CASE("deadline counts from the run's first attempt, across its retries") {
  JobSpec spec = Budgets(0, 3);
  spec.mutable_lifecycle().deadline_ms = 60 * kSecond;
  RayJob first = FailedJob(0, "JOB_SUPERVISOR_ACTOR_DIED", kNow - 40 * kSecond);
  first.start_time_ms = kNow - 70 * kSecond;
  RayJob retry = Job("a", 1, RayJobStatus::kRunning);
  retry.start_time_ms = kNow - 5 * kSecond;
  SECTION("attempt 0 listed by Ray: its start_time counts") {
    const Plan plan = PlanNow(spec, {first, retry});
    CHECK(Describe(plan) == "stop a-aaaaaaaaaa-r1;");
    CHECK(plan.jobs.at(0).phase == Phase::kDeadlineExceeded);
  }
  SECTION("attempt 0 only in the ledger: the recorded start_time counts") {
    AttemptRecord remembered = FailedAttempt(0, "JOB_SUPERVISOR_ACTOR_DIED", FailureClass::kInfra);
    remembered.start_time_ms = kNow - 70 * kSecond;
    const Plan plan = PlanNow(spec, {retry}, {{"a", Record("a", {remembered})}});
    CHECK(Describe(plan) == "stop a-aaaaaaaaaa-r1;");
  }
  SECTION("within the run's deadline: the recheck is due at attempt 0's start + deadline") {
    first.start_time_ms = kNow - 50 * kSecond;
    const Plan plan = PlanNow(spec, {first, retry});
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kRunning);
    CHECK(plan.recheck_at_ms == kNow + 10 * kSecond);
  }
}

TEST_CASE("a later attempt is not submitted once the run's deadline has passed") {
  JobSpec spec = Budgets(2, 3);
  spec.mutable_lifecycle().deadline_ms = 60 * kSecond;
  SECTION("an own failure with retries left, past the deadline: DeadlineExceeded, no retry") {
    RayJob first = FailedJob(0, "JOB_ENTRYPOINT_COMMAND_ERROR", kNow - 5 * kSecond);
    first.start_time_ms = kNow - 70 * kSecond;
    const Plan plan = PlanNow(spec, {first});
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kDeadlineExceeded);
    CHECK(plan.jobs.at(0).message.find("attempt 1 is not submitted") != std::string::npos);
  }
  SECTION("an infrastructure failure whose backoff ends after the deadline: not submitted") {
    RayJob first = FailedJob(0, "JOB_SUPERVISOR_ACTOR_DIED", kNow - 40 * kSecond);
    first.start_time_ms = kNow - 70 * kSecond;
    const Plan plan = PlanNow(spec, {first});
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kDeadlineExceeded);
  }
  SECTION("a run ray-gitops suspended, unsuspended past its deadline: not restored") {
    AttemptRecord stopped = Attempt("a", 0, RayJobStatus::kStopped);
    stopped.stop_reason = StopReason::kSuspend;
    stopped.stop_sent_ms = kNow - 30 * kSecond;
    stopped.start_time_ms = kNow - 70 * kSecond;
    const Plan plan = PlanNow(spec, {}, {{"a", Record("a", {stopped})}});
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kDeadlineExceeded);
  }
  SECTION("within the deadline the retry goes ahead") {
    RayJob first = FailedJob(0, "JOB_ENTRYPOINT_COMMAND_ERROR", kNow - 5 * kSecond);
    first.start_time_ms = kNow - 30 * kSecond;
    CHECK(Describe(PlanNow(spec, {first})) == "submit a-aaaaaaaaaa-r1;");
  }
}

}  // namespace
}  // namespace rg::core
