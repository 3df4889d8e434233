// Stale views (docs/reconcile.md) on real Git repositories and the fake head: two daemons of one
// instance, each with its own clone of one bare remote. A pass planned from commit N never stops or
// resubmits anything because of a run the other daemon submitted from commit N+1, and a
// commit removed by a force push leaves the branch as the truth.

#include <git2.h>

#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"
#include "tests/support/gated_job_server.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

using core::RayJobStatus;
using testing::FakeRayServer;

using testing::GatedJobServer;

// One daemon: its clone (under its own cache dir), its source, its status store, its client.
class Daemon {
 public:
  Daemon(const std::string& remote, const std::string& cache_dir, const std::string& ray)
      : ray_address_(ray), server_(ray) {
    adapters::GitWorkspaceOptions options;
    options.repo = remote;
    options.cache_dir = cache_dir;
    auto ws = adapters::GitWorkspace::Open(options);
    if (!ws.ok()) throw std::runtime_error(ws.error().ToString());
    workspace_ = *ws;
    source_ = std::make_unique<adapters::GitDesiredStateSource>(workspace_,
                                                                adapters::GitDesiredStateOptions{});
    store_ =
        std::make_unique<adapters::GitStatusStore>(workspace_, adapters::GitStatusStoreOptions{});
  }

  engine::PassResult Pass() {
    engine::ReconcileDeps deps;
    deps.source = source_.get();
    deps.server = &server_;
    deps.store = store_.get();
    engine::ReconcileOptions options;
    options.ref = "main";
    options.ray_address = ray_address_;
    options.now_ms = now_ms_ += 1000;
    return engine::RunReconcilePass(deps, options);
  }

  GatedJobServer& server() { return server_; }
  ports::StatusStore& store() { return *store_; }

 private:
  std::string ray_address_;
  GatedJobServer server_;
  std::shared_ptr<adapters::GitWorkspace> workspace_;
  std::unique_ptr<adapters::GitDesiredStateSource> source_;
  std::unique_ptr<adapters::GitStatusStore> store_;
  int64_t now_ms_ = 1'800'000'000'000;
};

std::string Spec(const std::string& command) {
  return "workload: custom\nentrypoint: " + command + "\n";
}

std::string Actions(const engine::PassResult& r) {
  std::string out;
  for (const auto& a : r.plan.actions) {
    out += a.kind == core::ActionKind::kStop ? "stop " : "submit ";
    out += a.name + "@" + std::to_string(a.attempt) + ";";
  }
  return out;
}

// Moves refs/heads/<branch> of the bare repository at `path` to `commit`, whatever it was.
void ForcePush(const std::string& path, const std::string& branch, const std::string& commit) {
  git_libgit2_init();
  git_repository* repo = nullptr;
  git_oid oid;
  git_reference* ref = nullptr;
  const int rc = git_repository_open_bare(&repo, path.c_str()) != 0 ||
                 git_oid_fromstr(&oid, commit.c_str()) != 0 ||
                 git_reference_create(&ref, repo, ("refs/heads/" + branch).c_str(), &oid, 1,
                                      "force push") != 0;
  git_reference_free(ref);
  git_repository_free(repo);
  git_libgit2_shutdown();
  if (rc != 0) throw std::runtime_error("cannot force-push " + branch);
}

// A bare remote, a person who pushes to it, the fake head and two daemons (A and B).
struct World {
  testing::TempDir tmp;
  std::string remote = tmp.Sub("remote.git");
  FakeRayServer ray;
  std::unique_ptr<testing::GitTestClone> person;
  std::unique_ptr<Daemon> a, b;

  World() {
    testing::InitBareRepository(remote);
    person = std::make_unique<testing::GitTestClone>(remote, tmp.Sub("person.git"));
    person->Write("cluster.yaml", "address: " + ray.address() + "\n");
    person->Write("jobs/j.yaml", Spec("sleep 300"));
    person->CommitAndPush("main", "v1");
    a = std::make_unique<Daemon>(remote, tmp.Sub("cache-a"), ray.address());
    b = std::make_unique<Daemon>(remote, tmp.Sub("cache-b"), ray.address());
  }

  // The person edits the spec (v2) and daemon B applies it: v1 stopped, v2 submitted.
  std::string PushAndApplyV2() {
    person->Write("jobs/j.yaml", Spec("sleep 299"));
    const std::string commit = person->CommitAndPush("main", "v2");
    const engine::PassResult r = b->Pass();
    REQUIRE(r.spec_commit == commit);
    REQUIRE(Actions(r) == "stop j@0;submit j@0;");
    ray.Tick();
    return commit;
  }

  // Ray's active runs of j, by spec hash label.
  std::vector<std::string> ActiveHashes() {
    std::vector<std::string> out;
    adapters::RayHttpJobServer client(testing::FastClientOptions(ray.address()));
    const core::Result<std::vector<core::RayJob>> jobs = client.List();
    REQUIRE(jobs.ok());
    for (const auto& job : *jobs) {
      if (job.status == RayJobStatus::kPending || job.status == RayJobStatus::kRunning) {
        out.push_back(std::string(job.metadata.at("gitops.spec-hash")) + "@" +
                      std::string(job.metadata.at("gitops.attempt")));
      }
    }
    return out;
  }
};

TEST_CASE(
    "a pass from commit N that lists Ray after another daemon applied N+1 stops nothing "
    "newer",
    "[stale]") {
  World w;
  REQUIRE(Actions(w.b->Pass()) == "submit j@0;");
  w.ray.Tick();
  const std::vector<std::string> v1_running = w.ActiveHashes();
  REQUIRE(v1_running.size() == 1);

  // A fetches N; while its GET /api/jobs/ is slow, N+1 is pushed and B applies it.
  std::string n1;
  w.a->server().before_next_list = [&] { n1 = w.PushAndApplyV2(); };
  const engine::PassResult r = w.a->Pass();
  REQUIRE_FALSE(n1.empty());
  CHECK(r.errors.empty());
  CHECK_FALSE(r.stale);
  CHECK(r.loads == 2);         // it fetched again ...
  CHECK(r.spec_commit == n1);  // ... and planned from N+1
  CHECK(r.plan.actions.empty());
  CHECK(r.outcomes.empty());

  // v2 runs alone; v1 was not brought back, and the ledger still says v2.
  w.ray.Tick();
  const std::vector<std::string> active = w.ActiveHashes();
  REQUIRE(active.size() == 1);
  CHECK(active[0] != v1_running[0]);
  auto ledger = w.b->store().ReadLedger({});
  REQUIRE(ledger.ok());
  CHECK(ledger->at("j").attempt == 0);
  CHECK(ledger->at("j").spec_hash + "@0" == active[0]);
}

TEST_CASE("a run's commit removed by a force push: after a fresh fetch the branch is the truth",
          "[stale]") {
  World w;
  const std::string n = testing::BranchTip(w.remote, "main");
  REQUIRE(Actions(w.b->Pass()) == "submit j@0;");
  w.ray.Tick();
  w.PushAndApplyV2();
  ForcePush(w.remote, "main", n);  // v2 is taken back by rewriting the branch

  SECTION("a daemon that has the removed commit (a descendant of the tip)") {
    const engine::PassResult r = w.b->Pass();
    CHECK(r.errors.empty());
    CHECK_FALSE(r.stale);
    CHECK(r.loads == 2);
    CHECK(r.spec_commit == n);
    CHECK(Actions(r) == "stop j@0;submit j@1;");  // v2 stopped, v1 restored
    // Known to be off the branch now: no further fetch on the next pass.
    w.ray.Tick();
    const engine::PassResult next = w.b->Pass();
    CHECK(next.loads == 1);
    CHECK(next.plan.actions.empty());
  }
  SECTION("a daemon that never saw the removed commit") {
    const engine::PassResult r = w.a->Pass();
    CHECK(r.errors.empty());
    CHECK_FALSE(r.stale);
    CHECK(r.loads == 2);
    CHECK(r.spec_commit == n);
    CHECK(Actions(r) == "stop j@0;submit j@1;");
  }
}

}  // namespace
}  // namespace rg

namespace rg {
namespace {

// The tip check before stops (docs/reconcile.md, "Stale views"): commit C1 runs v1, C2 changes
// the spec, C3 reverts it. Daemon A runs C1's v1; daemon B fetched C2, and C3 is pushed while B
// lists Ray, after B's fetch and before B applies its plan (stop v1, submit v2).
struct TipRace {
  World w;
  std::string c1 = testing::BranchTip(w.remote, "main");
  std::vector<std::string> v1_running;

  TipRace() {
    REQUIRE(Actions(w.a->Pass()) == "submit j@0;");
    w.ray.Tick();
    v1_running = w.ActiveHashes();
    REQUIRE(v1_running.size() == 1);
    w.person->Write("jobs/j.yaml", Spec("sleep 299"));
    w.person->CommitAndPush("main", "C2: v2");
  }

  // B's next pass; `push` runs (pushes) after B's fetch of C2, before it applies.
  engine::PassResult PassOfB(const std::function<std::string()>& push, std::string& pushed) {
    w.b->server().before_next_list = [&] { pushed = push(); };
    return w.b->Pass();
  }

  std::string Push(const std::string& path, const std::string& text, const std::string& message) {
    w.person->Write(path, text);
    return w.person->CommitAndPush("main", message);
  }
};

TEST_CASE(
    "C1 -> C2 -> C3 (a revert): a replica that fetched C2 never stops the run C3 wants, and "
    "starts over on C3",
    "[stale][tip]") {
  TipRace t;
  const size_t jobs_before = t.w.ray.JobCount();
  std::string c3;
  const engine::PassResult r =
      t.PassOfB([&] { return t.Push("jobs/j.yaml", Spec("sleep 300"), "C3: revert"); }, c3);
  REQUIRE_FALSE(c3.empty());
  CHECK(r.errors.empty());
  CHECK_FALSE(r.stale);
  CHECK(r.loads == 2);  // C2, then C3
  REQUIRE(r.tip_moves.size() == 1);
  CHECK(r.tip_moves[0].to == c3);
  CHECK(r.tip_moves[0].ref == "refs/heads/main");
  CHECK(r.tip_moves[0].changed == std::vector<std::string>{"jobs/j.yaml"});
  CHECK(r.spec_commit == c3);
  CHECK(r.plan.actions.empty());  // C3 wants the run that is running
  CHECK(r.outcomes.empty());

  t.w.ray.Tick();
  CHECK(t.w.ActiveHashes() == t.v1_running);  // v1 keeps running ...
  CHECK(t.w.ray.JobCount() == jobs_before);   // ... and no v2 was ever submitted
}

TEST_CASE("a tip that moved without changing the desired state lets the stop go ahead",
          "[stale][tip]") {
  TipRace t;
  std::string c3;
  const engine::PassResult r = t.PassOfB(
      [&] {
        t.w.person->Write("README.md", "how we train\n");
        t.w.person->Write("jobs/notes.txt", "not a spec\n");
        t.w.person->Write("jobs/.drafts/next.yaml", Spec("sleep 1"));  // hidden: never read
        return t.w.person->CommitAndPush("main", "C3: docs");
      },
      c3);
  REQUIRE_FALSE(c3.empty());
  CHECK(r.errors.empty());
  CHECK(r.loads == 1);
  CHECK(r.tip_moves.empty());
  CHECK(r.spec_commit != c3);  // planned from C2, which has the same desired state
  CHECK(Actions(r) == "stop j@0;submit j@0;");
  REQUIRE(r.outcomes.size() == 2);
  CHECK(r.outcomes[0].ok);
  CHECK(r.outcomes[1].ok);
  t.w.ray.Tick();
  const std::vector<std::string> active = t.w.ActiveHashes();
  REQUIRE(active.size() == 1);
  CHECK(active[0] != t.v1_running[0]);
}

TEST_CASE("a tip that moved to a state that still stops the run: the pass on the new tip stops it",
          "[stale][tip]") {
  TipRace t;
  const size_t jobs_before = t.w.ray.JobCount();
  std::string c3;
  const engine::PassResult r =
      t.PassOfB([&] { return t.Push("jobs/j.yaml", Spec("sleep 298"), "C3: v3"); }, c3);
  CHECK(r.errors.empty());
  CHECK(r.loads == 2);
  CHECK(r.tip_moves.size() == 1);
  CHECK(r.spec_commit == c3);
  CHECK(Actions(r) == "stop j@0;submit j@0;");
  REQUIRE(r.outcomes.size() == 2);
  CHECK(r.outcomes[0].ok);
  CHECK(r.outcomes[1].ok);
  CHECK(t.w.ray.JobCount() == jobs_before + 1);  // v3 only: v2 was never submitted
  t.w.ray.Tick();
  const std::vector<std::string> active = t.w.ActiveHashes();
  REQUIRE(active.size() == 1);
  CHECK(active[0] != t.v1_running[0]);
}

TEST_CASE("the tip check's restarts and the stale-view reloads share one budget of two",
          "[stale][tip]") {
  TipRace t;
  // Round 1 (B at C2): C3 (v3) is pushed; B's stop of v1 meets the tip check: start over.
  // Round 2 (B at C3): C4 (v4) is pushed and A applies it: a run from a commit B lacks.
  // Round 3 (B at C4): C5 (v5) is pushed and A applies it: the view is older again, and the
  // two reloads are spent: Stale, with nothing applied.
  int round = 0;
  std::function<void()> next_round = [&] {
    ++round;
    const std::string version = std::to_string(299 - round);
    t.Push("jobs/j.yaml", Spec("sleep " + version), "v" + version);
    if (round >= 2) {
      REQUIRE(t.w.a->Pass().errors.empty());
      t.w.ray.Tick();
    }
    if (round < 3) t.w.b->server().before_next_list = next_round;
  };
  t.w.b->server().before_next_list = next_round;
  const int b_commits = testing::CountCommits(t.w.remote, "ray-gitops/status");
  const engine::PassResult r = t.w.b->Pass();
  CHECK(round == 3);
  CHECK(r.stale);
  CHECK(r.loads == 1 + engine::kMaxStaleReloads);
  CHECK(r.tip_moves.size() == 1);
  CHECK(r.outcomes.empty());
  CHECK_FALSE(r.planned);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].IsTransient());
  // Only A's passes (rounds 2 and 3) recorded status.
  CHECK(testing::CountCommits(t.w.remote, "ray-gitops/status") == b_commits + 2);
}

TEST_CASE("a tip that moves before every round's stops ends the pass as Stale after two reloads",
          "[stale][tip]") {
  TipRace t;
  int round = 0;
  std::function<void()> next_round = [&] {
    ++round;
    t.Push("jobs/j.yaml", Spec("sleep " + std::to_string(299 - round)), "round");
    if (round < 3) t.w.b->server().before_next_list = next_round;
  };
  t.w.b->server().before_next_list = next_round;
  const size_t jobs_before = t.w.ray.JobCount();
  const engine::PassResult r = t.w.b->Pass();
  CHECK(r.stale);
  CHECK(r.loads == 1 + engine::kMaxStaleReloads);
  CHECK(r.tip_moves.size() == 3);
  CHECK(r.outcomes.empty());
  REQUIRE(r.errors.size() == 1);
  CHECK_THAT(r.errors[0].message(), Catch::Contains("before the pass's stops"));
  CHECK(t.w.ray.JobCount() == jobs_before);
  t.w.ray.Tick();
  CHECK(t.w.ActiveHashes() == t.v1_running);
}

}  // namespace
}  // namespace rg
