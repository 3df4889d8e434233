#pragma once
// Step 6 of a pass (DESIGN.md 4): from the plan, what Ray reports and what was done, the new
// status record of every job; then only the records a person would care about are written.

#include <map>
#include <string>
#include <vector>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/status_model.h"
#include "reconciler/engine/apply.h"
#include "reconciler/ports/status_store.h"

namespace rg::engine {

struct StatusInputs {
  const core::DesiredState* desired = nullptr;
  const core::Plan* plan = nullptr;
  const core::Ledger* ledger = nullptr;
  // Ray's view, by submission id, as fresh as the pass has it (after apply when it could
  // list again). Only SUBMISSION jobs of ours (`owner`) matter: a foreign job is never recorded.
  std::map<std::string, core::RayJob, std::less<>> ray_jobs;
  // True when ray_jobs is a complete listing: an active attempt missing from it was lost.
  bool ray_jobs_complete = true;
  std::vector<ActionOutcome> outcomes;  // empty on a dry run
  core::Ownership owner = {};           // whose jobs are ours; owner.instance stamps the records
  // The cluster whose ledger this is (core::RayClusterName); empty: the one the desired
  // state's cluster file and ray_address give, which is what the pass reads the ledger for.
  std::string ray_cluster;
  std::string spec_commit;
  std::string ray_address;  // credentials stripped; the dashboard links start with it
  int64_t now_ms = 0;       // when this pass ran: the time a stop it sent is recorded with
};

// The record every planned job should have now, by name, stamped with the ledger's owner
// (instance and ray_cluster: a record written before ledgers had owners gets them here); names
// whose record is to be deleted (JobPlan::forget) map to nothing and are listed in `forget`.
struct StatusUpdate {
  std::map<std::string, core::StatusRecord, std::less<>> records;
  std::vector<std::string> forget;  // only names the ledger holds
};

StatusUpdate BuildStatusUpdate(const StatusInputs& in);

// The changes worth a commit: records that differ meaningfully from the ledger's
// (core::MeaningfulChange), new records, and deletions; with one transition line each
// (core::DescribeTransition), in name order.
struct StatusDiff {
  ports::StatusChanges changes;
  std::vector<std::string> transitions;
};
StatusDiff DiffAgainstLedger(const StatusUpdate& update, const core::Ledger& ledger);

// "ray-gitops: 1 change" / "ray-gitops: 3 changes", the transitions as body lines, and the
// Spec-Commit and Ray-Cluster trailers.
ports::StatusCommit MakeStatusCommit(const StatusDiff& diff, const std::string& spec_commit,
                                     const std::string& ray_address);

// <address>/#/jobs/<submission_id>, credentials stripped; empty when either is empty.
std::string DashboardUrl(const std::string& ray_address, const std::string& submission_id);

}  // namespace rg::engine
