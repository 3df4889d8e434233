// Scheduled jobs in the planner (DESIGN §3.4, "Schedules"; docs/reconcile.md): one run per
// slot with its slot's id, concurrency, starting_deadline, missed slots, DST, retries, and the
// time to plan again.

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "reconciler/core/cron.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/render.h"
#include "reconciler/core/schedule.h"
#include "reconciler/core/time_format.h"
#include "reconciler/core/tzif.h"
#include "tests/unit/planner/plan_fixtures.h"

namespace rg::core {
namespace {

using fixtures::Describe;
using fixtures::Desired;
using fixtures::kHash;
using fixtures::kOldHash;
using fixtures::Spec;

// ms since the epoch of a UTC wall time.
int64_t UtcMs(int64_t year, int month, int day, int hour, int minute, int second = 0) {
  return ((DaysFromCivil(year, month, day) * 24 + hour) * 60 + minute) * 60'000 +
         int64_t{second} * 1000;
}

std::shared_ptr<const TimeZone> Berlin() {
  // tzdata's rule for Europe/Berlin since 1996, built in: core reads no files.
  return std::make_shared<const TimeZone>(*TimeZoneFromPosix("CET-1CEST,M3.5.0,M10.5.0/3"));
}

JobSpec Scheduled(const std::string& cron, Concurrency concurrency = Concurrency::kForbid,
                  std::shared_ptr<const TimeZone> zone = std::make_shared<const TimeZone>(Utc())) {
  JobSpec s = Spec("a");
  ScheduleFields& schedule = s.mutable_lifecycle().schedule.emplace();
  schedule.cron_text = cron;
  schedule.cron = *ParseCron(cron);
  schedule.timezone = zone ? "Europe/Berlin" : "Mars/Olympus";
  schedule.concurrency = concurrency;
  schedule.zone = std::move(zone);
  return s;
}

// A run of slot `slot` ("YYYYMMDDHHMM") as Ray lists it.
RayJob SlotJob(const std::string& slot, int attempt, RayJobStatus status,
               const std::string& hash = kHash) {
  RayJob j = fixtures::Job("a", attempt, status, hash);
  j.submission_id = "a-" + hash + "-" + slot + (attempt > 0 ? "-r" + std::to_string(attempt) : "");
  j.metadata[std::string(kMetaSlot)] = slot;
  return j;
}

AttemptRecord SlotAttempt(const std::string& slot, int attempt, RayJobStatus status,
                          const std::string& hash = kHash) {
  AttemptRecord a = fixtures::Attempt("a", attempt, status, "", hash);
  a.submission_id = "a-" + hash + "-" + slot + (attempt > 0 ? "-r" + std::to_string(attempt) : "");
  return a;
}

Plan PlanAt(const JobSpec& spec, const std::vector<RayJob>& observed, const Ledger& ledger,
            int64_t now_ms) {
  PlanPolicy policy;
  policy.now_ms = now_ms;
  return PlanActions(Desired({spec}), observed, ledger, policy);
}

TEST_CASE("the latest slot at or before now is submitted with its slot's UTC time in its id") {
  const JobSpec spec = Scheduled("*/15 * * * *");
  const Plan plan = PlanAt(spec, {}, {}, UtcMs(2026, 11, 28, 12, 7, 30));
  CHECK(Describe(plan) == "submit a-aaaaaaaaaa-202611281200;");
  REQUIRE(plan.actions.size() == 1);
  CHECK(plan.actions[0].slot == "202611281200");
  CHECK(plan.actions[0].attempt == 0);
  const JobPlan& jp = plan.jobs.at(0);
  CHECK(jp.phase == Phase::kPending);
  CHECK(jp.submission_id == "a-aaaaaaaaaa-202611281200");
  // The next slot is when the same inputs are planned differently: the memo expires then.
  CHECK(jp.next_slot_ms() == UtcMs(2026, 11, 28, 12, 15));
  CHECK(plan.recheck_at_ms == UtcMs(2026, 11, 28, 12, 15));
}

TEST_CASE(
    "a slot whose run exists is not submitted again, and between slots the job shows its "
    "latest slot run's phase") {
  const JobSpec spec = Scheduled("*/15 * * * *");
  const int64_t now = UtcMs(2026, 11, 28, 12, 7);
  Plan running = PlanAt(spec, {SlotJob("202611281200", 0, RayJobStatus::kRunning)}, {}, now);
  CHECK(Describe(running).empty());
  CHECK(running.jobs.at(0).phase == Phase::kRunning);
  CHECK(running.recheck_at_ms == UtcMs(2026, 11, 28, 12, 15));

  // Ray forgot it (a head restart) but the ledger knows it ended: never run twice.
  Ledger ledger = {
      {"a", fixtures::Record("a", {SlotAttempt("202611281200", 0, RayJobStatus::kSucceeded)})}};
  Plan done = PlanAt(spec, {}, ledger, now);
  CHECK(Describe(done).empty());
  CHECK(done.jobs.at(0).phase == Phase::kSucceeded);

  // The next slot comes: its own run.
  Plan next = PlanAt(spec, {SlotJob("202611281200", 0, RayJobStatus::kSucceeded)}, ledger,
                     UtcMs(2026, 11, 28, 12, 15, 2));
  CHECK(Describe(next) == "submit a-aaaaaaaaaa-202611281215;");
}

TEST_CASE("concurrency: forbid waits, replace stops the earlier run first, allow runs both") {
  const int64_t now = UtcMs(2026, 11, 28, 12, 0, 20);
  const std::vector<RayJob> earlier = {SlotJob("202611281145", 0, RayJobStatus::kRunning)};

  const Plan forbid = PlanAt(Scheduled("*/15 * * * *", Concurrency::kForbid), earlier, {}, now);
  CHECK(Describe(forbid).empty());
  CHECK(forbid.jobs.at(0).phase == Phase::kRunning);
  CHECK_THAT(forbid.jobs.at(0).message,
             Catch::Contains("concurrency forbid and a-aaaaaaaaaa-202611281145 is still active"));
  CHECK(forbid.jobs.at(0).skipped_slots().empty());  // not yet: it may still start

  const Plan replace = PlanAt(Scheduled("*/15 * * * *", Concurrency::kReplace), earlier, {}, now);
  CHECK(Describe(replace) == "stop a-aaaaaaaaaa-202611281145;submit a-aaaaaaaaaa-202611281200;");
  CHECK(replace.actions.at(0).stop_reason == StopReason::kReplacement);

  const Plan allow = PlanAt(Scheduled("*/15 * * * *", Concurrency::kAllow), earlier, {}, now);
  CHECK(Describe(allow) == "submit a-aaaaaaaaaa-202611281200;");

  // The earlier run ended within the starting deadline: the waiting slot starts, late.
  const Plan freed = PlanAt(Scheduled("*/15 * * * *", Concurrency::kForbid),
                            {SlotJob("202611281145", 0, RayJobStatus::kSucceeded)}, {},
                            UtcMs(2026, 11, 28, 12, 10));
  CHECK(Describe(freed) == "submit a-aaaaaaaaaa-202611281200;");
}

TEST_CASE("a slot held back by forbid is recorded as skipped once it has passed") {
  JobSpec spec = Scheduled("0 * * * *", Concurrency::kForbid);
  spec.mutable_lifecycle().schedule->starting_deadline_ms = 600'000;  // 10m
  const std::vector<RayJob> earlier = {SlotJob("202611281100", 0, RayJobStatus::kRunning)};
  // 12:05: the 12:00 slot waits; the plan is due again when its starting deadline passes.
  const Plan waiting = PlanAt(spec, earlier, {}, UtcMs(2026, 11, 28, 12, 5));
  CHECK(Describe(waiting).empty());
  CHECK(waiting.recheck_at_ms == UtcMs(2026, 11, 28, 12, 10));
  // 12:10: skipped, and why.
  const Plan skipped = PlanAt(spec, earlier, {}, UtcMs(2026, 11, 28, 12, 10));
  CHECK(Describe(skipped).empty());
  REQUIRE(skipped.jobs.at(0).skipped_slots().size() == 1);
  CHECK(skipped.jobs.at(0).skipped_slots()[0].slot_ms == UtcMs(2026, 11, 28, 12, 0));
  CHECK(skipped.jobs.at(0).skipped_slots()[0].reason ==
        "concurrency forbid: a-aaaaaaaaaa-202611281100 was still active");
  CHECK(skipped.recheck_at_ms == UtcMs(2026, 11, 28, 13, 0));
}

// A slot is an instant of the daemon's calendar; Ray's end_time is on the head's clock.
TEST_CASE("slots come on the daemon's clock, and a run's end is set against them on the head's") {
  JobSpec spec = Scheduled("0 * * * *", Concurrency::kForbid);
  spec.mutable_lifecycle().schedule->starting_deadline_ms = 600'000;  // 10m
  constexpr int64_t kHour = 3'600'000;
  PlanPolicy policy;
  policy.now_ms = UtcMs(2026, 11, 28, 13, 5);
  policy.ray_now_ms = policy.now_ms - 2 * kHour;  // the daemon 2 h ahead of the head
  // The 11:00 run ended at 10:30 on the head's clock: 12:30 on the daemon's, after the 12:00
  // slot came, which it held back.
  RayJob earlier = SlotJob("202611281100", 0, RayJobStatus::kSucceeded);
  earlier.end_time_ms = UtcMs(2026, 11, 28, 10, 30);
  const Plan plan = PlanActions(Desired({spec}), {earlier}, {}, policy);
  // The 13:00 slot of the daemon's clock is 5 minutes old: submitted.
  CHECK(Describe(plan) == "submit a-aaaaaaaaaa-202611281300;");
  REQUIRE(plan.jobs.at(0).skipped_slots().size() == 1);
  CHECK(plan.jobs.at(0).skipped_slots()[0].slot_ms == UtcMs(2026, 11, 28, 12, 0));
  CHECK(plan.jobs.at(0).skipped_slots()[0].reason ==
        "concurrency forbid: a-aaaaaaaaaa-202611281100 was still active");
  CHECK(plan.jobs.at(0).next_slot_ms() == UtcMs(2026, 11, 28, 14, 0));

  // Ended at 11:30 on the daemon's clock (09:30 on the head's): before the 12:00 slot, missed.
  earlier.end_time_ms = UtcMs(2026, 11, 28, 9, 30);
  const Plan missed = PlanActions(Desired({spec}), {earlier}, {}, policy);
  REQUIRE(missed.jobs.at(0).skipped_slots().size() == 1);
  CHECK(missed.jobs.at(0).skipped_slots()[0].reason ==
        "missed: not started within starting_deadline 10m");
}

TEST_CASE(
    "a daemon down for a day runs only the latest slot, and only while it is younger than "
    "starting_deadline") {
  const JobSpec spec = Scheduled("0 2 * * *");  // starting_deadline 1h (the default)
  Ledger ledger = {
      {"a", fixtures::Record("a", {SlotAttempt("202611260200", 0, RayJobStatus::kSucceeded)})}};
  // Back at 02:30 two days later: the 27th's slot is gone for good, the 28th's runs.
  const Plan in_time = PlanAt(spec, {}, ledger, UtcMs(2026, 11, 28, 2, 30));
  CHECK(Describe(in_time) == "submit a-aaaaaaaaaa-202611280200;");
  REQUIRE(in_time.jobs.at(0).skipped_slots().size() == 1);
  CHECK(in_time.jobs.at(0).skipped_slots()[0].slot_ms == UtcMs(2026, 11, 27, 2, 0));
  CHECK(in_time.jobs.at(0).skipped_slots()[0].reason ==
        "missed: not started within starting_deadline 1h");

  // Back at 12:00: the latest slot is 10 hours old: nothing runs late, nothing as a backlog.
  const Plan late = PlanAt(spec, {}, ledger, UtcMs(2026, 11, 28, 12, 0));
  CHECK(Describe(late).empty());
  const JobPlan& jp = late.jobs.at(0);
  CHECK(jp.phase == Phase::kSucceeded);  // the latest slot run's
  CHECK_THAT(jp.message, Catch::Contains("missed: not started within starting_deadline 1h"));
  REQUIRE(jp.skipped_slots().size() == 2);
  CHECK(jp.skipped_slots()[0].slot_ms == UtcMs(2026, 11, 27, 2, 0));
  CHECK(jp.skipped_slots()[1].slot_ms == UtcMs(2026, 11, 28, 2, 0));
  CHECK(late.recheck_at_ms == UtcMs(2026, 11, 29, 2, 0));

  // A new scheduled job whose latest slot is too old waits for its first slot.
  const Plan fresh = PlanAt(spec, {}, {}, UtcMs(2026, 11, 28, 12, 0));
  CHECK(Describe(fresh).empty());
  CHECK(fresh.jobs.at(0).phase == Phase::kPending);
  CHECK(fresh.jobs.at(0).skipped_slots().empty());
  CHECK(fresh.jobs.at(0).next_slot_ms() == UtcMs(2026, 11, 29, 2, 0));
}

TEST_CASE(
    "DST in Europe/Berlin: a skipped 02:30 fires at the end of the gap, a repeated 02:30 "
    "fires once") {
  const JobSpec spec = Scheduled("30 2 * * *", Concurrency::kForbid, Berlin());
  // Sunday 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC); 02:30 does not exist.
  const Plan before = PlanAt(spec, {}, {}, UtcMs(2026, 3, 29, 0, 59));
  CHECK(Describe(before).empty());  // the 28th's slot (01:30 UTC) is 23.5 hours old
  CHECK(before.jobs.at(0).next_slot_ms() == UtcMs(2026, 3, 29, 1, 0));
  const Plan gap = PlanAt(spec, {}, {}, UtcMs(2026, 3, 29, 1, 0, 30));
  CHECK(Describe(gap) == "submit a-aaaaaaaaaa-202603290100;");
  CHECK(gap.jobs.at(0).next_slot_ms() == UtcMs(2026, 3, 30, 0, 30));  // 02:30 CEST

  // Sunday 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00 UTC); 02:30 happens twice.
  const Plan first = PlanAt(spec, {}, {}, UtcMs(2026, 10, 25, 0, 31));
  CHECK(Describe(first) == "submit a-aaaaaaaaaa-202610250030;");
  CHECK(first.jobs.at(0).next_slot_ms() == UtcMs(2026, 10, 26, 1, 30));  // 02:30 CET
  const Plan second = PlanAt(spec, {SlotJob("202610250030", 0, RayJobStatus::kSucceeded)}, {},
                             UtcMs(2026, 10, 25, 1, 31));
  CHECK(Describe(second).empty());
  CHECK(second.jobs.at(0).phase == Phase::kSucceeded);
}

TEST_CASE("a failed slot run is retried per slot, up to retries") {
  JobSpec spec = Scheduled("0 * * * *");
  spec.retries = 1;
  const int64_t now = UtcMs(2026, 11, 28, 12, 20);
  const Plan retry = PlanAt(spec, {SlotJob("202611281200", 0, RayJobStatus::kFailed)}, {}, now);
  CHECK(Describe(retry) == "submit a-aaaaaaaaaa-202611281200-r1;");
  REQUIRE(retry.actions.size() == 1);
  CHECK(retry.actions[0].attempt == 1);
  CHECK(retry.actions[0].slot == "202611281200");
  const Plan out = PlanAt(spec,
                          {SlotJob("202611281200", 0, RayJobStatus::kFailed),
                           SlotJob("202611281200", 1, RayJobStatus::kFailed)},
                          {}, now);
  CHECK(Describe(out).empty());
  CHECK(out.jobs.at(0).phase == Phase::kFailed);
  // Lost while running, found lost a minute ago: resubmitted as the slot's next attempt, an
  // infrastructure retry.
  AttemptRecord running = SlotAttempt("202611281200", 0, RayJobStatus::kRunning);
  running.ending.mutable_get().lost_ms = now - 60'000;
  Ledger lost = {{"a", fixtures::Record("a", {running})}};
  CHECK(Describe(PlanAt(spec, {}, lost, now)) == "submit a-aaaaaaaaaa-202611281200-r1;");
}

// Each slot is a run of its own (DESIGN §3.1): its budgets count its own attempts only.
TEST_CASE("a slot run the cluster failed is retried after the backoff, its budget per slot") {
  JobSpec spec = Scheduled("0 * * * *");
  spec.infra_retries = 1;
  const int64_t now = UtcMs(2026, 11, 28, 12, 20);
  auto died = [](const std::string& slot, int attempt, int64_t end_ms) {
    RayJob job = SlotJob(slot, attempt, RayJobStatus::kFailed);
    job.error_type = "JOB_SUPERVISOR_ACTOR_DIED";
    job.end_time_ms = end_ms;
    return job;
  };
  // The previous slot spent its infrastructure retry; this slot's is whole.
  const std::vector<RayJob> before = {died("202611281100", 0, now - 3'000'000),
                                      died("202611281100", 1, now - 2'000'000)};
  std::vector<RayJob> ray = before;
  ray.push_back(died("202611281200", 0, now - 10'000));
  const Plan early = PlanAt(spec, ray, {}, now);
  CHECK(Describe(early).empty());
  CHECK(early.jobs.at(0).phase == Phase::kPending);
  CHECK(early.recheck_at_ms == now + 20'000);
  ray.back().end_time_ms = now - 30'000;
  const Plan due = PlanAt(spec, ray, {}, now);
  CHECK(Describe(due) == "submit a-aaaaaaaaaa-202611281200-r1;");
  REQUIRE(due.actions.size() == 1);
  CHECK(due.actions[0].slot == "202611281200");
  // The slot's retry failed for the cluster too: its budget is spent.
  ray.push_back(died("202611281200", 1, now - 600'000));
  const Plan spent = PlanAt(spec, ray, {}, now);
  CHECK(Describe(spent).empty());
  CHECK(spent.jobs.at(0).phase == Phase::kFailed);
}

TEST_CASE("suspend, a spec change and an unknown time around scheduled runs") {
  JobSpec suspended = Scheduled("*/15 * * * *");
  suspended.suspend = true;
  const int64_t now = UtcMs(2026, 11, 28, 12, 20);
  const Plan stop =
      PlanAt(suspended, {SlotJob("202611281215", 0, RayJobStatus::kRunning)}, {}, now);
  CHECK(Describe(stop) == "stop a-aaaaaaaaaa-202611281215;");
  CHECK(stop.actions.at(0).stop_reason == StopReason::kSuspend);
  CHECK(Describe(PlanAt(suspended, {}, {}, now)).empty());

  // A new spec hash: the old version's slot run is replaced, the slot runs under the new id.
  const Plan changed =
      PlanAt(Scheduled("*/15 * * * *"),
             {SlotJob("202611281215", 0, RayJobStatus::kRunning, kOldHash)}, {}, now);
  CHECK(Describe(changed) == "stop a-bbbbbbbbbb-202611281215;submit a-aaaaaaaaaa-202611281215;");

  // Without the pass's time no slot is submitted.
  CHECK(Describe(PlanAt(Scheduled("*/15 * * * *"), {}, {}, 0)).empty());
}

TEST_CASE("a scheduled spec whose zone was not loaded is frozen like an invalid one") {
  const JobSpec spec = Scheduled("*/15 * * * *", Concurrency::kForbid, nullptr);
  const Plan plan = PlanAt(spec, {SlotJob("202611281200", 0, RayJobStatus::kRunning, kOldHash)}, {},
                           UtcMs(2026, 11, 28, 12, 20));
  CHECK(Describe(plan).empty());  // no submit, and no stop of the older run either
  CHECK(plan.jobs.at(0).phase == Phase::kInvalid);
  CHECK_THAT(plan.jobs.at(0).message, Catch::Contains("Mars/Olympus"));
}

TEST_CASE("a deadline applies to a slot run as to any run") {
  JobSpec spec = Scheduled("0 * * * *");
  spec.mutable_lifecycle().deadline_ms = 600'000;
  RayJob run = SlotJob("202611281200", 0, RayJobStatus::kRunning);
  run.start_time_ms = UtcMs(2026, 11, 28, 12, 0, 5);
  const Plan due = PlanAt(spec, {run}, {}, UtcMs(2026, 11, 28, 12, 11));
  CHECK(Describe(due) == "stop a-aaaaaaaaaa-202611281200;");
  CHECK(due.actions.at(0).stop_reason == StopReason::kDeadline);
  const Plan early = PlanAt(spec, {run}, {}, UtcMs(2026, 11, 28, 12, 5));
  CHECK(early.recheck_at_ms == UtcMs(2026, 11, 28, 12, 10, 5));  // before the next slot
}

}  // namespace
}  // namespace rg::core

namespace rg::core {
namespace {

TEST_CASE("a scheduled job with after runs its slot only once its upstream succeeded") {
  JobSpec nightly = Scheduled("0 * * * *", Concurrency::kReplace);
  nightly.name = "nightly";
  nightly.spec_hash = "nnnnnnnnnn";
  nightly.mutable_pipeline().after = {"prep"};
  nightly.mutable_pipeline().after_pos = {SourcePos{3, 9}};
  const JobSpec prep = Spec("prep", "pppppppppp");
  PlanPolicy policy;
  policy.now_ms = UtcMs(2026, 11, 28, 12, 7);
  // The previous slot's run is active; prep runs: the slot waits, and replaces nothing yet.
  RayJob previous = fixtures::Job("nightly", 0, RayJobStatus::kRunning, "nnnnnnnnnn");
  previous.submission_id = "nightly-nnnnnnnnnn-202611281100";
  const Plan waiting = PlanActions(
      Desired({nightly, prep}),
      {previous, fixtures::Job("prep", 0, RayJobStatus::kRunning, "pppppppppp")}, {}, policy);
  CHECK(Describe(waiting).empty());
  const JobPlan* jp = waiting.FindJob("nightly");
  REQUIRE(jp != nullptr);
  CHECK(jp->phase == Phase::kWaiting);
  CHECK(jp->message == "on prep: Running");
  // The slot's starting deadline (1 h) is a time to plan again: the slot is missed then.
  REQUIRE(waiting.recheck_at_ms);
  CHECK(*waiting.recheck_at_ms <= UtcMs(2026, 11, 28, 13, 0));
  // prep succeeded: the slot replaces the previous run.
  const Plan ready = PlanActions(
      Desired({nightly, prep}),
      {previous, fixtures::Job("prep", 0, RayJobStatus::kSucceeded, "pppppppppp")}, {}, policy);
  CHECK(Describe(ready) ==
        "stop nightly-nnnnnnnnnn-202611281100;submit nightly-nnnnnnnnnn-202611281200;");
}

}  // namespace
}  // namespace rg::core
