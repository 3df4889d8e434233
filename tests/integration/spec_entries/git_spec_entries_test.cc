// Bad entries in a real Git commit, through a whole reconcile pass: the libgit2 source and status
// store over a bare remote that a person's clone (the git command line) pushes to, and the fake
// Ray head. Invalid job names, symbolic links and submodules are errors naming the file; every
// other job is still submitted and recorded, and nothing that was running is stopped for them.

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"
#include "tests/support/git_test_repo.h"
#include "tests/support/test_files.h"

namespace rg {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kSecret = "ghp_never_print_this_token_0123456789";
constexpr const char* kStatusBranch = "ray-gitops/status";

std::string Quote(const std::string& s) { return "'" + s + "'"; }

void Git(const fs::path& dir, const std::string& args) {
  const std::string command = "git -C " + Quote(dir.string()) +
                              " -c user.name=person -c user.email=person@localhost "
                              "-c protocol.file.allow=always " +
                              args + " >/dev/null 2>&1";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
}

std::string CustomSpec(const std::string& command, const std::string& extra = "") {
  return "workload: custom\nentrypoint: " + command + "\n" + extra;
}

// A bare remote, a person's working clone of it, the daemon's workspace and the fake head.
class World {
 public:
  World() {
    fs::create_directories(remote_);
    Git(remote_, "init -q --bare -b main");
    Git(tmp_.dir(), "clone -q " + Quote(remote_.string()) + " work");
    Git(work_, "checkout -q -b main");
    Write("cluster.yaml", "address: " + ray_.address() + "\n");
    Write("secret.txt", std::string(kSecret) + "\n");
    adapters::GitWorkspaceOptions options;
    options.repo = remote_.string();
    options.cache_dir = tmp_.Sub("cache");
    auto workspace = adapters::GitWorkspace::Open(options);
    if (!workspace) FAIL(workspace.error().ToString());
    source_ = std::make_unique<adapters::GitDesiredStateSource>(*workspace,
                                                                adapters::GitDesiredStateOptions{});
    store_ =
        std::make_unique<adapters::GitStatusStore>(*workspace, adapters::GitStatusStoreOptions{});
    client_ =
        std::make_unique<adapters::RayHttpJobServer>(testing::FastClientOptions(ray_.address()));
  }

  void Write(const std::string& path, const std::string& text) {
    fs::remove(work_ / path);
    fs::create_directories((work_ / path).parent_path());
    std::ofstream(work_ / path) << text;
  }
  void Link(const std::string& path, const std::string& target) {
    fs::remove_all(work_ / path);
    fs::create_directories((work_ / path).parent_path());
    fs::create_symlink(target, work_ / path);
  }
  // Commits and pushes a gitlink (what `git submodule add` commits) at `path`, pointing at the
  // current commit; `git add -A` would drop it, as no checkout of it exists.
  void PushSubmodule(const std::string& path) {
    Git(work_, "update-index --add --cacheinfo 160000,$(git -C " + Quote(work_.string()) +
                   " rev-parse HEAD)," + path);
    Git(work_, "commit -q -m 'a submodule'");
    Git(work_, "push -q origin main");
  }
  void Push(const std::string& message) {
    Git(work_, "add -A");
    Git(work_, "commit -q --allow-empty -m " + Quote(message));
    Git(work_, "push -q origin main");
  }

  engine::PassResult Pass() {
    engine::ReconcileDeps deps;
    deps.source = source_.get();
    deps.server = client_.get();
    const std::string address = ray_.address();
    deps.server_factory = [address]() -> std::unique_ptr<ports::JobServer> {
      return std::make_unique<adapters::RayHttpJobServer>(testing::FastClientOptions(address));
    };
    deps.store = store_.get();
    engine::ReconcileOptions options;
    options.ray_address = address;
    options.now_ms = now_ms_ += 1000;
    engine::PassResult result = engine::RunReconcilePass(deps, options);
    ray_.Tick();
    return result;
  }

  std::vector<std::string> StatusFiles() const {
    return testing::ListFiles(remote_.string(), kStatusBranch);
  }
  std::string StatusFile(const std::string& name) const {
    return testing::ReadFileAt(remote_.string(), kStatusBranch, "status/" + name + ".yaml")
        .value_or("");
  }
  testing::FakeRayServer& ray() { return ray_; }
  adapters::GitDesiredStateSource& source() { return *source_; }

 private:
  testing::TempDir tmp_;
  fs::path remote_ = tmp_.dir() / "remote.git";
  fs::path work_ = tmp_.dir() / "work";
  testing::FakeRayServer ray_;
  std::unique_ptr<adapters::GitDesiredStateSource> source_;
  std::unique_ptr<adapters::GitStatusStore> store_;
  std::unique_ptr<adapters::RayHttpJobServer> client_;
  int64_t now_ms_ = 1'800'000'000'000;
};

std::vector<std::string> Lines(const core::Diagnostics& diagnostics) {
  std::vector<std::string> out;
  for (const auto& d : diagnostics) out.push_back(d.ToString());
  return out;
}

std::vector<std::string> SubmittedIds(const engine::PassResult& r) {
  std::vector<std::string> out;
  for (const auto& o : r.outcomes) {
    if (o.ok && o.action.kind == core::ActionKind::kSubmit) out.push_back(o.action.submission_id);
  }
  return out;
}

bool IsActive(std::optional<core::RayJobStatus> status) {
  return status == core::RayJobStatus::kPending || status == core::RayJobStatus::kRunning;
}

int Count(const engine::PassResult& r, core::ActionKind kind) { return r.plan.CountActions(kind); }

// Everything a pass would print or write about itself, to look for the linked file's text.
std::string Printed(const engine::PassResult& r) {
  std::string out;
  for (const auto& line : Lines(r.diagnostics)) out += line + "\n";
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  for (const auto& t : r.transitions) out += t + "\n";
  for (const auto& rec : r.records) {
    for (const auto& e : rec.errors) out += e + "\n";
  }
  return out;
}

TEST_CASE(
    "a name like ../x or sub/dir is an error at its line and column, the other jobs are "
    "submitted and the status commit works",
    "[git][names]") {
  World w;
  w.Write("jobs/good.yaml", CustomSpec("sleep 300"));
  w.Write("jobs/dots.yaml", CustomSpec("sleep 301", "name: \"../x\"\n"));
  w.Write("jobs/slash.yaml", CustomSpec("sleep 302", "name: sub/dir\n"));
  w.Push("three specs, two badly named");

  engine::PassResult first = w.Pass();
  CHECK(Lines(first.diagnostics) ==
        std::vector<std::string>{
            "jobs/dots.yaml:3:7: error: name must be 1 to 63 characters of [a-z0-9._-] starting "
            "and ending with a letter or digit (got \"../x\")",
            "jobs/slash.yaml:3:7: error: name must be 1 to 63 characters of [a-z0-9._-] "
            "starting and ending with a letter or digit (got \"sub/dir\")"});
  CHECK(first.errors.empty());
  CHECK(Count(first, core::ActionKind::kSubmit) == 1);
  CHECK(w.ray().JobCount() == 1);
  CHECK_FALSE(first.status_commit.empty());
  // Each record sits at status/<valid name>.yaml; the bad files are recorded by derived name.
  CHECK(w.StatusFiles() == std::vector<std::string>{"STATUS.md", "status/dots.yaml",
                                                    "status/good.yaml", "status/slash.yaml"});
  CHECK(w.StatusFile("dots").find("phase: Invalid") != std::string::npos);
  CHECK(w.StatusFile("good").find("phase: Pending") != std::string::npos);

  // Later passes keep working: the good job is recorded Running, nothing is refused.
  std::this_thread::sleep_for(200ms);
  w.ray().Tick();
  engine::PassResult second = w.Pass();
  CHECK(second.errors.empty());
  CHECK(w.StatusFile("good").find("phase: Running") != std::string::npos);
}

TEST_CASE("a spec replaced by a symbolic link freezes its running job and the link is never read",
          "[git][symlinks]") {
  World w;
  w.Write("jobs/a.yaml", CustomSpec("sleep 300"));
  w.Write("jobs/b.yaml", CustomSpec("sleep 301", "name: train\n"));
  w.Write("jobs/c.yaml", CustomSpec("sleep 302"));
  w.Push("three specs");
  engine::PassResult first = w.Pass();
  REQUIRE(first.errors.empty());
  REQUIRE(w.ray().JobCount() == 3);
  const std::vector<std::string> ids = SubmittedIds(first);
  REQUIRE(ids.size() == 3);

  // a.yaml and b.yaml (explicitly named train) become links to a token file; a link to a folder
  // of specs and one not named .yaml appear too.
  w.Link("jobs/a.yaml", "../secret.txt");
  w.Link("jobs/b.yaml", "../secret.txt");
  w.Write("elsewhere/hidden.yaml", CustomSpec("sleep 303"));
  w.Link("jobs/more", "../elsewhere");
  w.Push("links");

  auto snapshot = w.source().Load("main");
  REQUIRE(snapshot.ok());
  CHECK_FALSE(snapshot->texts.contains("jobs/a.yaml"));
  CHECK_FALSE(snapshot->texts.contains("jobs/more/hidden.yaml"));

  engine::PassResult second = w.Pass();
  const std::string link_error =
      ": error: is a symbolic link; specs must be regular files (links are never followed)";
  CHECK(Lines(second.diagnostics) == std::vector<std::string>{"jobs/a.yaml" + link_error,
                                                              "jobs/b.yaml" + link_error,
                                                              "jobs/more" + link_error});
  CHECK(Count(second, core::ActionKind::kStop) == 0);
  CHECK(Count(second, core::ActionKind::kSubmit) == 0);
  CHECK(w.ray().JobCount() == 3);
  CHECK(Printed(second).find(kSecret) == std::string::npos);
  CHECK(w.StatusFile("a").find("phase: Invalid") != std::string::npos);
  CHECK(w.StatusFile("a").find(kSecret) == std::string::npos);
  for (const std::string& id : ids) {
    INFO(id);
    CHECK(IsActive(w.ray().StatusOf(id)));
  }
}

TEST_CASE("a submodule under jobs is an error and the other specs are still submitted",
          "[git][submodules]") {
  World w;
  w.Write("jobs/ok.yaml", CustomSpec("sleep 300"));
  w.Push("one spec");
  w.PushSubmodule("jobs/vendor");

  engine::PassResult pass = w.Pass();
  CHECK(Lines(pass.diagnostics) ==
        std::vector<std::string>{"jobs/vendor: error: is a Git submodule; specs must be regular "
                                 "files (nothing in a submodule is read)"});
  CHECK(Count(pass, core::ActionKind::kSubmit) == 1);
  CHECK(pass.errors.empty());
}

TEST_CASE("a linked cluster file is invalid: nothing is done and its target is never read",
          "[git][symlinks]") {
  World w;
  w.Write("jobs/ok.yaml", CustomSpec("sleep 300"));
  w.Link("cluster.yaml", "secret.txt");
  w.Push("linked cluster file");

  engine::PassResult pass = w.Pass();
  CHECK(Lines(pass.diagnostics) ==
        std::vector<std::string>{"cluster.yaml: error: is a symbolic link; the cluster file must "
                                 "be a regular file (links are never followed)"});
  CHECK_FALSE(pass.errors.empty());
  CHECK(w.ray().JobCount() == 0);
  CHECK(Printed(pass).find(kSecret) == std::string::npos);
}

TEST_CASE("a jobs folder replaced by a link stops nothing", "[git][symlinks]") {
  World w;
  w.Write("jobs/ok.yaml", CustomSpec("sleep 300"));
  w.Push("one spec");
  engine::PassResult first = w.Pass();
  REQUIRE(first.errors.empty());
  const std::vector<std::string> ids = SubmittedIds(first);
  REQUIRE(ids.size() == 1);

  w.Write("elsewhere/ok.yaml", CustomSpec("sleep 300"));
  w.Link("jobs", "elsewhere");
  w.Push("jobs is a link now");

  engine::PassResult pass = w.Pass();
  REQUIRE_FALSE(pass.errors.empty());
  CHECK(pass.errors.front().message().find("jobs: error: is a symbolic link; the jobs folder "
                                           "must be a folder of this repository") !=
        std::string::npos);
  CHECK(Count(pass, core::ActionKind::kStop) == 0);
  CHECK(IsActive(w.ray().StatusOf(ids.front())));
}

}  // namespace
}  // namespace rg
