// Pipelines end to end in one process: passes over an in-memory repository against the fake
// head, on the test's clock. A job with `after` waits for its upstream's run to SUCCEED, is
// then submitted with the upstream's run directory, follows an edit upstream with a new id,
// and never starts from a failed upstream.

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "reconciler/core/status_model.h"
#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using namespace std::chrono_literals;
using core::Phase;
using core::RayJobStatus;

std::string Commit(int n) { return std::string(39, '0') + std::to_string(n % 10); }

class Pipeline : public testing::PassHarness {
 public:
  Pipeline() : source_(NewRepo(Commit(0))) {
    source_->SetFile("cluster.yaml", "address: " + ray().address() + "\nshared_root: /mnt/shared\n",
                     Commit(0));
  }

  void SetUpstream(const std::string& entrypoint, int commit) {
    source_->SetFile("jobs/a.yaml",
                     "workload: custom\nentrypoint: " + entrypoint + "\nretries: 0\n",
                     Commit(commit));
  }
  void SetDownstream(int commit) {
    source_->SetFile("jobs/b.yaml",
                     "workload: custom\nentrypoint: ls ${runs.a.dir}/checkpoints\nafter: [a]\n",
                     Commit(commit));
  }

  PassResult Pass() {
    ReconcileOptions options;
    options.now_ms = clock().NowMs();
    return PassHarness::Pass(*source_, options);
  }
  // The current run of `name` (the record's latest attempt).
  std::string RunOf(const std::string& name) { return Record(name).submission_id; }
  std::string HashOf(const std::string& path) { return PassHarness::HashOf(*source_, path); }

 private:
  std::unique_ptr<testing::InMemoryDesiredStateSource> source_;
};

int Submits(const PassResult& r) { return r.plan.CountActions(core::ActionKind::kSubmit); }

TEST_CASE("a job after another waits while it runs and starts from its successful run",
          "[engine]") {
  Pipeline w;
  w.SetUpstream("sleep 5", 1);
  w.SetDownstream(1);
  PassResult first = w.Pass();
  CHECK(Submits(first) == 1);
  const std::string a0 = w.RunOf("a");
  CHECK(w.Record("b").phase == Phase::kWaiting);
  CHECK(w.Record("b").message == "on a: Pending");
  w.Advance(1s);
  w.Pass();
  CHECK(w.Record("b").phase == Phase::kWaiting);
  CHECK(w.Record("b").message == "on a: Running");
  CHECK(w.ray().JobCount() == 1);

  w.Advance(5s);  // a SUCCEEDED
  PassResult next = w.Pass();
  REQUIRE(Submits(next) == 1);
  CHECK(w.Record("a").phase == Phase::kSucceeded);
  CHECK(w.Record("b").phase == Phase::kPending);
  const std::vector<std::string> bodies = w.ray().SubmitBodies();
  REQUIRE(bodies.size() == 2);
  CHECK(bodies[1].find("\"entrypoint\":\"ls /mnt/shared/jobs/" + a0 + "/checkpoints\"") !=
        std::string::npos);

  // Nothing more: b runs once.
  w.Advance(1s);
  CHECK(Submits(w.Pass()) == 0);
  CHECK(w.ray().JobCount() == 2);
}

TEST_CASE("editing the upstream gives both jobs new ids, and the downstream waits for the new one",
          "[engine]") {
  Pipeline w;
  w.SetUpstream("sleep 2", 1);
  w.SetDownstream(1);
  w.Pass();
  w.Advance(3s);
  w.Pass();  // a SUCCEEDED: b submitted
  w.Advance(1s);
  w.Pass();
  const std::string a_old = w.RunOf("a");
  const std::string b_old = w.RunOf("b");
  REQUIRE(w.Record("b").phase == Phase::kSucceeded);
  const std::string b_hash = w.HashOf("jobs/b.yaml");

  w.SetUpstream("sleep 3", 2);  // only a's file changes
  PassResult edited = w.Pass();
  CHECK(Submits(edited) == 1);
  CHECK(w.RunOf("a") != a_old);
  CHECK(w.Record("b").phase == Phase::kWaiting);
  CHECK(w.Record("b").message == "on a: Pending");
  CHECK(w.HashOf("jobs/b.yaml") == b_hash);  // b's file did not change, its identity did
  w.Advance(4s);
  w.Pass();
  CHECK(w.RunOf("b") != b_old);
  CHECK(w.RunOf("b").starts_with("b-"));
  CHECK(w.Record("b").phase == Phase::kPending);
  const std::vector<std::string> bodies = w.ray().SubmitBodies();
  REQUIRE(bodies.size() == 4);
  CHECK(bodies[3].find("/mnt/shared/jobs/" + w.RunOf("a") + "/checkpoints") != std::string::npos);
}

TEST_CASE("a failed upstream leaves the downstream waiting with the failure, never submitted",
          "[engine]") {
  Pipeline w;
  w.SetUpstream("exit 3", 1);
  w.SetDownstream(1);
  w.Pass();
  for (int i = 0; i < 3; ++i) {
    w.Advance(1s);
    CHECK(Submits(w.Pass()) == 0);
  }
  CHECK(w.Record("a").phase == Phase::kFailed);
  CHECK(w.Record("b").phase == Phase::kWaiting);
  CHECK(w.Record("b").message.starts_with("on a: Failed ("));
  CHECK(w.Record("b").attempts.empty());
  CHECK(w.ray().JobCount() == 1);
}

TEST_CASE("an upstream made invalid freezes the downstream's run: it is not stopped", "[engine]") {
  Pipeline w;
  w.SetUpstream("echo a", 1);
  w.SetDownstream(1);
  w.Pass();
  w.Advance(1s);
  w.Pass();  // b submitted
  const std::string b_run = w.RunOf("b");
  INFO("b: " << b_run << ", " << core::PhaseName(w.Record("b").phase) << " "
             << w.Record("b").message);
  REQUIRE(w.ray().SetStatus(b_run, RayJobStatus::kRunning));
  const std::string b_hash = w.Record("b").spec_hash;
  w.SetUpstream("echo a\nnnodes: 2", 2);  // invalid: nnodes is not for custom
  PassResult r = w.Pass();
  CHECK(r.plan.actions.empty());
  CHECK(w.ray().StatusOf(b_run) == RayJobStatus::kRunning);
  CHECK(w.Record("b").phase == Phase::kWaiting);
  CHECK(w.Record("b").message.starts_with("on a: Invalid"));
  CHECK(w.Record("b").spec_hash == b_hash);  // kept: its identity is unknown now
  CHECK(w.Record("b").submission_id == b_run);
}

}  // namespace
}  // namespace rg::engine
