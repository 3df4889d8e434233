// The whole per-job decision, row by row: the planner's phase and actions (core::PlanActions),
// what carrying them out came to, and the status record that results (core::BuildStatusUpdate).
// The engine only applies the actions and writes the records; everything decided is here.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/planner.h"
#include "reconciler/core/render.h"
#include "reconciler/core/status_update.h"
#include "tests/unit/planner/plan_fixtures.h"

namespace rg::core {
namespace {

using fixtures::Attempt;
using fixtures::Describe;
using fixtures::Desired;
using fixtures::Job;
using fixtures::kHash;
using fixtures::kOldHash;
using fixtures::Record;
using fixtures::Spec;

constexpr int64_t kNow = 1795338691123;

// What carrying out the plan's actions came to.
enum class Applied {
  kAllOk,           // every stop sent, every submit accepted
  kAdopted,         // the submit found the run already in Ray
  kSubmitConflict,  // the id is held by a run of other content
  kSubmitDown,      // Ray could not be reached for the submit
  kStopFailed,      // Ray refused the stop
  kDryRun,          // nothing was carried out (plan)
};

std::vector<ActionOutcome> Outcomes(const Plan& plan, Applied applied) {
  std::vector<ActionOutcome> out;
  if (applied == Applied::kDryRun) return out;
  for (const Action& a : plan.actions) {
    ActionOutcome o;
    o.action = a;
    o.ok = true;
    if (a.kind == ActionKind::kStop) {
      o.stop_sent = true;
      if (applied == Applied::kStopFailed) {
        o.ok = false;
        o.error = Error::Transient("HTTP 500 from the stop");
      }
    } else if (applied == Applied::kAdopted) {
      o.adopted = true;
    } else if (applied == Applied::kSubmitConflict) {
      o.ok = false;
      o.error = Error::Conflict("taken by a run of different content");
    } else if (applied == Applied::kSubmitDown) {
      o.ok = false;
      o.error = Error::Transient("connection refused");
    }
    out.push_back(std::move(o));
  }
  return out;
}

struct Row {
  std::string title;
  std::vector<JobSpec> specs;  // without "a": its spec was removed
  std::vector<RayJob> ray;     // Ray's jobs, before and after the pass alike
  Ledger ledger;
  Applied applied;
  std::string actions;  // as Describe() prints them
  Phase phase;          // the record's phase
  std::string message;  // the record's message starts with this
  RayJobStatus status;  // the record's last Ray status
  std::string latest;   // the record's submission id
};

RayJob WithMessage(RayJob job, const std::string& message) {
  job.message = message;
  return job;
}

JobSpec Retries(JobSpec spec, int retries) {
  spec.retries = retries;
  return spec;
}

JobSpec InfraRetries(JobSpec spec, int infra_retries) {
  spec.infra_retries = infra_retries;
  return spec;
}

// A run as Ray lists it once it ended with `error_type` at `end_ms` (on the head's clock).
RayJob Ended(RayJob job, const std::string& error_type, int64_t end_ms) {
  job.error_type = error_type;
  job.end_time_ms = end_ms;
  return job;
}

AttemptRecord LostAt(AttemptRecord a, int64_t lost_ms) {
  a.phase = Phase::kLost;
  a.failure_class = FailureClass::kInfra;
  a.ending.mutable_get().lost_ms = lost_ms;
  return a;
}

JobSpec Suspended(JobSpec spec) {
  spec.suspend = true;
  return spec;
}

const std::string kId = std::string("a-") + kHash;
const std::string kOldId = std::string("a-") + kOldHash;

TEST_CASE("each row of the per-job decision gives its actions and its status record") {
  const JobSpec a = Spec("a");
  const std::vector<Row> rows = {
      {"new job, submitted: Pending with the plan's reason",
       {a},
       {},
       {},
       Applied::kAllOk,
       "submit " + kId + ";",
       Phase::kPending,
       "new job",
       RayJobStatus::kPending,
       kId},
      {"new job, Ray already had it: adopted",
       {a},
       {},
       {},
       Applied::kAdopted,
       "submit " + kId + ";",
       Phase::kPending,
       "adopted " + kId + ", which Ray already had",
       RayJobStatus::kPending,
       kId},
      {"new job, the id is held by other content: Conflict",
       {a},
       {},
       {},
       Applied::kSubmitConflict,
       "submit " + kId + ";",
       Phase::kConflict,
       "submit of " + kId + " failed: ",
       RayJobStatus::kUnknown,
       kId},
      {"new job, Ray down: still Pending, the failure is the message",
       {a},
       {},
       {},
       Applied::kSubmitDown,
       "submit " + kId + ";",
       Phase::kPending,
       "submit of " + kId + " failed: ",
       RayJobStatus::kUnknown,
       kId},
      {"new job, dry run: Pending with the plan's reason, nothing of Ray",
       {a},
       {},
       {},
       Applied::kDryRun,
       "submit " + kId + ";",
       Phase::kPending,
       "new job",
       RayJobStatus::kUnknown,
       kId},
      {"running: Ray's own words",
       {a},
       {WithMessage(Job("a", 0, RayJobStatus::kRunning), "Job is currently running.")},
       {},
       Applied::kAllOk,
       "",
       Phase::kRunning,
       "Job is currently running.",
       RayJobStatus::kRunning,
       kId},
      {"suspended while running: the stop is sent and the record is Stopping",
       {Suspended(a)},
       {Job("a", 0, RayJobStatus::kRunning)},
       {},
       Applied::kAllOk,
       "stop " + kId + ";",
       Phase::kStopping,
       "suspend: true",
       RayJobStatus::kRunning,
       kId},
      {"suspended while running, the stop refused: the refusal is the message",
       {Suspended(a)},
       {Job("a", 0, RayJobStatus::kRunning)},
       {},
       Applied::kStopFailed,
       "stop " + kId + ";",
       Phase::kStopping,
       "stop of " + kId + " failed: ",
       RayJobStatus::kRunning,
       kId},
      {"failed with retries left: the next attempt, retries counted as retries",
       {Retries(a, 2)},
       {Job("a", 0, RayJobStatus::kFailed)},
       {},
       Applied::kAllOk,
       "submit " + kId + "-r1;",
       Phase::kPending,
       kId + " failed; retrying as attempt 1 (retry 1 of 2)",
       RayJobStatus::kPending,
       kId + "-r1"},
      {"lost from Ray, first found: Lost, waiting for the infrastructure retry's backoff",
       {a},
       {},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning)})}},
       Applied::kAllOk,
       "",
       Phase::kLost,
       "Ray no longer knows " + kId +
           " (was RUNNING; the head restarted?); retrying after Lost, 1 of 3: attempt 1 waits "
           "30s after it was found lost",
       RayJobStatus::kRunning,
       kId},
      {"lost from Ray, the backoff over: resubmitted as an infrastructure retry, retries untouched",
       {a},
       {},
       {{"a", Record("a", {LostAt(Attempt("a", 0, RayJobStatus::kRunning), kNow - 30'000)})}},
       Applied::kAllOk,
       "submit " + kId + "-r1;",
       Phase::kPending,
       "Ray no longer knows " + kId +
           " (was RUNNING; the head restarted?); retrying after Lost, 1 of 3: attempt 1 is "
           "submitted",
       RayJobStatus::kPending,
       kId + "-r1"},
      {"lost from Ray with no infrastructure retries: Lost, and says so",
       {InfraRetries(a, 0)},
       {},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning)})}},
       Applied::kAllOk,
       "",
       Phase::kLost,
       "Ray no longer knows " + kId +
           " (was RUNNING; the head restarted?); infrastructure retries exhausted (the spec "
           "allows none) after Lost",
       RayJobStatus::kRunning,
       kId},
      {"failed for the cluster, within the backoff: Pending, the record says why",
       {a},
       {Ended(Job("a", 0, RayJobStatus::kFailed), "JOB_SUPERVISOR_ACTOR_DIED", kNow - 1'000)},
       {},
       Applied::kAllOk,
       "",
       Phase::kPending,
       "retrying after JOB_SUPERVISOR_ACTOR_DIED, 1 of 3: attempt 1 waits 30s after " + kId +
           " ended",
       RayJobStatus::kFailed,
       kId},
      {"failed for the cluster with its budget spent: Failed, the record says so",
       {InfraRetries(a, 1)},
       {Ended(Job("a", 0, RayJobStatus::kFailed), "JOB_SUPERVISOR_ACTOR_DIED", kNow - 100'000),
        Ended(Job("a", 1, RayJobStatus::kFailed), "JOB_SUPERVISOR_ACTOR_DIED", kNow - 1'000)},
       {},
       Applied::kAllOk,
       "",
       Phase::kFailed,
       "infrastructure retries exhausted (1 of 1 used) after JOB_SUPERVISOR_ACTOR_DIED",
       RayJobStatus::kFailed,
       kId + "-r1"},
      {"spec changed while running: the old run stopped as replaced, the new one submitted",
       {a},
       {Job("a", 0, RayJobStatus::kRunning, kOldHash)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning, "", kOldHash)})}},
       Applied::kAllOk,
       "stop " + kOldId + ";submit " + kId + ";",
       Phase::kPending,
       "spec changed: submitting the new version",
       RayJobStatus::kPending,
       kId},
      {"removed while running: stopped, the record stays as Stopping",
       {Spec("b")},
       {Job("a", 0, RayJobStatus::kRunning), Job("b", 0, RayJobStatus::kRunning)},
       {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning)})}},
       Applied::kAllOk,
       "stop " + kId + ";",
       Phase::kStopping,
       "spec removed",
       RayJobStatus::kRunning,
       kId},
  };
  for (const Row& row : rows) {
    SECTION(row.title) {
      PlanPolicy policy;
      policy.now_ms = kNow;
      const DesiredState desired = Desired(row.specs);
      const Plan plan = PlanActions(desired, row.ray, row.ledger, policy);
      CHECK(Describe(plan) == row.actions);

      StatusInputs in;
      in.desired = &desired;
      in.plan = &plan;
      in.ledger = &row.ledger;
      for (const RayJob& job : row.ray) in.ray_jobs.emplace(job.submission_id, &job);
      in.outcomes = Outcomes(plan, row.applied);
      in.now_ms = kNow;
      in.ray_address = "http://127.0.0.1:8265";
      const StatusUpdate update = BuildStatusUpdate(in);
      REQUIRE(update.records.count("a") == 1);
      const StatusRecord& rec = update.records.at("a");
      CHECK(PhaseName(rec.phase) == PhaseName(row.phase));
      INFO("message: " << rec.message);
      CHECK(rec.message.rfind(row.message, 0) == 0);
      CHECK(RayJobStatusName(rec.status) == RayJobStatusName(row.status));
      CHECK(rec.submission_id == row.latest);
      CHECK(rec.dashboard_url == "http://127.0.0.1:8265/#/jobs/" + row.latest);
    }
  }
}

TEST_CASE("the attempts of a record say what the pass did to each run") {
  PlanPolicy policy;
  policy.now_ms = kNow;
  const DesiredState desired = Desired({Spec("a")});
  const RayJob old_run = Job("a", 0, RayJobStatus::kRunning, kOldHash);
  const Ledger ledger = {
      {"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning, "", kOldHash)})}};
  const Plan plan = PlanActions(desired, {old_run}, ledger, policy);
  StatusInputs in;
  in.desired = &desired;
  in.plan = &plan;
  in.ledger = &ledger;
  in.ray_jobs.emplace(old_run.submission_id, &old_run);
  in.outcomes = Outcomes(plan, Applied::kAllOk);
  in.now_ms = kNow;
  const StatusRecord rec = BuildStatusUpdate(in).records.at("a");
  REQUIRE(rec.attempts.size() == 2);
  const AttemptRecord* old_attempt = rec.FindAttempt(kOldId);
  REQUIRE(old_attempt != nullptr);
  CHECK(old_attempt->stop_reason == StopReason::kReplacement);
  CHECK(old_attempt->stop_sent_ms == kNow);
  CHECK(old_attempt->spec_hash == kOldHash);
  const AttemptRecord* new_attempt = rec.FindAttempt(kId);
  REQUIRE(new_attempt != nullptr);
  CHECK(new_attempt->phase == Phase::kPending);
  CHECK(new_attempt->status == RayJobStatus::kPending);
  CHECK(new_attempt->stop_reason == StopReason::kNone);
  CHECK_FALSE(new_attempt->stop_sent_ms.has_value());
  CHECK(new_attempt->spec_hash == kHash);
}

// A pass's records over the given Ray jobs and outcomes of `plan` (every action carried out),
// from the commit "c2".
StatusRecord RecordAfter(const DesiredState& desired, const Plan& plan, const Ledger& ledger,
                         const std::vector<RayJob>& ray, int64_t now_ms) {
  StatusInputs in;
  in.desired = &desired;
  in.plan = &plan;
  in.ledger = &ledger;
  for (const RayJob& job : ray) in.ray_jobs.emplace(job.submission_id, &job);
  in.outcomes = Outcomes(plan, Applied::kAllOk);
  in.now_ms = now_ms;
  in.spec_commit = "c2";
  return BuildStatusUpdate(in).records.at("a");
}

TEST_CASE("each attempt records its error_type, its class and the commits of its transitions") {
  PlanPolicy policy;
  policy.now_ms = kNow;
  const DesiredState desired = Desired({Spec("a")});
  SECTION("failed for the cluster, retried: the class and error_type, each submit's commit") {
    RayJob died = Job("a", 0, RayJobStatus::kFailed);
    died.error_type = "JOB_SUPERVISOR_ACTOR_DIED";
    died.end_time_ms = kNow - 60'000;
    died.metadata[std::string(kMetaCommit)] = "c0";
    const Ledger ledger = {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning)})}};
    const Plan plan = PlanActions(desired, {died}, ledger, policy);
    REQUIRE(Describe(plan) == "submit " + kId + "-r1;");
    const StatusRecord rec = RecordAfter(desired, plan, ledger, {died}, kNow);
    const AttemptRecord* first = rec.FindAttempt(kId);
    REQUIRE(first != nullptr);
    CHECK(first->ending.get().error_type == "JOB_SUPERVISOR_ACTOR_DIED");
    CHECK(first->failure_class == FailureClass::kInfra);
    CHECK(first->commit == "c0");
    const AttemptRecord* retry = rec.FindAttempt(kId + "-r1");
    REQUIRE(retry != nullptr);
    CHECK(retry->commit == "c2");
    CHECK(retry->failure_class == FailureClass::kNone);
  }
  SECTION("failed by its own doing: own") {
    RayJob failed = Job("a", 0, RayJobStatus::kFailed);
    failed.error_type = "JOB_ENTRYPOINT_COMMAND_ERROR";
    const Plan plan = PlanActions(desired, {failed}, {}, policy);
    const StatusRecord rec = RecordAfter(desired, plan, {}, {failed}, kNow);
    REQUIRE(rec.FindAttempt(kId) != nullptr);
    CHECK(rec.FindAttempt(kId)->failure_class == FailureClass::kOwn);
    CHECK(rec.phase == Phase::kFailed);
  }
  SECTION("stopped by this pass, then ended FAILED with START_TIMEOUT: the stop's commit, no class") {
    const RayJob old_run = Job("a", 0, RayJobStatus::kPending, kOldHash);
    const Ledger ledger = {
        {"a", Record("a", {Attempt("a", 0, RayJobStatus::kPending, "", kOldHash)})}};
    const Plan plan = PlanActions(desired, {old_run}, ledger, policy);
    REQUIRE(Describe(plan) == "stop " + kOldId + ";submit " + kId + ";");
    const StatusRecord stopped = RecordAfter(desired, plan, ledger, {old_run}, kNow);
    REQUIRE(stopped.FindAttempt(kOldId) != nullptr);
    CHECK(stopped.FindAttempt(kOldId)->ending.get().stop_commit == "c2");
    RayJob ended = old_run;
    ended.status = RayJobStatus::kFailed;
    ended.error_type = "JOB_SUPERVISOR_ACTOR_START_TIMEOUT";
    const Ledger next = {{"a", stopped}};
    const Plan later = PlanActions(desired, {ended}, next, policy);
    const StatusRecord rec = RecordAfter(desired, later, next, {ended}, kNow + 1000);
    const AttemptRecord* a = rec.FindAttempt(kOldId);
    REQUIRE(a != nullptr);
    CHECK(a->ending.get().error_type == "JOB_SUPERVISOR_ACTOR_START_TIMEOUT");
    CHECK(a->failure_class == FailureClass::kNone);
  }
  SECTION("lost: infra, with the time it was first found lost, kept by later passes") {
    const Ledger ledger = {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning)})}};
    const Plan plan = PlanActions(desired, {}, ledger, policy);
    const StatusRecord rec = RecordAfter(desired, plan, ledger, {}, kNow);
    const AttemptRecord* lost = rec.FindAttempt(kId);
    REQUIRE(lost != nullptr);
    CHECK(lost->phase == Phase::kLost);
    CHECK(lost->failure_class == FailureClass::kInfra);
    CHECK(lost->ending.get().lost_ms == kNow);
    const Ledger next = {{"a", rec}};
    PlanPolicy later_policy = policy;
    later_policy.now_ms = kNow + 10'000;
    const Plan later = PlanActions(desired, {}, next, later_policy);
    CHECK(Describe(later).empty());
    const StatusRecord again = RecordAfter(desired, later, next, {}, kNow + 10'000);
    CHECK(again.FindAttempt(kId)->ending.get().lost_ms == kNow);
    CHECK_FALSE(MeaningfulChange(rec, again));  // waiting out the backoff commits nothing
  }
}

TEST_CASE("an active attempt missing from Ray is lost only when the listing was complete") {
  const DesiredState desired = Desired({Spec("a")});
  // The ledger's latest attempt ended; an earlier one it remembers as running is gone.
  const Ledger ledger = {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kRunning, "", kOldHash),
                                            Attempt("a", 0, RayJobStatus::kSucceeded)})}};
  const RayJob done = Job("a", 0, RayJobStatus::kSucceeded);
  const Plan plan = PlanActions(desired, {done}, ledger, PlanPolicy{});
  StatusInputs in;
  in.desired = &desired;
  in.plan = &plan;
  in.ledger = &ledger;
  in.ray_jobs.emplace(done.submission_id, &done);
  for (const bool complete : {true, false}) {
    in.ray_jobs_complete = complete;
    const StatusRecord rec = BuildStatusUpdate(in).records.at("a");
    const AttemptRecord* gone = rec.FindAttempt(kOldId);
    REQUIRE(gone != nullptr);
    CHECK(gone->phase == (complete ? Phase::kLost : Phase::kRunning));
    CHECK(rec.phase == Phase::kSucceeded);
  }
}

TEST_CASE("a removed job whose run ended keeps its record, Removed, for a revert to find") {
  const DesiredState desired = Desired({Spec("b")});
  const Ledger ledger = {{"a", Record("a", {Attempt("a", 0, RayJobStatus::kSucceeded)})}};
  const std::vector<RayJob> ray = {Job("a", 0, RayJobStatus::kSucceeded),
                                   Job("b", 0, RayJobStatus::kRunning)};
  const Plan plan = PlanActions(desired, ray, ledger, PlanPolicy{});
  CHECK(Describe(plan).empty());
  StatusInputs in;
  in.desired = &desired;
  in.plan = &plan;
  in.ledger = &ledger;
  for (const RayJob& job : ray) in.ray_jobs.emplace(job.submission_id, &job);
  const StatusUpdate update = BuildStatusUpdate(in);
  REQUIRE(update.records.count("a") == 1);
  const StatusRecord& rec = update.records.at("a");
  CHECK(rec.phase == Phase::kRemoved);
  CHECK(rec.spec_path == "jobs/a.yaml");
  REQUIRE(rec.attempts.size() == 1);
  CHECK(rec.attempts[0].phase == Phase::kSucceeded);
  const StatusDiff diff = DiffAgainstLedger(update, ledger);
  REQUIRE(diff.changes.count("a") == 1);
  CHECK(diff.changes.at("a").has_value());  // rewritten as Removed, never deleted
}

}  // namespace
}  // namespace rg::core
