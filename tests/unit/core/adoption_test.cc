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

namespace rg::core {
namespace {

// A render for a job with secrets HF_TOKEN and WANDB_API_KEY.
Value SecretBody(std::string_view hf, std::string_view wandb) {
  Value body = Body();
  body["runtime_env"]["env_vars"]["HF_TOKEN"] = std::string(hf);
  body["runtime_env"]["env_vars"]["WANDB_API_KEY"] = std::string(wandb);
  return body;
}

const StringMap kJobSecrets{{"HF_TOKEN", "hf-read"}, {"WANDB_API_KEY", "wandb-key"}};

TEST_CASE("RenderMismatch: a secret's value is never compared, only that the name is there") {
  // Submitted with the values of the day; rotated since, then rendered without values.
  const RayJob job = Echo(SecretBody("hf_old_value_1234567", "old-wandb-value-0123"));
  CHECK(RenderMismatch(job, SecretBody("hf_new_value_7654321", "new-wandb-value-3210"), kJobSecrets)
            .empty());
  CHECK(RenderMismatch(job, SecretBody("<secret:hf-read>", "<secret:wandb-key>"), kJobSecrets)
            .empty());
  // Without the secrets named, the values are compared as any env var is, and never shown.
  const std::string what =
      RenderMismatch(job, SecretBody("<secret:hf-read>", "<secret:wandb-key>"));
  CHECK_THAT(what, Catch::Contains("env_vars.HF_TOKEN"));
  CHECK_THAT(what, !Catch::Contains("old"));
}

TEST_CASE("RenderMismatch: a run with ${NAME} for node delivery is the render") {
  const Value body = SecretBody("${HF_TOKEN}", "${WANDB_API_KEY}");
  CHECK(RenderMismatch(Echo(body), body, kJobSecrets).empty());
  // Delivered by env then, by node now (a cluster.yaml change restarts nothing).
  CHECK(
      RenderMismatch(Echo(SecretBody("hf_value_1234567890", "wandb-value-0123")), body, kJobSecrets)
          .empty());
}

TEST_CASE("RenderMismatch: a secret missing from the job, or a job's extra one, differs") {
  Value without = SecretBody("x-value-1234", "y-value-1234");
  without["runtime_env"]["env_vars"].as_object().erase("WANDB_API_KEY");
  const std::string missing = RenderMismatch(
      Echo(without), SecretBody("<secret:hf-read>", "<secret:wandb-key>"), kJobSecrets);
  CHECK_THAT(missing, Catch::Contains("env_vars.WANDB_API_KEY"));
  const std::string extra = RenderMismatch(Echo(SecretBody("x-value-1234", "y-value-1234")),
                                           SecretBody("<secret:hf-read>", "<secret:wandb-key>"),
                                           StringMap{{"HF_TOKEN", "hf-read"}});
  CHECK_THAT(extra, Catch::Contains("env_vars.WANDB_API_KEY"));
  CHECK_THAT(extra, !Catch::Contains("y-value"));
  // Any other env var is still compared by value.
  RayJob job = Echo(SecretBody("x-value-1234", "y-value-1234"));
  Value env = job.runtime_env.get();
  env["env_vars"]["PYTHONPATH"] = "/elsewhere";
  job.runtime_env.set(env);
  CHECK_THAT(RenderMismatch(job, SecretBody("a", "b"), kJobSecrets),
             Catch::Contains("env_vars.PYTHONPATH"));
}

}  // namespace
}  // namespace rg::core
