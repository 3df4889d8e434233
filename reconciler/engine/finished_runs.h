#pragma once
// Internal to rg_engine: what a pass does for runs of ours that ended (docs/artifacts.md,
// "Driver logs"; docs/reconcile.md, "Finished jobs in Ray"). Ray keeps every job until it is
// deleted, and its driver log only as long as the job: a run's log is kept beside its
// artifacts in the pass that first sees it ended, and with --gc-finished-after the job is
// deleted from Ray once its end has been committed to the status branch by an earlier pass.
// The ledger keeps it, so it is never run again.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/ownership.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/render.h"
#include "reconciler/core/status_model.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/ports/artifact_sink.h"
#include "reconciler/ports/job_server.h"

namespace rg::engine {

// Deletes at most this many finished runs per pass; the next pass goes on with the rest (a
// pass that deleted anything changes Ray's list, so the next one is a full one).
inline constexpr size_t kMaxDeletesPerPass = 500;

// The submission ids of the runs of ours in `ray_jobs` that Ray reports ended while the ledger
// (as the pass read it) has them active, or that this pass submitted (`outcomes`: a driver
// that fails at once has ended by the listing after the submits), sorted. A run the ledger
// never had otherwise (one that ended before any pass recorded it, or a ledger started over a
// cluster full of old runs) is left out: a first pass over 50,000 old runs must not fetch
// 50,000 logs.
std::vector<std::string> RunsEndedSinceLedger(const core::RayJobsById& ray_jobs,
                                              const core::Ledger& ledger,
                                              const core::Ownership& owner,
                                              const std::vector<ActionOutcome>& outcomes);

// Fetches each run's driver log, redacts it with the pass's redactor (every secret the
// process knows, the webhook's included, and the desired state's) and hands it to `sink`
// (logs/driver.log). A log that cannot be read or written is a warning (kWarnDriverLog)
// naming the run; the pass goes on.
void KeepDriverLogs(ports::JobServer& server, ports::ArtifactSink& sink,
                    const std::vector<std::string>& ids, PassResult& result);

struct FinishedRuns {
  std::vector<std::string> due;  // to delete now, sorted, at most kMaxDeletesPerPass
  // The earliest time a run not due yet will be (for the memo of a pass at rest).
  std::optional<int64_t> next_due_ms;
};

// The runs of ours in `ray_jobs` that ended at least `after_ms` before `now_ms` and whose end
// the ledger (as the pass read it: committed by an earlier pass) holds.
FinishedRuns FinishedRunsToDelete(const core::RayJobsById& ray_jobs, const core::Ledger& ledger,
                                  const core::Ownership& owner, int64_t after_ms, int64_t now_ms);

// Deletes each run from Ray (PassResult::deleted). A run Ray no longer has counts as deleted;
// a failure is a warning (kWarnGcFinished) naming the run.
void DeleteFinishedRuns(ports::JobServer& server, const std::vector<std::string>& ids,
                        PassResult& result);

}  // namespace rg::engine
