// What a status commit and `history` say changed: one transition per attempt that began or
// changed phase, the job's own phase when no attempt explains it, and the commit subject cut
// at 72 characters.

#include "reconciler/core/status_transitions.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace rg {
namespace {

using core::Phase;
using core::RayJobStatus;

core::AttemptRecord Attempt(int n, const std::string& id, Phase phase, RayJobStatus status) {
  core::AttemptRecord a;
  a.attempt = n;
  a.submission_id = id;
  a.phase = phase;
  a.status = status;
  return a;
}

// A record whose latest attempt is the last of `attempts`, in `phase`.
core::StatusRecord Record(const std::string& name, Phase phase,
                          std::vector<core::AttemptRecord> attempts) {
  core::StatusRecord r;
  r.name = name;
  r.phase = phase;
  r.attempts = std::move(attempts);
  if (!r.attempts.empty()) {
    r.submission_id = r.attempts.back().submission_id;
    r.attempt = r.attempts.back().attempt;
    r.status = r.attempts.back().status;
  }
  return r;
}

std::vector<std::string> Lines(const core::StatusRecord* before, const core::StatusRecord* after) {
  std::vector<std::string> out;
  for (const auto& t : core::RecordTransitions(before, after)) {
    out.push_back(core::TransitionLine(t));
  }
  return out;
}

const core::AttemptRecord kR0Running = Attempt(0, "p-aa", Phase::kRunning, RayJobStatus::kRunning);
const core::AttemptRecord kR0Failed = Attempt(0, "p-aa", Phase::kFailed, RayJobStatus::kFailed);
const core::AttemptRecord kR1Pending =
    Attempt(1, "p-aa-r1", Phase::kPending, RayJobStatus::kPending);

TEST_CASE("Transitions between two records, one row per attempt that moved", "[status][history]") {
  const auto pending =
      Record("p", Phase::kPending, {Attempt(0, "p-aa", Phase::kPending, RayJobStatus::kPending)});
  const auto running = Record("p", Phase::kRunning, {kR0Running});
  const auto retried = Record("p", Phase::kPending, {kR0Failed, kR1Pending});
  auto invalid = Record("p", Phase::kInvalid, {});
  auto replaced_old = kR0Running;
  replaced_old.stop_reason = core::StopReason::kReplacement;
  const auto replacing =
      Record("p", Phase::kPending,
             {replaced_old, Attempt(0, "p-bb", Phase::kPending, RayJobStatus::kPending)});
  auto old_stopped = replaced_old;
  old_stopped.phase = Phase::kStopped;
  old_stopped.status = RayJobStatus::kStopped;
  const auto replaced =
      Record("p", Phase::kRunning,
             {old_stopped, Attempt(0, "p-bb", Phase::kRunning, RayJobStatus::kRunning)});
  auto stopping = running;
  stopping.phase = Phase::kStopping;

  struct Case {
    const char* what;
    const core::StatusRecord* before;
    const core::StatusRecord* after;
    std::vector<std::string> lines;
  };
  const std::vector<Case> cases = {
      {"a new job", nullptr, &pending, {"p: new -> Pending (p-aa)"}},
      {"one transition", &pending, &running, {"p: Pending -> Running (p-aa)"}},
      {"a failure retried in one pass",
       &running,
       &retried,
       {"p: Running -> Failed (p-aa)", "p: new -> Pending (attempt 1, p-aa-r1)"}},
      {"a replacement: the new run", &running, &replacing, {"p: new -> Pending (p-bb)"}},
      {"the replaced run stops as the new one runs",
       &replacing,
       &replaced,
       {"p: Running -> Stopped (p-aa)", "p: Pending -> Running (p-bb)"}},
      {"a job-level phase no attempt explains",
       &running,
       &stopping,
       {"p: Running -> Stopping (p-aa)"}},
      {"an invalid spec without a run", nullptr, &invalid, {"p: new -> Invalid"}},
      {"a deleted record", &running, nullptr, {"p: Running -> deleted (p-aa)"}},
      {"nothing moved", &running, &running, {}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK(Lines(c.before, c.after) == c.lines);
  }
}

TEST_CASE("A transition carries the attempt's number, id and Ray status", "[status][history]") {
  const auto running = Record("p", Phase::kRunning, {kR0Running});
  const auto retried = Record("p", Phase::kPending, {kR0Failed, kR1Pending});
  const auto ts = core::RecordTransitions(&running, &retried);
  REQUIRE(ts.size() == 2);
  CHECK(ts[0].attempt == 0);
  CHECK(ts[0].from == "Running");
  CHECK(ts[0].to == "Failed");
  CHECK(ts[0].status == RayJobStatus::kFailed);
  CHECK(ts[1].attempt == 1);
  CHECK(ts[1].submission_id == "p-aa-r1");
  CHECK(ts[1].from == "new");
  CHECK(ts[1].status == RayJobStatus::kPending);
}

TEST_CASE("A change without a phase change still says what changed", "[status][history]") {
  auto before = Record("p", Phase::kRunning, {kR0Running});
  auto after = before;
  after.message = "something new";
  CHECK(core::ChangeLines(&before, &after) ==
        std::vector<std::string>{"p: Running (p-aa), message changed"});
  CHECK(core::SubjectItem(&before, &after) == "p Running (message changed)");

  auto owned = before;
  owned.instance = "ray-gitops";
  owned.ray_cluster = "prod";
  CHECK(core::ChangeLines(&before, &owned) ==
        std::vector<std::string>{"p: Running, now in the ledger of ray-gitops on prod"});
  CHECK(core::SubjectItem(&before, &owned) == "p Running (owner recorded)");
}

TEST_CASE("Subject items name the job and its phase change", "[status][commit]") {
  const auto pending = Record("p", Phase::kPending, {});
  const auto running = Record("p", Phase::kRunning, {kR0Running});
  CHECK(core::SubjectItem(nullptr, &pending) == "p new -> Pending");
  CHECK(core::SubjectItem(&pending, &running) == "p Pending -> Running");
  CHECK(core::SubjectItem(&running, nullptr) == "p Running -> deleted");
}

TEST_CASE("A subject item says how earlier runs ended on the way", "[status][commit]") {
  const auto running = Record("p", Phase::kRunning, {kR0Running});
  const auto retried = Record("p", Phase::kPending, {kR0Failed, kR1Pending});
  CHECK(core::SubjectItem(&running, &retried) == "p Running -> Failed -> Pending");

  auto old_stopped = kR0Running;
  old_stopped.phase = Phase::kStopped;
  old_stopped.status = RayJobStatus::kStopped;
  const auto replacing =
      Record("p", Phase::kPending,
             {kR0Running, Attempt(0, "p-bb", Phase::kPending, RayJobStatus::kPending)});
  const auto replaced =
      Record("p", Phase::kPending,
             {old_stopped, Attempt(0, "p-bb", Phase::kPending, RayJobStatus::kPending)});
  CHECK(core::SubjectItem(&running, &replacing) == "p Running -> Pending");
  CHECK(core::SubjectItem(&replacing, &replaced) == "p Pending -> Stopped -> Pending");
}

TEST_CASE("The subject lists what fits in 72 characters and counts the rest", "[status][commit]") {
  struct Case {
    const char* what;
    std::vector<std::string> items;
    std::string subject;
  };
  const std::string long_name(63, 'x');
  const std::vector<Case> cases = {
      {"one", {"ppo-qwen Running -> Succeeded"}, "ray-gitops: ppo-qwen Running -> Succeeded"},
      {"two that fit",
       {"ppo-qwen Running -> Succeeded", "sft-qwen Pending -> Running"},
       "ray-gitops: ppo-qwen Running -> Succeeded, sft-qwen Pending -> Running"},
      {"five, cut",
       {"a Pending -> Running", "b Running -> Failed", "c new -> Pending", "d new -> Pending",
        "e new -> Pending"},
       "ray-gitops: a Pending -> Running, b Running -> Failed +3 more"},
      {"a first item too long on its own",
       {long_name + " Running -> Succeeded", "b new -> Pending"},
       "ray-gitops: " + std::string(49, 'x') + "... +1 more"},
      {"nothing", {}, "ray-gitops: no changes"},
      // Nine do not fit with " +1 more", all ten do without it.
      {"the most that fit, not the fewest that do not",
       {"aa ok", "b ok", "c ok", "d ok", "e ok", "f ok", "g ok", "h ok", "i ok", "j"},
       "ray-gitops: aa ok, b ok, c ok, d ok, e ok, f ok, g ok, h ok, i ok, j"},
      {"50,000: one fits", std::vector<std::string>(50000, "team-00001-eval-00001 new -> Pending"),
       "ray-gitops: team-00001-eval-00001 new -> Pending +49999 more"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string subject = core::StatusCommitSubject(c.items);
    CHECK(subject == c.subject);
    CHECK(subject.size() <= core::kMaxSubjectLength);
  }
}

TEST_CASE("Odd names stay on one line and are never cut inside a character", "[status][commit]") {
  auto before = Record("we\nird", Phase::kPending, {});
  auto after = Record("we\nird", Phase::kRunning, {});
  CHECK(core::SubjectItem(&before, &after) == "we ird Pending -> Running");
  CHECK(core::ChangeLines(&before, &after) ==
        std::vector<std::string>{"we ird: Pending -> Running"});

  // 30 two-byte characters: 60 bytes, which with the prefix do not fit in 72.
  std::string wide;
  for (int i = 0; i < 30; ++i) wide += "\xc3\xa9";
  const std::string subject = core::StatusCommitSubject({wide + " new -> Pending"});
  CHECK(subject.size() <= core::kMaxSubjectLength);
  REQUIRE(subject.ends_with("..."));
  const std::string kept =
      subject.substr(core::kSubjectPrefix.size(), subject.size() - core::kSubjectPrefix.size() - 3);
  CHECK(kept.size() % 2 == 0);  // whole characters only
}

TEST_CASE("JobHistory lists every transition oldest first with its commits", "[status][history]") {
  auto pending =
      Record("p", Phase::kPending, {Attempt(0, "p-aa", Phase::kPending, RayJobStatus::kPending)});
  pending.spec_commit = "spec1";
  auto retried = Record("p", Phase::kPending, {kR0Failed, kR1Pending});
  retried.spec_commit = "spec1";
  std::vector<core::RecordVersion> versions(3);
  versions[0].commit = "c1";
  versions[0].time_ms = 1000;
  versions[0].record = pending;
  versions[1].commit = "c2";
  versions[1].time_ms = 2000;
  versions[1].record = retried;
  versions[2].commit = "c3";
  versions[2].time_ms = 3000;  // deleted

  const auto rows = core::JobHistory(versions);
  REQUIRE(rows.size() == 4);
  CHECK(core::TransitionLine(rows[0].transition) == "p: new -> Pending (p-aa)");
  CHECK(rows[0].status_commit == "c1");
  CHECK(rows[0].spec_commit == "spec1");
  CHECK(core::TransitionLine(rows[1].transition) == "p: Pending -> Failed (p-aa)");
  CHECK(rows[1].time_ms == 2000);
  CHECK(core::TransitionLine(rows[2].transition) == "p: new -> Pending (attempt 1, p-aa-r1)");
  CHECK(rows[2].status_commit == "c2");
  CHECK(core::TransitionLine(rows[3].transition) == "p: Pending -> deleted (attempt 1, p-aa-r1)");
  CHECK(rows[3].spec_commit == "spec1");  // the last record's
}

TEST_CASE("An attempt's end names its error_type and class, each transition the commit that caused it",
          "[status][history]") {
  core::AttemptRecord running = kR0Running;
  running.commit = "spec1";
  core::AttemptRecord died = kR0Failed;
  died.commit = "spec1";
  died.failure_class = core::FailureClass::kInfra;
  died.ending.mutable_get().error_type = "JOB_SUPERVISOR_ACTOR_DIED";
  core::AttemptRecord retry = kR1Pending;
  retry.commit = "spec2";
  const auto before = Record("p", Phase::kRunning, {running});
  const auto after = Record("p", Phase::kPending, {died, retry});
  CHECK(Lines(&before, &after) ==
        std::vector<std::string>{"p: Running -> Failed (p-aa, JOB_SUPERVISOR_ACTOR_DIED, infra)",
                                 "p: new -> Pending (attempt 1, p-aa-r1)"});
  const auto ts = core::RecordTransitions(&before, &after);
  REQUIRE(ts.size() == 2);
  CHECK(core::TransitionTarget(ts[0]) == "Failed (JOB_SUPERVISOR_ACTOR_DIED, infra)");
  CHECK(ts[0].commit.empty());  // the cluster's doing, no commit's
  CHECK(core::TransitionTarget(ts[1]) == "Pending");
  CHECK(ts[1].commit == "spec2");

  // A Lost attempt: its class; a stopped one: the commit whose pass sent the stop.
  core::AttemptRecord lost = kR0Running;
  lost.phase = Phase::kLost;
  lost.failure_class = core::FailureClass::kInfra;
  core::AttemptRecord stopped = Attempt(0, "p-aa", Phase::kStopped, RayJobStatus::kStopped);
  stopped.stop_reason = core::StopReason::kReplacement;
  stopped.ending.mutable_get().stop_commit = "spec3";
  const auto lost_after = Record("p", Phase::kLost, {lost});
  const auto stopped_after = Record("p", Phase::kStopped, {stopped});
  const auto lost_ts = core::RecordTransitions(&before, &lost_after);
  REQUIRE(lost_ts.size() == 1);
  CHECK(core::TransitionTarget(lost_ts[0]) == "Lost (infra)");
  const auto stop_ts = core::RecordTransitions(&before, &stopped_after);
  REQUIRE(stop_ts.size() == 1);
  CHECK(stop_ts[0].commit == "spec3");

  // history's rows carry the causing commit, else the record's spec commit.
  auto first = before;
  first.spec_commit = "spec1";
  auto second = stopped_after;
  second.spec_commit = "spec1";
  std::vector<core::RecordVersion> versions(2);
  versions[0].commit = "c1";
  versions[0].record = first;
  versions[1].commit = "c2";
  versions[1].record = second;
  const auto rows = core::JobHistory(versions);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].spec_commit == "spec1");
  CHECK(rows[1].spec_commit == "spec3");
}

}  // namespace
}  // namespace rg
