#include "reconciler/core/state_diff.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reconciler/core/pipeline.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/unit/engine/hostile_values.h"

namespace rg::core {
namespace {

const char* const kCluster = "address: http://127.0.0.1:8265\nshared_root: /shared\n";

std::string Ppo(int steps, const std::string& extra = "") {
  return "workload: ppo\n"
         "code_path: ${shared_root}/code\n"
         "model_id: Qwen/Qwen2.5-0.5B-Instruct\n"
         "train_file: ${shared_root}/train.parquet\n"
         "val_file: ${shared_root}/test.parquet\n"
         "total_training_steps: " +
         std::to_string(steps) + "\n" + extra;
}

const char* const kHello = "workload: custom\nentrypoint: echo hello\n";

DesiredState Load(const std::string& cluster, const std::vector<spec::SourceFile>& specs) {
  return spec::LoadDesiredState(spec::SourceFile{"cluster.yaml", cluster}, specs);
}

const JobDiff& Find(const StateDiff& diff, const std::string& name) {
  for (const JobDiff& j : diff.jobs) {
    if (j.name == name) return j;
  }
  FAIL("no job " << name);
  return diff.jobs.front();
}

bool HasLine(const std::vector<DiffLine>& lines, char op, const std::string& text) {
  return std::ranges::any_of(lines,
                             [&](const DiffLine& l) { return l.op == op && l.text == text; });
}

TEST_CASE("a change upstream replaces the jobs downstream, saying why", "[state_diff]") {
  const auto repo = [](const std::string& a_entrypoint) {
    DesiredState state = Load(
        kCluster, {{"jobs/a.yaml", "workload: custom\nentrypoint: " + a_entrypoint + "\n"},
                   {"jobs/b.yaml", "workload: custom\nentrypoint: ls ${runs.a.dir}\nafter: [a]\n"},
                   {"jobs/c.yaml", "workload: custom\nentrypoint: echo c\n"}});
    BindDesiredState(state, "ray-gitops");
    return state;
  };
  const StateDiff diff = DiffStates(repo("echo 1"), repo("echo 2"), "ray-gitops");
  CHECK(Find(diff, "a").action == DiffAction::kReplace);
  const JobDiff& b = Find(diff, "b");
  CHECK(b.action == DiffAction::kReplace);
  CHECK(b.fields.empty());
  CHECK(b.reason.starts_with("a job it runs after changed (after: a) (spec hash "));
  CHECK(b.base_submission_id != b.head_submission_id);
  // Rendered with the variable as written (which run succeeds is known only then): no error.
  CHECK(b.render_error.empty());
  CHECK(Find(diff, "c").action == DiffAction::kUnchanged);
}

TEST_CASE("a diff names each job's action, its field change and its rendered change",
          "[state_diff]") {
  const DesiredState base =
      Load(kCluster, {{"jobs/ppo.yaml", Ppo(100)},
                      {"jobs/old.yaml", kHello},
                      {"jobs/same.yaml", "workload: custom\nentrypoint: python serve.py\n"}});
  const DesiredState head =
      Load(std::string(kCluster) + "entrypoint_num_gpus: 1\n",
           {{"jobs/ppo.yaml", Ppo(200)},
            {"jobs/new.yaml", kHello},
            {"jobs/same.yaml", "workload: custom\nentrypoint: python serve.py\n"}});
  const StateDiff diff = DiffStates(base, head, "ray-gitops");
  CHECK(diff.RunsChange());
  CHECK_FALSE(diff.HasErrors());

  const JobDiff& ppo = Find(diff, "ppo");
  CHECK(ppo.action == DiffAction::kReplace);
  REQUIRE(ppo.fields.size() == 1);
  CHECK(FormatFieldChange(ppo.fields[0]) == "total_training_steps: 100 -> 200");
  CHECK(HasLine(ppo.rendered, '+', "trainer.total_training_steps=200"));
  CHECK(HasLine(ppo.rendered, '-', "trainer.total_training_steps=100"));
  CHECK(HasLine(RenderedChanges(ppo), '+', "entrypoint_num_gpus: 1"));
  CHECK(ppo.base_submission_id != ppo.head_submission_id);

  CHECK(Find(diff, "new").action == DiffAction::kSubmit);
  CHECK(Find(diff, "old").action == DiffAction::kStop);
  const JobDiff& same = Find(diff, "same");
  CHECK(same.action == DiffAction::kUnchanged);
  CHECK(same.reached_by_cluster);
  CHECK(diff.cluster.fields.size() == 1);
  CHECK(diff.cluster.reached == std::vector<std::string>{"new", "ppo", "same"});

  const std::string text = FormatDiffText(diff);
  CHECK(text.find("1 to submit, 1 to replace, 1 to stop if active, 1 unchanged") !=
        std::string::npos);
  CHECK(text.find("total_training_steps: 100 -> 200") != std::string::npos);
  CHECK(text.find("+ trainer.total_training_steps=200") != std::string::npos);
  CHECK(text.find("entrypoint_num_gpus: (unset) -> 1") != std::string::npos);
  // Metadata never shows: it changes with every run and says nothing about what it does.
  CHECK(text.find("gitops.") == std::string::npos);
}

TEST_CASE("an annotations or retries change keeps the run", "[state_diff]") {
  const DesiredState base = Load(kCluster, {{"jobs/ppo.yaml", Ppo(100)}});
  const DesiredState head =
      Load(kCluster, {{"jobs/ppo.yaml", Ppo(100, "retries: 2\nannotations:\n  owner: bob\n")}});
  const StateDiff diff = DiffStates(base, head, "ray-gitops");
  CHECK_FALSE(diff.RunsChange());
  const JobDiff& ppo = Find(diff, "ppo");
  CHECK(ppo.action == DiffAction::kUnchanged);
  CHECK(ppo.reason == "only annotations, retries changed: the run is kept");
  CHECK_FALSE(HasChanges(ppo.rendered));
  CHECK(ppo.base_submission_id == ppo.head_submission_id);
}

TEST_CASE("suspend, resume, on_remove keep and a rename have their own actions", "[state_diff]") {
  const DesiredState base =
      Load(kCluster, {{"jobs/a.yaml", kHello},
                      {"jobs/b.yaml", "workload: custom\nentrypoint: b\nsuspend: true\n"},
                      {"jobs/c.yaml", "workload: custom\nentrypoint: c\non_remove: keep\n"},
                      {"jobs/d.yaml", "workload: custom\nentrypoint: d\n"}});
  const DesiredState head =
      Load(kCluster, {{"jobs/a.yaml", std::string(kHello) + "suspend: true\n"},
                      {"jobs/b.yaml", "workload: custom\nentrypoint: b\n"},
                      {"jobs/e.yaml", "workload: custom\nentrypoint: d\n"}});
  const StateDiff diff = DiffStates(base, head, "ray-gitops");
  CHECK(Find(diff, "a").action == DiffAction::kStop);
  CHECK(Find(diff, "b").action == DiffAction::kSubmit);
  CHECK(Find(diff, "b").reason == "resumed (suspend: true -> false)");
  CHECK(Find(diff, "c").action == DiffAction::kUnchanged);
  CHECK(Find(diff, "d").action == DiffAction::kStop);
  CHECK(Find(diff, "d").reason.find("renamed to e") != std::string::npos);
  CHECK(Find(diff, "e").action == DiffAction::kSubmit);
  CHECK(Find(diff, "e").reason.find("renamed from d") != std::string::npos);
}

TEST_CASE("an invalid spec at HEAD is an error and freezes only its job", "[state_diff]") {
  const DesiredState base = Load(kCluster, {{"jobs/a.yaml", kHello}, {"jobs/b.yaml", kHello}});
  const DesiredState head = Load(
      kCluster, {{"jobs/a.yaml", "workload: custom\nentrypont: x\n"}, {"jobs/b.yaml", kHello}});
  const StateDiff diff = DiffStates(base, head, "ray-gitops");
  CHECK(diff.HasErrors());
  const JobDiff& a = Find(diff, "a");
  CHECK(a.action == DiffAction::kInvalid);
  REQUIRE_FALSE(a.diagnostics.empty());
  CHECK(a.diagnostics[0].path == "jobs/a.yaml");
  CHECK(FormatDiffText(diff).find("jobs/a.yaml:2:1") != std::string::npos);
  CHECK(Find(diff, "b").action == DiffAction::kUnchanged);
}

TEST_CASE("markdown: a summary line, a table and one details block per changed job",
          "[state_diff]") {
  const DesiredState base = Load(kCluster, {{"jobs/ppo.yaml", Ppo(100)}});
  const DesiredState head = Load(kCluster, {{"jobs/ppo.yaml", Ppo(200)}, {"jobs/n.yaml", kHello}});
  StateDiff diff = DiffStates(base, head, "ray-gitops");
  diff.base_label = "main";
  diff.head_label = "working tree";
  const std::string md = FormatDiffMarkdown(diff);
  CHECK(md.find("### ray-gitops diff `main` → `working tree`") == 0);
  CHECK(md.find("**Runs change:** 1 to submit, 1 to replace, 0 to stop if active, 0 unchanged.") !=
        std::string::npos);
  CHECK(md.find("| replace | ppo |") != std::string::npos);
  CHECK(md.find("<details><summary>replace <code>ppo</code></summary>") != std::string::npos);
  CHECK(md.find("```diff\n") != std::string::npos);
  CHECK(md.find("+ trainer.total_training_steps=200\n") != std::string::npos);
}

TEST_CASE("json: versioned, every job with its action, fields and rendered lines", "[state_diff]") {
  const DesiredState base = Load(kCluster, {{"jobs/ppo.yaml", Ppo(100)}});
  const DesiredState head = Load(kCluster, {{"jobs/ppo.yaml", Ppo(200)}});
  const nlohmann::json j = nlohmann::json::parse(FormatDiffJson(DiffStates(base, head, "x")));
  CHECK(j["format_version"] == kDiffFormatVersion);
  CHECK(j["summary"]["replace"] == 1);
  CHECK(j["summary"]["runs_change"] == true);
  REQUIRE(j["jobs"].size() == 1);
  CHECK(j["jobs"][0]["action"] == "replace");
  CHECK(j["jobs"][0]["fields"][0]["before"] == "100");
  CHECK(j["jobs"][0]["fields"][0]["after"] == "200");
  bool added = false;
  for (const auto& line : j["jobs"][0]["rendered"]) {
    added = added || (line["op"] == "+" && line["text"] == "trainer.total_training_steps=200");
  }
  CHECK(added);
}

TEST_CASE("secret env values never reach the rendered diff", "[state_diff]") {
  const std::string base_spec =
      std::string(kHello) + "runtime_env:\n  env_vars:\n    WANDB_API_KEY: oldsecretvalue1\n";
  const std::string head_spec =
      std::string(kHello) + "runtime_env:\n  env_vars:\n    WANDB_API_KEY: newsecretvalue2\n";
  const StateDiff diff = DiffStates(Load(kCluster, {{"jobs/a.yaml", base_spec}}),
                                    Load(kCluster, {{"jobs/a.yaml", head_spec}}), "ray-gitops");
  const std::string text = FormatDiffText(diff);
  CHECK(text.find("newsecretvalue2") == std::string::npos);
  CHECK(text.find("oldsecretvalue1") == std::string::npos);
}

TEST_CASE("a changed secret reference is shown as name: old -> new, in fields and render",
          "[state_diff][secrets]") {
  const auto spec = [](const std::string& reference) {
    return std::string(kHello) + "secrets:\n  WANDB_API_KEY: " + reference + "\n";
  };
  const StateDiff diff =
      DiffStates(Load(kCluster, {{"jobs/a.yaml", spec("wandb-key")}}),
                 Load(kCluster, {{"jobs/a.yaml", spec("wandb-key-2")}}), "ray-gitops");
  const JobDiff& a = Find(diff, "a");
  CHECK(a.action == DiffAction::kReplace);
  REQUIRE(a.fields.size() == 1);
  CHECK(FormatFieldChange(a.fields[0]) == "secrets.WANDB_API_KEY: wandb-key -> wandb-key-2");
  CHECK(HasLine(a.rendered, '-', "runtime_env.env_vars.WANDB_API_KEY: <secret:wandb-key>"));
  CHECK(HasLine(a.rendered, '+', "runtime_env.env_vars.WANDB_API_KEY: <secret:wandb-key-2>"));
  for (const std::string& out :
       {FormatDiffText(diff), FormatDiffMarkdown(diff), FormatDiffJson(diff)}) {
    CHECK(out.find("wandb-key -> wandb-key-2") != std::string::npos);
    CHECK(out.find("<redacted>") == std::string::npos);
  }
}

TEST_CASE(
    "cluster.yaml's secrets and secret_delivery are cluster changes reaching the next "
    "submission, never a restart",
    "[state_diff][secrets]") {
  const std::string job = std::string(kHello) + "secrets:\n  HF_TOKEN: hf-read\n";
  const std::string other = "workload: custom\nentrypoint: echo other\n";
  const DesiredState base = Load(std::string(kCluster) + "secrets:\n  WANDB_API_KEY: wandb-team\n",
                                 {{"jobs/a.yaml", job}, {"jobs/b.yaml", other}});
  const DesiredState head = Load(std::string(kCluster) +
                                     "secrets:\n  WANDB_API_KEY: wandb-team-2\n"
                                     "secret_delivery: node\n",
                                 {{"jobs/a.yaml", job}, {"jobs/b.yaml", other}});
  const StateDiff diff = DiffStates(base, head, "ray-gitops");
  std::vector<std::string> fields;
  for (const FieldChange& f : diff.cluster.fields) fields.push_back(FormatFieldChange(f));
  CHECK(fields == std::vector<std::string>{"secret_delivery: (unset) -> node",
                                           "secrets.WANDB_API_KEY: wandb-team -> wandb-team-2"});
  // Every job gets the cluster's secrets: both are reached, neither restarts.
  CHECK(diff.cluster.reached == std::vector<std::string>{"a", "b"});
  for (const JobDiff& j : diff.jobs) {
    CHECK(j.action == DiffAction::kUnchanged);
    CHECK(j.reached_by_cluster);
  }
  const JobDiff& a = Find(diff, "a");
  CHECK(HasLine(a.rendered, '-', "runtime_env.env_vars.HF_TOKEN: <secret:hf-read>"));
  CHECK(HasLine(a.rendered, '+', "runtime_env.env_vars.HF_TOKEN: ${HF_TOKEN}"));
  CHECK(HasLine(a.rendered, '+', "runtime_env.env_vars.WANDB_API_KEY: ${WANDB_API_KEY}"));
}

// A spec whose every shown value is `yaml` (a YAML double-quoted scalar's text).
std::string HostileSpec(const std::string& yaml) {
  return "workload: custom\nentrypoint: \"echo " + yaml + "\"\nenv_vars:\n  NOTE: \"" + yaml +
         "\"\nannotations:\n  note: \"" + yaml + "\"\n";
}

TEST_CASE("no value of a spec, a file name or a label can forge a line of the diff",
          "[state_diff][escape]") {
  for (const testing::HostileValue& v : testing::HostileValues()) {
    INFO(v.yaml);
    const DesiredState base = Load(kCluster, {{"jobs/a.yaml", HostileSpec("old")}});
    const DesiredState head =
        Load(kCluster, {{"jobs/a.yaml", HostileSpec(v.yaml)},
                        {"jobs/n.yaml", HostileSpec(v.yaml)},
                        {"jobs/bad-" + v.value + ".yaml", "workload: \"" + v.yaml + "\"\n"},
                        {"jobs/worse.yaml", "workload: custom\nentrypoint: \"" + v.yaml + "\"\n\"" +
                                                v.yaml + "\": 1\n"}});
    StateDiff diff = DiffStates(base, head, "ray-gitops");
    REQUIRE(diff.RunsChange());
    diff.base_label = v.value;
    diff.head_label = v.value + " (0123456789)";
    const std::string text = FormatDiffText(diff);
    testing::CheckText(text);
    if (v.value.find('\x1b') != std::string::npos) CHECK(text.find("\\x1b") != std::string::npos);
    testing::CheckMarkdown(FormatDiffMarkdown(diff), 5);
    // JSON holds the exact values.
    const nlohmann::json j = nlohmann::json::parse(FormatDiffJson(diff));
    CHECK(j["base"] == v.value);
  }
}

}  // namespace
}  // namespace rg::core
