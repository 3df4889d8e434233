#pragma once
// Passes that change nothing (docs/daemon.md, "Passes that change nothing"). Ray has no watch,
// so the daemon lists Ray's jobs every pass; everything else a pass does is only worth doing
// when an input moved. After a pass that found the world at rest (a fixpoint: it planned no
// action, recorded no transition and committed nothing, no run is PENDING or Stopping, and
// nothing failed), the next pass first compares its inputs with that pass's: the commit the
// watched ref names, the tip of the status branch, and a keyed digest of Ray's job list. When
// all three are the same, a full pass would read the same inputs and decide the same nothing
// (a plan is a pure function of them; only PENDING and Stopping runs depend on the time or on
// the cluster's resources, and a run's `deadline` falls due at a time the plan names), so the
// pass stops there: no tree is read, no YAML parsed, no record built or encoded, no tree
// written. The memo holds until the plan's recheck time (core::Plan::recheck_at_ms).

#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/ray_job.h"
#include "reconciler/core/siphash.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/ports/job_server.h"
#include "reconciler/ports/status_store.h"

namespace rg::engine {

// A key for DigestJobs drawn from the system's random source.
core::SipHasher::Key RandomDigestKey();

// What the daemon's last full pass read and left behind, when it was a fixpoint.
struct PassMemo {
  bool valid = false;
  std::string spec_commit;
  std::string ledger_tip;  // "" when the status branch does not exist (or no ledger is kept)
  uint64_t ray_digest = 0;
  // When the same inputs would be planned differently (a deadline falls due): the memo does
  // not hold from then on. nullopt: it holds until an input moves.
  std::optional<int64_t> valid_until_ms;
  // The head's clock less the daemon's as the pass read it (engine/head_clock.h): a deadline
  // due on the head's clock is in valid_until_ms on the daemon's, reckoned with it.
  std::optional<int64_t> head_clock_offset_ms;
};

// True when `memo` is valid and, at wall-clock time `now_ms`, not past its valid_until_ms.
bool MemoHolds(const PassMemo& memo, int64_t now_ms);

// True when `result` found the world at rest (see the file comment).
bool IsFixpoint(const PassResult& result);

// The memo after a full pass: valid only for a fixpoint whose ledger tip the store knows (or
// when no ledger is kept) and whose job list was digested (ReconcileOptions::digest_key).
PassMemo RememberPass(const PassResult& result, const ports::StatusStore* store);

// Reads the three inputs cheaply and compares them with `memo`: a PassResult marked
// `unchanged` when all three are the same, nullopt when anything moved or could not be read
// (the caller then runs a full pass, which reports any error as usual). A clock stepped since
// (the head's less the daemon's, read with Ray's list, moved by more than kClockSkewStepMs)
// moves an input too: the memo's time is the daemon's, reckoned with the old skew.
// `now_ms`: the wall-clock time of the pass (MemoHolds).
std::optional<PassResult> UnchangedPass(const PassMemo& memo, ports::DesiredStateSource& source,
                                        ports::StatusStore* store, ports::JobServer& server,
                                        const std::string& ref, const core::SipHasher::Key& key,
                                        int64_t now_ms);

}  // namespace rg::engine
