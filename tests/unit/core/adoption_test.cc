// Whether a job found in Ray is the run ray-gitops renders (core/adoption.h): the comparison of
// the echoed entrypoint and runtime_env with the render, and what its message names (never a
// value).

#include "reconciler/core/adoption.h"

#include <catch2/catch.hpp>
#include <string>

#include "reconciler/core/render.h"

namespace rg::core {
namespace {

constexpr const char* kSecret = "hf_secretvalue123456";

Value Body() {
  Value body = Value::Object{};
  body["submission_id"] = "train-aaaaaaaaaa";
  body["entrypoint"] = "python3 train.py --steps 10";
  Value env = Value::Object{};
  env["env_vars"]["HF_TOKEN"] = kSecret;
  env["env_vars"]["PYTHONPATH"] = "/code:${PYTHONPATH}";
  env["working_dir"] = "gcs://_ray_pkg_abc.zip";
  env["config"]["setup_timeout_seconds"] = 600;
  body["runtime_env"] = env;
  body["metadata"][std::string(kMetaCodeTree)] = "tree1";
  return body;
}

// The job Ray echoes for `body` as submitted, after a JSON round trip.
RayJob Echo(const Value& body) {
  RayJob job;
  job.type = "SUBMISSION";
  job.submission_id = body.Find("submission_id")->as_string();
  job.entrypoint = body.Find("entrypoint")->as_string();
  job.runtime_env.set(*body.Find("runtime_env"));
  job.metadata.emplace(kMetaCodeTree, "tree1");
  return job;
}

TEST_CASE("SameJson compares objects by key and numbers by value") {
  CHECK(SameJson(Value(int64_t{600}), Value(600.0)));
  CHECK_FALSE(SameJson(Value(int64_t{600}), Value(600.5)));
  CHECK_FALSE(SameJson(Value("600"), Value(int64_t{600})));
  Value a = Value::Object{};
  a["x"] = 1;
  a["y"] = Value::Array{Value(1.0), Value("s")};
  Value b = Value::Object{};
  b["y"] = Value::Array{Value(int64_t{1}), Value("s")};
  b["x"] = 1.0;
  CHECK(SameJson(a, b));
  b["z"] = nullptr;
  CHECK_FALSE(SameJson(a, b));
  CHECK(SameJson(Value(), Value()));
  CHECK_FALSE(SameJson(Value(), Value(Value::Object{})));
}

TEST_CASE("RenderMismatch: the job Ray echoes for the render is that run") {
  const Value body = Body();
  CHECK(RenderMismatch(Echo(body), body).empty());
}

TEST_CASE("RenderMismatch: another entrypoint is named, never shown") {
  const Value body = Body();
  RayJob job = Echo(body);
  job.entrypoint = "echo PWNED";
  const std::string what = RenderMismatch(job, body);
  CHECK(what == "its entrypoint differs");
}

TEST_CASE("RenderMismatch: a runtime_env that differs names the keys of the render, no value") {
  const Value body = Body();
  RayJob job = Echo(body);
  Value env = job.runtime_env.get();
  env["env_vars"]["HF_TOKEN"] = "something-else";
  env["working_dir"] = "gcs://_ray_pkg_evil.zip";
  env["pip"] = Value::Array{Value("evil")};
  job.runtime_env.set(env);
  const std::string what = RenderMismatch(job, body);
  CHECK_THAT(what, Catch::Contains("its runtime_env differs"));
  CHECK_THAT(what, Catch::Contains("env_vars.HF_TOKEN"));
  CHECK_THAT(what, Catch::Contains("working_dir"));
  CHECK_THAT(what, Catch::Contains("1 key ray-gitops never sets"));
  CHECK_THAT(what, !Catch::Contains(kSecret));
  CHECK_THAT(what, !Catch::Contains("something-else"));
  CHECK_THAT(what, !Catch::Contains("pip"));
  CHECK_THAT(what, !Catch::Contains("evil"));
}

TEST_CASE("RenderMismatch: a secret's placeholder stands for any value the run was sent") {
  Value sent = Body();
  sent["runtime_env"]["env_vars"]["WANDB_API_KEY"] = "wandb-value-before-rotation";
  const RayJob job = Echo(sent);
  Value shown = Body();
  shown["runtime_env"]["env_vars"]["WANDB_API_KEY"] = "<secret:wandb-key>";
  CHECK(RenderMismatch(job, shown).empty());
  // Only a string, and only where the placeholder is: the other keys still count.
  shown["runtime_env"]["env_vars"]["HF_TOKEN"] = "another-token-value";
  CHECK(RenderMismatch(job, shown) == "its runtime_env differs (env_vars.HF_TOKEN)");
  Value missing = Body();
  missing["runtime_env"]["env_vars"]["WANDB_API_KEY"] = "<secret:wandb-key>";
  missing["runtime_env"]["env_vars"]["OTHER"] = "<secret:other>";
  CHECK_FALSE(RenderMismatch(job, missing).empty());
}

TEST_CASE("RenderMismatch: no runtime_env where the render has one differs") {
  const Value body = Body();
  RayJob job = Echo(body);
  job.runtime_env.reset();
  CHECK(RenderMismatch(job, body) == "its runtime_env differs");
}

TEST_CASE("RenderMismatch: an id or a code tree label other than the render's") {
  const Value body = Body();
  RayJob job = Echo(body);
  job.submission_id = "train-aaaaaaaaaa-r1";
  CHECK_THAT(RenderMismatch(job, body), Catch::Contains("its submission id is not"));
  job = Echo(body);
  job.metadata.insert_or_assign(std::string(kMetaCodeTree), "tree2");
  CHECK_THAT(RenderMismatch(job, body), Catch::Contains("gitops.code-tree"));
}

TEST_CASE("DisownedMessage names the job and says what is not done") {
  const std::string m = DisownedMessage("train-aaaaaaaaaa", "its entrypoint differs");
  CHECK_THAT(m, Catch::StartsWith("submission id train-aaaaaaaaaa is taken by a job"));
  CHECK_THAT(m, Catch::Contains("(its entrypoint differs)"));
  CHECK_THAT(m, Catch::Contains("not adopting, recording or stopping it"));
}

}  // namespace
}  // namespace rg::core
