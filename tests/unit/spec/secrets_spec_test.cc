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

namespace rg::spec {

TEST_CASE("a secret's name must be an environment variable name other than PYTHONPATH") {
  CHECK(SecretJobErrors(std::string(kJob) + "secrets:\n  1WANDB: wandb-key\n  A-B: x\n") ==
        std::vector<std::string>{
            "jobs/t.yaml:4:3: error: secrets key \"1WANDB\" is not a valid environment variable "
            "name ([A-Za-z_][A-Za-z0-9_]*)",
            "jobs/t.yaml:5:3: error: secrets key \"A-B\" is not a valid environment variable "
            "name ([A-Za-z_][A-Za-z0-9_]*)"});
  CHECK(SecretJobErrors(std::string(kJob) + "secrets:\n  PYTHONPATH: py-path\n") ==
        std::vector<std::string>{"jobs/t.yaml:4:3: error: secrets.PYTHONPATH cannot be a secret: "
                                 "ray-gitops sets PYTHONPATH itself (code_path, then "
                                 "user_code_path)"});
  CHECK(SecretClusterErrors(std::string(kCluster) + "secrets:\n  PYTHONPATH: py-path\n") ==
        std::vector<std::string>{"cluster.yaml:3:3: error: secrets.PYTHONPATH cannot be a "
                                 "secret: ray-gitops sets PYTHONPATH itself (code_path, then "
                                 "user_code_path)"});
}

TEST_CASE("a secret's value must be a reference: a non-empty string of the reference pattern") {
  const std::string needs =
      " must be a reference: the name of a file in the daemon's secrets directory (e.g. "
      "wandb-key; quote it if it reads as a number)";
  const std::string pattern =
      " must be a reference of 1 to 128 characters of [A-Za-z0-9_.-] starting with a letter or "
      "digit (a file name in the secrets directory)";
  struct Case {
    std::string value;
    std::string error;  // empty: valid
  };
  const std::vector<Case> cases = {
      {"wandb-key", ""},
      {"\"123\"", ""},
      {"hf.read_2", ""},
      {std::string(128, 'k'), ""},
      {"123", "jobs/t.yaml:4:10: error: secrets.WANDB" + needs + " (got 123)"},
      {"true", "jobs/t.yaml:4:10: error: secrets.WANDB" + needs + " (got true)"},
      {"\"\"", "jobs/t.yaml:4:10: error: secrets.WANDB" + needs + " (got \"\")"},
      {"", "jobs/t.yaml:4:3: error: secrets.WANDB" + needs + " (got null)"},
      {"[a]", "jobs/t.yaml:4:10: error: secrets.WANDB" + needs + " (got a list)"},
      {"{a: b}", "jobs/t.yaml:4:10: error: secrets.WANDB" + needs + " (got a mapping)"},
      {"../etc/passwd",
       "jobs/t.yaml:4:10: error: secrets.WANDB" + pattern + " (got \"../etc/passwd\")"},
      {".hidden", "jobs/t.yaml:4:10: error: secrets.WANDB" + pattern + " (got \".hidden\")"},
      {"a/b", "jobs/t.yaml:4:10: error: secrets.WANDB" + pattern + " (got \"a/b\")"},
      {"-x", "jobs/t.yaml:4:10: error: secrets.WANDB" + pattern + " (got \"-x\")"},
      {"\"a b\"", "jobs/t.yaml:4:10: error: secrets.WANDB" + pattern + " (got \"a b\")"},
      {std::string(129, 'k'), "jobs/t.yaml:4:10: error: secrets.WANDB" + pattern + " (got \"" +
                                  std::string(60, 'k') + "...\")"},
  };
  for (const Case& c : cases) {
    const std::string text = std::string(kJob) + "secrets:\n  WANDB: " + c.value + "\n";
    INFO(text);
    const std::vector<std::string> errors = SecretJobErrors(text);
    if (c.error.empty()) {
      CHECK(errors.empty());
    } else {
      CHECK(errors == std::vector<std::string>{c.error});
    }
  }
}

TEST_CASE("a name both in env_vars and secrets of one file is an error at the secret") {
  CHECK(SecretJobErrors(std::string(kJob) +
                        "env_vars:\n  HF_TOKEN: x\n  OTHER: y\nsecrets:\n  HF_TOKEN: hf-read\n") ==
        std::vector<std::string>{
            "jobs/t.yaml:7:3: error: secrets.HF_TOKEN: env_vars also sets HF_TOKEN (line 4); a "
            "variable is either a secret or a plain value: remove one of them"});
  CHECK(SecretClusterErrors(std::string(kCluster) +
                            "secrets:\n  HF_TOKEN: hf-read\n"
                            "runtime_env:\n  env_vars:\n    HF_TOKEN: x\n") ==
        std::vector<std::string>{
            "cluster.yaml:3:3: error: secrets.HF_TOKEN: runtime_env.env_vars also sets HF_TOKEN "
            "(line 6); a variable is either a secret or a plain value: remove one of them"});
  // Names differ by case: two variables.
  CHECK(SecretJobErrors(std::string(kJob) +
                        "env_vars:\n  hf_token: x\nsecrets:\n  HF_TOKEN: hf-read\n")
            .empty());
}

TEST_CASE("an env_vars value shaped like a credential is an error at the value") {
  const std::string tail =
      "; put it in the daemon's secrets directory and name it under secrets: (docs/jobspec.md, "
      "\"Secrets\")";
  CHECK(SecretJobErrors(std::string(kJob) +
                        "env_vars:\n  HF_TOKEN: hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567\n") ==
        std::vector<std::string>{"jobs/t.yaml:4:13: error: env_vars.HF_TOKEN looks like a Hugging "
                                 "Face token" +
                                 tail});
  CHECK(SecretJobErrors(
            std::string(kJob) +
            "runtime_env:\n  env_vars:\n    GH: ghp_0123456789abcdefghijABCDEFGHIJ012345\n") ==
        std::vector<std::string>{
            "jobs/t.yaml:4:3: error: runtime_env.env_vars is not allowed in a JobSpec; use the "
            "top-level env_vars",
            "jobs/t.yaml:5:9: error: runtime_env.env_vars.GH looks like a GitHub token" + tail});
  CHECK(SecretClusterErrors(std::string(kCluster) +
                            "runtime_env:\n  env_vars:\n"
                            "    WANDB_API_KEY: 0123456789abcdef0123456789abcdef01234567\n") ==
        std::vector<std::string>{"cluster.yaml:4:20: error: runtime_env.env_vars.WANDB_API_KEY "
                                 "looks like a Weights & Biases API key" +
                                 tail});
  // Inside a URL too, where a clone URL carries a token.
  CHECK(SecretJobErrors(
            std::string(kJob) +
            "env_vars:\n  REPO: https://oauth2:glpat-AbCdEf0123456789xyzW@gitlab.com/a.git\n") ==
        std::vector<std::string>{"jobs/t.yaml:4:9: error: env_vars.REPO looks like a GitLab token" +
                                 tail});
}

TEST_CASE("ordinary env_vars values that start like a token prefix are not credentials") {
  for (const char* value :
       {"sk-learn", "scikit-learn", "hf_internal_testing", "hf-internal-testing/tiny-random-gpt2",
        "/data/hf_cache", "${shared_root}/hf_home", "github_pat_short", "AKIA", "glpat-short",
        "xoxb-test", "sk-learn-intelex-2024-experimental-build"}) {
    const std::string text = std::string(kJob) + "env_vars:\n  X: \"" + value + "\"\n";
    INFO(text);
    CHECK(SecretJobErrors(text).empty());
  }
}

}  // namespace rg::spec

namespace rg::spec {
namespace {

const core::InvalidSpec* FindInvalid(const core::DesiredState& state, const std::string& path) {
  for (const auto& bad : state.invalid) {
    if (bad.path == path) return &bad;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("across cluster.yaml and a spec, a secret and a plain env var of one name are errors") {
  const SourceFile cluster{"cluster.yaml",
                           "address: http://127.0.0.1:8265\n"
                           "runtime_env:\n  env_vars:\n    HF_HOME: /hf\n    SHARED: x\n"
                           "secrets:\n  WANDB_API_KEY: wandb-team\n"};
  const core::DesiredState state = LoadDesiredState(
      cluster,
      {{"jobs/ok.yaml",
        std::string(kJob) + "secrets:\n  WANDB_API_KEY: wandb-mine\n  HF_TOKEN: hf-read\n"},
       {"jobs/secret-over-env.yaml", std::string(kJob) + "secrets:\n  HF_HOME: hf-home\n"},
       {"jobs/env-over-secret.yaml", std::string(kJob) + "env_vars:\n  WANDB_API_KEY: x\n"}});
  REQUIRE(state.ClusterValid());
  REQUIRE(state.jobs.size() == 1);
  CHECK(state.jobs[0].path == "jobs/ok.yaml");

  const core::InvalidSpec* secret_over_env = FindInvalid(state, "jobs/secret-over-env.yaml");
  REQUIRE(secret_over_env != nullptr);
  CHECK(Messages(secret_over_env->diagnostics) ==
        std::vector<std::string>{
            "jobs/secret-over-env.yaml:4:3: error: secrets.HF_HOME: cluster.yaml's "
            "runtime_env.env_vars also sets HF_HOME (cluster.yaml:4); a variable is either a "
            "secret or a plain value: remove one of them"});
  const core::InvalidSpec* env_over_secret = FindInvalid(state, "jobs/env-over-secret.yaml");
  REQUIRE(env_over_secret != nullptr);
  CHECK(Messages(env_over_secret->diagnostics) ==
        std::vector<std::string>{
            "jobs/env-over-secret.yaml:3:1: error: env_vars.WANDB_API_KEY: cluster.yaml names "
            "WANDB_API_KEY under secrets (cluster.yaml:7); a variable is either a secret or a "
            "plain value: remove it from env_vars (the job gets the secret), or name another "
            "reference under this spec's secrets"});
}

TEST_CASE("the spec hash covers secrets as written: names and references, in any order") {
  const auto hash = [](const std::string& secrets) {
    return SecretValidJob(std::string(kJob) + secrets).spec_hash;
  };
  const std::string base = hash("secrets:\n  WANDB_API_KEY: wandb-key\n  HF_TOKEN: hf-read\n");
  CHECK(hash("secrets:\n  HF_TOKEN: hf-read\n  WANDB_API_KEY: wandb-key\n") == base);
  CHECK(hash("secrets: {WANDB_API_KEY: wandb-key, HF_TOKEN: \"hf-read\"}  # flow\n") == base);
  CHECK(hash("secrets:\n  WANDB_API_KEY: wandb-key-2\n  HF_TOKEN: hf-read\n") != base);
  CHECK(hash("secrets:\n  WANDB_KEY: wandb-key\n  HF_TOKEN: hf-read\n") != base);
  CHECK(hash("secrets:\n  WANDB_API_KEY: wandb-key\n") != base);
  CHECK(hash("") != base);
}

TEST_CASE("cluster.yaml's secrets and secret_delivery never change a spec hash") {
  const std::vector<std::string> clusters = {
      "address: http://127.0.0.1:8265\n",
      "address: http://127.0.0.1:8265\nsecrets:\n  WANDB_API_KEY: wandb-key\n",
      "address: http://127.0.0.1:8265\nsecrets:\n  WANDB_API_KEY: wandb-key-2\n"
      "secret_delivery: node\nallow_secrets_without_ray_auth: true\n",
  };
  std::vector<std::string> hashes;
  for (const std::string& text : clusters) {
    const core::DesiredState state =
        LoadDesiredState(SourceFile{"cluster.yaml", text},
                         {{"jobs/a.yaml", std::string(kJob) + "secrets:\n  HF_TOKEN: hf-read\n"}});
    REQUIRE(state.ClusterValid());
    REQUIRE(state.jobs.size() == 1);
    hashes.push_back(state.jobs[0].spec_hash);
  }
  CHECK(hashes[0] == hashes[1]);
  CHECK(hashes[0] == hashes[2]);
}

}  // namespace rg::spec
