#pragma once
// Step 5 of a pass (docs/reconcile.md, "Steps"): carry out a plan's actions against Ray. Every stop
// first, one after another; then every submit through SubmitAttempt (adoption on duplicate
// ids, artifacts), with bounded parallelism. A failed action is reported in its outcome and
// the others go on.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/planner.h"
#include "reconciler/core/result.h"
#include "reconciler/engine/code_upload.h"
#include "reconciler/engine/job_secrets.h"
#include "reconciler/ports/artifact_sink.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/ports/job_server.h"

namespace rg::engine {

// Makes a client of its own for one worker thread (JobServer implementations are
// thread-compatible, not thread-safe).
using JobServerFactory = std::function<std::unique_ptr<ports::JobServer>()>;

struct ApplyOptions {
  // Whose runs are ours: a duplicate id is adopted only when its run is.
  core::Ownership owner;
  int parallelism = 4;      // submits in flight at once; values below 1 mean 1
  std::string ray_address;  // recorded in the artifacts
  // Consulted before each action starts; once it returns true no further action starts.
  std::function<bool()> stop_requested;
  // Texts of the specs submitted, by path, for the artifacts (read before the submits start,
  // by DesiredStateSource::SpecText); a path absent here is looked up in the snapshot's texts.
  const std::map<std::string, std::string, std::less<>>* spec_texts = nullptr;
  // Ships the code of specs with `code` before their submit (engine/code_upload.h); null: a
  // submit of such a spec fails.
  CodeUploader* code = nullptr;
  // The secrets' values each submit delivers (engine/job_secrets.h); null: none.
  const SubmitSecrets* secrets = nullptr;
};

using ActionOutcome = core::ActionOutcome;

// REQUIRES: every kSubmit action's spec_path names a spec in snapshot.state.jobs and the
// snapshot's cluster is valid. `server` does the stops (and the submits when `factory` is
// empty or parallelism is 1); `artifacts` may be null and is called under a lock. Outcomes
// come back in the order of plan.actions; an action that never started because
// options.stop_requested returned true has none.
std::vector<ActionOutcome> ApplyPlan(const core::Plan& plan, const ports::DesiredSnapshot& snapshot,
                                     ports::JobServer& server, const JobServerFactory& factory,
                                     ports::ArtifactSink* artifacts, const ApplyOptions& options);

}  // namespace rg::engine
