#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/identity.h"
#include "reconciler/spec/loaded_job_spec.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/unit/spec/diagnostic_messages.h"

namespace rg::spec {
namespace {

const SourceFile kCluster{"cluster.yaml",
                          "address: http://127.0.0.1:8265\nshared_root: /private\n"};
const SourceFile kClusterWithoutSharedRoot{"cluster.yaml", "address: http://127.0.0.1:8265\n"};

std::vector<std::string> JobPaths(const core::DesiredState& state) {
  std::vector<std::string> out;
  for (const auto& job : state.jobs) out.push_back(job.path);
  return out;
}

const core::InvalidSpec& Invalid(const core::DesiredState& state, const std::string& path) {
  for (const auto& bad : state.invalid) {
    if (bad.path == path) return bad;
  }
  FAIL("no invalid spec " << path);
  return state.invalid.front();
}

TEST_CASE("valid and invalid specs are separated and sorted by path") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/z.yaml", "workload: custom\nentrypoint: echo z\n"},
                 {"jobs/b/broken.yaml", "workload: ppo\nnnodes: 0\nname: kept-name\n"},
                 {"jobs/a.yaml", "workload: custom\nentrypoint: echo a\n"},
                 {"jobs/a/broken.yaml", "workload: [\n"}});
  CHECK(state.ClusterValid());
  CHECK(state.cluster_diagnostics.empty());
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/a.yaml", "jobs/z.yaml"});
  REQUIRE(state.invalid.size() == 2);
  CHECK(state.invalid[0].path == "jobs/a/broken.yaml");
  CHECK(state.invalid[0].name == "a-broken");
  CHECK(state.invalid[1].path == "jobs/b/broken.yaml");
  CHECK(state.invalid[1].name == "kept-name");
  CHECK(Messages(state.invalid[1].diagnostics) ==
        std::vector<std::string>{
            "jobs/b/broken.yaml:2:9: error: nnodes must be an integer >= 1 (got 0)"});
}

TEST_CASE("a missing cluster file is one diagnostic, the specs are still loaded") {
  const core::DesiredState state =
      LoadDesiredState(std::nullopt, {{"jobs/a.yaml", "workload: custom\nentrypoint: echo\n"}});
  CHECK_FALSE(state.ClusterValid());
  CHECK(Messages(state.cluster_diagnostics) ==
        std::vector<std::string>{"cluster.yaml: error: file not found"});
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/a.yaml"});
}

TEST_CASE("a spec valid on its own stays valid when cluster.yaml is invalid") {
  const core::DesiredState state =
      LoadDesiredState(SourceFile{"cluster.yaml", "address: nowhere\n"},
                       {{"jobs/a.yaml", "workload: sft\nmodel_id: ${shared_root}/m\n"}});
  CHECK_FALSE(state.ClusterValid());
  CHECK(Messages(state.cluster_diagnostics) ==
        std::vector<std::string>{"cluster.yaml:1:10: error: address must be an http:// or "
                                 "https:// URL (got \"nowhere\")"});
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/a.yaml"});
  CHECK(state.invalid.empty());
}

TEST_CASE("specs sharing a name are all invalid, each naming the others") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/one.yaml", "workload: custom\nentrypoint: echo\nname: same\n"},
                 {"jobs/two.yaml", "name: same\nworkload: custom\nentrypoint: echo\n"},
                 {"jobs/three.yaml", "workload: custom\nentrypoint: echo\nname: same\n"},
                 {"jobs/other.yaml", "workload: custom\nentrypoint: echo\n"}});
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/other.yaml"});
  CHECK(Messages(Invalid(state, "jobs/one.yaml").diagnostics) ==
        std::vector<std::string>{"jobs/one.yaml:3:7: error: name \"same\" is also used by "
                                 "jobs/three.yaml, jobs/two.yaml"});
  CHECK(Messages(Invalid(state, "jobs/two.yaml").diagnostics) ==
        std::vector<std::string>{"jobs/two.yaml:1:7: error: name \"same\" is also used by "
                                 "jobs/one.yaml, jobs/three.yaml"});
  CHECK(Invalid(state, "jobs/three.yaml").name == "same");
}

TEST_CASE("a derived name that collides says it was derived") {
  const core::DesiredState state =
      LoadDesiredState(kCluster, {{"jobs/a-b.yaml", "workload: custom\nentrypoint: echo\n"},
                                  {"jobs/a/b.yml", "workload: custom\nentrypoint: echo\n"}});
  CHECK(state.jobs.empty());
  CHECK(Messages(Invalid(state, "jobs/a-b.yaml").diagnostics) ==
        std::vector<std::string>{"jobs/a-b.yaml:1:1: error: name \"a-b\" (derived from the path) "
                                 "is also used by jobs/a/b.yml"});
}

TEST_CASE("an invalid spec still owns its name: a valid spec with the same name is invalid") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/good.yaml", "workload: custom\nentrypoint: echo\nname: x\n"},
                 {"jobs/bad.yaml", "workload: custom\nname: x\n"}});
  CHECK(state.jobs.empty());
  CHECK(Messages(Invalid(state, "jobs/good.yaml").diagnostics) ==
        std::vector<std::string>{"jobs/good.yaml:3:7: error: name \"x\" is also used by "
                                 "jobs/bad.yaml"});
}

TEST_CASE("an invalid explicit name never names the record: the derived name stands in") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/team/dots.yaml", "workload: custom\nname: \"../x\"\nentrypoint: echo\n"},
                 {"jobs/team/slash.yaml", "workload: custom\nname: sub/dir\nentrypoint: echo\n"},
                 {"jobs/ok.yaml", "workload: custom\nentrypoint: echo\n"}});
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/ok.yaml"});
  REQUIRE(state.invalid.size() == 2);
  CHECK(Invalid(state, "jobs/team/dots.yaml").name == "team-dots");
  CHECK(Invalid(state, "jobs/team/slash.yaml").name == "team-slash");
  CHECK(Messages(Invalid(state, "jobs/team/dots.yaml").diagnostics) ==
        std::vector<std::string>{"jobs/team/dots.yaml:2:7: error: name must be 1 to 63 characters "
                                 "of [a-z0-9._-] starting and ending with a letter or digit (got "
                                 "\"../x\")"});
  CHECK(Messages(Invalid(state, "jobs/team/slash.yaml").diagnostics) ==
        std::vector<std::string>{"jobs/team/slash.yaml:2:7: error: name must be 1 to 63 "
                                 "characters of [a-z0-9._-] starting and ending with a letter or "
                                 "digit (got \"sub/dir\")"});
}

TEST_CASE("a record name made from the path stands in when the derived name is invalid too") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/Bad Name.yaml", "workload: custom\nname: ../x\nentrypoint: echo\n"},
                 {"jobs/Other Bad.yaml", "workload: custom\nentrypoint: echo\n"},
                 {"jobs/" + std::string(70, 'a') + ".yaml", "workload: custom\n"}});
  REQUIRE(state.invalid.size() == 3);
  std::vector<std::string> names;
  for (const auto& bad : state.invalid) {
    INFO(bad.path << " -> " << bad.name);
    CHECK(core::IsValidJobName(bad.name));
    CHECK(bad.name.starts_with("invalid-"));
    names.push_back(bad.name);
  }
  std::sort(names.begin(), names.end());
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  // The same path gives the same name on every load, so its record is found again.
  const core::DesiredState again = LoadDesiredState(
      kCluster, {{"jobs/Bad Name.yaml", "workload: custom\nname: ../x\nentrypoint: echo 2\n"}});
  CHECK(again.invalid.at(0).name == Invalid(state, "jobs/Bad Name.yaml").name);
  // Only the name's own error: "set name: explicitly" would be wrong where a name is set.
  CHECK(Invalid(state, "jobs/Bad Name.yaml").diagnostics.size() == 1);
}

TEST_CASE("a file whose explicit name is invalid still owns its derived name") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/a.yaml", "workload: custom\nname: A\nentrypoint: echo\n"},
                 {"jobs/b.yaml", "workload: custom\nname: a\nentrypoint: echo\n"}});
  CHECK(state.jobs.empty());
  CHECK(Messages(Invalid(state, "jobs/b.yaml").diagnostics) ==
        std::vector<std::string>{"jobs/b.yaml:2:7: error: name \"a\" is also used by jobs/a.yaml"});
}

TEST_CASE("specs pinning the same submission id are all invalid") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/a.yaml", "workload: custom\nentrypoint: echo\nsubmission_id: run-1\n"},
                 {"jobs/b.yaml", "workload: custom\nentrypoint: echo\nsubmission_id: run-1\n"},
                 {"jobs/c.yaml", "workload: custom\nentrypoint: echo\nsubmission_id: run-2\n"}});
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/c.yaml"});
  CHECK(Messages(Invalid(state, "jobs/a.yaml").diagnostics) ==
        std::vector<std::string>{
            "jobs/a.yaml:3:16: error: submission_id \"run-1\" is also pinned by jobs/b.yaml"});
  CHECK(Messages(Invalid(state, "jobs/b.yaml").diagnostics) ==
        std::vector<std::string>{
            "jobs/b.yaml:3:16: error: submission_id \"run-1\" is also pinned by jobs/a.yaml"});
}

TEST_CASE("${shared_root} anywhere in a spec needs a shared_root in cluster.yaml") {
  const std::vector<SourceFile> specs = {
      {"jobs/a.yaml",
       "workload: ppo\nmodel_id: m\noverrides:\n  - x=${shared_root}/y\n"
       "runtime_env:\n  working_dir: \"${shared_root}/wd\"\n"},
      {"jobs/b.yaml", "workload: ppo\nmodel_id: /abs/m\n"}};
  const core::DesiredState without = LoadDesiredState(kClusterWithoutSharedRoot, specs);
  CHECK(JobPaths(without) == std::vector<std::string>{"jobs/b.yaml"});
  CHECK(Messages(Invalid(without, "jobs/a.yaml").diagnostics) ==
        std::vector<std::string>{
            "jobs/a.yaml:4:5: error: ${shared_root} is used but cluster.yaml sets no shared_root",
            "jobs/a.yaml:6:16: error: ${shared_root} is used but cluster.yaml sets no "
            "shared_root"});

  const core::DesiredState with = LoadDesiredState(kCluster, specs);
  CHECK(JobPaths(with) == std::vector<std::string>{"jobs/a.yaml", "jobs/b.yaml"});
  CHECK(with.AllDiagnostics().empty());
}

TEST_CASE("spec paths are YAML files under the jobs folder, hidden ones left out") {
  CHECK(IsSpecPath("jobs/a.yaml", "jobs"));
  CHECK(IsSpecPath("jobs/deep/er/a.yml", "jobs"));
  CHECK(IsSpecPath("jobs/a.yaml", "jobs/"));
  CHECK(IsSpecPath("specs/a.yaml", "specs"));
  CHECK(IsSpecPath("a.yaml", ""));
  CHECK(IsSpecPath("a.yaml", "."));
  CHECK(IsSpecPath("jobs/a.yaml", "./jobs"));
  CHECK(IsSpecPath("./jobs/a.yaml", "jobs"));
  CHECK_FALSE(IsSpecPath("jobs/a.json", "jobs"));
  CHECK_FALSE(IsSpecPath("jobs/a.yaml.bak", "jobs"));
  CHECK_FALSE(IsSpecPath("jobsx/a.yaml", "jobs"));
  CHECK_FALSE(IsSpecPath("cluster.yaml", "jobs"));
  CHECK_FALSE(IsSpecPath("other/jobs/a.yaml", "jobs"));
  CHECK_FALSE(IsSpecPath("jobs/.drafts/a.yaml", "jobs"));
  CHECK_FALSE(IsSpecPath("jobs/.a.yaml", "jobs"));
  CHECK_FALSE(IsSpecPath("jobs", "jobs"));
  CHECK_FALSE(IsSpecPath("jobs/", "jobs"));
}

TEST_CASE("a directory is read recursively, hidden folders and other files skipped") {
  const std::string repo = std::string(RG_SOURCE_DIR) + "/tests/data/spec/valid-repo";
  const core::DesiredState state = LoadDesiredStateFromDirectory(repo);
  CHECK(state.AllDiagnostics().empty());
  REQUIRE(state.ClusterValid());
  CHECK(state.cluster->shared_root == "/private");
  CHECK(state.cluster->path == "cluster.yaml");
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/ppo/qwen.yaml", "jobs/smoke/hello.yml",
                                                    "jobs/smoke/nested/pinned.yaml"});
  CHECK(state.jobs[0].name == "ppo-qwen");
  CHECK(state.jobs[2].name == "pinned-smoke");
}

TEST_CASE("a directory read without documents gives the same specs, documents let go") {
  const std::string repo = std::string(RG_SOURCE_DIR) + "/tests/data/spec/valid-repo";
  const core::DesiredState whole = LoadDesiredStateFromDirectory(repo);
  const core::DesiredState lean =
      LoadDesiredStateFromDirectory(repo, "cluster.yaml", "jobs", /*keep_documents=*/false);
  REQUIRE(lean.jobs.size() == whole.jobs.size());
  REQUIRE_FALSE(whole.jobs.empty());
  for (size_t i = 0; i < lean.jobs.size(); ++i) {
    core::JobSpec expected = whole.jobs[i];
    CHECK(expected.document.is_object());
    CHECK(lean.jobs[i].document.is_null());
    expected.document = core::Value();
    CHECK(lean.jobs[i] == expected);  // positions, fields and hashes all kept
  }
}

TEST_CASE("a directory without its cluster file reports it under the name asked for") {
  const std::string repo = std::string(RG_SOURCE_DIR) + "/tests/data/spec/valid-repo";
  const core::DesiredState state = LoadDesiredStateFromDirectory(repo, "ray/cluster.yaml", "jobs");
  CHECK(Messages(state.cluster_diagnostics) ==
        std::vector<std::string>{"ray/cluster.yaml: error: file not found"});
  CHECK(state.jobs.size() == 3);
}

TEST_CASE("the broken fixture has one valid spec and every other file invalid") {
  const std::string repo = std::string(RG_SOURCE_DIR) + "/tests/data/broken";
  const core::DesiredState state = LoadDesiredStateFromDirectory(repo);
  CHECK(state.ClusterValid());
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/valid/ok.yaml"});
  CHECK(state.invalid.size() == 24);
  for (const auto& bad : state.invalid) {
    INFO(bad.path);
    CHECK_FALSE(bad.diagnostics.empty());
    CHECK_FALSE(bad.name.empty());
  }
}

}  // namespace
}  // namespace rg::spec

namespace rg::spec {
namespace {

// Two specs that share a name: the checks add a diagnostic to each.
std::vector<LoadedSpecFile> TwoFilesNamedTwin() {
  const std::string text = "name: twin\nworkload: custom\nentrypoint: echo twin\n";
  return {{"jobs/a.yaml", ParseSpecFileForDesiredState(text, "jobs/a.yaml", "jobs")},
          {"jobs/b.yaml", ParseSpecFileForDesiredState(text, "jobs/b.yaml", "jobs")}};
}

TEST_CASE("the checks across files never change a parsed spec that someone else holds") {
  const Parsed<core::RayConfig> cluster = LoadRayConfig(kCluster.content, kCluster.path);
  std::vector<LoadedSpecFile> files = TwoFilesNamedTwin();
  // A cache's copy: it must stay as parsed, valid, with no diagnostic of the set's.
  const std::vector<LoadedSpecFile> cached = files;

  const core::DesiredState state = CheckDesiredStateSet(cluster, "cluster.yaml", files);
  CHECK(state.jobs.empty());
  REQUIRE(state.invalid.size() == 2);
  for (const LoadedSpecFile& file : cached) {
    CHECK(file.loaded->parsed.diagnostics.empty());
    REQUIRE(file.loaded->parsed.value.has_value());
    CHECK(file.loaded->parsed.value->name == "twin");
  }
}

TEST_CASE("a parsed spec only the list holds is moved into the state, whole") {
  const Parsed<core::RayConfig> cluster = LoadRayConfig(kCluster.content, kCluster.path);
  const std::string text = "workload: custom\nentrypoint: echo solo\nenv_vars:\n  A: \"1\"\n";
  std::vector<LoadedSpecFile> files = {
      {"jobs/solo.yaml", ParseSpecFileForDesiredState(text, "jobs/solo.yaml", "jobs")}};
  const core::JobSpec expected = *files.front().loaded->parsed.value;

  const core::DesiredState moved = CheckDesiredStateSet(cluster, "cluster.yaml", std::move(files));
  REQUIRE(moved.jobs.size() == 1);
  CHECK(moved.jobs.front() == expected);  // moved or copied, the state holds the same spec
  CHECK(moved.jobs.front().env_vars.at("A") == "1");
}

}  // namespace
}  // namespace rg::spec
