#pragma once
// The reconcile decision as a pure function (docs/reconcile.md): from what Git says
// (desired), what Ray reports (observed), what the status branch remembers (ledger) and the
// policy, to an ordered list of actions with reasons and the phase of every job. No I/O, no
// clock. Table-tested in tests/unit/planner/.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/boxed.h"
#include "reconciler/core/code_change.h"
#include "reconciler/core/desired_state.h"
#include "reconciler/core/ownership.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/result.h"
#include "reconciler/core/status_model.h"

namespace rg::core {

struct PlanPolicy {
  // Whose runs are ours (docs/operations.md): our instance and repository, --previous-repo.
  Ownership owner = {};
  int max_stops = 5;
  // `sync --max-stops N` given explicitly: a deliberate override that also lifts the
  // "desired set is empty" guard.
  bool max_stops_explicit = false;
  // Valid specs desired besides those in the DesiredState planned: a narrow pass
  // (engine/narrow_pass.h) plans a few names of a larger desired set, which is not empty
  // though the part planned may be.
  int desired_elsewhere = 0;
  // Wall-clock time of the pass (ms since the epoch): a stop sent less than
  // kStopResendAfterMs ago that Ray has not carried out yet is not sent again (Stopping).
  // 0: unknown; a pending stop is then never resent.
  int64_t now_ms = 0;
  // The Ray head's time at the pass (ms since the epoch), as the pass estimated it from the
  // Date header of Ray's answers: never ahead of the head's clock. Ray's times (a run's
  // start_time and end_time, on the head's clock) are compared with it, never with now_ms, so
  // a daemon whose clock is ahead stops no run before its deadline has passed on the head.
  // What the plan dates (a stop sent, recheck_at_ms) and a schedule's slots stay on the
  // daemon's clock, as now_ms. 0: unknown; now_ms stands in.
  int64_t ray_now_ms = 0;
  // Jobs whose status file could not be read, by name, with why: without their history a
  // finished run could be taken for a new one, so they are frozen like an invalid spec (no
  // submit, no stop; phase Invalid with this message).
  std::map<std::string, std::string, std::less<>> frozen_jobs = {};
  // Lists the files by which two trees of a code folder differ, for the messages of a spec
  // whose code moved; unset: the messages name the trees.
  CodeChangeLister code_changes = {};
};

enum class ActionKind { kStop, kSubmit };

struct Action {
  ActionKind kind = ActionKind::kSubmit;
  std::string name;
  std::string submission_id;
  int attempt = 0;
  std::string reason;                          // one line for people: why this action
  StopReason stop_reason = StopReason::kNone;  // kStop only
  std::string spec_path;  // kSubmit: the spec to render (a path in DesiredState::jobs)
  // kStop: what Ray last reported for the run being stopped (its phase in a plan's stop row).
  RayJobStatus stopped_status = RayJobStatus::kUnknown;
  // kSubmit of a job with `after`: each upstream's successful current run, whose folder the
  // job's ${runs.<name>.dir} resolve to (core/pipeline.h).
  UpstreamRuns upstream_runs;
  // kSubmit of a scheduled job: the slot, "YYYYMMDDHHMM" in UTC (RenderContext::slot).
  std::string slot;
};

// What carrying out one action came to (engine::ApplyPlan fills it; BuildStatusUpdate reads it).
struct ActionOutcome {
  Action action;
  bool ok = false;
  bool adopted = false;        // kSubmit: Ray already had the run; nothing was sent
  bool stop_sent = false;      // kStop: false when the run had already ended
  std::optional<Error> error;  // set iff !ok
  std::string artifact_error;  // the submission stands; the artifacts could not be written
};

// What a plan keeps of Ray's view of a job's latest attempt: its status and message. (Ray's whole
// job, with its entrypoint and labels, is in the pass's listing; a copy per job was a tenth of
// a pass's memory at 50,000 jobs.)
struct ObservedRun {
  RayJobStatus status = RayJobStatus::kUnknown;
  std::string message;

  explicit ObservedRun(const RayJob& job) : status(job.status), message(job.message) {}
};

// What the planner concluded about one job name.
// What a code change or a schedule adds to a job's row of the plan, apart: most rows have none
// of it (at 50,000 jobs, in place, it took the rows' array to jemalloc's next size class).
struct JobPlanNotes {
  // The spec's code moved since the ledger's run (core/code_change.h): "code changed:
  // src/trainer (3 files: ...)". Empty otherwise.
  std::string code_change;
  // A scheduled job (with the pass's time known): the instant of its next slot, ms since the
  // epoch.
  std::optional<int64_t> next_slot_ms;
  // A scheduled job: slots this plan concludes got no run (missed their starting_deadline,
  // or passed while concurrency forbid held them back); the status record keeps them.
  std::vector<SkippedSlot> skipped_slots;

  friend bool operator==(const JobPlanNotes&, const JobPlanNotes&) = default;
};

struct JobPlan {
  std::string name;
  std::string spec_path;
  Phase phase = Phase::kPending;
  std::string message;  // why (for Blocked, Conflict, Invalid, Lost, retries, ...)
  // The attempt this job is about after the actions: the one to submit, else the latest one.
  std::string submission_id;
  std::optional<int> attempt;
  std::optional<ObservedRun> observed;  // Ray's view of the latest attempt, when Ray has it
  bool spec_changed = false;            // the ledger knew an older spec hash for this name
  // Waiting on a job whose spec is invalid (or on one that is itself frozen so): its own
  // identity cannot be computed, so nothing is submitted or stopped for it and its record
  // keeps the hash it had (like an invalid spec's).
  bool frozen = false;
  std::string previous_spec_hash;
  // A new job whose spec hash is that of a removed job's run (an unnamed spec file moved, so
  // its derived name changed): the old name and spec path. Empty otherwise.
  std::string renamed_from;
  std::string renamed_from_path;
  Boxed<JobPlanNotes> notes;

  const std::string& code_change() const { return notes.get().code_change; }
  const std::optional<int64_t>& next_slot_ms() const { return notes.get().next_slot_ms; }
  const std::vector<SkippedSlot>& skipped_slots() const { return notes.get().skipped_slots; }
};

struct Plan {
  std::vector<Action> actions;  // every stop, then every submit
  std::vector<JobPlan> jobs;    // by name
  bool blocked = false;         // a guard held stops back
  std::string blocked_reason;
  std::vector<RayJob> unmanaged;  // SUBMISSION jobs not managed by this instance
  // Jobs of this instance from another repository (docs/operations.md): never stopped, adopted or
  // recorded; plan, sync and the daemon name their repositories (core::GroupForeignJobs).
  std::vector<RayJob> foreign;
  std::string instance;  // the instance planned for, for the messages about foreign jobs
  // Runs recorded under a --previous-repo URL that this plan takes as ours: URL -> count.
  std::map<std::string, int, std::less<>> adopted_previous;
  // The earliest wall-clock time (ms since the epoch, on the daemon's clock: a deadline due
  // on the head's clock is moved by the skew of PlanPolicy) at which the same inputs would be
  // planned differently: an active run's `deadline` falling due, a scheduled job's next slot,
  // or the starting_deadline of a slot still waiting to start. nullopt: only a change of the
  // inputs changes the plan. The daemon's memo of a pass at rest holds until then
  // (engine/pass_memo.h).
  std::optional<int64_t> recheck_at_ms;

  bool HasChanges() const { return !actions.empty() || blocked; }
  int CountActions(ActionKind kind) const;
  const JobPlan* FindJob(std::string_view name) const;
};

// REQUIRES: desired.ClusterValid() — with an invalid cluster the pass must not act at all;
// the caller reports that instead of planning.
Plan PlanActions(const DesiredState& desired, const std::vector<RayJob>& observed,
                 const Ledger& ledger, const PlanPolicy& policy);

// Phase for an attempt in a given Ray status (PENDING -> Pending, ...).
Phase PhaseForRayStatus(RayJobStatus status);

}  // namespace rg::core
