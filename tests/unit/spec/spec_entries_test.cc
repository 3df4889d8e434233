// A repository on disk holding links, submodules and FIFOs where specs belong: each is an error
// naming its path, nothing is followed or read through it, and the regular specs stay valid.

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/spec/spec_entry.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/support/test_files.h"
#include "tests/unit/spec/diagnostic_messages.h"

namespace rg::spec {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSecret = "ghp_do_not_print_this_token_0123456789";

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// cluster.yaml, one valid spec, and a token file outside the jobs folder that links aim at.
struct DiskRepo {
  testing::TempDir tmp;
  fs::path root = tmp.dir() / "repo";

  DiskRepo() {
    WriteFile(root / "cluster.yaml", "address: http://127.0.0.1:8265\n");
    WriteFile(root / "jobs/ok.yaml", "workload: custom\nentrypoint: echo ok\n");
    WriteFile(tmp.dir() / "token", std::string(kSecret) + "\n");
  }
  core::DesiredState Load() const { return LoadDesiredStateFromDirectory(root.string()); }
};

std::vector<std::string> AllMessages(const core::DesiredState& state) {
  return Messages(state.AllDiagnostics());
}

void CheckNothingLeaked(const core::DesiredState& state) {
  for (const std::string& line : AllMessages(state)) {
    INFO(line);
    CHECK(line.find(kSecret) == std::string::npos);
  }
}

std::vector<std::string> JobPaths(const core::DesiredState& state) {
  std::vector<std::string> out;
  for (const auto& job : state.jobs) out.push_back(job.path);
  return out;
}

TEST_CASE("a linked spec is an error naming its path and its target is never read") {
  DiskRepo repo;
  fs::create_symlink("../../token", repo.root / "jobs/link.yaml");
  const core::DesiredState state = repo.Load();
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/ok.yaml"});
  REQUIRE(state.invalid.size() == 1);
  CHECK(state.invalid[0].path == "jobs/link.yaml");
  CHECK(state.invalid[0].name == "link");
  CHECK(AllMessages(state) == std::vector<std::string>{"jobs/link.yaml: error: is a symbolic "
                                                       "link; specs must be regular files (links "
                                                       "are never followed)"});
  CheckNothingLeaked(state);
}

TEST_CASE("links by any name are errors: dangling, to a folder of specs, not named .yaml") {
  DiskRepo repo;
  WriteFile(repo.tmp.dir() / "elsewhere/hidden-spec.yaml", "workload: custom\nentrypoint: x\n");
  fs::create_symlink("../nowhere", repo.root / "jobs/dangling.yml");
  fs::create_directories(repo.root / "jobs/team");
  fs::create_symlink("../../../elsewhere", repo.root / "jobs/team/more");
  fs::create_symlink("../../token", repo.root / "jobs/README");
  fs::create_symlink("../../token", repo.root / "jobs/.cache");  // hidden: skipped like any
  const core::DesiredState state = repo.Load();
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/ok.yaml"});
  std::vector<std::string> invalid;
  for (const auto& bad : state.invalid) invalid.push_back(bad.path);
  CHECK(invalid == std::vector<std::string>{"jobs/README", "jobs/dangling.yml", "jobs/team/more"});
  CheckNothingLeaked(state);
}

TEST_CASE("a submodule folder under jobs is an error and nothing in it is read") {
  DiskRepo repo;
  WriteFile(repo.root / "jobs/vendor/.git", "gitdir: ../../.git/modules/vendor\n");
  WriteFile(repo.root / "jobs/vendor/inner.yaml", "workload: custom\nentrypoint: echo\n");
  const core::DesiredState state = repo.Load();
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/ok.yaml"});
  CHECK(AllMessages(state) ==
        std::vector<std::string>{"jobs/vendor: error: is a Git submodule; specs must be regular "
                                 "files (nothing in a submodule is read)"});
}

TEST_CASE("a FIFO named like a spec is an error, not a read that never ends") {
  DiskRepo repo;
  REQUIRE(::mkfifo((repo.root / "jobs/pipe.yaml").c_str(), 0600) == 0);
  const core::DesiredState state = repo.Load();
  CHECK(JobPaths(state) == std::vector<std::string>{"jobs/ok.yaml"});
  CHECK(AllMessages(state) == std::vector<std::string>{"jobs/pipe.yaml: error: is not a regular "
                                                       "file; specs must be regular files"});
}

TEST_CASE("a linked cluster file is invalid and its target is never read") {
  DiskRepo repo;
  fs::remove(repo.root / "cluster.yaml");
  fs::create_symlink("../token", repo.root / "cluster.yaml");
  const core::DesiredState state = repo.Load();
  CHECK_FALSE(state.ClusterValid());
  CHECK(Messages(state.cluster_diagnostics) ==
        std::vector<std::string>{"cluster.yaml: error: is a symbolic link; the cluster file must "
                                 "be a regular file (links are never followed)"});
  CheckNothingLeaked(state);
}

TEST_CASE("a linked jobs folder is an error and no spec is read through it") {
  DiskRepo repo;
  WriteFile(repo.tmp.dir() / "elsewhere/x.yaml", "workload: custom\nentrypoint: echo\n");
  fs::remove_all(repo.root / "jobs");
  fs::create_symlink("../elsewhere", repo.root / "jobs");
  const core::DesiredState state = repo.Load();
  CHECK(state.jobs.empty());
  CHECK(state.invalid.empty());
  CHECK(Messages(state.cluster_diagnostics) ==
        std::vector<std::string>{"jobs: error: is a symbolic link; the jobs folder must be a "
                                 "folder of this repository (links are never followed)"});
}

// The buffer follows the file's size: 50,000 small specs once took the limit each (23 GB).
TEST_CASE("a bounded read holds what the file holds, not the limit") {
  testing::TempDir tmp;
  const fs::path dir(tmp.path());
  const fs::path small = dir / "small.yaml";
  WriteFile(small, "name: a\nentrypoint: echo hi\n");
  std::optional<std::string> read = ReadRegularFileBounded(small, kMaxSpecFileBytes);
  REQUIRE(read);
  CHECK(*read == "name: a\nentrypoint: echo hi\n");
  CHECK(read->capacity() < 4096);

  const fs::path big = dir / "big.yaml";
  WriteFile(big, std::string(10'000, 'x'));
  read = ReadRegularFileBounded(big, 4'000);
  REQUIRE(read);
  CHECK(read->size() == 4'001);  // one byte past the limit: enough to reject the file
  read = ReadRegularFileBounded(big, 10'000);
  REQUIRE(read);
  CHECK(read->size() == 10'000);
  CHECK(read->capacity() < 2 * 10'000);

  const fs::path empty = dir / "empty.yaml";
  WriteFile(empty, "");
  read = ReadRegularFileBounded(empty, kMaxSpecFileBytes);
  REQUIRE(read);
  CHECK(read->empty());

  CHECK_FALSE(ReadRegularFileBounded(dir, kMaxSpecFileBytes));
  CHECK_FALSE(ReadRegularFileBounded(dir / "missing.yaml", kMaxSpecFileBytes));
  fs::create_symlink(small, dir / "link.yaml");
  CHECK_FALSE(ReadRegularFileBounded(dir / "link.yaml", kMaxSpecFileBytes));
}

}  // namespace
}  // namespace rg::spec
