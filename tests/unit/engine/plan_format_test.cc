#include "reconciler/core/plan_format.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/render.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/unit/engine/hostile_values.h"

namespace rg::core {
namespace {

DesiredState TwoJobs(const std::string& a_entrypoint) {
  return spec::LoadDesiredState(
      spec::SourceFile{"cluster.yaml", "address: http://127.0.0.1:8265\n"},
      {spec::SourceFile{"jobs/a.yaml", "workload: custom\nentrypoint: " + a_entrypoint + "\n"},
       spec::SourceFile{"jobs/b.yaml", "workload: custom\nentrypoint: sleep 5\n"}});
}

RayJob Running(const JobSpec& spec) {
  RayJob job;
  job.type = "SUBMISSION";
  job.submission_id = SubmissionIdForAttempt(spec, 0);
  job.status = RayJobStatus::kRunning;
  job.metadata = {{std::string(kMetaManagedBy), "ray-gitops"},
                  {std::string(kMetaName), spec.name},
                  {std::string(kMetaSpecPath), spec.path},
                  {std::string(kMetaSpecHash), spec.spec_hash},
                  {std::string(kMetaAttempt), "0"},
                  {std::string(kMetaRepo), "https://git.example/team-a/jobs"}};
  return job;
}

TEST_CASE("the text plan has one row per action and per unchanged job", "[plan_format]") {
  const DesiredState desired = TwoJobs("echo 'a|b'");
  const std::vector<RayJob> observed = {Running(desired.jobs[1])};
  const Plan plan = PlanActions(desired, observed, {}, {});
  PlanView view{&plan, &desired, nullptr, "c0ffee", {}};
  const std::string text = FormatPlanText(view);
  CHECK(text.find("Plan for c0ffee: 1 to submit, 0 to stop, 1 unchanged") == 0);
  CHECK(text.find("submit  a  ") != std::string::npos);
  CHECK(text.find("keep    b  ") != std::string::npos);
  CHECK(text.find(SubmissionIdForAttempt(desired.jobs[0], 0)) != std::string::npos);
}

TEST_CASE("a waiting job is a wait row naming what it waits on, in text and json",
          "[plan_format]") {
  DesiredState desired = spec::LoadDesiredState(
      spec::SourceFile{"cluster.yaml", "address: http://127.0.0.1:8265\n"},
      {spec::SourceFile{"jobs/a.yaml", "workload: custom\nentrypoint: sleep 5\n"},
       spec::SourceFile{"jobs/b.yaml", "workload: custom\nentrypoint: echo b\nafter: [a]\n"},
       spec::SourceFile{"jobs/c.yaml", "workload: custom\nentrypoint: echo c\nafter: [b]\n"}});
  BindDesiredState(desired, "ray-gitops");
  const Plan plan = PlanActions(desired, {Running(desired.jobs[0])}, {}, {});
  PlanView view{&plan, &desired, nullptr, "c0ffee", {}};
  const std::string text = FormatPlanText(view);
  INFO(text);
  CHECK(text.find("\nwait    b     -  ") != std::string::npos);
  CHECK(text.find("Waiting  on a: Running\n") != std::string::npos);
  CHECK(text.find("\nwait    c     -  ") != std::string::npos);
  CHECK(text.find("Waiting  on b: Waiting (on a: Running)\n") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(FormatPlanJson(view));
  CHECK(j["jobs"][1]["action"] == "wait");
  CHECK(j["jobs"][1]["phase"] == "Waiting");
  CHECK(j["jobs"][1]["message"] == "on a: Running");
}

TEST_CASE("the markdown plan renders each submitted entrypoint and explains a replacement",
          "[plan_format]") {
  const DesiredState before = TwoJobs("sleep 1");
  const DesiredState after = TwoJobs("echo 'it''s ```fenced```'");
  Ledger ledger;
  StatusRecord rec;
  rec.name = "a";
  rec.spec_hash = before.jobs[0].spec_hash;
  ledger["a"] = rec;
  const std::vector<RayJob> observed = {Running(before.jobs[0]), Running(after.jobs[1])};
  const Plan plan = PlanActions(after, observed, ledger, {});
  REQUIRE(plan.actions.size() == 2);
  PlanView view{&plan, &after, &ledger, "0123456789abcdef", {}};
  const std::string md = FormatPlanMarkdown(view);
  CHECK(md.find("**1 to submit, 1 to stop, 1 unchanged.**") != std::string::npos);
  CHECK(md.find("| stop | a | `" + SubmissionIdForAttempt(before.jobs[0], 0) + "`") !=
        std::string::npos);
  CHECK(md.find("<details><summary>submit <code>" + SubmissionIdForAttempt(after.jobs[0], 0)) !=
        std::string::npos);
  CHECK(md.find("Spec changed: hash `" + before.jobs[0].spec_hash + "` -> `" +
                after.jobs[0].spec_hash + "`") != std::string::npos);
  CHECK(md.find("is stopped first") != std::string::npos);
  // A fence longer than any backtick run in the entrypoint.
  CHECK(md.find("````diff\n") != std::string::npos);
  CHECK(md.find("cluster.yaml defaults apply to the next submission") != std::string::npos);
}

TEST_CASE("the json plan is versioned and lists actions and jobs", "[plan_format]") {
  const DesiredState desired = TwoJobs("sleep 1");
  const Plan plan = PlanActions(desired, {}, {}, {});
  PlanView view{&plan, &desired, nullptr, "abc", {}};
  const nlohmann::json j = nlohmann::json::parse(FormatPlanJson(view));
  CHECK(j["format_version"] == 1);
  CHECK(j["commit"] == "abc");
  CHECK(j["summary"]["submit"] == 2);
  CHECK(j["summary"]["has_changes"] == true);
  REQUIRE(j["actions"].size() == 2);
  CHECK(j["actions"][0]["action"] == "submit");
  CHECK(j["actions"][0]["submission_id"] == SubmissionIdForAttempt(desired.jobs[0], 0));
  CHECK(j["jobs"][1]["name"] == "b");
  CHECK(j["jobs"][1]["action"] == "submit");
  CHECK(j["jobs"][1]["phase"] == "Pending");
  CHECK(j["jobs"][1]["attempt"] == 0);
}

DesiredState VerlJobs(const std::string& cluster_extra) {
  return spec::LoadDesiredState(
      spec::SourceFile{"cluster.yaml", "address: http://127.0.0.1:8265\n" + cluster_extra},
      {spec::SourceFile{"jobs/ppo.yaml",
                        "workload: ppo\nmodel_id: m\ntrain_file: /d/t.parquet\nsave_freq: 10\n"
                        "retries: 1\n"},
       spec::SourceFile{"jobs/run.yaml", "workload: custom\nentrypoint: sleep 5\n"}});
}

TEST_CASE("a plan shows the checkpoint folder of each verl submit, shared by its retries",
          "[plan_format]") {
  const DesiredState desired = VerlJobs("shared_root: /shared\n");
  REQUIRE(desired.invalid.empty());
  const JobSpec& ppo = desired.jobs[0];
  const std::string run_id = SubmissionIdForAttempt(ppo, 0);
  const std::string checkpoints = "/shared/jobs/" + run_id + "/checkpoints";
  SECTION("attempt 0") {
    const Plan plan = PlanActions(desired, {}, {}, {});
    PlanView view{&plan, &desired, nullptr, "c0ffee", {}};
    const std::string text = FormatPlanText(view);
    INFO(text);
    CHECK(text.find("\nCheckpoints (trainer.default_local_dir, shared by every attempt of a run):\n"
                    "  " +
                    run_id + ": " + checkpoints + "\n") != std::string::npos);
    // A custom spec has no checkpoints of ours.
    CHECK(text.find(SubmissionIdForAttempt(desired.jobs[1], 0) + ": /shared") == std::string::npos);
    const std::string md = FormatPlanMarkdown(view);
    CHECK(md.find("Checkpoints: `" + checkpoints + "`.\n") != std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(FormatPlanJson(view));
    REQUIRE(j["actions"].size() == 2);
    CHECK(j["actions"][0]["run_dir"] == "/shared/jobs/" + run_id);
    CHECK(j["actions"][0]["checkpoint_dir"] == checkpoints);
    CHECK(j["actions"][1]["run_dir"] ==
          "/shared/jobs/" + SubmissionIdForAttempt(desired.jobs[1], 0));
    CHECK(j["actions"][1]["checkpoint_dir"].is_null());
  }
  SECTION("a retry resumes from the run's folder, not a folder of its own") {
    RayJob failed = Running(ppo);
    failed.status = RayJobStatus::kFailed;
    const Plan plan = PlanActions(desired, {failed, Running(desired.jobs[1])}, {}, {});
    REQUIRE(plan.actions.size() == 1);
    REQUIRE(plan.actions[0].submission_id == run_id + "-r1");
    PlanView view{&plan, &desired, nullptr, "c0ffee", {}};
    const std::string text = FormatPlanText(view);
    INFO(text);
    CHECK(text.find("  " + run_id + "-r1: " + checkpoints +
                    " (attempt 1 resumes from the latest checkpoint its run saved there, if "
                    "any)\n") != std::string::npos);
    CHECK(text.find("-r1/checkpoints") == std::string::npos);
    CHECK(FormatPlanMarkdown(view).find("Checkpoints: `" + checkpoints + "` (attempt 1 resumes") !=
          std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(FormatPlanJson(view));
    CHECK(j["actions"][0]["checkpoint_dir"] == checkpoints);
  }
  SECTION("without a shared_root there is no folder to show") {
    const DesiredState bare = VerlJobs("");
    const Plan plan = PlanActions(bare, {}, {}, {});
    PlanView view{&plan, &bare, nullptr, "c0ffee", {}};
    CHECK(FormatPlanText(view).find("Checkpoints") == std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(FormatPlanJson(view));
    CHECK(j["actions"][0]["run_dir"].is_null());
    CHECK(j["actions"][0]["checkpoint_dir"].is_null());
  }
}

// Issue 9, point 10: jobs/a.yaml moved to jobs/team/a2.yaml, content unchanged.
TEST_CASE("a plan says a moved unnamed spec is a rename that starts a new run", "[plan_format]") {
  const DesiredState before = TwoJobs("sleep 1");
  const DesiredState after = spec::LoadDesiredState(
      spec::SourceFile{"cluster.yaml", "address: http://127.0.0.1:8265\n"},
      {spec::SourceFile{"jobs/team/a2.yaml", "workload: custom\nentrypoint: sleep 1\n"},
       spec::SourceFile{"jobs/b.yaml", "workload: custom\nentrypoint: sleep 5\n"}});
  REQUIRE(after.jobs[1].spec_hash == before.jobs[0].spec_hash);
  const std::vector<RayJob> observed = {Running(before.jobs[0]), Running(before.jobs[1])};
  const Plan plan = PlanActions(after, observed, {}, {});
  PlanView view{&plan, &after, nullptr, "abc", {}};
  const std::string expected =
      "renamed from a (jobs/a.yaml); this starts a new run; pin `name: a` to keep the run";
  CHECK(FormatPlanText(view).find("submit  team-a2  ") != std::string::npos);
  CHECK(FormatPlanText(view).find(expected) != std::string::npos);
  CHECK(FormatPlanMarkdown(view).find("Renamed from `a` (`jobs/a.yaml`)") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(FormatPlanJson(view));
  REQUIRE(j["jobs"].size() == 3);
  CHECK(j["jobs"][2]["name"] == "team-a2");
  CHECK(j["jobs"][2]["renamed_from"]["name"] == "a");
  CHECK(j["jobs"][2]["renamed_from"]["spec_path"] == "jobs/a.yaml");
  CHECK(j["jobs"][1]["renamed_from"].is_null());
}

TEST_CASE("removed jobs whose runs ended are counted, not listed, in the text plan",
          "[plan_format]") {
  const DesiredState desired = TwoJobs("sleep 1");
  Ledger ledger;
  StatusRecord gone;
  gone.name = "gone";
  gone.spec_path = "jobs/gone.yaml";
  gone.spec_hash = "0123456789";
  ledger["gone"] = gone;
  const Plan plan =
      PlanActions(desired, {Running(desired.jobs[0]), Running(desired.jobs[1])}, ledger, {});
  REQUIRE(plan.FindJob("gone") != nullptr);
  PlanView view{&plan, &desired, &ledger, "abc", {}};
  const std::string text = FormatPlanText(view);
  CHECK(text.find("0 to submit, 0 to stop, 2 unchanged, 1 removed (kept in the ledger") !=
        std::string::npos);
  CHECK(text.find("gone") == std::string::npos);
  // The JSON keeps every job.
  CHECK(nlohmann::json::parse(FormatPlanJson(view))["jobs"].size() == 3);
}

TEST_CASE("with secret_delivery node the plan names what the nodes' environment must hold",
          "[plan_format][secrets]") {
  const auto desired = [](const std::string& delivery) {
    return spec::LoadDesiredState(
        spec::SourceFile{"cluster.yaml", "address: http://127.0.0.1:8265\nsecret_delivery: " +
                                             delivery + "\nsecrets:\n  WANDB_API_KEY: w\n"},
        {spec::SourceFile{"jobs/a.yaml",
                          "workload: custom\nentrypoint: echo a\nsecrets:\n  HF_TOKEN: hf\n"},
         spec::SourceFile{"jobs/b.yaml", "workload: custom\nentrypoint: echo b\n"}});
  };
  const DesiredState node = desired("node");
  REQUIRE(node.jobs.size() == 2);
  const Plan plan = PlanActions(node, {}, {}, {});
  PlanView view{&plan, &node, nullptr, "c0ffee", {}};
  const std::string text = FormatPlanText(view);
  CHECK(text.find("Secrets expected in the Ray nodes' environment: HF_TOKEN, WANDB_API_KEY "
                  "(secret_delivery: node: Ray expands ${NAME} on each node from its "
                  "environment; ray-gitops sends no value)\n") != std::string::npos);
  const std::string markdown = FormatPlanMarkdown(view);
  CHECK(markdown.find("> **Secrets expected in the Ray nodes' environment:** `HF_TOKEN`, "
                      "`WANDB_API_KEY` (`secret_delivery: node`: Ray expands `${NAME}` on each "
                      "node from its environment; ray-gitops sends no value)\n") !=
        std::string::npos);
  // The submitted entrypoint's details show what is sent: ${NAME}, never a value.
  CHECK(markdown.find("runtime_env.env_vars.HF_TOKEN: ${HF_TOKEN}") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(FormatPlanJson(view));
  CHECK(j["node_secrets"] == nlohmann::json::array({"HF_TOKEN", "WANDB_API_KEY"}));

  const DesiredState env = desired("env");
  const Plan env_plan = PlanActions(env, {}, {}, {});
  PlanView env_view{&env_plan, &env, nullptr, "c0ffee", {}};
  CHECK(FormatPlanText(env_view).find("Secrets expected") == std::string::npos);
  CHECK(FormatPlanMarkdown(env_view).find("Secrets expected") == std::string::npos);
  CHECK(FormatPlanMarkdown(env_view).find("runtime_env.env_vars.HF_TOKEN: <secret:hf>") !=
        std::string::npos);
  CHECK(nlohmann::json::parse(FormatPlanJson(env_view))["node_secrets"] == nlohmann::json::array());
}

TEST_CASE("no value of a spec, a file name, Ray or the ledger can forge a line of the plan",
          "[plan_format][escape]") {
  for (const testing::HostileValue& v : testing::HostileValues()) {
    INFO(v.yaml);
    const std::string hostile_spec = "workload: custom\nentrypoint: \"echo " + v.yaml +
                                     "\"\nenv_vars:\n  NOTE: \"" + v.yaml + "\"\n";
    const DesiredState desired = spec::LoadDesiredState(
        spec::SourceFile{"cluster.yaml", "address: http://127.0.0.1:8265\n"},
        {spec::SourceFile{"jobs/a.yaml", hostile_spec},
         spec::SourceFile{"jobs/b.yaml", "workload: custom\nentrypoint: sleep 5\n"},
         spec::SourceFile{"jobs/c-" + v.value + ".yaml", hostile_spec},
         spec::SourceFile{"jobs/d.yaml", "workload: \"" + v.yaml + "\"\n"}});
    RayJob b = Running(desired.jobs[1]);
    b.message = v.value;
    Plan plan = PlanActions(desired, {b}, {}, {});
    plan.blocked = true;
    plan.blocked_reason = v.value;
    PlanView view{&plan, &desired, nullptr, v.value, {}};
    view.ledger_note = v.value;
    testing::CheckText(FormatPlanText(view));
    testing::CheckMarkdown(FormatPlanMarkdown(view), 5);
    const nlohmann::json j = nlohmann::json::parse(FormatPlanJson(view));
    CHECK(j["ledger_note"] == v.value);
  }
}

}  // namespace
}  // namespace rg::core
