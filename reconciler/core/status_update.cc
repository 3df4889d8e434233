#include "reconciler/core/status_update.h"

#include <set>
#include <utility>

#include "reconciler/core/render.h"
#include "reconciler/core/status_transitions.h"

namespace rg::core {
namespace {

void RefreshAttempt(AttemptRecord& a, const RayJob& job) {
  a.status = job.status;
  a.phase = PhaseForRayStatus(job.status);
  a.start_time_ms = job.start_time_ms;
  a.end_time_ms = job.end_time_ms;
  a.message = job.message;
}

void SetRayFields(StatusRecord& rec, const RayJob& job) {
  rec.status = job.status;
  rec.error_type = job.error_type;
  rec.job_id = job.job_id;
  rec.start_time_ms = job.start_time_ms;
  rec.end_time_ms = job.end_time_ms;
  rec.driver_exit_code = job.driver_exit_code;
}

// The cluster whose ledger the records are in: the same RayClusterName the pass reads the
// ledger for, so that what it writes it reads back as its own.
std::string LedgerCluster(const StatusInputs& in) {
  if (!in.ray_cluster.empty()) return in.ray_cluster;
  if (in.desired != nullptr && in.desired->cluster) {
    return RayClusterName(*in.desired->cluster, in.ray_address);
  }
  return StripUrlCredentials(in.ray_address);
}

void ClearRayFields(StatusRecord& rec) {
  rec.status = RayJobStatus::kUnknown;
  rec.error_type.reset();
  rec.job_id.reset();
  rec.start_time_ms.reset();
  rec.end_time_ms.reset();
  rec.driver_exit_code.reset();
}

}  // namespace

std::string DashboardUrl(const std::string& ray_address, const std::string& submission_id) {
  if (ray_address.empty() || submission_id.empty()) return "";
  std::string base = StripUrlCredentials(ray_address);
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/#/jobs/" + submission_id;
}

namespace {

using OutcomesById = std::map<std::string, const ActionOutcome*, std::less<>>;
using JobsByName = std::map<std::string, std::vector<const RayJob*>, std::less<>>;

// What this pass did, per submission id.
struct PassOutcomes {
  OutcomesById submitted;      // submits that succeeded (sent or adopted)
  OutcomesById failed_submit;  // submits that failed
  OutcomesById stopped;        // stops that succeeded
  const std::vector<ActionOutcome>* all = nullptr;
};

PassOutcomes IndexOutcomes(const std::vector<ActionOutcome>& outcomes) {
  PassOutcomes out;
  out.all = &outcomes;
  for (const auto& o : outcomes) {
    if (o.action.kind == ActionKind::kSubmit) {
      (o.ok ? out.submitted : out.failed_submit)[o.action.submission_id] = &o;
    } else if (o.ok) {
      out.stopped[o.action.submission_id] = &o;
    }
  }
  return out;
}

// Our jobs in Ray, by name.
JobsByName OursByName(const StatusInputs& in) {
  JobsByName out;
  for (const auto& [id, job] : in.ray_jobs) {
    if (!IsOurs(ClassifyJob(job, in.owner))) continue;
    out[job.Label(kMetaName)].push_back(&job);
  }
  return out;
}

const JobSpec* DesiredSpec(const StatusInputs& in, const std::string& name) {
  const JobSpec* spec = nullptr;
  for (const auto& s : in.desired->jobs) {
    if (s.name == name) spec = &s;
  }
  return spec;
}

// The job's record as the ledger had it, with the pass's phase, owner and spec fields.
StatusRecord StartRecord(const StatusInputs& in, const JobPlan& jp, const StatusRecord* old,
                         const std::string& ray_cluster, const JobSpec* spec) {
  StatusRecord rec;
  if (old != nullptr) rec = *old;
  rec.name = jp.name;
  rec.instance = in.owner.instance;
  rec.ray_cluster = ray_cluster;
  if (!jp.spec_path.empty()) rec.spec_path = jp.spec_path;
  rec.phase = jp.phase;
  rec.errors.clear();
  if (spec != nullptr) {
    rec.spec_hash = spec->spec_hash;
    rec.on_remove = spec->on_remove;
  } else if (jp.phase == Phase::kInvalid) {
    rec.spec_hash.clear();  // the file cannot be read: its hash is unknown
    for (const auto& bad : in.desired->invalid) {
      if (bad.name != jp.name && bad.path != jp.spec_path) continue;
      for (const auto& d : bad.diagnostics) rec.errors.push_back(d.ToString());
    }
  }
  return rec;
}

AttemptRecord& FindOrAddAttempt(StatusRecord& rec, const std::string& id, int attempt) {
  if (AttemptRecord* a = rec.FindAttempt(id)) return *a;
  AttemptRecord fresh;
  fresh.submission_id = id;
  fresh.attempt = attempt;
  rec.attempts.push_back(std::move(fresh));
  return rec.attempts.back();
}

// Every attempt of ours Ray reports for this name, refreshed or added; attempts the ledger
// remembers as active that Ray no longer has are lost.
void MergeRayAttempts(StatusRecord& rec, const StatusInputs& in, const JobsByName& ours,
                      const PassOutcomes& done) {
  if (auto it = ours.find(rec.name); it != ours.end()) {
    for (const RayJob* job : it->second) {
      const bool known = rec.FindAttempt(job->submission_id) != nullptr;
      AttemptRecord& a = FindOrAddAttempt(rec, job->submission_id, AttemptLabel(*job).value_or(0));
      if (!known) a.spec_hash = job->Label(kMetaSpecHash);
      RefreshAttempt(a, *job);
    }
  }
  if (!in.ray_jobs_complete) return;
  for (auto& a : rec.attempts) {
    if (IsActive(a.status) && a.phase != Phase::kLost && !in.ray_jobs.contains(a.submission_id) &&
        !done.submitted.contains(a.submission_id)) {
      a.phase = Phase::kLost;
    }
  }
}

// Attempts this pass started or stopped.
void AddPassAttempts(StatusRecord& rec, const StatusInputs& in, const PassOutcomes& done,
                     const JobSpec* spec) {
  for (const auto& [id, o] : done.submitted) {
    if (o->action.name != rec.name || rec.FindAttempt(id) != nullptr) continue;
    AttemptRecord& a = FindOrAddAttempt(rec, id, o->action.attempt);
    a.spec_hash = spec != nullptr ? spec->spec_hash : "";
    a.status = RayJobStatus::kPending;
    a.phase = Phase::kPending;
  }
  for (const auto& [id, o] : done.stopped) {
    if (o->action.name != rec.name) continue;
    AttemptRecord& a = FindOrAddAttempt(rec, id, o->action.attempt);
    a.stop_reason = o->action.stop_reason;
    if (in.now_ms != 0) a.stop_sent_ms = in.now_ms;
  }
}

// A PENDING run's message: what its driver asks for that the cluster lacks, then Ray's own
// words. With the cluster's resources unread this pass, the explanation the record already
// had for this run stays (no commit of noise when one read fails).
void ExplainPendingRun(StatusRecord& rec, const JobPlan& jp, const StatusInputs& in,
                       const std::string& ray_message, const std::string& previous) {
  if (jp.phase != Phase::kPending || rec.status != RayJobStatus::kPending) return;
  if (!in.cluster_resources) {
    if (IsPendingExplanation(previous)) rec.message = previous;
    return;
  }
  if (in.desired == nullptr || !in.desired->cluster) return;
  const JobSpec* spec = DesiredSpec(in, jp.name);
  if (spec == nullptr) return;
  std::optional<std::string> why =
      ExplainPending(DriverResources(*spec, *in.desired->cluster), *in.cluster_resources);
  if (why) rec.message = ray_message.empty() ? *why : *why + ". " + ray_message;
}

// The latest attempt, as Ray last reported it, and the record's message.
void SetLatestAttempt(StatusRecord& rec, const JobPlan& jp, const StatusInputs& in,
                      const PassOutcomes& done) {
  const bool same_attempt = rec.submission_id == jp.submission_id;
  const std::string previous = same_attempt ? rec.message : std::string();
  rec.submission_id = jp.submission_id;
  rec.attempt = jp.attempt;
  std::optional<std::string> ray_message;
  // A run not ours holding the id (another repository's, another instance's, one submitted by
  // hand: docs/operations.md) is named in the message, never recorded.
  // The commit the run was submitted from (its gitops.commit label); the pass's commit for a
  // run submitted now or still to come, and for a job without a run.
  std::string run_commit = same_attempt ? rec.spec_commit : std::string();
  if (auto it = in.ray_jobs.find(jp.submission_id);
      it != in.ray_jobs.end() && IsOurs(ClassifyJob(it->second, in.owner))) {
    SetRayFields(rec, it->second);
    ray_message = it->second.message;
    if (std::string label = it->second.Label(kMetaCommit); !label.empty()) run_commit = label;
  } else if (done.submitted.contains(jp.submission_id)) {
    ClearRayFields(rec);
    rec.status = RayJobStatus::kPending;
  } else if (!same_attempt) {
    ClearRayFields(rec);
  }
  if (auto it = done.submitted.find(jp.submission_id);
      it != done.submitted.end() && it->second->adopted) {
    rec.message = "adopted " + jp.submission_id + ", which Ray already had";
  } else if (ray_message && (jp.phase == Phase::kPending || jp.phase == Phase::kRunning ||
                             jp.phase == Phase::kSucceeded || jp.phase == Phase::kFailed)) {
    // Ray's own words while the run follows its course: the planner's reason for a submit
    // ("new job") would otherwise turn into Ray's message one pass later, a commit of noise.
    rec.message = *ray_message;
    ExplainPendingRun(rec, jp, in, *ray_message, previous);
  } else {
    rec.message = jp.message;
  }
  if (auto it = done.failed_submit.find(jp.submission_id); it != done.failed_submit.end()) {
    const Error& e = *it->second->error;
    if (e.IsConflict()) rec.phase = Phase::kConflict;
    rec.message = "submit of " + jp.submission_id + " failed: " + e.ToString();
  }
  for (const auto& o : *done.all) {
    if (o.action.kind == ActionKind::kStop && !o.ok && o.action.name == jp.name) {
      rec.message = "stop of " + o.action.submission_id + " failed: " + o.error->ToString();
    }
  }
  if (run_commit.empty()) run_commit = in.spec_commit;
  rec.spec_commit = run_commit;
  rec.dashboard_url =
      DashboardUrl(in.dashboard_url.empty() ? in.ray_address : in.dashboard_url, rec.submission_id);
}

}  // namespace

StatusUpdate BuildStatusUpdate(const StatusInputs& in) {
  StatusUpdate update;
  const Ledger empty_ledger;
  const Ledger& ledger = in.ledger != nullptr ? *in.ledger : empty_ledger;
  const std::string ray_cluster = LedgerCluster(in);
  const PassOutcomes done = IndexOutcomes(in.outcomes);
  const JobsByName ours = OursByName(in);

  for (const JobPlan& jp : in.plan->jobs) {
    const auto old = ledger.find(jp.name);
    const JobSpec* spec = DesiredSpec(in, jp.name);
    StatusRecord rec =
        StartRecord(in, jp, old != ledger.end() ? &old->second : nullptr, ray_cluster, spec);
    MergeRayAttempts(rec, in, ours, done);
    AddPassAttempts(rec, in, done, spec);
    SetLatestAttempt(rec, jp, in, done);
    update.records[jp.name] = std::move(rec);
  }
  return update;
}

StatusDiff DiffAgainstLedger(const StatusUpdate& update, const Ledger& ledger) {
  StatusDiff diff;
  // update.records is ordered by name: so are the lines and items.
  for (const auto& [name, rec] : update.records) {
    auto old = ledger.find(name);
    const StatusRecord* before = old == ledger.end() ? nullptr : &old->second;
    if (before != nullptr && !MeaningfulChange(*before, rec)) continue;
    diff.changes[name] = rec;
    for (std::string& line : ChangeLines(before, &rec)) diff.transitions.push_back(std::move(line));
    diff.subject_items.push_back(SubjectItem(before, &rec));
  }
  return diff;
}

}  // namespace rg::core
