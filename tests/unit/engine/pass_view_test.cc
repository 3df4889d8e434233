// Issue 9 on the pass (docs/reconcile.md): a revert brings a run back, a stale view never acts,
// renames, and what cannot be read freezes only its own job and shows as a warning.
// Two in-memory repositories stand for two daemons' clones; they share one fake head and one
// status branch.

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/core/status_model.h"
#include "reconciler/engine/reconcile_loop.h"
#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"
#include "tests/support/in_memory_ports.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using core::Phase;
using core::RayJobStatus;
using ports::CommitRelation;
using testing::FakeRayServer;
using testing::InMemoryDesiredStateSource;
using testing::InMemoryStatusStore;

std::string CommitId(int n) {
  std::string hex = std::to_string(n);
  return std::string(40 - hex.size(), 'c') + hex;
}

std::string Spec(const std::string& entrypoint, const std::string& extra = "") {
  return "workload: custom\nentrypoint: " + entrypoint + "\n" + extra;
}

// One fake head and one status branch; any number of daemons' repositories.
using Cluster = testing::PassHarness;

std::string Actions(const PassResult& r) {
  std::string out;
  for (const auto& o : r.outcomes) {
    out += o.action.kind == core::ActionKind::kStop ? "stop " : "submit ";
    out += o.action.submission_id + (o.ok ? ";" : " (failed);");
  }
  return out;
}

TEST_CASE("git revert v2 -> v1 stops v2 and runs v1 again as its next attempt", "[engine]") {
  Cluster c;
  auto repo = c.NewRepo(CommitId(0));
  repo->SetFile("jobs/a.yaml", Spec("sleep 300"), CommitId(1));
  const std::string v1 = "a-" + Cluster::HashOf(*repo, "jobs/a.yaml");
  REQUIRE(Actions(c.Pass(*repo)) == "submit " + v1 + ";");

  repo->SetFile("jobs/a.yaml", Spec("sleep 299"), CommitId(2));
  const std::string v2 = "a-" + Cluster::HashOf(*repo, "jobs/a.yaml");
  REQUIRE(Actions(c.Pass(*repo)) == "stop " + v1 + ";submit " + v2 + ";");
  REQUIRE(c.Pass(*repo).outcomes.empty());  // records v1 STOPPED
  REQUIRE(c.Record("a").FindAttempt(v1)->status == RayJobStatus::kStopped);

  repo->SetFile("jobs/a.yaml", Spec("sleep 300"), CommitId(3));  // the revert
  PassResult revert = c.Pass(*repo);
  CHECK(Actions(revert) == "stop " + v2 + ";submit " + v1 + "-r1;");
  CHECK(revert.exit_status == kExitApplied);
  const core::JobPlan* a = revert.plan.FindJob("a");
  REQUIRE(a != nullptr);
  CHECK(a->phase == Phase::kPending);
  CHECK(a->message.find("when its spec was replaced") != std::string::npos);
  CHECK(c.ray().StatusOf(v2) == RayJobStatus::kStopped);
  CHECK(c.ray().StatusOf(v1 + "-r1").has_value());
  CHECK(c.Record("a").submission_id == v1 + "-r1");
  CHECK(c.Record("a").attempt == 1);
  CHECK(c.Record("a").FindAttempt(v2)->stop_reason == core::StopReason::kReplacement);
  CHECK(c.Pass(*repo).outcomes.empty());  // and it stays: converged
}

TEST_CASE("a deleted spec restored by a revert runs again as its next attempt", "[engine]") {
  Cluster c;
  auto repo = c.NewRepo(CommitId(0));
  repo->SetFile("jobs/keep.yaml", Spec("sleep 301"), CommitId(1));
  repo->SetFile("jobs/a.yaml", Spec("sleep 300"), CommitId(1));
  const std::string id = "a-" + Cluster::HashOf(*repo, "jobs/a.yaml");
  REQUIRE(c.Pass(*repo).exit_status == kExitApplied);

  repo->RemoveFile("jobs/a.yaml", CommitId(2));
  CHECK(Actions(c.Pass(*repo)) == "stop " + id + ";");
  c.Pass(*repo);  // records the run STOPPED
  // The record of the removed spec is kept, with how its run ended.
  REQUIRE(c.store().ledger().contains("a"));
  CHECK(c.Record("a").phase == Phase::kRemoved);
  CHECK(c.Record("a").FindAttempt(id)->stop_reason == core::StopReason::kRemoval);

  repo->SetFile("jobs/a.yaml", Spec("sleep 300"), CommitId(3));
  CHECK(Actions(c.Pass(*repo)) == "submit " + id + "-r1;");
  CHECK(c.Record("a").phase == Phase::kPending);
}

TEST_CASE("moving an unnamed spec starts a new run and the plan says it is a rename", "[engine]") {
  Cluster c;
  auto repo = c.NewRepo(CommitId(0));
  repo->SetFile("jobs/a.yaml", Spec("sleep 300"), CommitId(1));
  REQUIRE(c.Pass(*repo).exit_status == kExitApplied);
  {
    repo->RemoveFile("jobs/a.yaml", CommitId(2));
    repo->SetFile("jobs/team/b.yaml", Spec("sleep 300"), CommitId(2));
    ReconcileOptions dry;
    dry.dry_run = true;
    PassResult plan = c.Pass(*repo, dry);
    const core::JobPlan* moved = plan.plan.FindJob("team-b");
    REQUIRE(moved != nullptr);
    CHECK(moved->message ==
          "renamed from a (jobs/a.yaml); this starts a new run; pin `name: a` to keep the run");
    CHECK(plan.plan.CountActions(core::ActionKind::kStop) == 1);
    CHECK(plan.plan.CountActions(core::ActionKind::kSubmit) == 1);
  }
}

// The rule of docs/jobspec.md leaves `name` out of the spec hash, so pinning the old derived
// name keeps the run. The hash in core/identity.cc still includes an explicit `name` (and the
// newer policy fields): until it follows that rule this case fails and is marked so.
TEST_CASE("a moved spec that pins its old derived name keeps its run", "[engine]") {
  Cluster c;
  auto repo = c.NewRepo(CommitId(0));
  repo->SetFile("jobs/a.yaml", Spec("sleep 300"), CommitId(1));
  const std::string hash = Cluster::HashOf(*repo, "jobs/a.yaml");
  REQUIRE(c.Pass(*repo).exit_status == kExitApplied);
  repo->RemoveFile("jobs/a.yaml", CommitId(2));
  repo->SetFile("jobs/team/b.yaml", Spec("sleep 300", "name: a\n"), CommitId(2));
  REQUIRE(Cluster::HashOf(*repo, "jobs/team/b.yaml") == hash);
  PassResult r = c.Pass(*repo);
  CHECK(r.plan.actions.empty());
  CHECK(c.ray().StatusOf("a-" + hash) != RayJobStatus::kStopped);
  CHECK(c.Record("a").spec_path == "jobs/team/b.yaml");
  CHECK(c.Record("a").submission_id == "a-" + hash);
}

// Daemon B applied commit 2 (v2 replaced v1); daemon A's view is commit 1.
struct TwoDaemons {
  Cluster c;
  std::unique_ptr<InMemoryDesiredStateSource> a = c.NewRepo(CommitId(0));
  std::unique_ptr<InMemoryDesiredStateSource> b = c.NewRepo(CommitId(0));
  std::string v1, v2;

  TwoDaemons() {
    a->SetFile("jobs/j.yaml", Spec("sleep 300"), CommitId(1));
    b->SetFile("jobs/j.yaml", Spec("sleep 300"), CommitId(1));
    v1 = "j-" + Cluster::HashOf(*a, "jobs/j.yaml");
    REQUIRE(Actions(c.Pass(*b)) == "submit " + v1 + ";");
    b->SetFile("jobs/j.yaml", Spec("sleep 299"), CommitId(2));
    v2 = "j-" + Cluster::HashOf(*b, "jobs/j.yaml");
    REQUIRE(Actions(c.Pass(*b)) == "stop " + v1 + ";submit " + v2 + ";");
  }
};

TEST_CASE("a pass from an older commit fetches again and never stops the newer run", "[engine]") {
  TwoDaemons d;
  d.a->SetRelation(CommitId(2), CommitRelation::kUnknown);
  // The fetch of A's next load brings commit 2.
  int loads = 0;
  d.a->OnLoad([&] {
    if (++loads == 2) {
      d.a->SetFile("jobs/j.yaml", Spec("sleep 299"), CommitId(2));
      d.a->SetRelation(CommitId(2), CommitRelation::kAncestorOrSame);
    }
  });
  PassResult r = d.c.Pass(*d.a);
  CHECK(r.loads == 2);
  CHECK_FALSE(r.stale);
  CHECK(r.spec_commit == CommitId(2));
  CHECK(r.outcomes.empty());
  CHECK(d.c.ray().StatusOf(d.v2) != RayJobStatus::kStopped);
  CHECK(d.c.ray().StatusOf(d.v1 + "-r1") == std::nullopt);
}

TEST_CASE("a view that stays older through two fresh loads is Stale and does nothing", "[engine]") {
  TwoDaemons d;
  // Each of A's loads finds B one commit further: B applies it meanwhile.
  int next = 3;
  d.a->SetRelation(CommitId(2), CommitRelation::kDescendant);
  d.a->OnLoad([&] {
    const std::string commit = CommitId(next);
    d.b->SetFile("jobs/j.yaml", Spec("sleep " + std::to_string(300 + next)), commit);
    d.c.Pass(*d.b);
    d.a->SetRelation(commit, CommitRelation::kUnknown);
    ++next;
  });
  const size_t status_commits = d.c.store().commits().size();
  const size_t jobs = d.c.ray().JobCount();
  PassResult r = d.c.Pass(*d.a);
  d.a->OnLoad(nullptr);
  CHECK(r.stale);
  CHECK(r.loads == 1 + kMaxStaleReloads);
  CHECK_FALSE(r.planned);
  CHECK(r.outcomes.empty());
  CHECK(r.exit_status == kExitError);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].IsTransient());
  CHECK(r.errors[0].message().find("stale view") != std::string::npos);
  CHECK(ClassifyPass(r) == PassVerdict::kFailed);  // the daemon retries after its backoff
  // Only B's passes touched Ray and the status branch.
  CHECK(d.c.ray().JobCount() == jobs + 1 + kMaxStaleReloads);  // one new version per load
  CHECK(d.c.store().commits().size() > status_commits);
  CHECK(d.c.ray().StatusOf(d.v1 + "-r1") == std::nullopt);
}

TEST_CASE(
    "a run's commit still missing after a fresh fetch was force-pushed away: the branch "
    "wins",
    "[engine]") {
  TwoDaemons d;
  // Commit 2 was removed from the branch; A's branch is at commit 1 again.
  for (CommitRelation gone : {CommitRelation::kUnknown, CommitRelation::kDescendant}) {
    DYNAMIC_SECTION("commit 2 is " << ports::CommitRelationName(gone) << " to A") {
      d.a->SetRelation(CommitId(2), gone);
      PassResult r = d.c.Pass(*d.a);
      CHECK(r.loads == 2);
      CHECK_FALSE(r.stale);
      CHECK(r.spec_commit == CommitId(1));
      CHECK(Actions(r) == "stop " + d.v2 + ";submit " + d.v1 + "-r1;");
    }
  }
}

TEST_CASE("an unreadable status file freezes its own job only and is a warning", "[engine]") {
  Cluster c;
  auto repo = c.NewRepo(CommitId(0));
  repo->SetFile("jobs/a.yaml", Spec("sleep 300"), CommitId(1));
  repo->SetFile("jobs/b.yaml", Spec("sleep 301"), CommitId(1));
  const std::string secret = "s3cr3t-value-for-the-test";
  c.store().SetSkippedFiles({{"status/a.yaml", "a", "not YAML: " + secret},
                             {"status/notes.txt", "", "not a status record"}});
  ReconcileOptions options;
  options.secrets.Add(secret);
  PassResult r = c.Pass(*repo, options);
  CHECK(Actions(r) == "submit b-" + Cluster::HashOf(*repo, "jobs/b.yaml") + ";");
  const core::JobPlan* a = r.plan.FindJob("a");
  REQUIRE(a != nullptr);
  CHECK(a->phase == Phase::kInvalid);
  CHECK(a->message.find("status/a.yaml") != std::string::npos);
  CHECK_FALSE(c.store().ledger().contains("a"));  // the unreadable file is not overwritten
  REQUIRE(r.warnings.size() == 2);
  CHECK(r.warnings[0].kind == kWarnUnreadableStatus);
  CHECK(r.warnings[0].message ==
        "status file status/a.yaml cannot be read (not YAML: <redacted>); the job is frozen "
        "(nothing submitted or stopped) until the file is fixed or deleted");
  CHECK(r.warnings[1].message.find("status/notes.txt") != std::string::npos);
  CHECK(r.errors.empty());
  CHECK(r.exit_status == kExitError);
  CHECK(ClassifyPass(r) != PassVerdict::kFailed);
}

TEST_CASE("an invalid spec or cluster file is a warning, not a failed pass", "[engine]") {
  Cluster c;
  auto repo = c.NewRepo(CommitId(0));
  repo->SetFile("jobs/bad.yaml", "workload: custom\nnnodes: two\n", CommitId(1));
  SECTION("invalid spec") {
    PassResult r = c.Pass(*repo);
    REQUIRE(r.warnings.size() == 1);
    CHECK(r.warnings[0].kind == kWarnInvalidSpec);
    CHECK(r.warnings[0].message.rfind("jobs/bad.yaml: job bad is frozen", 0) == 0);
    CHECK(ClassifyPass(r) == PassVerdict::kInvalid);
  }
  SECTION("invalid cluster file") {
    repo->SetFile("cluster.yaml", "address: http://x\nbogus: 1\n", CommitId(2));
    PassResult r = c.Pass(*repo);
    CHECK(r.outcomes.empty());
    CHECK_FALSE(r.planned);
    bool cluster_warning = false;
    for (const Warning& w : r.warnings) cluster_warning |= w.kind == kWarnInvalidCluster;
    CHECK(cluster_warning);
    CHECK(ClassifyPass(r) == PassVerdict::kInvalid);
  }
}

}  // namespace
}  // namespace rg::engine
