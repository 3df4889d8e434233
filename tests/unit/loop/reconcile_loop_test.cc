// The reconcile loop on a fake clock: Step() is called directly and the pass is a fake that
// returns prepared results, so timing is exact and nothing sleeps.

#include "reconciler/engine/reconcile_loop.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <set>
#include <thread>

#include "reconciler/adapters/system_clock.h"
#include "tests/support/fake_clock.h"

namespace rg::engine {
namespace {

using testing::FakeClock;

PassResult Ok() { return PassResult{}; }

PassResult Failed(core::Error error = core::Error::Transient("cannot list the jobs in Ray")) {
  PassResult r;
  ++r.errors_by_kind[error.kind()];
  r.errors.push_back(std::move(error));
  r.exit_status = kExitError;
  return r;
}

PassResult InvalidSpec() {
  PassResult r;
  r.planned = true;
  r.diagnostics.push_back({"jobs/a.yaml", 3, 1, "unknown field 'entrypint'"});
  r.exit_status = kExitError;
  return r;
}

PassResult Blocked() {
  PassResult r;
  r.planned = true;
  r.blocked = true;
  r.plan.blocked = true;
  r.plan.blocked_reason = "the plan would stop 7 jobs (more than --max-stops 5)";
  r.exit_status = kExitBlocked;
  return r;
}

core::StatusRecord Record(std::string name, core::Phase phase) {
  core::StatusRecord r;
  r.name = std::move(name);
  r.phase = phase;
  return r;
}

ActionOutcome Outcome(core::ActionKind kind, std::string name, bool ok) {
  ActionOutcome o;
  o.action.kind = kind;
  o.action.name = std::move(name);
  o.action.submission_id = o.action.name + "-0123456789";
  o.ok = ok;
  if (!ok) o.error = core::Error::Transient("connection refused");
  return o;
}

LoopOptions FastOptions() {
  LoopOptions o;
  o.interval_ms = 15'000;
  o.initial_backoff_ms = 1'000;
  o.max_backoff_ms = 8'000;
  o.jitter = 0.2;
  o.readiness_intervals = 3;
  o.random_seed = 42;
  return o;
}

// A pass function that hands out queued results (Ok() when the queue is empty) and counts.
struct ScriptedPass {
  std::deque<PassResult> results;
  int calls = 0;
  std::function<void(const ReconcileOptions&)> during;  // runs inside the pass

  PassFunction Function() {
    return [this](const ReconcileOptions& options) {
      ++calls;
      if (during) during(options);
      if (results.empty()) return Ok();
      PassResult r = std::move(results.front());
      results.pop_front();
      return r;
    };
  }
};

int64_t WaitMs(const ReconcileLoop& loop, FakeClock& clock) {
  return (loop.NextDueUs() - clock.MonotonicUs()) / 1000;
}

TEST_CASE("the first pass runs at once and the timer runs one every interval", "[loop]") {
  FakeClock clock;
  core::MetricsRegistry metrics;
  ScriptedPass pass;
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, &metrics);

  CHECK(loop.Step());
  CHECK(pass.calls == 1);
  CHECK_FALSE(loop.Step());
  CHECK(WaitMs(loop, clock) == 15'000);
  clock.AdvanceMs(14'999);
  CHECK_FALSE(loop.Step());
  clock.AdvanceMs(1);
  CHECK(loop.Step());
  clock.AdvanceMs(15'000);
  CHECK(loop.Step());
  CHECK(pass.calls == 3);
  CHECK(metrics.Value("rg_triggers_total", {{"source", "timer"}}) == 3);
  CHECK(metrics.Value("rg_passes_total", {{"result", "ok"}}) == 3);
  CHECK(metrics.Count("rg_pass_duration_seconds") == 3);
}

TEST_CASE("a trigger while idle runs a pass before the interval ends", "[loop]") {
  FakeClock clock;
  ScriptedPass pass;
  std::vector<std::string> causes;
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, nullptr,
                     [&causes](const PassReport& r) { causes.push_back(r.trigger); });
  REQUIRE(loop.Step());
  clock.AdvanceMs(2'000);
  CHECK(loop.Trigger("webhook:github"));
  CHECK(WaitMs(loop, clock) == 0);
  CHECK(loop.Step());
  CHECK_FALSE(loop.Step());
  CHECK(causes == std::vector<std::string>{"timer", "webhook:github"});
  // The timer restarts from the end of the triggered pass.
  CHECK(WaitMs(loop, clock) == 15'000);
}

TEST_CASE("any number of triggers during a pass cause exactly one more pass", "[loop]") {
  FakeClock clock;
  ScriptedPass pass;
  ReconcileLoop* loop_ptr = nullptr;
  pass.during = [&](const ReconcileOptions&) {
    if (pass.calls == 1) {
      for (int i = 0; i < 5; ++i) loop_ptr->Trigger(i % 2 == 0 ? "api" : "webhook:gitlab");
    }
  };
  std::vector<std::string> causes;
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, nullptr,
                     [&causes](const PassReport& r) { causes.push_back(r.trigger); });
  loop_ptr = &loop;

  CHECK(loop.Step());
  CHECK(loop.Step());
  CHECK_FALSE(loop.Step());
  CHECK(pass.calls == 2);
  CHECK(causes == std::vector<std::string>{"timer", "api"});
}

TEST_CASE("backoff doubles per failure within the jitter bounds, caps, and resets on success",
          "[loop]") {
  FakeClock clock;
  core::MetricsRegistry metrics;
  ScriptedPass pass;
  for (int i = 0; i < 6; ++i) pass.results.push_back(Failed());
  pass.results.push_back(Ok());
  pass.results.push_back(Failed());
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, &metrics);

  const int64_t bases[] = {1'000, 2'000, 4'000, 8'000, 8'000, 8'000};
  std::set<int64_t> waits;
  for (int n = 1; n <= 6; ++n) {
    REQUIRE(loop.Step());
    const int64_t base = bases[n - 1];
    CHECK(ReconcileLoop::BaseBackoffMs(FastOptions(), n) == base);
    const int64_t wait = WaitMs(loop, clock);
    CHECK(wait >= base * 8 / 10);
    CHECK(wait <= std::min<int64_t>(base * 12 / 10, 8'000));
    CHECK(loop.Snapshot().consecutive_failures == n);
    CHECK(metrics.Value("rg_consecutive_failures") == n);
    waits.insert(wait * 1000 / base);  // the jitter factor, in thousandths
    clock.AdvanceMs(wait - 1);
    CHECK_FALSE(loop.Step());
    clock.AdvanceMs(1);
  }
  CHECK(waits.size() > 1);  // the jitter is not a constant factor

  REQUIRE(loop.Step());  // succeeds
  CHECK(loop.Snapshot().consecutive_failures == 0);
  CHECK(WaitMs(loop, clock) == 15'000);
  clock.AdvanceMs(15'000);
  REQUIRE(loop.Step());  // fails again: the backoff starts over
  const int64_t wait = WaitMs(loop, clock);
  CHECK(wait >= 800);
  CHECK(wait <= 1'200);
  CHECK(metrics.Value("rg_passes_total", {{"result", "error"}}) == 7);
  CHECK(metrics.Value("rg_passes_total", {{"result", "ok"}}) == 1);
}

TEST_CASE("without jitter the backoff is exactly initial times two to the failures", "[loop]") {
  FakeClock clock;
  ScriptedPass pass;
  for (int i = 0; i < 4; ++i) pass.results.push_back(Failed());
  LoopOptions options = FastOptions();
  options.jitter = 0;
  ReconcileLoop loop(options, pass.Function(), clock, nullptr);
  for (int64_t expected : {1'000, 2'000, 4'000, 8'000}) {
    REQUIRE(loop.Step());
    CHECK(WaitMs(loop, clock) == expected);
    clock.AdvanceMs(expected);
  }
}

TEST_CASE("a trigger does not cut a backoff short but runs when the backoff ends", "[loop]") {
  FakeClock clock;
  ScriptedPass pass;
  pass.results.push_back(Failed());
  LoopOptions options = FastOptions();
  options.jitter = 0;
  std::vector<std::string> causes;
  ReconcileLoop loop(options, pass.Function(), clock, nullptr,
                     [&causes](const PassReport& r) { causes.push_back(r.trigger); });
  REQUIRE(loop.Step());
  CHECK(loop.Trigger("webhook:github"));
  CHECK_FALSE(loop.Step());
  CHECK(WaitMs(loop, clock) == 1'000);
  clock.AdvanceMs(1'000);
  CHECK(loop.Step());
  CHECK(causes == std::vector<std::string>{"timer", "webhook:github"});
}

TEST_CASE("an invalid spec or a guard is not a failure: no backoff, and triggers run at once",
          "[loop]") {
  FakeClock clock;
  core::MetricsRegistry metrics;
  ScriptedPass pass;
  pass.results.push_back(InvalidSpec());
  pass.results.push_back(Blocked());
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, &metrics);

  REQUIRE(loop.Step());
  DaemonSnapshot s = loop.Snapshot();
  CHECK(s.consecutive_failures == 0);
  CHECK(s.ready);
  CHECK(s.last_error == "jobs/a.yaml:3:1: error: unknown field 'entrypint'");
  CHECK(WaitMs(loop, clock) == 15'000);
  loop.Trigger("api");
  REQUIRE(loop.Step());
  s = loop.Snapshot();
  CHECK(s.ready);
  CHECK(s.blocked);
  CHECK(s.blocked_reason == "the plan would stop 7 jobs (more than --max-stops 5)");
  CHECK(s.last_error.empty());
  CHECK(metrics.Value("rg_passes_total", {{"result", "error"}}) == 1);
  CHECK(metrics.Value("rg_passes_total", {{"result", "blocked"}}) == 1);
}

TEST_CASE("readiness: one failed pass is a blip, two in a row are an outage, and the window",
          "[loop]") {
  FakeClock clock;
  ScriptedPass pass;
  LoopOptions options = FastOptions();
  options.interval_ms = 1'000;
  options.max_backoff_ms = 1'000;
  options.pass_deadline_ms = 500;  // the window is three intervals plus the pass deadline
  options.jitter = 0;
  pass.results.push_back(Failed());
  ReconcileLoop loop(options, pass.Function(), clock, nullptr);
  CHECK_FALSE(loop.Snapshot().ready);  // nothing has succeeded yet
  CHECK(loop.Snapshot().unready_reason == "no pass has succeeded yet");
  REQUIRE(loop.Step());
  CHECK(loop.Snapshot().unready_reason ==
        "no pass has succeeded yet; the last one failed: transient: cannot list the jobs in Ray");

  clock.AdvanceMs(1'000);
  REQUIRE(loop.Step());
  CHECK(loop.Snapshot().ready);
  CHECK(loop.Snapshot().unready_reason.empty());
  const int64_t success_ms = clock.NowMs();
  CHECK(loop.Snapshot().last_success_ms == success_ms);

  // One failed pass keeps the daemon ready; its retry failing too makes it unready at once.
  for (int i = 0; i < 2; ++i) pass.results.push_back(Failed());
  clock.AdvanceMs(1'000);
  REQUIRE(loop.Step());
  CHECK(loop.Snapshot().ready);
  CHECK(loop.Snapshot().consecutive_failures == 1);
  clock.AdvanceMs(1'000);
  REQUIRE(loop.Step());
  const DaemonSnapshot outage = loop.Snapshot();
  CHECK_FALSE(outage.ready);
  CHECK(outage.unready_reason ==
        "2 passes in a row failed; the last error: transient: cannot list the jobs in Ray");
  CHECK(outage.last_success_ms == success_ms);

  clock.AdvanceMs(1'000);
  REQUIRE(loop.Step());  // succeeds
  CHECK(loop.Snapshot().ready);
  CHECK(loop.Snapshot().last_error.empty());

  // No pass at all for longer than the window (the loop is stuck): not ready either.
  clock.AdvanceMs(3'500);
  CHECK(loop.Snapshot().ready);  // exactly three intervals plus the pass deadline
  clock.AdvanceMs(1);
  CHECK(loop.Snapshot().unready_reason == "no pass has succeeded for 3 s (the window is 3 s)");
}

TEST_CASE("a pass running past its deadline makes the daemon unready and shows in the metrics",
          "[loop]") {
  FakeClock clock;
  core::MetricsRegistry metrics;
  ScriptedPass pass;
  LoopOptions options = FastOptions();
  options.pass_deadline_ms = 60'000;
  ReconcileLoop* loop_ptr = nullptr;
  std::vector<DaemonSnapshot> seen;
  std::vector<std::string> published;
  std::vector<double> in_flight;
  pass.during = [&](const ReconcileOptions&) {
    clock.AdvanceMs(60'000);  // at the deadline: still ready
    published.push_back(loop_ptr->PublishLiveMetrics());
    seen.push_back(loop_ptr->Snapshot());
    clock.AdvanceMs(35'000);  // 95 s in
    published.push_back(loop_ptr->PublishLiveMetrics());
    published.push_back(loop_ptr->PublishLiveMetrics());  // said once per pass
    in_flight.push_back(metrics.Value("rg_pass_in_flight_seconds"));
    in_flight.push_back(metrics.Value("rg_ready"));
    seen.push_back(loop_ptr->Snapshot());
  };
  ReconcileLoop loop(options, pass.Function(), clock, &metrics);
  loop_ptr = &loop;
  CHECK(metrics.Value("rg_pass_deadline_seconds") == 60);

  REQUIRE(loop.Step());
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].unready_reason == "no pass has succeeded yet");
  CHECK_FALSE(seen[1].ready);
  CHECK(seen[1].pass_in_flight);
  const std::string reason = "a pass has been running for 95 s, longer than its deadline of 60 s";
  CHECK(seen[1].unready_reason == reason);
  CHECK(published == std::vector<std::string>{"", reason, ""});
  CHECK(in_flight == std::vector<double>{95, 0});

  // The pass ends (and succeeds): ready again, nothing in flight.
  const DaemonSnapshot after = loop.Snapshot();
  CHECK(after.ready);
  CHECK(after.unready_reason.empty());
  CHECK(metrics.Value("rg_pass_in_flight_seconds") == 0);
  CHECK(metrics.Value("rg_ready") == 1);
}

TEST_CASE("a stop request makes the daemon unready with the reason", "[loop]") {
  FakeClock clock;
  ScriptedPass pass;
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, nullptr);
  REQUIRE(loop.Step());
  CHECK(loop.Snapshot().ready);
  loop.RequestStop();
  CHECK_FALSE(loop.Snapshot().ready);
  CHECK(loop.Snapshot().unready_reason == "shutting down");
}

TEST_CASE("the last pass's warnings are in the snapshot and counted by kind in rg_warnings",
          "[loop]") {
  FakeClock clock;
  core::MetricsRegistry metrics;
  ScriptedPass pass;
  PassResult warned;
  warned.planned = true;
  warned.warnings = {{std::string(kWarnInvalidSpec), "jobs/a.yaml: unknown field"},
                     {std::string(kWarnInvalidSpec), "jobs/b.yaml: unknown field"},
                     {std::string(kWarnForeignJobs), "3 jobs in Ray are not ours"}};
  pass.results.push_back(warned);
  pass.results.push_back(Failed());  // Git unreachable: learnt nothing, keeps the warnings
  PassResult clean;
  clean.planned = true;
  pass.results.push_back(clean);
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, &metrics);

  // Before any pass every kind has its series, at 0.
  const std::string before = metrics.RenderPrometheusText();
  for (const char* kind : {"invalid_cluster", "invalid_spec", "unreadable_status", "foreign_jobs",
                           "driver_log", "gc_finished", "clock_skew"}) {
    CHECK_THAT(before, Catch::Contains("rg_warnings{kind=\"" + std::string(kind) + "\"} 0"));
  }

  REQUIRE(loop.Step());
  CHECK(loop.Snapshot().warnings == warned.warnings);
  CHECK(loop.Snapshot().ready);  // warnings do not make the daemon unready
  CHECK(metrics.Value("rg_warnings", {{"kind", "invalid_spec"}}) == 2);
  CHECK(metrics.Value("rg_warnings", {{"kind", "foreign_jobs"}}) == 1);
  CHECK_THAT(metrics.RenderPrometheusText(),
             Catch::Contains("rg_warnings{kind=\"unreadable_status\"} 0"));

  clock.AdvanceMs(WaitMs(loop, clock));
  REQUIRE(loop.Step());
  CHECK(loop.Snapshot().warnings == warned.warnings);
  CHECK(metrics.Value("rg_warnings", {{"kind", "invalid_spec"}}) == 2);

  clock.AdvanceMs(WaitMs(loop, clock));
  REQUIRE(loop.Step());
  CHECK(loop.Snapshot().warnings.empty());
  CHECK(metrics.Value("rg_warnings", {{"kind", "invalid_spec"}}) == 0);
  CHECK_THAT(metrics.RenderPrometheusText(),
             Catch::Contains("rg_warnings{kind=\"invalid_spec\"} 0"));
}

TEST_CASE("pass metrics count actions, errors by kind and jobs by phase", "[loop]") {
  FakeClock clock;
  core::MetricsRegistry metrics;
  ScriptedPass pass;
  PassResult first;
  first.planned = true;
  first.outcomes.push_back(Outcome(core::ActionKind::kStop, "old", true));
  first.outcomes.back().stop_sent = true;
  first.outcomes.push_back(Outcome(core::ActionKind::kStop, "done", true));  // had ended
  first.outcomes.push_back(Outcome(core::ActionKind::kSubmit, "a", true));
  first.outcomes.push_back(Outcome(core::ActionKind::kSubmit, "b", true));
  first.outcomes.back().adopted = true;
  first.outcomes.push_back(Outcome(core::ActionKind::kSubmit, "c", false));
  first.errors.push_back(*first.outcomes.back().error);
  first.errors_by_kind[core::ErrorKind::kTransient] = 1;
  first.exit_status = kExitError;
  first.records = {Record("a", core::Phase::kPending), Record("b", core::Phase::kRunning),
                   Record("c", core::Phase::kPending), Record("d", core::Phase::kRunning)};
  pass.results.push_back(first);
  PassResult second;
  second.planned = true;
  second.records = {Record("a", core::Phase::kSucceeded), Record("b", core::Phase::kRunning)};
  pass.results.push_back(second);
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, &metrics);

  REQUIRE(loop.Step());
  CHECK(metrics.Value("rg_stops_total") == 1);
  CHECK(metrics.Value("rg_submits_total") == 1);
  CHECK(metrics.Value("rg_adoptions_total") == 1);
  CHECK(metrics.Value("rg_errors_total", {{"kind", "transient"}}) == 1);
  CHECK(metrics.Value("rg_jobs", {{"phase", "Pending"}}) == 2);
  CHECK(metrics.Value("rg_jobs", {{"phase", "Running"}}) == 2);
  CHECK(metrics.Value("rg_jobs", {{"phase", "Succeeded"}}) == 0);
  CHECK(metrics.Value("rg_last_successful_pass_timestamp_seconds") == 0);

  clock.AdvanceMs(loop.NextDueUs() / 1000 - clock.MonotonicUs() / 1000);
  REQUIRE(loop.Step());
  CHECK(metrics.Value("rg_jobs", {{"phase", "Pending"}}) == 0);
  CHECK(metrics.Value("rg_jobs", {{"phase", "Running"}}) == 1);
  CHECK(metrics.Value("rg_jobs", {{"phase", "Succeeded"}}) == 1);
  CHECK(metrics.Value("rg_submits_total") == 1);
  CHECK(metrics.Value("rg_last_successful_pass_timestamp_seconds") ==
        Approx(static_cast<double>(clock.NowMs()) / 1000));
  const std::string text = metrics.RenderPrometheusText();
  CHECK(text.find("rg_jobs{phase=\"Lost\"} 0") != std::string::npos);
}

TEST_CASE("a pass that stopped early keeps the jobs, warnings and gauges of the last full one",
          "[loop]") {
  FakeClock clock;
  core::MetricsRegistry metrics;
  ScriptedPass pass;
  PassResult full;
  full.planned = true;
  full.spec_commit = "1111111111111111111111111111111111111111";
  full.records = {Record("a", core::Phase::kRunning), Record("b", core::Phase::kSucceeded)};
  full.warnings = {{std::string(kWarnInvalidSpec), "jobs/c.yaml: unknown field"}};
  pass.results.push_back(full);
  PassResult same;
  same.unchanged = true;
  same.spec_commit = full.spec_commit;
  pass.results.push_back(same);
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, &metrics);

  REQUIRE(loop.Step());
  const int64_t first_as_of = *loop.Snapshot().jobs_as_of_ms;
  clock.AdvanceMs(WaitMs(loop, clock));
  REQUIRE(loop.Step());
  const DaemonSnapshot s = loop.Snapshot();
  CHECK(s.jobs.size() == 2);
  CHECK(s.warnings == full.warnings);
  CHECK(s.ready);
  CHECK(s.last_error.empty());
  CHECK(*s.jobs_as_of_ms > first_as_of);  // confirmed by the later pass
  CHECK(metrics.Value("rg_unchanged_passes_total") == 1);
  CHECK(metrics.Value("rg_passes_total", {{"result", "ok"}}) == 2);
  CHECK(metrics.Value("rg_jobs", {{"phase", "Running"}}) == 1);
  CHECK(metrics.Value("rg_warnings", {{"kind", "invalid_spec"}}) == 1);
  CHECK(WaitMs(loop, clock) == FastOptions().interval_ms);  // the timer goes on as usual
}

TEST_CASE("a narrow pass replaces the records of its names and keeps the others", "[loop]") {
  FakeClock clock;
  core::MetricsRegistry metrics;
  ScriptedPass pass;
  PassResult full;
  full.planned = true;
  full.records = {Record("a", core::Phase::kRunning), Record("c", core::Phase::kRunning),
                  Record("e", core::Phase::kSucceeded), Record("g", core::Phase::kRunning)};
  full.plan.foreign.resize(2);
  pass.results.push_back(full);
  PassResult narrow;
  narrow.planned = true;
  narrow.narrow = true;
  // c was edited (a new run), e removed with nothing left to show, b and f are new.
  narrow.narrow_names = {"b", "c", "e", "f"};
  narrow.records = {Record("b", core::Phase::kPending), Record("c", core::Phase::kPending),
                    Record("f", core::Phase::kPending)};
  pass.results.push_back(narrow);
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, &metrics);

  REQUIRE(loop.Step());
  CHECK(metrics.Value("rg_foreign_jobs") == 2);
  clock.AdvanceMs(WaitMs(loop, clock));
  REQUIRE(loop.Step());
  const DaemonSnapshot s = loop.Snapshot();
  std::string jobs;
  for (const core::StatusRecord& r : s.jobs) {
    jobs += r.name + ":" + std::string(core::PhaseName(r.phase)) + " ";
  }
  CHECK(jobs == "a:Running b:Pending c:Pending f:Pending g:Running ");
  CHECK(metrics.Value("rg_jobs", {{"phase", "Running"}}) == 2);
  CHECK(metrics.Value("rg_jobs", {{"phase", "Pending"}}) == 3);
  CHECK(metrics.Value("rg_jobs", {{"phase", "Succeeded"}}) == 0);
  // The narrow pass saw no foreign job: the full pass's count stands.
  CHECK(metrics.Value("rg_foreign_jobs") == 2);
  CHECK(metrics.Value("rg_narrow_passes_total") == 1);
}

TEST_CASE("after_pass runs once per pass, after the pass's result is freed", "[loop]") {
  FakeClock clock;
  bool result_alive = false;
  std::vector<bool> alive_at_after_pass;
  LoopOptions options = FastOptions();
  options.after_pass = [&]() { alive_at_after_pass.push_back(result_alive); };
  PassFunction pass = [&](const ReconcileOptions&) {
    PassResult r;
    r.planned = true;
    result_alive = true;
    r.snapshot = std::shared_ptr<const ports::DesiredSnapshot>(
        new ports::DesiredSnapshot(), [&](const ports::DesiredSnapshot* s) {
          result_alive = false;
          delete s;
        });
    return r;
  };
  ReconcileLoop loop(options, pass, clock, nullptr);
  REQUIRE(loop.Step());
  clock.AdvanceMs(WaitMs(loop, clock));
  REQUIRE(loop.Step());
  CHECK(alive_at_after_pass == std::vector<bool>{false, false});
}

TEST_CASE("the snapshot reports identity, commits, jobs, the pass in flight and the next pass",
          "[loop]") {
  FakeClock clock;
  ScriptedPass pass;
  LoopOptions options = FastOptions();
  options.identity.instance = "lab";
  options.identity.repo_url = "https://git.example/ml/jobs.git";
  options.identity.branch = "main";
  options.identity.status_branch = "ray-gitops/status";
  ReconcileLoop* loop_ptr = nullptr;
  std::optional<DaemonSnapshot> during;
  pass.during = [&](const ReconcileOptions&) { during = loop_ptr->Snapshot(); };
  PassResult r;
  r.planned = true;
  r.spec_commit = "1111111111111111111111111111111111111111";
  r.status_commit = "2222222222222222222222222222222222222222";
  r.records = {Record("a", core::Phase::kRunning)};
  pass.results.push_back(r);
  PassResult failed = Failed();  // before planning: earlier jobs and commits stay
  pass.results.push_back(failed);
  ReconcileLoop loop(options, pass.Function(), clock, nullptr);
  loop_ptr = &loop;
  loop.SetRayAddress("http://127.0.0.1:8265", "http://127.0.0.1:8265");

  REQUIRE(loop.Step());
  REQUIRE(during.has_value());
  CHECK(during->pass_in_flight);
  DaemonSnapshot s = loop.Snapshot();
  CHECK_FALSE(s.pass_in_flight);
  CHECK(s.instance == "lab");
  CHECK(s.repo_url == "https://git.example/ml/jobs.git");
  CHECK(s.branch == "main");
  CHECK(s.status_branch == "ray-gitops/status");
  CHECK(s.ray_address == "http://127.0.0.1:8265");
  CHECK(s.spec_commit == r.spec_commit);
  CHECK(s.status_commit == r.status_commit);
  REQUIRE(s.jobs.size() == 1);
  CHECK(s.jobs[0].name == "a");
  CHECK(s.now_ms == clock.NowMs());
  CHECK(s.last_pass_start_ms == clock.NowMs());
  CHECK(s.next_pass_ms == clock.NowMs() + 15'000);

  clock.AdvanceMs(15'000);
  REQUIRE(loop.Step());
  s = loop.Snapshot();
  CHECK(s.spec_commit == r.spec_commit);
  CHECK(s.jobs.size() == 1);
  CHECK(s.consecutive_failures == 1);
  CHECK_FALSE(s.shutting_down);
  loop.RequestStop();
  s = loop.Snapshot();
  CHECK(s.shutting_down);
  CHECK_FALSE(s.ready);
  CHECK_FALSE(s.next_pass_ms.has_value());
}

TEST_CASE("after a stop request no pass starts and triggers are refused", "[loop]") {
  FakeClock clock;
  ScriptedPass pass;
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, nullptr);
  loop.RequestStop();
  CHECK(loop.StopRequested());
  CHECK_FALSE(loop.Trigger("api"));
  CHECK_FALSE(loop.Step());
  CHECK(pass.calls == 0);
}

TEST_CASE("Run passes on the timer until a stop, which the pass in flight sees", "[loop]") {
  FakeClock clock;
  ScriptedPass pass;
  ReconcileLoop* loop_ptr = nullptr;
  bool seen_before = true;
  bool seen_after = false;
  pass.during = [&](const ReconcileOptions& options) {
    if (pass.calls == 1) seen_before = options.stop_requested();
    if (pass.calls == 4) {
      loop_ptr->RequestStop();
      seen_after = options.stop_requested();
    }
  };
  ReconcileLoop loop(FastOptions(), pass.Function(), clock, nullptr);
  loop_ptr = &loop;
  loop.Run();
  CHECK(pass.calls == 4);
  CHECK_FALSE(seen_before);
  CHECK(seen_after);
  CHECK(clock.ElapsedMs() == 3 * 15'000);  // three waits of one interval each
}

TEST_CASE("Run on the system clock wakes for a trigger from another thread", "[loop]") {
  adapters::SystemClock clock;
  std::atomic<int> calls{0};
  LoopOptions options = FastOptions();
  options.interval_ms = 3'600'000;  // the timer never fires within the test
  ReconcileLoop loop(
      options,
      [&calls](const ReconcileOptions&) {
        ++calls;
        return PassResult{};
      },
      clock, nullptr);
  std::thread runner([&loop]() { loop.Run(); });
  auto wait_for = [&calls](int n) {
    for (int i = 0; i < 500 && calls.load() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return calls.load() >= n;
  };
  CHECK(wait_for(1));
  CHECK(loop.Trigger("api"));
  CHECK(wait_for(2));
  loop.RequestStop();
  runner.join();
  CHECK(calls.load() == 2);
}

TEST_CASE("passes are classified by exit status and error kinds", "[loop]") {
  CHECK(ClassifyPass(Ok()) == PassVerdict::kOk);
  CHECK(ClassifyPass(Blocked()) == PassVerdict::kBlocked);
  CHECK(ClassifyPass(InvalidSpec()) == PassVerdict::kInvalid);
  CHECK(ClassifyPass(Failed(core::Error::InvalidInput("the cluster file is invalid"))) ==
        PassVerdict::kInvalid);
  CHECK(ClassifyPass(Failed(core::Error::Conflict("id held by another spec"))) ==
        PassVerdict::kInvalid);
  CHECK(ClassifyPass(Failed()) == PassVerdict::kFailed);
  CHECK(ClassifyPass(Failed(core::Error::Unauthorized("401"))) == PassVerdict::kFailed);
  CHECK(ClassifyPass(Failed(core::Error::NotFound("no branch main"))) == PassVerdict::kFailed);
  PassResult mixed = InvalidSpec();
  mixed.errors.push_back(core::Error::Transient("fetch failed"));
  CHECK(ClassifyPass(mixed) == PassVerdict::kFailed);
  CHECK(PassVerdictName(PassVerdict::kBlocked) == "blocked");
}

TEST_CASE("the metric's result is the exit status by name: invalid and failed are both error") {
  CHECK(PassMetricResult(PassVerdict::kOk) == "ok");
  CHECK(PassMetricResult(PassVerdict::kBlocked) == "blocked");
  CHECK(PassMetricResult(PassVerdict::kInvalid) == "error");
  CHECK(PassMetricResult(PassVerdict::kFailed) == "error");
  CHECK(PassVerdictName(PassVerdict::kInvalid) == "invalid");
  CHECK(PassVerdictName(PassVerdict::kFailed) == "failed");
}

}  // namespace
}  // namespace rg::engine
