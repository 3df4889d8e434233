// Hydra composition of a config folder and the check of a spec's Hydra keys against it: a
// small synthetic config tree written to a temp dir, hostile ones (fan-outs, cycles, entries
// and links that leave the folder), and verl 0.9.1's own config (the wheel that
// scripts/install-deps.sh unpacks).
#include "reconciler/spec/verl_config.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
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

// A reader that remembers every path it was asked for.
struct RecordingReader {
  ConfigReader read;
  std::shared_ptr<std::map<std::string, int>> asked =
      std::make_shared<std::map<std::string, int>>();

  ConfigReader Reader() const {
    return [read = read, asked = asked](const std::string& path) {
      ++(*asked)[path];
      return read(path);
    };
  }
};

// `file`.yaml listing `entry` `count` times, then `own` keys.
void WriteFanOut(const fs::path& file, const std::string& entry, int count,
                 const std::string& own) {
  std::string text = "defaults:\n";
  for (int i = 1; i <= count; ++i) {
    std::string item = entry;
    if (const size_t n = item.find("{n}"); n != std::string::npos) {
      item.replace(n, 3, std::to_string(i));
    }
    text += "  - " + item + "\n";
  }
  WriteFile(file, text + own);
}

TEST_CASE("a defaults list that fans out is read once per file and composed once per package") {
  const testing::TempDir tmp;
  WriteFanOut(tmp.dir() / "a.yaml", "b", 120, "top: 1\n");
  WriteFanOut(tmp.dir() / "b.yaml", "c", 120, "b: 1\n");
  WriteFanOut(tmp.dir() / "c.yaml", "group: d", 120, "c: 1\n");
  WriteFile(tmp.dir() / "group/d.yaml", "d: {x: 1}\n");
  const RecordingReader reader{DirectoryConfigReader(tmp.path())};
  const auto start = std::chrono::steady_clock::now();
  const ComposedConfig composed = ComposeHydraConfig(reader.Reader(), "a");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  WARN("three levels of 120 entries composed in " << ms << " ms");
  CHECK(ms < 10000);
  REQUIRE(composed.errors.empty());
  CHECK(KeyPaths(*composed.config) ==
        std::vector<std::string>{"b", "c", "group", "group.d", "group.d.x", "top"});
  CHECK(*reader.asked == std::map<std::string, int>{
                             {"a.yaml", 1}, {"b.yaml", 1}, {"c.yaml", 1}, {"group/d.yaml", 1}});
  CHECK(composed.cost.files_read == 4);
  CHECK(composed.cost.entries == 1 + 3 * 120);
  CHECK(composed.cost.depth == 4);
}

TEST_CASE("a fan-out that really is big stops at a bound, at the entry that crossed it") {
  const testing::TempDir tmp;
  // Every entry at a package of its own: 120^3 copies of d.yaml.
  WriteFanOut(tmp.dir() / "a.yaml", "b@b{n}", 120, "top: 1\n");
  WriteFanOut(tmp.dir() / "b.yaml", "c@c{n}", 120, "b: 1\n");
  WriteFanOut(tmp.dir() / "c.yaml", "d@d{n}", 120, "c: 1\n");
  WriteFile(tmp.dir() / "d.yaml", "d: 1\n");
  const ComposedConfig entries = ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "a");
  REQUIRE_FALSE(entries.config);
  REQUIRE(entries.errors.size() == 1);
  CHECK_THAT(
      entries.errors[0],
      Catch::Matches("c\\.yaml:[0-9]+:5: defaults entry \"d@d[0-9]+\": composing follows "
                     "more than 1000 defaults entries \\(a defaults list that fans out\\?\\)"));
  CHECK(entries.cost.entries == kMaxDefaultsEntries + 1);

  // Few entries, each large: the keys and values made are bounded too.
  std::string big;
  for (int i = 0; i < 5000; ++i) big += "k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  WriteFanOut(tmp.dir() / "wide.yaml", "big@p{n}", 60, "");
  WriteFile(tmp.dir() / "big.yaml", big);
  const ComposedConfig nodes = ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "wide");
  REQUIRE(nodes.errors.size() == 1);
  CHECK_THAT(nodes.errors[0],
             Catch::Matches("wide\\.yaml:[0-9]+:5: defaults entry \"big@p[0-9]+\": "
                            "composing makes more than 250000 keys and values or "
                            "4 MiB of them \\(a defaults list that fans out\\?\\)"));
  CHECK(nodes.cost.nodes < kMaxComposedNodes + 16);  // stops at once
}

TEST_CASE("a config folder reads each file once across compositions and keeps each one") {
  const testing::TempDir tmp;
  WriteSyntheticTree(tmp.dir());
  WriteFile(tmp.dir() / "broken.yaml", "defaults:\n  - plain\nkey: [\n");
  const RecordingReader reader{DirectoryConfigReader(tmp.path())};
  ConfigFolder folder(reader.Reader());
  const auto small = folder.Compose("primary");
  const auto big = folder.Compose("primary", {{"engine", "big"}});
  REQUIRE(small->config);
  REQUIRE(big->config);
  CHECK(folder.Compose("primary") == small);
  CHECK(small->choices.at("engine") == "small");
  CHECK(big->choices.at("engine") == "big");
  for (const auto& [path, count] : *reader.asked) {
    INFO(path);
    CHECK(count == 1);
  }
  CHECK(reader.asked->contains("actor/big_actor.yaml"));
  // A broken file is reported by every composition that reaches it, not only the first.
  const auto first = folder.Compose("broken");
  const auto again = ConfigFolder(reader.Reader()).Compose("broken");
  REQUIRE_FALSE(first->errors.empty());
  CHECK(first->errors == again->errors);
  CHECK(folder.Compose("broken", {{"x", "y"}})->errors == first->errors);
}

TEST_CASE("a cycle, a config that lists itself and a chain too deep are errors at the entry") {
  const testing::TempDir tmp;
  WriteFile(tmp.dir() / "a.yaml", "defaults:\n  - b\nx: 1\n");
  WriteFile(tmp.dir() / "b.yaml", "defaults:\n  - _self_\n  - grp@p: a\ny: 1\n");
  WriteFile(tmp.dir() / "grp/a.yaml", "defaults:\n  - /a\n");
  const ComposedConfig cycle = ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "a");
  REQUIRE_FALSE(cycle.errors.empty());
  CHECK(cycle.errors[0] ==
        "grp/a.yaml:2:5: defaults entry \"/a\": makes a cycle: a.yaml -> b.yaml -> grp/a.yaml -> "
        "a.yaml");

  WriteFile(tmp.dir() / "self.yaml", "defaults:\n  - ./self\nx: 1\n");
  const ComposedConfig self = ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "self");
  REQUIRE_FALSE(self.errors.empty());
  CHECK(self.errors[0] ==
        "self.yaml:2:5: defaults entry \"./self\": makes a cycle: self.yaml -> "
        "self.yaml");

  for (int i = 0; i < 100; ++i) {
    WriteFile(tmp.dir() / "chain" / ("c" + std::to_string(i) + ".yaml"),
              "defaults:\n  - c" + std::to_string(i + 1) + "\n");
  }
  const ComposedConfig deep = ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "chain/c0");
  REQUIRE(deep.errors.size() == 1);
  CHECK(deep.errors[0] ==
        "chain/c63.yaml:2:5: defaults entry \"c64\": the defaults lists nest "
        "more than 64 deep");
  CHECK(deep.cost.files_read == kMaxDefaultsDepth);
}

TEST_CASE("a failing entry composed many times keeps the errors few and short") {
  const testing::TempDir tmp;
  WriteFanOut(tmp.dir() / "a.yaml", "b@p{n}", 500, "");
  WriteFile(tmp.dir() / "b.yaml", "defaults:\n  - ../" + std::string(100000, 'x') + "\n");
  const ComposedConfig composed = ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "a");
  REQUIRE_FALSE(composed.errors.empty());
  CHECK(composed.errors.size() <= 20);
  CHECK(composed.errors[0].starts_with("b.yaml:2:5: defaults entry \"../xxx"));
  CHECK(composed.errors[0].size() < 100000 + 400);
  CHECK(composed.errors[0].find("x...\": ") != std::string::npos);
}

TEST_CASE("a package of more parts than the bound is an error at the entry") {
  const testing::TempDir tmp;
  std::string package = "p";
  for (int i = 0; i < kMaxPackageParts; ++i) package += ".p";
  WriteFile(tmp.dir() / "a.yaml", "defaults:\n  - b@" + package + "\n");
  WriteFile(tmp.dir() / "b.yaml", "x: 1\n");
  const ComposedConfig composed = ComposeHydraConfig(DirectoryConfigReader(tmp.path()), "a");
  REQUIRE(composed.errors.size() == 1);
  CHECK(composed.errors[0] ==
        "a.yaml:2:5: defaults entry \"b@" + package + "\": its package has more than 64 parts");
}

TEST_CASE("a config merged again from memory is merged as the entries say") {
  const testing::TempDir tmp;
  // s, then x replacing s's mapping by a value, then s again: the mapping is back. s also
  // writes at the top (_global_), which its second merge repeats.
  WriteFile(tmp.dir() / "a.yaml",
            "defaults:\n  - s@k\n  - x\n  - s@k\n  - grp@k: s\n  - _self_\nown: 1\n");
  WriteFile(tmp.dir() / "s.yaml", "defaults:\n  - g\n  - _self_\nm:\n  a: 1\n");
  WriteFile(tmp.dir() / "g.yaml", "# @package _global_\nglobal: {from_s: 1}\n");
  WriteFile(tmp.dir() / "x.yaml", "k: 5\nglobal: 7\n");
  WriteFile(tmp.dir() / "grp/s.yaml", "m:\n  b: 2\n");
  const RecordingReader reader{DirectoryConfigReader(tmp.path())};
  const ComposedConfig composed = ComposeHydraConfig(reader.Reader(), "a");
  REQUIRE(composed.errors.empty());
  CHECK(KeyPaths(*composed.config) ==
        std::vector<std::string>{"global", "global.from_s", "k", "k.m", "k.m.a", "k.m.b", "own"});
  CHECK(reader.asked->at("s.yaml") == 1);
  CHECK(composed.cost.entries == 6);
}

TEST_CASE("only paths inside the config folder are inside it") {
  CHECK(InsideConfigFolder("a.yaml") == "a.yaml");
  CHECK(InsideConfigFolder("actor/../optim/x.yaml") == "optim/x.yaml");
  CHECK(InsideConfigFolder("./a//b.yaml") == "a/b.yaml");
  CHECK_FALSE(InsideConfigFolder(""));
  CHECK_FALSE(InsideConfigFolder("."));
  CHECK_FALSE(InsideConfigFolder("a/.."));
  CHECK_FALSE(InsideConfigFolder("../a.yaml"));
  CHECK_FALSE(InsideConfigFolder("a/../../b.yaml"));
  CHECK_FALSE(InsideConfigFolder("/etc/passwd"));
  CHECK_FALSE(InsideConfigFolder(std::string_view("a\0/../../b", 10)));
}

// A config folder `cfg` beside a folder `outside` holding a config with a key the spec
// below sets: a composition that read it would accept the key.
void WriteOutside(const fs::path& root) {
  WriteFile(root / "outside/extra.yaml", "# @package _global_\nleaked: 1\n");
  WriteFile(root / "outside/grp/x.yaml", "# @package _global_\nleaked: 1\n");
  WriteFile(root / "cfg/grp/x.yaml", "inside: 1\n");
  WriteFile(root / "cfg/engine/dp.yaml", "engine: dp\n");
}

TEST_CASE("a defaults entry that leaves the config folder is an error and nothing is read") {
  struct Case {
    std::string entry;  // the first entry of top.yaml, before `engine: dp`
    std::string error;  // top.yaml's first error
  };
  const testing::TempDir tmp;
  WriteOutside(tmp.dir());
  const std::string outside = (tmp.dir() / "outside").string();
  const std::string out = " is outside the config folder; nothing is read";
  const std::string first = "top.yaml:2:5: defaults entry ";
  const std::vector<Case> cases = {
      {"../outside/extra", first + "\"../outside/extra\": ../outside/extra.yaml" + out},
      {"optional ../outside/extra",
       first + "\"optional ../outside/extra\": ../outside/extra.yaml" + out},
      {"grp/../../outside/extra",
       first + "\"grp/../../outside/extra\": ../outside/extra.yaml" + out},
      {"/" + outside + "/extra",
       first + "\"/" + outside + "/extra\": " + outside + "/extra.yaml" + out},
      {"grp: ../../outside/extra",
       first + "\"grp: ../../outside/extra\": ../outside/extra.yaml" + out},
      {"../outside/grp@p: x", first + "\"../outside/grp@p: x\": ../outside/grp/x.yaml" + out},
      // One leading '/' is Hydra's: the config folder's root, where there is no such file.
      {outside + "/extra", first + "\"" + outside + "/extra\": " + outside.substr(1) +
                               "/extra.yaml: no such config (a leading / names the config "
                               "folder, not the file system)"},
      // An override elsewhere picks the option of a later entry.
      {"override engine: ../../outside/extra",
       "top.yaml:3:5: defaults entry \"engine: dp\": ../outside/extra.yaml" + out},
  };
  for (const Case& c : cases) {
    INFO(c.entry);
    WriteFile(tmp.dir() / "cfg/top.yaml",
              "defaults:\n  - " + c.entry + "\n  - engine: dp\n  - _self_\nown: 1\n");
    const RecordingReader reader{DirectoryConfigReader((tmp.dir() / "cfg").string())};
    const ComposedConfig composed = ComposeHydraConfig(reader.Reader(), "top");
    REQUIRE_FALSE(composed.errors.empty());
    CHECK(composed.errors[0] == c.error);
    for (const auto& [path, count] : *reader.asked) CHECK(InsideConfigFolder(path) == path);
  }
  // A group option chosen from outside the defaults lists (a spec's `engine=...`) too.
  WriteFile(tmp.dir() / "cfg/top.yaml", "defaults:\n  - engine: dp\n");
  const ComposedConfig chosen =
      ComposeHydraConfig(DirectoryConfigReader((tmp.dir() / "cfg").string()), "top",
                         {{"engine", "../../outside/extra"}});
  REQUIRE_FALSE(chosen.errors.empty());
  CHECK(chosen.errors[0] == first + "\"engine: dp\": ../outside/extra.yaml" + out);
}

TEST_CASE("the directory reader reads nothing through a link that leads out of its folder") {
  const testing::TempDir tmp;
  WriteOutside(tmp.dir());
  const fs::path cfg = tmp.dir() / "cfg";
  fs::create_directory_symlink("../outside/grp", cfg / "linked_group");
  fs::create_symlink("../outside/extra.yaml", cfg / "linked_file.yaml");
  fs::create_directory_symlink("grp", cfg / "inside_group");
  fs::create_symlink("../outside/nothing.yaml", cfg / "dangling.yaml");
  const ConfigReader read = DirectoryConfigReader(cfg.string());
  CHECK(read("grp/x.yaml").value() == "inside: 1\n");
  CHECK(read("inside_group/x.yaml").value() == "inside: 1\n");
  CHECK(read("linked_group/x.yaml").error().message() ==
        "linked_group/x.yaml lies behind linked_group, a symbolic link that leads outside the "
        "config folder; nothing is read through it");
  CHECK(read("linked_file.yaml").error().message() ==
        "linked_file.yaml is a symbolic link that leads outside the config folder; nothing is "
        "read through it");
  CHECK(read("dangling.yaml").error().IsNotFound());
  CHECK(read("nothing.yaml").error().IsNotFound());
  CHECK(read("../outside/extra.yaml").error().message() ==
        "../outside/extra.yaml is outside the config folder; nothing is read");
  CHECK(read((tmp.dir() / "outside/extra.yaml").string()).error().IsInvalidInput());
  // What is not a regular file is not opened (a FIFO would block), a device behind a link is
  // outside, and no more of a file is read than the YAML parser takes.
  REQUIRE(::mkfifo((cfg / "fifo.yaml").c_str(), 0600) == 0);
  CHECK(read("fifo.yaml").error().IsNotFound());
  fs::create_symlink("/dev/zero", cfg / "zero.yaml");
  CHECK(read("zero.yaml").error().IsInvalidInput());
  WriteFile(cfg / "big.yaml", std::string(3 * kMaxSpecFileBytes, '#'));
  CHECK(read("big.yaml").value().size() == kMaxSpecFileBytes + 1);
  const ComposedConfig big = ComposeHydraConfig(read, "big");
  REQUIRE_FALSE(big.errors.empty());
  CHECK_THAT(big.errors[0], Catch::Contains("big.yaml") && Catch::Contains("too large"));

  // Composed: the error names the entry and the file.
  WriteFile(cfg / "top.yaml", "defaults:\n  - linked_group: x\n  - linked_file\n");
  const ComposedConfig composed = ComposeHydraConfig(read, "top");
  REQUIRE(composed.errors.size() == 2);
  CHECK(composed.errors[0] ==
        "top.yaml:2:5: defaults entry \"linked_group: x\": linked_group/x.yaml lies behind "
        "linked_group, a symbolic link that leads outside the config folder; nothing is read "
        "through it");
  CHECK(composed.errors[1] ==
        "top.yaml:3:5: defaults entry \"linked_file\": linked_file.yaml is a symbolic link that "
        "leads outside the config folder; nothing is read through it");
}

TEST_CASE("a config folder under review is read only when it lies inside the repository") {
  const testing::TempDir tmp;
  WriteOutside(tmp.dir());
  fs::create_directories(tmp.dir() / "repo/forks");
  fs::create_directory_symlink("../../cfg", tmp.dir() / "repo/forks/verl");
  fs::create_directory_symlink("../cfg", tmp.dir() / "repo/inside");
  const std::string repo = (tmp.dir() / "repo").string();
  // The folder as written is in the repository; where its link leads is not.
  const ConfigReader escaped = DirectoryConfigReader(repo + "/forks/verl", repo);
  CHECK(escaped("grp/x.yaml").error().message() == "the config folder " + repo +
                                                       "/forks/verl leads outside the repository " +
                                                       repo + "; nothing is read");
  // Without a repository around it (an operator's own verl), the folder is what it leads to.
  CHECK(DirectoryConfigReader(repo + "/forks/verl")("grp/x.yaml").value() == "inside: 1\n");
  fs::create_directories(tmp.dir() / "repo/real/grp");
  WriteFile(tmp.dir() / "repo/real/grp/x.yaml", "real: 1\n");
  CHECK(DirectoryConfigReader(repo + "/real", repo)("grp/x.yaml").value() == "real: 1\n");
}

TEST_CASE("a spec's group option outside the config folder is an error at its override") {
  const testing::TempDir tmp;
  WriteTrainerTree(tmp.dir() / "cfg");
  WriteFile(tmp.dir() / "outside.yaml", "# @package _global_\nmodel_engine: dp\n");
  const std::string text = "workload: ppo\nnnodes: 1\noverrides:\n  - model_engine=../../outside\n";
  const Parsed<core::JobSpec> spec = LoadJobSpec(text, "jobs/a.yaml");
  REQUIRE(spec.ok());
  const RecordingReader reader{DirectoryConfigReader((tmp.dir() / "cfg").string())};
  const std::vector<VerlKeyProblem> problems =
      CheckVerlKeys(*spec.value, text, false, reader.Reader());
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].diagnostic.ToString() ==
        "jobs/a.yaml:4:5: error: option \"../../outside\" of verl's config group \"model_engine\" "
        "is outside the config folder; nothing is read");
  for (const auto& [path, count] : *reader.asked) CHECK(InsideConfigFolder(path) == path);
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
  const auto rendered =
      core::RenderEntrypoint(*spec.value, cluster, "x-1234567890", "x-1234567890");
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

TEST_CASE("verl's own configs compose far inside the bounds") {
  ConfigFolder folder(DirectoryConfigReader(VerlDir()));
  for (const char* name : {"ppo_trainer", "ppo_megatron_trainer", "sft_trainer_engine"}) {
    for (const char* engine : {"dp", "megatron", "torchtitan", "veomni"}) {
      INFO(name << " with model_engine=" << engine);
      const std::map<std::string, std::string> choices =
          std::string(name) == "sft_trainer_engine"
              ? std::map<std::string, std::string>{}
              : std::map<std::string, std::string>{{"model_engine", engine}};
      const auto composed = folder.Compose(name, choices);
      REQUIRE(composed->errors.empty());
      const CompositionCost& cost = composed->cost;
      CHECK(cost.entries * 20 < kMaxDefaultsEntries);
      CHECK(cost.depth * 16 <= kMaxDefaultsDepth);
      CHECK(cost.nodes * 20 < kMaxComposedNodes);
      CHECK(cost.bytes * 20 < kMaxComposedBytes);
    }
  }
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
