// The libgit2 desired-state source against real repositories: a bare remote, a person's clone
// that pushes cluster.yaml and JobSpecs, and the daemon's own clone in a cache dir.

#include <git2.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/parse_cache.h"
#include "reconciler/core/identity.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

using adapters::GitDesiredStateOptions;
using adapters::GitDesiredStateSource;
using adapters::GitWorkspace;
using adapters::GitWorkspaceOptions;

constexpr const char* kCluster = "address: http://127.0.0.1:8265\nshared_root: /private\n";

std::string CustomSpec(const std::string& command) {
  return "workload: custom\nentrypoint: " + command + "\n";
}

struct Repo : testing::TestRemote {
  std::shared_ptr<GitWorkspace> Workspace(const std::string& repo_arg = "",
                                          GitWorkspaceOptions options = {}) {
    options.repo = repo_arg.empty() ? remote : repo_arg;
    if (options.cache_dir.empty()) options.cache_dir = tmp.Sub("cache");
    auto ws = GitWorkspace::Open(options);
    if (!ws) FAIL(ws.error().ToString());
    return *ws;
  }

  // cluster.yaml and three specs on main.
  std::string PushInitial() {
    person->Write("cluster.yaml", kCluster);
    person->Write("jobs/smoke/hello.yaml", CustomSpec("echo hello"));
    person->Write("jobs/smoke/bye.yaml", CustomSpec("echo bye"));
    person->Write("jobs/train/sft.yml", CustomSpec("echo ${shared_root}/x"));
    person->Write("README.md", "not a spec\n");
    person->Write("jobs/notes.txt", "not a spec either\n");
    return person->CommitAndPush("main", "initial");
  }
};

std::vector<std::string> JobNames(const core::DesiredState& state) {
  std::vector<std::string> names;
  for (const auto& job : state.jobs) names.push_back(job.name);
  return names;
}

// What a pass keeps of a spec: its fields and hashes bound to the instance, not its document
// or positions; the whole spec is still there for `plan`'s field diffs.
void RequireLeanOf(const core::JobSpec& lean, const core::JobSpec& whole,
                   const std::string& instance) {
  core::JobSpec bound = whole;
  core::BindSpecToInstance(bound, instance);
  CHECK(lean.document.is_null());
  CHECK(lean.positions.empty());
  CHECK(lean.spec_hash == bound.spec_hash);
  CHECK(lean.legacy_spec_hashes == bound.legacy_spec_hashes);
  CHECK(lean.entrypoint == whole.entrypoint);
  CHECK(lean.name == whole.name);
  CHECK(whole.document.is_object());
  CHECK_FALSE(whole.positions.empty());
}

TEST_CASE("A lean source gives a pass bound specs without documents, whole reads keep them",
          "[git][source]") {
  Repo repo;
  const std::string first = repo.PushInitial();
  for (const bool with_cache : {false, true}) {
    DYNAMIC_SECTION((with_cache ? "with" : "without") << " a parse cache") {
      GitDesiredStateOptions options;
      options.lean_instance = "team-b";
      if (with_cache) {
        options.parse_cache = std::make_shared<adapters::ParseCache>(
            repo.tmp.Sub("cache") + "/specs.parse-cache", "test");
      }
      GitDesiredStateSource source(repo.Workspace(), options);
      auto lean = source.Load("main");
      REQUIRE(lean.ok());
      // Twice: a lean source's own map (or the cache) must not hand a whole read lean specs.
      for (int round = 0; round < 2; ++round) {
        auto whole = source.ReadWhole(first);
        REQUIRE(whole.ok());
        REQUIRE(whole->state.jobs.size() == 3);
        REQUIRE(lean->state.jobs.size() == 3);
        for (size_t i = 0; i < 3; ++i) {
          RequireLeanOf(lean->state.jobs[i], whole->state.jobs[i], "team-b");
        }
        auto one = source.ReadWholeSpec(first, "jobs/smoke/hello.yaml");
        REQUIRE(one.ok());
        REQUIRE(one->has_value());
        CHECK(**one == whole->state.jobs[1]);  // by path: bye, hello, sft
        lean = source.Load("main");
        REQUIRE(lean.ok());
      }
      auto missing = source.ReadWholeSpec(first, "jobs/smoke/none.yaml");
      REQUIRE(missing.ok());
      CHECK_FALSE(missing->has_value());

      repo.person->Write("jobs/smoke/hello.yaml", CustomSpec("echo changed"));
      const std::string second = repo.person->CommitAndPush("main", "one change");
      REQUIRE(source.Head("main").ok());
      auto changes = source.LoadChanges("main", first, 64);
      REQUIRE(changes.ok());
      REQUIRE(changes->has_value());
      REQUIRE((*changes)->snapshot.state.jobs.size() == 1);
      auto whole = source.ReadWholeSpec(second, "jobs/smoke/hello.yaml");
      REQUIRE(whole.ok());
      REQUIRE(whole->has_value());
      RequireLeanOf((*changes)->snapshot.state.jobs[0], **whole, "team-b");
      // The next full load takes the changed file from what the narrow load parsed, whole.
      auto full = source.ReadWhole(second);
      REQUIRE(full.ok());
      CHECK(full->state.jobs[1] == **whole);
      repo.person->Write("jobs/smoke/hello.yaml", CustomSpec("echo hello"));
      repo.person->CommitAndPush("main", "back");
    }
  }
}

TEST_CASE("Load reads the cluster file and every spec from the tip of the branch",
          "[git][source]") {
  Repo repo;
  const std::string commit = repo.PushInitial();
  GitDesiredStateSource source(repo.Workspace(), {});

  auto snapshot = source.Load("main");
  REQUIRE(snapshot.ok());
  CHECK(snapshot->commit == commit);
  CHECK(snapshot->ref == "refs/heads/main");
  CHECK(snapshot->repo_url == repo.remote);
  REQUIRE(snapshot->state.ClusterValid());
  CHECK(snapshot->state.cluster->address == "http://127.0.0.1:8265");
  CHECK(JobNames(snapshot->state) ==
        std::vector<std::string>{"smoke-bye", "smoke-hello", "train-sft"});
  CHECK(snapshot->state.invalid.empty());
  // A full snapshot holds the cluster file's text only; a spec's is read when asked for.
  CHECK(snapshot->texts.count("jobs/smoke/hello.yaml") == 0);
  CHECK(source.SpecText(*snapshot, "jobs/smoke/hello.yaml") == CustomSpec("echo hello"));
  CHECK(source.SpecText(*snapshot, "jobs/smoke/none.yaml").empty());
  CHECK(snapshot->texts.at("cluster.yaml") == kCluster);
  CHECK(snapshot->texts.count("README.md") == 0);
  CHECK(snapshot->texts.count("jobs/notes.txt") == 0);
  CHECK(source.spec_parses() == 3);
  CHECK(source.cluster_parses() == 1);
}

TEST_CASE("A second Load of an unchanged tree parses nothing", "[git][source][cache]") {
  Repo repo;
  repo.PushInitial();
  GitDesiredStateSource source(repo.Workspace(), {});
  REQUIRE(source.Load("main").ok());
  const int before = source.parses();

  auto again = source.Load("main");
  REQUIRE(again.ok());
  CHECK(source.parses() == before);
  CHECK(again->state.jobs.size() == 3);

  // A commit that touches no spec (a README edit) changes the commit, not the parse count.
  repo.person->Write("README.md", "edited\n");
  const std::string readme_commit = repo.person->CommitAndPush("main", "docs");
  auto after_readme = source.Load("main");
  REQUIRE(after_readme.ok());
  CHECK(after_readme->commit == readme_commit);
  CHECK(source.parses() == before);
}

TEST_CASE("After a push that changes one spec exactly one file is parsed", "[git][source][cache]") {
  Repo repo;
  repo.PushInitial();
  GitDesiredStateSource source(repo.Workspace(), {});
  REQUIRE(source.Load("main").ok());
  const int specs_before = source.spec_parses();
  const int cluster_before = source.cluster_parses();

  repo.person->Write("jobs/smoke/hello.yaml", CustomSpec("echo hello again"));
  repo.person->CommitAndPush("main", "change hello");
  auto snapshot = source.Load("main");
  REQUIRE(snapshot.ok());
  CHECK(source.spec_parses() == specs_before + 1);
  CHECK(source.cluster_parses() == cluster_before);
  const auto hello = std::find_if(snapshot->state.jobs.begin(), snapshot->state.jobs.end(),
                                  [](const auto& j) { return j.name == "smoke-hello"; });
  REQUIRE(hello != snapshot->state.jobs.end());
  REQUIRE(hello->entrypoint.has_value());
  CHECK(*hello->entrypoint == "echo hello again");
}

TEST_CASE("DropCaches reopens the clone: Load and Fetch work on after it, from the same files",
          "[git][workspace]") {
  Repo repo;
  repo.PushInitial();
  std::shared_ptr<GitWorkspace> ws = repo.Workspace();
  GitDesiredStateSource source(ws, {});
  auto before = source.Load("main");
  REQUIRE(before.ok());

  REQUIRE(ws->DropCaches().ok());
  CHECK(ws->repository() != nullptr);
  auto same = source.Load("main");
  REQUIRE(same.ok());
  CHECK(same->commit == before->commit);
  CHECK(JobNames(same->state) == JobNames(before->state));

  // The remote still works through the reopened clone: a push shows after the next Load.
  repo.person->Write("jobs/smoke/extra.yaml", CustomSpec("echo extra"));
  const std::string pushed = repo.person->CommitAndPush("main", "one more");
  REQUIRE(ws->DropCaches().ok());
  auto after = source.Load("main");
  REQUIRE(after.ok());
  CHECK(after->commit == pushed);
  CHECK(after->state.jobs.size() == before->state.jobs.size() + 1);
}

TEST_CASE("A long read reopens the clone every few blobs it parses and reads the same specs",
          "[git][workspace]") {
  Repo repo;
  repo.PushInitial();
  // Specs arrive in three fetches, so the clone reads them from three packs.
  GitWorkspaceOptions every_two;
  every_two.cache_dir = repo.tmp.Sub("every-two");
  every_two.blobs_per_cache_drop = 2;
  std::shared_ptr<GitWorkspace> ws = repo.Workspace("", every_two);
  GitDesiredStateSource source(ws, {});
  REQUIRE(source.Load("main").ok());
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 3; ++i) {
      const std::string name = "r" + std::to_string(round) + "-" + std::to_string(i);
      repo.person->Write("jobs/more/" + name + ".yaml", CustomSpec("echo " + name));
    }
    repo.person->CommitAndPush("main", "round " + std::to_string(round));
    REQUIRE(ws->Fetch().ok());
  }
  const int drops_before = ws->cache_drops();
  auto read = source.Load("main");
  REQUIRE(read.ok());
  // Six new blobs parsed, the clone reopened after every second one.
  CHECK(ws->cache_drops() - drops_before == 3);

  std::shared_ptr<GitWorkspace> plain = repo.Workspace();
  GitDesiredStateSource reference(plain, {});
  auto expected = reference.Load("main");
  REQUIRE(expected.ok());
  CHECK(plain->cache_drops() == 0);  // 9 blobs, far below the default
  REQUIRE(JobNames(read->state) == JobNames(expected->state));
  CHECK(read->state.jobs.size() == 9);
  for (size_t i = 0; i < read->state.jobs.size(); ++i) {
    CHECK(read->state.jobs[i].spec_hash == expected->state.jobs[i].spec_hash);
    CHECK(read->state.jobs[i].entrypoint == expected->state.jobs[i].entrypoint);
  }
  // A read that parses nothing (every blob known) does not reopen the clone.
  const int drops = ws->cache_drops();
  REQUIRE(source.Load("main").ok());
  CHECK(ws->cache_drops() == drops);
}

TEST_CASE("A reopen that fails leaves no dangling clone: the next Load opens it again",
          "[git][workspace]") {
  Repo repo;
  const std::string commit = repo.PushInitial();
  std::shared_ptr<GitWorkspace> ws = repo.Workspace();
  GitDesiredStateSource source(ws, {});
  REQUIRE(source.Load("main").ok());

  // The clone's folder is briefly a plain file: it can be neither opened nor made.
  const std::filesystem::path clone = ws->clone_path();
  const std::filesystem::path aside = clone.string() + ".aside";
  std::filesystem::rename(clone, aside);
  std::ofstream(clone) << "not a repository\n";
  CHECK_FALSE(ws->DropCaches().ok());
  std::filesystem::remove(clone);
  std::filesystem::rename(aside, clone);

  auto again = source.Load("main");
  REQUIRE(again.ok());
  CHECK(again->commit == commit);
}

TEST_CASE("A reopen among a long read that fails is an error naming the clone and its cause",
          "[git][workspace]") {
  Repo repo;
  repo.PushInitial();
  GitWorkspaceOptions every_one;
  every_one.cache_dir = repo.tmp.Sub("every-one");
  every_one.blobs_per_cache_drop = 1;
  std::shared_ptr<GitWorkspace> ws = repo.Workspace("", every_one);
  GitDesiredStateSource source(ws, {});
  REQUIRE(source.Load("main").ok());

  const std::filesystem::path clone = ws->clone_path();
  const std::filesystem::path aside = clone.string() + ".aside";
  std::filesystem::rename(clone, aside);
  std::ofstream(clone) << "not a repository\n";
  core::Result<bool> reopened = ws->NoteBlobRead();
  REQUIRE_FALSE(reopened.ok());
  CHECK_THAT(reopened.error().message(), Catch::Contains("cannot reopen the clone at " +
                                                         clone.string() + " among its reads: "));
  CHECK(ws->repository() == nullptr);
  std::filesystem::remove(clone);
  std::filesystem::rename(aside, clone);

  // Nothing of the failed reopen stays: the next read opens the clone again.
  REQUIRE(source.Load("main").ok());
  core::Result<bool> again = ws->NoteBlobRead();
  REQUIRE(again.ok());
  CHECK(*again);
}

TEST_CASE(
    "A renamed file with the same content is parsed again, since its name derives from the path",
    "[git][source][cache]") {
  Repo repo;
  repo.PushInitial();
  GitDesiredStateSource source(repo.Workspace(), {});
  REQUIRE(source.Load("main").ok());
  const int before = source.spec_parses();

  repo.person->Remove("jobs/smoke/bye.yaml");
  repo.person->Write("jobs/smoke/farewell.yaml", CustomSpec("echo bye"));
  repo.person->CommitAndPush("main", "rename");
  auto snapshot = source.Load("main");
  REQUIRE(snapshot.ok());
  CHECK(source.spec_parses() == before + 1);
  CHECK(JobNames(snapshot->state) ==
        std::vector<std::string>{"smoke-farewell", "smoke-hello", "train-sft"});
}

TEST_CASE("An invalid spec lands in invalid with path:line:col, the others stay valid",
          "[git][source]") {
  Repo repo;
  repo.PushInitial();
  repo.person->Write("jobs/smoke/broken.yaml", "workload: custom\nentrypoint: echo\nnnodes: two\n");
  repo.person->CommitAndPush("main", "broken");
  GitDesiredStateSource source(repo.Workspace(), {});

  auto snapshot = source.Load("main");
  REQUIRE(snapshot.ok());
  CHECK(snapshot->state.jobs.size() == 3);
  REQUIRE(snapshot->state.invalid.size() == 1);
  const auto& invalid = snapshot->state.invalid.front();
  CHECK(invalid.path == "jobs/smoke/broken.yaml");
  CHECK(invalid.name == "smoke-broken");
  REQUIRE_FALSE(invalid.diagnostics.empty());
  CHECK(invalid.diagnostics.front().line == 3);
  CHECK(invalid.diagnostics.front().ToString().rfind("jobs/smoke/broken.yaml:3:", 0) == 0);
}

TEST_CASE("Checks across files still run when every spec comes from the cache",
          "[git][source][cache]") {
  Repo repo;
  repo.person->Write("cluster.yaml", kCluster);
  repo.person->Write("jobs/a.yaml", "workload: custom\nname: same\nentrypoint: echo a\n");
  repo.person->CommitAndPush("main", "one");
  GitDesiredStateSource source(repo.Workspace(), {});
  auto first = source.Load("main");
  REQUIRE(first.ok());
  CHECK(first->state.invalid.empty());

  // A second file takes the same name: only it is parsed, yet both become invalid.
  repo.person->Write("jobs/b.yaml", "workload: custom\nname: same\nentrypoint: echo b\n");
  repo.person->CommitAndPush("main", "two");
  const int before = source.spec_parses();
  auto second = source.Load("main");
  REQUIRE(second.ok());
  CHECK(source.spec_parses() == before + 1);
  CHECK(second->state.jobs.empty());
  CHECK(second->state.invalid.size() == 2);

  // Twice in a row from the cache: the duplicate is still reported, not forgotten, and the
  // cached results were not modified by the first check.
  auto third = source.Load("main");
  REQUIRE(third.ok());
  CHECK(source.spec_parses() == before + 1);
  REQUIRE(third->state.invalid.size() == 2);
  CHECK(third->state.invalid[0].diagnostics.size() == second->state.invalid[0].diagnostics.size());

  // A cluster.yaml without shared_root makes a cached spec that uses it invalid.
  repo.person->Remove("jobs/b.yaml");
  repo.person->Write("jobs/c.yaml", "workload: custom\nentrypoint: ls ${shared_root}\n");
  repo.person->CommitAndPush("main", "shared root");
  auto fourth = source.Load("main");
  REQUIRE(fourth.ok());
  CHECK(fourth->state.invalid.empty());
  repo.person->Write("cluster.yaml", "address: http://127.0.0.1:8265\n");
  repo.person->CommitAndPush("main", "no shared root");
  const int specs_before = source.spec_parses();
  auto fifth = source.Load("main");
  REQUIRE(fifth.ok());
  CHECK(source.spec_parses() == specs_before);
  REQUIRE(fifth->state.invalid.size() == 1);
  CHECK(fifth->state.invalid[0].path == "jobs/c.yaml");
}

TEST_CASE("A missing cluster file is reported and the specs are still read", "[git][source]") {
  Repo repo;
  repo.person->Write("jobs/a.yaml", CustomSpec("echo a"));
  repo.person->CommitAndPush("main", "no cluster");
  GitDesiredStateSource source(repo.Workspace(), {});
  auto snapshot = source.Load("main");
  REQUIRE(snapshot.ok());
  CHECK_FALSE(snapshot->state.ClusterValid());
  REQUIRE(snapshot->state.cluster_diagnostics.size() == 1);
  CHECK(snapshot->state.cluster_diagnostics[0].path == "cluster.yaml");
  CHECK(snapshot->state.jobs.size() == 1);
}

TEST_CASE("Same-branch mode excludes the status folder from the desired state", "[git][source]") {
  Repo repo;
  repo.person->Write("cluster.yaml", kCluster);
  repo.person->Write("a.yaml", CustomSpec("echo a"));
  repo.person->Write("status/a.yaml", "name: a\nspec_path: a.yaml\nphase: Running\n");
  repo.person->CommitAndPush("main", "flat layout with status");

  GitDesiredStateOptions with_status;
  with_status.jobs_dir = ".";
  GitDesiredStateSource everything(repo.Workspace(), with_status);
  auto all = everything.Load("main");
  REQUIRE(all.ok());
  // Without the exclusion the status file would be read as a (broken) spec.
  CHECK(all->state.jobs.size() + all->state.invalid.size() == 2);

  GitDesiredStateOptions excluded = with_status;
  excluded.excluded_dir = "status";
  GitDesiredStateSource source(repo.Workspace(), excluded);
  auto snapshot = source.Load("main");
  REQUIRE(snapshot.ok());
  CHECK(JobNames(snapshot->state) == std::vector<std::string>{"a"});
  CHECK(snapshot->state.invalid.empty());
  CHECK(snapshot->texts.count("status/a.yaml") == 0);
}

TEST_CASE("Refs resolve as HEAD, full branch refs and commit ids", "[git][source][refs]") {
  Repo repo;
  const std::string first = repo.PushInitial();
  repo.person->Write("jobs/extra.yaml", CustomSpec("echo extra"));
  const std::string on_branch = repo.person->Commit("feature", "feature work", "main");
  repo.person->Push("feature");
  GitDesiredStateSource source(repo.Workspace(), {});

  auto head = source.Load("HEAD");
  REQUIRE(head.ok());
  CHECK(head->commit == first);
  CHECK(head->ref == "refs/heads/main");

  auto feature = source.Load("refs/heads/feature");
  REQUIRE(feature.ok());
  CHECK(feature->commit == on_branch);
  CHECK(feature->state.jobs.size() == 4);

  auto by_id = source.Load(first);
  REQUIRE(by_id.ok());
  CHECK(by_id->commit == first);
  CHECK(by_id->state.jobs.size() == 3);
}

TEST_CASE("A missing ref is kNotFound", "[git][source][errors]") {
  Repo repo;
  repo.PushInitial();
  GitDesiredStateSource source(repo.Workspace(), {});
  auto missing = source.Load("no-such-branch");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind() == core::ErrorKind::kNotFound);
  CHECK(missing.error().message().find("no-such-branch") != std::string::npos);

  auto unknown_commit = source.Load(std::string(40, 'a'));
  REQUIRE_FALSE(unknown_commit.ok());
  CHECK(unknown_commit.error().kind() == core::ErrorKind::kNotFound);
}

TEST_CASE("A branch deleted on the remote is gone after the next fetch", "[git][source][refs]") {
  Repo repo;
  repo.PushInitial();
  repo.person->Write("jobs/extra.yaml", CustomSpec("echo extra"));
  repo.person->Commit("feature", "feature work", "main");
  repo.person->Push("feature");
  GitDesiredStateSource source(repo.Workspace(), {});
  REQUIRE(source.Load("feature").ok());

  repo.person->DeleteRemoteBranch("feature");
  auto gone = source.Load("feature");
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().kind() == core::ErrorKind::kNotFound);
  CHECK(source.Load("main").ok());
}

TEST_CASE("Plain paths and file:// URLs both work and share nothing with the original",
          "[git][workspace]") {
  Repo repo;
  const std::string commit = repo.PushInitial();
  for (const std::string& form : {repo.remote, "file://" + repo.remote}) {
    GitDesiredStateSource source(repo.Workspace(form), {});
    auto snapshot = source.Load("main");
    INFO(form);
    REQUIRE(snapshot.ok());
    CHECK(snapshot->commit == commit);
    CHECK(snapshot->state.jobs.size() == 3);
  }
  // The clones live in the cache dir, one per URL.
  auto a = repo.Workspace(repo.remote);
  auto b = repo.Workspace("file://" + repo.remote);
  CHECK(a->clone_path() != b->clone_path());
  CHECK(a->clone_path().rfind(repo.tmp.Sub("cache") + "/", 0) == 0);
}

TEST_CASE("A developer's checkout (a directory with .git) works as a plain path",
          "[git][workspace]") {
  testing::TempDir tmp;
  const std::string checkout = tmp.Sub("checkout");
  testing::InitWorkingRepository(checkout);
  auto person = testing::GitTestClone::OpenInPlace(checkout);
  person->Write("cluster.yaml", kCluster);
  person->Write("jobs/a.yaml", CustomSpec("echo a"));
  const std::string commit = person->Commit("main", "initial");

  adapters::GitWorkspaceOptions options;
  options.repo = checkout;
  options.cache_dir = tmp.Sub("cache");
  auto ws = GitWorkspace::Open(options);
  REQUIRE(ws.ok());
  CHECK((*ws)->url() == checkout);
  GitDesiredStateSource source(*ws, {});
  auto snapshot = source.Load("main");
  REQUIRE(snapshot.ok());
  CHECK(snapshot->commit == commit);
  CHECK(JobNames(snapshot->state) == std::vector<std::string>{"a"});
}

TEST_CASE("Opening something that is not a repository is kInvalidInput",
          "[git][workspace][errors]") {
  testing::TempDir tmp;
  GitWorkspaceOptions options;
  options.cache_dir = tmp.Sub("cache");
  for (const std::string& bad :
       {tmp.Sub("does-not-exist"), "file://" + tmp.Sub("nope"), tmp.path()}) {
    options.repo = bad;
    auto ws = GitWorkspace::Open(options);
    INFO(bad);
    REQUIRE_FALSE(ws.ok());
    CHECK(ws.error().kind() == core::ErrorKind::kInvalidInput);
  }
}

TEST_CASE("An unreachable remote is kTransient on Load", "[git][workspace][errors]") {
  testing::TempDir tmp;
  GitWorkspaceOptions options;
  options.cache_dir = tmp.Sub("cache");
  // Port 9 on loopback: nothing listens there, so the connection is refused at once.
  options.repo = "http://127.0.0.1:9/nothing.git";
  auto ws = GitWorkspace::Open(options);
  REQUIRE(ws.ok());
  GitDesiredStateSource source(*ws, {});
  auto snapshot = source.Load("main");
  REQUIRE_FALSE(snapshot.ok());
  CHECK(snapshot.error().kind() == core::ErrorKind::kTransient);
}

// Sets `key` in the Git configuration file of the repository at `path`.
void SetRepoConfig(const std::string& path, const std::string& key, const std::string& value) {
  git_repository* repo = nullptr;
  REQUIRE(git_repository_open_bare(&repo, path.c_str()) == 0);
  git_config* config = nullptr;
  REQUIRE(git_repository_config(&config, repo) == 0);
  CHECK(git_config_set_string(config, key.c_str(), value.c_str()) == 0);
  git_config_free(config);
  git_repository_free(repo);
}

TEST_CASE("url.<base>.insteadOf rules rewrite where the remote is reached, the longest first",
          "[git][workspace]") {
  Repo repo;
  const std::string commit = repo.PushInitial();
  // A host that does not exist, mapped onto the real remote's directory by a rule in the
  // clone's configuration (which the user's and the system's are read with).
  const std::string url = "https://git.example.invalid/team/remote.git";
  const std::string clone = repo.Workspace(url)->clone_path();
  SetRepoConfig(clone, "url.file://" + repo.tmp.path() + "/.insteadOf",
                "https://git.example.invalid/team/");
  SetRepoConfig(clone, "url.file:///nowhere/.insteadOf", "https://git.example.invalid/");

  auto ws = repo.Workspace(url);
  CHECK(ws->url() == url);
  CHECK(ws->remote_url() == "file://" + repo.remote);
  REQUIRE(ws->Fetch().ok());
  GitDesiredStateSource source(ws, {});
  auto snapshot = source.Load("main");
  REQUIRE(snapshot.ok());
  CHECK(snapshot->commit == commit);
  CHECK(repo.Workspace(repo.remote)->remote_url() == repo.remote);
}

TEST_CASE("The recorded URL and the cache dir name never hold credentials", "[git][workspace]") {
  CHECK(adapters::NormaliseRepoUrl("https://user:s3cret@example.com/org/repo.git") ==
        "https://example.com/org/repo.git");
  const std::string with =
      adapters::GitCacheDirName("https://user:s3cret@example.com/org/repo.git");
  const std::string without = adapters::GitCacheDirName("https://example.com/org/repo.git");
  CHECK(with == without);
  CHECK(with.find("s3cret") == std::string::npos);
  CHECK(with.rfind("repo-", 0) == 0);
  CHECK(adapters::GitCacheDirName("git@example.com:org/other.git") != without);
  CHECK(adapters::NormaliseRepoUrl("git@example.com:org/repo.git") ==
        "git@example.com:org/repo.git");
}

}  // namespace
}  // namespace rg
