// A PENDING run's recorded message says what its driver asks for that the cluster lacks, from
// the cluster's resources, read at most once per pass and only while some run is PENDING.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "reconciler/core/pending_reason.h"
#include "reconciler/core/status_model.h"
#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/in_memory_ports.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using core::Phase;
using core::RayJobStatus;
using testing::FakeRayOptions;
using testing::kRouteClusterStatus;

std::string Commit(int n) { return std::string(39, '0') + static_cast<char>('a' + n % 6); }

class World : public testing::PassHarness {
 public:
  explicit World(FakeRayOptions options = {})
      : PassHarness(std::move(options)), source_(NewRepo(Commit(0))) {}

  PassResult Pass() { return PassHarness::Pass(*source_); }
  // Adds jobs/<name>.yaml, a custom job running `sleep 300` with `extra` fields; its id.
  std::string AddJob(const std::string& name, const std::string& extra) {
    const std::string path = "jobs/" + name + ".yaml";
    source_->SetFile(path, "workload: custom\nentrypoint: sleep 300\n" + extra, Commit(1));
    return name + "-" + HashOf(*source_, path);
  }

 private:
  std::unique_ptr<testing::InMemoryDesiredStateSource> source_;
};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("a job asking for a GPU the cluster lacks stays Pending and its message says why",
          "[engine]") {
  World w;
  w.ray().SetClusterResources({{"CPU", 4}, {"worker_node", 2}});
  const std::string id = w.AddJob("gpu", "entrypoint_num_gpus: 1\n");

  PassResult first = w.Pass();
  REQUIRE(first.errors.empty());
  CHECK(w.ray().StatusOf(id) == RayJobStatus::kPending);
  CHECK(w.ray().RequestCount(kRouteClusterStatus) == 1);
  const core::StatusRecord& rec = w.Record("gpu");
  CHECK(rec.phase == Phase::kPending);
  CHECK(rec.status == RayJobStatus::kPending);
  INFO(rec.message);
  CHECK(
      rec.message.starts_with("asks for 1 GPU; the cluster has 0 GPU, so it cannot start "
                              "until the cluster grows. "));
  // Ray's own words follow.
  CHECK(Contains(rec.message, "Job has not started yet"));

  // The same explanation on the next pass: nothing to commit.
  const size_t commits = w.store().commits().size();
  w.Pass();
  CHECK(w.Record("gpu").message == rec.message);
  CHECK(w.store().commits().size() == commits);
}

TEST_CASE("a custom resource no node has is named", "[engine]") {
  World w;
  w.AddJob("special", "entrypoint_resources:\n  special_node: 1\n");
  REQUIRE(w.Pass().errors.empty());
  INFO(w.Record("special").message);
  CHECK(w.Record("special").message.starts_with(
      "asks for 1 special_node; no node has special_node, so it cannot start"));
}

TEST_CASE("a job held Pending on a busy cluster is told what is free, then Ray's words again",
          "[engine]") {
  World w;
  w.ray().SetClusterResources({{"CPU", 4}, {"GPU", 2}}, {{"GPU", 2}});
  const std::string id = w.AddJob("busy", "entrypoint_num_gpus: 1\n");
  REQUIRE(w.Pass().errors.empty());
  // The fake places a job that fits the totals; hold this one as a busy cluster would.
  REQUIRE(w.ray().SetStatus(id, RayJobStatus::kPending, "Job has not started yet."));
  w.Pass();
  CHECK(w.Record("busy").message ==
        "asks for 1 GPU; the cluster has 2 GPU, 0 free. Job has not started yet.");

  w.ray().SetClusterResources({{"CPU", 4}, {"GPU", 2}}, {{"GPU", 1}});
  w.Pass();
  CHECK(w.Record("busy").message == "Job has not started yet.");
}

TEST_CASE("no cluster status is read while no run is PENDING", "[engine]") {
  World w;
  w.AddJob("runs", "");
  REQUIRE(w.Pass().errors.empty());
  w.Advance(std::chrono::seconds(1));
  w.ray().ResetCounters();
  w.Pass();
  CHECK(w.Record("runs").status == RayJobStatus::kRunning);
  CHECK(w.ray().RequestCount(kRouteClusterStatus) == 0);
  CHECK(w.Record("runs").message == "Job is currently running.");
}

TEST_CASE("a cluster status that cannot be read fails nothing and changes no message", "[engine]") {
  World w;
  const std::string id = w.AddJob("gpu", "entrypoint_num_gpus: 1\n");
  w.ray().FailNext(kRouteClusterStatus, 100, 503, "dashboard busy");
  PassResult first = w.Pass();
  CHECK(first.errors.empty());
  CHECK(first.exit_status == kExitApplied);
  CHECK_FALSE(core::IsPendingExplanation(w.Record("gpu").message));

  w.ray().ResetCounters();
  w.ray().FailNext(kRouteClusterStatus, 0, 503);
  w.Pass();
  const std::string explained = w.Record("gpu").message;
  CHECK(core::IsPendingExplanation(explained));

  // Unreadable again: the explanation stays, and nothing is committed.
  const size_t commits = w.store().commits().size();
  w.ray().FailNext(kRouteClusterStatus, 100, 503, "dashboard busy");
  PassResult third = w.Pass();
  CHECK(third.errors.empty());
  CHECK(w.Record("gpu").message == explained);
  CHECK(w.store().commits().size() == commits);
  CHECK(w.ray().StatusOf(id) == RayJobStatus::kPending);
}

TEST_CASE("a Pending job whose driver fits keeps Ray's message", "[engine]") {
  World w;
  const std::string id = w.AddJob("fits", "entrypoint_num_cpus: 1\n");
  REQUIRE(w.Pass().errors.empty());
  REQUIRE(w.ray().SetStatus(id, RayJobStatus::kPending, "Job has not started yet."));
  w.Pass();
  CHECK(w.Record("fits").message == "Job has not started yet.");
}

}  // namespace
}  // namespace rg::engine
