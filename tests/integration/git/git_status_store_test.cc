// The status branch store against real repositories: writes, reads back, commits only on a
// change, resolves push races by re-applying its changes, and walks history.

#include "reconciler/adapters/git_status_store.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_pack_writer.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/parse_cache.h"
#include "reconciler/spec/status_codec.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

using adapters::GitStatusStore;
using adapters::GitStatusStoreOptions;
using adapters::GitWorkspace;
using core::Phase;
using core::RayJobStatus;

constexpr const char* kBranch = "ray-gitops/status";

core::StatusRecord Record(const std::string& name, Phase phase, RayJobStatus status,
                          int attempt = 0) {
  core::StatusRecord r;
  r.name = name;
  r.spec_path = "jobs/" + name + ".yaml";
  r.spec_hash = "3f2a1c9b0e";
  r.spec_commit = std::string(40, 'a');
  r.phase = phase;
  r.submission_id = name + "-3f2a1c9b0e";
  r.attempt = attempt;
  r.status = status;
  r.start_time_ms = 1795000000000;
  core::AttemptRecord a;
  a.attempt = attempt;
  a.submission_id = r.submission_id;
  a.spec_hash = r.spec_hash;
  a.status = status;
  a.phase = phase;
  r.attempts.push_back(a);
  return r;
}

ports::StatusCommit Message(const std::string& subject) {
  ports::StatusCommit m;
  m.subject = subject;
  m.body_lines = {"line one", "line two"};
  m.trailers = {{"Spec-Commit", std::string(40, 'a')}, {"Ray-Cluster", "http://127.0.0.1:8265"}};
  return m;
}

struct Repo : testing::TestRemote {
  Repo() {
    person->Write("cluster.yaml", "address: http://127.0.0.1:8265\n");
    person->Write("jobs/a.yaml", "workload: custom\nentrypoint: echo a\n");
    person->CommitAndPush("main", "initial");
  }

  // Workspaces of one cache folder share their clone; another folder is another clone.
  std::shared_ptr<GitWorkspace> Workspace(const std::string& cache = "cache",
                                          adapters::GitWorkspaceOptions options = {}) {
    options.repo = remote;
    options.cache_dir = tmp.Sub(cache);
    auto ws = GitWorkspace::Open(options);
    if (!ws) FAIL(ws.error().ToString());
    return *ws;
  }
};

TEST_CASE("A missing status branch reads as an empty ledger", "[git][status]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), {});
  auto ledger = store.ReadLedger({});
  REQUIRE(ledger.ok());
  CHECK(ledger->empty());
  auto history = store.History("a");
  REQUIRE(history.ok());
  CHECK(history->empty());
}

// The daemon's early check (engine/pass_memo.h) reads these instead of the trees.
TEST_CASE("Tip and KnownTip follow the status branch, and Head the watched one", "[git][status]") {
  Repo repo;
  std::shared_ptr<GitWorkspace> ws = repo.Workspace();
  GitStatusStore store(ws, {});
  CHECK_FALSE(store.KnownTip());
  auto none = store.Tip();
  REQUIRE(none.ok());
  CHECK(**none == "");  // no status branch yet
  REQUIRE(store.ReadLedger({}).ok());
  CHECK(store.KnownTip() == std::optional<std::string>(""));

  auto commit = store.Write({{"a", Record("a", Phase::kRunning, RayJobStatus::kRunning)}},
                            Message("a: new -> Running"));
  REQUIRE(commit.ok());
  CHECK(store.KnownTip() == std::optional<std::string>(*commit));
  auto tip = store.Tip();
  REQUIRE(tip.ok());
  CHECK(**tip == *commit);
  // Another writer moves the branch: Tip sees it after its fetch, KnownTip not until a read.
  testing::GitTestClone other(repo.remote, repo.tmp.Sub("other.git"));
  other.Fetch();
  other.Write("status/b.yaml",
              spec::EncodeStatusYaml(Record("b", Phase::kRunning, RayJobStatus::kRunning)));
  other.CommitAndPush(kBranch, "b: new -> Running");
  tip = store.Tip();
  REQUIRE(tip.ok());
  CHECK(**tip != *commit);
  CHECK(store.KnownTip() == std::optional<std::string>(*commit));
  REQUIRE(store.ReadLedger({}).ok());
  CHECK(store.KnownTip() == *tip);

  adapters::GitDesiredStateSource source(ws, {});
  auto head = source.Head("main");
  REQUIRE(head.ok());
  auto loaded = source.Load("main");
  REQUIRE(loaded.ok());
  CHECK(**head == loaded->commit);
  CHECK(source.parses() == 2);  // Head read no tree: the Load parsed both files
  repo.person->Write("jobs/a.yaml", "workload: custom\nentrypoint: echo b\n");
  repo.person->CommitAndPush("main", "a changes");
  head = source.Head("main");
  REQUIRE(head.ok());
  CHECK(**head != loaded->commit);
  CHECK_FALSE(source.Head("no-such-branch").ok());
}

TEST_CASE("Write commits the records with trailers and STATUS.md, and reads them back",
          "[git][status]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), {});
  const auto a = Record("a", Phase::kRunning, RayJobStatus::kRunning);
  const auto b = Record("b", Phase::kFailed, RayJobStatus::kFailed);
  auto commit = store.Write({{"a", a}, {"b", b}}, Message("ray-gitops: 2 transitions"));
  REQUIRE(commit.ok());
  CHECK(commit->size() == 40);
  CHECK(testing::BranchTip(repo.remote, kBranch) == *commit);
  CHECK(testing::ListFiles(repo.remote, kBranch) ==
        std::vector<std::string>{"STATUS.md", "status/a.yaml", "status/b.yaml"});
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/a.yaml") == spec::EncodeStatusYaml(a));
  const auto markdown = testing::ReadFileAt(repo.remote, kBranch, "STATUS.md");
  REQUIRE(markdown.has_value());
  CHECK(markdown->find("2 jobs: 1 Running, 1 Failed\n") != std::string::npos);
  // A local repository has no web page: the name is not a link; the status file is.
  CHECK(markdown->find("| a | Running | 0 | `a-3f2a1c9b0e` |") != std::string::npos);
  CHECK(markdown->find("[status](status/a.yaml)") != std::string::npos);
  CHECK(markdown->find("| b | Failed |") != std::string::npos);
  CHECK(markdown->find("- Spec commit: `" + std::string(40, 'a') + "`") != std::string::npos);

  const auto messages = testing::CommitMessages(repo.remote, kBranch);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] == "ray-gitops: 2 transitions\n\nline one\nline two\n\nSpec-Commit: " +
                           std::string(40, 'a') + "\nRay-Cluster: http://127.0.0.1:8265\n");

  // The watched branch is untouched.
  CHECK(testing::CountCommits(repo.remote, "main") == 1);

  // A fresh store (a restarted daemon) reads the same ledger back.
  GitStatusStore reader(repo.Workspace(), {});
  auto ledger = reader.ReadLedger({});
  REQUIRE(ledger.ok());
  REQUIRE(ledger->size() == 2);
  CHECK(ledger->at("a") == a);
  CHECK(ledger->at("b") == b);
}

TEST_CASE("Nothing is committed when nothing a person cares about changed", "[git][status]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), {});
  const auto a = Record("a", Phase::kRunning, RayJobStatus::kRunning);
  REQUIRE(store.Write({{"a", a}}, Message("first")).ok());
  REQUIRE(testing::CountCommits(repo.remote, kBranch) == 1);

  auto same = store.Write({{"a", a}}, Message("same again"));
  REQUIRE(same.ok());
  CHECK(same->empty());

  // A new spec commit alone is bookkeeping, not news.
  auto bookkeeping = a;
  bookkeeping.spec_commit = std::string(40, 'b');
  auto quiet = store.Write({{"a", bookkeeping}}, Message("bookkeeping"));
  REQUIRE(quiet.ok());
  CHECK(quiet->empty());

  // Deleting a file that does not exist is no change either.
  auto no_delete = store.Write({{"ghost", std::nullopt}}, Message("ghost"));
  REQUIRE(no_delete.ok());
  CHECK(no_delete->empty());
  CHECK(testing::CountCommits(repo.remote, kBranch) == 1);

  auto done = a;
  done.phase = Phase::kSucceeded;
  done.status = RayJobStatus::kSucceeded;
  auto changed = store.Write({{"a", done}}, Message("a: Running -> Succeeded"));
  REQUIRE(changed.ok());
  CHECK_FALSE(changed->empty());
  CHECK(testing::CountCommits(repo.remote, kBranch) == 2);
}

TEST_CASE("A deleted record removes its file and its STATUS.md row", "[git][status]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), {});
  REQUIRE(store
              .Write({{"a", Record("a", Phase::kRunning, RayJobStatus::kRunning)},
                      {"b", Record("b", Phase::kRemoved, RayJobStatus::kStopped)}},
                     Message("two"))
              .ok());
  auto commit = store.Write({{"b", std::nullopt}}, Message("b deleted"));
  REQUIRE(commit.ok());
  CHECK_FALSE(commit->empty());
  CHECK(testing::ListFiles(repo.remote, kBranch) ==
        std::vector<std::string>{"STATUS.md", "status/a.yaml"});
  const auto markdown = testing::ReadFileAt(repo.remote, kBranch, "STATUS.md");
  REQUIRE(markdown.has_value());
  CHECK(markdown->find("| b |") == std::string::npos);
  CHECK(markdown->find("| a |") != std::string::npos);
}

TEST_CASE("A push race is resolved by re-applying the changes on the new tip", "[git][status]") {
  Repo repo;
  testing::GitTestClone other(repo.remote, repo.tmp.Sub("other.git"));
  const auto theirs = Record("other", Phase::kSucceeded, RayJobStatus::kSucceeded);

  GitStatusStoreOptions options;
  int hook_calls = 0;
  options.before_push = [&](int attempt) {
    ++hook_calls;
    if (attempt != 0) return;
    // Another writer commits between our build and our push.
    other.Fetch();
    other.Write("status/other.yaml", spec::EncodeStatusYaml(theirs));
    other.CommitAndPush(kBranch, "other: new -> Succeeded");
  };
  GitStatusStore store(repo.Workspace(), options);
  const auto mine = Record("a", Phase::kRunning, RayJobStatus::kRunning);
  auto commit = store.Write({{"a", mine}}, Message("a: new -> Running"));
  REQUIRE(commit.ok());
  CHECK(hook_calls == 2);
  CHECK(store.push_attempts() == 2);
  CHECK(testing::BranchTip(repo.remote, kBranch) == *commit);
  CHECK(testing::ListFiles(repo.remote, kBranch) ==
        std::vector<std::string>{"STATUS.md", "status/a.yaml", "status/other.yaml"});
  CHECK(testing::CountCommits(repo.remote, kBranch) == 2);
  // STATUS.md is rebuilt from every record on the new tip, the other writer's included.
  const auto markdown = testing::ReadFileAt(repo.remote, kBranch, "STATUS.md");
  REQUIRE(markdown.has_value());
  CHECK(markdown->find("| other | Succeeded |") != std::string::npos);
  CHECK(markdown->find("| a | Running |") != std::string::npos);

  auto ledger = store.ReadLedger({});
  REQUIRE(ledger.ok());
  CHECK(ledger->at("other") == theirs);
  CHECK(ledger->at("a") == mine);
}

// Loose objects under objects/xx/ of a repository.
int CountLooseObjects(const std::string& repo_path) {
  int count = 0;
  for (const auto& dir : std::filesystem::directory_iterator(repo_path + "/objects")) {
    const std::string name = dir.path().filename().string();
    if (name.size() != 2 || !dir.is_directory()) continue;
    for ([[maybe_unused]] const auto& file : std::filesystem::directory_iterator(dir.path())) {
      ++count;
    }
  }
  return count;
}

// The files of objects/pack that are neither a pack nor its index (a file left half-written).
std::vector<std::string> StrayPackFiles(const std::string& repo_path) {
  std::vector<std::string> stray;
  for (const auto& file : std::filesystem::directory_iterator(repo_path + "/objects/pack")) {
    const std::string ext = file.path().extension().string();
    if (ext != ".pack" && ext != ".idx") stray.push_back(file.path().filename().string());
  }
  return stray;
}

TEST_CASE("A write of 100 files or more puts its objects in one pack, a race included",
          "[git][status]") {
  Repo repo;
  testing::GitTestClone other(repo.remote, repo.tmp.Sub("other.git"));
  const auto theirs = Record("other", Phase::kSucceeded, RayJobStatus::kSucceeded);
  GitStatusStoreOptions options;
  bool race = true;
  options.before_push = [&](int attempt) {
    if (!race || attempt != 0) return;
    other.Fetch();
    other.Write("status/other.yaml", spec::EncodeStatusYaml(theirs));
    other.CommitAndPush(kBranch, "other: new -> Succeeded");
  };
  std::shared_ptr<GitWorkspace> ws = repo.Workspace();
  GitStatusStore store(ws, options);
  const int loose_before = CountLooseObjects(ws->clone_path());

  // 150 new records, and the branch moved by another writer before the first push.
  ports::StatusChanges many;
  for (int i = 0; i < 150; ++i) {
    const std::string name = "job-" + std::to_string(1000 + i);
    many.emplace(name, Record(name, Phase::kRunning, RayJobStatus::kRunning));
  }
  auto commit = store.Write(many, Message("150 new"));
  REQUIRE(commit.ok());
  CHECK(store.push_attempts() == 2);
  CHECK(store.packed_writes() == 2);  // one pack per attempt
  // Loose: five objects per attempt (the root tree before and after STATUS.md, status/,
  // STATUS.md, the commit) and the empty tree the first one starts from; never the 150 files.
  CHECK(CountLooseObjects(ws->clone_path()) - loose_before <= 11);
  CHECK(StrayPackFiles(ws->clone_path()).empty());
  CHECK(testing::BranchTip(repo.remote, kBranch) == *commit);
  CHECK(testing::ListFiles(repo.remote, kBranch).size() == 152);  // + other.yaml, STATUS.md

  // Everything reads back through another clone, and through this one.
  GitStatusStore fresh(repo.Workspace("cache2"), {});
  auto ledger = fresh.ReadLedger({});
  REQUIRE(ledger.ok());
  CHECK(ledger->size() == 151);
  CHECK(ledger->at("job-1042") == many.at("job-1042").value());
  CHECK(ledger->at("other") == theirs);
  auto own = store.ReadLedger({});
  REQUIRE(own.ok());
  CHECK(*own == *ledger);

  // A small write stays loose, as git keeps few objects; it still builds on the packed ones.
  race = false;
  auto again =
      store.Write({{"job-1042", Record("job-1042", Phase::kSucceeded, RayJobStatus::kSucceeded)}},
                  Message("job-1042: Running -> Succeeded"));
  REQUIRE(again.ok());
  CHECK(store.packed_writes() == 2);
  CHECK(testing::ListFiles(repo.remote, kBranch).size() == 152);
  auto after = fresh.ReadLedger({});
  REQUIRE(after.ok());
  CHECK(after->at("job-1042").phase == Phase::kSucceeded);
  CHECK(after->at("job-1149") == many.at("job-1149").value());
}

TEST_CASE("Past 16 packs a fetch compacts the clone: one pack, no loose object, no stray file",
          "[git][status]") {
  Repo repo;
  std::shared_ptr<GitWorkspace> ws = repo.Workspace();
  GitStatusStore store(ws, {});
  ports::StatusChanges many;
  for (int i = 0; i < 120; ++i) {
    const std::string name = "job-" + std::to_string(1000 + i);
    many.emplace(name, Record(name, Phase::kRunning, RayJobStatus::kRunning));
  }
  REQUIRE(store.Write(many, Message("120 new")).ok());
  REQUIRE(store.packed_writes() == 1);
  // More packs than the bound (one blob each, reachable from nothing), and the file a writer
  // that died mid-pack leaves behind.
  for (int i = 0; i < 17; ++i) {
    auto writer = adapters::git::PackWriter::Create(ws->repository());
    REQUIRE(writer.ok());
    REQUIRE((*writer)->AddBlob("unreachable " + std::to_string(i)).ok());
    REQUIRE((*writer)->Finish().ok());
  }
  const std::string stray = ws->clone_path() + "/objects/pack/" +
                            std::string(adapters::git::kPackTempPrefix) + "999999_0";
  std::ofstream(stray) << "PACK";
  REQUIRE(StrayPackFiles(ws->clone_path()).size() == 1);
  const auto pack_names = [&]() {
    std::set<std::string> names;
    for (const auto& f : std::filesystem::directory_iterator(ws->clone_path() + "/objects/pack")) {
      if (f.path().extension() == ".pack") names.insert(f.path().filename().string());
    }
    return names;
  };
  const std::set<std::string> before = pack_names();
  REQUIRE(before.size() == 18);

  REQUIRE(ws->Fetch().ok());
  CHECK(ws->compactions() == 1);
  CHECK(StrayPackFiles(ws->clone_path()).empty());
  CHECK(CountLooseObjects(ws->clone_path()) == 0);
  // The compacted pack, and at most one the fetch after it brought: none of the 18 before.
  const std::set<std::string> after = pack_names();
  CHECK(after.size() <= 2);
  for (const std::string& name : after) CHECK_FALSE(before.contains(name));
  // Everything the refs reach is still there.
  auto ledger = store.ReadLedger({});
  REQUIRE(ledger.ok());
  CHECK(ledger->size() == 120);
  CHECK(ledger->at("job-1077") == many.at("job-1077").value());
}

TEST_CASE("A push race with a second replica loses nothing the other one recorded",
          "[git][status]") {
  Repo repo;
  auto running = Record("a", Phase::kRunning, RayJobStatus::kRunning);
  {
    GitStatusStore setup(repo.Workspace(), {});
    REQUIRE(setup.Write({{"a", running}}, Message("a: new -> Running")).ok());
  }
  testing::GitTestClone other(repo.remote, repo.tmp.Sub("other.git"));
  auto succeeded = Record("a", Phase::kSucceeded, RayJobStatus::kSucceeded);
  succeeded.end_time_ms = 1795000100000;

  GitStatusStoreOptions options;
  options.before_push = [&](int attempt) {
    if (attempt != 0) return;
    // The other replica records the run's end between our build and our push.
    other.Fetch();
    other.Write("status/a.yaml", spec::EncodeStatusYaml(succeeded));
    other.CommitAndPush(kBranch, "a: Running -> Succeeded");
  };
  GitStatusStore store(repo.Workspace(), options);
  REQUIRE(store.ReadLedger({}).ok());
  // Our older view of the same run, with a message the other replica did not have.
  auto ours = running;
  ours.message = "still running, as this replica last saw it";
  REQUIRE(store.Write({{"a", ours}}, Message("a: message")).ok());

  auto ledger = store.ReadLedger({});
  REQUIRE(ledger.ok());
  CHECK(ledger->at("a").phase == Phase::kSucceeded);
  CHECK(ledger->at("a").status == RayJobStatus::kSucceeded);
  CHECK(ledger->at("a").attempts.at(0).status == RayJobStatus::kSucceeded);
}

TEST_CASE("A writer that keeps losing the race gives up with kConflict", "[git][status]") {
  Repo repo;
  testing::GitTestClone other(repo.remote, repo.tmp.Sub("other.git"));
  GitStatusStoreOptions options;
  options.max_push_attempts = 3;
  int round = 0;
  options.before_push = [&](int) {
    other.Fetch();
    other.Write("status/noise.yaml", "name: noise\nspec_path: x\nphase: Pending\nround: " +
                                         std::to_string(round++) + "\n");
    other.CommitAndPush(kBranch, "noise");
  };
  GitStatusStore store(repo.Workspace(), options);
  auto result =
      store.Write({{"a", Record("a", Phase::kRunning, RayJobStatus::kRunning)}}, Message("a"));
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().kind() == core::ErrorKind::kConflict);
  CHECK(store.push_attempts() == 3);
  CHECK_FALSE(testing::ReadFileAt(repo.remote, kBranch, "status/a.yaml").has_value());
}

// A push into a local remote updates its refs in-process: killed between taking the branch's
// lock and renaming it, it leaves refs/heads/<branch>.lock, and no later push could record.
TEST_CASE("A lock left on the status branch by a killed push is removed and the push goes on",
          "[git][status]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), GitStatusStoreOptions{});
  REQUIRE(store.Write({{"a", Record("a", Phase::kRunning, RayJobStatus::kRunning)}}, Message("a"))
              .ok());
  const std::string lock = repo.remote + "/refs/heads/" + kBranch + ".lock";
  std::ofstream(lock) << std::string(40, 'f') << "\n";  // what a dead writer left
  auto written =
      store.Write({{"b", Record("b", Phase::kPending, RayJobStatus::kPending)}}, Message("b"));
  REQUIRE(written.ok());
  CHECK_FALSE(std::filesystem::exists(lock));
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/b.yaml").has_value());
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/a.yaml").has_value());
}

TEST_CASE("A lock a live writer keeps renewing is never removed, and the refusal names it",
          "[git][status]") {
  Repo repo;
  GitStatusStoreOptions options;
  options.max_push_attempts = 2;
  GitStatusStore store(repo.Workspace(), options);
  REQUIRE(store.Write({{"a", Record("a", Phase::kRunning, RayJobStatus::kRunning)}}, Message("a"))
              .ok());
  const std::string lock = repo.remote + "/refs/heads/" + kBranch + ".lock";
  std::atomic<bool> done{false};
  std::atomic<int> removed_under_it{0};
  std::ofstream(lock) << "0\n";
  std::thread writer([&] {
    for (int i = 1; !done; ++i) {
      if (!std::filesystem::exists(lock)) ++removed_under_it;
      std::ofstream(lock + ".next") << i << "\n";
      std::filesystem::rename(lock + ".next", lock);  // a new file each time, as git's are
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  auto written =
      store.Write({{"b", Record("b", Phase::kPending, RayJobStatus::kPending)}}, Message("b"));
  done = true;
  writer.join();
  REQUIRE_FALSE(written.ok());
  CHECK(written.error().kind() == core::ErrorKind::kConflict);
  CHECK(written.error().message().find(kBranch + std::string(".lock")) != std::string::npos);
  CHECK(removed_under_it == 0);
  CHECK(std::filesystem::exists(lock));
}

TEST_CASE("History lists the commits that touched one job, newest first", "[git][status]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), {});
  auto a = Record("a", Phase::kPending, RayJobStatus::kPending);
  REQUIRE(store.Write({{"a", a}}, Message("a: new -> Pending")).ok());
  REQUIRE(store
              .Write({{"b", Record("b", Phase::kPending, RayJobStatus::kPending)}},
                     Message("b: new -> Pending"))
              .ok());
  a.phase = Phase::kRunning;
  a.status = RayJobStatus::kRunning;
  REQUIRE(store.Write({{"a", a}}, Message("a: Pending -> Running")).ok());
  REQUIRE(store.Write({{"a", std::nullopt}}, Message("a: Running -> deleted")).ok());

  auto history = store.History("a");
  REQUIRE(history.ok());
  REQUIRE(history->size() == 3);
  CHECK((*history)[0].subject == "a: Running -> deleted");
  CHECK_FALSE((*history)[0].record.has_value());
  CHECK((*history)[1].subject == "a: Pending -> Running");
  REQUIRE((*history)[1].record.has_value());
  CHECK((*history)[1].record->phase == Phase::kRunning);
  CHECK((*history)[2].subject == "a: new -> Pending");
  REQUIRE((*history)[2].record.has_value());
  CHECK((*history)[2].record->phase == Phase::kPending);
  CHECK((*history)[2].time_ms > 0);
  CHECK((*history)[0].commit == testing::BranchTip(repo.remote, kBranch));
}

TEST_CASE("Same-branch mode: status lives on the watched branch and never becomes desired state",
          "[git][status][same-branch]") {
  Repo repo;
  auto ws = repo.Workspace();
  adapters::GitDesiredStateOptions source_options;
  source_options.excluded_dir = "status";
  adapters::GitDesiredStateSource source(ws, source_options);
  GitStatusStoreOptions store_options;
  store_options.branch = "main";
  GitStatusStore store(ws, store_options);

  auto first = source.Load("main");
  REQUIRE(first.ok());
  const int parses = source.parses();
  auto commit = store.Write({{"a", Record("a", Phase::kRunning, RayJobStatus::kRunning)}},
                            Message("a: new -> Running"));
  REQUIRE(commit.ok());
  CHECK(testing::BranchTip(repo.remote, "main") == *commit);
  CHECK(testing::ReadFileAt(repo.remote, "main", "jobs/a.yaml").has_value());

  // The daemon's own commit moves the branch, but no spec blob changed: nothing is parsed and
  // the desired state is the same.
  auto second = source.Load("main");
  REQUIRE(second.ok());
  CHECK(second->commit == *commit);
  CHECK(source.parses() == parses);
  CHECK(second->state.jobs.size() == first->state.jobs.size());
  CHECK(second->state.invalid.empty());

  // A person's push on top keeps the status file (the store re-applies on the new tip).
  repo.person->Fetch();
  repo.person->Write("jobs/b.yaml", "workload: custom\nentrypoint: echo b\n");
  repo.person->CommitAndPush("main", "add b");
  auto ledger = store.ReadLedger({});
  REQUIRE(ledger.ok());
  CHECK(ledger->count("a") == 1);
}

core::StatusRecord Owned(core::StatusRecord r, const std::string& instance,
                         const std::string& cluster) {
  r.instance = instance;
  r.ray_cluster = cluster;
  return r;
}

// A status file as written before ledgers had owners: no instance, no ray_cluster.
std::string LegacyYaml(const core::StatusRecord& r) {
  std::string text = spec::EncodeStatusYaml(r);
  for (const char* key : {"instance: null\n", "ray_cluster: null\n"}) {
    const size_t at = text.find(key);
    REQUIRE(at != std::string::npos);
    text.erase(at, std::string(key).size());
  }
  return text;
}

const ports::SkippedStatusFile* FindSkipped(const std::vector<ports::SkippedStatusFile>& files,
                                            const std::string& path) {
  for (const auto& f : files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

constexpr const char* kClusterA = "http://10.0.0.1:8265";
constexpr const char* kClusterB = "http://10.0.0.2:8265";

TEST_CASE("Files that are no usable status record are skipped and listed, the rest is read",
          "[git][status][skipped]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), {});
  const auto a = Record("a", Phase::kRunning, RayJobStatus::kRunning);
  REQUIRE(store.Write({{"a", a}}, Message("a")).ok());
  repo.person->Fetch();
  repo.person->Write("status/b.yaml", "name: b\nphase: [Running\n");
  repo.person->Write("status/notes.txt", "remember to buy milk\n");
  repo.person->Write("status/c.yaml",
                     spec::EncodeStatusYaml(Record("d", Phase::kRunning, RayJobStatus::kRunning)));
  repo.person->Write("status/Not_A_Job.yaml", spec::EncodeStatusYaml(a));
  repo.person->Write("status/sub/dir.yaml", spec::EncodeStatusYaml(a));
  repo.person->CommitAndPush(kBranch, "a person's edits");

  auto ledger = store.ReadLedger({});
  REQUIRE(ledger.ok());
  CHECK(ledger->size() == 1);
  CHECK(ledger->at("a") == a);
  const auto skipped = store.SkippedFiles();
  CHECK(skipped.size() == 5);
  const auto* b = FindSkipped(skipped, "status/b.yaml");
  REQUIRE(b != nullptr);
  CHECK(b->name == "b");
  CHECK(b->problem.starts_with("not a status record: "));
  const auto* notes = FindSkipped(skipped, "status/notes.txt");
  REQUIRE(notes != nullptr);
  CHECK(notes->name.empty());
  const auto* c = FindSkipped(skipped, "status/c.yaml");
  REQUIRE(c != nullptr);
  CHECK(c->name == "c");
  CHECK(c->problem == "holds the record of \"d\", not of \"c\"");
  const auto* bad_name = FindSkipped(skipped, "status/Not_A_Job.yaml");
  REQUIRE(bad_name != nullptr);
  CHECK(bad_name->name.empty());
  const auto* folder = FindSkipped(skipped, "status/sub");
  REQUIRE(folder != nullptr);
  CHECK(folder->problem == "a folder, not a status file");

  // Nothing readable at all is still a ledger (empty), not an error: the jobs of the skipped
  // files are the ones to freeze, not every job.
  repo.person->Fetch();
  repo.person->Remove("status/a.yaml");
  repo.person->CommitAndPush(kBranch, "only garbage left");
  auto garbage_only = store.ReadLedger({});
  REQUIRE(garbage_only.ok());
  CHECK(garbage_only->empty());
  CHECK(store.SkippedFiles().size() == 5);
}

TEST_CASE("A ledger read reopens the clone every few blobs and reads every record and skip",
          "[git][status][skipped]") {
  Repo repo;
  // Records written in three commits, fetched by the reader three times: three packs.
  GitStatusStore writer(repo.Workspace("writer"), {});
  adapters::GitWorkspaceOptions every_two;
  every_two.blobs_per_cache_drop = 2;
  std::shared_ptr<GitWorkspace> ws = repo.Workspace("reader", every_two);
  GitStatusStore reader(ws, {});
  std::map<std::string, core::StatusRecord> written;
  for (int round = 0; round < 3; ++round) {
    ports::StatusChanges changes;
    for (int i = 0; i < 2; ++i) {
      const std::string name = "job-" + std::to_string(round) + "-" + std::to_string(i);
      const core::StatusRecord record =
          Record(name, Phase::kRunning, RayJobStatus::kRunning, round);
      changes.emplace(name, record);
      written.emplace(name, record);
    }
    REQUIRE(writer.Write(changes, Message("round")).ok());
    REQUIRE(reader.ReadLedger({}).ok());
  }
  repo.person->Fetch();
  repo.person->Write("status/broken.yaml", "name: broken\nphase: [Running\n");
  repo.person->CommitAndPush(kBranch, "a broken file");

  // A store of its own over the reader's clone (the reader keeps what it decoded): all seven
  // blobs are read, the clone reopened after every second.
  GitStatusStore fresh(ws, {});
  const int drops_before = ws->cache_drops();
  auto ledger = fresh.ReadLedger({});
  REQUIRE(ledger.ok());
  CHECK(ws->cache_drops() - drops_before == 3);
  CHECK(*ledger == core::Ledger(written.begin(), written.end()));
  REQUIRE(fresh.SkippedFiles().size() == 1);
  CHECK(fresh.SkippedFiles()[0].path == "status/broken.yaml");

  // A fresh reader with the default bound reads the same, and the reopened clone writes.
  GitStatusStore plain(repo.Workspace("plain"), {});
  auto expected = plain.ReadLedger({});
  REQUIRE(expected.ok());
  CHECK(*ledger == *expected);
  const auto late = Record("late", Phase::kSucceeded, RayJobStatus::kSucceeded);
  REQUIRE(fresh.Write({{"late", late}}, Message("late")).ok());
  auto after = plain.ReadLedger({});
  REQUIRE(after.ok());
  CHECK(after->at("late") == late);
  CHECK(after->size() == written.size() + 1);
}

TEST_CASE("Write leaves files it could not read untouched and writes the other records",
          "[git][status][skipped]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), {});
  REQUIRE(store.Write({{"a", Record("a", Phase::kPending, RayJobStatus::kPending)}}, Message("a"))
              .ok());
  repo.person->Fetch();
  const std::string broken = "name: b\nphase: [Running\n";
  repo.person->Write("status/b.yaml", broken);
  repo.person->Write("status/notes.txt", "keep me\n");
  repo.person->CommitAndPush(kBranch, "a broken file");
  REQUIRE(store.ReadLedger({}).ok());

  const auto a = Record("a", Phase::kRunning, RayJobStatus::kRunning);
  auto written = store.Write(
      {{"a", a}, {"b", Record("b", Phase::kRunning, RayJobStatus::kRunning)}}, Message("a and b"));
  REQUIRE_FALSE(written.ok());
  CHECK(written.error().kind() == core::ErrorKind::kInvalidInput);
  CHECK(written.error().message().find("status/b.yaml is left as it is") != std::string::npos);
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/a.yaml") == spec::EncodeStatusYaml(a));
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/b.yaml") == broken);

  auto deleted = store.Write({{"b", std::nullopt}}, Message("b deleted"));
  REQUIRE_FALSE(deleted.ok());
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/b.yaml") == broken);
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/notes.txt") == "keep me\n");
}

TEST_CASE("Write refuses a name that is no job name and still records every other job",
          "[git][status][skipped]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), {});
  auto dotdot = Record("a", Phase::kPending, RayJobStatus::kPending);
  dotdot.name = "../x";
  auto nested = dotdot;
  nested.name = "sub/dir";
  const auto a = Record("a", Phase::kPending, RayJobStatus::kPending);
  auto written = store.Write({{"../x", dotdot}, {"sub/dir", nested}, {"a", a}}, Message("three"));
  REQUIRE_FALSE(written.ok());
  CHECK(written.error().kind() == core::ErrorKind::kInvalidInput);
  CHECK(written.error().message().find("\"../x\" is not a valid job name") != std::string::npos);
  CHECK(written.error().message().find("\"sub/dir\" is not a valid job name") != std::string::npos);
  CHECK(testing::ListFiles(repo.remote, kBranch) ==
        std::vector<std::string>{"STATUS.md", "status/a.yaml"});

  // A deletion by such a name touches nothing either.
  auto removed = store.Write({{"../STATUS.md", std::nullopt}}, Message("remove"));
  REQUIRE_FALSE(removed.ok());
  CHECK(testing::ListFiles(repo.remote, kBranch) ==
        std::vector<std::string>{"STATUS.md", "status/a.yaml"});
}

TEST_CASE("ReadLedger uses the records of its instance and cluster and adopts ownerless ones",
          "[git][status][scope]") {
  Repo repo;
  repo.person->Write("status/legacy.yaml",
                     LegacyYaml(Record("legacy", Phase::kSucceeded, RayJobStatus::kSucceeded)));
  repo.person->Write(
      "status/mine.yaml",
      spec::EncodeStatusYaml(
          Owned(Record("mine", Phase::kRunning, RayJobStatus::kRunning), "ray-gitops", kClusterA)));
  repo.person->Write(
      "status/theirs.yaml",
      spec::EncodeStatusYaml(
          Owned(Record("theirs", Phase::kRunning, RayJobStatus::kRunning), "team-b", kClusterB)));
  repo.person->CommitAndPush(kBranch, "three owners");

  GitStatusStore store(repo.Workspace(), {});
  auto ledger = store.ReadLedger({"ray-gitops", kClusterA});
  REQUIRE(ledger.ok());
  CHECK(ledger->size() == 2);
  CHECK(ledger->count("legacy") == 1);
  CHECK(ledger->at("legacy").instance.empty());
  CHECK(ledger->count("mine") == 1);
  CHECK(ledger->count("theirs") == 0);
  CHECK(store.SkippedFiles().empty());

  auto other = store.ReadLedger({"team-b", kClusterB});
  REQUIRE(other.ok());
  CHECK(other->size() == 2);
  CHECK(other->count("theirs") == 1);
  CHECK(other->count("legacy") == 1);

  auto everything = store.ReadLedger({});
  REQUIRE(everything.ok());
  CHECK(everything->size() == 3);
}

TEST_CASE("A branch with this instance's records of another cluster is refused, naming both",
          "[git][status][scope]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), {});
  REQUIRE(store
              .Write({{"a", Owned(Record("a", Phase::kRunning, RayJobStatus::kRunning),
                                  "ray-gitops", kClusterA)}},
                     Message("a"))
              .ok());
  auto ledger = store.ReadLedger({"ray-gitops", kClusterB});
  REQUIRE_FALSE(ledger.ok());
  CHECK(ledger.error().kind() == core::ErrorKind::kFatal);
  const std::string& message = ledger.error().message();
  CHECK(message.find(kClusterA) != std::string::npos);
  CHECK(message.find(kClusterB) != std::string::npos);
  CHECK(message.find("status/a.yaml") != std::string::npos);
  CHECK(message.find("--status-branch") != std::string::npos);
  CHECK(message.find("`name:` in cluster.yaml") != std::string::npos);

  // Another instance on that other cluster is not in the way of reading (its writes are).
  auto other = store.ReadLedger({"team-b", kClusterB});
  REQUIRE(other.ok());
  CHECK(other->empty());
}

TEST_CASE("Write never overwrites or deletes a record of another instance or cluster",
          "[git][status][scope]") {
  Repo repo;
  GitStatusStore first(repo.Workspace(), {});
  const auto theirs =
      Owned(Record("a", Phase::kRunning, RayJobStatus::kRunning), "ray-gitops", kClusterA);
  REQUIRE(first.Write({{"a", theirs}}, Message("a of ray-gitops")).ok());
  const auto before = testing::ReadFileAt(repo.remote, kBranch, "status/a.yaml");

  GitStatusStore second(repo.Workspace(), {});
  REQUIRE(second.ReadLedger({"team-b", kClusterB}).ok());
  const auto mine =
      Owned(Record("a", Phase::kPending, RayJobStatus::kPending), "team-b", kClusterB);
  const auto b = Owned(Record("b", Phase::kPending, RayJobStatus::kPending), "team-b", kClusterB);
  auto written = second.Write({{"a", mine}, {"b", b}}, Message("a and b of team-b"));
  REQUIRE_FALSE(written.ok());
  CHECK(written.error().kind() == core::ErrorKind::kConflict);
  CHECK(written.error().message().find("holds the record of instance ray-gitops on cluster " +
                                       std::string(kClusterA)) != std::string::npos);
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/a.yaml") == before);
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/b.yaml") == spec::EncodeStatusYaml(b));

  // A deletion in team-b's name (its scope from ReadLedger) leaves the file too.
  auto deleted = second.Write({{"a", std::nullopt}}, Message("a deleted"));
  REQUIRE_FALSE(deleted.ok());
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/a.yaml") == before);

  // The same instance on another cluster may not take it over either.
  auto other_cluster = Owned(mine, "ray-gitops", kClusterB);
  REQUIRE_FALSE(second.Write({{"a", other_cluster}}, Message("a elsewhere")).ok());
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/a.yaml") == before);
}

TEST_CASE("An ownerless record is adopted by its first writer and then belongs to it",
          "[git][status][scope]") {
  Repo repo;
  const auto legacy = Record("a", Phase::kSucceeded, RayJobStatus::kSucceeded);
  repo.person->Write("status/a.yaml", LegacyYaml(legacy));
  repo.person->CommitAndPush(kBranch, "before owners");

  GitStatusStore store(repo.Workspace(), {});
  auto ledger = store.ReadLedger({"ray-gitops", kClusterA});
  REQUIRE(ledger.ok());
  const auto stamped = Owned(ledger->at("a"), "ray-gitops", kClusterA);
  // Owner alone is a change worth one commit: until it is written, any reader adopts it.
  CHECK(core::MeaningfulChange(ledger->at("a"), stamped));
  auto written = store.Write({{"a", stamped}}, Message("adopt"));
  REQUIRE(written.ok());
  CHECK_FALSE(written->empty());
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/a.yaml") ==
        spec::EncodeStatusYaml(stamped));

  GitStatusStore other(repo.Workspace(), {});
  auto theirs = other.ReadLedger({"team-b", kClusterA});
  REQUIRE(theirs.ok());
  CHECK(theirs->empty());
}

// `plan` and `history` only read: their store keeps nothing for a later pass or write.
TEST_CASE("a read-only store reads the same ledger and keeps no decoded records", "[git][status]") {
  Repo repo;
  const auto mine =
      Owned(Record("mine", Phase::kRunning, RayJobStatus::kRunning), "ray-gitops", kClusterA);
  const auto theirs =
      Owned(Record("theirs", Phase::kRunning, RayJobStatus::kRunning), "team-b", kClusterA);
  repo.person->Write("status/mine.yaml", spec::EncodeStatusYaml(mine));
  repo.person->Write("status/theirs.yaml", spec::EncodeStatusYaml(theirs));
  repo.person->CommitAndPush(kBranch, "two owners");
  const ports::LedgerScope scope{"ray-gitops", kClusterA};

  GitStatusStore writer(repo.Workspace("writer"), {});
  GitStatusStoreOptions options;
  options.read_only = true;
  GitStatusStore reader(repo.Workspace("reader"), options);
  auto written = writer.ReadLedger(scope);
  auto read = reader.ReadLedger(scope);
  REQUIRE(written.ok());
  REQUIRE(read.ok());
  CHECK(*read == *written);
  CHECK(read->size() == 1);  // theirs is another instance's
  CHECK(writer.status_parses() == 2);
  CHECK(reader.status_parses() == 2);
  // Read again: the writer's records of the last read answer; the reader kept none.
  REQUIRE(writer.ReadLedger(scope).ok());
  REQUIRE(reader.ReadLedger(scope).ok());
  CHECK(writer.status_parses() == 2);
  CHECK(reader.status_parses() == 4);
}

// At 50,000 jobs a second copy of every record is 60 MB: with a parse cache, the write reads
// the old files of the names it changes through the cache instead.
TEST_CASE("with a parse cache a store keeps no second copy of the records it read",
          "[git][status]") {
  Repo repo;
  const auto a =
      Owned(Record("a", Phase::kRunning, RayJobStatus::kRunning), "ray-gitops", kClusterA);
  const auto b =
      Owned(Record("b", Phase::kRunning, RayJobStatus::kRunning), "ray-gitops", kClusterA);
  repo.person->Write("status/a.yaml", spec::EncodeStatusYaml(a));
  repo.person->Write("status/b.yaml", spec::EncodeStatusYaml(b));
  repo.person->CommitAndPush(kBranch, "two records");
  const ports::LedgerScope scope{"ray-gitops", kClusterA};

  auto cache = std::make_shared<adapters::ParseCache>(repo.tmp.Sub("parse-cache"), "test");
  GitStatusStoreOptions options;
  options.parse_cache = cache;
  GitStatusStore store(repo.Workspace(), options);
  auto ledger = store.ReadLedger(scope);
  REQUIRE(ledger.ok());
  REQUIRE(ledger->size() == 2);
  CHECK(store.status_parses() == 2);
  CHECK(store.held_records() == 0);

  core::StatusRecord done = ledger->at("a");
  done.phase = Phase::kSucceeded;
  done.status = RayJobStatus::kSucceeded;
  REQUIRE(store.Write({{"a", done}}, Message("a succeeded")).ok());
  CHECK(store.status_parses() == 2);  // a's old file came from the cache
  CHECK(store.held_records() == 0);
  auto after = store.ReadLedger(scope);
  REQUIRE(after.ok());
  CHECK(after->at("a").phase == Phase::kSucceeded);
  CHECK(after->at("b") == ledger->at("b"));

  // Let go of (the daemon at rest), the cache is not read back for a write of a few files.
  REQUIRE(cache->Save().ok());
  cache->Release();
  core::StatusRecord stopped = after->at("b");
  stopped.phase = Phase::kSucceeded;
  stopped.status = RayJobStatus::kSucceeded;
  const int parses = store.status_parses();
  REQUIRE(store.Write({{"b", stopped}}, Message("b succeeded")).ok());
  CHECK(store.status_parses() == parses + 1);  // b's old file, from YAML
  CHECK_FALSE(cache->held());

  // Without a cache, the records read are kept for the next pass and write.
  GitStatusStore plain(repo.Workspace("plain"), {});
  REQUIRE(plain.ReadLedger(scope).ok());
  CHECK(plain.held_records() == 2);
}

// A narrow pass (engine/narrow_pass.h) reads the ledger of a few names only.
TEST_CASE("ReadLedgerOf gives what ReadLedger gives for the names asked, reading only their files",
          "[git][status][narrow]") {
  Repo repo;
  const auto mine =
      Owned(Record("mine", Phase::kRunning, RayJobStatus::kRunning), "ray-gitops", kClusterA);
  const auto legacy = Record("legacy", Phase::kSucceeded, RayJobStatus::kSucceeded);
  const auto theirs =
      Owned(Record("theirs", Phase::kRunning, RayJobStatus::kRunning), "team-b", kClusterB);
  repo.person->Write("status/mine.yaml", spec::EncodeStatusYaml(mine));
  repo.person->Write("status/legacy.yaml", LegacyYaml(legacy));
  repo.person->Write("status/theirs.yaml", spec::EncodeStatusYaml(theirs));
  repo.person->CommitAndPush(kBranch, "three owners");
  const ports::LedgerScope scope{"ray-gitops", kClusterA};
  const std::vector<std::string> names = {"mine", "legacy", "theirs", "ghost"};

  GitStatusStore reader(repo.Workspace("reader"), {});
  auto full = reader.ReadLedger(scope);
  REQUIRE(full.ok());

  auto cache = std::make_shared<adapters::ParseCache>(repo.tmp.Sub("parse-cache"), "test");
  GitStatusStoreOptions options;
  options.parse_cache = cache;
  GitStatusStore store(repo.Workspace(), options);
  auto tip = store.Tip();
  REQUIRE(tip.ok());
  auto narrow = store.ReadLedgerOf(scope, names);
  REQUIRE(narrow.ok());
  REQUIRE(narrow->has_value());
  CHECK(**narrow == *full);  // mine and legacy (adopted); not theirs; nothing for ghost
  CHECK((*narrow)->size() == 2);
  CHECK(store.status_parses() == 3);  // the files of the names asked, decoded from YAML
  CHECK(cache->size() == 0);          // the persistent cache is left alone
  CHECK(store.full_status_reads() == 0);
  CHECK(store.KnownTip() == **tip);
  CHECK(store.found_branch());
  CHECK(store.SkippedFiles().empty());
  auto few = store.ReadLedgerOf(scope, {"legacy", "Not_A_Job", "../x"});
  REQUIRE(few.ok());
  REQUIRE(few->has_value());
  CHECK((*few)->size() == 1);
  CHECK((*few)->at("legacy") == full->at("legacy"));

  // Broken files of other names are not read; those of a name asked make it say nothing.
  repo.person->Fetch();
  repo.person->Write("status/broken.yaml", "name: broken\nphase: [Running\n");
  repo.person->Write("status/c.yaml",
                     spec::EncodeStatusYaml(Record("d", Phase::kRunning, RayJobStatus::kRunning)));
  repo.person->Write(
      "status/elsewhere.yaml",
      spec::EncodeStatusYaml(Owned(Record("elsewhere", Phase::kRunning, RayJobStatus::kRunning),
                                   "ray-gitops", kClusterB)));
  repo.person->Write("status/notes.txt", "not a status file\n");
  repo.person->CommitAndPush(kBranch, "trouble");
  auto stale = store.ReadLedgerOf(scope, {"broken"});  // no fetch: the tip as last fetched
  REQUIRE(stale.ok());
  REQUIRE(stale->has_value());
  CHECK((*stale)->empty());
  CHECK(store.KnownTip() == **tip);
  REQUIRE(store.Tip().ok());
  CHECK(store.KnownTip() == **tip);  // Tip reads nothing
  narrow = store.ReadLedgerOf(scope, names);
  REQUIRE(narrow.ok());
  REQUIRE(narrow->has_value());
  CHECK(**narrow == *full);
  CHECK(store.KnownTip() != **tip);
  for (const char* name : {"broken", "c", "elsewhere"}) {
    INFO(name);
    auto troubled = store.ReadLedgerOf(scope, {"mine", name});
    REQUIRE(troubled.ok());
    CHECK_FALSE(troubled->has_value());
    CHECK(store.SkippedFiles().empty());
  }
  CHECK(cache->size() == 0);
  // ReadLedger says more: the skipped files and the record of another cluster.
  auto whole = store.ReadLedger(scope);
  REQUIRE_FALSE(whole.ok());
  CHECK(whole.error().kind() == core::ErrorKind::kFatal);
  CHECK(store.SkippedFiles().size() == 3);
  CHECK(store.ReadLedgerOf(scope, {"mine"}).ok());
  CHECK(store.SkippedFiles().empty());

  // Write refuses as after a ReadLedger of that scope: team-b may not delete ray-gitops' file.
  REQUIRE(store.ReadLedgerOf({"team-b", kClusterB}, {"mine"}).ok());
  auto deleted = store.Write({{"mine", std::nullopt}}, Message("mine deleted"));
  REQUIRE_FALSE(deleted.ok());
  CHECK(deleted.error().kind() == core::ErrorKind::kConflict);
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "status/mine.yaml") ==
        spec::EncodeStatusYaml(mine));
}

TEST_CASE("ReadLedgerOf of a branch that does not exist is an empty ledger",
          "[git][status][narrow]") {
  Repo repo;
  GitStatusStore store(repo.Workspace(), {});
  REQUIRE(store.Tip().ok());
  auto ledger = store.ReadLedgerOf({"ray-gitops", kClusterA}, {"a"});
  REQUIRE(ledger.ok());
  REQUIRE(ledger->has_value());
  CHECK((*ledger)->empty());
  CHECK_FALSE(store.found_branch());
  CHECK(store.KnownTip() == std::optional<std::string>(""));
}

// Every file of the branch with its content.
std::map<std::string, std::string> Files(const std::string& remote) {
  std::map<std::string, std::string> out;
  for (const std::string& path : testing::ListFiles(remote, kBranch)) {
    out[path] = testing::ReadFileAt(remote, kBranch, path).value_or("(unreadable)");
  }
  return out;
}

GitStatusStoreOptions LinkedOptions() {
  GitStatusStoreOptions options;
  options.markdown_header.repo_url = "https://example.com/org/repo.git";
  options.markdown_header.instance = "ray-gitops";
  return options;
}

std::string JobName(int i) { return "job-" + std::to_string(100 + i); }

// 50 records of ray-gitops on cluster A, a broken file and a record of another instance.
void PushBase(Repo& repo) {
  GitStatusStore setup(repo.Workspace("setup"), LinkedOptions());
  ports::StatusChanges base;
  for (int i = 0; i < 50; ++i) {
    auto r = Record(JobName(i), i % 3 == 0 ? Phase::kSucceeded : Phase::kRunning,
                    i % 3 == 0 ? RayJobStatus::kSucceeded : RayJobStatus::kRunning, i % 4);
    r.message = "run " + std::to_string(i) + " | *said* <so>";
    base.emplace(r.name, Owned(r, "ray-gitops", kClusterA));
  }
  REQUIRE(setup.Write(base, Message("base")).ok());
  repo.person->Fetch();
  repo.person->Write("status/broken.yaml", "name: broken\nphase: [Running\n");
  repo.person->Write(
      "status/theirs.yaml",
      spec::EncodeStatusYaml(
          Owned(Record("theirs", Phase::kRunning, RayJobStatus::kRunning), "team-b", kClusterB)));
  repo.person->CommitAndPush(kBranch, "a broken file and another instance's record");
}

core::StatusRecord Ours(core::StatusRecord r) {
  return Owned(std::move(r), "ray-gitops", kClusterA);
}

// Updates, a new job, deletions (one of a file that is not there), a bookkeeping-only change,
// and refusals: a broken file, another instance's record, a name that is no job name.
ports::StatusChanges FirstChanges() {
  ports::StatusChanges changes;
  for (int i : {1, 2, 4, 5, 49}) {
    auto r = Ours(Record(JobName(i), Phase::kFailed, RayJobStatus::kFailed, 5));
    r.end_time_ms = 1795000100000 + i;
    r.errors = {"exit code " + std::to_string(i)};
    changes.emplace(r.name, r);
  }
  auto quiet = Ours(Record(JobName(8), Phase::kRunning, RayJobStatus::kRunning, 0));
  quiet.spec_commit = std::string(40, 'b');
  changes.emplace(quiet.name, quiet);
  changes.emplace("aaa-new", Ours(Record("aaa-new", Phase::kPending, RayJobStatus::kPending)));
  changes.emplace(JobName(7), std::nullopt);
  changes.emplace("ghost", std::nullopt);
  changes.emplace("broken", Ours(Record("broken", Phase::kRunning, RayJobStatus::kRunning)));
  changes.emplace("theirs", Ours(Record("theirs", Phase::kPending, RayJobStatus::kPending)));
  changes.emplace("Bad_Name", Ours(Record("Bad_Name", Phase::kPending, RayJobStatus::kPending)));
  return changes;
}

ports::StatusChanges SecondChanges() {
  ports::StatusChanges changes;
  changes.emplace(JobName(1), std::nullopt);
  changes.emplace("aaa-new", Ours(Record("aaa-new", Phase::kRunning, RayJobStatus::kRunning, 1)));
  changes.emplace("zzz-new", Ours(Record("zzz-new", Phase::kPending, RayJobStatus::kPending)));
  return changes;
}

TEST_CASE("A write that reads only the changed files makes the tree a full write makes",
          "[git][status][incremental]") {
  Repo incremental;  // written by a store that keeps STATUS.md's rows
  Repo full;         // the same writes, each by a fresh store that reads every file
  PushBase(incremental);
  PushBase(full);
  REQUIRE(Files(incremental.remote) == Files(full.remote));
  const ports::LedgerScope scope{"ray-gitops", kClusterA};

  GitStatusStore a(incremental.Workspace(), LinkedOptions());
  REQUIRE(a.ReadLedger(scope).ok());
  CHECK(a.full_status_reads() == 1);
  auto by_a = a.Write(FirstChanges(), Message("first"));
  CHECK(a.full_status_reads() == 1);
  CHECK(a.incremental_writes() == 1);
  // ReadLedger's, and the broken file again (what does not decode is not kept): the changed
  // records were decoded already.
  CHECK(a.status_parses() == 53);

  GitStatusStore b(full.Workspace(), LinkedOptions());
  REQUIRE(b.Tip().ok());  // a fetch, no read
  auto by_b = b.Write(FirstChanges(), Message("first"));
  CHECK(b.full_status_reads() == 1);
  CHECK(b.incremental_writes() == 0);

  // Both refuse the same changes, and write the same tree.
  REQUIRE_FALSE(by_a.ok());
  REQUIRE_FALSE(by_b.ok());
  CHECK(by_a.error().kind() == core::ErrorKind::kConflict);
  CHECK(by_a.error().message() == by_b.error().message());
  CHECK(by_a.error().message().find("status/broken.yaml is left as it is") != std::string::npos);
  const auto files = Files(incremental.remote);
  const auto expected = Files(full.remote);
  for (const auto& [path, text] : expected) {
    INFO(path);
    CHECK(files.count(path) == 1);
    if (files.count(path) == 1) CHECK(files.at(path) == text);
  }
  CHECK(files == expected);
  CHECK(files.count("status/" + JobName(7) + ".yaml") == 0);
  CHECK(files.count("status/aaa-new.yaml") == 1);
  CHECK(files.at("STATUS.md").find("51 jobs: 1 Pending, 28 Running, 17 Succeeded, 5 Failed") !=
        std::string::npos);

  // Then from the rows of its own write, with no read in between; memory released or not.
  a.ReleaseMemory();
  by_a = a.Write(SecondChanges(), Message("second"));
  REQUIRE(by_a.ok());
  CHECK(a.full_status_reads() == 1);
  CHECK(a.incremental_writes() == 2);
  GitStatusStore c(full.Workspace("fresh"), LinkedOptions());
  REQUIRE(c.Tip().ok());
  by_b = c.Write(SecondChanges(), Message("second"));
  REQUIRE(by_b.ok());
  CHECK(c.incremental_writes() == 0);
  CHECK(Files(incremental.remote) == Files(full.remote));

  // A narrow pass: Tip, ReadLedgerOf, Write, and still nothing read whole.
  REQUIRE(a.Tip().ok());
  auto narrow = a.ReadLedgerOf(scope, {"zzz-new"});
  REQUIRE(narrow.ok());
  REQUIRE(narrow->has_value());
  auto done = (*narrow)->at("zzz-new");
  done.phase = Phase::kSucceeded;
  done.status = RayJobStatus::kSucceeded;
  REQUIRE(a.Write({{"zzz-new", done}}, Message("third")).ok());
  CHECK(a.full_status_reads() == 1);
  CHECK(a.incremental_writes() == 3);
  GitStatusStore d(full.Workspace("fresh-2"), LinkedOptions());
  REQUIRE(d.Tip().ok());
  REQUIRE(d.Write({{"zzz-new", done}}, Message("third")).ok());
  CHECK(d.incremental_writes() == 0);
  CHECK(Files(incremental.remote) == Files(full.remote));
}

// STATUS.md as a fresh reader of the whole branch would render it for `message`.
std::string ExpectedMarkdown(Repo& repo, const std::string& cache) {
  GitStatusStore reader(repo.Workspace(cache), {});
  auto ledger = reader.ReadLedger({});
  REQUIRE(ledger.ok());
  core::StatusMarkdownHeader header = LinkedOptions().markdown_header;
  header.spec_commit = std::string(40, 'a');  // Message's Spec-Commit trailer
  header.watched_branch = "main";
  header.status_branch = kBranch;
  return core::RenderStatusMarkdown(*ledger, header);
}

TEST_CASE("After another writer moved the status folder, a write reads it whole again",
          "[git][status][incremental]") {
  Repo repo;
  testing::GitTestClone other(repo.remote, repo.tmp.Sub("other.git"));
  int round = 0;
  GitStatusStoreOptions options = LinkedOptions();
  options.before_push = [&](int attempt) {
    if (round != 3 || attempt != 0) return;
    // A second writer records between this store's build and its push.
    other.Fetch();
    other.Write("status/raced.yaml",
                spec::EncodeStatusYaml(Record("raced", Phase::kFailed, RayJobStatus::kFailed)));
    other.CommitAndPush(kBranch, "raced");
  };
  GitStatusStore store(repo.Workspace(), options);
  round = 1;
  REQUIRE(store
              .Write({{"a", Record("a", Phase::kRunning, RayJobStatus::kRunning)},
                      {"b", Record("b", Phase::kPending, RayJobStatus::kPending)}},
                     Message("first"))
              .ok());
  CHECK(store.full_status_reads() == 1);

  // A push between two passes: the tip the next pass fetched has another status folder than
  // the one the rows are of.
  other.Fetch();
  other.Write("status/b.yaml",
              spec::EncodeStatusYaml(Record("b", Phase::kRunning, RayJobStatus::kRunning, 1)));
  other.Write("status/other.yaml",
              spec::EncodeStatusYaml(Record("other", Phase::kSucceeded, RayJobStatus::kSucceeded)));
  other.CommitAndPush(kBranch, "another writer");
  ++round;
  REQUIRE(store.Tip().ok());
  REQUIRE(
      store.Write({{"c", Record("c", Phase::kPending, RayJobStatus::kPending)}}, Message("second"))
          .ok());
  CHECK(store.full_status_reads() == 2);
  CHECK(store.incremental_writes() == 0);
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "STATUS.md").value_or("") ==
        ExpectedMarkdown(repo, "r1"));

  // A push refused by a race: the incremental attempt is built again on the new tip, whole.
  ++round;
  REQUIRE(store
              .Write({{"a", Record("a", Phase::kSucceeded, RayJobStatus::kSucceeded)}},
                     Message("third"))
              .ok());
  CHECK(store.push_attempts() == 4);
  CHECK(store.incremental_writes() == 1);
  CHECK(store.full_status_reads() == 3);
  const auto markdown = testing::ReadFileAt(repo.remote, kBranch, "STATUS.md");
  CHECK(markdown.value_or("") == ExpectedMarkdown(repo, "r2"));
  REQUIRE(markdown.has_value());
  CHECK(markdown->find(
            "| [raced](https://example.com/org/repo/blob/main/jobs/raced.yaml) | Failed |") !=
        std::string::npos);
  CHECK(markdown->find("| [a](https://example.com/org/repo/blob/main/jobs/a.yaml) | Succeeded |") !=
        std::string::npos);

  // A person's push elsewhere on the branch (not under status/) keeps the rows usable.
  other.Fetch();
  other.Write("README.md", "the status branch\n");
  other.CommitAndPush(kBranch, "a readme");
  ++round;
  REQUIRE(store.Tip().ok());
  REQUIRE(
      store.Write({{"d", Record("d", Phase::kPending, RayJobStatus::kPending)}}, Message("fourth"))
          .ok());
  CHECK(store.incremental_writes() == 2);
  CHECK(store.full_status_reads() == 3);
  CHECK(testing::ReadFileAt(repo.remote, kBranch, "STATUS.md").value_or("") ==
        ExpectedMarkdown(repo, "r3"));
}

TEST_CASE("The commit message puts subject, body and trailers in git's layout", "[git][status]") {
  ports::StatusCommit m;
  m.subject = "two\nlines";
  CHECK(GitStatusStore::FormatCommitMessage(m) == "two lines\n");
  m.trailers = {{"Spec-Commit", "abc"}};
  CHECK(GitStatusStore::FormatCommitMessage(m) == "two lines\n\nSpec-Commit: abc\n");
  m.body_lines = {"x: Pending -> Running"};
  CHECK(GitStatusStore::FormatCommitMessage(m) ==
        "two lines\n\nx: Pending -> Running\n\nSpec-Commit: abc\n");
}

}  // namespace
}  // namespace rg
