#pragma once
// What `plan` adds to a plan from the repository's history: the field and rendered diff of
// every replaced job (its spec at the commit its run was submitted from, as the ledger
// records it, against the spec now), and which active runs a cluster.yaml change reaches on
// their next submission.

#include <map>
#include <string>
#include <vector>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/state_diff.h"
#include "reconciler/core/status_model.h"
#include "reconciler/ports/status_store.h"

namespace rg::cli {

struct PlanChanges {
  std::map<std::string, core::JobDiff, std::less<>> jobs;
  std::vector<core::ClusterDiff> cluster;
};

// The changes of `plan` (made from `desired` at `commit`), old specs read from `source`'s local
// copy at the commits `ledger` records.
PlanChanges ComputePlanChanges(adapters::GitDesiredStateSource& source, const core::Plan& plan,
                               const core::DesiredState& desired, const std::string& commit,
                               const core::Ledger& ledger, const std::string& instance);

}  // namespace rg::cli
