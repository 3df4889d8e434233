// Hydra composition of a config folder and the check of a spec's Hydra keys against it: a
// small synthetic config tree written to a temp dir, and verl 0.9.1's own config (the wheel
// that scripts/install-deps.sh unpacks).
#include "reconciler/spec/verl_config.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "reconciler/core/render.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/support/test_files.h"

namespace rg::spec {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A primary config with every kind of defaults entry verl uses.
void WriteSyntheticTree(const fs::path& root) {
  WriteFile(root / "primary.yaml",
            "defaults:\n"
            "  - engine: small\n"
            "  - actor@roles.actor: ${engine}_actor\n"
            "  - order@ordered: self_first\n"
            "  - plain\n"
            "  - optional missing@gone: nothing\n"
            "  - skipped@never: null\n"
            "  - _self_\n"
            "top: 1\n"
            "roles:\n"
            "  actor:\n"
            "    lr: 0.5\n"
            "open_map: {}\n"
            "nothing: null\n");
  WriteFile(root / "engine/small.yaml", "# @package _global_\nengine: small\n");
  WriteFile(root / "engine/big.yaml", "# @package _global_\nengine: big\n");
  WriteFile(root / "actor/small_actor.yaml",
            "defaults:\n  - ../optim@optim: adam\n  - base\n  - _self_\nstrategy: small\n");
  WriteFile(root / "actor/big_actor.yaml", "defaults:\n  - base\nstrategy: big\nbig_only: true\n");
  WriteFile(root / "actor/base.yaml", "lr: 0.1\nstrategy: base\nclip: 1.0\n");
  WriteFile(root / "optim/adam.yaml", "betas: [0.9, 0.99]\neps: 1.0e-8\n");
  WriteFile(root / "order/self_first.yaml", "defaults:\n  - _self_\n  - base\nstrategy: mine\n");
  WriteFile(root / "order/base.yaml", "strategy: base\nfrom_base: 1\n");
  WriteFile(root / "plain.yaml", "extra:\n  a: 1\n");
}

const core::Value& At(const core::Value& config, const std::vector<std::string>& path) {
  const core::Value* node = &config;
  for (const std::string& key : path) {
    node = node->Find(key);
    REQUIRE(node != nullptr);
  }
  return *node;
}

std::string Check(const core::Value& config, const std::string& text) {
  return CheckOverride(config, ParseHydraOverride(text), "the config").value_or("ok");
}

TEST_CASE("composes the defaults tree: packages, relative groups, interpolation, _self_") {
  const testing::TempDir tmp;
  WriteSyntheticTree(tmp.dir());
  const ComposedConfig composed = ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "primary");
  REQUIRE(composed.errors.empty());
  const core::Value& config = *composed.config;
  CHECK(KeyPaths(config) ==
        std::vector<std::string>{"engine", "extra", "extra.a", "nothing", "open_map", "ordered",
                                 "ordered.from_base", "ordered.strategy", "roles", "roles.actor",
                                 "roles.actor.clip", "roles.actor.lr", "roles.actor.optim",
                                 "roles.actor.optim.betas", "roles.actor.optim.eps",
                                 "roles.actor.strategy", "top"});
  // _self_ after `base` wins over it; _self_ first loses to it; the primary wins over all.
  CHECK(At(config, {"roles", "actor", "strategy"}).as_string() == "small");
  CHECK(At(config, {"ordered", "strategy"}).as_string() == "base");
  CHECK(At(config, {"roles", "actor", "lr"}).as_double() == 0.5);
  CHECK(composed.choices.at("engine") == "small");
  CHECK(composed.choices.at("actor@roles.actor") == "small_actor");
  CHECK(composed.choices.at("optim@roles.actor.optim") == "adam");
}

TEST_CASE("a chosen option replaces the default one, interpolations included") {
  const testing::TempDir tmp;
  WriteSyntheticTree(tmp.dir());
  const ComposedConfig composed =
      ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "primary", {{"engine", "big"}});
  REQUIRE(composed.errors.empty());
  CHECK(At(*composed.config, {"engine"}).as_string() == "big");
  CHECK(At(*composed.config, {"roles", "actor", "big_only"}).as_bool());
  CHECK(composed.config->Find("roles")->Find("actor")->Find("optim") == nullptr);
}

TEST_CASE("a missing config, a broken defaults entry and an unknown interpolation are errors") {
  const testing::TempDir tmp;
  WriteSyntheticTree(tmp.dir());
  const ConfigReader read = DirectoryConfigReader(tmp.path());
  const ComposedConfig absent = ComposeHydraConfig(read, "nope");
  REQUIRE(absent.errors.size() == 1);
  CHECK(absent.errors[0] == "nope.yaml: no such config");
  CHECK_FALSE(absent.config);

  WriteFile(tmp.dir() / "bad.yaml", "defaults:\n  - actor@x: ${nobody}_actor\n");
  const ComposedConfig bad = ComposeHydraConfig(read, "bad");
  REQUIRE_FALSE(bad.errors.empty());
  CHECK(bad.errors[0] == "defaults: ${nobody} names no group chosen before it");

  WriteFile(tmp.dir() / "missing_option.yaml", "defaults:\n  - engine: huge\n");
  const ComposedConfig missing = ComposeHydraConfig(read, "missing_option");
  REQUIRE_FALSE(missing.errors.empty());
  CHECK(missing.errors[0] == "engine/huge.yaml: no such config");
}

TEST_CASE("overrides follow Hydra's rules for key=, +key=, ++key= and ~key") {
  const testing::TempDir tmp;
  WriteSyntheticTree(tmp.dir());
  const ComposedConfig composed = ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "primary");
  REQUIRE(composed.config);
  const core::Value& config = *composed.config;
  CHECK(Check(config, "roles.actor.lr=1") == "ok");
  CHECK(Check(config, "roles.actor.lrr=1") ==
        "unknown key \"roles.actor.lrr\" in the config (did you mean \"roles.actor.lr\"?)");
  CHECK(Check(config, "+roles.actor.lr=1") ==
        "+roles.actor.lr adds a key, but the config already has \"roles.actor.lr\" (write "
        "roles.actor.lr=... to set it)");
  CHECK(Check(config, "+roles.actor.new_key=1") == "ok");
  CHECK(Check(config, "++roles.actor.lr=1") == "ok");
  CHECK(Check(config, "++roles.actor.new_key=1") == "ok");
  CHECK(Check(config, "~roles.actor.clip") == "ok");
  CHECK(Check(config, "~roles.actor.clip=1.0") == "ok");
  CHECK(Check(config, "~roles.actor.clipp") ==
        "unknown key \"roles.actor.clipp\" in the config (did you mean \"roles.actor.clip\"?)");
  CHECK(Check(config, "roles.actor.optim.betas.1=0.9") == "ok");
  CHECK(Check(config, "roles.actor.optim.betas.2=0.9") != "ok");
}

TEST_CASE("keys under an empty mapping or a null value must be added with +") {
  const testing::TempDir tmp;
  WriteSyntheticTree(tmp.dir());
  const ComposedConfig composed = ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "primary");
  REQUIRE(composed.config);
  const core::Value& config = *composed.config;
  CHECK(Check(config, "open_map.anything=1") ==
        "unknown key \"open_map.anything\" in the config (+open_map.anything=... adds a key it "
        "does not define)");
  CHECK(Check(config, "+open_map.anything=1") == "ok");
  CHECK(Check(config, "+nothing.deep.key=1") == "ok");
  CHECK(Check(config, "+top.below=1") ==
        "cannot add \"top.below\": \"top\" is a value in the config, not a mapping");
  CHECK(Check(config, "++top.below=1") != "ok");
}

// A ppo_trainer and sft_trainer_engine folder small enough to read at a glance.
void WriteTrainerTree(const fs::path& root) {
  WriteFile(root / "ppo_trainer.yaml",
            "defaults:\n  - model_engine: dp\n  - _self_\n"
            "data:\n  train_files: x\n  val_files: y\n  prompt_key: prompt\n"
            "actor_rollout_ref:\n  model:\n    path: m\n"
            "trainer:\n  nnodes: 1\n  experiment_name: e\n  default_local_dir: d\n");
  WriteFile(root / "model_engine/dp.yaml", "# @package _global_\nmodel_engine: dp\n");
  WriteFile(root / "model_engine/megatron.yaml", "# @package _global_\nmodel_engine: megatron\n");
}

constexpr const char* kPpoSpec =
    "workload: ppo\n"
    "model_id: Qwen/Qwen2.5-0.5B\n"
    "train_file: /data/train.parquet\n"
    "nnodes: 1\n"
    "overrides:\n"
    "  - data.prompt_key=question\n"
    "  - data.prompt_keyy=question\n"
    "  - model_engine=megatron\n"
    "  - model_engine@x=dp\n";

TEST_CASE("each unknown key is reported at the field or override that sets it") {
  const testing::TempDir tmp;
  WriteTrainerTree(tmp.dir());
  const Parsed<core::JobSpec> spec = LoadJobSpec(kPpoSpec, "jobs/ppo/x.yaml");
  REQUIRE(spec.ok());
  const std::vector<VerlKeyProblem> problems =
      CheckVerlKeys(*spec.value, kPpoSpec, true, DirectoryConfigReader(tmp.path()));
  REQUIRE(problems.size() == 3);
  // The critic's model.path comes from model_id: reported there.
  CHECK(problems[0].diagnostic.ToString() ==
        "jobs/ppo/x.yaml:2:1: error: unknown key \"critic.model.path\" in verl's ppo_trainer "
        "config (+critic.model.path=... adds a key it does not define)");
  CHECK(problems[0].field == "model_id");
  CHECK(problems[1].diagnostic.ToString() ==
        "jobs/ppo/x.yaml:7:5: error: unknown key \"data.prompt_keyy\" in verl's ppo_trainer "
        "config (did you mean \"data.prompt_key\"?)");
  CHECK(problems[1].field == "overrides[1]");
  CHECK(problems[2].diagnostic.ToString() ==
        "jobs/ppo/x.yaml:9:5: error: verl has no config group \"model_engine@x\"");
  CHECK(problems[2].field == "overrides[3]");
}

TEST_CASE("a group override must name an option verl ships") {
  const testing::TempDir tmp;
  WriteTrainerTree(tmp.dir());
  const std::string text =
      "workload: ppo\nnnodes: 1\noverrides:\n  - model_engine=tpu\n  - +data.new_key=1\n";
  const Parsed<core::JobSpec> spec = LoadJobSpec(text, "jobs/a.yaml");
  REQUIRE(spec.ok());
  const std::vector<VerlKeyProblem> problems =
      CheckVerlKeys(*spec.value, text, false, DirectoryConfigReader(tmp.path()));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].diagnostic.ToString() ==
        "jobs/a.yaml:4:5: error: verl's config group \"model_engine\" has no option \"tpu\"");
}

TEST_CASE("a config folder without the workload's config is one error for the whole spec") {
  const testing::TempDir tmp;
  WriteTrainerTree(tmp.dir());
  const std::string text = "workload: sft\nnnodes: 1\n";
  const Parsed<core::JobSpec> spec = LoadJobSpec(text, "jobs/s.yaml");
  REQUIRE(spec.ok());
  const std::vector<VerlKeyProblem> problems =
      CheckVerlKeys(*spec.value, text, false, DirectoryConfigReader(tmp.path()));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].diagnostic.ToString() ==
        "jobs/s.yaml: error: cannot compose verl's sft_trainer_engine config: "
        "sft_trainer_engine.yaml: no such config");
}

// The keys of the rendered entrypoint, in order ("python3 -m module" left out).
std::vector<std::string> EntrypointKeys(const std::string& entrypoint) {
  std::istringstream words(entrypoint);
  std::vector<std::string> keys;
  std::string word;
  for (int skip = 0; skip < 3; ++skip) words >> word;
  while (words >> word) keys.push_back(word.substr(0, word.find('=')) + "=");
  return keys;
}

TEST_CASE("the rendered keys are those of the rendered entrypoint, in its order") {
  const std::string workload = GENERATE("ppo", "grpo", "sft");
  const std::string text = "workload: " + workload +
                           "\nmodel_id: m\ntrain_file: t\nval_file: v\nnnodes: 1\n"
                           "n_gpus_per_node: 2\ntotal_training_steps: 3\nsave_freq: 4\n"
                           "test_freq: 5\noverrides:\n  - data.max_length=9\n";
  const Parsed<core::JobSpec> spec = LoadJobSpec(text, "jobs/x.yaml");
  REQUIRE(spec.ok());
  core::RayConfig cluster;
  cluster.shared_root = "/shared";
  const auto rendered = core::RenderEntrypoint(*spec.value, cluster, "x-1234567890");
  REQUIRE(rendered.ok());
  std::vector<std::string> ours;
  for (const RenderedKey& key : RenderedVerlKeys(*spec.value, text, true)) {
    ours.push_back(key.text.substr(0, key.text.find('=')) + "=");
  }
  CHECK(ours == EntrypointKeys(*rendered));
}

#ifdef RG_VERL_CONFIG_DIR
// verl 0.9.1's config folder as shipped in its wheel.
std::string VerlDir() { return RG_VERL_CONFIG_DIR; }

TEST_CASE("ppo_trainer composes to the keys of verl's own _generated_ppo_trainer.yaml") {
  INFO("verl's config folder, unpacked by scripts/install-deps.sh: " << VerlDir());
  REQUIRE(fs::is_regular_file(VerlDir() + "/ppo_trainer.yaml"));
  const ComposedConfig composed =
      ComposeHydraConfig(DirectoryConfigReader(VerlDir()), "ppo_trainer");
  REQUIRE(composed.errors.empty());
  const ComposedConfig generated =
      ComposeHydraConfig(DirectoryConfigReader(VerlDir()), "_generated_ppo_trainer");
  REQUIRE(generated.errors.empty());
  std::vector<std::string> ours = KeyPaths(*composed.config);
  // The one deliberate difference: model_engine/dp.yaml (@package _global_) writes
  // `model_engine: dp` at the top, which verl's generator leaves out of its printout.
  CHECK(std::erase(ours, "model_engine") == 1);
  CHECK(ours == KeyPaths(*generated.config));
}

TEST_CASE("sft_trainer_engine has messages_key and no prompt_key") {
  INFO("verl's config folder, unpacked by scripts/install-deps.sh: " << VerlDir());
  REQUIRE(fs::is_regular_file(VerlDir() + "/sft_trainer_engine.yaml"));
  const ComposedConfig composed =
      ComposeHydraConfig(DirectoryConfigReader(VerlDir()), "sft_trainer_engine");
  REQUIRE(composed.errors.empty());
  const std::vector<std::string> keys = KeyPaths(*composed.config);
  const std::set<std::string> key_set(keys.begin(), keys.end());
  CHECK(key_set.contains("data.messages_key"));
  CHECK(key_set.contains("model.path"));
  CHECK(key_set.contains("optim.lr"));
  CHECK_FALSE(key_set.contains("data.prompt_key"));
}
#endif

}  // namespace
}  // namespace rg::spec
