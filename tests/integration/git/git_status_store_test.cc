// The status branch store against real repositories: writes, reads back, commits only on a
// change, resolves push races by re-applying its changes, and walks history.

#include "reconciler/adapters/git_status_store.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_workspace.h"
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

struct Repo {
  testing::TempDir tmp;
  std::string remote = tmp.Sub("remote.git");
  std::unique_ptr<testing::GitTestClone> person;

  Repo() {
    testing::InitBareRepository(remote);
    person = std::make_unique<testing::GitTestClone>(remote, tmp.Sub("person.git"));
    person->Write("cluster.yaml", "address: http://127.0.0.1:8265\n");
    person->Write("jobs/a.yaml", "workload: custom\nentrypoint: echo a\n");
    person->CommitAndPush("main", "initial");
  }

  std::shared_ptr<GitWorkspace> Workspace() {
    adapters::GitWorkspaceOptions options;
    options.repo = remote;
    options.cache_dir = tmp.Sub("cache");
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
  CHECK(markdown->find("| a | Running | `a-3f2a1c9b0e` | RUNNING |") != std::string::npos);
  CHECK(markdown->find("| b | Failed |") != std::string::npos);
  CHECK(markdown->find("- Spec commit: `" + std::string(40, 'a') + "`") != std::string::npos);

  const auto messages = testing::CommitMessages(repo.remote, kBranch);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] ==
        "ray-gitops: 2 transitions\n\nline one\nline two\n\nRay-Cluster: http://127.0.0.1:8265\n"
        "Spec-Commit: " +
            std::string(40, 'a') + "\n");

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
