// `secrets`, `secret_delivery` and `allow_secrets_without_ray_auth` as the loader reads them, and
// every error they can give, at its line and column (docs/jobspec.md, "Secrets").

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/identity.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/unit/spec/diagnostic_messages.h"

namespace rg::spec {
namespace {

std::vector<std::string> SecretJobErrors(const std::string& text) {
  return Messages(LoadJobSpec(text, "jobs/t.yaml").diagnostics);
}

std::vector<std::string> SecretClusterErrors(const std::string& text) {
  return Messages(LoadRayConfig(text, "cluster.yaml").diagnostics);
}

core::JobSpec SecretValidJob(const std::string& text) {
  Parsed<core::JobSpec> parsed = LoadJobSpec(text, "jobs/t.yaml");
  INFO(text);
  REQUIRE(Messages(parsed.diagnostics) == std::vector<std::string>{});
  return *parsed.value;
}

core::RayConfig SecretValidCluster(const std::string& text) {
  Parsed<core::RayConfig> parsed = LoadRayConfig(text, "cluster.yaml");
  INFO(text);
  REQUIRE(Messages(parsed.diagnostics) == std::vector<std::string>{});
  return *parsed.value;
}

constexpr const char* kJob = "workload: custom\nentrypoint: python train.py\n";
constexpr const char* kCluster = "address: http://127.0.0.1:8265\n";

}  // namespace

TEST_CASE("a spec's secrets are read as name -> reference with the place of each name") {
  const core::JobSpec spec = SecretValidJob(
      std::string(kJob) + "secrets:\n  WANDB_API_KEY: wandb-key\n  HF_TOKEN: hf.read_2\n");
  CHECK(spec.secrets() ==
        core::StringMap{{"HF_TOKEN", "hf.read_2"}, {"WANDB_API_KEY", "wandb-key"}});
  CHECK(spec.secret_fields().name_pos.at("WANDB_API_KEY") == core::SourcePos{4, 3});
  CHECK(spec.secret_fields().name_pos.at("HF_TOKEN") == core::SourcePos{5, 3});
}

TEST_CASE("a spec without secrets keeps no box for them") {
  const core::JobSpec spec = SecretValidJob(kJob);
  CHECK(spec.secrets().empty());
  CHECK(spec.extras.empty());
  const core::JobSpec empty_map = SecretValidJob(std::string(kJob) + "secrets: {}\n");
  CHECK(empty_map.extras.empty());
}

TEST_CASE("cluster.yaml's secrets, secret_delivery and allow_secrets_without_ray_auth") {
  const core::RayConfig plain = SecretValidCluster(kCluster);
  CHECK(plain.secrets.empty());
  CHECK(plain.secret_delivery == core::SecretDelivery::kEnv);
  CHECK_FALSE(plain.allow_secrets_without_ray_auth);

  const core::RayConfig cluster = SecretValidCluster(std::string(kCluster) +
                                                     "secrets:\n  WANDB_API_KEY: wandb-key\n"
                                                     "secret_delivery: node\n"
                                                     "allow_secrets_without_ray_auth: true\n");
  CHECK(cluster.secrets == core::StringMap{{"WANDB_API_KEY", "wandb-key"}});
  CHECK(cluster.secret_delivery == core::SecretDelivery::kNode);
  CHECK(cluster.allow_secrets_without_ray_auth);
  CHECK(cluster.positions.at("secrets.WANDB_API_KEY") == core::SourcePos{3, 3});
  CHECK(SecretValidCluster(std::string(kCluster) + "secret_delivery: env\n").secret_delivery ==
        core::SecretDelivery::kEnv);
}

}  // namespace rg::spec

namespace rg::spec {

TEST_CASE("secrets errors are at the name or the value that is wrong") {
  CHECK(SecretJobErrors(std::string(kJob) + "secrets: [a]\n") ==
        std::vector<std::string>{
            "jobs/t.yaml:3:10: error: secrets must be a mapping of environment variable names "
            "to references (e.g. WANDB_API_KEY: wandb-key) (got a list)"});
  CHECK(SecretClusterErrors(std::string(kCluster) + "secret_delivery: file\n") ==
        std::vector<std::string>{
            "cluster.yaml:2:18: error: secret_delivery must be env (the value in the "
            "submission) or node (${NAME}, from the nodes' environment) (got \"file\")"});
  CHECK(SecretClusterErrors(std::string(kCluster) + "allow_secrets_without_ray_auth: yes\n") ==
        std::vector<std::string>{"cluster.yaml:2:33: error: allow_secrets_without_ray_auth must "
                                 "be true or false (got \"yes\")"});
}

}  // namespace rg::spec
