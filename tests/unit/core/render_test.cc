#include "reconciler/core/render.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/identity.h"

using rg::core::JobSpec;
using rg::core::RayConfig;
using rg::core::RenderContext;
using rg::core::Value;
using rg::core::Workload;

namespace {

RayConfig SampleCluster() {
  RayConfig cluster;
  cluster.address = "http://127.0.0.1:8265";
  cluster.shared_root = "/private";
  cluster.entrypoint_num_cpus = 1;
  cluster.entrypoint_resources = rg::core::ResourceMap{{"worker_node", 1}};
  cluster.runtime_env["env_vars"] = Value::Object{
      {"HF_HOME", "${shared_root}/hf"},
      {"HF_ENDPOINT", "https://hf-mirror.example"},
      {"SHARED", "cluster"},
  };
  return cluster;
}

JobSpec TrainingSpec(Workload workload, std::string name) {
  JobSpec spec;
  spec.path = "jobs/" + name + ".yaml";
  spec.workload = workload;
  spec.name = std::move(name);
  spec.spec_hash = "abcdef0123";
  spec.mutable_trainer().code_path = "${shared_root}/common/code/verl/snap1";
  spec.mutable_trainer().model_id = "Qwen/Qwen2.5-0.5B-Instruct";
  spec.mutable_trainer().train_file = "${shared_root}/data/gsm8k/train.parquet";
  spec.mutable_trainer().val_file = "${shared_root}/data/gsm8k/test.parquet";
  spec.mutable_trainer().nnodes = 2;
  spec.mutable_trainer().n_gpus_per_node = 8;
  spec.mutable_trainer().total_training_steps = 100;
  spec.mutable_trainer().save_freq = 10;
  spec.mutable_trainer().test_freq = 5;
  return spec;
}

std::string Entrypoint(const JobSpec& spec, const RayConfig& cluster) {
  auto rendered = rg::core::RenderEntrypoint(spec, cluster, rg::core::SubmissionIdBase(spec),
                                             rg::core::SubmissionIdBase(spec));
  REQUIRE(rendered.ok());
  return *rendered;
}

Value Render(const JobSpec& spec, const RayConfig& cluster, RenderContext context = {}) {
  auto body = rg::core::RenderSubmission(spec, cluster, context);
  REQUIRE(body.ok());
  return *body;
}

const Value& EnvVars(const Value& body) {
  const Value* env = body.Find("runtime_env");
  REQUIRE(env != nullptr);
  const Value* vars = env->Find("env_vars");
  REQUIRE(vars != nullptr);
  return *vars;
}

std::string EnvVar(const Value& body, std::string_view name) {
  const Value* v = EnvVars(body).Find(name);
  REQUIRE(v != nullptr);
  REQUIRE(v->is_string());
  return v->as_string();
}

}  // namespace

TEST_CASE("ppo entrypoint lists every field, then the checkpoint dir, then the overrides") {
  JobSpec spec = TrainingSpec(Workload::kPpo, "ppo-qwen");
  spec.mutable_trainer().overrides = {"actor_rollout_ref.rollout.name=vllm",
                                      "trainer.logger=['console']"};
  CHECK(Entrypoint(spec, SampleCluster()) ==
        "python3 -m verl.trainer.main_ppo"
        " data.train_files=/private/data/gsm8k/train.parquet"
        " data.val_files=/private/data/gsm8k/test.parquet"
        " actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct"
        " critic.model.path=Qwen/Qwen2.5-0.5B-Instruct"
        " trainer.nnodes=2 trainer.n_gpus_per_node=8 trainer.total_training_steps=100"
        " trainer.save_freq=10 trainer.test_freq=5"
        " trainer.experiment_name=ppo-qwen-abcdef0123"
        " trainer.default_local_dir=/private/jobs/ppo-qwen-abcdef0123/checkpoints"
        " actor_rollout_ref.rollout.name=vllm 'trainer.logger=['\\''console'\\'']'");
}

TEST_CASE("grpo entrypoint sets the grpo estimator and has no critic") {
  JobSpec spec = TrainingSpec(Workload::kGrpo, "grpo-qwen");
  CHECK(Entrypoint(spec, SampleCluster()) ==
        "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo"
        " data.train_files=/private/data/gsm8k/train.parquet"
        " data.val_files=/private/data/gsm8k/test.parquet"
        " actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct"
        " trainer.nnodes=2 trainer.n_gpus_per_node=8 trainer.total_training_steps=100"
        " trainer.save_freq=10 trainer.test_freq=5"
        " trainer.experiment_name=grpo-qwen-abcdef0123"
        " trainer.default_local_dir=/private/jobs/grpo-qwen-abcdef0123/checkpoints");
}

TEST_CASE("sft entrypoint uses the sft trainer, model.path and the cpu device") {
  JobSpec spec = TrainingSpec(Workload::kSft, "sft-qwen");
  spec.mutable_trainer().overrides = {"optim.lr=1e-5"};
  CHECK(Entrypoint(spec, SampleCluster()) ==
        "python3 -m verl.trainer.sft_trainer_ray"
        " data.train_files=/private/data/gsm8k/train.parquet"
        " data.val_files=/private/data/gsm8k/test.parquet"
        " model.path=Qwen/Qwen2.5-0.5B-Instruct"
        " trainer.nnodes=2 trainer.n_gpus_per_node=8 trainer.total_training_steps=100"
        " trainer.save_freq=10 trainer.test_freq=5"
        " trainer.experiment_name=sft-qwen-abcdef0123"
        " trainer.default_local_dir=/private/jobs/sft-qwen-abcdef0123/checkpoints"
        " trainer.device=cpu optim.lr=1e-5");
}

TEST_CASE("an explicit trainer.device override replaces the sft cpu default") {
  for (std::string device : {"trainer.device=cuda", "+trainer.device=npu", "++trainer.device=x"}) {
    JobSpec spec = TrainingSpec(Workload::kSft, "sft");
    spec.mutable_trainer().overrides = {device};
    std::string entrypoint = Entrypoint(spec, SampleCluster());
    INFO(entrypoint);
    CHECK(entrypoint.find("trainer.device=cpu") == std::string::npos);
    CHECK(entrypoint.size() >= device.size());
    CHECK(entrypoint.substr(entrypoint.size() - device.size()) == device);
  }
  JobSpec similar = TrainingSpec(Workload::kSft, "sft");
  similar.mutable_trainer().overrides = {"trainer.device_map=auto"};
  CHECK(Entrypoint(similar, SampleCluster()).find(" trainer.device=cpu ") != std::string::npos);
}

TEST_CASE("fields the spec leaves out are left out of the command") {
  JobSpec spec;
  spec.workload = Workload::kPpo;
  spec.name = "bare";
  spec.spec_hash = "0000000000";
  spec.mutable_trainer().train_file = "/d/t.parquet";
  RayConfig no_root;
  CHECK(Entrypoint(spec, no_root) ==
        "python3 -m verl.trainer.main_ppo data.train_files=/d/t.parquet"
        " trainer.experiment_name=bare-0000000000");
  spec.workload = Workload::kSft;
  CHECK(Entrypoint(spec, no_root) ==
        "python3 -m verl.trainer.sft_trainer_ray data.train_files=/d/t.parquet"
        " trainer.experiment_name=bare-0000000000 trainer.device=cpu");
}

TEST_CASE("custom entrypoints run verbatim after ${shared_root} interpolation") {
  JobSpec spec;
  spec.workload = Workload::kCustom;
  spec.name = "hello";
  spec.entrypoint = "python3 ${shared_root}/user/hello.py --x 'a b' && echo ${HOME} $(date)";
  CHECK(Entrypoint(spec, SampleCluster()) ==
        "python3 /private/user/hello.py --x 'a b' && echo ${HOME} $(date)");
  spec.entrypoint.reset();
  CHECK_FALSE(rg::core::RenderEntrypoint(spec, SampleCluster(), "x", "x").ok());
}

TEST_CASE("${shared_root} without a shared_root in the cluster is invalid input") {
  RayConfig cluster;
  auto text = rg::core::InterpolateSharedRoot("${shared_root}/x", cluster);
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().IsInvalidInput());
  CHECK(text.error().message().find("shared_root") != std::string::npos);

  JobSpec spec = TrainingSpec(Workload::kPpo, "p");
  auto body = rg::core::RenderSubmission(spec, cluster, {});
  REQUIRE_FALSE(body.ok());
  CHECK(body.error().IsInvalidInput());
}

TEST_CASE("only ${shared_root} is interpolated, everywhere it appears") {
  RayConfig cluster = SampleCluster();
  auto text = rg::core::InterpolateSharedRoot(
      "${shared_root}:${shared_root}/${PYTHONPATH}/${shared_rootx}/$shared_root", cluster);
  REQUIRE(text.ok());
  CHECK(*text == "/private:/private/${PYTHONPATH}/${shared_rootx}/$shared_root");
}

TEST_CASE("the body carries id, entrypoint, runtime_env, resources and metadata") {
  JobSpec spec = TrainingSpec(Workload::kPpo, "ppo-qwen");
  Value body = Render(spec, SampleCluster());
  std::vector<std::string> keys;
  for (const auto& [key, value] : body.as_object()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"entrypoint", "entrypoint_num_cpus",
                                         "entrypoint_resources", "metadata", "runtime_env",
                                         "submission_id"});
  CHECK(body.Find("submission_id")->as_string() == "ppo-qwen-abcdef0123");
  CHECK(body.Find("entrypoint")->as_string() == Entrypoint(spec, SampleCluster()));
  CHECK(body.Find("entrypoint_num_cpus")->as_double() == 1.0);
  CHECK(*body.Find("entrypoint_resources") == Value(Value::Object{{"worker_node", 1.0}}));
}

// The value of `key=` in a rendered entrypoint (every one of ours is a bare shell word here).
std::string OverrideValue(const Value& body, std::string_view key) {
  const std::string& entrypoint = body.Find("entrypoint")->as_string();
  const std::string needle = " " + std::string(key) + "=";
  const size_t at = entrypoint.find(needle);
  REQUIRE(at != std::string::npos);
  const size_t start = at + needle.size();
  return entrypoint.substr(start, entrypoint.find(' ', start) - start);
}

TEST_CASE("the submission id and experiment name follow the attempt") {
  JobSpec spec = TrainingSpec(Workload::kPpo, "ppo-qwen");
  RenderContext context;
  context.attempt = 2;
  Value body = Render(spec, SampleCluster(), context);
  CHECK(body.Find("submission_id")->as_string() == "ppo-qwen-abcdef0123-r2");
  CHECK(OverrideValue(body, "trainer.experiment_name") == "ppo-qwen-abcdef0123-r2");
  CHECK(body.Find("metadata")->Find("gitops.attempt")->as_string() == "2");
}

TEST_CASE("every attempt of a verl run shares the run's checkpoint folder, named by attempt 0") {
  for (Workload workload : {Workload::kPpo, Workload::kGrpo, Workload::kSft}) {
    JobSpec spec = TrainingSpec(workload, "train");
    INFO("workload " << static_cast<int>(workload));
    std::vector<Value> bodies;
    for (int attempt : {0, 1, 3}) {
      RenderContext context;
      context.attempt = attempt;
      bodies.push_back(Render(spec, SampleCluster(), context));
    }
    for (const Value& body : bodies) {
      CHECK(OverrideValue(body, "trainer.default_local_dir") ==
            "/private/jobs/train-abcdef0123/checkpoints");
    }
    CHECK(OverrideValue(bodies[0], "trainer.experiment_name") == "train-abcdef0123");
    CHECK(OverrideValue(bodies[1], "trainer.experiment_name") == "train-abcdef0123-r1");
    CHECK(OverrideValue(bodies[2], "trainer.experiment_name") == "train-abcdef0123-r3");
    CHECK(bodies[1].Find("submission_id")->as_string() == "train-abcdef0123-r1");
  }
}

TEST_CASE(
    "a scheduled verl run's attempts share the folder of the slot's run, not another slot's") {
  JobSpec spec = TrainingSpec(Workload::kPpo, "nightly");
  RenderContext context;
  context.slot = "202501020300";
  context.attempt = 1;
  Value retry = Render(spec, SampleCluster(), context);
  CHECK(retry.Find("submission_id")->as_string() == "nightly-abcdef0123-202501020300-r1");
  CHECK(OverrideValue(retry, "trainer.experiment_name") == "nightly-abcdef0123-202501020300-r1");
  CHECK(OverrideValue(retry, "trainer.default_local_dir") ==
        "/private/jobs/nightly-abcdef0123-202501020300/checkpoints");
  context.slot = "202501030300";
  context.attempt = 0;
  CHECK(OverrideValue(Render(spec, SampleCluster(), context), "trainer.default_local_dir") ==
        "/private/jobs/nightly-abcdef0123-202501030300/checkpoints");
}

TEST_CASE("a pinned verl run's attempts share the pinned id's folder") {
  JobSpec spec = TrainingSpec(Workload::kGrpo, "p");
  spec.submission_id = "my-pinned-run";
  RenderContext context;
  context.attempt = 2;
  Value body = Render(spec, SampleCluster(), context);
  CHECK(body.Find("submission_id")->as_string() == "my-pinned-run-r2");
  CHECK(OverrideValue(body, "trainer.experiment_name") == "my-pinned-run-r2");
  CHECK(OverrideValue(body, "trainer.default_local_dir") ==
        "/private/jobs/my-pinned-run/checkpoints");
}

TEST_CASE("without a shared_root a verl run gets no default_local_dir") {
  RayConfig cluster = SampleCluster();
  cluster.shared_root.reset();
  JobSpec spec = TrainingSpec(Workload::kSft, "sft");
  spec.mutable_trainer().code_path.reset();
  spec.mutable_trainer().train_file = "/data/train.parquet";
  spec.mutable_trainer().val_file.reset();
  cluster.runtime_env = Value::Object{};
  RenderContext context;
  context.attempt = 1;
  const Value body = Render(spec, cluster, context);
  CHECK(body.Find("entrypoint")->as_string().find("default_local_dir") == std::string::npos);
}

TEST_CASE("entrypoint resources: job value, else cluster value, else omitted") {
  RayConfig cluster = SampleCluster();
  cluster.entrypoint_num_gpus = 0.5;
  cluster.entrypoint_memory = 1000;
  JobSpec spec = TrainingSpec(Workload::kPpo, "p");

  Value from_cluster = Render(spec, cluster);
  CHECK(from_cluster.Find("entrypoint_num_cpus")->as_double() == 1.0);
  CHECK(from_cluster.Find("entrypoint_num_gpus")->as_double() == 0.5);
  CHECK(from_cluster.Find("entrypoint_memory")->is_int());
  CHECK(from_cluster.Find("entrypoint_memory")->as_int() == 1000);
  CHECK(*from_cluster.Find("entrypoint_resources") == Value(Value::Object{{"worker_node", 1.0}}));

  spec.entrypoint_num_cpus = 4;
  spec.entrypoint_num_gpus = 1;
  spec.entrypoint_memory = 2000;
  spec.entrypoint_resources = rg::core::ResourceMap{{"custom", 2}};
  Value from_job = Render(spec, cluster);
  CHECK(from_job.Find("entrypoint_num_cpus")->as_double() == 4.0);
  CHECK(from_job.Find("entrypoint_num_gpus")->as_double() == 1.0);
  CHECK(from_job.Find("entrypoint_memory")->as_int() == 2000);
  CHECK(*from_job.Find("entrypoint_resources") == Value(Value::Object{{"custom", 2.0}}));

  RayConfig bare;
  JobSpec plain = TrainingSpec(Workload::kPpo, "p");
  plain.mutable_trainer().code_path.reset();
  plain.mutable_trainer().train_file = "/t";
  plain.mutable_trainer().val_file = "/v";
  Value omitted = Render(plain, bare);
  for (const char* key : {"entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory",
                          "entrypoint_resources"}) {
    INFO(key);
    CHECK(omitted.Find(key) == nullptr);
  }
  CHECK(rg::core::ToCanonicalJson(omitted).find("null") == std::string::npos);
}

TEST_CASE("env vars: cluster first, then the job's, job wins per key") {
  RayConfig cluster = SampleCluster();
  JobSpec spec = TrainingSpec(Workload::kPpo, "p");
  spec.env_vars = {{"SHARED", "job"}, {"ONLY_JOB", "${shared_root}/j"}};
  Value body = Render(spec, cluster);
  CHECK(EnvVar(body, "SHARED") == "job");
  CHECK(EnvVar(body, "ONLY_JOB") == "/private/j");
  CHECK(EnvVar(body, "HF_HOME") == "/private/hf");
  CHECK(EnvVar(body, "HF_ENDPOINT") == "https://hf-mirror.example");
  CHECK(EnvVars(body).as_object().size() == 5);  // four above plus PYTHONPATH
}

TEST_CASE("runtime_env: the job's top-level keys win over the cluster's") {
  RayConfig cluster = SampleCluster();
  cluster.runtime_env["pip"] = Value::Array{"cluster-pkg"};
  cluster.runtime_env["working_dir"] = "s3://cluster/wd.zip";
  JobSpec spec = TrainingSpec(Workload::kPpo, "p");
  spec.runtime_env["pip"] = Value::Array{"job-pkg==1.0"};
  spec.runtime_env["config"] = Value::Object{{"setup_timeout_seconds", 600}};
  spec.runtime_env["excludes"] = Value::Array{"${shared_root}/big"};
  Value body = Render(spec, cluster);
  const Value& env = *body.Find("runtime_env");
  CHECK(*env.Find("pip") == Value(Value::Array{"job-pkg==1.0"}));
  CHECK(env.Find("working_dir")->as_string() == "s3://cluster/wd.zip");
  CHECK(*env.Find("config") == Value(Value::Object{{"setup_timeout_seconds", 600}}));
  CHECK(*env.Find("excludes") == Value(Value::Array{"/private/big"}));
  CHECK(EnvVar(body, "SHARED") == "cluster");
}

TEST_CASE("PYTHONPATH puts code_path first, then the user code path, then the inherited path") {
  struct Case {
    std::string label;
    std::optional<std::string> code_path;
    std::optional<std::string> shared_root;
    std::optional<std::string> user_code_path;
    std::optional<std::string> existing;
    std::string expected;
  };
  std::vector<Case> cases = {
      {"all defaults", "/c", "/private", std::nullopt, std::nullopt,
       "/c:/private/user/code:${PYTHONPATH}"},
      {"explicit user code path", "${shared_root}/c", "/private", "${shared_root}/mine",
       std::nullopt, "/private/c:/private/mine:${PYTHONPATH}"},
      {"no code_path", std::nullopt, "/private", std::nullopt, std::nullopt,
       "/private/user/code:${PYTHONPATH}"},
      {"no shared_root, no user code", "/c", std::nullopt, std::nullopt, std::nullopt,
       "/c:${PYTHONPATH}"},
      {"nothing at all", std::nullopt, std::nullopt, std::nullopt, std::nullopt, "${PYTHONPATH}"},
      {"existing PYTHONPATH takes the inherited place", "/c", "/private", std::nullopt,
       "/opt/lib:${PYTHONPATH}", "/c:/private/user/code:/opt/lib:${PYTHONPATH}"},
  };
  for (const auto& c : cases) {
    INFO(c.label);
    RayConfig cluster;
    cluster.shared_root = c.shared_root;
    cluster.user_code_path = c.user_code_path;
    if (c.existing) cluster.runtime_env["env_vars"] = Value::Object{{"PYTHONPATH", *c.existing}};
    JobSpec spec;
    spec.workload = Workload::kCustom;
    spec.name = "c";
    spec.entrypoint = "true";
    spec.mutable_trainer().code_path = c.code_path;
    CHECK(EnvVar(Render(spec, cluster), "PYTHONPATH") == c.expected);
  }
}

TEST_CASE("a job's PYTHONPATH env var is kept after code_path and the user code path") {
  RayConfig cluster = SampleCluster();
  cluster.runtime_env["env_vars"]["PYTHONPATH"] = "/cluster/lib";
  JobSpec spec = TrainingSpec(Workload::kPpo, "p");
  spec.env_vars = {{"PYTHONPATH", "/job/lib"}};
  CHECK(EnvVar(Render(spec, cluster), "PYTHONPATH") ==
        "/private/common/code/verl/snap1:/private/user/code:/job/lib");
}

TEST_CASE("metadata holds the ownership labels as strings") {
  JobSpec spec = TrainingSpec(Workload::kPpo, "ppo-qwen");
  spec.path = "jobs/ppo/qwen.yaml";
  RenderContext context;
  context.instance = "prod";
  context.attempt = 0;
  context.commit = "0123456789abcdef0123456789abcdef01234567";
  context.repo_url = "https://user:hunter2@git.example.com/team/runs.git";
  Value body = Render(spec, SampleCluster(), context);
  Value expected = Value::Object{
      {"gitops.managed-by", "prod"},
      {"gitops.name", "ppo-qwen"},
      {"gitops.spec-path", "jobs/ppo/qwen.yaml"},
      {"gitops.spec-hash", "abcdef0123"},
      {"gitops.attempt", "0"},
      {"gitops.commit", "0123456789abcdef0123456789abcdef01234567"},
      {"gitops.repo", "https://git.example.com/team/runs.git"},
  };
  CHECK(*body.Find("metadata") == expected);
  CHECK(body.Find("metadata")->Find("job_submission_id") == nullptr);
  CHECK(body.Find("metadata")->Find("job_name") == nullptr);
}

TEST_CASE("metadata leaves out an empty commit and repo and defaults the instance") {
  JobSpec spec = TrainingSpec(Workload::kPpo, "p");
  Value metadata = *Render(spec, SampleCluster()).Find("metadata");
  CHECK(metadata.Find("gitops.managed-by")->as_string() == "ray-gitops");
  CHECK(metadata.Find("gitops.commit") == nullptr);
  CHECK(metadata.Find("gitops.repo") == nullptr);
  CHECK(metadata.as_object().size() == 5);
  for (const auto& [key, value] : metadata.as_object()) {
    INFO(key);
    CHECK(value.is_string());
  }
}

TEST_CASE("a pinned spec renders with its pinned id") {
  JobSpec spec = TrainingSpec(Workload::kPpo, "p");
  spec.submission_id = "my-pinned-run";
  Value body = Render(spec, SampleCluster());
  CHECK(body.Find("submission_id")->as_string() == "my-pinned-run");
  CHECK(body.Find("metadata")->Find("gitops.spec-hash")->as_string() == "abcdef0123");
}

TEST_CASE("ShellQuote leaves safe words alone and single-quotes the rest") {
  struct Case {
    std::string in;
    std::string out;
  };
  std::vector<Case> cases = {
      {"abc", "abc"},
      {"a.b_c/d=e:f,g@h+i%j-k", "a.b_c/d=e:f,g@h+i%j-k"},
      {"", "''"},
      {"a b", "'a b'"},
      {"it's", "'it'\\''s'"},
      {"$(id)", "'$(id)'"},
      {"`id`", "'`id`'"},
      {"a;b", "'a;b'"},
      {"*", "'*'"},
      {"~", "'~'"},
      {"a\nb", "'a\nb'"},
      {"x=\"q\"", "'x=\"q\"'"},
      {"back\\slash", "'back\\slash'"},
      {"''", "''\\'''\\'''"},
  };
  for (const auto& c : cases) {
    INFO(c.in);
    CHECK(rg::core::ShellQuote(c.in) == c.out);
  }
}

TEST_CASE("HydraQuoteValue quotes values holding characters special to Hydra's grammar") {
  struct Case {
    std::string in;
    std::string out;
  };
  std::vector<Case> cases = {
      {"abc", "abc"},
      {"/data/gsm8k/train.parquet", "/data/gsm8k/train.parquet"},
      {"Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B"},
      {"hdfs://nn:8020/x", "hdfs://nn:8020/x"},
      {"/data/*.parquet", "/data/*.parquet"},
      {"$HOME+1%", "$HOME+1%"},
      {"", "\"\""},
      {"a b", "\"a b\""},
      {"a,b", "\"a,b\""},
      {"[1,2]", "\"[1,2]\""},
      {"{a: 1}", "\"{a: 1}\""},
      {"f(x)", "\"f(x)\""},
      {"k=v", "\"k=v\""},
      {"it's", "\"it's\""},
      {"\"q\"", "\"\\\"q\\\"\""},
      {"back\\slash", "\"back\\slash\""},
      {"trailing\\", "\"trailing\\\\\""},
      {"a\\\"b", "\"a\\\\\\\"b\""},
      {"two\\\\", "\"two\\\\\\\\\""},
      {"semi;colon", "\"semi;colon\""},
      {"user@host", "\"user@host\""},
      {"~/x", "\"~/x\""},
      {"tab\there", "\"tab\there\""},
      {"line1\nline2", "\"line1\nline2\""},
      {"caf\xc3\xa9", "\"caf\xc3\xa9\""},
  };
  for (const auto& c : cases) {
    INFO(c.in);
    CHECK(rg::core::HydraQuoteValue(c.in) == c.out);
  }
}

TEST_CASE("spec values are quoted for Hydra, then the whole override for the shell") {
  JobSpec spec;
  spec.workload = Workload::kPpo;
  spec.name = "q";
  spec.spec_hash = "0000000000";
  spec.mutable_trainer().train_file = "/data/my set/it's.parquet";
  spec.mutable_trainer().overrides = {"data.prompt_key=\"a b\""};
  CHECK(Entrypoint(spec, RayConfig{}) ==
        "python3 -m verl.trainer.main_ppo 'data.train_files=\"/data/my set/it'\\''s.parquet\"'"
        " trainer.experiment_name=q-0000000000 'data.prompt_key=\"a b\"'");
}

TEST_CASE("StripUrlCredentials removes passwords and tokens, keeps SSH user names") {
  struct Case {
    std::string in;
    std::string out;
  };
  std::vector<Case> cases = {
      {"https://user:pw@host/x.git", "https://host/x.git"},
      {"https://token@host/x", "https://host/x"},
      {"http://a:b@host:8080/x?y=1", "http://host:8080/x?y=1"},
      {"HTTPS://u:p@host", "HTTPS://host"},
      {"https://u:p@ss@host/x", "https://host/x"},
      {"https://host/path@v1", "https://host/path@v1"},
      {"https://host/x", "https://host/x"},
      {"ssh://git@host/x.git", "ssh://git@host/x.git"},
      {"ssh://git:secret@host/x.git", "ssh://host/x.git"},
      {"git+ssh://git@host/x", "git+ssh://git@host/x"},
      {"git@github.com:org/repo.git", "git@github.com:org/repo.git"},
      {"file:///srv/git/repo.git", "file:///srv/git/repo.git"},
      {"/srv/git/repo", "/srv/git/repo"},
      {"", ""},
  };
  for (const auto& c : cases) {
    INFO(c.in);
    CHECK(rg::core::StripUrlCredentials(c.in) == c.out);
  }
}

TEST_CASE("secret-looking env var names are recognised by word") {
  for (const char* name :
       {"HF_TOKEN", "hf_token", "GITHUB_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD", "MYSQL_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "AUTH", "basic-auth",
        "apiKey", "SSH_KEYS", "my.secret"}) {
    INFO(name);
    CHECK(rg::core::LooksLikeSecretName(name));
  }
  for (const char* name : {"HF_HOME", "PYTHONPATH", "MONKEY", "KEYBOARD", "AUTHOR", "TOKENIZER",
                           "NCCL_SOCKET_IFNAME", "HF_ENDPOINT", ""}) {
    INFO(name);
    CHECK_FALSE(rg::core::LooksLikeSecretName(name));
  }
}

TEST_CASE("RedactSecrets hides secret env var values and nothing else") {
  JobSpec spec = TrainingSpec(Workload::kPpo, "p");
  spec.env_vars = {{"HF_TOKEN", "hf_abc"}, {"WANDB_API_KEY", "k"}, {"MODE", "fast"}};
  Value body = Render(spec, SampleCluster());
  Value redacted = rg::core::RedactSecrets(body);
  CHECK(EnvVar(redacted, "HF_TOKEN") == "<redacted>");
  CHECK(EnvVar(redacted, "WANDB_API_KEY") == "<redacted>");
  CHECK(EnvVar(redacted, "MODE") == "fast");
  CHECK(EnvVar(redacted, "HF_HOME") == "/private/hf");
  CHECK(*redacted.Find("entrypoint") == *body.Find("entrypoint"));
  CHECK(*redacted.Find("metadata") == *body.Find("metadata"));
  CHECK(EnvVar(body, "HF_TOKEN") == "hf_abc");  // the original is untouched
  CHECK(rg::core::RedactSecrets(Value("x")) == Value("x"));
}

TEST_CASE("string fields that Hydra would read as numbers, bools or null stay strings") {
  struct Case {
    std::string value;
    std::string token;
  };
  std::vector<Case> cases = {
      {"10", "'data.train_files=\"10\"'"},       {"-1.5e3", "'data.train_files=\"-1.5e3\"'"},
      {"True", "'data.train_files=\"True\"'"},   {"null", "'data.train_files=\"null\"'"},
      {"-inf", "'data.train_files=\"-inf\"'"},   {"nan", "'data.train_files=\"nan\"'"},
      {"1_000", "'data.train_files=\"1_000\"'"}, {"v10", "data.train_files=v10"},
      {"nullable", "data.train_files=nullable"}, {"/10", "data.train_files=/10"},
  };
  for (const auto& c : cases) {
    INFO(c.value);
    JobSpec spec;
    spec.workload = Workload::kPpo;
    spec.name = "n";
    spec.spec_hash = "0000000000";
    spec.mutable_trainer().train_file = c.value;
    CHECK(Entrypoint(spec, RayConfig{}) ==
          "python3 -m verl.trainer.main_ppo " + c.token + " trainer.experiment_name=n-0000000000");
  }
  // Integer fields stay integers.
  JobSpec spec;
  spec.workload = Workload::kPpo;
  spec.name = "n";
  spec.spec_hash = "0000000000";
  spec.mutable_trainer().nnodes = 4;
  CHECK(Entrypoint(spec, RayConfig{}) ==
        "python3 -m verl.trainer.main_ppo trainer.nnodes=4 trainer.experiment_name=n-0000000000");
}
