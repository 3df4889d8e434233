#pragma once
// What changed between two versions of a job's status record, as people read it
// (docs/status-branch.md, "Commits"):
// one transition per attempt that began or moved to another phase (attempt 0 Failed, then
// attempt 1 Pending; the replaced run Stopped, then the new run Pending), plus the job's own
// phase when no attempt explains it (new -> Invalid, Running -> Stopping). The status commit's
// subject and body and `ray-gitops history` are built from these. Pure.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/ray_job.h"
#include "reconciler/core/status_model.h"

namespace rg::core {

// The state before a job's first record, and after its file is deleted.
inline constexpr std::string_view kNewState = "new";
inline constexpr std::string_view kDeletedState = "deleted";

struct Transition {
  std::string name;
  std::optional<int> attempt;                    // unset for a job that has never had an attempt
  std::string submission_id;                     // empty for a job without a run (an invalid spec)
  std::string from;                              // a phase name, or kNewState
  std::string to;                                // a phase name, or kDeletedState
  RayJobStatus status = RayJobStatus::kUnknown;  // the run's Ray status after the transition
  // An attempt's end: Ray's error_type and the failure class (DESIGN §3.1); empty otherwise.
  std::string error_type;
  FailureClass failure_class = FailureClass::kNone;
  // The commit that caused it, when the record knows: the commit an attempt was submitted
  // from (its start), or the commit whose pass sent it a stop (its end). Empty otherwise.
  std::string commit;

  friend bool operator==(const Transition&, const Transition&) = default;
};

// The transitions from `before` to `after` (nullptr: no record), in this order: each attempt
// of `after` that is new or whose phase differs from its phase in `before` (oldest attempt
// first); then the job's phase, when it changed and the latest attempt's transition does not
// already say so. A deleted record gives one transition, "<phase> -> deleted". Attempts only
// `before` lists (cut from the latest 50) give none. Empty when no phase changed.
std::vector<Transition> RecordTransitions(const StatusRecord* before, const StatusRecord* after);

// One body line of a status commit: "ppo-qwen: Pending -> Running (ppo-qwen-3f2a1c9b0e)",
// "ppo-qwen: new -> Pending (attempt 1, ppo-qwen-3f2a1c9b0e-r1)", "smoke: new -> Invalid",
// "ppo-qwen: Running -> Failed (ppo-qwen-3f2a1c9b0e, JOB_SUPERVISOR_ACTOR_DIED, infra)".
// Control characters in the name become spaces.
std::string TransitionLine(const Transition& t);

// The body lines of one job's change: its TransitionLines, or, when no phase changed, one line
// that says what did ("ppo-qwen: Running (ppo-qwen-3f2a1c9b0e), message changed"; a record
// that gets its owner: DescribeTransition's "now in the ledger of" line).
std::vector<std::string> ChangeLines(const StatusRecord* before, const StatusRecord* after);

// One job in a status commit's subject: the job's phase before, how its earlier runs ended on
// the way, and its phase after: "ppo-qwen Running -> Succeeded", "ppo-qwen new -> Pending",
// "ppo-qwen Running -> Failed -> Pending" (attempt 0 failed, attempt 1 submitted), "ppo-qwen
// Pending -> Stopped -> Running" (the replaced run stopped, the new one runs), "ppo-qwen
// Removed -> deleted"; when nothing of that changed, the phase and what did ("ppo-qwen Running
// (message changed)").
std::string SubjectItem(const StatusRecord* before, const StatusRecord* after);

inline constexpr size_t kMaxSubjectLength = 72;
inline constexpr std::string_view kSubjectPrefix = "ray-gitops: ";

// "ray-gitops: " and the items joined by ", ", as many as fit in `max_length` characters with
// " +N more" for the rest. When not even the first fits, it is cut and ends in "...". Never
// longer than max_length; never cuts inside a UTF-8 character.
std::string StatusCommitSubject(const std::vector<std::string>& items,
                                size_t max_length = kMaxSubjectLength);

// One version of a job's status file in the status branch's history.
struct RecordVersion {
  std::string commit;  // the status commit
  int64_t time_ms = 0;
  std::optional<StatusRecord> record;  // nullopt: the file was deleted in this commit
};

// "Failed (JOB_SUPERVISOR_ACTOR_DIED, infra)", "Lost (infra)": the state a transition moved
// to, with how the attempt ended when it failed or was lost; else the state alone.
std::string TransitionTarget(const Transition& t);

// One row of `ray-gitops history`: a transition and the commit that recorded it.
struct HistoryRow {
  int64_t time_ms = 0;
  std::string status_commit;
  // The commit that caused the transition (Transition::commit), else the spec commit of the
  // record that holds it; empty when unknown.
  std::string spec_commit;
  // The code of that record's run (a spec with `code`): folder, tree id and commit; else empty.
  std::string code_folder;
  std::string code_tree;
  std::string code_commit;
  Transition transition;
};

// Every transition of one job, oldest first, from its record's versions oldest first: each
// version is compared with the one before it (the first with no record).
std::vector<HistoryRow> JobHistory(const std::vector<RecordVersion>& versions);

}  // namespace rg::core
