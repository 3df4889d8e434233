// A stop request (the daemon's graceful shutdown) ends a pass after its current action: no
// further action starts, and what was done is still recorded.

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/in_memory_ports.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using namespace std::chrono_literals;

std::string Commit(char c) { return std::string(39, '0') + c; }

// Three long jobs to submit.
struct StopWorld : testing::PassHarness {
  std::unique_ptr<testing::InMemoryDesiredStateSource> repo = NewRepo(Commit('a'));

  StopWorld() {
    repo->SetFile("jobs/a.yaml", "workload: custom\nentrypoint: sleep 300\n", Commit('b'));
    repo->SetFile("jobs/b.yaml", "workload: custom\nentrypoint: sleep 301\n", Commit('b'));
    repo->SetFile("jobs/c.yaml", "workload: custom\nentrypoint: sleep 302\n", Commit('b'));
  }

  PassResult Pass(std::function<bool()> stop_requested, int parallelism) {
    ReconcileOptions options;
    options.parallelism = parallelism;
    options.stop_requested = std::move(stop_requested);
    return PassHarness::Pass(*repo, std::move(options));
  }
};

TEST_CASE("a stop requested during apply starts no further action and still records status",
          "[engine][stop]") {
  StopWorld w;
  std::atomic<int> asked{0};
  // The first action starts; from the second check on, a stop has been requested.
  PassResult r = w.Pass([&asked]() { return ++asked > 1; }, /*parallelism=*/1);

  CHECK(r.plan.CountActions(core::ActionKind::kSubmit) == 3);
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].ok);
  CHECK(r.actions_not_started == 2);
  CHECK(r.exit_status == kExitApplied);
  CHECK(w.ray().JobCount() == 1);
  REQUIRE(w.store().commits().size() == 1);
  CHECK_FALSE(r.status_commit.empty());
  const std::string started = r.outcomes[0].action.name;
  const core::StatusRecord& rec = w.store().ledger().at(started);
  CHECK(rec.submission_id == r.outcomes[0].action.submission_id);
  REQUIRE(rec.attempts.size() == 1);
  CHECK(rec.attempts[0].submission_id == rec.submission_id);
  CHECK(r.records.size() == 3);
}

TEST_CASE("a stop requested before apply sends nothing to Ray with parallel submits",
          "[engine][stop]") {
  StopWorld w;
  PassResult r = w.Pass([]() { return true; }, /*parallelism=*/4);
  CHECK(r.planned);
  CHECK(r.outcomes.empty());
  CHECK(r.actions_not_started == 3);
  CHECK(w.ray().JobCount() == 0);
  CHECK(w.ray().SubmitBodies().empty());
}

TEST_CASE("after a stopped pass the next pass submits what was left undone", "[engine][stop]") {
  StopWorld w;
  std::atomic<int> asked{0};
  PassResult first = w.Pass([&asked]() { return ++asked > 1; }, 1);
  REQUIRE(first.outcomes.size() == 1);
  PassResult second = w.Pass({}, 2);
  CHECK(second.errors.empty());
  CHECK(second.plan.CountActions(core::ActionKind::kSubmit) == 2);
  CHECK(second.outcomes.size() == 2);
  CHECK(second.actions_not_started == 0);
  CHECK(w.ray().JobCount() == 3);
  CHECK(w.ray().SubmitBodies().size() == 3);
}

TEST_CASE("a pass returns every planned job's record, by name", "[engine]") {
  StopWorld w;
  PassResult r = w.Pass({}, 2);
  REQUIRE(r.records.size() == 3);
  CHECK(r.records[0].name == "a");
  CHECK(r.records[1].name == "b");
  CHECK(r.records[2].name == "c");
  for (const core::StatusRecord& rec : r.records) {
    CHECK(rec.phase == core::Phase::kPending);
    CHECK(w.store().ledger().at(rec.name).submission_id == rec.submission_id);
  }
}

}  // namespace
}  // namespace rg::engine
