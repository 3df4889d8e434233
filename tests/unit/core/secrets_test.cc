// Job secrets in the model and the render (docs/jobspec.md, "Secrets"): which secrets a job gets,
// what each delivery sends, and that a render without values never holds one.

#include "reconciler/core/secrets.h"

#include <catch2/catch.hpp>
#include <string>

#include "reconciler/core/render.h"
#include "reconciler/core/value.h"

using rg::core::JobSpec;
using rg::core::RayConfig;
using rg::core::RenderContext;
using rg::core::SecretDelivery;
using rg::core::SecretValues;
using rg::core::StringMap;
using rg::core::Value;

namespace {

RayConfig ClusterWithSecrets(SecretDelivery delivery) {
  RayConfig cluster;
  cluster.address = "http://127.0.0.1:8265";
  cluster.runtime_env["env_vars"] = Value::Object{{"HF_HOME", "/hf"}};
  cluster.secrets = StringMap{{"WANDB_API_KEY", "wandb-team"}, {"SLACK_TOKEN", "slack"}};
  cluster.secret_delivery = delivery;
  return cluster;
}

JobSpec JobWithSecrets() {
  JobSpec spec;
  spec.path = "jobs/train.yaml";
  spec.name = "train";
  spec.spec_hash = "abcdef0123";
  spec.entrypoint = "python train.py";
  spec.mutable_secret_fields().references =
      StringMap{{"HF_TOKEN", "hf-read"}, {"WANDB_API_KEY", "wandb-key"}};
  return spec;
}

const Value& EnvVars(const Value& body) { return *body.Find("runtime_env")->Find("env_vars"); }

std::string EnvVar(const Value& body, std::string_view name) {
  const Value* v = EnvVars(body).Find(name);
  REQUIRE(v != nullptr);
  REQUIRE(v->is_string());
  return v->as_string();
}

}  // namespace

TEST_CASE("a job gets the cluster's secrets, its own winning per name") {
  const StringMap effective =
      rg::core::EffectiveSecrets(JobWithSecrets(), ClusterWithSecrets(SecretDelivery::kEnv));
  CHECK(effective == StringMap{{"HF_TOKEN", "hf-read"},
                               {"SLACK_TOKEN", "slack"},
                               {"WANDB_API_KEY", "wandb-key"}});
  JobSpec plain;
  CHECK(rg::core::EffectiveSecrets(plain, RayConfig{}).empty());
}

TEST_CASE("a render without values shows <secret:REFERENCE> for every secret") {
  const auto body = rg::core::RenderSubmission(
      JobWithSecrets(), ClusterWithSecrets(SecretDelivery::kEnv), RenderContext{});
  REQUIRE(body.ok());
  CHECK(EnvVar(*body, "WANDB_API_KEY") == "<secret:wandb-key>");
  CHECK(EnvVar(*body, "HF_TOKEN") == "<secret:hf-read>");
  CHECK(EnvVar(*body, "SLACK_TOKEN") == "<secret:slack>");
  CHECK(EnvVar(*body, "HF_HOME") == "/hf");
}

TEST_CASE("env delivery with values puts each value in env_vars, and only there") {
  const SecretValues values{{"wandb-key", "0123456789abcdef0123456789abcdef01234567"},
                            {"hf-read", "hf_value_read_from_the_directory"},
                            {"slack", "xoxb-slack-value"},
                            {"unused", "never-sent"}};
  RenderContext context;
  context.secret_values = &values;
  const auto body = rg::core::RenderSubmission(JobWithSecrets(),
                                               ClusterWithSecrets(SecretDelivery::kEnv), context);
  REQUIRE(body.ok());
  CHECK(EnvVar(*body, "WANDB_API_KEY") == "0123456789abcdef0123456789abcdef01234567");
  CHECK(EnvVar(*body, "HF_TOKEN") == "hf_value_read_from_the_directory");
  CHECK(EnvVar(*body, "SLACK_TOKEN") == "xoxb-slack-value");
  CHECK(rg::core::ToCanonicalJson(*body).find("never-sent") == std::string::npos);
}

TEST_CASE("env delivery with a reference missing from the values renders nothing") {
  const SecretValues values{{"wandb-key", "0123456789abcdef"}, {"slack", "xoxb-slack-value"}};
  RenderContext context;
  context.secret_values = &values;
  const auto body = rg::core::RenderSubmission(JobWithSecrets(),
                                               ClusterWithSecrets(SecretDelivery::kEnv), context);
  REQUIRE_FALSE(body.ok());
  CHECK(body.error().IsNotFound());
  CHECK(body.error().message().find("hf-read") != std::string::npos);
  CHECK(body.error().message().find("HF_TOKEN") != std::string::npos);
}

TEST_CASE("node delivery sends ${NAME} and needs no value, with or without values") {
  const SecretValues values{{"wandb-key", "0123456789abcdef"}};
  for (const SecretValues* given : {static_cast<const SecretValues*>(nullptr), &values}) {
    RenderContext context;
    context.secret_values = given;
    const auto body = rg::core::RenderSubmission(
        JobWithSecrets(), ClusterWithSecrets(SecretDelivery::kNode), context);
    REQUIRE(body.ok());
    CHECK(EnvVar(*body, "WANDB_API_KEY") == "${WANDB_API_KEY}");
    CHECK(EnvVar(*body, "HF_TOKEN") == "${HF_TOKEN}");
    CHECK(rg::core::ToCanonicalJson(*body).find("0123456789abcdef") == std::string::npos);
  }
}

TEST_CASE("secrets never displace PYTHONPATH, which ray-gitops sets last") {
  JobSpec spec = JobWithSecrets();
  spec.mutable_secret_fields().references.insert_or_assign("PYTHONPATH", "py");
  const auto body =
      rg::core::RenderSubmission(spec, ClusterWithSecrets(SecretDelivery::kEnv), RenderContext{});
  REQUIRE(body.ok());
  CHECK(EnvVar(*body, "PYTHONPATH") == "${PYTHONPATH}");
}

TEST_CASE("SecretPlaceholder and SecretDeliveryName spell what the docs show") {
  CHECK(rg::core::SecretPlaceholder("wandb-key") == "<secret:wandb-key>");
  CHECK(rg::core::SecretDeliveryName(SecretDelivery::kEnv) == "env");
  CHECK(rg::core::SecretDeliveryName(SecretDelivery::kNode) == "node");
  CHECK(rg::core::ParseSecretDelivery("node") == SecretDelivery::kNode);
  CHECK(rg::core::ParseSecretDelivery("env") == SecretDelivery::kEnv);
  CHECK_FALSE(rg::core::ParseSecretDelivery("Env").has_value());
  CHECK_FALSE(rg::core::ParseSecretDelivery("").has_value());
}

TEST_CASE("references are file names of the secrets directory") {
  for (const char* good : {"wandb-key", "a", "0", "hf.read_2", "A-Z.z_9"}) {
    INFO(good);
    CHECK(rg::core::IsSecretReference(good));
  }
  CHECK(rg::core::IsSecretReference(std::string(128, 'a')));
  CHECK_FALSE(rg::core::IsSecretReference(std::string(129, 'a')));
  for (const char* bad : {"", ".", "..", ".hidden", "-x", "_x", "a/b", "../etc/passwd", "a b",
                          "a:b", "wandb key", "ключ"}) {
    INFO(bad);
    CHECK_FALSE(rg::core::IsSecretReference(bad));
  }
}
