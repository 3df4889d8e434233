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

TEST_CASE("credential shapes: each issuer's token is caught, at its length and charset") {
  struct Case {
    const char* name;
    std::string value;
    const char* kind;
  };
  const std::string b36 = "0123456789abcdefghijABCDEFGHIJklmnop";  // 36 base62 characters
  const std::vector<Case> cases = {
      {"HF_TOKEN", "hf_" + b36.substr(0, 34), "a Hugging Face token"},
      {"HF_TOKEN", "hf_" + b36.substr(0, 30), "a Hugging Face token"},
      {"GH", "ghp_" + b36, "a GitHub token"},
      {"GH", "gho_" + b36, "a GitHub token"},
      {"GH", "ghu_" + b36, "a GitHub token"},
      {"GH", "ghs_" + b36, "a GitHub token"},
      {"GH", "ghr_" + b36, "a GitHub token"},
      {"GH", "github_pat_11ABCDEFG0abcdefghijkl_" + b36 + "0123456789abcdefghijklm",
       "a GitHub token"},
      {"GL", "glpat-" + b36.substr(0, 20), "a GitLab token"},
      {"GL", "glpat-AbCd-Ef_0123456789xy", "a GitLab token"},
      {"OPENAI", "sk-" + b36 + "0123456789AB", "an API key (sk-...)"},
      {"OPENAI", "sk-proj-" + b36 + "_-" + b36, "an API key (sk-...)"},
      {"ANTHROPIC", "sk-ant-api03-" + b36 + b36, "an API key (sk-...)"},
      {"SLACK", "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOp", "a Slack token"},
      {"SLACK", "xoxp-1234567890-1234567890123-AbCdEfGhIjKlMnOp", "a Slack token"},
      {"AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", "an AWS access key id"},
      {"AWS_ACCESS_KEY_ID", "ASIAIOSFODNN7EXAMPLE", "an AWS access key id"},
      {"WANDB_API_KEY", "0123456789abcdef0123456789abcdef01234567", "a Weights & Biases API key"},
      {"wandb_key", "0123456789ABCDEF0123456789ABCDEF01234567", "a Weights & Biases API key"},
      {"MY_WANDB", "0123456789abcdef0123456789abcdef01234567", "a Weights & Biases API key"},
      // Anywhere a token starts and ends at a boundary: in a URL, after "Bearer ".
      {"URL", "https://x:ghp_" + b36 + "@github.com/a/b.git", "a GitHub token"},
      {"HEADER", "Bearer hf_" + b36, "a Hugging Face token"},
      {"LIST", "a,AKIAIOSFODNN7EXAMPLE,b", "an AWS access key id"},
  };
  for (const Case& c : cases) {
    INFO(c.name << "=" << c.value);
    const auto kind = rg::core::CredentialKind(c.name, c.value);
    REQUIRE(kind.has_value());
    CHECK(*kind == c.kind);
  }
}

TEST_CASE("credential shapes: ordinary values are not taken for tokens") {
  const std::string b36 = "0123456789abcdefghijABCDEFGHIJklmnop";
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"PKG", "sk-learn"},
      {"PKG", "scikit-learn"},
      // Lower case and digits only, or no digit: a package or a path, not a random key.
      {"PKG", "sk-learn-intelex-2024-experimental-build"},
      {"PKG", "sk-Learn-Intelex-Experimental-Build-Cache"},
      {"MODEL", "hf_internal_testing"},
      {"MODEL", "hf-internal-testing/tiny-random-gpt2"},
      {"HF_HOME", "/data/hf_cache"},
      {"HF_HOME", "${shared_root}/hf_home"},
      {"TASK", "task-" + b36},            // "sk-" inside a word
      {"X", "mghp_" + b36},               // a prefix inside a word
      {"X", "ghp_" + b36.substr(0, 35)},  // one short
      {"X", "ghp_" + b36 + "-x"},         // runs on past the token's charset
      {"X", "ghx_" + b36},                // not one of GitHub's prefixes
      {"X", "hf_" + b36.substr(0, 29)},
      {"X", "hf_" + b36.substr(0, 30) + "_suffix"},
      {"X", "github_pat_short"},
      {"X", "glpat-short"},
      {"X", "xoxb-test"},
      {"X", "AKIA"},
      {"X", "AKIAIOSFODNN7EXAMPL"},    // 19 characters
      {"X", "AKIAIOSFODNN7EXAMPLE1"},  // 21
      {"X", "AKIAiosfodnn7example"},   // lower case
      {"X", "NOTAKIAIOSFODNN7EXAMPLE"},
      // 40 hex digits are a commit id unless the name says W&B and not a commit.
      {"GIT_COMMIT", "0123456789abcdef0123456789abcdef01234567"},
      {"WANDB_GIT_COMMIT", "0123456789abcdef0123456789abcdef01234567"},
      {"WANDB_RUN_SHA", "0123456789abcdef0123456789abcdef01234567"},
      {"WANDB_API_KEY", "0123456789abcdef0123456789abcdef0123456"},
      {"WANDB_API_KEY", "0123456789abcdef0123456789abcdef0123456g"},
      {"WANDB_PROJECT", "verl-grpo"},
      {"WANDB_API_KEY", "${WANDB_API_KEY}"},
      {"X", ""},
  };
  for (const auto& [name, value] : cases) {
    INFO(name << "=" << value);
    CHECK_FALSE(rg::core::CredentialKind(name, value).has_value());
  }
}

TEST_CASE("RedactSecrets keeps what stands for a secret and hides any value") {
  JobSpec spec = JobWithSecrets();
  spec.env_vars = {{"API_TOKEN", "a-literal-value"}, {"OTHER_KEY", "${WANDB_API_KEY}"}};
  for (const SecretDelivery delivery : {SecretDelivery::kEnv, SecretDelivery::kNode}) {
    const auto body =
        rg::core::RenderSubmission(spec, ClusterWithSecrets(delivery), RenderContext{});
    REQUIRE(body.ok());
    const Value shown = rg::core::RedactSecrets(*body);
    const bool node = delivery == SecretDelivery::kNode;
    CHECK(EnvVar(shown, "WANDB_API_KEY") == (node ? "${WANDB_API_KEY}" : "<secret:wandb-key>"));
    CHECK(EnvVar(shown, "HF_TOKEN") == (node ? "${HF_TOKEN}" : "<secret:hf-read>"));
    CHECK(EnvVar(shown, "API_TOKEN") == "<redacted>");
    CHECK(EnvVar(shown, "OTHER_KEY") == "<redacted>");  // another variable's expansion
  }
  const SecretValues values{{"wandb-key", "0123456789abcdef"},
                            {"hf-read", "hf_value_read"},
                            {"slack", "xoxb-slack-value"}};
  RenderContext context;
  context.secret_values = &values;
  const auto sent =
      rg::core::RenderSubmission(spec, ClusterWithSecrets(SecretDelivery::kEnv), context);
  REQUIRE(sent.ok());
  CHECK(EnvVar(rg::core::RedactSecrets(*sent), "WANDB_API_KEY") == "<redacted>");
}

TEST_CASE("IsSecretStandIn: a placeholder of a valid reference, or the variable's own ${NAME}") {
  CHECK(rg::core::IsSecretStandIn("X", "<secret:wandb-key>"));
  CHECK(rg::core::IsSecretStandIn("HF_TOKEN", "${HF_TOKEN}"));
  CHECK_FALSE(rg::core::IsSecretStandIn("HF_TOKEN", "${OTHER}"));
  CHECK_FALSE(rg::core::IsSecretStandIn("HF_TOKEN", "$HF_TOKEN"));
  CHECK_FALSE(rg::core::IsSecretStandIn("HF_TOKEN", "${HF_TOKEN}x"));
  CHECK_FALSE(rg::core::IsSecretStandIn("X", "<secret:a/b>"));
  CHECK_FALSE(rg::core::IsSecretStandIn("X", "<secret:>"));
  CHECK_FALSE(rg::core::IsSecretStandIn("X", "<secret:value with spaces>"));
  CHECK_FALSE(rg::core::IsSecretStandIn("X", "x<secret:a>"));
}

TEST_CASE("WithSecretPlaceholders records a sent body with references instead of values") {
  const SecretValues values{{"wandb-key", "0123456789abcdef"},
                            {"hf-read", "hf_value_read"},
                            {"slack", "xoxb-slack-value"}};
  RenderContext context;
  context.secret_values = &values;
  const RayConfig cluster = ClusterWithSecrets(SecretDelivery::kEnv);
  const auto sent = rg::core::RenderSubmission(JobWithSecrets(), cluster, context);
  REQUIRE(sent.ok());
  const StringMap secrets = rg::core::EffectiveSecrets(JobWithSecrets(), cluster);
  const Value recorded = rg::core::WithSecretPlaceholders(*sent, secrets);
  const auto shown = rg::core::RenderSubmission(JobWithSecrets(), cluster, RenderContext{});
  REQUIRE(shown.ok());
  CHECK(recorded == *shown);                                    // the body `render` prints
  CHECK(EnvVar(*sent, "WANDB_API_KEY") == "0123456789abcdef");  // the original is untouched

  const RayConfig node = ClusterWithSecrets(SecretDelivery::kNode);
  const auto node_body = rg::core::RenderSubmission(JobWithSecrets(), node, RenderContext{});
  REQUIRE(node_body.ok());
  CHECK(rg::core::WithSecretPlaceholders(*node_body, secrets) == *node_body);
  CHECK(rg::core::WithSecretPlaceholders(Value("x"), secrets) == Value("x"));
}
