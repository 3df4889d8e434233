#include "reconciler/spec/spec_loader.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/cron.h"
#include "reconciler/core/identity.h"
#include "tests/unit/spec/diagnostic_messages.h"

namespace rg::spec {
namespace {

std::vector<std::string> JobErrors(const std::string& text,
                                   const std::string& path = "jobs/t.yaml") {
  return Messages(LoadJobSpec(text, path).diagnostics);
}

std::vector<std::string> ClusterErrors(const std::string& text) {
  return Messages(LoadRayConfig(text, "cluster.yaml").diagnostics);
}

core::JobSpec LoadValidJob(const std::string& text, const std::string& path = "jobs/t.yaml") {
  Parsed<core::JobSpec> parsed = LoadJobSpec(text, path);
  INFO(text);
  REQUIRE(Messages(parsed.diagnostics) == std::vector<std::string>{});
  REQUIRE(parsed.ok());
  return *parsed.value;
}

struct ErrorCase {
  const char* text;
  std::vector<std::string> expected;
};

TEST_CASE("every JobSpec validation error names its field, what was written, line and column") {
  const std::vector<ErrorCase> cases = {
      {"workload: ppo\nnnodes: two\n",
       {"jobs/t.yaml:2:9: error: nnodes must be an integer >= 1 (got \"two\")"}},
      {"workload: ppo\nnnodes: 0\n",
       {"jobs/t.yaml:2:9: error: nnodes must be an integer >= 1 (got 0)"}},
      {"workload: ppo\nn_gpus_per_node: 1.5\n",
       {"jobs/t.yaml:2:18: error: n_gpus_per_node must be an integer >= 1 (got 1.5)"}},
      {"workload: ppo\ntotal_training_steps: \"10\"\n",
       {"jobs/t.yaml:2:23: error: total_training_steps must be an integer >= 1 (got \"10\")"}},
      {"workload: ppo\nsave_freq: -2\n",
       {"jobs/t.yaml:2:12: error: save_freq must be an integer >= -1 (got -2)"}},
      {"workload: ppo\ntest_freq: never\n",
       {"jobs/t.yaml:2:12: error: test_freq must be an integer >= -1 (got \"never\")"}},
      {"workload: ppo\noverrides: a=b\n",
       {"jobs/t.yaml:2:12: error: overrides must be a list of key=value strings (got \"a=b\")"}},
      {"workload: ppo\noverrides:\n  - a=b\n  - =b\n  - 5\n  - noequals\n",
       {"jobs/t.yaml:4:5: error: overrides[1] must be a key=value string (got \"=b\")",
        "jobs/t.yaml:5:5: error: overrides[2] must be a key=value string (got 5)",
        "jobs/t.yaml:6:5: error: overrides[3] must be a key=value string (got \"noequals\")"}},
      {"workload: grpo\nentrypoint: python3 x.py\n",
       {"jobs/t.yaml:2:1: error: entrypoint is only allowed with workload custom (workload grpo "
        "builds its own command)"}},
      {"workload: custom\n",
       {"jobs/t.yaml:1:1: error: missing required key \"entrypoint\" (workload custom needs it)"}},
      {"workload: custom\nentrypoint: echo\nmodel_id: m\ntrain_file: t\nsave_freq: 1\n",
       {"jobs/t.yaml:3:1: error: model_id is ignored by workload custom; remove it",
        "jobs/t.yaml:4:1: error: train_file is ignored by workload custom; remove it",
        "jobs/t.yaml:5:1: error: save_freq is ignored by workload custom; remove it"}},
      {"model_id: m\n", {"jobs/t.yaml:1:1: error: missing required key \"workload\""}},
      {"workload: train\n",
       {"jobs/t.yaml:1:11: error: workload must be one of ppo, grpo, sft, custom (got \"train\")"}},
      {"workload: [ppo]\n",
       {"jobs/t.yaml:1:11: error: workload must be one of ppo, grpo, sft, custom (got a list)"}},
      {"workload: ppo\nname: Foo_Bar\n",
       {"jobs/t.yaml:2:7: error: name must be 1 to 63 characters of [a-z0-9._-] starting and "
        "ending with a letter or digit (got \"Foo_Bar\")"}},
      {"workload: ppo\nsubmission_id: deadbeef\n",
       {"jobs/t.yaml:2:16: error: submission_id must be 1 to 100 characters of [a-z0-9._-] "
        "starting and ending with a letter or digit, and not 8 hex digits (got \"deadbeef\")"}},
      {"workload: ppo\nmodel_id: 12\ntrain_file: \"\"\nval_file:\ncode_path: {a: 1}\n",
       {"jobs/t.yaml:2:11: error: model_id must be a non-empty string (got 12)",
        "jobs/t.yaml:3:13: error: train_file must be a non-empty string (got \"\")",
        "jobs/t.yaml:4:1: error: val_file must be a non-empty string (got null)",
        "jobs/t.yaml:5:12: error: code_path must be a non-empty string (got a mapping)"}},
      {"workload: ppo\nruntime_env: [pip]\n",
       {"jobs/t.yaml:2:14: error: runtime_env must be a mapping (got a list)"}},
      {"workload: ppo\nruntime_env:\n  pip: [x]\n  env_vars: {A: b}\n",
       {"jobs/t.yaml:4:3: error: runtime_env.env_vars is not allowed in a JobSpec; use the "
        "top-level env_vars"}},
      {"workload: ppo\nenv_vars:\n  1BAD: x\n  OK_1: [a]\n  EMPTY:\n",
       {"jobs/t.yaml:3:3: error: env_vars key \"1BAD\" is not a valid environment variable name "
        "([A-Za-z_][A-Za-z0-9_]*)",
        "jobs/t.yaml:4:9: error: env_vars.OK_1 must be a string, number or bool (got a list)",
        "jobs/t.yaml:5:3: error: env_vars.EMPTY must be a string, number or bool (got null)"}},
      {"workload: ppo\nenv_vars: [A=b]\n",
       {"jobs/t.yaml:2:11: error: env_vars must be a mapping of variable names to values (got a "
        "list)"}},
      {"workload: ppo\nentrypoint_num_cpus: -1\nentrypoint_num_gpus: x\n",
       {"jobs/t.yaml:2:22: error: entrypoint_num_cpus must be a number >= 0 (got -1)",
        "jobs/t.yaml:3:22: error: entrypoint_num_gpus must be a number >= 0 (got \"x\")"}},
      {"workload: ppo\nentrypoint_memory: 1e9\n",
       {"jobs/t.yaml:2:20: error: entrypoint_memory must be an integer number of bytes >= 0 (got "
        "1e9)"}},
      {"workload: ppo\nentrypoint_memory: -5\n",
       {"jobs/t.yaml:2:20: error: entrypoint_memory must be an integer number of bytes >= 0 (got "
        "-5)"}},
      {"workload: ppo\nentrypoint_resources: 1\n",
       {"jobs/t.yaml:2:23: error: entrypoint_resources must be a mapping of resource names to "
        "numbers (got 1)"}},
      {"workload: ppo\nentrypoint_resources:\n  worker_node: -1\n  gpu_type: a100\n",
       {"jobs/t.yaml:3:16: error: entrypoint_resources.worker_node must be a number >= 0 (got -1)",
        "jobs/t.yaml:4:13: error: entrypoint_resources.gpu_type must be a number >= 0 (got "
        "\"a100\")"}},
      {"workload: ppo\nretries: 101\n",
       {"jobs/t.yaml:2:10: error: retries must be an integer from 0 to 100 (got 101)"}},
      {"workload: ppo\nretries: -1\n",
       {"jobs/t.yaml:2:10: error: retries must be an integer from 0 to 100 (got -1)"}},
      {"workload: ppo\ninfra_retries: -1\n",
       {"jobs/t.yaml:2:16: error: infra_retries must be an integer from 0 to 100 (got -1)"}},
      {"workload: ppo\ninfra_retries: lots\n",
       {"jobs/t.yaml:2:16: error: infra_retries must be an integer from 0 to 100 (got \"lots\")"}},
      {"workload: ppo\nsuspend: yes\n",
       {"jobs/t.yaml:2:10: error: suspend must be true or false (got \"yes\")"}},
      {"workload: ppo\nsuspend: \"true\"\n",
       {"jobs/t.yaml:2:10: error: suspend must be true or false (got \"true\")"}},
      {"workload: ppo\non_remove: Stop\n",
       {"jobs/t.yaml:2:12: error: on_remove must be stop or keep (got \"Stop\")"}},
      {"workload: ppo\ndeadline: 300\n",
       {"jobs/t.yaml:2:11: error: deadline must be a duration such as 90m, 72h or 1h30m (units "
        "d, h, m, s, ms) (got 300)"}},
      {"workload: ppo\ndeadline: 5 minutes\n",
       {"jobs/t.yaml:2:11: error: deadline must be a duration such as 90m, 72h or 1h30m (units "
        "d, h, m, s, ms) (got \"5 minutes\")"}},
      {"workload: ppo\ndeadline: 0s\n",
       {"jobs/t.yaml:2:11: error: deadline must be a duration such as 90m, 72h or 1h30m (units "
        "d, h, m, s, ms) (got \"0s\")"}},
      {"workload: ppo\ndeadline: 30m1h\n",
       {"jobs/t.yaml:2:11: error: deadline must be a duration such as 90m, 72h or 1h30m (units "
        "d, h, m, s, ms) (got \"30m1h\")"}},
      {"workload: ppo\nschedule: \"30 25 * * *\"\n",
       {"jobs/t.yaml:2:15: error: schedule: hour: \"25\" at column 4 is out of range (allowed "
        "0-23)"}},
      {"workload: ppo\nschedule: '0 0 * * MON-XYZ'\n",
       {"jobs/t.yaml:2:24: error: schedule: day-of-week: \"XYZ\" at column 13 is not a number or a "
        "day name (allowed 0-7 or SUN-SAT)"}},
      {"workload: ppo\nschedule:   0 0 31 2 *\n",
       {"jobs/t.yaml:2:17: error: schedule: day-of-month: \"31\" at column 5 never falls in month "
        "\"2\", so the schedule would never fire"}},
      {"workload: ppo\nschedule: \"* * * *\"\n",
       {"jobs/t.yaml:2:19: error: schedule: expected 5 fields (minute hour day-of-month month "
        "day-of-week), found 4 (the expression ends at column 8)"}},
      {"workload: ppo\nschedule: 5\n",
       {"jobs/t.yaml:2:11: error: schedule must be a cron expression such as \"30 2 * * *\" "
        "(quote it: * starts an alias) (got 5)"}},
      {"workload: ppo\ntimezone: Europe/Berlin\nconcurrency: allow\nstarting_deadline: 5m\n",
       {"jobs/t.yaml:2:1: error: timezone applies to a scheduled job only: it needs schedule",
        "jobs/t.yaml:3:1: error: concurrency applies to a scheduled job only: it needs schedule",
        "jobs/t.yaml:4:1: error: starting_deadline applies to a scheduled job only: it needs "
        "schedule"}},
      {"workload: ppo\nschedule: \"@daily\"\nconcurrency: never\n",
       {"jobs/t.yaml:3:14: error: concurrency must be forbid, replace or allow (got \"never\")"}},
      {"workload: ppo\nschedule: \"@daily\"\nstarting_deadline: 600\n",
       {"jobs/t.yaml:3:20: error: starting_deadline must be a duration such as 10m, 1h or 1h30m "
        "(units d, h, m, s, ms) (got 600)"}},
      {"workload: ppo\nschedule: \"@daily\"\ntimezone: \"\"\n",
       {"jobs/t.yaml:3:11: error: timezone must be a non-empty string (got \"\")"}},
      {"workload: ppo\nsubmission_id: nightly\nschedule: \"@daily\"\n",
       {"jobs/t.yaml:2:1: error: submission_id cannot be pinned on a scheduled job: every slot "
        "has its own id (<name>-<spec_hash>-<YYYYMMDDHHMM>)"}},
      {"workload: ppo\nrerun:\n",
       {"jobs/t.yaml:2:1: error: rerun must be a non-empty token (a string or a number) (got "
        "null)"}},
      {"workload: ppo\nrerun: [1]\n",
       {"jobs/t.yaml:2:8: error: rerun must be a non-empty token (a string or a number) (got a "
        "list)"}},
      {"workload: ppo\nannotations: [a]\n",
       {"jobs/t.yaml:2:14: error: annotations must be a mapping (got a list)"}},
      {"workload: ppo\nannotations:\n  owner: {name: me}\n",
       {"jobs/t.yaml:3:10: error: annotations.owner must be a string, number or bool (got a "
        "mapping)"}},
      {"workload: ppo\nnnode: 1\nzzzzzz: 2\n",
       {"jobs/t.yaml:2:1: error: unknown key \"nnode\" (did you mean \"nnodes\"?)",
        "jobs/t.yaml:3:1: error: unknown key \"zzzzzz\""}},
      {"workload: ppo\nnnodes: 1\nnnodes: 2\n",
       {"jobs/t.yaml:3:1: error: duplicate key \"nnodes\" (first written at line 2)"}},
      {"workload: ppo\nenv_vars:\n  A: 1\n  A: 2\n",
       {"jobs/t.yaml:4:3: error: duplicate key \"A\" (first written at line 3)"}},
      {"workload: ppo\n1: x\n", {"jobs/t.yaml:2:1: error: keys must be strings (got 1)"}},
      {"workload: ppo\nmodel_id: !!binary aGk=\n",
       {"jobs/t.yaml:2:11: error: unsupported tag \"tag:yaml.org,2002:binary\" (only !!str is)"}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    DYNAMIC_SECTION("case " << i << ": " << cases[i].text) {
      CHECK(JobErrors(cases[i].text) == cases[i].expected);
      CHECK_FALSE(LoadJobSpec(cases[i].text, "jobs/t.yaml").ok());
    }
  }
}

TEST_CASE("a name derived from the path that is not a valid name asks for an explicit name") {
  CHECK(JobErrors("workload: custom\nentrypoint: echo\n", "jobs/Has Space.yaml") ==
        std::vector<std::string>{"jobs/Has Space.yaml:1:1: error: the name derived from the path "
                                 "(\"has space\") is not a valid job name; set name: explicitly"});
  const core::JobSpec spec =
      LoadValidJob("workload: custom\nentrypoint: echo\nname: fine\n", "jobs/Has Space.yaml");
  CHECK(spec.name == "fine");
}

TEST_CASE("every cluster.yaml validation error names its field, line and column") {
  const std::vector<ErrorCase> cases = {
      {"shared_root: /private\n", {"cluster.yaml:1:1: error: missing required key \"address\""}},
      {"address: 127.0.0.1:8265\n",
       {"cluster.yaml:1:10: error: address must be an http:// or https:// URL (got "
        "\"127.0.0.1:8265\")"}},
      {"address: http://\n",
       {"cluster.yaml:1:10: error: address must be an http:// or https:// URL (got \"http://\")"}},
      // The password never shows in the error.
      {"address: http://ray:s3cret-pw@h:8265/x\n",
       {"cluster.yaml:1:10: error: address must not hold credentials (user:password@): everyone "
        "who can read the repository would read them; give the Ray token with --ray-token-file "
        "and a proxy's credentials with --ray-header (got \"http://h:8265/x\")"}},
      {"address: https://tok3n@h\n",
       {"cluster.yaml:1:10: error: address must not hold credentials (user:password@): everyone "
        "who can read the repository would read them; give the Ray token with --ray-token-file "
        "and a proxy's credentials with --ray-header (got \"https://h\")"}},
      {"address: http://h:8265/?next=x\n",
       {"cluster.yaml:1:10: error: address must have no query or fragment (got "
        "\"http://h:8265/?next=x\")"}},
      {"adress: http://h:1\naddress: http://h:1\n",
       {"cluster.yaml:1:1: error: unknown key \"adress\" (did you mean \"address\"?)"}},
      {"address: http://h:1\nshared_root: private\n",
       {"cluster.yaml:2:14: error: shared_root must be an absolute path (got \"private\")"}},
      {"address: http://h:1\nentrypoint_memory: 1.5e9\n",
       {"cluster.yaml:2:20: error: entrypoint_memory must be an integer number of bytes >= 0 (got "
        "1.5e9)"}},
      {"address: http://h:1\nentrypoint_num_cpus: -0.5\n",
       {"cluster.yaml:2:22: error: entrypoint_num_cpus must be a number >= 0 (got -0.5)"}},
      {"address: http://h:1\nentrypoint_resources: {worker_node: x}\n",
       {"cluster.yaml:2:37: error: entrypoint_resources.worker_node must be a number >= 0 (got "
        "\"x\")"}},
      {"address: http://h:1\nruntime_env: x\n",
       {"cluster.yaml:2:14: error: runtime_env must be a mapping (got \"x\")"}},
      {"address: http://h:1\nruntime_env:\n  env_vars:\n    bad-name: 1\n    LIST: [1]\n",
       {"cluster.yaml:4:5: error: runtime_env.env_vars key \"bad-name\" is not a valid environment "
        "variable name ([A-Za-z_][A-Za-z0-9_]*)",
        "cluster.yaml:5:11: error: runtime_env.env_vars.LIST must be a string, number or bool "
        "(got a list)"}},
      {"address: http://h:1\nuser_code_path: \"\"\n",
       {"cluster.yaml:2:17: error: user_code_path must be a non-empty string (got \"\")"}},
      {"address: http://h:1\nworkload: ppo\n",
       {"cluster.yaml:2:1: error: unknown key \"workload\""}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    DYNAMIC_SECTION("case " << i << ": " << cases[i].text) {
      CHECK(ClusterErrors(cases[i].text) == cases[i].expected);
    }
  }
}

TEST_CASE("a valid cluster.yaml fills every field, env var values as the text written") {
  Parsed<core::RayConfig> parsed = LoadRayConfig(
      "address: https://ray.example:8265\n"
      "shared_root: /private\n"
      "entrypoint_num_cpus: 1\n"
      "entrypoint_num_gpus: 0.5\n"
      "entrypoint_memory: 2000000000\n"
      "entrypoint_resources: {worker_node: 1}\n"
      "user_code_path: /private/user/code\n"
      "runtime_env:\n"
      "  pip: [torch]\n"
      "  env_vars:\n"
      "    HF_HUB_OFFLINE: 1\n"
      "    DEBUG: true\n"
      "    RATIO: 1.50\n"
      "    HOME_DIR: ${shared_root}/home\n",
      "cluster.yaml");
  REQUIRE(Messages(parsed.diagnostics) == std::vector<std::string>{});
  const core::RayConfig& config = *parsed.value;
  CHECK(config.address == "https://ray.example:8265");
  CHECK(config.shared_root == "/private");
  CHECK(config.entrypoint_num_cpus == 1.0);
  CHECK(config.entrypoint_num_gpus == 0.5);
  CHECK(config.entrypoint_memory == 2000000000);
  CHECK(config.entrypoint_resources == core::ResourceMap{{"worker_node", 1.0}});
  CHECK(config.user_code_path == "/private/user/code");
  CHECK(config.EnvVars() == core::StringMap{{"DEBUG", "true"},
                                            {"HF_HUB_OFFLINE", "1"},
                                            {"HOME_DIR", "${shared_root}/home"},
                                            {"RATIO", "1.50"}});
  CHECK(*config.runtime_env.Find("pip") == core::Value(core::Value::Array{"torch"}));
  CHECK(config.positions.at("runtime_env").line == 8);
  CHECK(config.positions.at("runtime_env").column == 1);
}

TEST_CASE("cluster.yaml's name, the cluster's identity in the ledger, is kept as written") {
  for (const std::string name : {"prod", "prod-a100 (east)", "raycluster.ray.svc:8265"}) {
    Parsed<core::RayConfig> parsed =
        LoadRayConfig("name: \"" + name + "\"\naddress: http://h:1\n", "cluster.yaml");
    REQUIRE(Messages(parsed.diagnostics) == std::vector<std::string>{});
    CHECK(parsed.value->name == name);
  }
  CHECK_FALSE(LoadRayConfig("address: http://h:1\n", "cluster.yaml").value->name.has_value());

  const std::string must =
      "name must be 1 to 253 characters without control characters or edge spaces";
  CHECK(ClusterErrors("name: \"\"\naddress: http://h:1\n") ==
        std::vector<std::string>{"cluster.yaml:1:7: error: " + must + " (got \"\")"});
  CHECK(ClusterErrors("name: 3\naddress: http://h:1\n").size() == 1);
  CHECK(ClusterErrors("name: [a]\naddress: http://h:1\n").size() == 1);
  CHECK(ClusterErrors("name: \"a\\nb\"\naddress: http://h:1\n").size() == 1);
  CHECK(ClusterErrors("name: \"a\\tb\"\naddress: http://h:1\n").size() == 1);
  CHECK(ClusterErrors("name: \" prod\"\naddress: http://h:1\n").size() == 1);
  CHECK(ClusterErrors("name: " + std::string(254, 'x') + "\naddress: http://h:1\n").size() == 1);
  CHECK(ClusterErrors("name: " + std::string(253, 'x') + "\naddress: http://h:1\n").empty());
}

TEST_CASE("a valid JobSpec fills every field and where each was written") {
  const core::JobSpec spec = LoadValidJob(
      "# a comment\n"
      "workload: ppo\n"
      "name: qwen-ppo\n"
      "submission_id: qwen-ppo-pinned\n"
      "code_path: /code\n"
      "model_id: Qwen/Qwen2.5-0.5B\n"
      "train_file: /d/train.parquet\n"
      "val_file: /d/val.parquet\n"
      "nnodes: 2\n"
      "n_gpus_per_node: 4\n"
      "total_training_steps: 100\n"
      "save_freq: -1\n"
      "test_freq: 10\n"
      "overrides: [trainer.logger=console, 'a.b=c d']\n"
      "runtime_env: {pip: [x]}\n"
      "env_vars: {HF_HUB_OFFLINE: 1}\n"
      "entrypoint_num_cpus: 2\n"
      "entrypoint_num_gpus: 0\n"
      "entrypoint_memory: 1000\n"
      "entrypoint_resources: {worker_node: 0.5}\n"
      "retries: 3\n"
      "suspend: true\n"
      "on_remove: keep\n"
      "annotations: {owner: me, ticket: 42}\n");
  CHECK(spec.workload == core::Workload::kPpo);
  CHECK(spec.name == "qwen-ppo");
  CHECK(spec.submission_id == "qwen-ppo-pinned");
  CHECK(spec.trainer().code_path == "/code");
  CHECK(spec.trainer().model_id == "Qwen/Qwen2.5-0.5B");
  CHECK(spec.trainer().train_file == "/d/train.parquet");
  CHECK(spec.trainer().val_file == "/d/val.parquet");
  CHECK(spec.trainer().nnodes == 2);
  CHECK(spec.trainer().n_gpus_per_node == 4);
  CHECK(spec.trainer().total_training_steps == 100);
  CHECK(spec.trainer().save_freq == -1);
  CHECK(spec.trainer().test_freq == 10);
  CHECK(spec.trainer().overrides == std::vector<std::string>{"trainer.logger=console", "a.b=c d"});
  CHECK(spec.runtime_env == core::Value(core::Value::Object{{"pip", core::Value::Array{"x"}}}));
  CHECK(spec.env_vars == core::StringMap{{"HF_HUB_OFFLINE", "1"}});
  CHECK(spec.entrypoint_num_cpus == 2.0);
  CHECK(spec.entrypoint_num_gpus == 0.0);
  CHECK(spec.entrypoint_memory == 1000);
  CHECK(spec.entrypoint_resources == core::ResourceMap{{"worker_node", 0.5}});
  CHECK(spec.retries == 3);
  CHECK(spec.suspend);
  CHECK(spec.on_remove == core::OnRemove::kKeep);
  CHECK(spec.annotations == core::StringMap{{"owner", "me"}, {"ticket", "42"}});
  CHECK(spec.positions.at("workload").line == 2);
  CHECK(spec.positions.at("annotations").line == 24);
  CHECK(spec.spec_hash == core::ComputeSpecHash(spec.document));
  CHECK(spec.spec_hash.size() == 10);
}

TEST_CASE("the name defaults to the path under the jobs folder") {
  const core::JobSpec spec =
      LoadValidJob("workload: custom\nentrypoint: echo\n", "jobs/Smoke/Hello.yml");
  CHECK(spec.name == "smoke-hello");
  CHECK(spec.path == "jobs/Smoke/Hello.yml");
  CHECK(spec.workload == core::Workload::kCustom);
  CHECK(spec.entrypoint == "echo");
  CHECK(spec.retries == 0);
  CHECK_FALSE(spec.suspend);
  CHECK(spec.on_remove == core::OnRemove::kStop);
  CHECK(spec.trainer_fields.empty());  // no box for fields a custom job leaves out
}

TEST_CASE("the document holds YAML scalars resolved by the core schema") {
  const core::JobSpec spec = LoadValidJob(
      "workload: custom\n"
      "entrypoint: echo\n"
      "runtime_env:\n"
      "  int: 42\n"
      "  negative: -7\n"
      "  hex: 0x1F\n"
      "  octal: 0o17\n"
      "  float: 1.5\n"
      "  exponent: 1e3\n"
      "  huge: 123456789012345678901234567890\n"
      "  yes_is_a_string: yes\n"
      "  on_is_a_string: on\n"
      "  true_bool: True\n"
      "  false_bool: false\n"
      "  tilde: ~\n"
      "  empty:\n"
      "  null_word: null\n"
      "  quoted_int: \"1\"\n"
      "  single_quoted_bool: 'true'\n"
      "  tagged: !!str 5\n"
      "  infinity: .inf\n"
      "  block: |\n"
      "    two\n"
      "    lines\n"
      "  list: [1, a, 2.5]\n");
  const core::Value& env = *spec.document.Find("runtime_env");
  CHECK(*env.Find("int") == core::Value(42));
  CHECK(*env.Find("negative") == core::Value(-7));
  CHECK(*env.Find("hex") == core::Value(31));
  CHECK(*env.Find("octal") == core::Value(15));
  CHECK(*env.Find("float") == core::Value(1.5));
  CHECK(*env.Find("exponent") == core::Value(1000.0));
  CHECK(env.Find("huge")->is_double());
  CHECK(*env.Find("yes_is_a_string") == core::Value("yes"));
  CHECK(*env.Find("on_is_a_string") == core::Value("on"));
  CHECK(*env.Find("true_bool") == core::Value(true));
  CHECK(*env.Find("false_bool") == core::Value(false));
  CHECK(env.Find("tilde")->is_null());
  CHECK(env.Find("empty")->is_null());
  CHECK(env.Find("null_word")->is_null());
  CHECK(*env.Find("quoted_int") == core::Value("1"));
  CHECK(*env.Find("single_quoted_bool") == core::Value("true"));
  CHECK(*env.Find("tagged") == core::Value("5"));
  CHECK(*env.Find("infinity") == core::Value(".inf"));
  CHECK(*env.Find("block") == core::Value("two\nlines\n"));
  CHECK(*env.Find("list") == core::Value(core::Value::Array{1, "a", 2.5}));
  CHECK(*spec.document.Find("workload") == core::Value("custom"));
}

TEST_CASE("the spec hash ignores formatting, key order, comments and policy fields") {
  const std::string base =
      "workload: ppo\nmodel_id: m\nnnodes: 2\noverrides: [a=1, b=2]\nenv_vars: {X: 1}\n";
  const std::string hash = LoadValidJob(base).spec_hash;

  CHECK(LoadValidJob("# comment\nnnodes:   2   # two nodes\nmodel_id: 'm'\nworkload: \"ppo\"\n"
                     "env_vars:\n  X: \"1\"\noverrides:\n  - a=1\n  - b=2\n")
            .spec_hash == hash);
  CHECK(LoadValidJob(base + "retries: 5\nsuspend: true\non_remove: keep\nannotations: {a: b}\n")
            .spec_hash == hash);
  // A deadline is policy: editing it never restarts a run. A rerun token is the restart.
  const core::JobSpec bounded = LoadValidJob(base + "deadline: 1h30m\n");
  CHECK(bounded.spec_hash == hash);
  CHECK(bounded.lifecycle().deadline_ms == int64_t{5'400'000});
  CHECK_FALSE(LoadValidJob(base).lifecycle().deadline_ms);
  const std::string rerun = LoadValidJob(base + "rerun: \"2026-11-28\"\n").spec_hash;
  CHECK(rerun != hash);
  CHECK(LoadValidJob(base + "rerun: 2026-11-28\n").spec_hash == rerun);
  CHECK(LoadValidJob(base + "rerun: 2\n").spec_hash != rerun);

  CHECK(LoadValidJob("workload: ppo\nmodel_id: m2\nnnodes: 2\noverrides: [a=1, b=2]\n"
                     "env_vars: {X: 1}\n")
            .spec_hash != hash);
  CHECK(LoadValidJob("workload: ppo\nmodel_id: m\nnnodes: 2\noverrides: [b=2, a=1]\n"
                     "env_vars: {X: 1}\n")
            .spec_hash != hash);
  // name is the id's first part, not part of the hash; the earlier rule's hash is kept.
  const core::JobSpec named = LoadValidJob(base + "name: other\n");
  CHECK(named.spec_hash == hash);
  REQUIRE(named.legacy_spec_hashes.size() == 1);
  CHECK(named.legacy_spec_hashes.front() != hash);
  CHECK(LoadValidJob(base).legacy_spec_hashes.empty());
  CHECK(LoadValidJob("workload: ppo\nmodel_id: m\nnnodes: 2\noverrides: [a=1, b=2]\n"
                     "env_vars: {X: 2}\n")
            .spec_hash != hash);
}

TEST_CASE("schedule fields are read into the lifecycle box, with their defaults") {
  const std::string base = "workload: ppo\nmodel_id: m\n";
  CHECK_FALSE(LoadValidJob(base).lifecycle().schedule.has_value());
  const core::JobSpec daily = LoadValidJob(base + "schedule: \"30 2 * * *\"\n");
  REQUIRE(daily.lifecycle().schedule.has_value());
  const core::ScheduleFields& s = *daily.lifecycle().schedule;
  CHECK(s.cron_text == "30 2 * * *");
  CHECK(s.cron == *core::ParseCron("30 2 * * *"));
  CHECK(s.timezone == "UTC");
  CHECK(s.timezone_pos == core::SourcePos{3, 11});  // the schedule's, without a timezone
  CHECK(s.concurrency == core::Concurrency::kForbid);
  CHECK(s.starting_deadline_ms == core::kDefaultStartingDeadlineMs);
  CHECK(s.zone == nullptr);  // looked up after loading

  // Any order; every one of them is policy: the hash never moves.
  const core::JobSpec all = LoadValidJob(base +
                                         "concurrency: replace\ntimezone: Europe/Berlin\n"
                                         "starting_deadline: 10m\nschedule: '*/5 * * * *'\n");
  REQUIRE(all.lifecycle().schedule.has_value());
  CHECK(all.lifecycle().schedule->timezone == "Europe/Berlin");
  CHECK(all.lifecycle().schedule->timezone_pos == core::SourcePos{4, 11});
  CHECK(all.lifecycle().schedule->concurrency == core::Concurrency::kReplace);
  CHECK(all.lifecycle().schedule->starting_deadline_ms == 600'000);
  CHECK(all.spec_hash == LoadValidJob(base).spec_hash);
  CHECK(daily.spec_hash == all.spec_hash);
}

TEST_CASE("a spec with errors reports all of them, in file order, and no value") {
  Parsed<core::JobSpec> parsed =
      LoadJobSpec("workload: ppo\nnnodes: 0\nsuspend: 1\nbogus: 1\n", "jobs/t.yaml");
  CHECK_FALSE(parsed.ok());
  CHECK(Messages(parsed.diagnostics) ==
        std::vector<std::string>{"jobs/t.yaml:2:9: error: nnodes must be an integer >= 1 (got 0)",
                                 "jobs/t.yaml:3:10: error: suspend must be true or false (got 1)",
                                 "jobs/t.yaml:4:1: error: unknown key \"bogus\""});
}

// Hostile input: each must end quickly with exactly one clear diagnostic.
struct HostileCase {
  const char* what;
  std::string text;
  std::string expected;
};

std::string Repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string AliasBomb() {
  std::string text = "workload: custom\nentrypoint: echo\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 12; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  return text;
}

std::string DeepBlockMapping(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  return text;
}

TEST_CASE("hostile input ends quickly with a diagnostic, never a crash or a hang") {
  const std::vector<HostileCase> cases = {
      {"over the size limit",
       "workload: custom\nentrypoint: " + std::string(kMaxSpecFileBytes, 'x'),
       "jobs/t.yaml: error: file is too large (over 1048576 bytes)"},
      {"alias bomb", AliasBomb(),
       "jobs/t.yaml:3:10: error: document too large after alias expansion (more than 100000 "
       "nodes)"},
      {"deep flow nesting", "a: " + Repeat("[", 100000) + Repeat("]", 100000),
       "jobs/t.yaml:1:502: error: the document is nested too deeply"},
      {"deep block nesting", DeepBlockMapping(600),
       "jobs/t.yaml:499:499: error: the document is nested too deeply"},
      {"invalid UTF-8", "workload: ppo\nmodel_id: ab\xff\n",
       "jobs/t.yaml:2:13: error: invalid UTF-8 (byte 0xFF)"},
      {"overlong UTF-8", "workload: \xc0\xaf\n",
       "jobs/t.yaml:1:11: error: invalid UTF-8 (byte 0xC0)"},
      {"UTF-16 surrogate in UTF-8", "a: \xed\xa0\x80\n",
       "jobs/t.yaml:1:4: error: invalid UTF-8 (byte 0xED)"},
      {"truncated UTF-8", "a: \xe2\x82", "jobs/t.yaml:1:4: error: invalid UTF-8 (byte 0xE2)"},
      {"a raw NUL byte", std::string("workload: ppo\nmodel_id: a\0b\n", 28),
       "jobs/t.yaml:2:12: error: character U+0000 is not allowed in YAML"},
      {"a C0 control character", "workload: \x01ppo\n",
       "jobs/t.yaml:1:11: error: character U+0001 is not allowed in YAML"},
      {"DEL", "workload: ppo\x7f\n",
       "jobs/t.yaml:1:14: error: character U+007F is not allowed in YAML"},
      {"a C1 control character", "workload: \xc2\x80\n",
       "jobs/t.yaml:1:11: error: character U+0080 is not allowed in YAML"},
      {"the noncharacter U+FFFE", "workload: \xef\xbf\xbe\n",
       "jobs/t.yaml:1:11: error: character U+FFFE is not allowed in YAML"},
      {"a NUL made by an escape", "workload: custom\nentrypoint: \"echo\\0hi\"\n",
       "jobs/t.yaml:2:13: error: a string must not contain a NUL character"},
      {"two documents", "workload: ppo\n---\nworkload: sft\n",
       "jobs/t.yaml:3:1: error: a file must hold one YAML document (found 2)"},
      {"three documents", "workload: ppo\n---\nworkload: sft\n---\nworkload: grpo\n",
       "jobs/t.yaml:3:1: error: a file must hold one YAML document (found 3)"},
      // yaml-cpp 0.7's LoadAll loops for ever on it (yaml-cpp issue 1040); libfyaml accepts it.
      {"a tag holding a comma", "!a,b\n",
       "jobs/t.yaml:1:3: error: cannot read the YAML from here on"},
      {"empty file", "", "jobs/t.yaml: error: the file is empty (expected a mapping of fields)"},
      {"only comments", "# nothing\n",
       "jobs/t.yaml: error: the file is empty (expected a mapping of fields)"},
      {"an empty document", "---\n",
       "jobs/t.yaml:2:1: error: the document is empty (expected a mapping of fields)"},
      {"a list", "- a\n- b\n",
       "jobs/t.yaml:1:1: error: the document must be a mapping of fields (got a list)"},
      {"a scalar", "hello\n",
       "jobs/t.yaml:1:1: error: the document must be a mapping of fields (got \"hello\")"},
      {"unclosed flow sequence", "workload: [ppo\nnnodes: 1\n",
       "jobs/t.yaml:3:1: error: flow sequence without a closing bracket"},
      {"bad indentation", "workload: ppo\n  nnodes: 1\n",
       "jobs/t.yaml:1:11: error: invalid multiline plain key"},
      {"complex key", "workload: ppo\n? {a: 1}\n: x\n",
       "jobs/t.yaml:2:3: error: keys must be strings (got a mapping)"},
  };
  for (const auto& hostile : cases) {
    DYNAMIC_SECTION(hostile.what) {
      // Rejected, not expanded: an alias bomb that were expanded would hit ctest's timeout
      // (no wall-clock bound in the test itself: it would flake on a loaded machine).
      Parsed<core::JobSpec> parsed = LoadJobSpec(hostile.text, "jobs/t.yaml");
      CHECK(Messages(parsed.diagnostics) == std::vector<std::string>{hostile.expected});
      CHECK_FALSE(parsed.ok());
    }
  }
}

TEST_CASE("infra_retries is 3 unless the spec sets it, and never part of the spec hash") {
  const core::JobSpec unset = LoadValidJob("workload: custom\nentrypoint: \"true\"\n");
  CHECK(unset.infra_retries == core::kDefaultInfraRetries);
  CHECK(core::kDefaultInfraRetries == 3);
  const core::JobSpec set =
      LoadValidJob("workload: custom\nentrypoint: \"true\"\ninfra_retries: 0\n");
  CHECK(set.infra_retries == 0);
  CHECK(set.spec_hash == unset.spec_hash);
}

TEST_CASE("CRLF line endings and tabs are read like any other text") {
  const core::JobSpec spec =
      LoadValidJob("workload: custom\r\nentrypoint: \"echo\tone\"\r\nretries: 2\r\n");
  CHECK(spec.entrypoint == "echo\tone");
  CHECK(spec.retries == 2);
  CHECK(spec.positions.at("retries").line == 3);
}

TEST_CASE("a file exactly at the size limit is parsed") {
  std::string text = "workload: custom\nentrypoint: echo\n# ";
  text += std::string(kMaxSpecFileBytes - text.size() - 1, 'x') + "\n";
  REQUIRE(text.size() == kMaxSpecFileBytes);
  CHECK(LoadJobSpec(text, "jobs/t.yaml").ok());
}

TEST_CASE("valid UTF-8 of every length is accepted, a byte order mark included") {
  const core::JobSpec spec = LoadValidJob(
      "\xef\xbb\xbfworkload: custom\nentrypoint: echo caf\xc3\xa9 \xe2\x82\xac "
      "\xf0\x9f\x9a\x80\n");
  CHECK(spec.entrypoint == "echo caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80");
}

}  // namespace
}  // namespace rg::spec
