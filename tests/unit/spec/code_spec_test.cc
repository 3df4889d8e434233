// `code`, `code_ref` and cluster.yaml's code_max_bytes as the loader reads them, and the part
// a code folder's tree takes in a spec's identity and rendering (docs/jobspec.md, "Code from
// the repository").
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/code_package.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/render.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/unit/spec/diagnostic_messages.h"

namespace rg::spec {
namespace {

std::vector<std::string> ErrorsOf(const std::string& text) {
  return Messages(LoadJobSpec(text, "jobs/t.yaml", "jobs").diagnostics);
}

bool HasError(const std::vector<std::string>& errors, const std::string& part) {
  for (const std::string& e : errors) {
    if (e.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE("code is read as a folder of the repository, normalised, with its position") {
  const Parsed<core::JobSpec> spec = LoadJobSpec(
      "workload: custom\nentrypoint: python3 train.py\ncode: ./src/trainer/\ncode_ref: v1\n",
      "jobs/t.yaml", "jobs");
  REQUIRE(spec.value);
  REQUIRE(spec.value->has_code());
  CHECK(spec.value->code().folder == "src/trainer");
  CHECK(spec.value->code().folder_pos == core::SourcePos{3, 7});
  CHECK(spec.value->code().ref == "v1");
  CHECK(spec.value->code().tree_id.empty());  // resolved after loading
}

TEST_CASE("code and code_ref refuse what is not a folder or a ref of this repository") {
  const std::string base = "workload: custom\nentrypoint: x\n";
  for (const char* bad :
       {"/abs/path", "../outside", "src/../..", ".git/hooks", "\"\"", "[a]", "3", "\"src\\0x\""}) {
    INFO(bad);
    CHECK(HasError(ErrorsOf(base + "code: " + bad + "\n"), "code must be a folder of this"));
  }
  CHECK(HasError(ErrorsOf(base + "code: src\ncode_ref: \"a b\"\n"), "code_ref must be a tag"));
  CHECK(HasError(ErrorsOf(base + "code_ref: v1\n"), "code_ref applies to code only"));
  CHECK(HasError(ErrorsOf(base + "code: src\nruntime_env:\n  working_dir: s3://b/x.zip\n"),
                 "runtime_env.working_dir cannot be set with code"));
  // A remote working_dir without code is as before.
  CHECK(ErrorsOf(base + "runtime_env:\n  working_dir: s3://b/x.zip\n").empty());
}

TEST_CASE("code keeps apart from the jobs folder and the status folder, at its line and column") {
  const std::string base = "workload: custom\nentrypoint: x\n";
  struct Row {
    const char* folder;
    const char* jobs_dir;
    const char* message;
  };
  const std::string jobs_edit =
      ": every spec edit would change the code's tree and start a new run; keep the code in a "
      "folder of its own";
  const std::string status_commit =
      ": every status commit would change the code's tree and start a new run; keep the code in "
      "a folder of its own";
  const std::vector<Row> rows = {
      {"jobs", "jobs", "code: jobs is the jobs folder jobs"},
      {"jobs/x", "jobs", "code: jobs/x lies inside the jobs folder jobs"},
      {"./jobs/x/", "jobs", "code: jobs/x lies inside the jobs folder jobs"},
      {"deploy", "deploy/jobs", "code: deploy contains the jobs folder deploy/jobs"},
      {"deploy/jobs/a", "deploy/jobs/",
       "code: deploy/jobs/a lies inside the jobs folder deploy/jobs"},
      {"status", "jobs", "code: status is the status folder status"},
      {"status/x", "jobs", "code: status/x lies inside the status folder status"},
  };
  for (const Row& row : rows) {
    INFO(row.folder << " with jobs folder " << row.jobs_dir);
    const auto parsed =
        LoadJobSpec(base + "code: " + row.folder + "\n", "jobs/t.yaml", row.jobs_dir);
    REQUIRE(parsed.diagnostics.size() == 1);
    CHECK(parsed.diagnostics[0].line == 3);
    CHECK(parsed.diagnostics[0].column == 7);
    const bool status = std::string(row.message).find("status folder") != std::string::npos;
    CHECK(parsed.diagnostics[0].message == row.message + (status ? status_commit : jobs_edit));
  }
  for (const char* root : {".", "./", "\"./\""}) {
    INFO(root);
    const auto parsed = LoadJobSpec(base + "code: " + root + "\n", "jobs/t.yaml", "jobs");
    REQUIRE(parsed.diagnostics.size() == 1);
    CHECK(parsed.diagnostics[0].line == 3);
    CHECK(parsed.diagnostics[0].message ==
          "code cannot be the repository's root: it holds the jobs folder jobs and the status "
          "folder status: every spec edit and status commit would change the code's tree and "
          "start a new run; keep the code in a folder of its own");
  }
  // Names that only begin like the folders are folders of their own.
  for (const char* apart : {"jobsx", "src/jobs", "statusboard", "src/status", "job"}) {
    INFO(apart);
    CHECK(ErrorsOf(base + "code: " + apart + "\n").empty());
  }
}

TEST_CASE("code_max_bytes is a byte count up to Ray's 100 MiB") {
  CHECK(LoadRayConfig("address: http://h:1\ncode_max_bytes: 1048576\n", "cluster.yaml")
            .value->code_max_bytes == 1048576);
  for (const char* bad : {"0", "104857601", "10MB", "-1"}) {
    INFO(bad);
    const auto parsed = LoadRayConfig(
        std::string("address: http://h:1\ncode_max_bytes: ") + bad + "\n", "cluster.yaml");
    CHECK(HasError(Messages(parsed.diagnostics), "code_max_bytes must be an integer number"));
  }
}

TEST_CASE(
    "The tree of the code is part of the identity, and the rendered working_dir is its package") {
  const SourceFile cluster{"cluster.yaml", "address: http://127.0.0.1:8265\n"};
  auto load = [&](const std::string& tree) {
    core::DesiredState state = LoadDesiredState(
        cluster, {{"jobs/a.yaml", "workload: custom\ncode: src\nentrypoint: python3 a.py\n"},
                  {"jobs/b.yaml", "workload: custom\nentrypoint: echo b\nafter: [a]\n"}});
    REQUIRE(state.jobs.size() == 2);
    state.jobs[0].mutable_code().tree_id = tree;
    state.jobs[0].mutable_code().commit = std::string(40, 'c');
    core::BindDesiredState(state, core::kDefaultInstance);
    return state;
  };
  const std::string tree1(40, '1');
  const std::string tree2(40, '2');
  const core::DesiredState one = load(tree1);
  const core::DesiredState again = load(tree1);
  const core::DesiredState two = load(tree2);
  CHECK(one.jobs[0].spec_hash == again.jobs[0].spec_hash);
  CHECK(one.jobs[0].spec_hash != two.jobs[0].spec_hash);
  // A downstream job follows its upstream's code.
  CHECK(one.jobs[1].spec_hash != two.jobs[1].spec_hash);
  CHECK(one.jobs[0].legacy_spec_hashes.empty());

  auto body = core::RenderSubmission(one.jobs[0], *one.cluster, core::RenderContext{});
  REQUIRE(body.ok());
  CHECK((*body)["runtime_env"]["working_dir"].as_string() == core::CodePackageUri(tree1));
  CHECK(core::CodePackageUri(tree1).starts_with("gcs://_ray_pkg_"));
  CHECK((*body)["metadata"][std::string(core::kMetaCodeTree)].as_string() == tree1);
  CHECK((*body)["metadata"][std::string(core::kMetaCodeCommit)].as_string() ==
        std::string(40, 'c'));

  // Never rendered without its tree: the working_dir would be unknown.
  core::DesiredState unresolved = LoadDesiredState(
      cluster, {{"jobs/a.yaml", "workload: custom\ncode: src\nentrypoint: python3 a.py\n"}});
  CHECK_FALSE(core::RenderSubmission(unresolved.jobs[0], *unresolved.cluster, {}).ok());
}

}  // namespace
}  // namespace rg::spec
