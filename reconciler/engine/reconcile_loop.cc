#include "reconciler/engine/reconcile_loop.h"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "reconciler/core/status_model.h"
#include "reconciler/engine/warning.h"

namespace rg::engine {
namespace {

// Every kind of engine/warning.h: rg_warnings has a series for each, 0 when none, so an alert
// can rely on the series existing.
constexpr std::array<std::string_view, 8> kWarningKinds = {
    kWarnInvalidCluster, kWarnInvalidSpec, kWarnUnreadableStatus, kWarnForeignJobs,
    kWarnDriverLog,      kWarnGcFinished,  kWarnClockSkew,        kWarnSecret};

std::string Seconds(int64_t us) { return std::to_string(us / 1'000'000) + " s"; }

void DeclareLoopMetrics(core::MetricsRegistry& m) {
  m.DeclareHistogram("rg_pass_duration_seconds", "Duration of a reconcile pass.",
                     {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300});
  m.DeclareCounter("rg_passes_total", "Reconcile passes by result (ok, error, blocked).");
  m.DeclareCounter("rg_unchanged_passes_total",
                   "Passes that stopped early: their inputs were those of the last pass, which "
                   "found nothing to do.");
  m.DeclareCounter("rg_narrow_passes_total",
                   "Passes that read, planned and recorded only the jobs of the spec files "
                   "changed since the last pass at rest.");
  m.DeclareGauge("rg_jobs", "Jobs by phase after the last pass that got as far as a plan.");
  m.DeclareCounter("rg_submits_total", "Runs submitted to Ray (adoptions not included).");
  m.DeclareCounter("rg_stops_total", "Stop requests sent to Ray for active runs.");
  m.DeclareCounter("rg_adoptions_total",
                   "Submits answered by Ray with an existing run of the same spec, adopted.");
  m.DeclareCounter("rg_errors_total", "Errors met by reconcile passes, by kind.");
  m.DeclareGauge("rg_last_successful_pass_timestamp_seconds",
                 "Unix time at which the last pass that did not fail ended.");
  m.DeclareGauge("rg_consecutive_failures", "Failed passes since the last one that did not fail.");
  m.DeclareCounter("rg_triggers_total", "Requests for a pass, by source (timer, webhook, api).");
  m.DeclareGauge("rg_warnings",
                 "Warnings of the last completed pass by kind (invalid cluster file or spec, "
                 "unreadable status file, foreign jobs, driver log not kept, finished run not "
                 "deleted, clock skew with the Ray head); they do not make the daemon unready.");
  m.DeclareGauge("rg_foreign_jobs",
                 "Jobs of this instance from another repository on the cluster, "
                 "as of the last pass that got as far as a plan; never touched, only reported.");
  m.DeclareGauge("rg_pass_in_flight_seconds",
                 "Seconds the pass in flight has been running; 0 between passes.");
  m.DeclareGauge("rg_pass_deadline_seconds",
                 "How long a pass may run before the daemon reports itself not ready.");
  m.DeclareGauge("rg_ready", "1 when /readyz answers 200, else 0.");
}

std::string FirstProblem(const PassResult& r) {
  std::string text;
  size_t count = r.errors.size() + r.diagnostics.size();
  if (!r.errors.empty()) {
    text = r.errors.front().ToString();
  } else if (!r.diagnostics.empty()) {
    text = r.diagnostics.front().ToString();
  }
  if (count > 1) text += " (and " + std::to_string(count - 1) + " more)";
  return text;
}

}  // namespace

std::string_view PassVerdictName(PassVerdict verdict) {
  switch (verdict) {
    case PassVerdict::kOk:
      return "ok";
    case PassVerdict::kBlocked:
      return "blocked";
    case PassVerdict::kInvalid:
      return "invalid";
    case PassVerdict::kFailed:
      return "failed";
  }
  return "failed";
}

std::string_view PassMetricResult(PassVerdict verdict) {
  const bool same = verdict == PassVerdict::kOk || verdict == PassVerdict::kBlocked;
  return same ? PassVerdictName(verdict) : "error";
}

PassVerdict ClassifyPass(const PassResult& result) {
  if (result.exit_status == kExitApplied) return PassVerdict::kOk;
  if (result.exit_status == kExitBlocked) return PassVerdict::kBlocked;
  for (const core::Error& e : result.errors) {
    if (!e.IsInvalidInput() && !e.IsConflict()) return PassVerdict::kFailed;
  }
  return PassVerdict::kInvalid;
}

ReconcileLoop::ReconcileLoop(LoopOptions options, PassFunction pass, ports::Clock& clock,
                             core::MetricsRegistry* metrics, PassObserver observer)
    : options_(std::move(options)),
      pass_(std::move(pass)),
      clock_(clock),
      metrics_(metrics),
      observer_(std::move(observer)),
      random_(options_.random_seed != 0 ? options_.random_seed : std::random_device{}()) {
  state_ = options_.identity;
  next_due_us_ = clock_.MonotonicUs();
  if (metrics_ != nullptr) {
    DeclareLoopMetrics(*metrics_);
    metrics_->Set("rg_pass_deadline_seconds",
                  static_cast<double>(options_.pass_deadline_ms) / 1000);
    metrics_->Set("rg_pass_in_flight_seconds", 0);
    metrics_->Set("rg_ready", 0);
    for (std::string_view kind : kWarningKinds) {
      metrics_->Set("rg_warnings", 0, {{"kind", std::string(kind)}});
    }
  }
}

int64_t ReconcileLoop::BaseBackoffMs(const LoopOptions& options, int failures) {
  int64_t delay = std::max<int64_t>(1, options.initial_backoff_ms);
  for (int i = 1; i < failures && delay < options.max_backoff_ms; ++i) delay *= 2;
  return std::min(delay, options.max_backoff_ms);
}

int64_t ReconcileLoop::JitteredBackoffMs(int failures) {
  const auto base = static_cast<double>(BaseBackoffMs(options_, failures));
  const double jitter = std::clamp(options_.jitter, 0.0, 1.0);
  std::uniform_real_distribution<double> factor(1.0 - jitter, 1.0 + jitter);
  const auto delay = static_cast<int64_t>(base * factor(random_));
  return std::clamp<int64_t>(delay, 0, options_.max_backoff_ms);
}

bool ReconcileLoop::Trigger(std::string_view source) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    if (!trigger_pending_) trigger_source_ = std::string(source);
    trigger_pending_ = true;
  }
  cv_.notify_all();
  return true;
}

bool ReconcileLoop::DueLocked(int64_t now_us) const { return now_us >= NextDueLocked(now_us); }

int64_t ReconcileLoop::NextDueLocked(int64_t now_us) const {
  if (trigger_pending_ && !in_backoff_) return std::min(now_us, next_due_us_);
  return next_due_us_;
}

int64_t ReconcileLoop::NextDueUs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return NextDueLocked(clock_.MonotonicUs());
}

void MergeNarrowRecords(const PassResult& result, std::vector<core::StatusRecord>& jobs) {
  std::erase_if(jobs, [&result](const core::StatusRecord& r) {
    return std::ranges::binary_search(result.narrow_names, r.name);
  });
  const auto middle = static_cast<std::ptrdiff_t>(jobs.size());
  jobs.insert(jobs.end(), result.records.begin(), result.records.end());
  std::inplace_merge(
      jobs.begin(), jobs.begin() + middle, jobs.end(),
      [](const core::StatusRecord& a, const core::StatusRecord& b) { return a.name < b.name; });
}

bool ReconcileLoop::Step() {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t start_us = clock_.MonotonicUs();
  if (stopping_ || !DueLocked(start_us)) return false;
  const std::string trigger = BeginPassLocked(start_us);
  lock.unlock();
  if (metrics_ != nullptr && trigger == "timer") {
    metrics_->Add("rg_triggers_total", 1, {{"source", "timer"}});
  }

  {  // the pass's result lives until the observer is done with it
    ReconcileOptions pass_options = options_.pass;
    pass_options.stop_requested = [this]() { return StopRequested(); };
    pass_options.now_ms = clock_.NowMs();
    const PassResult result = pass_(pass_options);

    const int64_t end_us = clock_.MonotonicUs();
    const int64_t end_ms = clock_.NowMs();
    PassReport report;
    report.result = &result;
    report.verdict = ClassifyPass(result);
    report.trigger = trigger;
    report.duration_ms = (end_us - start_us) / 1000;

    lock.lock();
    EndPassLocked(report, end_us, end_ms);
    const std::vector<Warning> warnings = state_.warnings;
    lock.unlock();
    cv_.notify_all();

    RecordMetrics(report, static_cast<double>(end_us - start_us) / 1e6, end_ms);
    if (metrics_ != nullptr) RecordWarnings(warnings);
    PublishLiveMetrics();
    if (observer_) observer_(report);
  }
  if (options_.after_pass) options_.after_pass();
  return true;
}

std::string ReconcileLoop::BeginPassLocked(int64_t start_us) {
  std::string trigger = "timer";
  if (trigger_pending_) trigger = std::exchange(trigger_source_, std::string());
  trigger_pending_ = false;
  state_.pass_in_flight = true;
  state_.last_pass_start_ms = clock_.NowMs();
  pass_start_us_ = start_us;
  deadline_reported_ = false;
  return trigger;
}

void ReconcileLoop::EndPassLocked(PassReport& report, int64_t end_us, int64_t end_ms) {
  const PassResult& result = *report.result;
  const PassVerdict verdict = report.verdict;
  state_.pass_in_flight = false;
  pass_start_us_.reset();
  state_.last_pass_end_ms = end_ms;
  // A pass that failed before it learnt anything (Git or Ray unreachable) keeps the earlier
  // warnings: their causes are still there, and alerts on them must not resolve.
  const bool warnings_known = !result.unchanged && (verdict != PassVerdict::kFailed ||
                                                    result.planned || !result.warnings.empty());
  if (warnings_known) state_.warnings = result.warnings;
  if (!result.spec_commit.empty()) state_.spec_commit = result.spec_commit;
  if (!result.status_commit.empty()) state_.status_commit = result.status_commit;
  if (result.planned) {
    if (result.narrow) {
      MergeNarrowRecords(result, state_.jobs);
    } else {
      state_.jobs = result.records;
    }
    jobs_by_phase_.clear();
    for (const core::StatusRecord& r : state_.jobs) ++jobs_by_phase_[r.phase];
    state_.jobs_as_of_ms = end_ms;
    state_.jobs_from_ledger = false;
    state_.blocked = result.blocked;
    state_.blocked_reason = result.blocked ? result.plan.blocked_reason : std::string();
  } else if (result.unchanged && state_.jobs_as_of_ms && !state_.jobs_from_ledger) {
    state_.jobs_as_of_ms = end_ms;  // the same inputs, so the same jobs: known as of now
  } else if (!result.ledger_records.empty() && (!state_.jobs_as_of_ms || state_.jobs_from_ledger)) {
    // Ray cannot be listed and no pass has planned yet: the ledger's jobs are the last known.
    state_.jobs = result.ledger_records;
    state_.jobs_as_of_ms = end_ms;
    state_.jobs_from_ledger = true;
  }
  if (result.unreachable.empty()) {
    state_.unreachable.clear();
    state_.unreachable_since_ms.reset();
  } else if (result.unreachable != state_.unreachable || !state_.unreachable_since_ms) {
    state_.unreachable = result.unreachable;
    state_.unreachable_since_ms = state_.last_pass_start_ms;
  }
  state_.last_error = verdict == PassVerdict::kOk || verdict == PassVerdict::kBlocked
                          ? std::string()
                          : FirstProblem(result);
  if (verdict == PassVerdict::kFailed) {
    ++state_.consecutive_failures;
    in_backoff_ = true;
    next_due_us_ = end_us + JitteredBackoffMs(state_.consecutive_failures) * 1000;
  } else {
    state_.consecutive_failures = 0;
    in_backoff_ = false;
    last_success_us_ = end_us;
    state_.last_success_ms = end_ms;
    next_due_us_ = end_us + options_.interval_ms * 1000;
  }
  report.consecutive_failures = state_.consecutive_failures;
  report.next_pass_in_ms = (next_due_us_ - end_us) / 1000;
}

void ReconcileLoop::RecordMetrics(const PassReport& report, double seconds, int64_t end_wall_ms) {
  if (metrics_ == nullptr) return;
  const PassResult& result = *report.result;
  const PassVerdict verdict = report.verdict;
  core::MetricsRegistry& m = *metrics_;
  m.Observe("rg_pass_duration_seconds", seconds);
  m.Add("rg_passes_total", 1, {{"result", std::string(PassMetricResult(verdict))}});
  if (result.unchanged) m.Add("rg_unchanged_passes_total");
  if (result.narrow) m.Add("rg_narrow_passes_total");
  for (const ActionOutcome& o : result.outcomes) {
    if (!o.ok) continue;
    if (o.action.kind == core::ActionKind::kStop) {
      if (o.stop_sent) m.Add("rg_stops_total");
    } else {
      m.Add(o.adopted ? "rg_adoptions_total" : "rg_submits_total");
    }
  }
  for (const auto& [kind, n] : result.errors_by_kind) {
    m.Add("rg_errors_total", n, {{"kind", std::string(core::ErrorKindName(kind))}});
  }
  if (result.planned) {
    m.ClearGauge("rg_jobs");
    for (core::Phase p : core::kAllPhases) {
      auto it = jobs_by_phase_.find(p);
      m.Set("rg_jobs", it == jobs_by_phase_.end() ? 0 : it->second,
            {{"phase", std::string(core::PhaseName(p))}});
    }
    // A narrow pass sees only its jobs' runs: the foreign ones are as the last full pass found.
    if (!result.narrow) {
      m.Set("rg_foreign_jobs", static_cast<double>(result.plan.foreign.size()));
    }
  }
  if (verdict != PassVerdict::kFailed) {
    m.Set("rg_last_successful_pass_timestamp_seconds", static_cast<double>(end_wall_ms) / 1000);
  }
  m.Set("rg_consecutive_failures", report.consecutive_failures);
}

void ReconcileLoop::RecordWarnings(const std::vector<Warning>& warnings) {
  std::map<std::string, int, std::less<>> by_kind;
  for (std::string_view kind : kWarningKinds) by_kind[std::string(kind)] = 0;
  for (const Warning& w : warnings) ++by_kind[w.kind];
  metrics_->ClearGauge("rg_warnings");
  for (const auto& [kind, n] : by_kind) metrics_->Set("rg_warnings", n, {{"kind", kind}});
}

std::string ReconcileLoop::PublishLiveMetrics() {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t now_us = clock_.MonotonicUs();
  const int64_t running_us = pass_start_us_ ? now_us - *pass_start_us_ : 0;
  DaemonSnapshot readiness;
  ReadinessLocked(now_us, readiness);
  std::string newly_late;
  if (pass_start_us_ && running_us > options_.pass_deadline_ms * 1000 && !deadline_reported_) {
    deadline_reported_ = true;
    newly_late = readiness.unready_reason;
  }
  lock.unlock();
  if (metrics_ != nullptr) {
    metrics_->Set("rg_pass_in_flight_seconds", static_cast<double>(running_us) / 1e6);
    metrics_->Set("rg_ready", readiness.ready ? 1 : 0);
  }
  return newly_late;
}

void ReconcileLoop::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    Step();
    lock.lock();
    if (stopping_) break;
    const int64_t now_us = clock_.MonotonicUs();
    const int64_t wait_us = NextDueLocked(now_us) - now_us;
    if (wait_us > 0) clock_.WaitFor(lock, cv_, wait_us);
  }
}

void ReconcileLoop::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    state_.shutting_down = true;
  }
  cv_.notify_all();
}

bool ReconcileLoop::StopRequested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

void ReconcileLoop::SetRayAddress(std::string address, std::string dashboard_url) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.ray_address = std::move(address);
  state_.dashboard_url = std::move(dashboard_url);
}

DaemonSnapshot ReconcileLoop::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  DaemonSnapshot s = state_;
  const int64_t now_us = clock_.MonotonicUs();
  s.now_ms = clock_.NowMs();
  if (!stopping_) {
    s.next_pass_ms = s.now_ms + std::max<int64_t>(0, NextDueLocked(now_us) - now_us) / 1000;
  }
  ReadinessLocked(now_us, s);
  return s;
}

// Consecutive failed passes (an environment error: Git or Ray unreachable, the ledger of
// another cluster) after which the daemon is not ready whatever the window says.
constexpr int kUnreachableAfterFailures = 2;

void ReconcileLoop::ReadinessLocked(int64_t now_us, DaemonSnapshot& s) const {
  const int64_t deadline_us = options_.pass_deadline_ms * 1000;
  const int64_t window_us =
      static_cast<int64_t>(options_.readiness_intervals) * options_.interval_ms * 1000 +
      deadline_us;
  s.ready = false;
  if (stopping_) {
    s.unready_reason = "shutting down";
  } else if (pass_start_us_ && now_us - *pass_start_us_ > deadline_us) {
    s.unready_reason = "a pass has been running for " + Seconds(now_us - *pass_start_us_) +
                       ", longer than its deadline of " + Seconds(deadline_us);
  } else if (state_.consecutive_failures >= kUnreachableAfterFailures) {
    // Git or Ray cannot be reached (or the ledger is another cluster's): a failed pass and its
    // retry after the first backoff. One failure alone (a blip) does not flip readiness.
    s.unready_reason = std::to_string(state_.consecutive_failures) +
                       " passes in a row failed; the last error: " + state_.last_error;
  } else if (!last_success_us_) {
    s.unready_reason = "no pass has succeeded yet";
    if (!state_.last_error.empty()) {
      s.unready_reason += "; the last one failed: " + state_.last_error;
    }
  } else if (now_us - *last_success_us_ > window_us) {
    s.unready_reason = "no pass has succeeded for " + Seconds(now_us - *last_success_us_) +
                       " (the window is " + Seconds(window_us) + ")";
    if (!state_.last_error.empty()) s.unready_reason += "; the last error: " + state_.last_error;
  } else {
    s.ready = true;
    s.unready_reason.clear();
  }
}

}  // namespace rg::engine
