#include "reconciler/engine/reconcile_pass.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/adapters/schedule_zones.h"
#include "reconciler/core/render.h"
#include "reconciler/core/status_model.h"
#include "reconciler/engine/status_commit.h"
#include "reconciler/engine/warning.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"
#include "tests/support/gated_job_server.h"
#include "tests/support/in_memory_ports.h"
#include "tests/support/in_process_ray.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using namespace std::chrono_literals;
using core::Phase;
using core::RayJobStatus;
using testing::FakeRayOptions;
using testing::FakeRayServer;
using testing::InMemoryDesiredStateSource;
using testing::InMemoryStatusStore;

std::string CommitId(int n) { return std::string(39, '0') + static_cast<char>('a' + n % 6); }

std::string CustomSpec(const std::string& entrypoint, const std::string& extra = "") {
  return "workload: custom\nentrypoint: " + entrypoint + "\n" + extra;
}

// One repository on the harness's head and status branch.
class World : public testing::PassHarness {
 public:
  explicit World(FakeRayOptions options = {})
      : PassHarness(std::move(options)), source_(NewRepo(CommitId(0))) {}

  PassResult Pass(ReconcileOptions options = {}) {
    return PassHarness::Pass(*source_, std::move(options));
  }
  std::string HashOf(const std::string& path) { return PassHarness::HashOf(*source_, path); }
  InMemoryDesiredStateSource& source() { return *source_; }

 private:
  std::unique_ptr<InMemoryDesiredStateSource> source_;
};

int CountSubmits(const PassResult& r) { return r.plan.CountActions(core::ActionKind::kSubmit); }
int CountStops(const PassResult& r) { return r.plan.CountActions(core::ActionKind::kStop); }

TEST_CASE("a first pass submits every new job and a repeated pass converges to no actions",
          "[engine]") {
  World w;
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  w.source().SetFile("jobs/b.yaml", CustomSpec("sleep 301"), CommitId(1));
  const std::string id_a = "a-" + w.HashOf("jobs/a.yaml");

  PassResult first = w.Pass();
  REQUIRE(first.errors.empty());
  CHECK(first.exit_status == kExitApplied);
  CHECK(CountSubmits(first) == 2);
  REQUIRE(first.outcomes.size() == 2);
  CHECK(first.outcomes[0].ok);
  CHECK(first.outcomes[1].ok);
  CHECK(w.ray().JobCount() == 2);
  CHECK(w.ray().StatusOf(id_a).has_value());
  CHECK(w.store().commits().size() == 1);
  CHECK_FALSE(first.status_commit.empty());

  w.Advance(200ms);
  PassResult second = w.Pass();  // records Pending -> Running
  CHECK(second.plan.actions.empty());
  CHECK(w.Record("a").phase == Phase::kRunning);

  const size_t commits = w.store().commits().size();
  PassResult third = w.Pass();
  CHECK(third.plan.actions.empty());
  CHECK(third.outcomes.empty());
  CHECK(third.transitions.empty());
  CHECK(third.status_commit.empty());
  CHECK(w.store().commits().size() == commits);
  CHECK(w.ray().JobCount() == 2);
  CHECK(w.ray().SubmitBodies().size() == 2);
}

TEST_CASE("a changed spec stops the old run before the new one is submitted", "[engine]") {
  World w;
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  const std::string old_id = "a-" + w.HashOf("jobs/a.yaml");
  REQUIRE(w.Pass().exit_status == kExitApplied);
  w.Advance(100ms);

  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 299"), CommitId(2));
  const std::string new_id = "a-" + w.HashOf("jobs/a.yaml");
  REQUIRE(old_id != new_id);
  PassResult r = w.Pass();
  REQUIRE(r.outcomes.size() == 2);
  CHECK(r.outcomes[0].action.kind == core::ActionKind::kStop);
  CHECK(r.outcomes[0].action.submission_id == old_id);
  CHECK(r.outcomes[0].ok);
  CHECK(r.outcomes[1].action.kind == core::ActionKind::kSubmit);
  CHECK(r.outcomes[1].action.submission_id == new_id);
  CHECK(r.outcomes[1].ok);
  CHECK(w.ray().StatusOf(old_id) == RayJobStatus::kStopped);
  CHECK(w.ray().StatusOf(new_id).has_value());

  const core::StatusRecord& rec = w.Record("a");
  CHECK(rec.submission_id == new_id);
  const core::AttemptRecord* old_attempt = rec.FindAttempt(old_id);
  REQUIRE(old_attempt != nullptr);
  CHECK(old_attempt->stop_reason == core::StopReason::kReplacement);
}

TEST_CASE("a few actions among many jobs read their runs again, not every job", "[engine]") {
  World w;
  // Runs that stay active until stopped; a spec changes by its version, not its entrypoint.
  auto set_spec = [&w](int i, int version) {
    w.source().SetFile(
        "jobs/j" + std::to_string(i) + ".yaml",
        CustomSpec("sleep infinity", "env_vars:\n  VERSION: \"" + std::to_string(version) + "\"\n"),
        CommitId(version));
  };
  for (int i = 0; i < 40; ++i) set_spec(i, 1);
  PassResult first = w.Pass();
  REQUIRE(CountSubmits(first) == 40);
  w.Advance(100ms);  // the head's clock: the runs it accepted start
  const int lists = w.ray().RequestCount(testing::kRouteList);
  const int gets = w.ray().RequestCount(testing::kRouteGet);
  // Two actions, a stop and a submit, among 40 jobs listed: the two runs are read again.
  set_spec(7, 2);
  const std::string new_id = "j7-" + w.HashOf("jobs/j7.yaml");
  PassResult r = w.Pass();
  REQUIRE(r.outcomes.size() == 2);
  CHECK(w.ray().RequestCount(testing::kRouteList) == lists + 1);  // the plan's listing only
  CHECK(w.ray().RequestCount(testing::kRouteGet) >= gets + 2);
  // The records hold Ray's view after the actions all the same: the new run as Ray has it
  // (its submission time is Ray's), the replaced one stopped by the pass.
  const core::StatusRecord& rec = w.Record("j7");
  CHECK(rec.submission_id == new_id);
  CHECK(rec.status == *w.ray().StatusOf(new_id));
  CHECK(rec.start_time_ms.has_value());
  REQUIRE(rec.attempts.size() == 2);
  CHECK(rec.attempts[0].stop_reason == core::StopReason::kReplacement);
  CHECK(w.Record("j8").status == RayJobStatus::kRunning);
  SECTION("as many actions as one per 16 jobs listed, or more: every job is listed again") {
    for (int i = 0; i < 3; ++i) set_spec(i, 3);
    const int before = w.ray().RequestCount(testing::kRouteList);
    REQUIRE(w.Pass().outcomes.size() == 6);
    CHECK(w.ray().RequestCount(testing::kRouteList) == before + 2);
  }
}

TEST_CASE("a run that reached Ray before a crash is adopted, not submitted twice", "[engine]") {
  World w;
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  const std::string id = "a-" + w.HashOf("jobs/a.yaml");

  SECTION("the job is in Ray and the ledger is empty") {
    // A first pass that died after its submit: Ray has the job, the status branch nothing.
    ReconcileOptions no_status;
    no_status.record_status = false;
    REQUIRE(w.Pass(no_status).exit_status == kExitApplied);
    REQUIRE(w.store().ledger().empty());

    PassResult r = w.Pass();
    CHECK(r.plan.actions.empty());
    CHECK(w.ray().JobCount() == 1);
    CHECK(w.ray().SubmitBodies().size() == 1);
    REQUIRE(w.store().ledger().contains("a"));
    CHECK(w.Record("a").submission_id == id);
    REQUIRE(w.Record("a").attempts.size() == 1);
    CHECK(w.Record("a").attempts[0].submission_id == id);
  }

  SECTION("the job appears between the listing and the submit") {
    w.ray().DropNext(testing::kRouteSubmit, 1, /*after_handling=*/true);
    PassResult r = w.Pass();
    REQUIRE(r.outcomes.size() == 1);
    CHECK(r.outcomes[0].ok);
    CHECK(w.ray().JobCount() == 1);
    CHECK(w.Record("a").submission_id == id);
    CHECK(w.Pass().plan.actions.empty());
    CHECK(w.ray().JobCount() == 1);
  }
}

// What a pass decided, in words: every action and every record's phase.
std::vector<std::string> Decisions(const PassResult& r) {
  std::vector<std::string> out;
  for (const core::Action& a : r.plan.actions) {
    out.push_back((a.kind == core::ActionKind::kStop ? "stop " : "submit ") + a.submission_id);
  }
  for (const core::StatusRecord& rec : r.records) {
    out.push_back(rec.name + " " + std::string(core::PhaseName(rec.phase)));
  }
  return out;
}

TEST_CASE("overlapped reads list Ray on another thread and decide exactly as sequential ones",
          "[engine]") {
  // A head whose jobs move only on `clock`, never advanced here: both passes see one state.
  testing::FakeClock clock;
  FakeRayServer ray{testing::FrozenHeadOptions(&clock)};
  testing::GatedJobServer client(ray.address());
  InMemoryDesiredStateSource source;
  InMemoryStatusStore store;
  source.SetFile("cluster.yaml", "address: " + ray.address() + "\n", CommitId(0));
  source.SetFile("jobs/a.yaml", CustomSpec("python a.py"), CommitId(1));
  source.SetFile("jobs/b.yaml", CustomSpec("python b.py"), CommitId(1));
  ReconcileDeps deps;
  deps.source = &source;
  deps.server = &client;
  deps.store = &store;
  ReconcileOptions options;
  options.ray_address = ray.address();
  REQUIRE(RunReconcilePass(deps, options).errors.empty());  // submits a and b, records them

  std::thread::id listed_on;
  auto record_thread = [&]() { listed_on = std::this_thread::get_id(); };
  options.dry_run = true;
  client.before_next_list = record_thread;
  const PassResult sequential = RunReconcilePass(deps, options);
  CHECK(listed_on == std::this_thread::get_id());

  options.overlap_reads = true;
  client.before_next_list = record_thread;
  const PassResult overlapped = RunReconcilePass(deps, options);
  CHECK(listed_on != std::this_thread::get_id());

  REQUIRE(sequential.errors.empty());
  REQUIRE(overlapped.errors.empty());
  CHECK(overlapped.records.size() == 2);
  CHECK(Decisions(overlapped) == Decisions(sequential));
  REQUIRE(overlapped.ledger != nullptr);
  CHECK(overlapped.ledger->size() == 2);  // the ledger it read, handed back
}

TEST_CASE("when Ray cannot be reached nothing is acted on or recorded", "[engine]") {
  InMemoryDesiredStateSource source;
  InMemoryStatusStore store;
  std::string address;
  {
    FakeRayServer gone;
    address = gone.address();
  }
  source.SetFile("cluster.yaml", "address: " + address + "\n", CommitId(0));
  source.SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  adapters::RayHttpJobServer client(testing::FastClientOptions(address));
  ReconcileDeps deps;
  deps.source = &source;
  deps.server = &client;
  deps.store = &store;
  core::StatusRecord known;
  known.name = "a";
  known.spec_path = "jobs/a.yaml";
  known.phase = core::Phase::kRunning;
  REQUIRE(store.Write({{"a", known}}, ports::StatusCommit{}).ok());
  const size_t commits = store.commits().size();
  ReconcileOptions options;
  options.ray_address = address;
  options.overlap_reads = GENERATE(false, true);  // the ledger read while Ray is listed, or after
  PassResult r = RunReconcilePass(deps, options);
  CHECK_FALSE(r.planned);
  CHECK(r.outcomes.empty());
  CHECK(r.exit_status == kExitError);
  CHECK(r.errors_by_kind[core::ErrorKind::kTransient] == 1);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].message().find("cannot list the jobs in Ray") != std::string::npos);
  CHECK(store.commits().size() == commits);
  // The daemon shows the ledger's jobs as the last known ones, and that Ray is unreachable.
  CHECK(r.unreachable == "Ray");
  REQUIRE(r.ledger_records.size() == 1);
  CHECK(r.ledger_records[0].name == "a");
  CHECK(r.records.empty());
}

TEST_CASE("a desired state that cannot be loaded or an invalid cluster file does nothing",
          "[engine]") {
  World w;
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  SECTION("unreachable repository") {
    w.source().FailWith(core::Error::Transient("cannot fetch origin"));
    PassResult r = w.Pass();
    CHECK(r.exit_status == kExitError);
    CHECK(r.errors_by_kind[core::ErrorKind::kTransient] == 1);
    CHECK(r.unreachable == "Git");
  }
  SECTION("invalid cluster file") {
    w.source().SetFile("cluster.yaml", "address: 12\nbogus: 1\n", CommitId(2));
    PassResult r = w.Pass();
    CHECK(r.exit_status == kExitError);
    CHECK_FALSE(r.diagnostics.empty());
    CHECK(r.diagnostics[0].path == "cluster.yaml");
  }
  CHECK(w.ray().JobCount() == 0);
  CHECK(w.store().commits().empty());
}

// A head restart is the cluster's failure (docs/reconcile.md, "Failure classes"): a lost run
// is resubmitted from `infra_retries`, after its backoff, never from `retries`.
TEST_CASE("after a head restart finished runs stay finished and lost ones retry only if allowed",
          "[engine]") {
  FakeRayOptions fo;
  fo.run_time = 20ms;
  fo.start_delay = 10ms;
  World w(fo);
  w.source().SetFile("jobs/done.yaml", CustomSpec("echo hi"), CommitId(1));
  w.source().SetFile("jobs/once.yaml", CustomSpec("sleep 300", "infra_retries: 0\n"), CommitId(1));
  w.source().SetFile("jobs/twice.yaml", CustomSpec("sleep 301"), CommitId(1));
  int64_t now = 1'800'000'000'000;
  const auto pass_at = [&](int64_t t) {
    ReconcileOptions options;
    options.now_ms = t;
    return w.Pass(options);
  };
  REQUIRE(pass_at(now += 1000).exit_status == kExitApplied);
  w.Advance(150ms);
  REQUIRE(pass_at(now += 1000).plan.actions.empty());
  REQUIRE(w.Record("done").phase == Phase::kSucceeded);
  REQUIRE(w.Record("once").phase == Phase::kRunning);

  w.ray().Restart();
  // The pass that finds them lost resubmits nothing yet: the backoff first.
  PassResult found = pass_at(now += 1000);
  CHECK(found.plan.actions.empty());
  CHECK(w.Record("twice").phase == Phase::kLost);
  CHECK(w.Record("twice").attempts.back().ending.get().lost_ms == now);

  PassResult r = pass_at(now += 30'000);
  CHECK(r.exit_status == kExitApplied);
  REQUIRE(r.plan.actions.size() == 1);
  CHECK(r.plan.actions[0].name == "twice");
  CHECK(r.plan.actions[0].attempt == 1);
  CHECK(w.ray().JobCount() == 1);

  CHECK(w.Record("done").phase == Phase::kSucceeded);
  CHECK(w.Record("once").phase == Phase::kLost);
  CHECK(w.Record("once").attempts.back().phase == Phase::kLost);
  const std::string twice_id = "twice-" + w.HashOf("jobs/twice.yaml") + "-r1";
  CHECK(w.Record("twice").submission_id == twice_id);
  CHECK(w.Record("twice").attempt == 1);
  REQUIRE(w.Record("twice").attempts.size() == 2);
  CHECK(w.Record("twice").attempts[0].phase == Phase::kLost);
  CHECK(w.Record("twice").attempts[0].failure_class == core::FailureClass::kInfra);

  // Nothing new on the next pass: the lost run without infrastructure retries is not
  // resubmitted.
  PassResult again = pass_at(now += 600'000);
  CHECK(again.plan.actions.empty());
  CHECK(w.ray().JobCount() == 1);
}

TEST_CASE("suspend stops the run and unsuspending submits the next attempt", "[engine]") {
  World w;
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  const std::string id0 = "a-" + w.HashOf("jobs/a.yaml");
  REQUIRE(w.Pass().exit_status == kExitApplied);
  w.Advance(100ms);

  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300", "suspend: true\n"), CommitId(2));
  PassResult stop = w.Pass();
  REQUIRE(stop.outcomes.size() == 1);
  CHECK(stop.outcomes[0].action.kind == core::ActionKind::kStop);
  // Ray stops asynchronously: until it reports the run ended, the job is Stopping.
  CHECK(w.Record("a").phase == Phase::kStopping);
  REQUIRE(w.Record("a").FindAttempt(id0) != nullptr);
  CHECK(w.Record("a").FindAttempt(id0)->stop_reason == core::StopReason::kSuspend);
  CHECK(w.Record("a").FindAttempt(id0)->stop_sent_ms.has_value());
  w.Advance(200ms);
  CHECK(w.Pass().plan.actions.empty());  // still suspended: nothing to do
  CHECK(w.ray().StatusOf(id0) == RayJobStatus::kStopped);
  CHECK(w.Record("a").phase == Phase::kSuspended);

  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(3));
  PassResult resume = w.Pass();
  REQUIRE(resume.outcomes.size() == 1);
  CHECK(resume.outcomes[0].action.kind == core::ActionKind::kSubmit);
  CHECK(resume.outcomes[0].action.submission_id == id0 + "-r1");
  CHECK(w.Record("a").phase == Phase::kPending);
  CHECK(w.Record("a").attempts.size() == 2);
}

TEST_CASE("a run stopped by a person is not resubmitted", "[engine]") {
  World w;
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  const std::string id0 = "a-" + w.HashOf("jobs/a.yaml");
  REQUIRE(w.Pass().exit_status == kExitApplied);
  w.ray().SetStatus(id0, RayJobStatus::kStopped, "stopped by hand");
  PassResult r = w.Pass();
  CHECK(r.plan.actions.empty());
  CHECK(w.Record("a").phase == Phase::kStopped);
  CHECK(w.Record("a").attempts.back().stop_reason == core::StopReason::kNone);
}

TEST_CASE("a run past its deadline is stopped, recorded DeadlineExceeded and never resubmitted",
          "[engine]") {
  World w;
  // Passes on the head's clock: the deadline is counted from Ray's start_time.
  auto pass = [&w]() {
    ReconcileOptions options;
    options.now_ms = w.clock().NowMs();
    return w.Pass(options);
  };
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 600", "deadline: 5s\nretries: 3\n"),
                     CommitId(1));
  const std::string id0 = "a-" + w.HashOf("jobs/a.yaml");
  REQUIRE(pass().exit_status == kExitApplied);
  w.Advance(1s);
  PassResult running = pass();
  CHECK(running.plan.actions.empty());
  CHECK(w.Record("a").phase == Phase::kRunning);
  REQUIRE(running.plan.recheck_at_ms);
  CHECK(*running.plan.recheck_at_ms - w.clock().NowMs() == 4'000);

  w.Advance(4s);
  PassResult due = pass();
  REQUIRE(due.outcomes.size() == 1);
  CHECK(due.outcomes[0].action.kind == core::ActionKind::kStop);
  CHECK(due.outcomes[0].action.stop_reason == core::StopReason::kDeadline);
  CHECK(w.Record("a").phase == Phase::kDeadlineExceeded);
  REQUIRE(w.Record("a").FindAttempt(id0) != nullptr);
  CHECK(w.Record("a").FindAttempt(id0)->stop_reason == core::StopReason::kDeadline);

  // Ended STOPPED: not retried though retries are left, not restored, on every later pass.
  for (int i = 0; i < 3; ++i) {
    w.Advance(1s);
    PassResult later = pass();
    CHECK(later.plan.actions.empty());
    CHECK(w.ray().StatusOf(id0) == RayJobStatus::kStopped);
    CHECK(w.Record("a").phase == Phase::kDeadlineExceeded);
  }
  CHECK(w.ray().JobCount() == 1);

  // Editing the deadline (a policy field) starts nothing; a new rerun token starts a new run.
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 600", "deadline: 1h\nretries: 3\n"),
                     CommitId(2));
  CHECK(pass().plan.actions.empty());
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 600", "deadline: 1h\nretries: 3\nrerun: 2\n"),
                     CommitId(3));
  PassResult rerun = pass();
  REQUIRE(rerun.outcomes.size() == 1);
  CHECK(rerun.outcomes[0].action.kind == core::ActionKind::kSubmit);
  CHECK(rerun.outcomes[0].action.submission_id != id0);
}

// Ray dates a run on the head's clock; the daemon's may be off (docs/reconcile.md, "The head's
// clock"). Passes on the daemon's clock, the head's offset from it.
PassResult PassOnDaemonClock(World& w) {
  ReconcileOptions options;
  options.now_ms = w.clock().NowMs();
  return w.Pass(options);
}

TEST_CASE("a daemon 2 h ahead of the head stops no run for a deadline it has not reached there",
          "[engine]") {
  FakeRayOptions head;
  head.clock_offset = -2h;
  World w(head);
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 36000", "deadline: 1h\n"), CommitId(1));
  const std::string id0 = "a-" + w.HashOf("jobs/a.yaml");
  REQUIRE(PassOnDaemonClock(w).exit_status == kExitApplied);
  w.Advance(10s);
  // 10 s old on the head; 2 h and 10 s by the daemon's clock.
  PassResult young = PassOnDaemonClock(w);
  CHECK(young.plan.actions.empty());
  CHECK(w.Record("a").phase == Phase::kRunning);
  REQUIRE(young.plan.recheck_at_ms);
  CHECK(*young.plan.recheck_at_ms - w.clock().NowMs() == 3'590'000);
  CHECK(young.head_clock_offset_ms == -7'200'000);
  REQUIRE(young.warnings.size() == 1);
  CHECK(young.warnings[0].kind == kWarnClockSkew);
  CHECK_THAT(young.warnings[0].message,
             Catch::StartsWith("the daemon's clock is 2h ahead of the Ray head's (read from the "
                               "Date header of its answers)"));
  CHECK(young.exit_status == kExitApplied);  // a warning, not an error

  w.Advance(3'589s);
  CHECK(PassOnDaemonClock(w).plan.actions.empty());
  w.Advance(1s);
  PassResult due = PassOnDaemonClock(w);
  REQUIRE(due.outcomes.size() == 1);
  CHECK(due.outcomes[0].action.stop_reason == core::StopReason::kDeadline);
  CHECK(w.Record("a").phase == Phase::kDeadlineExceeded);
  // The stop is dated by the daemon, whose clock its resend rule reads.
  REQUIRE(w.Record("a").FindAttempt(id0) != nullptr);
  CHECK(w.Record("a").FindAttempt(id0)->stop_sent_ms == w.clock().NowMs());
}

TEST_CASE("a daemon 2 h behind the head stops a run once its deadline has passed there",
          "[engine]") {
  FakeRayOptions head;
  head.clock_offset = 2h;
  World w(head);
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 36000", "deadline: 1h\n"), CommitId(1));
  REQUIRE(PassOnDaemonClock(w).exit_status == kExitApplied);
  w.Advance(1h - 1s);
  PassResult young = PassOnDaemonClock(w);
  CHECK(young.plan.actions.empty());
  CHECK(*young.plan.recheck_at_ms - w.clock().NowMs() == 1'000);
  REQUIRE(young.warnings.size() == 1);
  CHECK_THAT(young.warnings[0].message,
             Catch::StartsWith("the daemon's clock is 2h behind the Ray head's"));
  // The run's start_time is 1 h after the daemon's time: by its own clock it never started.
  w.Advance(1s);
  PassResult due = PassOnDaemonClock(w);
  REQUIRE(due.outcomes.size() == 1);
  CHECK(due.outcomes[0].action.stop_reason == core::StopReason::kDeadline);
  CHECK(w.Record("a").phase == Phase::kDeadlineExceeded);
}

TEST_CASE("deadlines count on the head's Date and the time since, never on a wall clock of ours",
          "[engine]") {
  World w;  // the head on the test's clock
  // A client reading the system's clocks: its wall clock is months from the head's.
  adapters::RayHttpJobServer client(testing::FastClientOptions(w.ray().address()),
                                    testing::InProcessTransport(w.ray()));
  auto pass = [&w, &client]() {
    ReconcileDeps deps;
    deps.source = &w.source();
    deps.server = &client;
    deps.store = &w.store();
    ReconcileOptions options;
    options.ray_address = w.ray().address();
    options.now_ms = w.clock().NowMs();
    PassResult r = RunReconcilePass(deps, options);
    w.ray().Tick();
    return r;
  };
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 600", "deadline: 5s\n"), CommitId(1));
  REQUIRE(pass().outcomes.size() == 1);
  w.Advance(4s);
  CHECK(pass().plan.actions.empty());
  w.Advance(1s);
  PassResult due = pass();
  REQUIRE(due.outcomes.size() == 1);
  CHECK(due.outcomes[0].action.stop_reason == core::StopReason::kDeadline);
}

TEST_CASE("a head within a minute of the daemon is no warning, and the head's second counts",
          "[engine]") {
  FakeRayOptions head;
  head.clock_offset = -59s;
  World w(head);
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 36000", "deadline: 10s\n"), CommitId(1));
  REQUIRE(PassOnDaemonClock(w).warnings.empty());
  // 9.5 s after the submission the head's Date says 9 s: the deadline waits for the next
  // second of it, never falls due early.
  w.Advance(9'500ms);
  PassResult young = PassOnDaemonClock(w);
  CHECK(young.warnings.empty());
  CHECK(young.plan.actions.empty());
  CHECK(*young.plan.recheck_at_ms - w.clock().NowMs() == 1'000);
  w.Advance(500ms);
  CHECK(PassOnDaemonClock(w).outcomes.size() == 1);
  w.ray().SetClockOffset(-61s);  // the head's clock steps back
  PassResult skewed = PassOnDaemonClock(w);
  REQUIRE(skewed.warnings.size() == 1);
  CHECK_THAT(skewed.warnings[0].message, Catch::StartsWith("the daemon's clock is 1m1s ahead"));
}

TEST_CASE("the max-stops guard blocks the stops and exits 3 until overridden", "[engine]") {
  World w;
  for (const char* n : {"a", "b", "c"}) {
    w.source().SetFile(std::string("jobs/") + n + ".yaml", CustomSpec("sleep 300"), CommitId(1));
  }
  REQUIRE(w.Pass().exit_status == kExitApplied);
  for (const char* n : {"a", "b", "c"})
    w.source().RemoveFile(std::string("jobs/") + n + ".yaml", CommitId(2));

  PassResult blocked = w.Pass();
  CHECK(blocked.blocked);
  CHECK(blocked.exit_status == kExitBlocked);
  CHECK(blocked.outcomes.empty());
  CHECK(w.Record("a").phase == Phase::kBlocked);
  for (const char* n : {"a", "b", "c"}) {
    CHECK(w.ray().StatusOf(n + std::string("-") + w.Record(n).spec_hash) != RayJobStatus::kStopped);
  }

  ReconcileOptions override_guard;
  override_guard.policy.max_stops = 3;
  override_guard.policy.max_stops_explicit = true;
  PassResult forced = w.Pass(override_guard);
  CHECK_FALSE(forced.blocked);
  CHECK(forced.exit_status == kExitApplied);
  CHECK(CountStops(forced) == 3);
  CHECK(w.Record("a").phase == Phase::kStopping);
  CHECK(w.Record("a").attempts.back().stop_reason == core::StopReason::kRemoval);
}

TEST_CASE("a dry run plans but sends nothing and records nothing", "[engine]") {
  World w;
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  ReconcileOptions dry;
  dry.dry_run = true;
  PassResult r = w.Pass(dry);
  CHECK(CountSubmits(r) == 1);
  CHECK(r.outcomes.empty());
  CHECK(r.transitions.size() == 1);
  CHECK(w.ray().JobCount() == 0);
  CHECK(w.store().commits().empty());
}

TEST_CASE("a dry run without records plans as one with them and builds no record", "[engine]") {
  World w;
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  w.source().SetFile("jobs/b.yaml", CustomSpec("sleep 301"), CommitId(1));
  REQUIRE(w.Pass().errors.empty());  // a and b run, and are recorded
  w.Advance(200ms);
  w.source().SetFile("jobs/b.yaml", CustomSpec("sleep 302"), CommitId(2));  // b replaced
  w.source().SetFile("jobs/c.yaml", CustomSpec("sleep 303"), CommitId(2));  // c new
  core::Value someone_elses = core::Value::Object{};
  someone_elses["entrypoint"] = "python someone_elses.py";
  someone_elses["submission_id"] = "someone-elses-run";
  REQUIRE(w.client().Submit(someone_elses).ok());

  ReconcileOptions with_records;
  with_records.dry_run = true;
  ReconcileOptions without = with_records;
  without.build_records = false;
  const PassResult full = w.Pass(with_records);
  const PassResult plan_only = w.Pass(without);
  REQUIRE(plan_only.errors.empty());
  CHECK(plan_only.planned);
  CHECK(CountStops(plan_only) == 1);
  CHECK(CountSubmits(plan_only) == 2);
  CHECK(Decisions(plan_only).size() == 3);  // the actions, and no record
  std::vector<std::string> actions_of_full = Decisions(full);
  actions_of_full.resize(3);
  CHECK(Decisions(plan_only) == actions_of_full);
  REQUIRE(plan_only.plan.jobs.size() == full.plan.jobs.size());
  for (size_t i = 0; i < full.plan.jobs.size(); ++i) {
    CHECK(plan_only.plan.jobs[i].name == full.plan.jobs[i].name);
    CHECK(plan_only.plan.jobs[i].phase == full.plan.jobs[i].phase);
    CHECK(plan_only.plan.jobs[i].submission_id == full.plan.jobs[i].submission_id);
  }
  CHECK(full.records.size() == 3);
  CHECK(plan_only.records.empty());
  CHECK_FALSE(full.transitions.empty());
  CHECK(plan_only.transitions.empty());
  REQUIRE(plan_only.ledger != nullptr);
  CHECK(plan_only.ledger->size() == 2);  // the ledger it planned against, handed back
  CHECK(plan_only.exit_status == full.exit_status);
  CHECK(w.store().commits().size() == 1);  // the first pass's only

  // What no step of a pass reads is let go of: the listed jobs keep no entrypoint.
  REQUIRE(plan_only.plan.unmanaged.size() == 1);
  CHECK(plan_only.plan.unmanaged[0].entrypoint.empty());
  CHECK_FALSE(plan_only.plan.unmanaged[0].driver_node_id.has_value());

  // A pass that acts always records, whatever build_records says.
  ReconcileOptions acting;
  acting.build_records = false;
  const PassResult acted = w.Pass(acting);
  REQUIRE(acted.errors.empty());
  CHECK(acted.records.size() == 3);
  CHECK(w.store().commits().size() == 2);
}

TEST_CASE("status records carry the spec, the attempt and Ray's view of it", "[engine]") {
  World w;
  w.source().SetFile("jobs/team/a.yaml", CustomSpec("sleep 300", "on_remove: keep\n"), CommitId(1));
  const std::string hash = w.HashOf("jobs/team/a.yaml");
  const std::string id = "team-a-" + hash;
  REQUIRE(w.Pass().exit_status == kExitApplied);
  w.Advance(200ms);
  REQUIRE(w.Pass().plan.actions.empty());

  const core::StatusRecord& rec = w.Record("team-a");
  CHECK(rec.name == "team-a");
  CHECK(rec.spec_path == "jobs/team/a.yaml");
  CHECK(rec.spec_hash == hash);
  CHECK(rec.spec_commit == CommitId(1));
  CHECK(rec.phase == Phase::kRunning);
  CHECK(rec.on_remove == core::OnRemove::kKeep);
  CHECK(rec.submission_id == id);
  CHECK(rec.attempt == 0);
  CHECK(rec.status == RayJobStatus::kRunning);
  CHECK(rec.start_time_ms.has_value());
  CHECK_FALSE(rec.end_time_ms.has_value());
  CHECK(rec.dashboard_url == w.ray().address() + "/#/jobs/" + id);
  CHECK(rec.errors.empty());
  REQUIRE(rec.attempts.size() == 1);
  CHECK(rec.attempts[0].submission_id == id);
  CHECK(rec.attempts[0].spec_hash == hash);
  CHECK(rec.attempts[0].status == RayJobStatus::kRunning);
}

TEST_CASE("an invalid spec over a running job freezes it and records the error line", "[engine]") {
  World w;
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  const std::string id = "a-" + w.HashOf("jobs/a.yaml");
  REQUIRE(w.Pass().exit_status == kExitApplied);

  w.source().SetFile("jobs/a.yaml", "workload: custom\nentrypoint: [unclosed\n", CommitId(2));
  PassResult r = w.Pass();
  CHECK(r.plan.actions.empty());
  CHECK(r.exit_status == kExitError);
  CHECK_FALSE(r.diagnostics.empty());
  CHECK(w.ray().StatusOf(id) != RayJobStatus::kStopped);
  const core::StatusRecord& rec = w.Record("a");
  CHECK(rec.phase == Phase::kInvalid);
  REQUIRE_FALSE(rec.errors.empty());
  INFO(rec.errors[0]);
  CHECK(rec.errors[0].rfind("jobs/a.yaml:3:1: error: ", 0) == 0);
  CHECK(rec.submission_id == id);
}

TEST_CASE("the status commit lists one transition per changed job with trailers", "[engine]") {
  FakeRayOptions fo;
  fo.start_delay = 60s;  // stays PENDING for the whole test
  World w(fo);
  w.source().SetFile("jobs/a.yaml", CustomSpec("sleep 300"), CommitId(1));
  w.source().SetFile("jobs/b.yaml", CustomSpec("sleep 301"), CommitId(1));
  const std::string id_a = "a-" + w.HashOf("jobs/a.yaml");
  const std::string id_b = "b-" + w.HashOf("jobs/b.yaml");
  PassResult r = w.Pass();
  REQUIRE(w.store().commits().size() == 1);
  const ports::StatusCommit& msg = w.store().commits()[0].message;
  CHECK(msg.subject == "ray-gitops: a new -> Pending, b new -> Pending");
  CHECK(msg.body_lines == std::vector<std::string>{"a: new -> Pending (" + id_a + ")",
                                                   "b: new -> Pending (" + id_b + ")"});
  CHECK(r.transitions == msg.body_lines);
  CHECK(msg.trailers.at("Spec-Commit") == CommitId(1));
  CHECK(msg.trailers.at("Ray-Cluster") == w.ray().address());

  w.source().RemoveFile("jobs/b.yaml", CommitId(2));
  w.Pass();
  REQUIRE(w.store().commits().size() == 2);
  CHECK(w.store().commits()[1].message.subject == "ray-gitops: b Pending -> Stopping");
  CHECK(w.store().commits()[1].message.body_lines ==
        std::vector<std::string>{"b: Pending -> Stopping (" + id_b + ")"});
}

TEST_CASE("Ray's log tail and known secrets never reach the status records or the result",
          "[engine][secrets]") {
  World w;
  const std::string cluster = "address: " + w.ray().address() +
                              "\nruntime_env:\n  env_vars:\n    WANDB_API_KEY: "
                              "wandb-0123456789abcdef\n";
  w.source().SetFile("cluster.yaml", cluster, CommitId(1));
  w.source().SetFile("jobs/a.yaml",
                     CustomSpec("env; exit 1", "env_vars:\n  HF_TOKEN: hf_spec_0123456789\n"),
                     CommitId(1));
  const std::string id = "a-" + w.HashOf("jobs/a.yaml");
  ReconcileOptions options;
  options.secrets.Add("ray-token-secret-value");
  REQUIRE(w.Pass(options).exit_status == kExitApplied);
  const std::string tail =
      "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 "
      "chars):\nRAY_AUTH_TOKEN=ray-token-secret-value\nHF_TOKEN=hf_spec_0123456789\n"
      "WANDB_API_KEY=wandb-0123456789abcdef\n";
  w.ray().SetStatus(id, RayJobStatus::kFailed, tail);
  PassResult r = w.Pass(options);
  const core::StatusRecord rec = w.Record("a");
  CHECK(rec.phase == Phase::kFailed);
  CHECK(rec.message ==
        "Job entrypoint command failed with exit code 1, last available logs (truncated to "
        "20,000 chars):");
  REQUIRE_FALSE(rec.attempts.empty());
  CHECK(rec.attempts.back().message == rec.message);
  const core::JobPlan* jp = r.plan.FindJob("a");
  REQUIRE(jp != nullptr);
  CHECK(jp->message == rec.message);
  REQUIRE(jp->observed.has_value());
  CHECK(jp->observed->message == rec.message);
  // The redactor the pass used knows the process's and the desired state's secrets.
  CHECK(r.redactor.Apply("ray-token-secret-value hf_spec_0123456789 wandb-0123456789abcdef") ==
        "<redacted> <redacted> <redacted>");
  for (const auto& c : w.store().commits()) {
    for (const auto& [name, record] : c.changes) {
      if (!record) continue;
      const std::string text = record->message;
      CHECK(text.find("hf_spec") == std::string::npos);
      CHECK(text.find('\n') == std::string::npos);
    }
  }
}

}  // namespace
}  // namespace rg::engine

namespace rg::engine {
namespace {

using namespace std::chrono_literals;

TEST_CASE("a scheduled job runs once per slot on the injected clock and never late or twice",
          "[engine][schedule]") {
  World w;
  adapters::ZoneCache zones;
  w.source().OnState(
      [&zones](core::DesiredState& state) { adapters::ResolveScheduleZones(state, zones); });
  auto pass = [&w]() {
    ReconcileOptions options;
    options.now_ms = w.clock().NowMs();
    return w.Pass(options);
  };
  // The clock starts at 2026-01-01T00:00:00Z.
  w.source().SetFile("jobs/a.yaml",
                     "workload: custom\nentrypoint: sleep 90\nschedule: \"*/5 * * * *\"\n"
                     "starting_deadline: 2m\n",
                     CommitId(1));
  const std::string base = "a-" + w.HashOf("jobs/a.yaml");
  w.Advance(10s);
  PassResult first = pass();
  REQUIRE(first.outcomes.size() == 1);
  CHECK(first.outcomes[0].ok);
  CHECK(first.outcomes[0].action.submission_id == base + "-202601010000");
  CHECK(w.ray().StatusOf(base + "-202601010000").has_value());
  REQUIRE(w.ray().SubmitBodies().size() == 1);
  CHECK_THAT(w.ray().SubmitBodies()[0],
             Catch::Contains("\"" + std::string(core::kMetaSlot) + "\":\"202601010000\""));

  // Between slots: nothing, and the plan is due again at the next slot.
  w.Advance(50s);
  PassResult between = pass();
  CHECK(between.plan.actions.empty());
  REQUIRE(between.plan.recheck_at_ms);
  CHECK(*between.plan.recheck_at_ms == testing::FakeClock::kStartWallMs + 300'000);
  CHECK(w.Record("a").phase == Phase::kRunning);

  // The next slot: its own run; the pass right after (a restart, say) adds none.
  w.Advance(4min + 5s);
  PassResult next = pass();
  REQUIRE(next.outcomes.size() == 1);
  CHECK(next.outcomes[0].action.submission_id == base + "-202601010005");
  w.Advance(5s);
  CHECK(pass().plan.actions.empty());
  CHECK(w.ray().JobCount() == 2);

  // Down past a slot's starting deadline: nothing runs late, the missed slots are recorded.
  w.Advance(17min + 50s);  // 00:23:00, the 00:20 slot is 3 minutes old
  PassResult late = pass();
  CHECK(late.plan.actions.empty());
  CHECK(w.ray().JobCount() == 2);
  const core::StatusRecord& rec = w.Record("a");
  CHECK(rec.phase == Phase::kSucceeded);
  REQUIRE(rec.skipped_slots.size() == 2);
  CHECK(rec.skipped_slots[0].slot_ms == testing::FakeClock::kStartWallMs + 15 * 60'000);
  CHECK(rec.skipped_slots[1].slot_ms == testing::FakeClock::kStartWallMs + 20 * 60'000);
  CHECK(rec.skipped_slots[1].reason == "missed: not started within starting_deadline 2m");
}

TEST_CASE("a scheduled spec naming an unknown zone is invalid at its line and column",
          "[engine][schedule]") {
  World w;
  adapters::ZoneCache zones;
  w.source().OnState(
      [&zones](core::DesiredState& state) { adapters::ResolveScheduleZones(state, zones); });
  w.source().SetFile("jobs/a.yaml",
                     "workload: custom\nentrypoint: sleep 90\nschedule: \"* * * * *\"\n"
                     "timezone: Mars/Olympus\n",
                     CommitId(1));
  ReconcileOptions options;
  options.now_ms = w.clock().NowMs();
  PassResult result = w.Pass(options);
  CHECK(result.plan.actions.empty());
  CHECK(w.Record("a").phase == Phase::kInvalid);
  REQUIRE(w.Record("a").errors.size() == 1);
  CHECK_THAT(w.Record("a").errors[0],
             Catch::StartsWith("jobs/a.yaml:4:11: error: timezone: unknown time zone "
                               "\"Mars/Olympus\""));
  CHECK_THAT(w.Record("a").errors[0], Catch::Contains(zones.dir()));
}

}  // namespace
}  // namespace rg::engine
