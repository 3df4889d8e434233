#pragma once
// What ray-gitops records about each job on the status branch (docs/status-branch.md). The same
// records, read back, are the ledger: the durable memory of which attempts existed and how they
// ended, which survives a Ray head restart.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/boxed.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/spec_model.h"

namespace rg::core {

enum class Phase {
  kPending,  // submitted (or about to be), driver not running yet
  kRunning,
  kSucceeded,
  kFailed,            // failed and out of retries
  kStopped,           // stopped by a person (or by us for a reason that still holds)
  kSuspended,         // `suspend: true`
  kLost,              // Ray forgot an active attempt (head restart)
  kInvalid,           // the spec failed validation: frozen
  kBlocked,           // a guard held back the stop this job needs
  kConflict,          // the id is taken by a run of different content (or not ours)
  kRemoved,           // the spec is gone; the record stays while a run of it may still be active
  kStopping,          // a stop was sent and Ray still reports the run active (docs/reconcile.md)
  kDeadlineExceeded,  // active longer than the spec's `deadline`: stopped, never retried
  kWaiting,           // `after`: a job it names has no SUCCEEDED current run (yet)
};

// Every phase, in the order above: the order of the page's counts and of rg_jobs's series.
inline constexpr std::array<Phase, 14> kAllPhases = {
    Phase::kPending,          Phase::kRunning,   Phase::kSucceeded, Phase::kFailed,
    Phase::kStopped,          Phase::kSuspended, Phase::kLost,      Phase::kInvalid,
    Phase::kBlocked,          Phase::kConflict,  Phase::kRemoved,   Phase::kStopping,
    Phase::kDeadlineExceeded, Phase::kWaiting,
};

std::string_view PhaseName(Phase p);
// The phase as people read it on the status page and in STATUS.md: for Waiting, the jobs it
// waits on and their phases from its message ("Waiting (on sft-qwen: Running)"; the detail a
// message gives in parentheses is left to the message); else PhaseName.
std::string PhaseLabel(Phase p, std::string_view message);
std::optional<Phase> ParsePhase(std::string_view s);

// Why ray-gitops stopped an attempt; kNone when it did not (or a person did). Written in
// status files, the plan's JSON and the logs as the names below. kUnknown is a name this
// version does not know (a newer version wrote it): a spec cannot undo such a stop, and the
// name is kept as written (AttemptRecord::unknown_stop_reason).
// kDeadline is the one reason a spec does not undo: the run is not retried or restored.
enum class StopReason { kNone, kSuspend, kRemoval, kReplacement, kDeadline, kUnknown };

// "suspend", "removed", "replaced", "deadline"; "" for kNone and kUnknown.
std::string_view StopReasonName(StopReason r);
// The reverse of StopReasonName for the four reasons; nullopt for anything else ("" included).
std::optional<StopReason> ParseStopReason(std::string_view s);

// A stop that Ray acknowledged but has not carried out (a job PENDING for resources the
// cluster lacks stays PENDING) is sent once more after this long.
inline constexpr int64_t kStopResendAfterMs = int64_t{10} * 60 * 1000;

// A slot of a scheduled job that got no run (docs/status-branch.md): its instant and why.
struct SkippedSlot {
  int64_t slot_ms = 0;  // the slot's instant, ms since the epoch
  std::string reason;   // "missed: ..." or "concurrency forbid: ... still active"

  friend bool operator==(const SkippedSlot&, const SkippedSlot&) = default;
};

// A scheduled job's status file keeps the attempts of its latest kKeptSlots slots (active
// attempts always) and its latest kKeptSkippedSlots skipped slots: a job that runs every
// minute does not grow its file forever.
inline constexpr size_t kKeptSlots = 20;
inline constexpr size_t kKeptSkippedSlots = 10;

// Whose failure ended an attempt (DESIGN §3.1; docs/reconcile.md, "Failure classes"). kInfra:
// the cluster's (Ray's JobSupervisor died, or could not start in time or for an unknown reason;
// or Ray forgot the active attempt: Lost), which spends the spec's `infra_retries`. kOwn: the
// run's own (its entrypoint's exit code, its runtime_env, a driver that cannot be scheduled),
// which spends `retries`. kNone: the attempt did not fail, or ended after ray-gitops sent it a
// stop (never retried, whatever Ray's error_type).
enum class FailureClass : uint8_t { kNone, kInfra, kOwn };

// "infra", "own"; "" for kNone.
std::string_view FailureClassName(FailureClass c);
// The reverse of FailureClassName for "infra" and "own"; nullopt for anything else.
std::optional<FailureClass> ParseFailureClass(std::string_view s);
// The class of an attempt Ray reports FAILED with this error_type (empty: Ray gave none, as
// before Ray 2.9, which is the run's own), when ray-gitops never sent it a stop.
FailureClass ClassifyFailure(std::string_view error_type);

// The wait before the infrastructure retry that follows `earlier` such retries of one run,
// counted from the failed attempt's end: min(30 s x 2^earlier, 10 min).
int64_t InfraRetryBackoffMs(int earlier);

// How an attempt that failed, was lost or was stopped ended, beyond Ray's status: most attempts
// have none of it, so it is kept apart (AttemptRecord::ending).
struct AttemptEnding {
  std::string error_type;   // Ray's error_type of a FAILED attempt; empty when Ray gave none
  std::string stop_commit;  // the commit whose pass sent it a stop; empty when none was sent
  // When a pass found Ray no longer knew it while it was active (Lost), on the daemon's clock
  // (ms since the epoch): the infrastructure retry's backoff counts from here.
  std::optional<int64_t> lost_ms;

  friend bool operator==(const AttemptEnding&, const AttemptEnding&) = default;
};

struct AttemptRecord {
  int attempt = 0;
  std::string submission_id;
  std::string spec_hash;
  RayJobStatus status = RayJobStatus::kUnknown;  // last status seen in Ray
  Phase phase = Phase::kPending;
  std::optional<int64_t> start_time_ms;
  std::optional<int64_t> end_time_ms;
  std::string message;
  StopReason stop_reason = StopReason::kNone;
  std::string unknown_stop_reason;  // the name as written, when stop_reason is kUnknown
  // When ray-gitops last sent this attempt a stop (ms since the epoch); unset when it never
  // did. A stop Ray has not carried out yet is not sent again before kStopResendAfterMs.
  std::optional<int64_t> stop_sent_ms;
  // The commit it was submitted from (its gitops.commit); empty when unknown (older ledgers).
  std::string commit;
  FailureClass failure_class = FailureClass::kNone;
  Boxed<AttemptEnding> ending;

  friend bool operator==(const AttemptRecord&, const AttemptRecord&) = default;
};

// The stop reason as status files and the page write it: its name, the unknown name kept as
// written, or "" when ray-gitops did not stop the attempt.
std::string StopReasonText(const AttemptRecord& a);

// The code a record's latest run got, for a spec with `code`: the folder, its Git tree id and the
// commit the tree was taken from (the run's gitops.code-tree and gitops.code-commit labels).
struct RunCode {
  std::string folder;
  std::string tree;
  std::string commit;

  friend bool operator==(const RunCode&, const RunCode&) = default;
};

struct StatusRecord {
  std::string name;
  // Whose ledger the record is in (docs/status-branch.md): the --instance that wrote it and the Ray
  // cluster its runs ran on (RayClusterName: cluster.yaml's `name`, else the address without
  // credentials). Both are empty in a record written before ledgers had owners; such a record
  // belongs to whoever reads it, and carries both once that reader writes it again.
  std::string instance;
  std::string ray_cluster;
  std::string spec_path;
  std::string spec_hash;    // empty when the spec could not be parsed
  std::string spec_commit;  // empty when unknown
  // For a spec with `code`: the latest run's code; empty otherwise. Boxed: most records have
  // none, and the three strings in place made a record 608 bytes, a ledger's map node one of
  // jemalloc's 768-byte class instead of 640 (7 MB at 50,000 jobs).
  Boxed<RunCode> code;
  Phase phase = Phase::kPending;
  OnRemove on_remove = OnRemove::kStop;
  // The latest attempt, as Ray last reported it.
  std::string submission_id;  // empty when nothing was submitted
  std::optional<int> attempt;
  RayJobStatus status = RayJobStatus::kUnknown;
  std::string message;
  std::optional<std::string> error_type;
  std::optional<std::string> job_id;
  std::optional<int64_t> start_time_ms;
  std::optional<int64_t> end_time_ms;
  std::optional<int64_t> driver_exit_code;
  std::string dashboard_url;
  // The latest run's folder, <shared_root>/jobs/<run id> (DESIGN §5): what its attempts'
  // checkpoints are under and ${runs.<name>.dir} resolves to. Empty when the cluster has no
  // shared_root, or the run was submitted before run folders existed (its attempts each used
  // their own folder, <shared_root>/jobs/<submission_id>).
  std::string run_dir;
  std::vector<std::string> errors;  // validation errors, "path:line:col: error: message"
  // Every attempt of every spec version this name has run, oldest first; the latest included.
  std::vector<AttemptRecord> attempts;
  // A scheduled job's slots that got no run, oldest first (the latest kKeptSkippedSlots).
  std::vector<SkippedSlot> skipped_slots;

  friend bool operator==(const StatusRecord&, const StatusRecord&) = default;

  // REQUIRES: nothing. The attempt record with this submission id, or nullptr.
  const AttemptRecord* FindAttempt(std::string_view submission_id) const;
  AttemptRecord* FindAttempt(std::string_view submission_id);
};

// Changes to the ledger: name -> new record, or nullopt to delete that job's status file.
using RecordChanges = std::map<std::string, std::optional<StatusRecord>, std::less<>>;

// name -> record
using Ledger = std::map<std::string, StatusRecord, std::less<>>;

// How a record relates to the ledger of `instance` on `ray_cluster`. An empty field, on either
// side, matches anything: records written before ledgers had owners, and readers (history,
// tools) that read every ledger. The instance is compared first: another instance's record is
// never used, whatever its cluster.
enum class LedgerMatch {
  kOurs,
  kOtherInstance,
  kOtherCluster,  // our instance, another cluster: the branch is shared by mistake
};
LedgerMatch MatchLedger(const StatusRecord& record, std::string_view instance,
                        std::string_view ray_cluster);

// True when the difference between two records is one a person would care about (phase, Ray
// status, attempt, submission id, errors, message, exit code, attempts, and the owner: a record
// written before ledgers had owners is written once more to carry its owner), as opposed to
// bookkeeping only. Decides whether a pass commits.
bool MeaningfulChange(const StatusRecord& before, const StatusRecord& after);

// Adds the slots of `slots` that `record` does not have yet (by instant), keeps the list
// oldest first and only its latest kKeptSkippedSlots.
void AddSkippedSlots(StatusRecord& record, const std::vector<SkippedSlot>& slots);

// What two writers of one ledger (two replicas of an instance) recorded for one job, joined
// (docs/status-branch.md, "Push conflicts"): attempts are joined by submission id, and of two
// records of one attempt the later in (PENDING < RUNNING < ended) wins, so a finished status never
// turns back into an active one; a stop reason or stop time either knew is kept. The rest is `ours`
// (the writer's current view), unless both name the same latest attempt and `theirs` saw it later.
StatusRecord MergeRecords(const StatusRecord& theirs, const StatusRecord& ours);

// "ppo-qwen: Pending -> Running (ppo-qwen-3f2a1c9b0e)"; for a new record "ppo-qwen: new ->
// Pending (...)"; for a deleted record "ppo-qwen: Removed -> deleted"; for a record without an
// owner that gets one and keeps its phase "ppo-qwen: Running, now in the ledger of ray-gitops
// on http://127.0.0.1:8265".
std::string DescribeTransition(const StatusRecord* before, const StatusRecord* after);

}  // namespace rg::core
