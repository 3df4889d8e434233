#include "reconciler/engine/reconcile_pass.h"

#include <algorithm>
#include <map>
#include <utility>

#include "reconciler/core/render.h"
#include "reconciler/engine/status_update.h"

namespace rg::engine {

int PassResult::FailedActions() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(),
                                        [](const ActionOutcome& o) { return !o.ok; }));
}

namespace {

void AddError(PassResult& result, core::Error error) {
  ++result.errors_by_kind[error.kind()];
  result.errors.push_back(std::move(error));
}

core::Error Prefixed(const core::Error& e, const std::string& what) {
  return core::Error(e.kind(), what + ": " + e.message());
}

// Ray's messages cut to their first line and redacted, before anything plans or records them.
void SanitizeJobs(std::vector<core::RayJob>& jobs, const core::Redactor& redactor) {
  for (core::RayJob& job : jobs) job.message = redactor.SafeMessage(job.message);
}

core::Error Redacted(const core::Error& e, const core::Redactor& redactor) {
  return core::Error(e.kind(), redactor.Apply(e.message()));
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
  r.plan.blocked_reason = x.Apply(r.plan.blocked_reason);
  for (ActionOutcome& o : r.outcomes) {
    o.action.reason = x.Apply(o.action.reason);
    if (o.error) o.error = Redacted(*o.error, x);
    o.artifact_error = x.Apply(o.artifact_error);
  }
  for (std::string& t : r.transitions) t = x.Apply(t);
  for (core::Diagnostic& d : r.diagnostics) d.message = x.Apply(d.message);
  for (core::Error& e : r.errors) e = Redacted(e, x);
}

using JobsById = std::map<std::string, core::RayJob, std::less<>>;

JobsById ById(const std::vector<core::RayJob>& jobs) {
  JobsById out;
  for (const auto& job : jobs) {
    if (!job.submission_id.empty()) out[job.submission_id] = job;
  }
  return out;
}

// Step 5: the plan's actions, then Ray's view after them (for the records; the view from
// before the actions stays in `ray_jobs` when the second listing fails).
void ApplyAndObserve(const ReconcileDeps& deps, const ReconcileOptions& options,
                     const ports::DesiredSnapshot& snapshot, PassResult& result,
                     JobsById& ray_jobs) {
  ApplyOptions apply;
  apply.instance = options.policy.instance;
  apply.parallelism = options.parallelism;
  apply.ray_address = options.ray_address;
  apply.stop_requested = options.stop_requested;
  result.outcomes =
      ApplyPlan(result.plan, snapshot, *deps.server, deps.server_factory, deps.artifacts, apply);
  result.actions_not_started =
      static_cast<int>(result.plan.actions.size() - result.outcomes.size());
  for (const auto& o : result.outcomes) {
    if (!o.ok) {
      AddError(result, Prefixed(*o.error, o.action.name + " (" + o.action.submission_id + ")"));
    }
  }
  core::Result<std::vector<core::RayJob>> after = deps.server->List();
  if (after.ok()) {
    SanitizeJobs(*after, result.redactor);
    ray_jobs = ById(*after);
  }
}

// Step 6: every planned job's record, redacted; a commit when one changed meaningfully.
void Record(const ReconcileDeps& deps, const ReconcileOptions& options,
            const ports::DesiredSnapshot& snapshot, const core::Ledger& ledger, JobsById ray_jobs,
            PassResult& result) {
  const std::string address = core::StripUrlCredentials(options.ray_address);
  StatusInputs in;
  in.desired = &snapshot.state;
  in.plan = &result.plan;
  in.ledger = &ledger;
  in.ray_jobs = std::move(ray_jobs);
  in.outcomes = result.outcomes;
  in.instance = options.policy.instance;
  in.spec_commit = snapshot.commit;
  in.ray_address = address;
  in.now_ms = options.now_ms;
  StatusUpdate update = BuildStatusUpdate(in);
  for (auto& [name, record] : update.records) RedactRecord(record, result.redactor);
  result.records.reserve(update.records.size());
  for (const auto& [name, record] : update.records) result.records.push_back(record);
  const StatusDiff diff = DiffAgainstLedger(update, ledger);
  result.transitions = diff.transitions;
  if (options.dry_run || !options.record_status || deps.store == nullptr || diff.changes.empty()) {
    return;
  }
  core::Result<std::string> written =
      deps.store->Write(diff.changes, MakeStatusCommit(diff, snapshot.commit, address));
  if (written.ok()) {
    result.status_commit = *written;
  } else {
    AddError(result, Prefixed(written.error(), "cannot record status"));
  }
}

int ExitStatusOf(const PassResult& r) {
  if (!r.errors.empty() || !r.diagnostics.empty()) return kExitError;
  if (r.blocked) return kExitBlocked;
  return kExitApplied;
}

}  // namespace

PassResult RunReconcilePass(const ReconcileDeps& deps, const ReconcileOptions& options) {
  PassResult result;
  result.redactor = options.secrets;
  auto finish = [&]() {
    RedactResult(result);
    result.exit_status = ExitStatusOf(result);
    return std::move(result);
  };

  // 1. Desired.
  core::Result<ports::DesiredSnapshot> loaded = deps.source->Load(options.ref);
  if (!loaded.ok()) {
    AddError(result, Prefixed(loaded.error(), "cannot read the desired state at " + options.ref));
    return finish();
  }
  const ports::DesiredSnapshot& snapshot = *loaded;
  result.spec_commit = snapshot.commit;
  result.diagnostics = snapshot.state.AllDiagnostics();
  result.redactor.AddDesiredState(snapshot.state);
  if (!snapshot.state.ClusterValid()) {
    // Without a valid cluster file nothing can be planned; not even status is recorded.
    AddError(result, core::Error::InvalidInput("the cluster file is invalid; nothing was done"));
    return finish();
  }

  // 2. Observed.
  core::Result<std::vector<core::RayJob>> observed = deps.server->List();
  if (!observed.ok()) {
    AddError(result, Prefixed(observed.error(), "cannot list the jobs in Ray"));
    return finish();
  }
  SanitizeJobs(*observed, result.redactor);

  // 3. Ledger.
  core::Ledger ledger;
  if (deps.store != nullptr) {
    ports::LedgerScope scope;
    scope.instance = options.policy.instance;
    scope.ray_cluster = core::RayClusterName(*snapshot.state.cluster, options.ray_address);
    core::Result<core::Ledger> read = deps.store->ReadLedger(scope);
    if (!read.ok()) {
      // Without the ledger a finished run could be taken for a new one: act on nothing.
      AddError(result, Prefixed(read.error(), "cannot read the status ledger"));
      return finish();
    }
    ledger = std::move(*read);
  }

  // 4. Plan.
  core::PlanPolicy policy = options.policy;
  policy.now_ms = options.now_ms;
  result.plan = core::PlanActions(snapshot.state, *observed, ledger, policy);
  result.planned = true;
  result.blocked = result.plan.blocked;

  // 5. Apply.
  JobsById ray_jobs = ById(*observed);
  if (!options.dry_run && !result.plan.actions.empty()) {
    ApplyAndObserve(deps, options, snapshot, result, ray_jobs);
  }

  // 6. Record.
  Record(deps, options, snapshot, ledger, std::move(ray_jobs), result);
  return finish();
}

}  // namespace rg::engine
