#pragma once
// Daemon snapshots made by the real reconcile loop on a fake clock, from prepared pass results:
// one invalid spec (a ready daemon with a warning), and Ray unreachable after a good pass (the
// last known jobs, and since when). Shared by the status page tests and the browser test.

#include <memory>
#include <string>

#include "reconciler/engine/reconcile_loop.h"
#include "reconciler/engine/warning.h"
#include "tests/support/fake_clock.h"
#include "tests/unit/server/sample_snapshot.h"

namespace rg::server::testing {

// The loop, its clock and what its passes return; Snapshot() is what the HTTP server reads.
struct LoopScenario {
  rg::testing::FakeClock clock;
  std::unique_ptr<engine::ReconcileLoop> loop;
  engine::PassResult next;  // what the next pass returns

  LoopScenario() {
    engine::LoopOptions options;
    options.identity = SampleSnapshot();
    options.identity.jobs.clear();
    options.identity.warnings.clear();
    options.identity.jobs_as_of_ms.reset();
    options.jitter = 0;
    options.random_seed = 1;
    loop = std::make_unique<engine::ReconcileLoop>(
        options, [this](const engine::ReconcileOptions&) { return next; }, clock, nullptr);
  }

  // Runs the next pass at the time it is due.
  void Pass(engine::PassResult result) {
    next = std::move(result);
    const int64_t wait = loop->NextDueUs() - clock.MonotonicUs();
    if (wait > 0) clock.AdvanceUs(wait);
    loop->Step();
  }

  engine::DaemonSnapshot Snapshot() const { return loop->Snapshot(); }
};

// A pass that read every job of SampleSnapshot, one of them with an invalid spec.
inline engine::PassResult PlannedPass() {
  engine::PassResult r;
  r.planned = true;
  r.spec_commit = SampleSnapshot().spec_commit;
  r.records = SampleSnapshot().jobs;
  return r;
}

inline engine::PassResult InvalidSpecPass() {
  engine::PassResult r = PlannedPass();
  r.diagnostics.push_back({"jobs/broken-spec.yaml", 4, 3, "unknown key \"entrypint\""});
  r.warnings.push_back({std::string(engine::kWarnInvalidSpec),
                        "jobs/broken-spec.yaml: job broken-spec is frozen (nothing submitted or "
                        "stopped) until its spec is fixed: unknown key \"entrypint\""});
  r.exit_status = engine::kExitError;
  return r;
}

inline engine::PassResult RayUnreachablePass() {
  engine::PassResult r;
  r.spec_commit = SampleSnapshot().spec_commit;
  const core::Error e = core::Error::Transient("cannot list the jobs in Ray: connection refused");
  ++r.errors_by_kind[e.kind()];
  r.errors.push_back(e);
  r.unreachable = "Ray";
  r.exit_status = engine::kExitError;
  return r;
}

// One pass with an invalid spec: ready, a warning, the job's row carries its error.
inline void RunInvalidSpec(LoopScenario& s) { s.Pass(InvalidSpecPass()); }

// A good pass, then two in a row that cannot list Ray: not ready, the jobs as last known.
inline void RunRayUnreachable(LoopScenario& s) {
  s.Pass(PlannedPass());
  s.Pass(RayUnreachablePass());
  s.Pass(RayUnreachablePass());
}

}  // namespace rg::server::testing
