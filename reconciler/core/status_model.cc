#include "reconciler/core/status_model.h"

#include <algorithm>
#include <array>
#include <utility>

namespace rg::core {

namespace {

constexpr std::array<std::pair<Phase, std::string_view>, 14> kPhaseNames{{
    {Phase::kPending, "Pending"},
    {Phase::kRunning, "Running"},
    {Phase::kSucceeded, "Succeeded"},
    {Phase::kFailed, "Failed"},
    {Phase::kStopped, "Stopped"},
    {Phase::kSuspended, "Suspended"},
    {Phase::kLost, "Lost"},
    {Phase::kInvalid, "Invalid"},
    {Phase::kBlocked, "Blocked"},
    {Phase::kConflict, "Conflict"},
    {Phase::kRemoved, "Removed"},
    {Phase::kStopping, "Stopping"},
    {Phase::kDeadlineExceeded, "DeadlineExceeded"},
    {Phase::kWaiting, "Waiting"},
}};
static_assert(kPhaseNames.size() == kAllPhases.size(), "a phase without a name");

// How far a run has got in Ray: statuses only ever move up this order.
int Progress(RayJobStatus s) {
  if (IsTerminal(s)) return 2;
  return s == RayJobStatus::kRunning ? 1 : 0;
}

// Of two records of one attempt, the one that saw it later, with what the other knew of
// ray-gitops' own stops.
AttemptRecord MergeAttempt(const AttemptRecord& theirs, const AttemptRecord& ours) {
  const bool theirs_later = Progress(theirs.status) > Progress(ours.status);
  AttemptRecord out = theirs_later ? theirs : ours;
  const AttemptRecord& other = theirs_later ? ours : theirs;
  if (out.stop_reason == StopReason::kNone) {
    out.stop_reason = other.stop_reason;
    out.unknown_stop_reason = other.unknown_stop_reason;
  }
  if (other.stop_sent_ms && (!out.stop_sent_ms || *other.stop_sent_ms > *out.stop_sent_ms)) {
    out.stop_sent_ms = other.stop_sent_ms;
  }
  // What either writer knew of where the attempt came from and how it ended is kept.
  if (out.commit.empty()) out.commit = other.commit;
  const AttemptEnding& theirs_end = other.ending.get();
  if (theirs_end != AttemptEnding{} && out.ending.get() != theirs_end) {
    AttemptEnding& end = out.ending.mutable_get();
    if (end.error_type.empty()) end.error_type = theirs_end.error_type;
    if (end.stop_commit.empty()) end.stop_commit = theirs_end.stop_commit;
    if (!end.lost_ms) end.lost_ms = theirs_end.lost_ms;
  }
  if (out.failure_class == FailureClass::kNone) out.failure_class = other.failure_class;
  // A stop either writer sent outranks any class: such an attempt is never retried.
  if (out.stop_reason != StopReason::kNone || out.stop_sent_ms) {
    out.failure_class = FailureClass::kNone;
  }
  return out;
}

constexpr std::array<std::pair<StopReason, std::string_view>, 4> kStopReasonNames{{
    {StopReason::kSuspend, "suspend"},
    {StopReason::kRemoval, "removed"},
    {StopReason::kReplacement, "replaced"},
    {StopReason::kDeadline, "deadline"},
}};

}  // namespace

std::string_view PhaseName(Phase p) {
  for (const auto& [phase, name] : kPhaseNames) {
    if (phase == p) return name;
  }
  return "Unknown";
}

std::string PhaseLabel(Phase p, std::string_view message) {
  std::string label(PhaseName(p));
  if (p != Phase::kWaiting || !message.starts_with("on ")) return label;
  std::string on;
  // "on a: Failed (why); on b: Running; frozen ..." -> "on a: Failed; on b: Running"
  while (message.starts_with("on ")) {
    const size_t end = std::min(message.find("; on "), message.size());
    std::string_view item = message.substr(0, end);
    item = item.substr(0, std::min(item.find(" ("), item.find("; ")));
    if (!on.empty()) on += "; ";
    on += item;
    message.remove_prefix(end == message.size() ? end : end + 2);
  }
  return label + " (" + on + ")";
}

std::optional<Phase> ParsePhase(std::string_view s) {
  for (const auto& [phase, name] : kPhaseNames) {
    if (name == s) return phase;
  }
  return std::nullopt;
}

std::string_view StopReasonName(StopReason r) {
  for (const auto& [reason, name] : kStopReasonNames) {
    if (reason == r) return name;
  }
  return "";
}

std::string StopReasonText(const AttemptRecord& a) {
  if (a.stop_reason == StopReason::kUnknown) return a.unknown_stop_reason;
  return std::string(StopReasonName(a.stop_reason));
}

std::string_view FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kInfra:
      return "infra";
    case FailureClass::kOwn:
      return "own";
    case FailureClass::kNone:
      break;
  }
  return "";
}

std::optional<FailureClass> ParseFailureClass(std::string_view s) {
  if (s == "infra") return FailureClass::kInfra;
  if (s == "own") return FailureClass::kOwn;
  return std::nullopt;
}

FailureClass ClassifyFailure(std::string_view error_type) {
  // Ray's JobErrorType values for a supervisor that died or never came up: the driver's node
  // (or the supervisor's process) was lost, not the run's doing. JOB_SUPERVISOR_ACTOR_START_FAILURE
  // and ..._UNSCHEDULABLE are the run's own: its options cannot be met, and would fail again.
  static constexpr std::array<std::string_view, 3> kInfra = {
      "JOB_SUPERVISOR_ACTOR_DIED", "JOB_SUPERVISOR_ACTOR_START_TIMEOUT",
      "JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE"};
  return std::ranges::find(kInfra, error_type) != kInfra.end() ? FailureClass::kInfra
                                                               : FailureClass::kOwn;
}

int64_t InfraRetryBackoffMs(int earlier) {
  constexpr int64_t kFirst = int64_t{30} * 1000;
  constexpr int64_t kMost = int64_t{10} * 60 * 1000;
  int64_t wait = kFirst;
  for (int i = 0; i < earlier && wait < kMost; ++i) wait *= 2;
  return std::min(wait, kMost);
}

std::optional<StopReason> ParseStopReason(std::string_view s) {
  for (const auto& [reason, name] : kStopReasonNames) {
    if (name == s) return reason;
  }
  return std::nullopt;
}

const AttemptRecord* StatusRecord::FindAttempt(std::string_view id) const {
  for (const auto& a : attempts) {
    if (a.submission_id == id) return &a;
  }
  return nullptr;
}

AttemptRecord* StatusRecord::FindAttempt(std::string_view id) {
  return const_cast<AttemptRecord*>(std::as_const(*this).FindAttempt(id));
}

LedgerMatch MatchLedger(const StatusRecord& record, std::string_view instance,
                        std::string_view ray_cluster) {
  auto differ = [](std::string_view a, std::string_view b) {
    return !a.empty() && !b.empty() && a != b;
  };
  if (differ(record.instance, instance)) return LedgerMatch::kOtherInstance;
  if (differ(record.ray_cluster, ray_cluster)) return LedgerMatch::kOtherCluster;
  return LedgerMatch::kOurs;
}

bool MeaningfulChange(const StatusRecord& before, const StatusRecord& after) {
  // Everything but spec_commit and dashboard_url: a new commit that leaves a spec untouched, or
  // a dashboard that moved, is not news about the run.
  return before.name != after.name || before.instance != after.instance ||
         before.ray_cluster != after.ray_cluster || before.spec_path != after.spec_path ||
         before.spec_hash != after.spec_hash || before.code.get().tree != after.code.get().tree ||
         before.phase != after.phase || before.on_remove != after.on_remove ||
         before.submission_id != after.submission_id || before.attempt != after.attempt ||
         before.status != after.status || before.message != after.message ||
         before.error_type != after.error_type || before.job_id != after.job_id ||
         before.start_time_ms != after.start_time_ms || before.end_time_ms != after.end_time_ms ||
         before.driver_exit_code != after.driver_exit_code || before.errors != after.errors ||
         before.attempts != after.attempts || before.skipped_slots != after.skipped_slots;
}

void AddSkippedSlots(StatusRecord& record, const std::vector<SkippedSlot>& slots) {
  for (const SkippedSlot& slot : slots) {
    const bool known = std::ranges::any_of(
        record.skipped_slots, [&](const SkippedSlot& s) { return s.slot_ms == slot.slot_ms; });
    if (!known) record.skipped_slots.push_back(slot);
  }
  std::ranges::stable_sort(record.skipped_slots, {}, &SkippedSlot::slot_ms);
  if (record.skipped_slots.size() > kKeptSkippedSlots) {
    record.skipped_slots.erase(
        record.skipped_slots.begin(),
        record.skipped_slots.end() - static_cast<std::ptrdiff_t>(kKeptSkippedSlots));
  }
}

StatusRecord MergeRecords(const StatusRecord& theirs, const StatusRecord& ours) {
  const bool same_run = !ours.submission_id.empty() && ours.submission_id == theirs.submission_id;
  StatusRecord out = same_run && Progress(theirs.status) > Progress(ours.status) ? theirs : ours;
  out.attempts.clear();
  for (const AttemptRecord& mine : ours.attempts) {
    const AttemptRecord* other = theirs.FindAttempt(mine.submission_id);
    out.attempts.push_back(other != nullptr ? MergeAttempt(*other, mine) : mine);
  }
  // Attempts only the other writer knew are newer than this writer's view: they go last, so
  // the list stays oldest first.
  for (const AttemptRecord& other : theirs.attempts) {
    if (ours.FindAttempt(other.submission_id) == nullptr) out.attempts.push_back(other);
  }
  AddSkippedSlots(out, theirs.skipped_slots);
  return out;
}

std::string DescribeTransition(const StatusRecord* before, const StatusRecord* after) {
  if (after == nullptr) {
    if (before == nullptr) return "";
    return before->name + ": " + std::string(PhaseName(before->phase)) + " -> deleted";
  }
  std::string out = after->name + ": ";
  if (before != nullptr && before->phase == after->phase && before->instance.empty() &&
      before->ray_cluster.empty() && (!after->instance.empty() || !after->ray_cluster.empty())) {
    // The one-time commit that gives a record from before ledgers had owners its owner.
    return out + std::string(PhaseName(after->phase)) + ", now in the ledger of " +
           (after->instance.empty() ? "any instance" : after->instance) + " on " +
           (after->ray_cluster.empty() ? "any cluster" : after->ray_cluster);
  }
  out += before == nullptr ? "new" : std::string(PhaseName(before->phase));
  out += " -> ";
  out += PhaseName(after->phase);
  if (!after->submission_id.empty()) {
    out += " (" + after->submission_id;
    if (after->status != RayJobStatus::kUnknown) {
      out += ", ";
      out += RayJobStatusName(after->status);
    }
    out += ")";
  }
  return out;
}

}  // namespace rg::core
