#pragma once
// The per-job decision after the plan (docs/reconcile.md): from the plan, what Ray reports
// and what the pass did, the new status record of every job. Pure; the engine applies the
// plan, calls this, and writes the records that changed (engine/status_commit.h).

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/pending_reason.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/status_model.h"

namespace rg::core {

struct StatusInputs {
  const DesiredState* desired = nullptr;
  const Plan* plan = nullptr;
  const Ledger* ledger = nullptr;
  // Ray's view, by submission id, as fresh as the pass has it (after apply when it could
  // list again). Only SUBMISSION jobs of ours (`owner`) matter: a foreign job is never recorded.
  // Views: the jobs are the caller's, kept alive while the records are built.
  RayJobsById ray_jobs;
  // True when ray_jobs is a complete listing: an active attempt missing from it was lost.
  bool ray_jobs_complete = true;
  std::vector<ActionOutcome> outcomes;  // empty on a dry run
  Ownership owner = {};                 // whose jobs are ours; owner.instance stamps the records
  // The cluster whose ledger this is (RayClusterName); empty: the one the desired
  // state's cluster file and ray_address give, which is what the pass reads the ledger for.
  std::string ray_cluster;
  std::string spec_commit;
  std::string ray_address;  // credentials stripped; the dashboard links start with it
  // The Ray dashboard as browsers reach it (--dashboard-url); empty: ray_address.
  std::string dashboard_url;
  int64_t now_ms = 0;  // when this pass ran: the time a stop it sent is recorded with
  // The cluster's resources, read when some run is PENDING (AnyRunPending); nullopt when not
  // read or unreadable. A PENDING run's message then says what its driver asks for that the
  // cluster lacks (ExplainPending); unread, a record keeps the explanation it had.
  std::optional<ClusterResources> cluster_resources;
  // The jobs of ours the ledger did not know that the pass checked and found to be the runs it
  // renders (engine/adoption_check.h). When set, a job in Ray that a record does not know joins
  // its attempts (and gives the record Ray's fields) only if it is here or this pass submitted
  // or adopted it: a job that carries our labels unchecked (planted after the listing) is never
  // recorded. Null: every job of ours joins (callers that check nothing).
  const std::set<std::string, std::less<>>* proven_runs = nullptr;
};

// The record every planned job should have now, by name, stamped with the ledger's owner
// (instance and ray_cluster: a record written before ledgers had owners gets them here).
// Records are never deleted: the record of a removed spec stays (Removed), since a revert
// that restores the spec restores the run ray-gitops stopped (docs/reconcile.md, "Revert").
struct StatusUpdate {
  std::map<std::string, StatusRecord, std::less<>> records;
};

StatusUpdate BuildStatusUpdate(const StatusInputs& in);

// The changes worth a commit: records that differ meaningfully from the ledger's
// (MeaningfulChange), new records, and deletions; in name order, each job's lines of the
// commit's body (ChangeLines: one per transition of each attempt) and its item of the
// commit's subject (SubjectItem).
struct StatusDiff {
  std::vector<std::string> changed;  // the names of the changed records, in name order
  RecordChanges changes;             // their records (left empty by kNamesOnly)
  std::vector<std::string> transitions;
  std::vector<std::string> subject_items;
};
// kNamesOnly fills everything but `changes`: a caller that holds the update lends its records
// to the write instead of copying them (engine/reconcile_pass.cc).
enum class DiffRecords { kCopy, kNamesOnly };
StatusDiff DiffAgainstLedger(const StatusUpdate& update, const Ledger& ledger,
                             DiffRecords records = DiffRecords::kCopy);

// What a pass that records does with BuildStatusUpdate and DiffAgainstLedger (kNamesOnly), in
// one walk that lets go of the ledger as it goes: each new record is redacted with `redactor`,
// compared with the ledger's, and the ledger's is then erased. The ledger's records and the new
// ones are never all held at once (at 50,000 jobs each set is about 60 MB). A job `frozen`
// names is built and redacted but left out of the diff, and its ledger record stays. `ledger`
// is left with the records of the jobs the plan does not name, or frozen; in.ledger is not
// read; `update` must be empty. The records and the diff are those the two calls give.
StatusDiff BuildStatusUpdateFromLedger(const StatusInputs& in, Ledger& ledger,
                                       const Redactor& redactor,
                                       const std::function<bool(std::string_view)>& frozen,
                                       StatusUpdate& update);

// <address>/#/jobs/<submission_id>, credentials stripped; empty when either is empty.
std::string DashboardUrl(const std::string& ray_address, const std::string& submission_id);

}  // namespace rg::core
