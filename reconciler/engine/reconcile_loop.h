#pragma once
// The daemon's reconcile loop (docs/daemon.md): decides when a pass runs, runs it, and reads its
// result to decide what happens next (controller-runtime style: the pass never sleeps, the
// loop owns the timer, the backoff and the coalescing of triggers).
//
// When a pass is due:
// - at start-up, at once;
// - after a pass that did not fail: `interval_ms` after it ended, or at once on a trigger;
// - after a failed pass (see PassVerdict): after a backoff of initial_backoff_ms * 2^(n-1)
//   for the n-th consecutive failure, capped at max_backoff_ms, times a jitter factor drawn
//   uniformly from [1 - jitter, 1 + jitter] (then capped again). Triggers do not shorten a
//   backoff: they are remembered and the pass runs when the backoff ends, so a stream of
//   webhooks cannot hammer a broken Ray head or Git remote.
// Any number of triggers that arrive while a pass runs (or while one is already pending)
// cause exactly one more pass.
//
// Thread-safety: Trigger, RequestStop, Snapshot and PublishLiveMetrics may be called from any
// thread at any time.
// Step and Run are called from one thread (the loop's own).

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/metrics.h"
#include "reconciler/engine/daemon_snapshot.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/ports/clock.h"

namespace rg::engine {

// How the loop reads a pass.
enum class PassVerdict {
  kOk,       // exit 0
  kBlocked,  // exit 3: a guard held stops back. Not a failure: the daemon works as designed.
  // Exit 1, but every error is about the input (invalid specs or cluster file, a submission
  // id held by another spec): a retry cannot help before the commit changes, so the timer
  // goes on at the normal interval and readiness is kept.
  kInvalid,
  // Exit 1 with an error from the environment (Git or Ray unreachable, 5xx, credentials,
  // the status push): back off.
  kFailed,
};
std::string_view PassVerdictName(PassVerdict verdict);  // "ok", "blocked", "invalid", "failed"
// The `result` label of rg_passes_total: the pass's exit status by name, "ok" (0), "error" (1:
// kInvalid and kFailed) or "blocked" (3), as `sync` would have exited (docs/daemon.md).
std::string_view PassMetricResult(PassVerdict verdict);
PassVerdict ClassifyPass(const PassResult& result);

struct LoopOptions {
  int64_t interval_ms = 15'000;
  int64_t initial_backoff_ms = 1'000;
  int64_t max_backoff_ms = 300'000;
  double jitter = 0.2;  // +-20% on every backoff delay; 0 turns jitter off
  // Ready while the last pass that did not fail ended at most this many intervals plus
  // pass_deadline_ms ago, and no pass has run longer than pass_deadline_ms (docs/daemon.md,
  // "Readiness").
  int readiness_intervals = 3;
  // How long a pass may run before the daemon reports itself not ready (docs/daemon.md,
  // "Deadlines": a pass that cannot finish shows as not ready). The pass is not interrupted: every
  // Git and Ray call in it has its own deadline.
  int64_t pass_deadline_ms = 300'000;
  uint64_t random_seed = 0;  // 0: seeded from std::random_device
  // Handed to every pass; the loop sets stop_requested so a stop ends a pass after its
  // current action.
  ReconcileOptions pass;
  // Copied into every snapshot: instance, repo_url, branch, status_branch, ray_address,
  // dashboard_url.
  DaemonSnapshot identity;
  // Runs on the loop's thread after each pass, once its result (and the observer) is done
  // with: the daemon hands freed heap back to the system there. Empty: nothing.
  std::function<void()> after_pass;
};

using PassFunction = std::function<PassResult(const ReconcileOptions&)>;

// The jobs as known after a narrow pass (PassResult::narrow): `jobs` (by name) with the
// records of result.narrow_names replaced by the pass's records.
void MergeNarrowRecords(const PassResult& result, std::vector<core::StatusRecord>& jobs);

// What the loop tells its observer after each pass (the CLI logs it).
struct PassReport {
  const PassResult* result = nullptr;
  PassVerdict verdict = PassVerdict::kOk;
  std::string trigger;  // "timer", or the source of the first trigger that caused the pass
  int64_t duration_ms = 0;
  int consecutive_failures = 0;
  int64_t next_pass_in_ms = 0;  // until the timer or the backoff fires (a trigger may be sooner)
};
using PassObserver = std::function<void(const PassReport&)>;

class ReconcileLoop {
 public:
  // `clock` (and `metrics`, when not null) must outlive the loop. `observer` may be empty; it
  // runs on the loop's thread without the loop's lock held.
  ReconcileLoop(LoopOptions options, PassFunction pass, ports::Clock& clock,
                core::MetricsRegistry* metrics, PassObserver observer = {});

  ReconcileLoop(const ReconcileLoop&) = delete;
  ReconcileLoop& operator=(const ReconcileLoop&) = delete;

  // Asks for a pass as soon as allowed. `source` ("api", "webhook:github", ...) is reported as
  // the cause of the pass; the caller counts its own triggers in rg_triggers_total (the HTTP
  // server does), the loop counts only source="timer". Returns false (and does nothing) once
  // a stop was requested.
  bool Trigger(std::string_view source);

  // Runs one pass if one is due now; returns whether it ran.
  bool Step();

  // Monotonic time (ports::Clock::MonotonicUs) at which a pass is next due: now when a
  // trigger is pending outside a backoff.
  int64_t NextDueUs() const;

  // Steps and waits for the next due time, a trigger or a stop, until a stop is requested.
  // A pass in flight when the stop comes sees stop_requested and ends after its current
  // action; Run then returns.
  void Run();

  // No new pass starts after this; wakes Run.
  void RequestStop();
  bool StopRequested() const;

  // Refreshes the gauges that change while a pass runs (rg_pass_in_flight_seconds, rg_ready),
  // for a caller that ticks (the daemon does, every 200 ms). Returns the unready reason when
  // the pass in flight has just outlasted its deadline (once per pass), else empty.
  std::string PublishLiveMetrics();

  // Replaces the Ray address shown in snapshots (the pass may learn it from cluster.yaml).
  void SetRayAddress(std::string address, std::string dashboard_url);

  DaemonSnapshot Snapshot() const;

  // The backoff before the pass after the n-th consecutive failure (n >= 1), without jitter.
  static int64_t BaseBackoffMs(const LoopOptions& options, int failures);

 private:
  bool DueLocked(int64_t now_us) const;
  int64_t NextDueLocked(int64_t now_us) const;
  int64_t JitteredBackoffMs(int failures);  // REQUIRES: mu_ held
  // The pass starts (REQUIRES: mu_ held): its trigger, taken off the queue, and the state the
  // snapshot shows while it runs.
  std::string BeginPassLocked(int64_t start_us);
  // The pass ended (REQUIRES: mu_ held): the snapshot's state, the backoff or the next timer,
  // and the report's failures and next-pass time.
  void EndPassLocked(PassReport& report, int64_t end_us, int64_t end_ms);
  // Sets s.ready and s.unready_reason. REQUIRES: mu_ held.
  void ReadinessLocked(int64_t now_us, DaemonSnapshot& s) const;
  // rg_warnings{kind} from the warnings the snapshot shows. REQUIRES: metrics_ not null.
  void RecordWarnings(const std::vector<Warning>& warnings);
  void RecordMetrics(const PassReport& report, double seconds, int64_t end_wall_ms);

  const LoopOptions options_;
  const PassFunction pass_;
  ports::Clock& clock_;
  core::MetricsRegistry* const metrics_;
  const PassObserver observer_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::mt19937_64 random_;
  bool stopping_ = false;
  bool trigger_pending_ = false;
  std::string trigger_source_;  // the first pending trigger's source
  int64_t next_due_us_ = 0;     // the timer or the end of the backoff
  bool in_backoff_ = false;     // the last pass failed: triggers wait for next_due_us_
  // The jobs of state_.jobs by phase, as of the last pass that planned (for rg_jobs); written
  // and read on the loop's thread.
  std::map<core::Phase, int> jobs_by_phase_;
  std::optional<int64_t> last_success_us_;
  std::optional<int64_t> pass_start_us_;  // the pass in flight's start
  bool deadline_reported_ = false;        // PublishLiveMetrics said so for the pass in flight
  DaemonSnapshot state_;  // everything but now_ms, next_pass_ms, ready, unready_reason
};

}  // namespace rg::engine
