#include "reconciler/core/identity.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

using rg::core::ComputeSpecHash;
using rg::core::JobSpec;
using rg::core::Value;

namespace {

Value SampleDocument() {
  Value doc = Value::Object{};
  doc["workload"] = "ppo";
  doc["name"] = "ppo-qwen";
  doc["code_path"] = "${shared_root}/common/code/verl/a";
  doc["model_id"] = "Qwen/Qwen2.5-0.5B";
  doc["train_file"] = "/data/train.parquet";
  doc["val_file"] = "/data/test.parquet";
  doc["nnodes"] = 1;
  doc["n_gpus_per_node"] = 2;
  doc["total_training_steps"] = 10;
  doc["save_freq"] = 5;
  doc["test_freq"] = 5;
  doc["overrides"] = Value::Array{"a.b=1"};
  doc["runtime_env"] = Value::Object{{"pip", Value::Array{"x"}}};
  doc["env_vars"] = Value::Object{{"K", "v"}};
  doc["entrypoint_num_cpus"] = 1.5;
  doc["entrypoint_num_gpus"] = 0.5;
  doc["entrypoint_memory"] = int64_t{1000000000};
  doc["entrypoint_resources"] = Value::Object{{"worker_node", 1}};
  doc["submission_id"] = "pinned-id";
  doc["retries"] = 2;
  doc["suspend"] = false;
  doc["on_remove"] = "stop";
  doc["annotations"] = Value::Object{{"owner", "me"}};
  return doc;
}

JobSpec SpecNamed(std::string name, std::string hash) {
  JobSpec spec;
  spec.name = std::move(name);
  spec.spec_hash = std::move(hash);
  return spec;
}

}  // namespace

TEST_CASE("spec hash is the first 10 hex digits of SHA-256 over the canonical JSON") {
  Value doc = Value::Object{};
  doc["workload"] = "ppo";
  doc["model_id"] = "m";
  doc["retries"] = 3;
  // sha256 of the text {"model_id":"m","workload":"ppo"}, computed independently.
  CHECK(ComputeSpecHash(doc) == "613ada0887");
  CHECK(ComputeSpecHash(doc) ==
        rg::core::Sha256Hex(R"({"model_id":"m","workload":"ppo"})").substr(0, 10));
}

TEST_CASE("spec hash does not depend on the order keys were written in") {
  Value a = Value::Object{};
  a["workload"] = "sft";
  a["nnodes"] = 2;
  a["env_vars"] = Value::Object{{"B", "2"}, {"A", "1"}};
  Value b = Value::Object{};
  b["env_vars"] = Value::Object{{"A", "1"}, {"B", "2"}};
  b["nnodes"] = 2;
  b["workload"] = "sft";
  CHECK(ComputeSpecHash(a) == ComputeSpecHash(b));
}

TEST_CASE("spec hash ignores the policy fields") {
  Value base = SampleDocument();
  std::string hash = ComputeSpecHash(base);
  std::vector<std::pair<std::string, Value>> policy_changes = {
      {"retries", 7},
      {"suspend", true},
      {"on_remove", "keep"},
      {"annotations", Value::Object{{"owner", "someone else"}, {"ticket", "T-1"}}},
  };
  for (const auto& [key, value] : policy_changes) {
    Value changed = base;
    changed[key] = value;
    INFO(key);
    CHECK(ComputeSpecHash(changed) == hash);
    changed.as_object().erase(key);
    CHECK(ComputeSpecHash(changed) == hash);
  }
}

TEST_CASE("spec hash changes when any field that defines the run changes") {
  Value base = SampleDocument();
  std::string hash = ComputeSpecHash(base);
  for (const auto& [key, value] : base.as_object()) {
    if (rg::core::IsPolicyField(key) || key == "name") continue;  // name: the test below
    INFO(key);
    Value changed = base;
    changed[key] = Value("something else");
    CHECK(ComputeSpecHash(changed) != hash);
    Value removed = base;
    removed.as_object().erase(key);
    CHECK(ComputeSpecHash(removed) != hash);
  }
  Value type_changed = base;
  type_changed["nnodes"] = "1";  // the string "1" is not the integer 1
  CHECK(ComputeSpecHash(type_changed) != hash);
}

TEST_CASE("name is left out of the hash, the earlier rule's hash is kept for named specs") {
  Value unnamed = SampleDocument();
  unnamed.as_object().erase("name");
  Value named = unnamed;
  named["name"] = Value("ppo-qwen");
  // Pinning a moved file's old name keeps its content's hash, hence its run.
  CHECK(ComputeSpecHash(named) == ComputeSpecHash(unnamed));
  // Runs hashed by the earlier rule, name included, still count as current.
  const std::string legacy = rg::core::ComputeLegacySpecHash(named);
  CHECK_FALSE(legacy.empty());
  CHECK(legacy != ComputeSpecHash(named));
  Value other_name = unnamed;
  other_name["name"] = Value("other");
  CHECK(rg::core::ComputeLegacySpecHash(other_name) != legacy);
  // Without a name both rules agree: nothing to remember.
  CHECK(rg::core::ComputeLegacySpecHash(unnamed).empty());
  // The earlier rule hashed the newer policy fields.
  Value with_deadline = unnamed;
  with_deadline["deadline"] = Value("2h");
  CHECK(ComputeSpecHash(with_deadline) == ComputeSpecHash(unnamed));
  CHECK_FALSE(rg::core::ComputeLegacySpecHash(with_deadline).empty());
}

TEST_CASE("a non-default instance takes its name into the hash, its earlier ids stay current") {
  Value doc = SampleDocument();
  const std::string plain = ComputeSpecHash(doc);
  // The default instance's ids are the ids of the rule without an instance.
  CHECK(ComputeSpecHash(doc, "ray-gitops") == plain);
  CHECK(ComputeSpecHash(doc, "") == plain);
  const std::string team_a = ComputeSpecHash(doc, "team-a");
  const std::string team_b = ComputeSpecHash(doc, "team-b");
  CHECK(team_a != plain);
  CHECK(team_a != team_b);
  CHECK(team_a.size() == plain.size());

  JobSpec spec = SpecNamed("ppo-qwen", plain);
  spec.document = doc;
  spec.legacy_spec_hashes = {"0123456789"};
  rg::core::BindSpecToInstance(spec, "team-a");
  CHECK(spec.spec_hash == team_a);
  CHECK(rg::core::SubmissionIdBase(spec) == "ppo-qwen-" + team_a);
  // Runs submitted before the instance took part stay current: upgrading restarts nothing.
  CHECK(spec.IsCurrentHash(team_a));
  CHECK(spec.IsCurrentHash(plain));
  CHECK(spec.IsCurrentHash("0123456789"));
  CHECK_FALSE(spec.IsCurrentHash(team_b));
  // Binding again changes nothing; the default instance leaves a spec as it is.
  rg::core::BindSpecToInstance(spec, "team-a");
  CHECK(spec.spec_hash == team_a);
  CHECK(spec.legacy_spec_hashes.size() == 2);
  JobSpec by_default = SpecNamed("ppo-qwen", plain);
  by_default.document = doc;
  rg::core::BindSpecToInstance(by_default, "ray-gitops");
  CHECK(by_default.spec_hash == plain);
  CHECK(by_default.legacy_spec_hashes.empty());
  // A pinned id is the user's and is never changed.
  JobSpec pinned = SpecNamed("ppo-qwen", plain);
  pinned.document = doc;
  pinned.submission_id = "my-run";
  rg::core::BindSpecToInstance(pinned, "team-a");
  CHECK(rg::core::SubmissionIdBase(pinned) == "my-run");
}

TEST_CASE("policy fields never take part in a run's identity") {
  CHECK(rg::core::IsPolicyField("retries"));
  CHECK(rg::core::IsPolicyField("suspend"));
  CHECK(rg::core::IsPolicyField("on_remove"));
  CHECK(rg::core::IsPolicyField("annotations"));
  for (const char* key : {"deadline", "schedule", "concurrency", "starting_deadline", "timezone"}) {
    CHECK(rg::core::IsPolicyField(key));
  }
  CHECK_FALSE(rg::core::IsPolicyField("name"));
  CHECK_FALSE(rg::core::IsPolicyField("submission_id"));
  CHECK_FALSE(rg::core::IsPolicyField("Retries"));
}

TEST_CASE("submission ids: attempt 0 is the base, later attempts add -r<k>") {
  JobSpec spec = SpecNamed("ppo-qwen", "3f2a1c9b0e");
  CHECK(rg::core::SubmissionIdBase(spec) == "ppo-qwen-3f2a1c9b0e");
  CHECK(rg::core::SubmissionIdForAttempt(spec, 0) == "ppo-qwen-3f2a1c9b0e");
  CHECK(rg::core::SubmissionIdForAttempt(spec, 1) == "ppo-qwen-3f2a1c9b0e-r1");
  CHECK(rg::core::SubmissionIdForAttempt(spec, 12) == "ppo-qwen-3f2a1c9b0e-r12");
}

TEST_CASE("a pinned submission id replaces name and hash") {
  JobSpec spec = SpecNamed("ppo-qwen", "3f2a1c9b0e");
  spec.submission_id = "my-run.v2";
  CHECK(rg::core::SubmissionIdBase(spec) == "my-run.v2");
  CHECK(rg::core::SubmissionIdForAttempt(spec, 0) == "my-run.v2");
  CHECK(rg::core::SubmissionIdForAttempt(spec, 3) == "my-run.v2-r3");
}

TEST_CASE("a spec without a stored hash gets the hash of its document") {
  JobSpec spec = SpecNamed("x", "");
  spec.document = SampleDocument();
  CHECK(rg::core::SubmissionIdBase(spec) == "x-" + ComputeSpecHash(spec.document));
}

TEST_CASE("generated ids never look like a Ray driver JobID and are valid pins") {
  JobSpec spec = SpecNamed("a", "0123456789");
  std::string id = rg::core::SubmissionIdBase(spec);
  CHECK(id == "a-0123456789");
  CHECK(rg::core::IsValidPinnedSubmissionId(id));
}

TEST_CASE("job names follow ^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$") {
  struct Case {
    std::string name;
    bool valid;
  };
  std::vector<Case> cases = {
      {"a", true},
      {"9", true},
      {"ppo-qwen2.5", true},
      {"a_b.c-d", true},
      {std::string(63, 'a'), true},
      {std::string(64, 'a'), false},
      {"", false},
      {"-a", false},
      {"a-", false},
      {".a", false},
      {"a.", false},
      {"A", false},
      {"ppo/qwen", false},
      {"a b", false},
      {"caf\xc3\xa9", false},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    CHECK(rg::core::IsValidJobName(c.name) == c.valid);
  }
}

TEST_CASE("pinned ids: [a-z0-9._-], 1 to 100 characters, alphanumeric ends, never 8 hex") {
  struct Case {
    std::string id;
    bool valid;
  };
  std::vector<Case> cases = {
      {"run-1", true},
      {"a", true},
      {std::string(100, 'z'), true},
      {std::string(101, 'z'), false},
      {"", false},
      {"-run", false},
      {"run_", false},
      {"Run", false},
      {"run/1", false},
      {"run 1", false},
      {"deadbeef", false},
      {"01234567", false},
      {"0123456g", true},
      {"deadbee", true},
      {"deadbeef0", true},
      {"raysubmit_abc", true},
  };
  for (const auto& c : cases) {
    INFO(c.id);
    CHECK(rg::core::IsValidPinnedSubmissionId(c.id) == c.valid);
  }
}

TEST_CASE("default job names come from the path under the jobs directory") {
  using rg::core::DefaultJobName;
  CHECK(DefaultJobName("jobs/ppo/Qwen2.5.yaml", "jobs") == "ppo-qwen2.5");
  CHECK(DefaultJobName("jobs/smoke/hello.yml", "jobs") == "smoke-hello");
  CHECK(DefaultJobName("jobs/a/b/c.yaml", "jobs") == "a-b-c");
  CHECK(DefaultJobName("jobs/top.yaml", "jobs/") == "top");
  CHECK(DefaultJobName("./jobs/top.yaml", "./jobs") == "top");
  CHECK(DefaultJobName("specs/x/Y.YAML", "specs") == "x-y");
  CHECK(DefaultJobName("deploy/jobs/x.yaml", "deploy/jobs") == "x");
  // Only a whole directory component is stripped.
  CHECK(DefaultJobName("jobsx/y.yaml", "jobs") == "jobsx-y");
}

TEST_CASE("one-off ids: run 0 ends in -cli, run n in -cli-<n>, and never equal a daemon id") {
  JobSpec spec = SpecNamed("ppo-qwen", "3f2a1c9b0e");
  CHECK(rg::core::OneOffSubmissionId(spec, 0) == "ppo-qwen-3f2a1c9b0e-cli");
  CHECK(rg::core::OneOffSubmissionId(spec, 1) == "ppo-qwen-3f2a1c9b0e-cli-1");
  CHECK(rg::core::OneOffSubmissionId(spec, 12) == "ppo-qwen-3f2a1c9b0e-cli-12");
  for (int attempt : {0, 1, 2}) {
    CHECK(rg::core::OneOffSubmissionId(spec, 0) != rg::core::SubmissionIdForAttempt(spec, attempt));
  }
  CHECK(rg::core::IsValidPinnedSubmissionId(rg::core::OneOffSubmissionId(spec, 3)));
}

TEST_CASE("one-off ids of a pinned spec append -cli to the pin") {
  JobSpec spec = SpecNamed("ppo-qwen", "3f2a1c9b0e");
  spec.submission_id = "my-run.v2";
  CHECK(rg::core::OneOffSubmissionId(spec, 0) == "my-run.v2-cli");
  CHECK(rg::core::OneOffSubmissionId(spec, 2) == "my-run.v2-cli-2");
}

TEST_CASE("OneOffRunOf reads the run number of the spec's one-off ids only") {
  JobSpec spec = SpecNamed("x", "0123456789");
  struct Case {
    std::string id;
    std::optional<int> run;
  };
  const std::vector<Case> cases = {
      {"x-0123456789-cli", 0},
      {"x-0123456789-cli-1", 1},
      {"x-0123456789-cli-42", 42},
      {"x-0123456789", std::nullopt},         // the daemon's run
      {"x-0123456789-r1", std::nullopt},      // the daemon's retry
      {"x-0123456789-cli-0", std::nullopt},   // run 0 has no number
      {"x-0123456789-cli-01", std::nullopt},  // no leading zeros
      {"x-0123456789-cli--1", std::nullopt},
      {"x-0123456789-cli-1a", std::nullopt},
      {"x-0123456789-cli-", std::nullopt},
      {"x-0123456789-client", std::nullopt},
      {"x-0123456789-cli-99999999999", std::nullopt},  // out of range
      {"y-0123456789-cli", std::nullopt},
  };
  for (const Case& c : cases) {
    INFO(c.id);
    CHECK(rg::core::OneOffRunOf(spec, c.id) == c.run);
  }
}
