#include "reconciler/core/pending_reason.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/render.h"

namespace rg::core {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::string_view kNever = ", so it cannot start until the cluster grows";

ClusterResources Cluster(std::map<std::string, double, std::less<>> total,
                         std::map<std::string, double, std::less<>> available) {
  return ClusterResources{std::move(total), std::move(available)};
}

// A head like the test cluster's: 4 CPU, 24 GiB of memory, 2 worker_node, all free.
ClusterResources IdleHead() {
  std::map<std::string, double, std::less<>> all = {
      {"CPU", 4}, {"memory", 24 * kGiB}, {"workerNode", 2}, {"node:InternalHead", 1}};
  return Cluster(all, all);
}

TEST_CASE("pending explanations from a table") {
  struct Row {
    const char* what;
    std::vector<ResourceAmount> request;
    ClusterResources cluster;
    std::optional<std::string> want;
  };
  const std::vector<Row> rows = {
      {"a GPU on a cluster without any",
       {{"GPU", 1}},
       IdleHead(),
       "asks for 1 GPU; the cluster has 0 GPU" + std::string(kNever)},
      {"a custom resource no node has",
       {{"gpu_node", 1}},
       IdleHead(),
       "asks for 1 gpu_node; no node has gpu_node" + std::string(kNever)},
      {"more CPU than the cluster has in all",
       {{"CPU", 8}},
       IdleHead(),
       "asks for 8 CPU; the cluster has 4 CPU in all" + std::string(kNever)},
      {"GPUs all in use",
       {{"GPU", 1}},
       Cluster({{"GPU", 2}}, {{"GPU", 0}}),
       "asks for 1 GPU; the cluster has 2 GPU, 0 free"},
      {"a GPU in use, its key missing from the available map",
       {{"GPU", 1}},
       Cluster({{"GPU", 2}}, {}),
       "asks for 1 GPU; the cluster has 2 GPU, 0 free"},
      {"memory above the total, shown readably",
       {{"memory", 32 * kGiB}},
       IdleHead(),
       "asks for 32 GiB memory; the cluster has 24 GiB memory in all" + std::string(kNever)},
      {"memory in use",
       {{"memory", 1.5 * kGiB}},
       Cluster({{"memory", 22.43 * kGiB}}, {{"memory", 512 * 1024 * 1024}}),
       "asks for 1.5 GiB memory; the cluster has 22.43 GiB memory, 512 MiB free"},
      {"memory a few bytes above a total that prints alike",
       {{"memory", 24 * kGiB + 3}},
       IdleHead(),
       "asks for 25769803779 bytes memory; the cluster has 25769803776 bytes memory in all" +
           std::string(kNever)},
      {"a fraction of a GPU, less free",
       {{"GPU", 0.5}},
       Cluster({{"GPU", 1}}, {{"GPU", 0.25}}),
       "asks for 0.5 GPU; the cluster has 1 GPU, 0.25 free"},
      {"a fraction that fits once rounded to Ray's ten-thousandths",
       {{"GPU", 0.3}},
       Cluster({{"GPU", 1}}, {{"GPU", 0.1 + 0.2 - 1e-9}}),
       std::nullopt},
      {"several shortfalls, in request order",
       {{"CPU", 2}, {"GPU", 1}, {"worker_node", 3}},
       Cluster({{"CPU", 4}, {"workerNode", 2}}, {{"CPU", 1}, {"workerNode", 2}}),
       "asks for 2 CPU, 1 GPU and 3 worker_node; the cluster has 4 CPU, 1 free; the cluster has "
       "0 GPU; the cluster has 2 worker_node in all" +
           std::string(kNever)},
      {"a custom resource under its dashboard key", {{"worker_node", 1}}, IdleHead(), std::nullopt},
      {"a custom resource under its own name",
       {{"worker_node", 1}},
       Cluster({{"worker_node", 1}}, {{"worker_node", 1}}),
       std::nullopt},
      {"everything fits",
       {{"CPU", 1}, {"memory", kGiB}, {"worker_node", 1}},
       IdleHead(),
       std::nullopt},
      {"nothing asked for", {}, Cluster({}, {}), std::nullopt},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(ExplainPending(row.request, row.cluster) == row.want);
  }
}

TEST_CASE("an explanation is recognised as one") {
  auto why = ExplainPending({{"GPU", 1}}, IdleHead());
  REQUIRE(why.has_value());
  CHECK(IsPendingExplanation(*why));
  CHECK_FALSE(IsPendingExplanation("Job has not started yet."));
}

TEST_CASE("resource names as Ray's dashboard spells them") {
  CHECK(RayDashboardKey("CPU") == "CPU");
  CHECK(RayDashboardKey("memory") == "memory");
  CHECK(RayDashboardKey("worker_node") == "workerNode");
  CHECK(RayDashboardKey("object_store_memory") == "objectStoreMemory");
  CHECK(RayDashboardKey("node:__internal_head__") == "node:InternalHead");
  CHECK(RayDashboardKey("accelerator_type:A100") == "acceleratorType:A100");
  CHECK(RayDashboardKey("my_BIG_res") == "myBigRes");
  CHECK(RayDashboardKey("tpu_v4-pod") == "tpuV4-Pod");
}

TEST_CASE("amounts as people read them") {
  CHECK(FormatResourceAmount("GPU", 1) == "1 GPU");
  CHECK(FormatResourceAmount("GPU", 0.25) == "0.25 GPU");
  CHECK(FormatResourceAmount("CPU", 0.00005) == "0.0001 CPU");
  CHECK(FormatResourceAmount("memory", 512) == "512 B memory");
  CHECK(FormatResourceAmount("memory", 2048) == "2 KiB memory");
  CHECK(FormatResourceAmount("memory", 1.5 * kGiB) == "1.5 GiB memory");
  CHECK(FormatResourceAmount("memory", 3.0 * 1024 * kGiB) == "3 TiB memory");
}

TEST_CASE("the driver asks for the spec's resources, else the cluster file's") {
  RayConfig cluster;
  cluster.entrypoint_num_cpus = 1;
  cluster.entrypoint_memory = 1000;
  cluster.entrypoint_resources = ResourceMap{{"worker_node", 1}};
  JobSpec spec;
  spec.entrypoint_num_gpus = 0.5;
  spec.entrypoint_resources = ResourceMap{{"b_res", 2}, {"a_res", 0}};
  CHECK(DriverResources(spec, cluster) ==
        std::vector<ResourceAmount>{{"CPU", 1}, {"GPU", 0.5}, {"memory", 1000}, {"b_res", 2}});
  CHECK(DriverResources(JobSpec{}, RayConfig{}).empty());
}

TEST_CASE("the driver's resources are those the submission carries") {
  RayConfig cluster;
  cluster.address = "http://127.0.0.1:8265";
  cluster.entrypoint_num_cpus = 2;
  cluster.entrypoint_resources = ResourceMap{{"worker_node", 1}};
  JobSpec spec;
  spec.path = "jobs/x.yaml";
  spec.name = "x";
  spec.spec_hash = "abcdef0123";
  spec.entrypoint = "python train.py";
  spec.entrypoint_num_gpus = 1;
  spec.entrypoint_memory = 4096;
  auto body = RenderSubmission(spec, cluster, RenderContext{});
  REQUIRE(body.ok());
  std::vector<ResourceAmount> from_body;
  from_body.push_back({"CPU", body->Find("entrypoint_num_cpus")->as_double()});
  from_body.push_back({"GPU", body->Find("entrypoint_num_gpus")->as_double()});
  from_body.push_back({"memory", static_cast<double>(body->Find("entrypoint_memory")->as_int())});
  for (const auto& [name, amount] : body->Find("entrypoint_resources")->as_object()) {
    from_body.push_back({name, amount.as_double()});
  }
  CHECK(DriverResources(spec, cluster) == from_body);
}

TEST_CASE("a cluster status is worth reading only while a planned run is PENDING") {
  Plan plan;
  JobPlan jp;
  jp.name = "x";
  jp.submission_id = "x-1";
  jp.phase = Phase::kPending;
  plan.jobs.push_back(jp);
  RayJobsById ray;
  CHECK_FALSE(AnyRunPending(plan, ray));
  RayJob job;
  job.submission_id = "x-1";
  job.status = RayJobStatus::kRunning;
  ray[job.submission_id] = &job;
  CHECK_FALSE(AnyRunPending(plan, ray));
  job.status = RayJobStatus::kPending;
  CHECK(AnyRunPending(plan, ray));
}

}  // namespace
}  // namespace rg::core
