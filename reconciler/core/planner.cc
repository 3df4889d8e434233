#include "reconciler/core/planner.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <iterator>
#include <map>
#include <set>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "reconciler/core/duration.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/render.h"
#include "reconciler/core/schedule.h"
#include "reconciler/core/time_format.h"
#include "reconciler/core/tzif.h"

namespace rg::core {

int Plan::CountActions(ActionKind kind) const {
  return static_cast<int>(std::count_if(actions.begin(), actions.end(),
                                        [&](const Action& a) { return a.kind == kind; }));
}

const JobPlan* Plan::FindJob(std::string_view name) const {
  // The planner leaves `jobs` in name order: a binary search finds the first of that name. A
  // plan put together in another order is searched through.
  auto it = std::lower_bound(jobs.begin(), jobs.end(), name,
                             [](const JobPlan& j, std::string_view n) { return j.name < n; });
  if (it != jobs.end() && it->name == name) return &*it;
  for (const auto& j : jobs) {
    if (j.name == name) return &j;
  }
  return nullptr;
}

Phase PhaseForRayStatus(RayJobStatus status) {
  switch (status) {
    case RayJobStatus::kRunning:
      return Phase::kRunning;
    case RayJobStatus::kSucceeded:
      return Phase::kSucceeded;
    case RayJobStatus::kFailed:
      return Phase::kFailed;
    case RayJobStatus::kStopped:
      return Phase::kStopped;
    case RayJobStatus::kPending:
    case RayJobStatus::kUnknown:
      return Phase::kPending;
  }
  return Phase::kPending;
}

namespace {

std::optional<int> ParseInt(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// The attempt number of a job of ours: its gitops.attempt label, else the "-r<k>" suffix of its
// id after `base`, else 0.
int AttemptOf(const RayJob& job, std::string_view base) {
  if (auto a = AttemptLabel(job)) return *a;
  std::string_view id = job.submission_id;
  if (id.size() > base.size() + 2 && id.substr(0, base.size()) == base &&
      id.substr(base.size(), 2) == "-r") {
    if (auto a = ParseInt(id.substr(base.size() + 2))) return *a;
  }
  return 0;
}

// The latest of a set of jobs: greatest start time, then id, so the choice is stable.
const RayJob* Latest(std::span<const RayJob* const> jobs) {
  const RayJob* best = nullptr;
  for (const RayJob* j : jobs) {
    if (best == nullptr || j->start_time_ms.value_or(0) > best->start_time_ms.value_or(0) ||
        (j->start_time_ms.value_or(0) == best->start_time_ms.value_or(0) &&
         j->submission_id > best->submission_id)) {
      best = j;
    }
  }
  return best;
}

class Planner {
 public:
  Planner(const DesiredState& desired, const std::vector<RayJob>& observed, const Ledger& ledger,
          const PlanPolicy& policy)
      : desired_(desired), ledger_(ledger), policy_(policy) {
    plan_.instance = policy.owner.instance;
    for (const JobSpec& spec : desired.jobs) {
      for (const std::string& up : spec.pipeline().after) planned_.emplace(up, kNotPlanned);
    }
    std::vector<std::pair<std::string_view, const RayJob*>> ours;
    for (const auto& job : observed) {
      if (job.type == "DRIVER" || job.submission_id.empty()) continue;
      by_id_.emplace_back(job.submission_id, &job);
      switch (ClassifyJob(job, policy.owner)) {
        case JobOwnership::kOursPrevious:
          ++plan_.adopted_previous[policy.owner.previous.at(RepoIdentity(job.Label(kMetaRepo)))];
          [[fallthrough]];
        case JobOwnership::kOurs:
          ours.emplace_back(job.LabelView(kMetaName), &job);
          break;
        case JobOwnership::kForeign:
          plan_.foreign.push_back(job);
          break;
        case JobOwnership::kNotOurs:
        case JobOwnership::kDisowned:
          plan_.unmanaged.push_back(job);
          break;
      }
    }
    // Stable: of one id the last listed is found; the jobs of one name keep Ray's order.
    auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
    std::stable_sort(by_id_.begin(), by_id_.end(), by_key);
    std::stable_sort(ours.begin(), ours.end(), by_key);
    ours_names_.reserve(ours.size());
    ours_jobs_.reserve(ours.size());
    for (const auto& [name, job] : ours) {
      ours_names_.push_back(name);
      ours_jobs_.push_back(job);
    }
  }

  Plan Run() {
    // Every desired, invalid and frozen job has a row; a removed one may add one more.
    plan_.jobs.reserve(desired_.jobs.size() + desired_.invalid.size() + policy_.frozen_jobs.size());
    // Views of names the desired state and the policy hold, which outlive the planner.
    std::set<std::string_view, std::less<>> handled;
    if (!policy_.frozen_jobs.empty()) {
      // The spec path of each name (the last file of that name, an invalid one last).
      for (const auto& spec : desired_.jobs) frozen_spec_paths_[spec.name] = spec.path;
      for (const auto& bad : desired_.invalid) frozen_spec_paths_[bad.name] = bad.path;
    }
    for (const auto& [name, why] : policy_.frozen_jobs) {
      PlanFrozen(name, why);
      handled.insert(name);
    }
    for (const auto& bad : desired_.invalid) {
      frozen_paths_.insert(bad.path);
      if (handled.contains(bad.name)) continue;
      PlanInvalid(bad);
      handled.insert(bad.name);
    }
    for (const auto& spec : desired_.jobs) handled.insert(spec.name);
    std::set<std::string, std::less<>> removed;
    for (const std::string_view name : ours_names_) {
      if (!handled.contains(name)) removed.emplace(name);
    }
    for (const auto& [name, rec] : ledger_) {
      if (!handled.contains(name)) removed.insert(name);
    }
    IndexRemovedHashes(removed);
    // Upstreams first: a job with `after` is planned once the jobs it names are.
    for (size_t i : PipelineOrder(desired_)) {
      const JobSpec& spec = desired_.jobs[i];
      if (!policy_.frozen_jobs.contains(spec.name)) PlanDesired(spec);
    }
    for (const auto& name : removed) PlanRemoved(name);
    ApplyGuards();
    Finish();
    return std::move(plan_);
  }

 private:
  // Spec hash -> (name, spec path) of the runs of removed jobs, so that a new job with the
  // same content can say it is a rename (the name is not part of the hash: docs/jobspec.md).
  void IndexRemovedHashes(const std::set<std::string, std::less<>>& removed) {
    for (const auto& name : removed) {
      auto rec = ledger_.find(name);
      const std::string path = rec != ledger_.end() ? rec->second.spec_path : "";
      for (const RayJob* job : JobsNamed(name)) {
        removed_by_hash_.try_emplace(job->Label(kMetaSpecHash), name,
                                     path.empty() ? job->Label(kMetaSpecPath) : path);
      }
      if (rec == ledger_.end()) continue;
      removed_by_hash_.try_emplace(rec->second.spec_hash, name, path);
      for (const auto& a : rec->second.attempts) {
        removed_by_hash_.try_emplace(a.spec_hash, name, path);
      }
    }
    removed_by_hash_.erase("");
  }

  // Adds a job's row to the plan, findable by name for the jobs that wait on it.
  void AddJobPlan(JobPlan jp) {
    if (auto it = planned_.find(jp.name); it != planned_.end()) it->second = plan_.jobs.size();
    plan_.jobs.push_back(std::move(jp));
  }

  // The row of `name` planned so far, or nullptr.
  const JobPlan* Planned(std::string_view name) const {
    auto it = planned_.find(name);
    return it == planned_.end() || it->second == kNotPlanned ? nullptr : &plan_.jobs[it->second];
  }

  // What `after` asks of `spec`, from the rows of its upstreams (planned before it).
  struct Upstreams {
    UpstreamRuns runs;    // the ones SUCCEEDED: name -> run
    std::string waiting;  // "on a: Running; on b: Failed (...)": why it must wait, if it must
    bool frozen = false;  // an upstream's identity is unknown (its spec is invalid)
  };

  // "Failed (its message)": an upstream's phase, with its message when that says why.
  static std::string UpstreamState(const JobPlan& up) {
    std::string out(PhaseName(up.phase));
    if (up.phase == Phase::kPending || up.phase == Phase::kRunning || up.message.empty()) {
      return out;
    }
    std::string_view why = up.message;
    why = why.substr(0, why.find_first_of("\r\n"));
    constexpr size_t kMaxWhy = 200;
    if (why.size() > kMaxWhy) why = why.substr(0, kMaxWhy);
    return out + " (" + std::string(why) + (why.size() < up.message.size() ? "...)" : ")");
  }

  Upstreams UpstreamsOf(const JobSpec& spec) const {
    Upstreams out;
    for (const std::string& name : spec.pipeline().after) {
      const JobPlan* up = Planned(name);
      std::string state;
      if (up == nullptr) {
        // Not a valid spec (the loader made an unknown name an error of this spec).
        out.frozen = true;
        state = "Invalid (its spec is invalid)";
      } else if (up->phase == Phase::kSucceeded && !up->submission_id.empty()) {
        auto rec = ledger_.find(name);
        out.runs.emplace(
            name, UpstreamRunOf(up->submission_id, up->attempt.value_or(0),
                                rec == ledger_.end() ? nullptr : &rec->second, *desired_.cluster));
        continue;
      } else {
        out.frozen = out.frozen || up->frozen ||
                     (up->phase == Phase::kInvalid && !policy_.frozen_jobs.contains(name));
        state = UpstreamState(*up);
      }
      if (!out.waiting.empty()) out.waiting += "; ";
      out.waiting.append("on ").append(name).append(": ").append(state);
    }
    return out;
  }

  // A job waiting on an upstream whose identity is unknown: nothing is planned for it, its
  // runs are neither submitted nor stopped (as for an invalid spec).
  void PlanFrozenWaiting(const JobSpec& spec, const Upstreams& up) {
    JobPlan jp;
    jp.name = spec.name;
    jp.spec_path = spec.path;
    jp.phase = Phase::kWaiting;
    jp.frozen = true;
    jp.message = up.waiting + "; frozen until it is valid (nothing submitted or stopped)";
    SetLatestKnown(spec.name, jp);
    AddJobPlan(std::move(jp));
  }

  // The latest run of `name` in Ray, else the ledger's, on `jp`.
  void SetLatestKnown(const std::string& name, JobPlan& jp) const {
    if (const std::span<const RayJob* const> jobs = JobsNamed(name); !jobs.empty()) {
      const RayJob* latest = Latest(jobs);
      jp.observed.emplace(*latest);
      jp.submission_id = latest->submission_id;
      jp.attempt = AttemptOf(*latest, "");
      if (jp.spec_path.empty()) jp.spec_path = latest->Label(kMetaSpecPath);
    } else if (auto rec = ledger_.find(name); rec != ledger_.end()) {
      jp.submission_id = rec->second.submission_id;
      jp.attempt = rec->second.attempt;
      if (jp.spec_path.empty()) jp.spec_path = rec->second.spec_path;
    }
  }

  // A job whose status file cannot be read: frozen, like an invalid spec.
  void PlanFrozen(const std::string& name, const std::string& why) {
    JobPlan jp;
    jp.name = name;
    jp.phase = Phase::kInvalid;
    jp.message = why;
    if (auto it = frozen_spec_paths_.find(name); it != frozen_spec_paths_.end()) {
      jp.spec_path = it->second;
    }
    SetLatestKnown(name, jp);
    if (!jp.spec_path.empty()) frozen_paths_.insert(jp.spec_path);
    AddJobPlan(std::move(jp));
  }

  void PlanInvalid(const InvalidSpec& bad) {
    JobPlan jp;
    jp.name = bad.name;
    jp.spec_path = bad.path;
    jp.phase = Phase::kInvalid;
    jp.message = "spec is invalid; its job is frozen (nothing submitted or stopped)";
    SetLatestKnown(bad.name, jp);
    AddJobPlan(std::move(jp));
  }

  // The ledger's record of the attempt `job` is, or nullptr.
  const AttemptRecord* LedgerAttempt(const std::string& name, const RayJob& job) const {
    auto it = ledger_.find(name);
    return it == ledger_.end() ? nullptr : it->second.FindAttempt(job.submission_id);
  }

  // The head's time at the pass: Ray's times are compared with it (PlanPolicy::ray_now_ms).
  int64_t RayNow() const { return policy_.ray_now_ms != 0 ? policy_.ray_now_ms : policy_.now_ms; }
  // The daemon's time when the head's clock shows `ray_ms`, and the other way round.
  int64_t DaemonTimeOf(int64_t ray_ms) const { return ray_ms - RayNow() + policy_.now_ms; }
  int64_t RayTimeOf(int64_t daemon_ms) const { return daemon_ms - policy_.now_ms + RayNow(); }

  // When the stop already sent to this active run is not yet due again: the time it was sent.
  std::optional<int64_t> PendingStop(const std::string& name, const RayJob& job) const {
    const AttemptRecord* a = LedgerAttempt(name, job);
    if (a == nullptr || !a->stop_sent_ms || !IsActive(job.status)) return std::nullopt;
    if (policy_.now_ms != 0 && policy_.now_ms - *a->stop_sent_ms >= kStopResendAfterMs) {
      return std::nullopt;  // due again
    }
    return a->stop_sent_ms;
  }

  // "stop sent at T; Ray still reports RUNNING", for the Stopping phase.
  static std::string StoppingMessage(std::string_view why, int64_t sent_ms, const RayJob& job) {
    std::string m = std::string(why) + "; stop sent at ";
    m += sent_ms != 0 ? FormatRfc3339Millis(sent_ms) : std::string("an unknown time");
    m += ", Ray still reports " + std::string(RayJobStatusName(job.status));
    return m;
  }

  // Stops `job` unless a stop sent earlier is still pending. Returns the time of the stop that
  // is (or is now being) waited for: the pending one, or now.
  int64_t AddStop(const RayJob& job, const std::string& name, int attempt, StopReason why,
                  std::string reason) {
    if (std::optional<int64_t> sent = PendingStop(name, job)) return *sent;
    if (const AttemptRecord* a = LedgerAttempt(name, job); a != nullptr && a->stop_sent_ms) {
      reason += " (the stop sent at " + FormatRfc3339Millis(*a->stop_sent_ms) +
                " has not taken; sending it again)";
    }
    Action a;
    a.kind = ActionKind::kStop;
    a.name = name;
    a.submission_id = job.submission_id;
    a.attempt = attempt;
    a.stop_reason = why;
    a.reason = std::move(reason);
    a.stopped_status = job.status;
    stops_.push_back(std::move(a));
    return policy_.now_ms;
  }

  // True when `id` is free for `spec` to use: absent from Ray, or ours with the same spec hash.
  bool IdUsable(const std::string& id, const JobSpec& spec, std::string* why) const {
    const RayJob* listed = FindById(id);
    if (listed == nullptr) return true;
    const RayJob& job = *listed;
    const JobOwnership owner = ClassifyJob(job, policy_.owner);
    if (owner == JobOwnership::kForeign) {
      *why = "submission id " + id + " is taken by a run of " + RecordedRepoOf(job) +
             ", another repository using instance " + policy_.owner.instance +
             " on this cluster; not taking it as ours (give each repository its own --instance)";
      return false;
    }
    if (owner == JobOwnership::kDisowned) {
      *why = DisownedMessage(id, policy_.owner.disowned.at(id));
      return false;
    }
    if (!IsOurs(owner)) {
      *why = "submission id " + id + " is taken by a job not managed by " + policy_.owner.instance;
      return false;
    }
    if (!spec.IsCurrentHash(job.LabelView(kMetaSpecHash))) {
      *why = "submission id " + id + " is taken by a run of different content (spec hash " +
             job.Label(kMetaSpecHash, "?") + ", now " + spec.spec_hash + ")";
      if (spec.submission_id) {
        *why += "; a pinned submission_id needs a new value when the spec changes";
      }
      return false;
    }
    return true;
  }

  // What the ledger and Ray know of one spec version's attempts.
  struct VersionAttempts {
    std::map<int, const RayJob*> in_ray;
    std::map<int, const AttemptRecord*> in_ledger;
    std::vector<const RayJob*> older_versions;  // ours, same name, other spec hash
    int Latest() const {
      int latest = -1;
      if (!in_ray.empty()) latest = std::max(latest, in_ray.rbegin()->first);
      if (!in_ledger.empty()) latest = std::max(latest, in_ledger.rbegin()->first);
      return latest;
    }
    const RayJob* RayAttempt(int k) const {
      auto it = in_ray.find(k);
      return it == in_ray.end() ? nullptr : it->second;
    }
    const AttemptRecord* LedgerAttempt(int k) const {
      auto it = in_ledger.find(k);
      return it == in_ledger.end() ? nullptr : it->second;
    }
    // When the run began (DESIGN §3.4, "Deadlines"): Ray's start_time of its first attempt
    // known (attempt 0, unless the ledger has cut it), from Ray when listed, else the ledger's.
    std::optional<int64_t> RunStartMs() const {
      const int first = std::min(in_ray.empty() ? INT_MAX : in_ray.begin()->first,
                                 in_ledger.empty() ? INT_MAX : in_ledger.begin()->first);
      if (const RayJob* job = RayAttempt(first); job != nullptr && job->start_time_ms) {
        return job->start_time_ms;
      }
      const AttemptRecord* a = LedgerAttempt(first);
      return a != nullptr ? a->start_time_ms : std::nullopt;
    }
  };

  VersionAttempts CollectAttempts(const JobSpec& spec, const StatusRecord* rec) const {
    const std::string base = SubmissionIdBase(spec);
    VersionAttempts at;
    for (const RayJob* job : JobsNamed(spec.name)) {
      if (spec.IsCurrentHash(job->LabelView(kMetaSpecHash))) {
        at.in_ray[AttemptOf(*job, base)] = job;
      } else {
        at.older_versions.push_back(job);
      }
    }
    if (rec != nullptr) {
      for (const auto& a : rec->attempts) {
        if (spec.IsCurrentHash(a.spec_hash)) at.in_ledger[a.attempt] = &a;
      }
    }
    return at;
  }

  // A later attempt (a retry, a restore) of a run whose `deadline`, counted from its first
  // attempt (DESIGN §3.4), has passed on the head's clock is not submitted: the next pass would
  // stop it. The run is DeadlineExceeded; a new spec hash (`rerun` included) starts a new run.
  bool PastRunDeadline(const JobSpec& spec, int attempt, JobPlan& jp) const {
    const std::optional<int64_t> deadline = spec.lifecycle().deadline_ms;
    if (!deadline || !run_start_ms_ || policy_.now_ms == 0) return false;
    if (RayNow() < *run_start_ms_ + *deadline) return false;
    jp.phase = Phase::kDeadlineExceeded;
    jp.message = "deadline " + FormatDurationMs(*deadline) +
                 " exceeded (the run's first attempt was submitted at " +
                 FormatRfc3339Millis(*run_start_ms_) + "): attempt " + std::to_string(attempt) +
                 " is not submitted (change the spec, or its rerun token, to start a new run)";
    return true;
  }

  // Adds the submit of `attempt` of `spec` to the plan, or marks `jp` a conflict when its id
  // is taken. True when the submit was planned.
  // A scheduled job's slot runs are submitted while `slot_` names the slot (PlanScheduled).
  bool Submit(const JobSpec& spec, int attempt, std::string reason, JobPlan& jp) {
    if (!upstreams_.waiting.empty()) {
      // `after`: a job it names has no successful current run; nothing starts before it has.
      jp.phase = Phase::kWaiting;
      jp.message = upstreams_.waiting;
      return false;
    }
    if (attempt > 0 && PastRunDeadline(spec, attempt, jp)) return false;
    const std::string id = SubmissionIdForSlot(spec, slot_, attempt);
    std::string why;
    if (!IdUsable(id, spec, &why)) {
      jp.phase = Phase::kConflict;
      jp.message = why;
      jp.submission_id = id;
      return false;
    }
    Action a;
    a.kind = ActionKind::kSubmit;
    a.name = spec.name;
    a.submission_id = id;
    a.attempt = attempt;
    a.spec_path = spec.path;
    a.reason = std::move(reason);
    a.upstream_runs = upstreams_.runs;
    a.slot = slot_;
    submits_.push_back(std::move(a));
    jp.submission_id = id;
    jp.attempt = attempt;
    return true;
  }

  void PlanDesired(const JobSpec& spec) {
    upstreams_ = Upstreams{};
    if (!spec.pipeline().after.empty()) {
      upstreams_ = UpstreamsOf(spec);
      if (upstreams_.frozen) {
        PlanFrozenWaiting(spec, upstreams_);
        upstreams_ = Upstreams{};
        return;
      }
    }
    PlanDesiredNow(spec);
    upstreams_ = Upstreams{};
  }

  // The row of a desired job before its runs are looked at, and its ledger record (`rec`, null
  // when it has none): whether the ledger knew another version of it.
  JobPlan StartDesired(const JobSpec& spec, const StatusRecord*& rec) const {
    JobPlan jp;
    jp.name = spec.name;
    jp.spec_path = spec.path;
    rec = nullptr;
    if (auto it = ledger_.find(spec.name); it != ledger_.end()) rec = &it->second;
    if (rec != nullptr && !rec->spec_hash.empty() && !spec.IsCurrentHash(rec->spec_hash)) {
      jp.spec_changed = true;
      jp.previous_spec_hash = rec->spec_hash;
      const std::string& ran = rec->code.get().tree;
      if (spec.has_code() && !ran.empty() && ran != spec.code().tree_id) {
        jp.notes.mutable_get().code_change =
            DescribeCodeChange(spec.code().folder, ran, spec.code().tree_id, policy_.code_changes);
      }
    }
    return jp;
  }

  // Why an older version's active run is stopped: its spec, or only its code, changed.
  std::string ReplacementReason(const RayJob& old, const JobSpec& spec) const {
    const std::string hashes = old.Label(kMetaSpecHash, "?") + " -> " + spec.spec_hash;
    const std::string old_tree = old.Label(kMetaCodeTree);
    if (spec.has_code() && !old_tree.empty() && old_tree != spec.code().tree_id) {
      return DescribeCodeChange(spec.code().folder, old_tree, spec.code().tree_id,
                                policy_.code_changes) +
             " (spec hash " + hashes + "): stopping the old run";
    }
    return "spec changed (" + hashes + "): stopping the old run";
  }

  void PlanDesiredNow(const JobSpec& spec) {
    if (spec.lifecycle().schedule.has_value()) {
      PlanScheduled(spec, *spec.lifecycle().schedule);
      return;
    }
    const std::string base = SubmissionIdBase(spec);
    const StatusRecord* rec = nullptr;
    JobPlan jp = StartDesired(spec, rec);
    const VersionAttempts at = CollectAttempts(spec, rec);

    // A pinned id (or, in theory, a generated one) already used by something else.
    std::string conflict;
    if (at.in_ray.empty() && !IdUsable(base, spec, &conflict)) {
      jp.phase = Phase::kConflict;
      jp.message = conflict;
      jp.submission_id = base;
      if (const RayJob* listed = FindById(base)) jp.observed.emplace(*listed);
      AddJobPlan(std::move(jp));
      return;  // no stop of the older run either: the person has to resolve the conflict
    }

    // Older versions of this job that are still active are replaced.
    for (const RayJob* old : at.older_versions) {
      if (!IsActive(old->status)) continue;
      AddStop(*old, spec.name, AttemptOf(*old, ""), StopReason::kReplacement,
              ReplacementReason(*old, spec));
    }

    if (at.Latest() < 0) {
      PlanFirstRun(spec, jp);
    } else {
      run_start_ms_ = at.RunStartMs();
      PlanLatestAttempt(spec, at, jp);
      run_start_ms_.reset();
    }
    AddJobPlan(std::move(jp));
  }

  // No attempt of this spec version exists: submit attempt 0 (a rename says so).
  void PlanFirstRun(const JobSpec& spec, JobPlan& jp) {
    if (spec.suspend) {
      jp.phase = Phase::kSuspended;
      jp.message = "suspend: true; nothing submitted";
      return;
    }
    jp.phase = Phase::kPending;
    jp.message = !jp.spec_changed           ? "new job"
                 : jp.code_change().empty() ? "spec changed: submitting the new version"
                                            : jp.code_change() + ": submitting the new version";
    if (!jp.spec_changed && spec.has_code()) jp.message += " (" + CodeSummary(spec.code()) + ")";
    if (auto it = removed_by_hash_.find(spec.spec_hash);
        it != removed_by_hash_.end() && !jp.spec_changed) {
      jp.renamed_from = it->second.first;
      jp.renamed_from_path = it->second.second;
      jp.message = "renamed from " + jp.renamed_from + " (" + jp.renamed_from_path +
                   "); this starts a new run; pin `name: " + jp.renamed_from + "` to keep the run";
    }
    Submit(spec, 0, jp.message, jp);
  }

  // The run's latest attempt (in Ray or in the ledger) decides (DESIGN §3.1); its earlier
  // attempts give the budgets and the deadline's start. REQUIRES: at.Latest() >= 0.
  void PlanLatestAttempt(const JobSpec& spec, const VersionAttempts& at, JobPlan& jp) {
    const int latest = at.Latest();
    const RayJob* job = at.RayAttempt(latest);
    const AttemptRecord* remembered = at.LedgerAttempt(latest);
    if (job == nullptr && remembered == nullptr) return;
    jp.submission_id = job != nullptr ? job->submission_id : remembered->submission_id;
    jp.attempt = latest;
    if (job != nullptr) jp.observed.emplace(*job);
    const RayJobStatus status = job != nullptr ? job->status : remembered->status;
    const std::string message = job != nullptr ? job->message : remembered->message;
    const bool lost = job == nullptr && IsActive(status);
    // A run ray-gitops stopped (or sent a stop) is restored when its spec is desired again,
    // whatever status it ended in (a stopped PENDING run can end FAILED), and never retried.
    // A run that SUCCEEDED finished its work first: it is never re-run.
    if (StoppedByUs(remembered) && status != RayJobStatus::kSucceeded &&
        (lost || IsTerminal(status))) {
      PlanRestore(spec, latest, *remembered, jp);
      return;
    }
    // A run stopped for its deadline stays stopped, whatever it ended in: never retried,
    // never restored (a new spec hash, `rerun` included, starts a new run).
    if (remembered != nullptr && remembered->stop_reason == StopReason::kDeadline &&
        status != RayJobStatus::kSucceeded && (lost || IsTerminal(status))) {
      jp.phase = Phase::kDeadlineExceeded;
      jp.message = jp.submission_id +
                   " was stopped when it exceeded its deadline; it is not retried (change "
                   "the spec, or its rerun token, to start a new run)";
      return;
    }
    if (lost) {
      PlanLost(spec, at, status, jp);
      return;
    }
    switch (status) {
      case RayJobStatus::kPending:
      case RayJobStatus::kRunning:
      case RayJobStatus::kUnknown:
        PlanActive(spec, at, job, status, jp);
        break;
      case RayJobStatus::kSucceeded:
        jp.phase = Phase::kSucceeded;
        jp.message = message;
        break;
      case RayJobStatus::kFailed:
        PlanFailed(spec, at, message, jp);
        break;
      case RayJobStatus::kStopped:
        jp.phase = spec.suspend ? Phase::kSuspended : Phase::kStopped;
        jp.message = "stopped outside ray-gitops; change the spec to start a new run";
        break;
    }
  }

  // True when ray-gitops itself stopped this attempt for a reason a desired spec undoes:
  // suspend, replacement or removal, or any stop it sent (older ledgers name no reason).
  static bool StoppedByUs(const AttemptRecord* a) {
    if (a == nullptr) return false;
    switch (a->stop_reason) {
      case StopReason::kSuspend:
      case StopReason::kRemoval:
      case StopReason::kReplacement:
        return true;
      case StopReason::kDeadline:  // the run's own limit: a spec desired again does not undo it
      case StopReason::kUnknown:   // a newer version's reason: not one a spec undoes
        return false;
      case StopReason::kNone:
        break;
    }
    return a->stop_sent_ms.has_value();
  }

  static std::string StopCause(StopReason reason) {
    switch (reason) {
      case StopReason::kReplacement:
        return "when its spec was replaced";
      case StopReason::kRemoval:
        return "when its spec was removed";
      case StopReason::kSuspend:
        return "for suspend: true";
      case StopReason::kDeadline:
      case StopReason::kNone:
      case StopReason::kUnknown:
        break;
    }
    return "(a stop was sent before it ended)";
  }

  // The spec of a run ray-gitops stopped is desired again (unsuspended, reverted, restored):
  // the next attempt, unless it is suspended now.
  void PlanRestore(const JobSpec& spec, int latest, const AttemptRecord& stopped, JobPlan& jp) {
    if (spec.suspend) {
      jp.phase = Phase::kSuspended;
      jp.message = "suspend: true";
      return;
    }
    const std::string next = "attempt " + std::to_string(latest + 1);
    jp.phase = Phase::kPending;
    if (stopped.stop_reason == StopReason::kSuspend) {
      jp.message = "unsuspended: submitting " + next;
    } else {
      jp.message = "restored: " + stopped.submission_id + " was stopped by ray-gitops " +
                   StopCause(stopped.stop_reason) + "; its spec is desired again: submitting " +
                   next;
    }
    Submit(spec, latest + 1, jp.message, jp);
  }

  // How many attempts of a run before its latest ended in each failure class: the two budgets
  // of DESIGN §3.1, rebuilt on every pass from Ray and the ledger.
  struct Budgets {
    int own = 0;
    int infra = 0;
  };

  // How attempt `job`/`a` of a run ended (either may be null): from Ray when it lists it, else
  // as the ledger recorded it (a record from before classes: FAILED by its error_type, Lost or
  // still active there as infra). An attempt ray-gitops sent a stop has none, whatever it ended
  // in.
  static FailureClass AttemptClass(const RayJob* job, const AttemptRecord* a) {
    if (a != nullptr && (a->stop_reason != StopReason::kNone || a->stop_sent_ms)) {
      return FailureClass::kNone;
    }
    if (job != nullptr) {
      return job->status == RayJobStatus::kFailed ? ClassifyFailure(job->error_type.value_or(""))
                                                  : FailureClass::kNone;
    }
    if (a == nullptr) return FailureClass::kNone;
    if (a->failure_class != FailureClass::kNone) return a->failure_class;
    if (a->phase == Phase::kLost || IsActive(a->status)) return FailureClass::kInfra;
    if (a->status == RayJobStatus::kFailed) return ClassifyFailure(a->ending.get().error_type);
    return FailureClass::kNone;
  }

  static Budgets SpentBefore(const VersionAttempts& at, int latest) {
    std::set<int> earlier;
    for (const auto& [k, job] : at.in_ray) {
      if (k < latest) earlier.insert(k);
    }
    for (const auto& [k, a] : at.in_ledger) {
      if (k < latest) earlier.insert(k);
    }
    Budgets spent;
    for (const int k : earlier) {
      switch (AttemptClass(at.RayAttempt(k), at.LedgerAttempt(k))) {
        case FailureClass::kInfra:
          ++spent.infra;
          break;
        case FailureClass::kOwn:
          ++spent.own;
          break;
        case FailureClass::kNone:
          break;
      }
    }
    return spent;
  }

  // Retries are counted the same way wherever a message mentions them: the earlier attempts of
  // the run that failed by their own doing, plus this one. "attempt 2 (retry 1 of 3)".
  static std::string RetryOf(int attempt, int used, int64_t retries) {
    return "attempt " + std::to_string(attempt) + " (retry " + std::to_string(used + 1) + " of " +
           std::to_string(retries) + ")";
  }
  static std::string NoRetriesLeft(int64_t retries) {
    if (retries == 0) return "no retries left (the spec allows none)";
    return "no retries left (" + std::to_string(retries) + " of " + std::to_string(retries) +
           " used)";
  }

  // The cluster's failure of a run's latest attempt (DESIGN §3.1): what it was, and when its
  // backoff is over.
  struct InfraFailure {
    std::string cause;   // Ray's error_type, or "Lost"
    std::string prefix;  // what the message says before the retry
    std::string since;   // what the backoff counts from: "<id> ended"
    // When the backoff is over, on the daemon's clock; nullopt: the pass's time is unknown.
    std::optional<int64_t> due_ms;
    bool due = false;  // the backoff is over
    Phase waiting = Phase::kPending;
    Phase exhausted = Phase::kFailed;
  };

  // Attempt latest+1 once the backoff is over, while fewer than `infra_retries` earlier
  // attempts of the run (`used`) failed for the cluster.
  void PlanInfraRetry(const JobSpec& spec, int latest, int used, const InfraFailure& f,
                      JobPlan& jp) {
    const std::string budget = std::to_string(spec.infra_retries);
    if (used >= spec.infra_retries) {
      jp.phase = f.exhausted;
      jp.message = f.prefix + "infrastructure retries exhausted (" +
                   (spec.infra_retries == 0 ? std::string("the spec allows none")
                                            : std::to_string(used) + " of " + budget + " used") +
                   ") after " + f.cause;
      return;
    }
    const std::string retrying = f.prefix + "retrying after " + f.cause + ", " +
                                 std::to_string(used + 1) + " of " + budget + ": attempt " +
                                 std::to_string(latest + 1);
    if (!f.due) {
      jp.phase = f.waiting;
      jp.message =
          retrying + " waits " + FormatDurationMs(InfraRetryBackoffMs(used)) + " after " + f.since;
      if (f.due_ms) NoteRecheck(*f.due_ms);
      return;
    }
    jp.phase = Phase::kPending;
    jp.message = retrying + " is submitted";
    Submit(spec, latest + 1, jp.message, jp);
  }

  // The latest attempt is active in the ledger and missing from Ray (the head restarted): an
  // infrastructure failure, whose backoff counts from when a pass first found it lost.
  void PlanLost(const JobSpec& spec, const VersionAttempts& at, RayJobStatus status, JobPlan& jp) {
    const int latest = at.Latest();
    const std::string lost = "Ray no longer knows " + jp.submission_id + " (was " +
                             std::string(RayJobStatusName(status)) + "; the head restarted?)";
    if (spec.suspend) {
      jp.phase = Phase::kSuspended;
      jp.message = lost;
      return;
    }
    const int used = SpentBefore(at, latest).infra;
    InfraFailure f;
    f.cause = "Lost";
    f.prefix = lost + "; ";
    f.since = "it was found lost";
    f.waiting = Phase::kLost;
    f.exhausted = Phase::kLost;
    if (policy_.now_ms != 0) {
      const AttemptRecord* a = at.LedgerAttempt(latest);
      const std::optional<int64_t> found = a != nullptr ? a->ending.get().lost_ms : std::nullopt;
      f.due_ms = found.value_or(policy_.now_ms) + InfraRetryBackoffMs(used);
      f.due = policy_.now_ms >= *f.due_ms;
    }
    PlanInfraRetry(spec, latest, used, f, jp);
  }

  void PlanActive(const JobSpec& spec, const VersionAttempts& at, const RayJob* job,
                  RayJobStatus status, JobPlan& jp) {
    const int latest = at.Latest();
    if (!spec.suspend) {
      jp.phase = PhaseForRayStatus(status);
      jp.message = job != nullptr ? job->message : "";
      if (job != nullptr) CheckDeadline(spec, latest, *job, at.RunStartMs(), jp);
      return;
    }
    jp.phase = Phase::kSuspended;
    jp.message = "suspend: true; stopping the active run";
    if (job != nullptr) {
      const int64_t sent = AddStop(*job, spec.name, latest, StopReason::kSuspend, jp.message);
      jp.phase = Phase::kStopping;
      jp.message = StoppingMessage("suspend: true", sent, *job);
    }
  }

  // An active run past the spec's deadline, counted from Ray's start_time of the run's first
  // attempt (`run_start_ms`; the submission: time spent PENDING and earlier attempts count), is
  // stopped and not retried. One not past it yet makes its due time a time to plan again
  // (Plan::recheck_at_ms). Without the pass's time, nothing. Ray's start_time is on the head's
  // clock: the deadline is too (PlanPolicy::ray_now_ms).
  void CheckDeadline(const JobSpec& spec, int latest, const RayJob& job,
                     std::optional<int64_t> run_start_ms, JobPlan& jp) {
    const std::optional<int64_t> deadline = spec.lifecycle().deadline_ms;
    const std::optional<int64_t> start = run_start_ms ? run_start_ms : job.start_time_ms;
    if (!deadline || !start || policy_.now_ms == 0) return;
    const int64_t due = *start + *deadline;
    if (RayNow() < due) {
      NoteRecheck(DaemonTimeOf(due));
      return;
    }
    const std::string why = "deadline " + FormatDurationMs(*deadline) + " exceeded (submitted at " +
                            FormatRfc3339Millis(*start) + ")";
    const int64_t sent = AddStop(job, spec.name, latest, StopReason::kDeadline,
                                 why + ": stopping the run; it is not retried");
    jp.phase = Phase::kDeadlineExceeded;
    jp.message = StoppingMessage(why, sent, job);
  }

  // The latest attempt FAILED, and ray-gitops sent it no stop it undoes: the cluster's failure
  // spends `infra_retries`, the run's own `retries` (DESIGN §3.1).
  void PlanFailed(const JobSpec& spec, const VersionAttempts& at, const std::string& message,
                  JobPlan& jp) {
    const int latest = at.Latest();
    const RayJob* job = at.RayAttempt(latest);
    const AttemptRecord* remembered = at.LedgerAttempt(latest);
    jp.phase = Phase::kFailed;
    jp.message = message;
    if (spec.suspend) {
      jp.phase = Phase::kSuspended;
      jp.message = "suspend: true; the failed run is not retried";
      return;
    }
    const FailureClass failure = AttemptClass(job, remembered);
    if (failure == FailureClass::kNone) return;  // a stop was sent: never retried
    const Budgets spent = SpentBefore(at, latest);
    if (failure == FailureClass::kInfra) {
      InfraFailure f;
      f.cause = job != nullptr ? job->error_type.value_or("") : remembered->ending.get().error_type;
      f.since = jp.submission_id + " ended";
      const std::optional<int64_t> end =
          job != nullptr ? job->end_time_ms : remembered->end_time_ms;
      if (policy_.now_ms != 0) {
        // Ray's end_time is on the head's clock: so is the backoff.
        const int64_t due_on_head = end.value_or(RayNow()) + InfraRetryBackoffMs(spent.infra);
        f.due_ms = DaemonTimeOf(due_on_head);
        f.due = !end || RayNow() >= due_on_head;
      }
      PlanInfraRetry(spec, latest, spent.infra, f, jp);
    } else if (spent.own < spec.retries) {
      jp.phase = Phase::kPending;
      jp.message =
          jp.submission_id + " failed; retrying as " + RetryOf(latest + 1, spent.own, spec.retries);
      Submit(spec, latest + 1, jp.message, jp);
    }
  }

  // ---- Schedules (DESIGN §3.4) -----------------------------------------------------------

  void NoteRecheck(int64_t at_ms) {
    if (!plan_.recheck_at_ms || at_ms < *plan_.recheck_at_ms) plan_.recheck_at_ms = at_ms;
  }

  // What Ray and the ledger know of a scheduled spec's current version: its runs by slot
  // ("YYYYMMDDHHMM", which sorts as time does), and its runs without a slot (from before the
  // spec had a schedule); the runs of its other versions.
  struct ScheduledRuns {
    std::map<std::string, VersionAttempts, std::less<>> slots;
    std::vector<std::pair<int, const RayJob*>> unslotted;
    std::vector<const RayJob*> older_versions;
  };

  ScheduledRuns CollectSlotRuns(const JobSpec& spec, const StatusRecord* rec) const {
    ScheduledRuns runs;
    for (const RayJob* job : JobsNamed(spec.name)) {
      const std::string_view hash = job->LabelView(kMetaSpecHash);
      if (!spec.IsCurrentHash(hash)) {
        runs.older_versions.push_back(job);
        continue;
      }
      const std::string base = spec.name + "-" + std::string(hash);
      if (std::optional<std::string_view> slot = SlotOfSubmissionId(base, job->submission_id)) {
        runs.slots[std::string(*slot)].in_ray[AttemptOf(*job, base + "-" + std::string(*slot))] =
            job;
      } else {
        runs.unslotted.emplace_back(AttemptOf(*job, base), job);
      }
    }
    if (rec != nullptr) {
      for (const auto& a : rec->attempts) {
        if (!spec.IsCurrentHash(a.spec_hash)) continue;
        if (std::optional<std::string_view> slot =
                SlotOfSubmissionId(spec.name + "-" + a.spec_hash, a.submission_id)) {
          runs.slots[std::string(*slot)].in_ledger[a.attempt] = &a;
        }
      }
    }
    return runs;
  }

  // When the run `job` is an attempt of began: its slot's first attempt's start; else its own.
  static std::optional<int64_t> RunStartOf(const ScheduledRuns& runs, const RayJob& job) {
    for (const auto& [s, at] : runs.slots) {
      for (const auto& [k, listed] : at.in_ray) {
        if (listed == &job) return at.RunStartMs();
      }
    }
    return job.start_time_ms;
  }

  // The active runs of this version other than those of `slot`, with their attempts.
  static std::vector<std::pair<int, const RayJob*>> ActiveOutside(const ScheduledRuns& runs,
                                                                  std::string_view slot) {
    std::vector<std::pair<int, const RayJob*>> active;
    for (const auto& [s, at] : runs.slots) {
      if (s == slot) continue;
      for (const auto& [k, job] : at.in_ray) {
        if (IsActive(job->status)) active.emplace_back(k, job);
      }
    }
    for (const auto& [k, job] : runs.unslotted) {
      if (IsActive(job->status)) active.emplace_back(k, job);
    }
    return active;
  }

  // The job's phase between slots: that of its latest slot run (as Ray, else the ledger,
  // last saw it). False when no slot has run yet.
  static bool ShowLatestSlotRun(const ScheduledRuns& runs, JobPlan& jp) {
    const VersionAttempts* latest_slot = nullptr;
    for (const auto& [slot, at] : runs.slots) {
      if (at.Latest() >= 0) latest_slot = &at;
    }
    if (latest_slot == nullptr) return false;
    const int k = latest_slot->Latest();
    if (const auto in_ray = latest_slot->in_ray.find(k); in_ray != latest_slot->in_ray.end()) {
      const RayJob& job = *in_ray->second;
      jp.observed.emplace(job);
      jp.submission_id = job.submission_id;
      jp.phase = PhaseForRayStatus(job.status);
    } else {
      const AttemptRecord& a = *latest_slot->in_ledger.at(k);
      jp.submission_id = a.submission_id;
      jp.phase = a.phase;
    }
    jp.attempt = k;
    return true;
  }

  static std::string SlotTime(int64_t slot_s) { return FormatRfc3339Seconds(slot_s * 1000); }

  // A slot that got no run: why, as the status record keeps it.
  static std::string SkipReason(const ScheduleFields& schedule, const RayJob* blocking) {
    if (blocking != nullptr && schedule.concurrency == Concurrency::kForbid) {
      return "concurrency forbid: " + blocking->submission_id + " was still active";
    }
    return "missed: not started within starting_deadline " +
           FormatDurationMs(schedule.starting_deadline_ms);
  }

  // The slot before `slot_s`, when it got no run though an earlier slot of this version did
  // (so the spec existed then): skipped, recorded once the next slot has come. Slots before
  // it are never looked at: a daemon down for a day records one, and runs none of them.
  void NotePreviousSlotSkipped(const ScheduleFields& schedule, const ScheduledRuns& runs,
                               int64_t slot_s, JobPlan& jp) const {
    const std::optional<int64_t> previous =
        LatestSlotAtOrBefore(schedule.cron, *schedule.zone, slot_s - 1);
    if (!previous) return;
    const std::string id = SlotIdSuffix(*previous);
    if (runs.slots.contains(id)) return;
    if (runs.slots.empty() || runs.slots.begin()->first > id) return;
    // A run of an earlier slot still active, or ended after the previous slot came (on the
    // head's clock, as its end_time): it held it back.
    const int64_t previous_on_head = RayTimeOf(*previous * 1000);
    const RayJob* blocking = nullptr;
    for (const auto& [s, at] : runs.slots) {
      if (s >= id) break;
      for (const auto& [k, job] : at.in_ray) {
        if (IsActive(job->status) || job->end_time_ms.value_or(0) > previous_on_head) {
          blocking = job;
        }
      }
    }
    jp.notes.mutable_get().skipped_slots.push_back(
        {*previous * 1000, SkipReason(schedule, blocking)});
  }

  // A scheduled job (DESIGN §3.4): the latest slot at or before now gets one run (its id ends
  // in the slot's UTC time), submitted while the slot is younger than starting_deadline, with
  // the usual retries; concurrency decides what an active run of an earlier slot does to it.
  void PlanScheduled(const JobSpec& spec, const ScheduleFields& schedule) {
    const StatusRecord* rec = nullptr;
    JobPlan jp = StartDesired(spec, rec);
    if (schedule.zone == nullptr) {
      // Never planned without its zone (adapters::ResolveScheduleZones): frozen like an
      // invalid spec.
      jp.phase = Phase::kInvalid;
      jp.message = "timezone \"" + schedule.timezone +
                   "\" is not loaded; the job is frozen (nothing submitted or stopped)";
      SetLatestKnown(spec.name, jp);
      frozen_paths_.insert(spec.path);
      AddJobPlan(std::move(jp));
      return;
    }
    const ScheduledRuns runs = CollectSlotRuns(spec, rec);
    for (const RayJob* old : runs.older_versions) {
      if (!IsActive(old->status)) continue;
      AddStop(*old, spec.name, AttemptOf(*old, ""), StopReason::kReplacement,
              ReplacementReason(*old, spec));
    }
    if (spec.suspend) {
      PlanScheduledSuspended(spec, runs, jp);
    } else if (policy_.now_ms <= 0) {
      if (!ShowLatestSlotRun(runs, jp)) jp.phase = Phase::kPending;
      jp.message = "the pass's time is unknown: no slot is submitted";
    } else {
      PlanSlot(spec, schedule, runs, jp);
    }
    AddJobPlan(std::move(jp));
  }

  void PlanScheduledSuspended(const JobSpec& spec, const ScheduledRuns& runs, JobPlan& jp) {
    ShowLatestSlotRun(runs, jp);
    jp.phase = Phase::kSuspended;
    jp.message = "suspend: true; no slot is submitted";
    int64_t sent = 0;
    const RayJob* stopped = nullptr;
    for (const auto& [k, job] : ActiveOutside(runs, "")) {
      sent = std::max(sent, AddStop(*job, spec.name, k, StopReason::kSuspend,
                                    "suspend: true; stopping the active run"));
      stopped = job;
    }
    if (stopped != nullptr) {
      jp.phase = Phase::kStopping;
      jp.message = StoppingMessage("suspend: true", sent, *stopped);
    }
  }

  void PlanSlot(const JobSpec& spec, const ScheduleFields& schedule, const ScheduledRuns& runs,
                JobPlan& jp) {
    const int64_t now_s = policy_.now_ms / 1000;
    if (std::optional<int64_t> next = NextSlotAfter(schedule.cron, *schedule.zone, now_s)) {
      jp.notes.mutable_get().next_slot_ms = *next * 1000;
      NoteRecheck(*next * 1000);
    }
    const std::optional<int64_t> latest =
        LatestSlotAtOrBefore(schedule.cron, *schedule.zone, now_s);
    if (!latest) {
      if (!ShowLatestSlotRun(runs, jp)) jp.phase = Phase::kPending;
      jp.message = "no slot of \"" + schedule.cron_text + "\" in the last eight years";
      return;
    }
    const std::string slot = SlotIdSuffix(*latest);
    // Runs of earlier slots still active: their deadline applies as to any run.
    std::vector<std::pair<int, const RayJob*>> active;
    for (const auto& [k, job] : ActiveOutside(runs, slot)) {
      JobPlan scratch;
      CheckDeadline(spec, k, *job, RunStartOf(runs, *job), scratch);
      if (scratch.phase != Phase::kDeadlineExceeded) active.emplace_back(k, job);
    }
    NotePreviousSlotSkipped(schedule, runs, *latest, jp);
    if (auto it = runs.slots.find(slot); it != runs.slots.end()) {
      // The slot has its run: the usual rules (retries, lost, deadline, restore) per slot.
      slot_ = slot;
      run_start_ms_ = it->second.RunStartMs();
      PlanLatestAttempt(spec, it->second, jp);
      run_start_ms_.reset();
      slot_.clear();
      return;
    }
    PlanSlotWithoutRun(spec, schedule, runs, *latest, active, jp);
  }

  // The latest slot has no run yet: missed, waiting (forbid), or submitted now.
  void PlanSlotWithoutRun(const JobSpec& spec, const ScheduleFields& schedule,
                          const ScheduledRuns& runs, int64_t slot_s,
                          const std::vector<std::pair<int, const RayJob*>>& active, JobPlan& jp) {
    const std::string slot = SlotIdSuffix(slot_s);
    const int64_t slot_ms = slot_s * 1000;
    const RayJob* blocking = active.empty() ? nullptr : active.front().second;
    if (policy_.now_ms - slot_ms >= schedule.starting_deadline_ms) {
      // Missed: never run late. The phase stays that of the latest slot run.
      const std::string reason = SkipReason(schedule, blocking);
      if (ShowLatestSlotRun(runs, jp)) {
        jp.message = "slot " + SlotTime(slot_s) + " " + reason;
        jp.notes.mutable_get().skipped_slots.push_back({slot_ms, reason});
      } else {
        jp.phase = Phase::kPending;
        jp.message = "waiting for its first slot";
      }
      return;
    }
    if (blocking != nullptr && schedule.concurrency == Concurrency::kForbid) {
      ShowLatestSlotRun(runs, jp);
      jp.message = "slot " + SlotTime(slot_s) + " waits: concurrency forbid and " +
                   blocking->submission_id +
                   " is still active (the slot is skipped unless it starts by " +
                   FormatRfc3339Seconds(slot_ms + schedule.starting_deadline_ms) + ")";
      NoteRecheck(slot_ms + schedule.starting_deadline_ms);
      return;
    }
    if (!upstreams_.waiting.empty()) {
      // `after`: the slot's run waits for its upstreams (nothing is replaced meanwhile); past
      // its starting deadline the slot is missed like any other.
      jp.phase = Phase::kWaiting;
      jp.message = upstreams_.waiting;
      NoteRecheck(slot_ms + schedule.starting_deadline_ms);
      return;
    }
    std::string reason = "slot " + SlotTime(slot_s);
    if (blocking != nullptr && schedule.concurrency == Concurrency::kReplace) {
      for (const auto& [k, job] : active) {
        AddStop(*job, spec.name, k, StopReason::kReplacement,
                "concurrency replace: slot " + SlotTime(slot_s) + " replaces the run");
      }
      reason += " (replacing " + blocking->submission_id + ": concurrency replace)";
    } else if (blocking != nullptr) {
      reason += " (beside " + blocking->submission_id + ": concurrency allow)";
    }
    jp.phase = Phase::kPending;
    jp.message = reason;
    slot_ = slot;
    Submit(spec, 0, reason, jp);
    slot_.clear();
  }

  void PlanRemoved(const std::string& name) {
    JobPlan jp;
    jp.name = name;
    jp.phase = Phase::kRemoved;
    const StatusRecord* rec = nullptr;
    if (auto it = ledger_.find(name); it != ledger_.end()) {
      rec = &it->second;
      jp.spec_path = rec->spec_path;
      jp.submission_id = rec->submission_id;
      jp.attempt = rec->attempt;
    }
    std::vector<const RayJob*> active;
    if (const std::span<const RayJob* const> jobs = JobsNamed(name); !jobs.empty()) {
      for (const RayJob* job : jobs) {
        if (jp.spec_path.empty()) jp.spec_path = job->Label(kMetaSpecPath);
        if (IsActive(job->status)) active.push_back(job);
      }
      const RayJob* latest = Latest(jobs);
      jp.observed.emplace(*latest);
      jp.submission_id = latest->submission_id;
      jp.attempt = AttemptOf(*latest, "");
    }
    // A run whose spec file is now unreadable is frozen, whatever its name was.
    for (const RayJob* job : active) {
      if (frozen_paths_.contains(job->LabelView(kMetaSpecPath))) {
        jp.phase = Phase::kInvalid;
        jp.message = "its spec file is invalid; frozen";
        AddJobPlan(std::move(jp));
        return;
      }
    }
    const bool keep = rec != nullptr && rec->on_remove == OnRemove::kKeep;
    if (active.empty() && rec == nullptr) {
      return;  // its end is recorded (or nothing was): nothing left to plan or to show
    }
    if (active.empty()) {
      // The record stays: a revert that restores the spec restores the run we stopped.
      jp.message = "spec removed; no active run";
    } else if (keep) {
      jp.message = "spec removed; on_remove: keep leaves " + std::to_string(active.size()) +
                   " run(s) running";
    } else {
      jp.message = "spec removed; stopping its active run";
      int64_t sent = 0;
      for (const RayJob* job : active) {
        sent = std::max(sent, AddStop(*job, name, AttemptOf(*job, ""), StopReason::kRemoval,
                                      "spec removed; stopping its active run"));
      }
      jp.phase = Phase::kStopping;
      jp.message = StoppingMessage("spec removed", sent, *Latest(active));
    }
    AddJobPlan(std::move(jp));
  }

  void ApplyGuards() {
    const int stops = static_cast<int>(stops_.size());
    int active_ours = 0;
    for (const RayJob* job : ours_jobs_) active_ours += IsActive(job->status) ? 1 : 0;
    std::string reason;
    if (stops > policy_.max_stops) {
      reason = "the plan would stop " + std::to_string(stops) + " jobs, more than --max-stops " +
               std::to_string(policy_.max_stops);
    } else if (!policy_.max_stops_explicit && desired_.jobs.empty() &&
               policy_.desired_elsewhere == 0 && stops > 0 && stops == active_ours) {
      reason = "the desired state is empty and the plan would stop every active job (" +
               std::to_string(stops) + ")";
    }
    if (reason.empty()) return;
    plan_.blocked = true;
    plan_.blocked_reason = reason + "; stopping none (run sync --max-stops N to override)";
    std::set<std::string, std::less<>> names;
    for (const auto& a : stops_) names.insert(a.name);
    stops_.clear();
    // A replacement is held back with the stop it needs: never two versions side by side.
    std::erase_if(submits_, [&](const Action& a) { return names.contains(a.name); });
    for (auto& jp : plan_.jobs) {
      if (!names.contains(jp.name)) continue;
      jp.phase = Phase::kBlocked;
      jp.message = plan_.blocked_reason;
    }
  }

  void Finish() {
    auto by_name = [](const Action& a, const Action& b) {
      return std::tie(a.name, a.submission_id) < std::tie(b.name, b.submission_id);
    };
    std::sort(stops_.begin(), stops_.end(), by_name);
    std::sort(submits_.begin(), submits_.end(), by_name);
    plan_.actions = std::move(stops_);
    plan_.actions.insert(plan_.actions.end(), submits_.begin(), submits_.end());
    std::sort(plan_.jobs.begin(), plan_.jobs.end(),
              [](const JobPlan& a, const JobPlan& b) { return a.name < b.name; });
  }

  const DesiredState& desired_;
  const Ledger& ledger_;
  const PlanPolicy& policy_;
  Plan plan_;
  // The listed job of `id` (the last listed, if Ray lists one twice), or nullptr.
  const RayJob* FindById(std::string_view id) const {
    auto after =
        std::upper_bound(by_id_.begin(), by_id_.end(), id,
                         [](std::string_view key, const auto& e) { return key < e.first; });
    if (after == by_id_.begin() || std::prev(after)->first != id) return nullptr;
    return std::prev(after)->second;
  }

  // Our listed jobs named `name`, in the order Ray listed them (empty when there are none).
  std::span<const RayJob* const> JobsNamed(std::string_view name) const {
    const auto [lo, hi] = std::equal_range(ours_names_.begin(), ours_names_.end(), name);
    return {ours_jobs_.data() + (lo - ours_names_.begin()), static_cast<size_t>(hi - lo)};
  }

  // Sorted arrays of views into Ray's jobs, which outlive the planner: at 50,000 jobs, maps
  // of copied ids and names held about 13 MB, these 3 MB.
  std::vector<std::pair<std::string_view, const RayJob*>> by_id_;  // every listed submission
  std::vector<std::string_view> ours_names_;                       // the names of our jobs, sorted
  std::vector<const RayJob*> ours_jobs_;  // ours_jobs_[i] is named ours_names_[i]
  std::set<std::string, std::less<>> frozen_paths_;
  std::map<std::string, std::string, std::less<>> frozen_spec_paths_;  // name -> spec path
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> removed_by_hash_;
  std::vector<Action> stops_;
  std::vector<Action> submits_;
  // Upstream name (named in some `after`; views into the desired state) -> index in
  // plan_.jobs of its row, once planned (kNotPlanned before).
  static constexpr size_t kNotPlanned = static_cast<size_t>(-1);
  std::unordered_map<std::string_view, size_t> planned_;
  Upstreams upstreams_;  // of the spec being planned (PlanDesired)
  std::string slot_;     // the slot Submit submits for, while a scheduled job's slot is planned
  // When the run being planned began (VersionAttempts::RunStartMs), while its latest attempt is
  // planned: a later attempt is not submitted past the run's deadline (PastRunDeadline).
  std::optional<int64_t> run_start_ms_;
};

}  // namespace

Plan PlanActions(const DesiredState& desired, const std::vector<RayJob>& observed,
                 const Ledger& ledger, const PlanPolicy& policy) {
  return Planner(desired, observed, ledger, policy).Run();
}

}  // namespace rg::core
