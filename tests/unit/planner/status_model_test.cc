#include "reconciler/core/status_model.h"

#include <catch2/catch.hpp>
#include <set>
#include <string_view>

namespace rg::core {
namespace {

TEST_CASE("phase names round-trip") {
  std::set<std::string_view> names;
  for (Phase p : kAllPhases) {
    CHECK(ParsePhase(PhaseName(p)) == p);
    CHECK(names.insert(PhaseName(p)).second);  // no two phases share a name
  }
  CHECK(names.count("Stopping") == 1);
  CHECK_FALSE(ParsePhase("running").has_value());
}

TEST_CASE("a Waiting job's phase names what it waits on, without the reasons") {
  CHECK(PhaseLabel(Phase::kWaiting, "on sft-qwen: Running") == "Waiting (on sft-qwen: Running)");
  CHECK(PhaseLabel(Phase::kWaiting, "on a: Failed (exit 1; see the log); on b: Pending") ==
        "Waiting (on a: Failed; on b: Pending)");
  CHECK(PhaseLabel(Phase::kWaiting, "on b: Waiting (on a: Running)") == "Waiting (on b: Waiting)");
  CHECK(PhaseLabel(Phase::kWaiting,
                   "on a: Invalid (its spec is invalid); frozen until it is valid (nothing "
                   "submitted or stopped)") == "Waiting (on a: Invalid)");
  // Other phases, and a message of another shape, are the phase's name.
  CHECK(PhaseLabel(Phase::kWaiting, "") == "Waiting");
  CHECK(PhaseLabel(Phase::kRunning, "on a: Running") == "Running");
}

TEST_CASE("stop reason names round-trip, and no reason has no name") {
  for (StopReason r : {StopReason::kSuspend, StopReason::kRemoval, StopReason::kReplacement}) {
    CHECK_FALSE(StopReasonName(r).empty());
    CHECK(ParseStopReason(StopReasonName(r)) == r);
  }
  CHECK(StopReasonName(StopReason::kRemoval) == "removed");
  CHECK(StopReasonName(StopReason::kNone).empty());
  CHECK_FALSE(ParseStopReason("").has_value());
  CHECK_FALSE(ParseStopReason("Suspend").has_value());
}

TEST_CASE("only changes a person cares about count as meaningful") {
  StatusRecord a;
  a.name = "x";
  a.phase = Phase::kRunning;
  StatusRecord b = a;
  b.spec_commit = "0123456789abcdef";
  b.dashboard_url = "http://127.0.0.1:8265/#/jobs/x";
  CHECK_FALSE(MeaningfulChange(a, b));
  b.phase = Phase::kSucceeded;
  CHECK(MeaningfulChange(a, b));
}

TEST_CASE("transitions are described for commit messages") {
  StatusRecord before;
  before.name = "ppo-qwen";
  before.phase = Phase::kPending;
  StatusRecord after = before;
  after.phase = Phase::kRunning;
  after.submission_id = "ppo-qwen-3f2a1c9b0e";
  after.status = RayJobStatus::kRunning;
  CHECK(DescribeTransition(&before, &after) ==
        "ppo-qwen: Pending -> Running (ppo-qwen-3f2a1c9b0e, RUNNING)");
  CHECK(DescribeTransition(nullptr, &after) ==
        "ppo-qwen: new -> Running (ppo-qwen-3f2a1c9b0e, RUNNING)");
  CHECK(DescribeTransition(&after, nullptr) == "ppo-qwen: Running -> deleted");
}

TEST_CASE("a record is in a ledger when its instance and cluster match, empty matches all") {
  StatusRecord r;
  r.name = "x";
  r.instance = "ray-gitops";
  r.ray_cluster = "prod";
  CHECK(MatchLedger(r, "ray-gitops", "prod") == LedgerMatch::kOurs);
  CHECK(MatchLedger(r, "team-b", "prod") == LedgerMatch::kOtherInstance);
  CHECK(MatchLedger(r, "team-b", "staging") == LedgerMatch::kOtherInstance);
  CHECK(MatchLedger(r, "ray-gitops", "staging") == LedgerMatch::kOtherCluster);
  CHECK(MatchLedger(r, "", "") == LedgerMatch::kOurs);  // history, tools: every ledger
  CHECK(MatchLedger(r, "ray-gitops", "") == LedgerMatch::kOurs);

  StatusRecord ownerless;  // written before ledgers had owners: whoever reads it
  ownerless.name = "x";
  CHECK(MatchLedger(ownerless, "ray-gitops", "prod") == LedgerMatch::kOurs);
  CHECK(MatchLedger(ownerless, "team-b", "staging") == LedgerMatch::kOurs);
}

TEST_CASE("giving an ownerless record its owner is a change, described as such") {
  StatusRecord before;
  before.name = "ppo-qwen";
  before.phase = Phase::kSucceeded;
  StatusRecord after = before;
  after.instance = "ray-gitops";
  after.ray_cluster = "http://127.0.0.1:8265";
  CHECK(MeaningfulChange(before, after));
  CHECK(DescribeTransition(&before, &after) ==
        "ppo-qwen: Succeeded, now in the ledger of ray-gitops on http://127.0.0.1:8265");
  // A phase change at the same time is described as the phase change.
  after.phase = Phase::kLost;
  CHECK(DescribeTransition(&before, &after) == "ppo-qwen: Succeeded -> Lost");
  // Owned records that stay owned are ordinary transitions.
  StatusRecord owned = after;
  owned.phase = Phase::kSucceeded;
  CHECK(DescribeTransition(&owned, &after) == "ppo-qwen: Succeeded -> Lost");
}

AttemptRecord Attempt(const std::string& id, int number, RayJobStatus status) {
  AttemptRecord a;
  a.submission_id = id;
  a.attempt = number;
  a.status = status;
  a.phase = status == RayJobStatus::kRunning ? Phase::kRunning : Phase::kPending;
  return a;
}

TEST_CASE("two writers' records of one job merge: attempts joined, a finished run stays ended") {
  StatusRecord theirs;  // a replica that saw the run end and its stop reason
  theirs.name = "x";
  theirs.phase = Phase::kSucceeded;
  theirs.submission_id = "x-1";
  theirs.status = RayJobStatus::kSucceeded;
  theirs.attempts = {Attempt("x-0", 0, RayJobStatus::kFailed),
                     Attempt("x-1", 1, RayJobStatus::kSucceeded)};
  theirs.attempts[0].stop_reason = StopReason::kReplacement;
  theirs.attempts[0].stop_sent_ms = 5;
  StatusRecord ours = theirs;  // this writer's older view of the same run
  ours.phase = Phase::kRunning;
  ours.status = RayJobStatus::kRunning;
  ours.attempts = {Attempt("x-0", 0, RayJobStatus::kFailed),
                   Attempt("x-1", 1, RayJobStatus::kRunning)};

  const StatusRecord merged = MergeRecords(theirs, ours);
  CHECK(merged.phase == Phase::kSucceeded);
  CHECK(merged.status == RayJobStatus::kSucceeded);
  REQUIRE(merged.attempts.size() == 2);
  CHECK(merged.attempts[0].stop_reason == StopReason::kReplacement);
  CHECK(merged.attempts[0].stop_sent_ms == 5);
  CHECK(merged.attempts[1].status == RayJobStatus::kSucceeded);
  // The other way round gives the same run state: order of writers does not matter.
  CHECK(MergeRecords(ours, theirs).status == RayJobStatus::kSucceeded);

  // An attempt only the other writer knew is kept, last; a newer run of ours stays ours.
  StatusRecord newer = ours;
  newer.submission_id = "x-2";
  newer.phase = Phase::kPending;
  newer.status = RayJobStatus::kPending;
  newer.attempts = {Attempt("x-0", 0, RayJobStatus::kFailed),
                    Attempt("x-2", 0, RayJobStatus::kPending)};
  const StatusRecord joined = MergeRecords(theirs, newer);
  CHECK(joined.submission_id == "x-2");
  CHECK(joined.phase == Phase::kPending);
  REQUIRE(joined.attempts.size() == 3);
  CHECK(joined.attempts[1].submission_id == "x-2");
  CHECK(joined.attempts[2].submission_id == "x-1");
  CHECK(joined.attempts[2].status == RayJobStatus::kSucceeded);

  // One writer alone: merging its previous record changes nothing it did not change.
  CHECK(MergeRecords(ours, theirs) == theirs);
}

TEST_CASE("a merge keeps what either writer knew of an attempt's commit, class and ending") {
  StatusRecord theirs;  // a replica that saw attempt 0 fail for the cluster, and submitted it
  theirs.name = "x";
  theirs.submission_id = "x-0";
  theirs.status = RayJobStatus::kFailed;
  theirs.attempts = {Attempt("x-0", 0, RayJobStatus::kFailed)};
  theirs.attempts[0].commit = "c0";
  theirs.attempts[0].failure_class = FailureClass::kInfra;
  theirs.attempts[0].ending.mutable_get().error_type = "JOB_SUPERVISOR_ACTOR_DIED";
  StatusRecord ours = theirs;  // a writer that saw the same end without knowing more
  ours.attempts[0].commit.clear();
  ours.attempts[0].failure_class = FailureClass::kNone;
  ours.attempts[0].ending.reset();
  for (const StatusRecord& merged : {MergeRecords(theirs, ours), MergeRecords(ours, theirs)}) {
    REQUIRE(merged.attempts.size() == 1);
    CHECK(merged.attempts[0].commit == "c0");
    CHECK(merged.attempts[0].failure_class == FailureClass::kInfra);
    CHECK(merged.attempts[0].ending.get().error_type == "JOB_SUPERVISOR_ACTOR_DIED");
  }
  // A Lost time and a stop's commit either knew are kept; a stop outranks any class.
  StatusRecord lost = theirs;
  lost.attempts = {Attempt("x-0", 0, RayJobStatus::kRunning)};
  lost.attempts[0].phase = Phase::kLost;
  lost.attempts[0].failure_class = FailureClass::kInfra;
  lost.attempts[0].ending.mutable_get().lost_ms = 42;
  StatusRecord stopped = lost;
  stopped.attempts[0].phase = Phase::kRunning;
  stopped.attempts[0].failure_class = FailureClass::kNone;
  stopped.attempts[0].ending.reset();
  stopped.attempts[0].stop_reason = StopReason::kSuspend;
  stopped.attempts[0].ending.mutable_get().stop_commit = "c9";
  const StatusRecord merged = MergeRecords(lost, stopped);
  CHECK(merged.attempts[0].ending.get().lost_ms == 42);
  CHECK(merged.attempts[0].ending.get().stop_commit == "c9");
  CHECK(merged.attempts[0].stop_reason == StopReason::kSuspend);
  CHECK(merged.attempts[0].failure_class == FailureClass::kNone);
}

}  // namespace
}  // namespace rg::core
