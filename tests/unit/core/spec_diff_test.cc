#include "reconciler/core/spec_diff.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using rg::core::DiffLine;
using rg::core::FieldChange;
using rg::core::Value;

namespace {

std::vector<std::string> Formatted(const Value& before, const Value& after) {
  std::vector<std::string> out;
  for (const FieldChange& f : rg::core::DiffFields(before, after)) {
    out.push_back(rg::core::FormatFieldChange(f));
  }
  return out;
}

Value Spec(int64_t steps) {
  Value doc = Value::Object{};
  doc["workload"] = "ppo";
  doc["total_training_steps"] = steps;
  doc["overrides"] = Value::Array{"a=1", "b=2", "c=3"};
  doc["runtime_env"]["env_vars"] = Value::Object{{"HF_HOME", "/x"}};
  return doc;
}

}  // namespace

TEST_CASE("field diffs name each changed leaf as old -> new", "[spec_diff]") {
  struct Case {
    const char* what;
    Value before;
    Value after;
    std::vector<std::string> expected;
  };
  Value more_steps = Spec(200);
  Value new_env = Spec(100);
  new_env["runtime_env"]["env_vars"]["HF_HOME"] = "/y";
  new_env["runtime_env"]["env_vars"]["NEW"] = "1";
  Value inserted = Spec(100);
  inserted["overrides"] = Value::Array{"a=1", "x=9", "b=2", "c=3"};
  Value dropped = Spec(100);
  dropped.as_object().erase("total_training_steps");
  Value retyped = Spec(100);
  retyped["overrides"] = "a=1";
  const std::vector<Case> cases = {
      {"same", Spec(100), Spec(100), {}},
      {"scalar", Spec(100), more_steps, {"total_training_steps: 100 -> 200"}},
      {"nested and added",
       Spec(100),
       new_env,
       {"runtime_env.env_vars.HF_HOME: /x -> /y", "runtime_env.env_vars.NEW: (unset) -> 1"}},
      {"one list item inserted is one change", Spec(100), inserted, {"overrides: + x=9"}},
      {"removed key", Spec(100), dropped, {"total_training_steps: 100 -> (unset)"}},
      {"list became a string", Spec(100), retyped, {R"(overrides: ["a=1","b=2","c=3"] -> a=1)"}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK(Formatted(c.before, c.after) == c.expected);
  }
}

TEST_CASE("shell words keep their quotes and split only at blanks outside them", "[spec_diff]") {
  using rg::core::SplitShellWords;
  CHECK(SplitShellWords("python3 -m a.b  x=1") ==
        std::vector<std::string>{"python3", "-m", "a.b", "x=1"});
  CHECK(SplitShellWords("echo 'a b' \"c \\\" d\" e\\ f") ==
        std::vector<std::string>{"echo", "'a b'", "\"c \\\" d\"", "e\\ f"});
  CHECK(SplitShellWords("  ").empty());
  CHECK(SplitShellWords("'it'\\''s' x") == std::vector<std::string>{"'it'\\''s'", "x"});
}

TEST_CASE("submission lines: one entrypoint word per line, then runtime_env and resources",
          "[spec_diff]") {
  Value body = Value::Object{};
  body["submission_id"] = "a-0123456789";
  body["entrypoint"] = "python3 -m verl.trainer.main_ppo trainer.total_training_steps=200";
  body["runtime_env"]["env_vars"] = Value::Object{{"HF_HOME", "/x"}};
  body["entrypoint_num_gpus"] = 1;
  body["entrypoint_resources"] = Value::Object{{"worker_node", 1}};
  body["metadata"] = Value::Object{{"gitops.commit", "abc"}};
  CHECK(rg::core::SubmissionLines(body) ==
        std::vector<std::string>{"python3", "-m", "verl.trainer.main_ppo",
                                 "trainer.total_training_steps=200", "entrypoint_num_gpus: 1",
                                 "entrypoint_resources.worker_node: 1",
                                 "runtime_env.env_vars.HF_HOME: /x"});
}

TEST_CASE("a line diff keeps the common lines and marks the rest", "[spec_diff]") {
  const std::vector<DiffLine> diff =
      rg::core::DiffLines({"a", "b", "c", "d"}, {"a", "c", "x", "d"});
  const std::vector<DiffLine> expected = {
      {' ', "a"}, {'-', "b"}, {' ', "c"}, {'+', "x"}, {' ', "d"}};
  CHECK(diff == expected);
  CHECK(rg::core::HasChanges(diff));
  CHECK_FALSE(rg::core::HasChanges(rg::core::DiffLines({"a"}, {"a"})));
}

TEST_CASE("context trimming keeps the changes and marks each gap once", "[spec_diff]") {
  std::vector<std::string> before;
  for (int i = 0; i < 20; ++i) before.push_back("w" + std::to_string(i));
  std::vector<std::string> after = before;
  after[1] = "changed1";
  after[15] = "changed15";
  const std::vector<DiffLine> trimmed =
      rg::core::TrimToContext(rg::core::DiffLines(before, after), 1);
  const std::vector<DiffLine> expected = {{' ', "w0"},  {'-', "w1"},        {'+', "changed1"},
                                          {' ', "w2"},  {' ', "..."},       {' ', "w14"},
                                          {'-', "w15"}, {'+', "changed15"}, {' ', "w16"}};
  CHECK(trimmed == expected);
}

TEST_CASE("the cluster document holds the fields the cluster file sets", "[spec_diff]") {
  rg::core::RayConfig cluster;
  cluster.address = "http://h:8265";
  cluster.entrypoint_num_gpus = 1;
  const Value doc = rg::core::ClusterDocument(cluster);
  CHECK(rg::core::ToCanonicalJson(doc) == R"({"address":"http://h:8265","entrypoint_num_gpus":1})");
}
