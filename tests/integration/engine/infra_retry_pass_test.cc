// The cluster's failures through the reconcile pass against the fake head (DESIGN §3.1;
// docs/reconcile.md, "Failure classes"): a head restart that forgets every job resubmits each
// active run once, as an infrastructure failure, after its backoff; finished runs are never
// re-run; a run whose JobSupervisor died is retried without spending `retries`; once
// `infra_retries` is spent, nothing more is submitted. The test's clock moves the head and the
// passes alike: no real 30 s wait.

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/in_memory_ports.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using namespace std::chrono_literals;
using core::FailureClass;
using core::Phase;
using core::RayJobStatus;

constexpr const char* kCommit = "0000000000000000000000000000000000000001";

struct World : testing::PassHarness {
  std::unique_ptr<testing::InMemoryDesiredStateSource> source = NewRepo(kCommit);

  World() {
    // Runs until stopped; one infrastructure retry.
    source->SetFile("jobs/train.yaml",
                    "workload: custom\nentrypoint: sleep 30000\ninfra_retries: 1\n", kCommit);
    source->SetFile("jobs/done.yaml", "workload: custom\nentrypoint: echo done\n", kCommit);
    source->SetFile("jobs/broken.yaml", "workload: custom\nentrypoint: exit 3\n", kCommit);
  }

  // A pass at the test's clock: the daemon's time and the head's are the same.
  PassResult Pass() {
    ReconcileOptions options;
    options.now_ms = clock().NowMs();
    return PassHarness::Pass(*source, options);
  }

  int Submits() { return ray().RequestCount(testing::kRouteSubmit); }
};

TEST_CASE("a head restart resubmits each active run once as an infrastructure failure") {
  World w;
  w.Pass();
  w.Advance(2s);
  w.Pass();
  const std::string first = w.Record("train").submission_id;
  REQUIRE(w.Record("train").phase == Phase::kRunning);
  REQUIRE(w.Record("done").phase == Phase::kSucceeded);
  REQUIRE(w.Record("broken").phase == Phase::kFailed);
  const int submits = w.Submits();

  w.ray().Restart();
  w.Advance(1s);
  w.Pass();
  {
    const core::StatusRecord& rec = w.Record("train");
    INFO(rec.message);
    CHECK(rec.phase == Phase::kLost);
    CHECK(rec.message.find("retrying after Lost, 1 of 1") != std::string::npos);
    const core::AttemptRecord* lost = rec.FindAttempt(first);
    REQUIRE(lost != nullptr);
    CHECK(lost->failure_class == FailureClass::kInfra);
    CHECK(lost->ending.get().lost_ms == w.clock().NowMs());
  }
  CHECK(w.Submits() == submits);  // the backoff first

  w.Advance(31s);
  w.Pass();
  CHECK(w.Submits() == submits + 1);
  CHECK(w.Record("train").submission_id == first + "-r1");
  CHECK(w.Record("train").attempt == 1);
  // Finished runs, forgotten by Ray, are never re-run.
  CHECK(w.Record("done").phase == Phase::kSucceeded);
  CHECK(w.Record("broken").phase == Phase::kFailed);
  w.Advance(2s);
  w.Pass();
  CHECK(w.Record("train").phase == Phase::kRunning);
  CHECK(w.Submits() == submits + 1);

  SECTION("a second restart, with infra_retries: 1 spent: not retried") {
    w.ray().Restart();
    w.Advance(1s);
    w.Pass();
    w.Advance(15min);
    w.Pass();
    w.Advance(15min);
    w.Pass();
    const core::StatusRecord& rec = w.Record("train");
    INFO(rec.message);
    CHECK(w.Submits() == submits + 1);
    CHECK(rec.phase == Phase::kLost);
    CHECK(rec.message.find("infrastructure retries exhausted (1 of 1 used) after Lost") !=
          std::string::npos);
  }
  SECTION("its supervisor dies: retried without spending retries, the status names why") {
    REQUIRE(w.ray().SetStatus(first + "-r1", RayJobStatus::kFailed, "", std::nullopt,
                              "JOB_SUPERVISOR_ACTOR_DIED"));
    w.Advance(1s);
    w.Pass();
    // infra_retries: 1 is spent by the Lost attempt 0.
    const core::StatusRecord& rec = w.Record("train");
    INFO(rec.message);
    CHECK(w.Submits() == submits + 1);
    CHECK(rec.phase == Phase::kFailed);
    CHECK(rec.error_type == "JOB_SUPERVISOR_ACTOR_DIED");
    CHECK(rec.message ==
          "infrastructure retries exhausted (1 of 1 used) after JOB_SUPERVISOR_ACTOR_DIED");
    const core::AttemptRecord* died = rec.FindAttempt(first + "-r1");
    REQUIRE(died != nullptr);
    CHECK(died->failure_class == FailureClass::kInfra);
    CHECK(died->ending.get().error_type == "JOB_SUPERVISOR_ACTOR_DIED");
  }
}

TEST_CASE("a run whose supervisor died is retried after the backoff with retries: 0") {
  World w;
  w.source->SetFile("jobs/train.yaml", "workload: custom\nentrypoint: sleep 30000\n", kCommit);
  w.Pass();
  w.Advance(2s);
  w.Pass();
  const std::string first = w.Record("train").submission_id;
  const int submits = w.Submits();
  REQUIRE(w.ray().SetStatus(first, RayJobStatus::kFailed, "", std::nullopt,
                            "JOB_SUPERVISOR_ACTOR_DIED"));
  w.Advance(1s);
  w.Pass();
  {
    const core::StatusRecord& rec = w.Record("train");
    INFO(rec.message);
    CHECK(rec.phase == Phase::kPending);
    CHECK(rec.message == "retrying after JOB_SUPERVISOR_ACTOR_DIED, 1 of 3: attempt 1 waits 30s "
                         "after " +
                             first + " ended");
    CHECK(w.Submits() == submits);
  }
  w.Advance(30s);
  w.Pass();
  CHECK(w.Submits() == submits + 1);
  CHECK(w.Record("train").submission_id == first + "-r1");
  // The entrypoint's own failure: retries: 0, not retried.
  REQUIRE(w.ray().SetStatus(first + "-r1", RayJobStatus::kFailed, "", 3));
  w.Advance(15min);
  w.Pass();
  CHECK(w.Submits() == submits + 1);
  CHECK(w.Record("train").phase == Phase::kFailed);
  const core::AttemptRecord* own = w.Record("train").FindAttempt(first + "-r1");
  REQUIRE(own != nullptr);
  CHECK(own->failure_class == FailureClass::kOwn);
}

}  // namespace
}  // namespace rg::engine
