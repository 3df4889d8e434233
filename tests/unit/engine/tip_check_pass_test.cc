// The tip check before stops on the pass (docs/reconcile.md, "Stale views"): a pass about to
// stop a run asks the remote for the branch's tip once; a tip whose desired state differs
// starts the pass over, as one of the stale-view rule's two reloads. In-memory repositories
// (one per daemon's clone) and the in-process fake head.

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "reconciler/engine/reconcile_loop.h"
#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/in_memory_ports.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using core::RayJobStatus;
using ports::CommitRelation;
using testing::InMemoryDesiredStateSource;

std::string CommitId(int n) {
  std::string hex = std::to_string(n);
  return std::string(40 - hex.size(), 't') + hex;
}

std::string Spec(int seconds) {
  return "workload: custom\nentrypoint: sleep " + std::to_string(seconds) + "\n";
}

std::string Done(const PassResult& r) {
  std::string out;
  for (const auto& o : r.outcomes) {
    out += o.action.kind == core::ActionKind::kStop ? "stop " : "submit ";
    out += o.action.submission_id + (o.ok ? ";" : " (failed);");
  }
  return out;
}

bool Active(std::optional<RayJobStatus> status) {
  return status == RayJobStatus::kPending || status == RayJobStatus::kRunning;
}

// Commit 1 runs v1 (sleep 300), applied by another daemon; this daemon's clone fetched commit 2,
// which changes the spec to v2 (sleep 299). Its pass plans: stop v1, submit v2.
struct Race {
  testing::PassHarness c;
  std::unique_ptr<InMemoryDesiredStateSource> other = c.NewRepo(CommitId(0));
  std::unique_ptr<InMemoryDesiredStateSource> repo = c.NewRepo(CommitId(0));
  std::string v1, v2;

  Race() {
    other->SetFile("jobs/j.yaml", Spec(300), CommitId(1));
    v1 = "j-" + testing::PassHarness::HashOf(*other, "jobs/j.yaml");
    REQUIRE(Done(c.Pass(*other)) == "submit " + v1 + ";");
    repo->SetFile("jobs/j.yaml", Spec(299), CommitId(2));
    v2 = "j-" + testing::PassHarness::HashOf(*repo, "jobs/j.yaml");
  }

  // Each time the pass asks for the branch's tip, `push(n)` (n = 1, 2, ...) moves the branch
  // on first: a push the clone's next fetch brings.
  void PushOnTipCheck(std::function<void(int)> push) {
    repo->EnableRemote([this, push = std::move(push)] { push(++tip_checks); });
  }
  int tip_checks = 0;
};

TEST_CASE("a pass without stops and a dry run ask the remote nothing", "[engine][tip]") {
  Race t;
  t.repo->EnableRemote();
  SECTION("no stop: a new job only") {
    t.repo->SetFile("jobs/j.yaml", Spec(300), CommitId(2));
    t.repo->SetFile("jobs/k.yaml", Spec(5), CommitId(2));
    const PassResult r = t.c.Pass(*t.repo);
    CHECK(Done(r).starts_with("submit k-"));
    CHECK(t.repo->remote_tips() == 0);
  }
  SECTION("a dry run plans the stop and sends nothing") {
    ReconcileOptions dry;
    dry.dry_run = true;
    const PassResult r = t.c.Pass(*t.repo, dry);
    CHECK(r.plan.CountActions(core::ActionKind::kStop) == 1);
    CHECK(t.repo->remote_tips() == 0);
  }
}

TEST_CASE("C1 -> C2 -> C3: the tip reverted while the pass planned from C2: no stop, start over",
          "[engine][tip]") {
  Race t;
  t.PushOnTipCheck([&](int) { t.repo->SetFile("jobs/j.yaml", Spec(300), CommitId(3)); });
  const PassResult r = t.c.Pass(*t.repo);
  CHECK(r.errors.empty());
  CHECK(r.loads == 2);
  REQUIRE(r.tip_moves.size() == 1);
  CHECK(r.tip_moves[0].from == CommitId(2));
  CHECK(r.tip_moves[0].to == CommitId(3));
  CHECK(r.tip_moves[0].changed == std::vector<std::string>{"jobs/j.yaml"});
  CHECK(TipMovedSummary(r.tip_moves[0]) == "HEAD moved from " + CommitId(2).substr(0, 12) + " to " +
                                               CommitId(3).substr(0, 12) +
                                               " (jobs/j.yaml changed)");
  CHECK(r.spec_commit == CommitId(3));
  CHECK(r.planned);
  CHECK(r.outcomes.empty());
  CHECK(t.tip_checks == 1);  // the round on C3 has no stop: it asks nothing
  CHECK(Active(t.c.ray().StatusOf(t.v1)));
  CHECK(t.c.ray().StatusOf(t.v2) == std::nullopt);
  CHECK(t.c.Record("j").submission_id == t.v1);
}

TEST_CASE("a tip that moved without changing the desired state: the stop goes ahead",
          "[engine][tip]") {
  Race t;
  t.PushOnTipCheck([&](int) { t.repo->SetFile("README.md", "docs\n", CommitId(3)); });
  const PassResult r = t.c.Pass(*t.repo);
  CHECK(r.errors.empty());
  CHECK(r.loads == 1);
  CHECK(r.tip_moves.empty());
  CHECK(r.spec_commit == CommitId(2));
  CHECK(Done(r) == "stop " + t.v1 + ";submit " + t.v2 + ";");
}

TEST_CASE("a tip that cannot be asked: nothing is applied or recorded", "[engine][tip]") {
  Race t;
  t.repo->EnableRemote();
  const bool unauthorized = GENERATE(false, true);
  t.repo->FailRemoteTipWith(unauthorized ? core::Error::Unauthorized("refused")
                                         : core::Error::Transient("timed out"));
  const size_t status_commits = t.c.store().commits().size();
  const PassResult r = t.c.Pass(*t.repo);
  CHECK_FALSE(r.planned);
  CHECK(r.outcomes.empty());
  CHECK(r.unreachable == "Git");
  REQUIRE(r.errors.size() == 1);
  CHECK_THAT(
      r.errors[0].message(),
      Catch::Contains("cannot check the tip of HEAD before stopping runs; nothing was done"));
  CHECK(r.exit_status == kExitError);
  CHECK(ClassifyPass(r) == PassVerdict::kFailed);
  CHECK(Active(t.c.ray().StatusOf(t.v1)));
  CHECK(t.c.ray().StatusOf(t.v2) == std::nullopt);
  CHECK(t.c.store().commits().size() == status_commits);
}

TEST_CASE("a source without a remote (read in place) is not checked", "[engine][tip]") {
  Race t;  // no EnableRemote: RemoteTip answers nullopt
  const PassResult r = t.c.Pass(*t.repo);
  CHECK(t.repo->remote_tips() == 1);
  CHECK(r.loads == 1);
  CHECK(Done(r) == "stop " + t.v1 + ";submit " + t.v2 + ";");
}

TEST_CASE("the tip check's restarts spend the stale-view rule's two reloads", "[engine][tip]") {
  Race t;
  // Each tip check finds the branch one version further.
  t.PushOnTipCheck([&](int n) { t.repo->SetFile("jobs/j.yaml", Spec(299 - n), CommitId(2 + n)); });
  SECTION("restarts only") {
    const PassResult r = t.c.Pass(*t.repo);
    CHECK(r.stale);
    CHECK(r.loads == 1 + kMaxStaleReloads);
    CHECK(r.tip_moves.size() == 3);
    CHECK_FALSE(r.planned);
    CHECK(r.outcomes.empty());
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].IsTransient());
    CHECK_THAT(r.errors[0].message(), Catch::StartsWith("stale view: HEAD moved from"));
    CHECK(ClassifyPass(r) == PassVerdict::kFailed);
  }
  SECTION("a stale-view reload first, then restarts") {
    // The first load finds the other daemon's v1 run from a commit this clone lacks; the
    // fresh load after it still lacks it (force-pushed away), and the pass goes on.
    t.repo->SetRelation(CommitId(1), CommitRelation::kUnknown);
    const PassResult r = t.c.Pass(*t.repo);
    CHECK(r.stale);
    CHECK(r.loads == 1 + kMaxStaleReloads);  // one reload for the view, one for the tip
    CHECK(r.tip_moves.size() == 2);
    CHECK(r.outcomes.empty());
  }
  CHECK(Active(t.c.ray().StatusOf(t.v1)));
}

}  // namespace
}  // namespace rg::engine
