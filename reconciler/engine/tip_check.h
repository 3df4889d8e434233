#pragma once
// The tip check before stops (docs/reconcile.md, "Stale views"): a pass that is about to stop a
// run asks the remote for the tip of its branch once more (one ls-remote). When the tip moved
// and the new tip's desired state differs from the pass's (the cluster file, the specs, the
// code folders of the pass's specs), the pass starts over on the new tip: a replica that
// fetched an intermediate commit never stops a run that the branch's tip wants (commit 1 runs
// v1, commit 2 changes it, commit 3 reverts it). A pass without stops, a dry run and a source
// without a remote (a repository read in place) ask nothing.

#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/planner.h"
#include "reconciler/core/result.h"
#include "reconciler/ports/desired_state_source.h"

namespace rg::engine {

// The branch moved on, under a pass, to a commit whose desired state differs from the pass's.
struct TipMoved {
  std::string ref;                   // the snapshot's, e.g. "refs/heads/main"
  std::string from;                  // the pass's commit
  std::string to;                    // the tip after a fresh fetch
  std::vector<std::string> changed;  // ports::TipChanges::changed
};

// What the check found. Neither set: the pass goes on to apply its plan.
struct TipCheck {
  std::optional<TipMoved> moved;  // start over on the new tip
  // The remote could not be asked, or the new tip not compared: nothing is applied (fail
  // closed, as when the desired state cannot be loaded).
  std::optional<core::Error> error;

  bool proceed() const { return !moved && !error; }
};

// Asks only when `plan` holds a stop; `snapshot` is what the plan was made from.
TipCheck CheckTipBeforeStops(ports::DesiredStateSource& source,
                             const ports::DesiredSnapshot& snapshot, const core::Plan& plan);

// The first few paths that changed, ", "-separated, and how many more: "jobs/a.yaml,
// jobs/b.yaml and 12 more".
std::string ChangedPathsText(const TipMoved& moved);

// "refs/heads/main moved from <12 hex> to <12 hex> (jobs/a.yaml, cluster.yaml changed)": for
// the log line of a restart and for the Stale error.
std::string TipMovedSummary(const TipMoved& moved);

}  // namespace rg::engine
