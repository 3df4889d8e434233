#pragma once
// The end of step 6 (docs/status-branch.md, "Commits"): the records that changed
// (core::DiffAgainstLedger) are written in one commit that says what changed.

#include <string>

#include "reconciler/core/status_update.h"
#include "reconciler/ports/status_store.h"

namespace rg::engine {

// The subject names each changed job and its phase change, cut to 72 characters
// ("ray-gitops: ppo-qwen Running -> Succeeded, sft-qwen new -> Pending +2 more";
// core::StatusCommitSubject); the body has one line per transition (diff.transitions); the
// trailers are Spec-Commit (the commit the pass read) and Ray-Cluster (the ledger's cluster as
// its records name it, else the Ray address without credentials). Nothing of Ray's messages
// is in the subject or body: names, phases, attempts and submission ids only.
ports::StatusCommit MakeStatusCommit(const core::StatusDiff& diff, const std::string& spec_commit,
                                     const std::string& ray_address);

}  // namespace rg::engine
