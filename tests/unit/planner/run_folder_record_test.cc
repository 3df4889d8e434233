// The run folder a status record carries (DESIGN §5): set when ray-gitops submits or adopts an
// attempt of the run, shared by its attempts, and never carried over to a run it did not render.

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "reconciler/core/render.h"
#include "reconciler/core/status_update.h"

namespace rg::core {
namespace {

struct Pass {
  DesiredState desired;
  Plan plan;
  Ledger ledger;
  std::set<std::string, std::less<>> proven;
  StatusInputs in;

  Pass() {
    desired.cluster = RayConfig{};
    desired.cluster->address = "http://127.0.0.1:8265";
    desired.cluster->shared_root = "/shared";
    in.desired = &desired;
    in.plan = &plan;
    in.ledger = &ledger;
    in.owner.instance = "ray-gitops";
    in.ray_address = "http://127.0.0.1:8265";
    in.proven_runs = &proven;
  }

  // Job "a" at attempt `attempt` (id `id`); submitted by this pass when `submitted`.
  StatusRecord Record(const std::string& id, int attempt, bool submitted) {
    JobPlan jp;
    jp.name = "a";
    jp.spec_path = "jobs/a.yaml";
    jp.phase = Phase::kPending;
    jp.submission_id = id;
    jp.attempt = attempt;
    plan.jobs = {jp};
    in.outcomes.clear();
    if (submitted) {
      ActionOutcome outcome;
      outcome.action.kind = ActionKind::kSubmit;
      outcome.action.name = "a";
      outcome.action.submission_id = id;
      outcome.action.attempt = attempt;
      outcome.ok = true;
      in.outcomes.push_back(outcome);
    }
    StatusRecord rec = BuildStatusUpdate(in).records.at("a");
    ledger["a"] = rec;
    return rec;
  }
};

TEST_CASE("a submitted run records its run folder, which its retries keep", "[run_dir]") {
  Pass pass;
  CHECK(pass.Record("a-0123456789", 0, true).run_dir == "/shared/jobs/a-0123456789");
  // Passes that only watch it keep it.
  CHECK(pass.Record("a-0123456789", 0, false).run_dir == "/shared/jobs/a-0123456789");
  // Attempt 1: the same folder, not jobs/a-0123456789-r1.
  StatusRecord retry = pass.Record("a-0123456789-r1", 1, true);
  CHECK(retry.submission_id == "a-0123456789-r1");
  CHECK(retry.run_dir == "/shared/jobs/a-0123456789");
  CHECK(pass.Record("a-0123456789-r1", 1, false).run_dir == "/shared/jobs/a-0123456789");
}

TEST_CASE("a scheduled run's folder is its slot's run", "[run_dir]") {
  Pass pass;
  CHECK(pass.Record("a-0123456789-202501020300-r2", 2, true).run_dir ==
        "/shared/jobs/a-0123456789-202501020300");
}

TEST_CASE("no shared_root, no run folder", "[run_dir]") {
  Pass pass;
  pass.desired.cluster->shared_root.reset();
  CHECK(pass.Record("a-0123456789", 0, true).run_dir.empty());
}

TEST_CASE("a run submitted before run folders existed keeps none until ray-gitops submits again",
          "[run_dir]") {
  Pass pass;
  // The ledger of an earlier version: attempt 1 running, no run_dir.
  StatusRecord legacy;
  legacy.name = "a";
  legacy.spec_path = "jobs/a.yaml";
  legacy.submission_id = "a-0123456789-r1";
  legacy.attempt = 1;
  pass.ledger["a"] = legacy;
  CHECK(pass.Record("a-0123456789-r1", 1, false).run_dir.empty());
  // Its next attempt is rendered with the run folder, and records it.
  CHECK(pass.Record("a-0123456789-r2", 2, true).run_dir == "/shared/jobs/a-0123456789");
}

TEST_CASE("a record that moves to a run ray-gitops did not render drops the old run's folder",
          "[run_dir]") {
  Pass pass;
  CHECK(pass.Record("a-0123456789", 0, true).run_dir == "/shared/jobs/a-0123456789");
  CHECK(pass.Record("a-9999999999", 0, false).run_dir.empty());
  SECTION("unless the pass proved it is the run it renders") {
    pass.Record("a-0123456789", 0, true);
    pass.proven.insert("a-9999999999-r1");
    CHECK(pass.Record("a-9999999999-r1", 1, false).run_dir == "/shared/jobs/a-9999999999");
  }
}

}  // namespace
}  // namespace rg::core
