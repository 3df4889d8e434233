#pragma once
// Internal to rg_engine: the steps of a reconcile pass (engine/reconcile_pass.h) that a full
// pass and a narrow pass (engine/narrow_pass.h) share. A full pass reads every input; a narrow
// one reads the inputs of a few job names and hands them to the same steps.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reconciler/core/ownership.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/status_model.h"
#include "reconciler/engine/job_secrets.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/engine/tip_check.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/ports/status_store.h"

namespace rg::engine {

using NameSet = std::set<std::string, std::less<>>;

// What steps 1 to 3 of a pass read.
struct PassInputs {
  ports::DesiredSnapshot snapshot;
  std::vector<core::RayJob> observed;
  core::Ledger ledger;
  std::vector<ports::SkippedStatusFile> skipped;
  core::Ownership owner;  // the caller's, with the snapshot's repository
  // A narrow pass: the names planned (the snapshot, `observed` and `ledger` hold those names
  // only), and how many valid specs are desired besides them. Unset: a full pass.
  std::optional<NameSet> only;
  int desired_elsewhere = 0;
  // The head's time and its clock less the daemon's, as read with `observed`
  // (engine/head_clock.h).
  std::optional<int64_t> head_now_ms;
  std::optional<int64_t> head_clock_offset_ms;
  // The secrets directory's values as this pass read them (engine/job_secrets.h); null until
  // the pass reads the first.
  std::shared_ptr<PassSecretValues> secret_values;
};

// Whose runs are ours (docs/operations.md): the caller's instance and --previous-repo URLs,
// and the repository the snapshot was read from (unless the caller named one).
core::Ownership OwnershipFor(const core::Ownership& given, const ports::DesiredSnapshot& snapshot);

// Ray's messages cut to their first line and redacted, before anything plans or records them;
// and what no step of a pass reads let go of: each job's entrypoint and driver node (at 50,000
// jobs about 13 MB, which the plan's own allocations then reuse).
void SanitizeJobs(std::vector<core::RayJob>& jobs, const core::Redactor& redactor);

// Commit -> a run of ours submitted from it, for every such commit that the pass's commit
// does not include: a descendant, or one the local copy lacks.
std::map<std::string, std::string> RunsFromNewerCommits(ports::DesiredStateSource& source,
                                                        const PassInputs& in);

// Steps 4 to 6 on the inputs read: plan, apply (unless a dry run), record. Sets the result's
// snapshot, plan, outcomes, records, transitions, status commit and ledger. Before it applies a
// plan with stops it checks the branch's tip (engine/tip_check.h): when that does not let the
// pass proceed, nothing was applied or recorded, and the caller starts over or reports.
TipCheck PlanApplyRecord(const ReconcileDeps& deps, const ReconcileOptions& options, PassInputs& in,
                         PassResult& result);

// Redacts what the result holds and sets its exit status: the last step of every pass.
void FinishPass(PassResult& result);

}  // namespace rg::engine
