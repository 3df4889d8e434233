#include "reconciler/engine/reconcile_pass.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "reconciler/core/code_package.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/pending_reason.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/render.h"
#include "reconciler/core/status_update.h"
#include "reconciler/engine/adoption_check.h"
#include "reconciler/engine/finished_runs.h"
#include "reconciler/engine/head_clock.h"
#include "reconciler/engine/job_secrets.h"
#include "reconciler/engine/pass_memo.h"
#include "reconciler/engine/pass_steps.h"
#include "reconciler/engine/status_commit.h"

namespace rg::engine {

namespace {

void AddError(PassResult& result, core::Error error) {
  ++result.errors_by_kind[error.kind()];
  result.errors.push_back(std::move(error));
}

core::Error Prefixed(const core::Error& e, const std::string& what) {
  return {e.kind(), what + ": " + e.message()};
}

std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

core::Error Redacted(const core::Error& e, const core::Redactor& redactor) {
  return {e.kind(), redactor.Apply(e.message())};
}

// Everything a pass returns is redacted here, in one place, whatever sink it goes to next
// (plan formats, logs, the daemon's page and JSON API).
void RedactResult(PassResult& r) {
  const core::Redactor& x = r.redactor;
  for (core::JobPlan& jp : r.plan.jobs) {
    jp.message = x.SafeMessage(jp.message);
    if (jp.observed) jp.observed->message = x.SafeMessage(jp.observed->message);
  }
  for (core::Action& a : r.plan.actions) a.reason = x.Apply(a.reason);
  for (core::RayJob& job : r.plan.unmanaged) job.message = x.SafeMessage(job.message);
  for (core::RayJob& job : r.plan.foreign) job.message = x.SafeMessage(job.message);
  r.plan.blocked_reason = x.Apply(r.plan.blocked_reason);
  for (ActionOutcome& o : r.outcomes) {
    o.action.reason = x.Apply(o.action.reason);
    if (o.error) o.error = Redacted(*o.error, x);
    o.artifact_error = x.Apply(o.artifact_error);
  }
  for (std::string& t : r.transitions) t = x.Apply(t);
  for (core::Diagnostic& d : r.diagnostics) d.message = x.Apply(d.message);
  for (core::Error& e : r.errors) e = Redacted(e, x);
  for (Warning& w : r.warnings) w.message = OneLine(x.Apply(w.message));
}

}  // namespace

// Whose runs are ours (docs/operations.md): the caller's instance and --previous-repo URLs, and the
// repository the snapshot was read from (unless the caller named one).
core::Ownership OwnershipFor(const core::Ownership& given, const ports::DesiredSnapshot& snapshot) {
  core::Ownership owner = given;
  if (owner.repo.empty()) owner.repo = core::RepoIdentity(snapshot.repo_url);
  for (const std::string& alias : snapshot.repo_aliases) {
    std::string identity = core::RepoIdentity(alias);
    if (!identity.empty() && identity != owner.repo) owner.aliases.push_back(std::move(identity));
  }
  return owner;
}

namespace {

// One warning per other repository whose runs carry our instance.
void AddForeignJobWarnings(const core::Plan& plan, const std::string& instance,
                           PassResult& result) {
  for (const core::ForeignRepository& other : core::GroupForeignJobs(plan.foreign)) {
    result.warnings.push_back(
        {std::string(kWarnForeignJobs), core::ForeignJobsMessage(instance, other)});
  }
}

// One warning per invalid spec and one for an invalid cluster file: a job's
// problem shows on that job and in the warnings, never as an unready daemon.
void AddDesiredStateWarnings(const core::DesiredState& state, PassResult& result) {
  if (!state.ClusterValid()) {
    std::string first = state.cluster_diagnostics.empty()
                            ? std::string("the cluster file is missing or invalid")
                            : state.cluster_diagnostics.front().ToString();
    result.warnings.push_back(
        {std::string(kWarnInvalidCluster),
         first + "; nothing is submitted or stopped until the cluster file is fixed"});
  }
  for (const core::InvalidSpec& bad : state.invalid) {
    std::string message = bad.path + ": job " + bad.name +
                          " is frozen (nothing submitted or stopped) until its spec is fixed";
    if (!bad.diagnostics.empty()) message += ": " + bad.diagnostics.front().message;
    result.warnings.push_back({std::string(kWarnInvalidSpec), std::move(message)});
  }
}

// Why the job of an unreadable status file is frozen, for its plan row and its warning.
std::string FrozenByStatusMessage(const ports::SkippedStatusFile& file) {
  return "status file " + file.path + " cannot be read (" + OneLine(file.problem) +
         "); the job is frozen (nothing submitted or stopped) until the file is fixed or "
         "deleted";
}

void AddSkippedFileWarnings(const std::vector<ports::SkippedStatusFile>& skipped,
                            PassResult& result) {
  for (const ports::SkippedStatusFile& file : skipped) {
    std::string message = file.name.empty()
                              ? "status file " + file.path + " is not a status record (" +
                                    OneLine(file.problem) + "); skipped"
                              : FrozenByStatusMessage(file);
    result.warnings.push_back({std::string(kWarnUnreadableStatus), std::move(message)});
  }
}

// A network failure, a timeout or refused credentials: the other side cannot be reached.
bool CannotReach(const core::Error& e) { return e.IsTransient() || e.IsUnauthorized(); }

// Ray cannot be listed: the ledger's records, for the daemon to show as the last known jobs.
// Best effort: a ledger that cannot be read leaves the list empty.
void KeepLedgerRecords(const ReconcileDeps& deps, const ReconcileOptions& options,
                       const core::DesiredState& state, PassResult& result) {
  if (deps.store == nullptr || !state.cluster) return;
  ports::LedgerScope scope;
  scope.instance = options.policy.owner.instance;
  scope.ray_cluster = core::RayClusterName(*state.cluster, options.ray_address);
  core::Result<core::Ledger> read = deps.store->ReadLedger(scope);
  if (!read.ok()) return;
  for (auto& [name, record] : *read) {
    RedactRecord(record, result.redactor);
    result.ledger_records.push_back(std::move(record));
  }
}

// Ray's job list and the ledger (nullopt without a status store), as steps 2 and 3 read them.
struct ObservedAndLedger {
  core::Result<std::vector<core::RayJob>> observed = std::vector<core::RayJob>{};
  std::optional<core::Result<core::Ledger>> ledger;
};

// The ledger is not read when Ray cannot be listed (the pass stops there). With overlap_reads
// the list is read on a thread of its own while this one reads the ledger.
ObservedAndLedger ReadObservedAndLedger(const ReconcileDeps& deps, const ReconcileOptions& options,
                                        const ports::LedgerScope& scope) {
  ObservedAndLedger read;
  if (options.overlap_reads && deps.store != nullptr) {
    std::future<core::Result<std::vector<core::RayJob>>> listing =
        std::async(std::launch::async, [&deps]() { return deps.server->List(); });
    read.ledger = deps.store->ReadLedger(scope);
    read.observed = listing.get();
    if (!read.observed.ok()) read.ledger.reset();
    return read;
  }
  read.observed = deps.server->List();
  if (read.observed.ok() && deps.store != nullptr) read.ledger = deps.store->ReadLedger(scope);
  return read;
}

// The values of every secret the desired state declares, into the pass's redactor
// (engine/job_secrets.h). A dry run (`plan`) reads no value.
void ReadDeclaredSecrets(const ReconcileDeps& deps, const ReconcileOptions& options, PassInputs& in,
                         PassResult& result) {
  in.secret_values = std::make_shared<PassSecretValues>(options.dry_run ? nullptr : deps.secrets);
  if (!options.dry_run) {
    RedactDeclaredSecrets(in.snapshot.state, *in.secret_values, result.redactor);
  }
}

// Steps 1 to 3: the desired state, Ray's jobs and the ledger. nullopt, with the reason on
// `result`, when the pass cannot go on.
std::optional<PassInputs> ReadInputs(const ReconcileDeps& deps, const ReconcileOptions& options,
                                     PassResult& result) {
  result.warnings.clear();
  core::Result<ports::DesiredSnapshot> loaded = deps.source->Load(options.ref);
  ++result.loads;
  if (!loaded.ok()) {
    AddError(result, Prefixed(loaded.error(), "cannot read the desired state at " + options.ref));
    if (CannotReach(loaded.error())) result.unreachable = "Git";
    return std::nullopt;
  }
  if (deps.after_load) deps.after_load();
  PassInputs in;
  in.snapshot = std::move(*loaded);
  in.owner = OwnershipFor(options.policy.owner, in.snapshot);
  // A non-default instance's ids take its name in, a job with `after` its upstreams' hashes
  // (docs/jobspec.md).
  core::BindDesiredState(in.snapshot.state, in.owner.instance);
  result.spec_commit = in.snapshot.commit;
  result.diagnostics = in.snapshot.state.AllDiagnostics();
  result.redactor.AddDesiredState(in.snapshot.state);
  AddDesiredStateWarnings(in.snapshot.state, result);
  if (!in.snapshot.state.ClusterValid()) {
    // Without a valid cluster file nothing can be planned; not even status is recorded.
    AddError(result, core::Error::InvalidInput("the cluster file is invalid; nothing was done"));
    return std::nullopt;
  }
  // Before Ray's messages are read: a value a driver printed is redacted from them too.
  ReadDeclaredSecrets(deps, options, in, result);
  if (options.digest_key) deps.server->DigestListsWith(*options.digest_key);
  ports::LedgerScope scope;
  scope.instance = options.policy.owner.instance;
  scope.ray_cluster = core::RayClusterName(*in.snapshot.state.cluster, options.ray_address);
  ObservedAndLedger read = ReadObservedAndLedger(deps, options, scope);
  if (!read.observed.ok()) {
    AddError(result, Prefixed(read.observed.error(), "cannot list the jobs in Ray"));
    result.unreachable = "Ray";
    KeepLedgerRecords(deps, options, in.snapshot.state, result);
    return std::nullopt;
  }
  in.observed = std::move(*read.observed);
  in.head_now_ms = deps.server->HeadNowMs();
  in.head_clock_offset_ms = deps.server->HeadClockOffsetMs();
  if (options.digest_key) {
    result.ray_digest = deps.server->ListedDigest(in.observed, *options.digest_key);
  }
  SanitizeJobs(in.observed, result.redactor);
  if (read.ledger) {
    if (!read.ledger->ok()) {
      // Without the ledger a finished run could be taken for a new one: act on nothing.
      AddError(result, Prefixed(read.ledger->error(), "cannot read the status ledger"));
      if (CannotReach(read.ledger->error())) result.unreachable = "Git";
      return std::nullopt;
    }
    in.ledger = std::move(**read.ledger);
    in.skipped = deps.store->SkippedFiles();
    AddSkippedFileWarnings(in.skipped, result);
  }
  return in;
}

}  // namespace

void SanitizeJobs(std::vector<core::RayJob>& jobs, const core::Redactor& redactor) {
  for (core::RayJob& job : jobs) {
    job.message = redactor.SafeMessage(job.message);
    std::string().swap(job.entrypoint);
    job.driver_node_id.reset();
  }
}

std::map<std::string, std::string> RunsFromNewerCommits(ports::DesiredStateSource& source,
                                                        const PassInputs& in) {
  std::map<std::string, std::string> newer;
  std::set<std::string> checked;
  for (const core::RayJob& job : in.observed) {
    // Runs of ours only: another repository's commits are not in this one's history.
    if (!core::IsOurs(core::ClassifyJob(job, in.owner))) continue;
    const std::string commit = job.Label(core::kMetaCommit);
    if (commit.empty() || commit == in.snapshot.commit || !checked.insert(commit).second) continue;
    const ports::CommitRelation relation = source.Relate(commit, in.snapshot.commit);
    if (relation == ports::CommitRelation::kDescendant ||
        relation == ports::CommitRelation::kUnknown) {
      newer.emplace(commit, job.submission_id);
    }
  }
  return newer;
}

namespace {

std::string ShortId(const std::string& commit) { return commit.substr(0, 12); }

void ReportStale(const std::map<std::string, std::string>& newer, const std::string& commit,
                 PassResult& result) {
  const auto& [newer_commit, run] = *newer.begin();
  result.stale = true;
  AddError(result, core::Error::Transient(
                       "stale view: run " + run + " was submitted from commit " +
                       ShortId(newer_commit) + ", which commit " + ShortId(commit) +
                       " does not include, and each of " + std::to_string(result.loads) +
                       " fresh loads found a newer one; nothing was done (retrying soon)"));
}

// Steps 1 to 3, again on a fresh load while a run of ours comes from a newer commit than the
// view (docs/reconcile.md), while the pass has reloads left (result.loads counts them, the tip
// check's restarts included). nullopt when the pass stops: an error, or a stale view. `seen`:
// the commits found newer in an earlier round; one still not included after that fresh fetch
// was removed from the branch (a force push, or it moved back) and the branch is the truth.
std::optional<PassInputs> ReadCurrentInputs(const ReconcileDeps& deps,
                                            const ReconcileOptions& options,
                                            std::set<std::string>& seen, PassResult& result) {
  for (;;) {
    std::optional<PassInputs> in = ReadInputs(deps, options, result);
    if (!in) return std::nullopt;
    std::map<std::string, std::string> newer = RunsFromNewerCommits(*deps.source, *in);
    std::erase_if(newer, [&](const auto& entry) { return seen.contains(entry.first); });
    if (newer.empty()) return in;
    if (result.loads > kMaxStaleReloads) {
      ReportStale(newer, in->snapshot.commit, result);
      return std::nullopt;
    }
    for (const auto& [commit, run] : newer) seen.insert(commit);
  }
}

// A pass that starts over, or stops, after its tip check: nothing of the round that planned is
// kept but what it cost (its loads) and the restarts so far.
PassResult AfterTipCheck(const ReconcileOptions& options, PassResult& planned) {
  PassResult next;
  next.redactor = options.secrets;
  next.loads = planned.loads;
  next.tip_moves = std::move(planned.tip_moves);
  return next;
}

// The tip check's answer when it does not let the pass proceed. True: start over on the new
// tip. False: the pass stops, applying nothing: the remote could not be asked, or the branch
// moved again after every reload (Stale).
bool StartOverAfterTipCheck(const ReconcileOptions& options, TipCheck check, PassResult& result) {
  result = AfterTipCheck(options, result);
  if (check.error) {
    if (CannotReach(*check.error)) result.unreachable = "Git";
    AddError(result, std::move(*check.error));
    return false;
  }
  const std::string summary = TipMovedSummary(*check.moved);
  result.tip_moves.push_back(std::move(*check.moved));
  if (result.loads <= kMaxStaleReloads) return true;
  result.stale = true;
  AddError(result, core::Error::Transient("stale view: " + summary +
                                          " before the pass's stops; the branch moved on after " +
                                          "each of " + std::to_string(result.loads) +
                                          " fresh loads; nothing was done (retrying soon)"));
  return false;
}

// Ray's jobs as the pass last saw them, and a view of them by submission id (what the records
// are built from). The view points into the jobs: 50 bytes a job, where a map of moved jobs
// was 400, and held with the listed array during the move.
struct ObservedJobs {
  std::vector<core::RayJob> listed;     // as listed (after the actions, when listed again)
  std::deque<core::RayJob> read_again;  // a narrow pass's runs read one by one
  core::RayJobsById by_id;

  explicit ObservedJobs(std::vector<core::RayJob> jobs) { Relist(std::move(jobs)); }
  // Not copied or moved: a copy's views would point into the original's jobs.
  ObservedJobs(const ObservedJobs&) = delete;
  ObservedJobs& operator=(const ObservedJobs&) = delete;
  ObservedJobs(ObservedJobs&&) = delete;
  ObservedJobs& operator=(ObservedJobs&&) = delete;
  ~ObservedJobs() = default;

  void Release() { Relist({}); }

  void Relist(std::vector<core::RayJob> jobs) {
    by_id.clear();
    read_again.clear();
    listed = std::move(jobs);
    for (const core::RayJob& job : listed) {
      if (!job.submission_id.empty()) by_id.insert_or_assign(job.submission_id, &job);
    }
  }
};

// Ray's view after a pass's actions, read one by one (a few GETs where a listing reads every
// job): each run acted on, and with `seen_too` (a narrow pass, which saw only its jobs' runs)
// each run it saw. A run that cannot be read keeps the view from before the actions; one Ray
// no longer has is dropped.
void ObserveRunsAgain(ports::JobServer& server, const PassResult& result, ObservedJobs& jobs,
                      bool seen_too) {
  std::set<std::string, std::less<>> ids;
  if (seen_too) {
    for (const auto& [id, job] : jobs.by_id) ids.emplace(id);
  }
  for (const ActionOutcome& o : result.outcomes) ids.insert(o.action.submission_id);
  for (const std::string& id : ids) {
    core::Result<core::RayJob> job = server.Get(id);
    if (job.ok()) {
      job->message = result.redactor.SafeMessage(job->message);
      job->submission_id = id;
      const core::RayJob& kept = jobs.read_again.emplace_back(std::move(*job));
      jobs.by_id.insert_or_assign(kept.submission_id, &kept);
    } else if (job.error().IsNotFound()) {
      jobs.by_id.erase(id);
    }
  }
}

// A run read again by a GET costs about as much as a few jobs of a listing (on the fake head
// and on a real one): below one action per this many jobs listed, a full pass reads the runs
// it acted on one by one instead of listing every job again.
constexpr size_t kListedPerRunReadAgain = 16;

// Step 5: the plan's actions, then Ray's view after them (for the records; the view from
// before the actions stays in `ray_jobs` when the second listing fails).
// What the submits send: the specs, and the secrets' values they deliver.
struct SubmitInputs {
  const ports::DesiredSnapshot& snapshot;
  const SubmitSecrets& secrets;
};

void ApplyAndObserve(const ReconcileDeps& deps, const ReconcileOptions& options,
                     const SubmitInputs& inputs, const NameSet* only, const PackageOwners& packages,
                     PassResult& result, ObservedJobs& ray_jobs) {
  const ports::DesiredSnapshot& snapshot = inputs.snapshot;
  ApplyOptions apply;
  apply.secrets = &inputs.secrets;
  apply.owner = options.policy.owner;
  apply.parallelism = options.parallelism;
  apply.ray_address = options.ray_address;
  apply.stop_requested = options.stop_requested;
  // Read here, on the pass's thread: the submits run on several, and the source is not
  // thread-safe.
  std::map<std::string, std::string, std::less<>> texts;
  if (deps.artifacts != nullptr && deps.source != nullptr) {
    for (const core::Action& action : result.plan.actions) {
      if (action.kind != core::ActionKind::kSubmit || texts.contains(action.spec_path)) continue;
      texts.emplace(action.spec_path, deps.source->SpecText(snapshot, action.spec_path));
    }
    apply.spec_texts = &texts;
  }
  // Code packages are zipped from the source's objects, once per tree and pass.
  CodeUploader code(
      [&deps](const std::string& tree_id) -> core::Result<std::string> {
        if (deps.source == nullptr) {
          return core::Error::Fatal("no desired-state source to pack from");
        }
        return deps.source->CodeZip(tree_id);
      },
      packages.known, *packages.recorded_trees);
  apply.code = &code;
  const auto applying = std::chrono::steady_clock::now();
  result.outcomes =
      ApplyPlan(result.plan, snapshot, *deps.server, deps.server_factory, deps.artifacts, apply);
  if (!result.outcomes.empty()) {
    result.apply_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - applying)
                          .count();
  }
  result.code = code.stats();
  result.actions_not_started =
      static_cast<int>(result.plan.actions.size() - result.outcomes.size());
  for (const auto& o : result.outcomes) {
    if (!o.ok) {
      AddError(result, Prefixed(*o.error, o.action.name + " (" + o.action.submission_id + ")"));
    }
  }
  if (only != nullptr) {
    ObserveRunsAgain(*deps.server, result, ray_jobs, /*seen_too=*/true);
    return;
  }
  // A few actions among many jobs: the runs acted on are read again, not every job (a `sync`
  // after a one-file change at 10,000 jobs listed them all twice). The other jobs keep the
  // view the plan was made from, as a narrow pass's do.
  if (result.outcomes.size() * kListedPerRunReadAgain <= ray_jobs.by_id.size()) {
    ObserveRunsAgain(*deps.server, result, ray_jobs, /*seen_too=*/false);
    return;
  }
  core::Result<std::vector<core::RayJob>> after = deps.server->List();
  if (after.ok()) {
    SanitizeJobs(*after, result.redactor);
    ray_jobs.Relist(std::move(*after));
  }
}

// The cluster's resources, read once and only when some planned run is PENDING, for the
// record to say what it waits for (core::ExplainPending). Unreadable: nullopt, and the pass
// goes on as if it had not asked.
std::optional<core::ClusterResources> PendingRunResources(const ReconcileDeps& deps,
                                                          const core::Plan& plan,
                                                          const core::RayJobsById& ray_jobs) {
  if (!core::AnyRunPending(plan, ray_jobs)) return std::nullopt;
  core::Result<core::ClusterResources> read = deps.server->Resources();
  if (!read.ok()) return std::nullopt;
  return std::move(*read);
}

// The changed records lent to the store's write, then given back: never copied.
void WriteChanges(const ReconcileDeps& deps, const ports::DesiredSnapshot& snapshot,
                  const std::string& address, core::StatusUpdate& update, core::StatusDiff& diff,
                  PassResult& result) {
  for (const std::string& name : diff.changed) {
    auto it = update.records.find(name);
    diff.changes.emplace_hint(diff.changes.end(), name, std::move(it->second));
  }
  core::Result<std::string> written =
      deps.store->Write(diff.changes, MakeStatusCommit(diff, snapshot.commit, address));
  for (auto& [name, record] : diff.changes) update.records.find(name)->second = std::move(*record);
  diff.changes.clear();
  if (written.ok()) {
    result.status_commit = *written;
  } else {
    AddError(result, Prefixed(written.error(), "cannot record status"));
  }
}

// Step 6: every planned job's record, redacted; a commit when one changed meaningfully. Each
// record is built once and moved into the result. The ledger's records are let go of as the
// new ones are built (core::BuildStatusUpdateFromLedger): a pass that acts leaves in `ledger`
// only the records of jobs its plan does not name; a dry run consumes a copy, and hands the
// ledger back whole (`plan` and `diff` compare with it).
void Record(const ReconcileDeps& deps, const ReconcileOptions& options,
            const ports::DesiredSnapshot& snapshot, core::Ledger& ledger, ObservedJobs& ray_jobs,
            const std::set<std::string, std::less<>>& proven, PassResult& result) {
  const std::string address = core::StripUrlCredentials(options.ray_address);
  core::StatusInputs in;
  in.desired = &snapshot.state;
  in.plan = &result.plan;
  in.ray_jobs = std::move(ray_jobs.by_id);
  in.outcomes = std::move(result.outcomes);  // lent, and given back below
  in.owner = options.policy.owner;
  in.spec_commit = snapshot.commit;
  in.ray_address = address;
  in.dashboard_url = core::StripUrlCredentials(options.dashboard_url);
  in.now_ms = options.now_ms;
  in.cluster_resources = PendingRunResources(deps, result.plan, in.ray_jobs);
  in.proven_runs = &proven;
  // A job frozen by its unreadable status file is shown, never written: a record built
  // without the file's history would replace it, and the next pass could take a finished run
  // for a new one.
  auto frozen = [&options](std::string_view name) {
    return options.policy.frozen_jobs.contains(name);
  };
  core::StatusUpdate update;
  std::optional<core::Ledger> copy;
  if (options.dry_run) copy = ledger;
  core::StatusDiff diff =
      core::BuildStatusUpdateFromLedger(in, copy ? *copy : ledger, result.redactor, frozen, update);
  copy.reset();
  result.outcomes = std::move(in.outcomes);
  in = {};
  ray_jobs.Release();  // before the status commit is written
  if (!options.dry_run && options.record_status && deps.store != nullptr && !diff.changed.empty()) {
    WriteChanges(deps, snapshot, address, update, diff, result);
  }
  result.transitions = std::move(diff.transitions);
  result.records.reserve(update.records.size());
  for (auto& [name, record] : update.records) result.records.push_back(std::move(record));
}

// Step 5 of a pass that acts, continued: the driver log of each run of ours whose end is news
// (when artifacts are kept), and the finished runs due for deletion (--gc-finished-after; only
// with a ledger this pass records to, whose ends earlier passes committed). Ray's end_time is
// on the head's clock: so is the deletion (options.policy.ray_now_ms); the next one due is
// moved onto the daemon's clock.
FinishedRuns EndedRuns(const ReconcileDeps& deps, const ReconcileOptions& options,
                       const core::Ledger& ledger, const core::RayJobsById& ray_jobs,
                       PassResult& result) {
  if (options.dry_run) return {};
  if (deps.artifacts != nullptr) {
    KeepDriverLogs(*deps.server, *deps.artifacts,
                   RunsEndedSinceLedger(ray_jobs, ledger, options.policy.owner, result.outcomes),
                   result);
  }
  if (!options.gc_finished_after_ms || !options.record_status || deps.store == nullptr ||
      options.now_ms == 0) {
    return {};
  }
  const int64_t head_now_ms = options.policy.ray_now_ms;
  FinishedRuns finished = FinishedRunsToDelete(ray_jobs, ledger, options.policy.owner,
                                               *options.gc_finished_after_ms, head_now_ms);
  if (finished.next_due_ms) {
    finished.next_due_ms = DaemonTimeOf(*finished.next_due_ms, options.now_ms, head_now_ms);
  }
  return finished;
}

// The code packages known to be ours in a pass: the daemon's set (or the pass's own), and the
// trees the ledger records runs of ours with. A full pass adds those to the daemon's set, for
// the narrow passes after it, which read a few records.
struct PassPackages {
  std::set<std::string, std::less<>> recorded_trees;
  KnownPackages own;
  KnownPackages* known;

  PassPackages(const ReconcileDeps& deps, const core::DesiredState& state, const PassInputs& in)
      : known(deps.known_packages != nullptr ? deps.known_packages : &own) {
    if (!state.uses_code) return;
    recorded_trees = RecordedCodeTrees(in.ledger);
    if (in.only) return;
    for (const std::string& tree : recorded_trees) known->Add(core::CodePackageName(tree), "");
  }
  PackageOwners owners() { return {known, &recorded_trees}; }
};

// Step 4: the plan. The jobs under our ids that the ledger does not know are ours only when
// they are the runs we render (engine/adoption_check.h): the plan is made again without the
// others, which `policy` then disowns.
UnknownRunCheck PlanCheckingUnknownRuns(const ReconcileDeps& deps,
                                        const ports::DesiredSnapshot& snapshot,
                                        const PassInputs& in, const PackageOwners& packages,
                                        core::PlanPolicy& policy, PassResult& result) {
  result.plan = core::PlanActions(snapshot.state, in.observed, in.ledger, policy);
  UnknownRunCheck checked = CheckUnknownRuns(*deps.server, snapshot, in.observed, in.ledger,
                                             result.plan, policy.owner, packages);
  if (!checked.disowned.empty()) {
    policy.owner.disowned = std::move(checked.disowned);
    result.plan = core::PlanActions(snapshot.state, in.observed, in.ledger, policy);
  }
  return checked;
}

int ExitStatusOf(const PassResult& r) {
  if (!r.errors.empty() || !r.diagnostics.empty()) return kExitError;
  // A frozen job is an error for `sync` too, though not a failed pass for the daemon.
  for (const Warning& w : r.warnings) {
    if (w.kind == kWarnUnreadableStatus) return kExitError;
  }
  if (r.blocked) return kExitBlocked;
  return kExitApplied;
}

}  // namespace

PassResult RunReconcilePass(const ReconcileDeps& deps, const ReconcileOptions& options) {
  PassResult result;
  result.redactor = options.secrets;
  auto finish = [&]() {
    FinishPass(result);
    return std::move(result);
  };

  std::set<std::string> seen;
  for (;;) {
    // 1 to 3. Desired, observed, ledger; loaded again while the view is older than the cluster.
    std::optional<PassInputs> in = ReadCurrentInputs(deps, options, seen, result);
    if (!in) return finish();
    if (deps.after_reads) deps.after_reads();

    // 4 to 6, unless the tip check before stops sends the pass back to step 1.
    TipCheck check = PlanApplyRecord(deps, options, *in, result);
    if (check.proceed()) return finish();
    in.reset();
    if (!StartOverAfterTipCheck(options, std::move(check), result)) return finish();
  }
}

namespace {

// The warning of a job frozen by its secrets.
void AddSecretWarnings(const std::map<std::string, core::Diagnostic, std::less<>>& frozen,
                       PassResult& result) {
  for (const auto& [name, d] : frozen) {
    result.warnings.push_back(
        {std::string(kWarnSecret), d.path + ": job " + name + ": " + OneLine(d.message)});
    result.diagnostics.push_back(d);
  }
}

// Step 4, continued: the secrets the plan's submits deliver (engine/job_secrets.h). A job whose
// submission cannot have them is frozen, and the plan made again without it (which may free
// another to submit: a sweep's next point).
UnknownRunCheck PlanWithSecrets(const ReconcileDeps& deps, const ReconcileOptions& options,
                                PassInputs& in, SubmitSecrets& secrets,
                                const PackageOwners& packages, core::PlanPolicy& policy,
                                PassResult& result) {
  UnknownRunCheck checked =
      PlanCheckingUnknownRuns(deps, in.snapshot, in, packages, policy, result);
  if (options.dry_run) return checked;  // `plan` reads no value
  for (;;) {
    const auto frozen = secrets.Gather(result.plan, in.snapshot.state);
    if (frozen.empty()) return checked;
    FreezeForSecrets(frozen, in.snapshot.state);
    AddSecretWarnings(frozen, result);
    checked = PlanCheckingUnknownRuns(deps, in.snapshot, in, packages, policy, result);
  }
}

// The options step 4 plans with: the pass's times, owner and frozen jobs in its policy.
ReconcileOptions PlanningOptions(const ReconcileDeps& deps, const ReconcileOptions& options,
                                 const PassInputs& in) {
  ReconcileOptions planned = options;
  planned.policy.now_ms = options.now_ms;
  planned.policy.ray_now_ms = RayNowMs(options.now_ms, in.head_now_ms);
  planned.policy.owner = in.owner;
  planned.policy.desired_elsewhere = in.desired_elsewhere;
  for (const ports::SkippedStatusFile& file : in.skipped) {
    if (!file.name.empty()) planned.policy.frozen_jobs[file.name] = FrozenByStatusMessage(file);
  }
  // A spec whose code moved: its messages list the files (only such specs ask).
  if (deps.source != nullptr) planned.policy.code_changes = ports::CodeChangeListerOf(*deps.source);
  return planned;
}

// The warnings of the plan: foreign jobs (a full pass's), the head's clock (every pass's).
void AddPlanWarnings(bool narrow, const ReconcileOptions& planned, const PassInputs& in,
                     PassResult& result) {
  // A narrow pass sees some of Ray's jobs: the caller knows the foreign ones.
  if (!narrow) AddForeignJobWarnings(result.plan, planned.policy.owner.instance, result);
  // Every pass reads the head's clock anew, a narrow one too (its other warnings are the last
  // full pass's).
  std::erase_if(result.warnings, [](const Warning& w) { return w.kind == kWarnClockSkew; });
  if (std::optional<Warning> skew = ClockSkewWarning(in.head_clock_offset_ms)) {
    result.warnings.push_back(std::move(*skew));
  }
}

}  // namespace

TipCheck PlanApplyRecord(const ReconcileDeps& deps, const ReconcileOptions& options, PassInputs& in,
                         PassResult& result) {
  const NameSet* only = in.only ? &*in.only : nullptr;

  // 4. Plan.
  ReconcileOptions planned = PlanningOptions(deps, options, in);
  result.head_clock_offset_ms = in.head_clock_offset_ms;
  PassPackages packages(deps, in.snapshot.state, in);
  if (!in.secret_values) {
    in.secret_values = std::make_shared<PassSecretValues>(options.dry_run ? nullptr : deps.secrets);
  }
  SubmitSecrets secrets(*in.secret_values, *deps.server,
                        core::StripUrlCredentials(options.ray_address));
  const UnknownRunCheck checked =
      PlanWithSecrets(deps, options, in, secrets, packages.owners(), planned.policy, result);
  result.snapshot = std::make_shared<const ports::DesiredSnapshot>(std::move(in.snapshot));
  const ports::DesiredSnapshot& snapshot = *result.snapshot;
  // A narrow pass read no value before it planned: its jobs' values are redacted from here on.
  if (only != nullptr && !options.dry_run) {
    RedactDeclaredSecrets(snapshot.state, *in.secret_values, result.redactor);
  }
  result.planned = true;
  result.blocked = result.plan.blocked;
  AddPlanWarnings(only != nullptr, planned, in, result);

  if (options.dry_run && !options.build_records) {  // `plan`: nothing applied, nothing recorded
    result.ledger = std::make_shared<const core::Ledger>(std::move(in.ledger));
    return {};
  }

  // Before any stop: is the plan's view still the branch's tip?
  if (!options.dry_run) {
    TipCheck check = CheckTipBeforeStops(*deps.source, snapshot, result.plan);
    if (!check.proceed()) return check;
  }

  // 5. Apply. (Nothing reads Ray's list as first read after the plan.)
  ObservedJobs ray_jobs(std::move(in.observed));
  if (!options.dry_run && !result.plan.actions.empty()) {
    ApplyAndObserve(deps, planned, {snapshot, secrets}, only, packages.owners(), result, ray_jobs);
  }

  // Runs that ended: from the ledger as read, before Record lets go of it.
  const FinishedRuns finished = EndedRuns(deps, planned, in.ledger, ray_jobs.by_id, result);

  // 6. Record.
  Record(deps, planned, snapshot, in.ledger, ray_jobs, checked.proven, result);
  result.ledger = std::make_shared<const core::Ledger>(std::move(in.ledger));

  // 7. Finished runs whose end an earlier pass committed, deleted from Ray.
  if (!finished.due.empty()) DeleteFinishedRuns(*deps.server, finished.due, result);
  if (finished.next_due_ms &&
      (!result.plan.recheck_at_ms || *finished.next_due_ms < *result.plan.recheck_at_ms)) {
    result.plan.recheck_at_ms = finished.next_due_ms;
  }
  return {};
}

void FinishPass(PassResult& result) {
  RedactResult(result);
  result.exit_status = ExitStatusOf(result);
}

}  // namespace rg::engine
