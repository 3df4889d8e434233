#pragma once
// One reconcile pass (docs/reconcile.md): load the desired state from Git, observe Ray, read the
// ledger, plan, apply (unless a dry run), record status. Level-triggered and idempotent: a
// repeated pass over an unchanged world does nothing and commits nothing.
//
// Fail closed (docs/reconcile.md): when the desired state cannot be loaded, cluster.yaml is
// invalid, Ray cannot be listed or the ledger cannot be read, the pass touches neither the
// cluster nor the status branch and says why. A job whose spec or status file cannot be read
// is frozen (no submit, no stop) and named in `warnings`; the others go on.
//
// Stale views (docs/reconcile.md): when a run of ours was submitted from a commit the pass's
// commit does not include (a descendant, or one the local copy lacks), another daemon acted
// on a newer view: the pass loads again (a fresh fetch) and starts over, at most
// kMaxStaleReloads times. A commit that is still not included after a fresh fetch was removed
// from the branch (a force push): the branch is the truth and the pass goes on. When every
// round finds a newer commit, the pass is Stale: it plans, applies and records nothing
// (`stale`, a kTransient error, exit 1), so the daemon retries after its short backoff.
// Before a pass sends a stop it asks the remote for the branch's tip once more
// (engine/tip_check.h); a tip that moved to another desired state starts the pass over too,
// as one of the same kMaxStaleReloads.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/diagnostic.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/result.h"
#include "reconciler/core/siphash.h"
#include "reconciler/engine/apply.h"
#include "reconciler/engine/tip_check.h"
#include "reconciler/engine/warning.h"
#include "reconciler/ports/artifact_sink.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/ports/job_server.h"
#include "reconciler/ports/secret_source.h"
#include "reconciler/ports/status_store.h"

namespace rg::engine {

struct ReconcileDeps {
  ports::DesiredStateSource* source = nullptr;  // required
  ports::JobServer* server = nullptr;           // required: the list, the stops
  JobServerFactory server_factory;              // optional: one client per submit worker
  ports::StatusStore* store = nullptr;          // optional: no ledger, nothing recorded
  ports::ArtifactSink* artifacts = nullptr;     // optional
  // Optional: job secrets' values (`sync` and the daemon; never a dry run). Null: none can be
  // read, and a job whose submission needs one is frozen (engine/job_secrets.h).
  ports::SecretSource* secrets = nullptr;
  // Optional: called once a full pass has read the commit, the ledger and Ray's list, before
  // it plans. A pass reads nothing more from Git until its status commit, so the daemon,
  // `sync` and `plan` reopen their clone here: the packs' mapped windows and delta-base caches
  // (about 30 MB after reading 50,000 specs and status files) are gone before the pass's
  // peak, which is where it builds its records (docs/performance.md).
  std::function<void()> after_reads;
  // Optional: called each time a pass has read the desired state, before it reads the ledger
  // (and, with overlap_reads, Ray's list beside it). The daemon, `sync` and `plan` reopen their
  // clone here too: libgit2 keeps up to 16 MiB of delta bases for each pack it read the specs from,
  // and the ledger's status files and Ray's list are read on top of them (docs/performance.md).
  std::function<void()> after_load;
  // Optional: the code packages known to be ours across passes (the daemon's;
  // engine/code_upload.h). Null: the pass knows those its ledger records and those it uploads
  // itself.
  KnownPackages* known_packages = nullptr;
};

struct ReconcileOptions {
  std::string ref = "HEAD";
  core::PlanPolicy policy;
  bool dry_run = false;       // plan only: nothing sent to Ray, nothing recorded
  bool record_status = true;  // --no-status clears it
  // With dry_run, false skips step 6 (every planned job's record, PassResult::records and
  // transitions): `plan` shows the plan only, and at 50,000 specs the records and the runs
  // kept for them were 95 MB of its peak. A pass that acts always records.
  bool build_records = true;
  int parallelism = 4;  // submits in flight at once
  // The Jobs API address in use (for dashboard links, artifacts and the Ray-Cluster
  // trailer; credentials are stripped before it is recorded).
  std::string ray_address;
  // The Ray dashboard as people's browsers reach it, for the records' dashboard_url
  // (credentials are stripped); empty: ray_address.
  std::string dashboard_url;
  // Consulted before each action starts (the daemon's graceful shutdown): once it returns
  // true no further action starts, and what was already done is still recorded. Empty: never.
  // Called from the submit workers too: it must be thread-safe.
  std::function<bool()> stop_requested;
  // Every secret the process knows (the Ray token, --ray-header values, the webhook secret,
  // the Git token). The pass adds the secret-named env vars of the desired state and redacts
  // all it records and returns with the union (docs/security.md).
  core::Redactor secrets;
  // Wall-clock time of the pass, ms since the epoch: when a stop was sent (the Stopping
  // phase) and when it is due again. 0: the caller did not say; nothing is resent then, and
  // no deadline or clean-up falls due. Ray's times are compared with the head's time, which
  // the pass estimates from this and the Date header of Ray's answers (engine/head_clock.h).
  int64_t now_ms = 0;
  // --gc-finished-after: runs of ours that ended at least this long ago, whose end an
  // earlier pass committed, are deleted from Ray (engine/finished_runs.h). Unset: none.
  std::optional<int64_t> gc_finished_after_ms;
  // When set, the pass digests Ray's job list with this key (PassResult::ray_digest), so that
  // the daemon can tell the next pass's inputs from this one's (engine/pass_memo.h).
  std::optional<core::SipHasher::Key> digest_key;
  // Reads Ray's job list on a thread of its own while the ledger is read (neither depends on
  // the other): a one-shot `plan` or `sync` waits for the slower of the two, not for both.
  // The daemon leaves it off, so that rg_pass_own_seconds (the pass minus its Ray and Git
  // calls) never subtracts a Ray call that our own work ran under.
  bool overlap_reads = false;
};

// Fresh loads after the first when the pass finds runs from newer commits, or the tip check
// before stops finds the branch moved to another desired state.
inline constexpr int kMaxStaleReloads = 2;

// Exit statuses of `sync` (docs/reconcile.md).
inline constexpr int kExitApplied = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitBlocked = 3;

struct PassResult {
  // The pass stopped early: its inputs were those of the daemon's last pass, which found the
  // world at rest (engine/pass_memo.h). Nothing was planned, applied or recorded, and the
  // last pass's jobs and warnings still hold; only spec_commit is set.
  bool unchanged = false;
  // A narrow pass (engine/narrow_pass.h): it read, planned and recorded the jobs of
  // `narrow_names` only, and every other job is as the daemon's last pass left it. Its plan
  // and records hold those names (a name without a record now has none); its warnings are
  // the whole set's.
  bool narrow = false;
  std::vector<std::string> narrow_names;  // sorted
  bool planned = false;                   // the pass got as far as a plan
  // The view stayed older than the cluster through every reload: nothing was planned,
  // applied or recorded (`errors` says which run and commit).
  bool stale = false;
  int loads = 0;  // desired-state loads (fetches) this pass made: 1, or more after a stale view
  // Each time the tip check before stops started the pass over, in order (engine/tip_check.h).
  std::vector<TipMoved> tip_moves;
  std::string spec_commit;
  // The keyed digest of Ray's job list as first read (ReconcileOptions::digest_key); nullopt
  // when not asked for or the list was not read.
  std::optional<uint64_t> ray_digest;
  // The Ray head's clock less the daemon's as the pass read it with Ray's job list
  // (engine/head_clock.h); nullopt when unknown. Deadlines and clean-up counted on it.
  std::optional<int64_t> head_clock_offset_ms;
  // What the pass planned from: after a stale view's reload, not what the first Load gave
  // (callers that render the plan use this one). Null when the pass stopped before planning.
  std::shared_ptr<const ports::DesiredSnapshot> snapshot;
  core::Plan plan;
  std::vector<ActionOutcome> outcomes;  // in plan order; empty on a dry run
  CodeUploadStats code;                 // the code packages the pass looked up, built and uploaded
  int actions_not_started = 0;          // plan actions left undone after a stop request
  // Wall time of the plan's stops and submits (their Ray calls, code uploads and artifacts
  // included), in microseconds; 0 when there were none.
  int64_t apply_us = 0;
  std::vector<std::string> transitions;  // what the status commit says (or would say)
  std::string status_commit;             // empty when nothing was committed
  // Runs whose driver log this pass kept in their artifacts, and runs it deleted from Ray
  // (--gc-finished-after), by submission id (engine/finished_runs.h).
  std::vector<std::string> driver_logs_kept;
  std::vector<std::string> deleted;
  // Every planned job's record after this pass (what the status branch now holds, or would
  // hold after a dry run), by name; empty when the pass stopped before planning.
  std::vector<core::StatusRecord> records;
  // The ledger the pass planned against, as read; null when the pass stopped before planning,
  // empty without a status store. Whole after `plan` and a dry run. A pass that acts lets go
  // of each job's record as it builds the new one (`records` supersede them), so this keeps
  // only the records of jobs its plan did not name (core::BuildStatusUpdateFromLedger).
  std::shared_ptr<const core::Ledger> ledger;
  // What could not be reached when the pass stopped early: "Git" (the desired state or the
  // ledger) or "Ray" (the job list); empty otherwise.
  std::string unreachable;
  // When Ray could not be listed: the ledger's records of this instance and cluster, by name
  // (redacted), so the daemon can show the last known jobs; empty otherwise.
  std::vector<core::StatusRecord> ledger_records;
  bool blocked = false;
  // Cluster and spec validation problems (the pass still acts on the valid specs; an invalid
  // cluster stops it before planning).
  core::Diagnostics diagnostics;
  std::vector<core::Error> errors;  // loading, listing, actions, recording
  // What a person should look at though the pass did its work, redacted.
  std::vector<Warning> warnings;
  std::map<core::ErrorKind, int> errors_by_kind;
  int exit_status = kExitApplied;
  // The secrets this pass redacted (the process's and the desired state's), for callers
  // that print or log more of their own.
  core::Redactor redactor;
};

PassResult RunReconcilePass(const ReconcileDeps& deps, const ReconcileOptions& options);

}  // namespace rg::engine
