// engine::SubmitAttempt through the real HTTP client against the fake head, with the
// filesystem artifact writer: what is sent, what is adopted, what is refused, what is
// recorded.

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "reconciler/adapters/artifact_writer.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/core/identity.h"
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
using rg::engine::SubmitAttempt;

constexpr char kClusterYaml[] =
    "address: http://127.0.0.1:8265\n"
    "shared_root: /private\n"
    "entrypoint_num_cpus: 1\n"
    "entrypoint_resources:\n"
    "  worker_node: 1\n"
    "runtime_env:\n"
    "  env_vars:\n"
    "    HF_TOKEN: hf-secret-value\n"
    "    GREETING: hello\n";

constexpr char kRepoUrl[] = "https://git.example/org/jobs.git";

constexpr char kSpecYaml[] =
    "workload: custom\n"
    "entrypoint: echo hello from the engine\n";

using rg::testing::ReadFileText;
using rg::testing::TempDir;

rg::core::RayConfig LoadCluster(const std::string& text = kClusterYaml) {
  return rg::testing::LoadClusterOrFail(text);
}

rg::core::JobSpec LoadSpec(const std::string& text = kSpecYaml,
                           const std::string& path = "jobs/smoke/hello.yaml") {
  return rg::testing::LoadSpecOrFail(text, path);
}

struct Harness : rg::testing::SubmitHarness {
  SubmitArtifactInputs Inputs() const { return {kClusterYaml, kSpecYaml, fake.address()}; }
};

TEST_CASE("SubmitAttempt sends the rendered body once and records every artifact") {
  Harness h;
  const auto spec = LoadSpec();
  const auto cluster = LoadCluster();
  rg::core::RenderContext context;

  auto result = SubmitAttempt(*h.server, &h.writer, spec, cluster, context, h.Inputs());
  REQUIRE(result.ok());
  CHECK_FALSE(result->adopted);
  CHECK(result->artifact_error.empty());
  CHECK(result->submission_id == "smoke-hello-" + spec.spec_hash);
  CHECK(h.fake.RequestCount(rg::testing::kRouteSubmit) == 1);
  REQUIRE(h.fake.SubmitBodies().size() == 1);
  CHECK(h.fake.SubmitBodies()[0].find("\"submission_id\":\"" + result->submission_id) !=
        std::string::npos);

  const fs::path dir = h.root.dir() / "jobs" / result->submission_id;
  CHECK(ReadFileText(dir / "config" / "ray_config.yaml") == kClusterYaml);
  CHECK(ReadFileText(dir / "config" / "jobspec.yaml") == kSpecYaml);
  CHECK(ReadFileText(dir / "config" / "submit_payload.json") ==
        rg::core::ToPrettyJson(rg::core::RedactSecrets(result->body)) + "\n");
  const std::string payload = ReadFileText(dir / "config" / "submit_payload.json");
  CHECK(payload.find("hf-secret-value") == std::string::npos);
  CHECK(payload.find("\"GREETING\": \"hello\"") != std::string::npos);
  const std::string log = ReadFileText(dir / "logs" / "submit.out");
  CHECK(log.find("outcome: submitted\n") != std::string::npos);
  CHECK(log.find("accepted: submission_id " + result->submission_id) != std::string::npos);
  CHECK(log.find("ray_address: " + h.fake.address() + "\n") != std::string::npos);
  CHECK(
      ReadFileText(dir / "debug" / "ray_job_list_post.txt").rfind(result->submission_id + " ", 0) ==
      0);
  CHECK_FALSE(ReadFileText(dir / "debug" / "ray_status_pre.txt").empty());
}

TEST_CASE("A duplicate id from the same spec and instance is adopted, not sent twice") {
  Harness h;
  const auto spec = LoadSpec();
  const auto cluster = LoadCluster();
  rg::core::RenderContext context;
  context.repo_url = kRepoUrl;
  auto first = SubmitAttempt(*h.server, &h.writer, spec, cluster, context, h.Inputs());
  REQUIRE(first.ok());

  // The files describing the creation of the run stay as they were on adoption.
  SubmitArtifactInputs later = h.Inputs();
  later.jobspec_text = "# reformatted\n" + later.jobspec_text;
  auto second = SubmitAttempt(*h.server, &h.writer, spec, cluster, context, later);
  REQUIRE(second.ok());
  CHECK(second->adopted);
  CHECK(second->submission_id == first->submission_id);
  CHECK(h.fake.JobCount() == 1);

  const fs::path dir = h.root.dir() / "jobs" / first->submission_id;
  CHECK(ReadFileText(dir / "config" / "jobspec.yaml") == kSpecYaml);
  const std::string log = ReadFileText(dir / "logs" / "submit.out");
  CHECK(log.find("outcome: submitted\n") != std::string::npos);
  CHECK(log.find("outcome: adopted\n") != std::string::npos);
  CHECK(log.find("already exists") != std::string::npos);
}

TEST_CASE("A duplicate id holding another spec is a conflict and writes nothing") {
  Harness h;
  const auto cluster = LoadCluster();
  rg::core::RenderContext context;
  const auto original =
      LoadSpec("workload: custom\nsubmission_id: pinned-run\nentrypoint: echo one\n");
  REQUIRE(SubmitAttempt(*h.server, nullptr, original, cluster, context, h.Inputs()).ok());

  const auto changed =
      LoadSpec("workload: custom\nsubmission_id: pinned-run\nentrypoint: echo two\n");
  REQUIRE(changed.spec_hash != original.spec_hash);
  auto result = SubmitAttempt(*h.server, &h.writer, changed, cluster, context, h.Inputs());
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().kind() == ErrorKind::kConflict);
  CHECK_THAT(result.error().message(), Catch::Contains("different spec"));
  CHECK_THAT(result.error().message(), Catch::Contains(original.spec_hash));
  CHECK_FALSE(fs::exists(h.root.dir() / "jobs" / "pinned-run"));
}

TEST_CASE("A duplicate id owned by another instance is a conflict") {
  Harness h;
  const auto spec = LoadSpec();
  const auto cluster = LoadCluster();
  rg::core::RenderContext theirs;
  theirs.instance = "team-b";
  REQUIRE(SubmitAttempt(*h.server, nullptr, spec, cluster, theirs, h.Inputs()).ok());

  rg::core::RenderContext ours;
  auto result = SubmitAttempt(*h.server, nullptr, spec, cluster, ours, h.Inputs());
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().kind() == ErrorKind::kConflict);
  CHECK_THAT(result.error().message(), Catch::Contains("'team-b'"));
}

// A job someone else submitted under the id this attempt renders, with the render's labels.
rg::core::Value PlantedBody(const rg::core::JobSpec& spec, const rg::core::RayConfig& cluster,
                            const rg::core::RenderContext& context) {
  auto body = rg::core::RenderSubmission(spec, cluster, context);
  REQUIRE(body.ok());
  return *body;
}

TEST_CASE("A duplicate id with our labels but not this attempt's render is a conflict") {
  Harness h;
  const auto spec = LoadSpec();
  const auto cluster = LoadCluster();
  rg::core::RenderContext context;
  context.repo_url = kRepoUrl;
  rg::core::Value planted = PlantedBody(spec, cluster, context);
  std::string differs;
  SECTION("another entrypoint") {
    planted["entrypoint"] = "echo PWNED";
    differs = "its entrypoint differs";
  }
  SECTION("another runtime_env") {
    planted["runtime_env"]["env_vars"]["HF_TOKEN"] = "stolen";
    differs = "its runtime_env differs (env_vars.HF_TOKEN)";
  }
  SECTION("no runtime_env") {
    planted.as_object().erase("runtime_env");
    differs = "its runtime_env differs";
  }
  REQUIRE(h.server->Submit(planted).ok());
  auto result = SubmitAttempt(*h.server, &h.writer, spec, cluster, context, h.Inputs());
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().kind() == ErrorKind::kConflict);
  const std::string& message = result.error().message();
  CHECK_THAT(message, Catch::StartsWith("submission id smoke-hello-" + spec.spec_hash));
  CHECK_THAT(message, Catch::Contains(differs));
  CHECK_THAT(message, !Catch::Contains("hf-secret-value"));
  CHECK_THAT(message, !Catch::Contains("stolen"));
  CHECK_THAT(message, !Catch::Contains("PWNED"));
  CHECK(h.fake.JobCount() == 1);
  CHECK_FALSE(fs::exists(h.root.dir() / "jobs" / ("smoke-hello-" + spec.spec_hash)));
}

TEST_CASE("A duplicate id whose job lacks gitops.repo is never adopted") {
  Harness h;
  const auto spec = LoadSpec();
  const auto cluster = LoadCluster();
  rg::core::RenderContext context;  // no repository: the render carries no gitops.repo
  REQUIRE(SubmitAttempt(*h.server, nullptr, spec, cluster, context, h.Inputs()).ok());
  auto again = SubmitAttempt(*h.server, nullptr, spec, cluster, context, h.Inputs());
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().kind() == ErrorKind::kConflict);
}

TEST_CASE("A spec that cannot be rendered sends nothing") {
  Harness h;
  const auto cluster = LoadCluster("address: http://127.0.0.1:8265\n");  // no shared_root
  const auto spec =
      LoadSpec("workload: custom\ncode_path: ${shared_root}/code\nentrypoint: echo hi\n");
  rg::core::RenderContext context;
  auto result = SubmitAttempt(*h.server, &h.writer, spec, cluster, context, h.Inputs());
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().kind() == ErrorKind::kInvalidInput);
  CHECK(h.fake.RequestCount(rg::testing::kRouteSubmit) == 0);
  CHECK_FALSE(fs::exists(h.root.dir() / "jobs"));
}

TEST_CASE("Without an artifact sink only the submit call is made") {
  Harness h;
  rg::core::RenderContext context;
  auto result = SubmitAttempt(*h.server, nullptr, LoadSpec(), LoadCluster(), context, h.Inputs());
  REQUIRE(result.ok());
  CHECK(h.fake.RequestCount(rg::testing::kRouteSubmit) == 1);
  CHECK(h.fake.RequestCount(rg::testing::kRouteClusterStatus) == 0);
  CHECK(h.fake.RequestCount(rg::testing::kRouteList) == 0);
}

TEST_CASE("A cluster status that cannot be read is recorded, and the submit goes ahead") {
  Harness h;
  h.fake.FailNext(rg::testing::kRouteClusterStatus, 10, 503, "dashboard busy");
  rg::core::RenderContext context;
  auto result = SubmitAttempt(*h.server, &h.writer, LoadSpec(), LoadCluster(), context, h.Inputs());
  REQUIRE(result.ok());
  CHECK(h.fake.RequestCount(rg::testing::kRouteSubmit) == 1);
  const std::string pre =
      ReadFileText(h.root.dir() / "jobs" / result->submission_id / "debug" / "ray_status_pre.txt");
  CHECK(pre.rfind("unavailable: ", 0) == 0);
}

TEST_CASE("A submit the server rejects is returned with its kind") {
  Harness h;
  h.fake.FailNext(rg::testing::kRouteSubmit, 1, 400, "TypeError: unexpected keyword argument");
  rg::core::RenderContext context;
  auto result = SubmitAttempt(*h.server, &h.writer, LoadSpec(), LoadCluster(), context, h.Inputs());
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().kind() == ErrorKind::kInvalidInput);
  CHECK_FALSE(fs::exists(h.root.dir() / "jobs"));
}

TEST_CASE("FormatJobListLines writes one line per job, DRIVER jobs by their job id") {
  rg::core::RayJob managed;
  managed.type = "SUBMISSION";
  managed.submission_id = "ppo-a-0123456789";
  managed.status = rg::core::RayJobStatus::kRunning;
  managed.entrypoint = "python3 -m x\nsecond line";
  managed.metadata["gitops.managed-by"] = "ray-gitops";
  rg::core::RayJob driver;
  driver.type = "DRIVER";
  driver.job_id = "02000000";
  driver.status = rg::core::RayJobStatus::kSucceeded;
  driver.entrypoint = "python a.py";
  CHECK(rg::engine::FormatJobListLines({managed, driver}) ==
        "ppo-a-0123456789 RUNNING SUBMISSION managed-by=ray-gitops python3 -m x second line\n"
        "02000000 SUCCEEDED DRIVER managed-by=- python a.py\n");
}

}  // namespace

namespace {

TEST_CASE(
    "Secrets: the value is sent, the artifact records its reference, and a run whose "
    "secret was rotated since is adopted as the same run") {
  Harness h;
  const auto spec = LoadSpec(std::string(kSpecYaml) + "secrets:\n  DB_CONNECTION: db-url\n");
  const auto cluster = LoadCluster();
  const rg::core::SecretValues before{{"db-url", "postgres://u:first-password@db/x"}};
  rg::core::RenderContext context;
  context.repo_url = kRepoUrl;
  context.secret_values = &before;

  auto first = SubmitAttempt(*h.server, &h.writer, spec, cluster, context, h.Inputs());
  REQUIRE(first.ok());
  REQUIRE(h.fake.SubmitBodies().size() == 1);
  CHECK(h.fake.SubmitBodies()[0].find("first-password") != std::string::npos);
  const fs::path dir = h.root.dir() / "jobs" / first->submission_id;
  const std::string payload = ReadFileText(dir / "config" / "submit_payload.json");
  CHECK(payload.find("first-password") == std::string::npos);
  CHECK(payload.find("\"DB_CONNECTION\": \"<secret:db-url>\"") != std::string::npos);

  // The file was rotated; the same attempt is submitted again (a lost answer, a restart).
  const rg::core::SecretValues after{{"db-url", "postgres://u:second-password@db/x"}};
  context.secret_values = &after;
  auto again = SubmitAttempt(*h.server, &h.writer, spec, cluster, context, h.Inputs());
  REQUIRE(again.ok());
  CHECK(again->adopted);
  CHECK(again->submission_id == first->submission_id);
}

}  // namespace
