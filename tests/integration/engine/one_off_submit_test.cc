// engine::SubmitOneOff through the real HTTP client against the fake head: the one-off runs
// of `ray-gitops submit` (docs/operations.md) get their own ids and labels, are never adopted, and
// the planner and the status update leave them alone.

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "reconciler/adapters/artifact_writer.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/render.h"
#include "reconciler/engine/submit_attempt.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/submit_harness.h"
#include "tests/support/test_files.h"

namespace {

namespace fs = std::filesystem;
using rg::core::ErrorKind;
using rg::engine::SubmitArtifactInputs;
using rg::engine::SubmitOneOff;
using rg::testing::ReadFileText;
using rg::testing::TempDir;

constexpr char kClusterYaml[] =
    "address: http://127.0.0.1:8265\n"
    "shared_root: /private\n";

constexpr char kSpecYaml[] =
    "workload: custom\n"
    "entrypoint: sleep 300\n";

rg::core::RayConfig LoadCluster() { return rg::testing::LoadClusterOrFail(kClusterYaml); }

rg::core::JobSpec LoadSpec(const std::string& text = kSpecYaml,
                           const std::string& path = "jobs/adhoc/probe.yaml") {
  return rg::testing::LoadSpecOrFail(text, path);
}

struct Harness : rg::testing::SubmitHarness {
  SubmitArtifactInputs Inputs() const { return {kClusterYaml, kSpecYaml, fake.address()}; }
  rg::core::RayJob Get(const std::string& id) {
    auto job = server->Get(id);
    REQUIRE(job.ok());
    return *job;
  }
};

TEST_CASE("A one-off run gets <name>-<hash>-cli, gitops.submitted-by: cli and no managed-by") {
  Harness h;
  const auto spec = LoadSpec();
  rg::core::RenderContext context;  // the default instance, as `submit` had it before
  auto result = SubmitOneOff(*h.server, &h.writer, spec, 0, LoadCluster(), context, h.Inputs());
  REQUIRE(result.ok());
  CHECK_FALSE(result->adopted);
  CHECK(result->submission_id == "adhoc-probe-" + spec.spec_hash + "-cli");

  const rg::core::RayJob job = h.Get(result->submission_id);
  const rg::core::StringMap expected = {
      {"gitops.submitted-by", "cli"},
      {"gitops.name", "adhoc-probe"},
      {"gitops.spec-path", "jobs/adhoc/probe.yaml"},
      {"gitops.spec-hash", spec.spec_hash},
      {"gitops.attempt", "0"},
  };
  CHECK(job.metadata == expected);
  CHECK(rg::engine::OwnerOf(job) == "cli");

  // The artifacts are written as for any submit, under the one-off id.
  const fs::path dir = h.root.dir() / "jobs" / result->submission_id;
  CHECK(ReadFileText(dir / "logs" / "submit.out").find("outcome: submitted\n") !=
        std::string::npos);
  CHECK(ReadFileText(dir / "config" / "submit_payload.json")
            .find("\"gitops.submitted-by\": \"cli\"") != std::string::npos);
  const std::string list = ReadFileText(dir / "debug" / "ray_job_list_post.txt");
  CHECK(list.rfind(result->submission_id + " ", 0) == 0);
  CHECK_THAT(list, Catch::Contains(" SUBMISSION managed-by=cli sleep 300\n"));
}

TEST_CASE("A one-off run never sends a secret's placeholder as its value") {
  Harness h;
  const auto spec = LoadSpec(std::string(kSpecYaml) + "secrets:\n  WANDB_API_KEY: wandb-key\n");
  rg::core::RenderContext context;
  auto refused = SubmitOneOff(*h.server, &h.writer, spec, 0, LoadCluster(), context, h.Inputs());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind() == ErrorKind::kInvalidInput);
  CHECK_THAT(refused.error().message(), Catch::Contains("secret_delivery: node"));
  CHECK(h.fake.SubmitBodies().empty());
  // With node delivery the run gets ${NAME}, which Ray expands on the node.
  auto node = SubmitOneOff(
      *h.server, &h.writer, spec, 0,
      rg::testing::LoadClusterOrFail(std::string(kClusterYaml) + "secret_delivery: node\n"),
      context, h.Inputs());
  REQUIRE(node.ok());
  CHECK_THAT(h.fake.SubmitBodies().back(), Catch::Contains("\"${WANDB_API_KEY}\""));
}

TEST_CASE("A one-off run records the commit and repository only when they are known") {
  Harness h;
  const auto spec = LoadSpec();
  rg::core::RenderContext context;
  context.commit = "0123456789abcdef0123456789abcdef01234567";
  context.repo_url = "https://user:secret@git.example/org/repo.git";
  auto result = SubmitOneOff(*h.server, nullptr, spec, 0, LoadCluster(), context, h.Inputs());
  REQUIRE(result.ok());
  const rg::core::RayJob job = h.Get(result->submission_id);
  CHECK(job.metadata.at("gitops.commit") == context.commit);
  CHECK(job.metadata.at("gitops.repo") == "https://git.example/org/repo.git");
  CHECK_FALSE(job.metadata.contains("gitops.managed-by"));
}

TEST_CASE("One-off runs n >= 1 end in -cli-<n>, beside the daemon's run of the same spec") {
  Harness h;
  const auto spec = LoadSpec();
  const auto cluster = LoadCluster();
  rg::core::RenderContext context;
  REQUIRE(rg::engine::SubmitAttempt(*h.server, nullptr, spec, cluster, context, h.Inputs()).ok());
  for (int run : {0, 1, 2}) {
    auto result = SubmitOneOff(*h.server, nullptr, spec, run, cluster, context, h.Inputs());
    REQUIRE(result.ok());
    CHECK(result->submission_id == rg::core::OneOffSubmissionId(spec, run));
  }
  CHECK(h.fake.JobCount() == 4);
  CHECK(h.Get("adhoc-probe-" + spec.spec_hash + "-cli-2").metadata.at("gitops.submitted-by") ==
        "cli");
  CHECK(h.Get("adhoc-probe-" + spec.spec_hash).metadata.at("gitops.managed-by") == "ray-gitops");
}

TEST_CASE("A verl one-off names its own run in the entrypoint") {
  Harness h;
  const auto spec = LoadSpec(
      "workload: ppo\n"
      "code_path: ${shared_root}/code\n"
      "model_id: m\n"
      "train_file: t.parquet\n"
      "val_file: v.parquet\n",
      "jobs/ppo/tiny.yaml");
  rg::core::RenderContext context;
  auto result = SubmitOneOff(*h.server, nullptr, spec, 1, LoadCluster(), context, h.Inputs());
  REQUIRE(result.ok());
  const std::string id = "ppo-tiny-" + spec.spec_hash + "-cli-1";
  CHECK(result->submission_id == id);
  const std::string entrypoint = result->body.Find("entrypoint")->as_string();
  CHECK_THAT(entrypoint, Catch::Contains("trainer.experiment_name=" + id));
  CHECK_THAT(entrypoint, Catch::Contains("/private/jobs/" + id + "/checkpoints"));
}

TEST_CASE("A pinned spec's one-off run is <pin>-cli") {
  Harness h;
  const auto spec =
      LoadSpec("workload: custom\nsubmission_id: nightly-eval\nentrypoint: echo hi\n");
  rg::core::RenderContext context;
  auto result = SubmitOneOff(*h.server, nullptr, spec, 0, LoadCluster(), context, h.Inputs());
  REQUIRE(result.ok());
  CHECK(result->submission_id == "nightly-eval-cli");
}

TEST_CASE("A one-off id that exists is never adopted: conflict, nothing sent twice or written") {
  Harness h;
  const auto spec = LoadSpec();
  const auto cluster = LoadCluster();
  rg::core::RenderContext context;
  auto first = SubmitOneOff(*h.server, &h.writer, spec, 0, cluster, context, h.Inputs());
  REQUIRE(first.ok());
  h.fake.SetStatus(first->submission_id, rg::core::RayJobStatus::kFailed);

  auto second = SubmitOneOff(*h.server, &h.writer, spec, 0, cluster, context, h.Inputs());
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().kind() == ErrorKind::kConflict);
  CHECK_THAT(second.error().message(), Catch::Contains(first->submission_id));
  CHECK(h.fake.JobCount() == 1);
  const std::string log =
      ReadFileText(h.root.dir() / "jobs" / first->submission_id / "logs" / "submit.out");
  CHECK(log.find("outcome: submitted\n") != std::string::npos);
  CHECK(log.find("outcome: adopted") == std::string::npos);
}

// --- no daemon takes a one-off run for its own ---

rg::core::DesiredState DesiredWith(std::vector<rg::core::JobSpec> jobs) {
  rg::core::DesiredState desired;
  desired.cluster = LoadCluster();
  desired.jobs = std::move(jobs);
  return desired;
}

TEST_CASE("The planner lists a one-off run as unmanaged and never stops or adopts it") {
  Harness h;
  const auto spec = LoadSpec();
  rg::core::RenderContext context;
  auto one_off = SubmitOneOff(*h.server, nullptr, spec, 0, LoadCluster(), context, h.Inputs());
  REQUIRE(one_off.ok());
  auto observed = h.server->List();
  REQUIRE(observed.ok());
  rg::core::PlanPolicy policy;  // the default instance

  SECTION("its spec is not in the repository: nothing to stop") {
    const rg::core::Plan plan =
        rg::core::PlanActions(DesiredWith({}), *observed, rg::core::Ledger{}, policy);
    CHECK(plan.actions.empty());
    CHECK(plan.jobs.empty());
    REQUIRE(plan.unmanaged.size() == 1);
    CHECK(plan.unmanaged[0].submission_id == one_off->submission_id);
  }
  SECTION("its spec is in the repository: the daemon submits its own run beside it") {
    const rg::core::Plan plan =
        rg::core::PlanActions(DesiredWith({spec}), *observed, rg::core::Ledger{}, policy);
    REQUIRE(plan.actions.size() == 1);
    CHECK(plan.actions[0].kind == rg::core::ActionKind::kSubmit);
    CHECK(plan.actions[0].submission_id == "adhoc-probe-" + spec.spec_hash);
    REQUIRE(plan.unmanaged.size() == 1);
    CHECK(plan.unmanaged[0].submission_id == one_off->submission_id);
  }
}

TEST_CASE("OwnerOf tells an instance, a one-off run and nobody's job apart") {
  rg::core::RayJob job;
  CHECK(rg::engine::OwnerOf(job) == "-");
  job.metadata["gitops.submitted-by"] = "cli";
  CHECK(rg::engine::OwnerOf(job) == "cli");
  job.metadata["gitops.managed-by"] = "team-a";  // the label the daemons act on wins
  CHECK(rg::engine::OwnerOf(job) == "team-a");
  job.metadata.clear();
  job.metadata["gitops.submitted-by"] = "someone-else";
  CHECK(rg::engine::OwnerOf(job) == "-");
}

}  // namespace

TEST_CASE("A one-off run of a job with after runs now, unless it needs an upstream's run") {
  Harness h;
  // No ${runs...}: the person's call, submitted at once.
  const auto plain =
      LoadSpec("workload: custom\nentrypoint: sleep 300\nafter: [sft]\n", "jobs/adhoc/probe.yaml");
  rg::core::RenderContext context;
  auto submitted = SubmitOneOff(*h.server, nullptr, plain, 0, LoadCluster(), context, h.Inputs());
  REQUIRE(submitted.ok());
  CHECK(h.Get(submitted->submission_id).entrypoint == "sleep 300");
  // ${runs.sft.dir} names a run only the daemon's plan knows: refused, nothing sent.
  const auto needs_run = LoadSpec(
      "workload: custom\nentrypoint: ls ${runs.sft.dir}\nafter: [sft]\n", "jobs/adhoc/next.yaml");
  h.fake.ResetCounters();
  auto refused = SubmitOneOff(*h.server, nullptr, needs_run, 0, LoadCluster(), context, h.Inputs());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message() ==
        "jobs/adhoc/next.yaml uses ${runs.sft.dir}, the run directory of an upstream's successful "
        "run, which only the daemon's plan resolves; a one-off run cannot (let the daemon submit "
        "it)");
  CHECK(h.fake.RequestCount(rg::testing::kRouteSubmit) == 0);
}
