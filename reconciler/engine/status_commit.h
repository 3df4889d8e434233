#pragma once
// The end of step 6 (DESIGN.md 4): the records that changed (core::DiffAgainstLedger) are
// written in one commit that says what changed.

#include <string>

#include "reconciler/core/status_update.h"
#include "reconciler/ports/status_store.h"

namespace rg::engine {

// "ray-gitops: 1 change" / "ray-gitops: 3 changes", the transitions as body lines, and the
// Spec-Commit and Ray-Cluster trailers.
ports::StatusCommit MakeStatusCommit(const core::StatusDiff& diff, const std::string& spec_commit,
                                     const std::string& ray_address);

}  // namespace rg::engine
