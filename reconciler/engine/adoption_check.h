#pragma once
// Step 4 of a pass, continued (docs/reconcile.md, "Adoption"): the jobs in Ray that carry our
// labels and claim a run of a current spec, but that the ledger does not know (planted under a
// predicted id, or submitted by a run of ours that died before its status commit), are checked
// once against what ray-gitops renders for the attempt they claim. A job the ledger knows is
// not checked again: it was submitted, adopted or checked by an earlier pass. So a pass at rest
// renders nothing, whatever the number of jobs.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "reconciler/core/ownership.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/status_model.h"
#include "reconciler/engine/code_upload.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/ports/job_server.h"

namespace rg::engine {

struct UnknownRunCheck {
  // Jobs that are not the run they claim to be: submission id -> what differs (never a
  // value), for core::Ownership::disowned.
  std::map<std::string, std::string, std::less<>> disowned;
  // Jobs that are: the pass records them as ours (core::StatusInputs::proven_runs).
  std::set<std::string, std::less<>> proven;
  int checked = 0;  // jobs read back (GET) and rendered
};

// Checks every job of `observed` that is ours by its labels (`owner`), names a valid desired
// spec of `snapshot` whose current hash it carries, and is not an attempt of that name's ledger
// record. Each is read back (GET /api/jobs/<id>: its entrypoint and runtime_env) and compared
// with the render of the attempt its labels claim (core::RenderMismatch), a job with `after`
// with the upstream runs `plan` found SUCCEEDED; a job of a spec with `code` is ours only when
// its package is (`packages`). A job that cannot be rendered or read back is disowned too (it
// is checked again by the next pass); one Ray no longer has is neither. Jobs of frozen or
// invalid rows are not checked: nothing is done to them anyway. A job unknown to the ledger
// that claims an older version of a spec, or a removed spec, cannot be rendered: it is neither
// proven nor disowned (the planner stops it while active; it is never recorded).
UnknownRunCheck CheckUnknownRuns(ports::JobServer& server, const ports::DesiredSnapshot& snapshot,
                                 const std::vector<core::RayJob>& observed,
                                 const core::Ledger& ledger, const core::Plan& plan,
                                 const core::Ownership& owner, const PackageOwners& packages);

}  // namespace rg::engine
