#include "reconciler/core/status_update.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/redaction.h"
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
  // Boxed: touched only when Ray gives an error_type, or the record had one.
  const std::string_view error_type = job.error_type ? *job.error_type : std::string_view();
  if (a.ending.get().error_type != error_type) {
    a.ending.mutable_get().error_type = std::string(error_type);
  }
  if (a.commit.empty()) a.commit = job.Label(kMetaCommit);
}

// How each attempt ended, as the budgets of DESIGN §3.1 count it: an attempt ray-gitops sent a
// stop has no class, whatever it ended in; a Lost one is the cluster's; a FAILED one is by its
// error_type.
void ClassifyAttempts(StatusRecord& rec) {
  for (AttemptRecord& a : rec.attempts) {
    if (a.stop_reason != StopReason::kNone || a.stop_sent_ms) {
      a.failure_class = FailureClass::kNone;
    } else if (a.phase == Phase::kLost) {
      a.failure_class = FailureClass::kInfra;
    } else if (a.status == RayJobStatus::kFailed) {
      a.failure_class = ClassifyFailure(a.ending.get().error_type);
    } else {
      a.failure_class = FailureClass::kNone;
    }
  }
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
  // Sized exactly: every record keeps one (`base + ...` left it half as large again).
  constexpr std::string_view kJobs = "/#/jobs/";
  std::string url;
  url.reserve(base.size() + kJobs.size() + submission_id.size());
  url.append(base).append(kJobs).append(submission_id);
  return url;
}

namespace {

using OutcomesById = std::map<std::string, const ActionOutcome*, std::less<>>;
using JobsByName = std::map<std::string, std::vector<const RayJob*>, std::less<>>;

using OutcomesByName = std::unordered_map<std::string_view, std::vector<const ActionOutcome*>>;

// What this pass did, per submission id and per job: every lookup of a record is by key, so
// that building 50,000 records after 1,000 submits costs 51,000 steps, not 50,000,000.
struct PassOutcomes {
  OutcomesById submitted;              // submits that succeeded (sent or adopted)
  OutcomesById failed_submit;          // submits that failed
  OutcomesById stopped;                // stops that succeeded
  OutcomesByName submitted_by_name;    // the same submits, by job, in plan order
  OutcomesByName stopped_by_name;      // the same stops, by job, in plan order
  OutcomesByName failed_stop_by_name;  // stops that failed, by job, in plan order

  template <typename F>
  static void ForEach(const OutcomesByName& index, std::string_view name, F&& f) {
    if (auto it = index.find(name); it != index.end()) {
      for (const ActionOutcome* o : it->second) f(*o);
    }
  }
};

PassOutcomes IndexOutcomes(const std::vector<ActionOutcome>& outcomes) {
  PassOutcomes out;
  for (const auto& o : outcomes) {
    if (o.action.kind == ActionKind::kSubmit) {
      (o.ok ? out.submitted : out.failed_submit)[o.action.submission_id] = &o;
    } else if (o.ok) {
      out.stopped[o.action.submission_id] = &o;
    } else {
      out.failed_stop_by_name[o.action.name].push_back(&o);
    }
  }
  // By job, from the maps by id: a repeated id counts once, as it did.
  for (const auto& [id, o] : out.submitted) out.submitted_by_name[o->action.name].push_back(o);
  for (const auto& [id, o] : out.stopped) out.stopped_by_name[o->action.name].push_back(o);
  return out;
}

// The desired state by name (the last spec of a name, as a scan would find it) and its
// invalid files by name and by path.
struct DesiredIndex {
  std::unordered_map<std::string_view, const JobSpec*> specs;
  std::unordered_map<std::string_view, std::vector<const InvalidSpec*>> invalid_by_name;
  std::unordered_map<std::string_view, std::vector<const InvalidSpec*>> invalid_by_path;

  explicit DesiredIndex(const DesiredState* desired) {
    if (desired == nullptr) return;
    specs.reserve(desired->jobs.size());
    for (const JobSpec& s : desired->jobs) specs.insert_or_assign(s.name, &s);
    for (const InvalidSpec& bad : desired->invalid) {
      invalid_by_name[bad.name].push_back(&bad);
      invalid_by_path[bad.path].push_back(&bad);
    }
  }

  const JobSpec* Find(std::string_view name) const {
    auto it = specs.find(name);
    return it == specs.end() ? nullptr : it->second;
  }

  // The invalid files of a job (by its name or its path), in the desired state's order.
  std::vector<const InvalidSpec*> Invalid(std::string_view name, std::string_view path) const {
    std::vector<const InvalidSpec*> out;
    if (auto it = invalid_by_name.find(name); it != invalid_by_name.end()) out = it->second;
    if (auto it = invalid_by_path.find(path); it != invalid_by_path.end()) {
      for (const InvalidSpec* bad : it->second) {
        if (std::find(out.begin(), out.end(), bad) == out.end()) out.push_back(bad);
      }
    }
    std::sort(out.begin(), out.end());  // the vector's order is the desired state's order
    return out;
  }
};

// Our jobs in Ray, by name.
JobsByName OursByName(const StatusInputs& in) {
  JobsByName out;
  for (const auto& [id, job] : in.ray_jobs) {
    if (!IsOurs(ClassifyJob(*job, in.owner))) continue;
    out[job->Label(kMetaName)].push_back(job);
  }
  return out;
}

// The job's record as the ledger had it, with the pass's phase, owner and spec fields.
StatusRecord StartRecord(const StatusInputs& in, const JobPlan& jp, const StatusRecord* old,
                         const std::string& ray_cluster, const JobSpec* spec,
                         const DesiredIndex& desired) {
  StatusRecord rec;
  if (old != nullptr) rec = *old;
  rec.name = jp.name;
  rec.instance = in.owner.instance;
  rec.ray_cluster = ray_cluster;
  if (!jp.spec_path.empty()) rec.spec_path = jp.spec_path;
  rec.phase = jp.phase;
  rec.errors.clear();
  if (spec != nullptr && !jp.frozen) {
    rec.spec_hash = spec->spec_hash;
    rec.on_remove = spec->on_remove;
  } else if (jp.phase == Phase::kInvalid) {
    rec.spec_hash.clear();  // the file cannot be read: its hash is unknown
    for (const InvalidSpec* bad : desired.Invalid(jp.name, jp.spec_path)) {
      for (const auto& d : bad->diagnostics) rec.errors.push_back(d.ToString());
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
      if (!known && in.proven_runs != nullptr && !in.proven_runs->contains(job->submission_id) &&
          !done.submitted.contains(job->submission_id)) {
        continue;  // labels alone: not a run this pass can show is ours
      }
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
      // The infrastructure retry's backoff counts from here (core/planner.h).
      if (in.now_ms != 0 && !a.ending.get().lost_ms) a.ending.mutable_get().lost_ms = in.now_ms;
    }
  }
}

// Attempts this pass started or stopped.
void AddPassAttempts(StatusRecord& rec, const StatusInputs& in, const PassOutcomes& done,
                     const JobSpec* spec) {
  PassOutcomes::ForEach(done.submitted_by_name, rec.name, [&](const ActionOutcome& o) {
    const std::string& id = o.action.submission_id;
    if (rec.FindAttempt(id) != nullptr) return;
    AttemptRecord& a = FindOrAddAttempt(rec, id, o.action.attempt);
    a.spec_hash = spec != nullptr ? spec->spec_hash : "";
    a.status = RayJobStatus::kPending;
    a.phase = Phase::kPending;
    a.commit = in.spec_commit;
  });
  PassOutcomes::ForEach(done.stopped_by_name, rec.name, [&](const ActionOutcome& o) {
    AttemptRecord& a = FindOrAddAttempt(rec, o.action.submission_id, o.action.attempt);
    a.stop_reason = o.action.stop_reason;
    if (in.now_ms != 0) a.stop_sent_ms = in.now_ms;
    if (!in.spec_commit.empty()) a.ending.mutable_get().stop_commit = in.spec_commit;
  });
}

// A PENDING run's message: what its driver asks for that the cluster lacks, then Ray's own
// words. With the cluster's resources unread this pass, the explanation the record already
// had for this run stays (no commit of noise when one read fails).
void ExplainPendingRun(StatusRecord& rec, const JobPlan& jp, const StatusInputs& in,
                       const JobSpec* spec, const std::string& ray_message,
                       const std::string& previous) {
  if (jp.phase != Phase::kPending || rec.status != RayJobStatus::kPending) return;
  if (!in.cluster_resources) {
    if (IsPendingExplanation(previous)) rec.message = previous;
    return;
  }
  if (in.desired == nullptr || !in.desired->cluster || spec == nullptr) return;
  std::optional<std::string> why =
      ExplainPending(DriverResources(*spec, *in.desired->cluster), *in.cluster_resources);
  if (why) rec.message = ray_message.empty() ? *why : *why + ". " + ray_message;
}

// The code a run got (its gitops.code-* labels), when it has any.
void SetRunCode(StatusRecord& rec, const RayJob& job) {
  std::string tree = job.Label(kMetaCodeTree);
  if (tree.empty()) return;
  RunCode& code = rec.code.mutable_get();
  code.tree = std::move(tree);
  code.commit = job.Label(kMetaCodeCommit);
}

// For a run submitted now or still to come, whose labels Ray has not shown yet: the code its
// spec names (nothing for a spec without `code`).
void SetSpecCode(StatusRecord& rec, const JobSpec* spec) {
  if (spec == nullptr || !spec->has_code()) return;
  RunCode& code = rec.code.mutable_get();
  code.folder = spec->code().folder;
  if (!code.tree.empty()) return;  // the run's own labels said
  code.tree = spec->code().tree_id;
  code.commit = spec->code().commit;
}

// True when the record's latest attempt failed for the cluster: the planner's message (the
// retry to come, or the budget spent) says more than Ray's.
bool LatestFailedForCluster(const StatusRecord& rec) {
  const AttemptRecord* a = rec.FindAttempt(rec.submission_id);
  return a != nullptr && a->failure_class == FailureClass::kInfra;
}

// The latest attempt, as Ray last reported it, and the record's message.
void SetLatestAttempt(StatusRecord& rec, const JobPlan& jp, const StatusInputs& in,
                      const PassOutcomes& done, const JobSpec* spec) {
  const bool same_attempt = rec.submission_id == jp.submission_id;
  const std::string previous = same_attempt ? rec.message : std::string();
  if (!same_attempt) {
    rec.code.reset();
  }
  rec.submission_id = jp.submission_id;
  rec.attempt = jp.attempt;
  std::optional<std::string> ray_message;
  // A run not ours holding the id (another repository's, another instance's, one submitted by
  // hand: docs/operations.md) is named in the message, never recorded.
  // The commit the run was submitted from (its gitops.commit label); the pass's commit for a
  // run submitted now or still to come, and for a job without a run.
  std::string run_commit = same_attempt ? rec.spec_commit : std::string();
  if (auto it = in.ray_jobs.find(jp.submission_id);
      it != in.ray_jobs.end() && IsOurs(ClassifyJob(*it->second, in.owner)) &&
      (in.proven_runs == nullptr || rec.FindAttempt(jp.submission_id) != nullptr)) {
    SetRayFields(rec, *it->second);
    ray_message = it->second->message;
    // The plan said Pending for the run it submitted; Ray, listed again after the submits,
    // may already have it running (or ended): the job's phase is its latest attempt's, as the
    // next pass's plan would say, not one pass behind it.
    if (jp.phase == Phase::kPending && done.submitted.contains(jp.submission_id)) {
      rec.phase = PhaseForRayStatus(it->second->status);
    }
    if (std::string label = it->second->Label(kMetaCommit); !label.empty()) run_commit = label;
    SetRunCode(rec, *it->second);
  } else if (done.submitted.contains(jp.submission_id)) {
    ClearRayFields(rec);
    rec.status = RayJobStatus::kPending;
  } else if (!same_attempt) {
    ClearRayFields(rec);
  }
  if (auto it = done.submitted.find(jp.submission_id);
      it != done.submitted.end() && it->second->adopted) {
    rec.message = "adopted " + jp.submission_id + ", which Ray already had";
  } else if (ray_message && !LatestFailedForCluster(rec) &&
             (jp.phase == Phase::kPending || jp.phase == Phase::kRunning ||
              jp.phase == Phase::kSucceeded || jp.phase == Phase::kFailed)) {
    // Ray's own words while the run follows its course: the planner's reason for a submit
    // ("new job") would otherwise turn into Ray's message one pass later, a commit of noise.
    rec.message = *ray_message;
    ExplainPendingRun(rec, jp, in, spec, *ray_message, previous);
  } else {
    rec.message = jp.message;
  }
  if (auto it = done.failed_submit.find(jp.submission_id); it != done.failed_submit.end()) {
    const Error& e = *it->second->error;
    if (e.IsConflict()) rec.phase = Phase::kConflict;
    rec.message = "submit of " + jp.submission_id + " failed: " + e.ToString();
  }
  PassOutcomes::ForEach(done.failed_stop_by_name, jp.name, [&](const ActionOutcome& o) {
    rec.message = "stop of " + o.action.submission_id + " failed: " + o.error->ToString();
  });
  if (run_commit.empty()) run_commit = in.spec_commit;
  rec.spec_commit = run_commit;
  SetSpecCode(rec, spec);
  rec.dashboard_url =
      DashboardUrl(in.dashboard_url.empty() ? in.ray_address : in.dashboard_url, rec.submission_id);
}

// The run folder (DESIGN §5) of the record's latest run: set when this pass submitted or adopted
// an attempt of it, or proved an unknown one to be the run it renders (both were rendered with
// that folder); kept while the latest attempt stays of the same run; cleared when the record
// moves to a run this version did not render (its attempts used folders of their own).
void SetRunDirectory(StatusRecord& rec, const StatusRecord* old, const StatusInputs& in,
                     const PassOutcomes& done) {
  const std::string run = RunIdOf(rec.submission_id, rec.attempt.value_or(0));
  if (!rec.submission_id.empty() &&
      (done.submitted.contains(rec.submission_id) ||
       (in.proven_runs != nullptr && in.proven_runs->contains(rec.submission_id)))) {
    const bool shared = in.desired != nullptr && in.desired->cluster &&
                        in.desired->cluster->shared_root.has_value();
    rec.run_dir = shared ? RunDirectory(*in.desired->cluster->shared_root, run) : "";
  } else if (old == nullptr || RunIdOf(old->submission_id, old->attempt.value_or(0)) != run) {
    rec.run_dir.clear();
  }
}

// A scheduled job's record keeps the attempts of its latest kKeptSlots slots only (and any
// attempt still active, and the latest), so that a job run every minute does not grow its
// status file forever; the slots that got no run are added (the latest kKeptSkippedSlots).
void KeepRecentSlots(StatusRecord& rec, const JobPlan& jp, const JobSpec* spec) {
  if (spec == nullptr || !spec->lifecycle().schedule.has_value()) return;
  AddSkippedSlots(rec, jp.skipped_slots());
  auto slot_of = [&rec](const AttemptRecord& a) {
    return SlotOfSubmissionId(rec.name + "-" + a.spec_hash, a.submission_id);
  };
  std::set<std::string_view> slots;
  for (const AttemptRecord& a : rec.attempts) {
    if (std::optional<std::string_view> slot = slot_of(a)) slots.insert(*slot);
  }
  if (slots.size() <= kKeptSlots) return;
  const std::string oldest_kept(*std::prev(slots.end(), static_cast<std::ptrdiff_t>(kKeptSlots)));
  std::erase_if(rec.attempts, [&](const AttemptRecord& a) {
    const std::optional<std::string_view> slot = slot_of(a);
    const bool active = IsActive(a.status) && a.phase != Phase::kLost;
    return slot && *slot < oldest_kept && !active && a.submission_id != rec.submission_id;
  });
}

}  // namespace

namespace {

// Builds every planned job's record into `update`, in plan order (by name), and hands each
// name's final record to `built(name, old, record)` once no later plan row has that name;
// `old` is the ledger's record of it (ledger.end() when there is none).
template <typename L, typename Built>
void BuildRecords(const StatusInputs& in, L& ledger, StatusUpdate& update, Built&& built) {
  const std::string ray_cluster = LedgerCluster(in);
  const PassOutcomes done = IndexOutcomes(in.outcomes);
  const JobsByName ours = OursByName(in);
  const DesiredIndex desired(in.desired);
  const std::vector<JobPlan>& jobs = in.plan->jobs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobPlan& jp = jobs[i];
    const auto old = ledger.find(jp.name);
    const JobSpec* spec = desired.Find(jp.name);
    StatusRecord rec = StartRecord(in, jp, old != ledger.end() ? &old->second : nullptr,
                                   ray_cluster, spec, desired);
    MergeRayAttempts(rec, in, ours, done);
    AddPassAttempts(rec, in, done, spec);
    ClassifyAttempts(rec);
    SetLatestAttempt(rec, jp, in, done, spec);
    SetRunDirectory(rec, old != ledger.end() ? &old->second : nullptr, in, done);
    KeepRecentSlots(rec, jp, spec);
    const auto it = update.records.insert_or_assign(update.records.end(), jp.name, std::move(rec));
    if (i + 1 == jobs.size() || jobs[i + 1].name != jp.name) built(it->first, old, it->second);
  }
}

// One job's entry in the diff, when its record changed meaningfully or is new.
void AddToDiff(StatusDiff& diff, const std::string& name, const StatusRecord* before,
               const StatusRecord& rec, DiffRecords records) {
  if (before != nullptr && !MeaningfulChange(*before, rec)) return;
  diff.changed.push_back(name);
  if (records == DiffRecords::kCopy) diff.changes.emplace_hint(diff.changes.end(), name, rec);
  for (std::string& line : ChangeLines(before, &rec)) diff.transitions.push_back(std::move(line));
  diff.subject_items.push_back(SubjectItem(before, &rec));
}

}  // namespace

StatusUpdate BuildStatusUpdate(const StatusInputs& in) {
  StatusUpdate update;
  const Ledger empty_ledger;
  const Ledger& ledger = in.ledger != nullptr ? *in.ledger : empty_ledger;
  BuildRecords(in, ledger, update, [](const std::string&, auto, StatusRecord&) {});
  return update;
}

StatusDiff DiffAgainstLedger(const StatusUpdate& update, const Ledger& ledger,
                             DiffRecords records) {
  StatusDiff diff;
  // update.records is ordered by name: so are the names, lines and items.
  for (const auto& [name, rec] : update.records) {
    auto old = ledger.find(name);
    AddToDiff(diff, name, old == ledger.end() ? nullptr : &old->second, rec, records);
  }
  return diff;
}

StatusDiff BuildStatusUpdateFromLedger(const StatusInputs& in, Ledger& ledger,
                                       const Redactor& redactor,
                                       const std::function<bool(std::string_view)>& frozen,
                                       StatusUpdate& update) {
  StatusDiff diff;
  BuildRecords(in, ledger, update,
               [&](const std::string& name, Ledger::iterator old, StatusRecord& rec) {
                 RedactRecord(rec, redactor);
                 if (frozen && frozen(name)) return;
                 const bool had = old != ledger.end();
                 AddToDiff(diff, name, had ? &old->second : nullptr, rec, DiffRecords::kNamesOnly);
                 if (had) ledger.erase(old);
               });
  return diff;
}

}  // namespace rg::core
