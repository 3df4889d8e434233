// The persistent parse cache behind the libgit2 source and status store, on real repositories:
// a new process over an unchanged tree parses nothing, a one-file change parses one file, and
// what it reads equals what a reader without a cache reads.

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <string>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/parse_cache.h"
#include "reconciler/spec/status_codec.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

using adapters::GitDesiredStateOptions;
using adapters::GitDesiredStateSource;
using adapters::GitStatusStore;
using adapters::GitStatusStoreOptions;
using adapters::GitWorkspace;
using adapters::ParseCache;

constexpr const char* kVersion = "ray-gitops test";
constexpr const char* kBranch = "ray-gitops/status";

std::string Spec(const std::string& command) {
  return "workload: custom\nentrypoint: " + command + "\nenv_vars:\n  A: \"1\"\n";
}

struct Repo : testing::TestRemote {
  std::string CachePath() const { return adapters::ParseCachePath(tmp.Sub("cache"), remote); }

  // A fresh process's view: a new workspace over the same clone and a cache read from disk.
  std::shared_ptr<GitWorkspace> Workspace() {
    adapters::GitWorkspaceOptions options;
    options.repo = remote;
    options.cache_dir = tmp.Sub("cache");
    auto ws = GitWorkspace::Open(options);
    if (!ws) FAIL(ws.error().ToString());
    return *ws;
  }

  std::unique_ptr<GitDesiredStateSource> Source(std::shared_ptr<ParseCache> cache) {
    GitDesiredStateOptions options;
    options.parse_cache = std::move(cache);
    return std::make_unique<GitDesiredStateSource>(Workspace(), options);
  }

  std::unique_ptr<GitStatusStore> Store(std::shared_ptr<ParseCache> cache) {
    GitStatusStoreOptions options;
    options.branch = kBranch;
    options.parse_cache = std::move(cache);
    return std::make_unique<GitStatusStore>(Workspace(), options);
  }

  std::shared_ptr<ParseCache> Cache() {
    return std::make_shared<ParseCache>(CachePath(), kVersion);
  }

  void PushSpecs(int n) {
    person->Write("cluster.yaml", "address: http://127.0.0.1:8265\nshared_root: /data\n");
    for (int i = 0; i < n; ++i) {
      person->Write("jobs/job-" + std::to_string(i) + ".yaml", Spec("echo " + std::to_string(i)));
    }
    person->Write("jobs/broken.yaml", "workload: [unclosed\n");
    person->CommitAndPush("main", "specs");
  }

  void PushStatus(int n, const std::string& message) {
    for (int i = 0; i < n; ++i) {
      core::StatusRecord r;
      r.name = "job-" + std::to_string(i);
      r.phase = core::Phase::kRunning;
      r.message = message;
      person->Write(spec::StatusFilePath(r.name), spec::EncodeStatusYaml(r));
    }
    person->Commit(kBranch, "status", "main");
    person->Push(kBranch);
  }
};

void RequireSameSnapshot(const ports::DesiredSnapshot& a, const ports::DesiredSnapshot& b) {
  CHECK(a.commit == b.commit);
  CHECK(a.texts == b.texts);
  CHECK(a.state.cluster == b.state.cluster);
  CHECK(a.state.cluster_diagnostics == b.state.cluster_diagnostics);
  CHECK(a.state.jobs == b.state.jobs);
  REQUIRE(a.state.invalid.size() == b.state.invalid.size());
  for (size_t i = 0; i < a.state.invalid.size(); ++i) {
    CHECK(a.state.invalid[i].path == b.state.invalid[i].path);
    CHECK(a.state.invalid[i].name == b.state.invalid[i].name);
    CHECK(a.state.invalid[i].diagnostics == b.state.invalid[i].diagnostics);
  }
}

TEST_CASE(
    "A new source with a warm cache parses nothing for an unchanged tree, one file after "
    "a one-file change",
    "[git][parse_cache]") {
  Repo repo;
  repo.PushSpecs(20);
  {
    auto cache = repo.Cache();
    auto source = repo.Source(cache);
    REQUIRE(source->Load("main").ok());
    CHECK(source->spec_parses() == 21);
    CHECK(source->cluster_parses() == 1);
    REQUIRE(cache->Save().ok());
  }
  {
    auto cache = repo.Cache();
    auto source = repo.Source(cache);
    auto warm = source->Load("main");
    REQUIRE(warm.ok());
    CHECK(source->parses() == 0);
    auto cold = repo.Source(nullptr)->Load("main");
    REQUIRE(cold.ok());
    RequireSameSnapshot(*warm, *cold);
    REQUIRE(cache->Save().ok());
    CHECK(cache->saves() == 0);  // nothing new: the file is left alone
  }
  repo.person->Write("jobs/job-3.yaml", Spec("echo changed"));
  repo.person->CommitAndPush("main", "one change");
  auto cache = repo.Cache();
  auto source = repo.Source(cache);
  auto warm = source->Load("main");
  REQUIRE(warm.ok());
  CHECK(source->spec_parses() == 1);
  CHECK(source->cluster_parses() == 0);
  CHECK(source->SpecText(*warm, "jobs/job-3.yaml") == Spec("echo changed"));
  auto cold = repo.Source(nullptr)->Load("main");
  REQUIRE(cold.ok());
  RequireSameSnapshot(*warm, *cold);
  // The same source again: its own map answers, and the persistent cache keeps the entries.
  REQUIRE(source->Load("main").ok());
  CHECK(source->spec_parses() == 1);
  REQUIRE(cache->Save().ok());
  CHECK(cache->saves() == 1);
  CHECK(repo.Cache()->size() == 23);  // 21 specs and the cluster file now, 1 older version
}

TEST_CASE("What a narrow load parsed goes into the cache with the next full load, unparsed",
          "[git][parse_cache]") {
  Repo repo;
  repo.PushSpecs(5);
  auto cache = repo.Cache();
  auto source = repo.Source(cache);
  auto first = source->Load("main");
  REQUIRE(first.ok());
  const int parsed = source->spec_parses();
  repo.person->Write("jobs/job-2.yaml", Spec("echo narrow"));
  repo.person->CommitAndPush("main", "one change");
  REQUIRE(source->Head("main").ok());
  auto changes = source->LoadChanges("main", first->commit, 64);
  REQUIRE(changes.ok());
  REQUIRE(changes->has_value());
  CHECK((*changes)->gone == std::vector<std::string>{"jobs/job-2.yaml"});
  REQUIRE((*changes)->snapshot.state.jobs.size() == 1);
  CHECK((*changes)->snapshot.state.jobs[0].name == "job-2");
  CHECK(source->spec_parses() == parsed + 1);
  // The full load that follows finds the changed file in the cache: parsed once in all.
  auto full = source->Load("main");
  REQUIRE(full.ok());
  CHECK(source->spec_parses() == parsed + 1);
  CHECK(source->SpecText(*full, "jobs/job-2.yaml") == Spec("echo narrow"));
  RequireSameSnapshot(*full, *repo.Source(nullptr)->Load("main"));
}

TEST_CASE("A damaged cache file is rebuilt and the source reads correctly meanwhile",
          "[git][parse_cache]") {
  Repo repo;
  repo.PushSpecs(5);
  {
    auto cache = repo.Cache();
    REQUIRE(repo.Source(cache)->Load("main").ok());
    REQUIRE(cache->Save().ok());
  }
  std::string bytes = testing::ReadFileText(repo.CachePath());
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
  std::ofstream(repo.CachePath(), std::ios::binary | std::ios::trunc) << bytes;

  auto cache = repo.Cache();
  CHECK_FALSE(cache->load_problem().empty());
  auto source = repo.Source(cache);
  auto read = source->Load("main");
  REQUIRE(read.ok());
  CHECK(source->spec_parses() == 6);
  RequireSameSnapshot(*read, *repo.Source(nullptr)->Load("main"));
  REQUIRE(cache->Save().ok());
  auto again = repo.Source(repo.Cache());
  REQUIRE(again->Load("main").ok());
  CHECK(again->parses() == 0);
}

TEST_CASE(
    "A new status store with a warm cache decodes nothing for an unchanged ledger, one "
    "file after a one-file change",
    "[git][parse_cache]") {
  Repo repo;
  repo.PushSpecs(1);
  repo.PushStatus(10, "first");
  {
    auto cache = repo.Cache();
    auto store = repo.Store(cache);
    REQUIRE(store->ReadLedger({}).ok());
    CHECK(store->status_parses() == 10);
    REQUIRE(cache->Save().ok());
  }
  {
    auto cache = repo.Cache();
    auto store = repo.Store(cache);
    auto warm = store->ReadLedger({});
    REQUIRE(warm.ok());
    CHECK(store->status_parses() == 0);
    auto cold = repo.Store(nullptr)->ReadLedger({});
    REQUIRE(cold.ok());
    CHECK(*warm == *cold);
    // A write reads the tip again: from the store's own map.
    core::StatusRecord changed = warm->at("job-2");
    changed.phase = core::Phase::kSucceeded;
    changed.status = core::RayJobStatus::kSucceeded;
    ports::StatusCommit message;
    message.subject = "job-2 succeeded";
    REQUIRE(store->Write({{"job-2", changed}}, message).ok());
    CHECK(store->status_parses() == 0);
    REQUIRE(cache->Save().ok());
  }
  auto cache = repo.Cache();
  auto store = repo.Store(cache);
  auto warm = store->ReadLedger({});
  REQUIRE(warm.ok());
  CHECK(store->status_parses() == 1);  // the file the write changed
  CHECK(warm->at("job-2").phase == core::Phase::kSucceeded);
  auto cold = repo.Store(nullptr)->ReadLedger({});
  REQUIRE(cold.ok());
  CHECK(*warm == *cold);
  REQUIRE(store->ReadLedger({}).ok());
  CHECK(store->status_parses() == 1);
}

TEST_CASE("Status files that are no record are skipped as without a cache, and decoded each time",
          "[git][parse_cache]") {
  Repo repo;
  repo.PushSpecs(1);
  repo.person->Write("status/bad.yaml", "name: [unclosed\n");
  repo.person->Write("status/other.yaml", spec::EncodeStatusYaml([] {
                       core::StatusRecord r;
                       r.name = "job-0";
                       return r;
                     }()));
  repo.PushStatus(2, "x");
  auto cold_store = repo.Store(nullptr);
  REQUIRE(cold_store->ReadLedger({}).ok());
  for (int run = 0; run < 2; ++run) {
    auto cache = repo.Cache();
    auto store = repo.Store(cache);
    auto ledger = store->ReadLedger({});
    REQUIRE(ledger.ok());
    CHECK(ledger->size() == 2);
    // The unreadable file is decoded every time; the record under another name only at first.
    CHECK(store->status_parses() == (run == 0 ? 4 : 1));
    const auto skipped = store->SkippedFiles();
    const auto expected = cold_store->SkippedFiles();
    REQUIRE(skipped.size() == expected.size());
    for (size_t i = 0; i < skipped.size(); ++i) {
      CHECK(skipped[i].path == expected[i].path);
      CHECK(skipped[i].name == expected[i].name);
      CHECK(skipped[i].problem == expected[i].problem);
    }
    REQUIRE(cache->Save().ok());
  }
}

}  // namespace
}  // namespace rg
