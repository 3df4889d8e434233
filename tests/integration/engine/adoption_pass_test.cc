// Adoption checks what it adopts (docs/reconcile.md, "Adoption"), through the reconcile pass
// against the fake head: a job planted in Ray under the id a spec's render predicts, with
// ray-gitops's labels forged, is never recorded as the spec's run, never stopped and never
// submitted over, whether the pass finds it in its listing or on the duplicate id of its
// submit; a job with only some of the labels is never stopped, adopted or deleted; a run of
// ours that the ledger lost (a crash before the status commit) is still adopted.

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/pipeline.h"
#include "reconciler/core/render.h"
#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/gated_job_server.h"
#include "tests/support/in_memory_ports.h"
#include "tests/support/in_process_ray.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using namespace std::chrono_literals;
using core::Phase;
using core::RayJobStatus;

constexpr const char* kCommit = "0000000000000000000000000000000000000001";
constexpr const char* kTokenValue = "tok-0123456789abcdef";
constexpr const char* kSpecPath = "jobs/train.yaml";
constexpr const char* kSpec = "workload: custom\nentrypoint: sleep 300\n";

std::string ClusterYaml(const std::string& address) {
  return "address: " + address +
         "\n"
         "runtime_env:\n"
         "  env_vars:\n"
         "    API_TOKEN: " +
         kTokenValue + "\n";
}

// What ray-gitops renders for attempt `attempt` of `path` in `source`, as the pass would.
core::Value Render(testing::InMemoryDesiredStateSource& source, const std::string& path,
                   int attempt = 0, std::optional<core::UpstreamRuns> upstream_runs = {}) {
  auto snap = source.Load("HEAD");
  REQUIRE(snap.ok());
  core::BindDesiredState(snap->state, core::kDefaultInstance);
  for (const core::JobSpec& spec : snap->state.jobs) {
    if (spec.path != path) continue;
    core::RenderContext context;
    context.attempt = attempt;
    context.commit = snap->commit;
    context.repo_url = snap->repo_url;
    context.upstream_runs = upstream_runs;
    auto body = core::RenderSubmission(spec, *snap->state.cluster, context);
    REQUIRE(body.ok());
    return *body;
  }
  FAIL("no spec at " + path);
  return {};
}

std::string IdOf(const core::Value& body) { return body.Find("submission_id")->as_string(); }

// Submits `body` to the head as someone else would: the real client, no ray-gitops pass.
void Plant(testing::FakeRayServer& ray, const core::Value& body) {
  auto client = testing::InProcessClient(ray);
  REQUIRE(client->Submit(body).ok());
}

bool Stopped(testing::FakeRayServer& ray) { return ray.RequestCount(testing::kRouteStop) > 0; }

struct World : testing::PassHarness {
  std::unique_ptr<testing::InMemoryDesiredStateSource> source = NewRepo(kCommit);

  World() {
    source->SetFile("cluster.yaml", ClusterYaml(ray().address()), kCommit);
    source->SetFile(kSpecPath, kSpec, kCommit);
  }
  PassResult Pass(ReconcileOptions options = {}) { return PassHarness::Pass(*source, options); }
  int SubmitsOf(const std::string& id) {
    int n = 0;
    for (const std::string& body : ray().SubmitBodies()) {
      n += body.find("\"submission_id\":\"" + id + "\"") != std::string::npos ? 1 : 0;
    }
    return n;
  }
};

TEST_CASE("A job planted under the predicted id with forged labels is a Conflict, never ours") {
  World w;
  core::Value planted = Render(*w.source, kSpecPath);
  const std::string id = IdOf(planted);
  planted["entrypoint"] = "echo PWNED";
  SECTION("ended SUCCEEDED before the first pass") {
    Plant(w.ray(), planted);
    REQUIRE(w.ray().SetStatus(id, RayJobStatus::kSucceeded));
  }
  SECTION("still running") {
    planted["entrypoint"] = "sleep 3000 # PWNED";
    Plant(w.ray(), planted);
    REQUIRE(w.ray().SetStatus(id, RayJobStatus::kRunning));
  }
  for (int pass = 0; pass < 2; ++pass) {
    PassResult r = w.Pass();
    const core::StatusRecord& rec = w.Record("train");
    INFO(rec.message);
    CHECK(rec.phase == Phase::kConflict);
    CHECK(rec.submission_id == id);
    CHECK_THAT(rec.message, Catch::Contains("submission id " + id));
    CHECK_THAT(rec.message, Catch::Contains("its entrypoint differs"));
    CHECK_THAT(rec.message, !Catch::Contains("PWNED"));
    CHECK(rec.attempts.empty());
    CHECK(rec.status == RayJobStatus::kUnknown);
    CHECK(r.plan.actions.empty());
    bool listed = false;
    for (const core::RayJob& job : r.plan.unmanaged) listed = listed || job.submission_id == id;
    CHECK(listed);
  }
  CHECK(w.SubmitsOf(id) == 1);  // the planted one only
  CHECK_FALSE(Stopped(w.ray()));
}

TEST_CASE("A job planted with our entrypoint but another runtime_env is a Conflict naming it") {
  World w;
  core::Value planted = Render(*w.source, kSpecPath);
  const std::string id = IdOf(planted);
  planted["runtime_env"]["env_vars"]["API_TOKEN"] = "stolen-elsewhere";
  planted["runtime_env"]["pip"] = core::Value::Array{core::Value("evil-package")};
  Plant(w.ray(), planted);
  REQUIRE(w.ray().SetStatus(id, RayJobStatus::kSucceeded));
  w.Pass();
  const core::StatusRecord& rec = w.Record("train");
  INFO(rec.message);
  CHECK(rec.phase == Phase::kConflict);
  CHECK_THAT(rec.message, Catch::Contains("its runtime_env differs (env_vars.API_TOKEN"));
  CHECK_THAT(rec.message, !Catch::Contains(kTokenValue));
  CHECK_THAT(rec.message, !Catch::Contains("stolen-elsewhere"));
  CHECK_THAT(rec.message, !Catch::Contains("evil"));
  CHECK(rec.attempts.empty());
  CHECK(w.SubmitsOf(id) == 1);
}

TEST_CASE("A run of ours the ledger lost is checked once and adopted") {
  // The daemon submitted attempt 0 and died before its status commit: the same render.
  World w;
  const core::Value ours = Render(*w.source, kSpecPath);
  Plant(w.ray(), ours);
  REQUIRE(w.ray().SetStatus(IdOf(ours), RayJobStatus::kRunning));
  w.ray().ResetCounters();
  PassResult one = w.Pass();
  const core::StatusRecord& rec = w.Record("train");
  INFO(rec.message);
  CHECK(rec.phase == Phase::kRunning);
  REQUIRE(rec.attempts.size() == 1);
  CHECK(rec.attempts[0].submission_id == IdOf(ours));
  CHECK(w.ray().RequestCount(testing::kRouteGet) >= 1);  // read back once to check it
  CHECK(w.ray().RequestCount(testing::kRouteSubmit) == 0);

  // Known to the ledger now: a pass reads nothing back and renders nothing for it.
  w.ray().ResetCounters();
  PassResult two = w.Pass();
  CHECK(w.ray().RequestCount(testing::kRouteGet) == 0);
  CHECK(w.Record("train").phase == Phase::kRunning);
}

TEST_CASE("A job planted between the listing and the submit is refused on the duplicate id") {
  // The planted job appears after the pass listed Ray: its submit meets Ray's duplicate-id 500.
  testing::FakeRayServer ray;
  testing::GatedJobServer server(ray.address());
  testing::InMemoryDesiredStateSource source;
  source.SetFile("cluster.yaml", ClusterYaml(ray.address()), kCommit);
  source.SetFile(kSpecPath, kSpec, kCommit);
  testing::InMemoryStatusStore store;
  core::Value planted = Render(source, kSpecPath);
  const std::string id = IdOf(planted);
  planted["entrypoint"] = "sleep 3000 # PWNED";
  server.after_next_list = [&]() {
    adapters::RayHttpJobServer other(testing::FastClientOptions(ray.address()));
    REQUIRE(other.Submit(planted).ok());
  };
  ReconcileDeps deps;
  deps.source = &source;
  deps.server = &server;
  deps.store = &store;
  ReconcileOptions options;
  options.ray_address = ray.address();
  options.now_ms = testing::FakeClock::kStartWallMs;
  PassResult r = RunReconcilePass(deps, options);
  REQUIRE(r.outcomes.size() == 1);
  CHECK_FALSE(r.outcomes[0].ok);
  CHECK_FALSE(r.outcomes[0].adopted);
  REQUIRE(r.outcomes[0].error.has_value());
  CHECK(r.outcomes[0].error->IsConflict());
  CHECK_THAT(r.outcomes[0].error->message(), Catch::Contains("its entrypoint differs"));
  const core::StatusRecord& rec = store.ledger().at("train");
  INFO(rec.message);
  CHECK(rec.phase == Phase::kConflict);
  CHECK_THAT(rec.message, Catch::Contains(id));
  CHECK(rec.attempts.empty());
  CHECK(ray.RequestCount(testing::kRouteStop) == 0);

  // The next pass finds it in its listing: still a Conflict, nothing sent.
  options.now_ms += 1000;
  PassResult again = RunReconcilePass(deps, options);
  CHECK(again.plan.actions.empty());
  CHECK(store.ledger().at("train").phase == Phase::kConflict);
  CHECK(store.ledger().at("train").attempts.empty());
  CHECK(ray.StatusOf(id).has_value());
  CHECK(ray.RequestCount(testing::kRouteStop) == 0);
}

TEST_CASE("A job the ledger does not know that claims an older version or a removed spec") {
  // Nothing can render it: its full labels are all there is. It is stopped while active (a
  // run whose status commit was lost must not run beside its successor); the stop is recorded
  // as a replaced attempt, never as the spec's run.
  World w;
  core::Value older = Render(*w.source, kSpecPath);
  older["submission_id"] = "train-ffffffffff";
  older["metadata"][std::string(core::kMetaSpecHash)] = "ffffffffff";
  core::Value removed = older;
  removed["submission_id"] = "gone-ffffffffff";
  removed["metadata"][std::string(core::kMetaName)] = "gone";
  removed["metadata"][std::string(core::kMetaSpecPath)] = "jobs/gone.yaml";
  for (const core::Value& body : {older, removed}) {
    core::Value running = body;
    running["entrypoint"] = "sleep 3000";
    Plant(w.ray(), running);
    REQUIRE(w.ray().SetStatus(IdOf(running), RayJobStatus::kRunning));
  }
  PassResult first = w.Pass();
  CHECK(first.plan.CountActions(core::ActionKind::kStop) == 2);
  CHECK(w.ray().RequestCount(testing::kRouteStop) == 2);
  for (const char* id : {"train-ffffffffff", "gone-ffffffffff"}) {
    REQUIRE(w.ray().SetStatus(id, RayJobStatus::kStopped));
  }
  for (int pass = 0; pass < 2; ++pass) {
    PassResult r = w.Pass();
    CHECK(r.plan.CountActions(core::ActionKind::kStop) == 0);
    const core::StatusRecord& rec = w.Record("train");
    INFO(rec.message);
    CHECK(rec.submission_id != "train-ffffffffff");  // the spec's run is still our own
    CHECK(rec.phase != Phase::kStopped);
    for (const core::AttemptRecord& a : rec.attempts) {
      if (a.submission_id != "train-ffffffffff") continue;
      CHECK(a.status == RayJobStatus::kStopped);
      CHECK(a.stop_reason != core::StopReason::kNone);  // ray-gitops stopped it: never rerun
    }
  }
  CHECK(w.ray().RequestCount(testing::kRouteStop) == 2);
}

TEST_CASE("A lost run of a job with after is checked against its upstream's successful run") {
  World w;
  w.source->SetFile("cluster.yaml", ClusterYaml(w.ray().address()) + "shared_root: /mnt/shared\n",
                    kCommit);
  w.source->SetFile("jobs/a.yaml", "workload: custom\nentrypoint: sleep 1\n", kCommit);
  w.source->SetFile("jobs/b.yaml",
                    "workload: custom\nentrypoint: ls ${runs.a.dir}/checkpoints\nafter: [a]\n",
                    kCommit);
  w.Pass();  // a submitted, b waits
  const std::string a0 = w.Record("a").submission_id;
  w.Advance(2s);  // a SUCCEEDED; the ledger does not know yet
  core::Value b = Render(*w.source, "jobs/b.yaml", 0, core::UpstreamRuns{{"a", {a0, ""}}});
  const std::string id = IdOf(b);
  SECTION("our run, submitted by a pass that died before its status commit: adopted") {
    Plant(w.ray(), b);
    w.Pass();
    const core::StatusRecord& rec = w.Record("b");
    INFO(rec.message);
    CHECK(rec.phase != Phase::kConflict);
    REQUIRE(rec.attempts.size() == 1);
    CHECK(rec.attempts[0].submission_id == id);
  }
  SECTION("a planted one that names another upstream run: a Conflict") {
    b["entrypoint"] = "ls /mnt/shared/jobs/elsewhere/checkpoints";
    Plant(w.ray(), b);
    w.Pass();
    const core::StatusRecord& rec = w.Record("b");
    INFO(rec.message);
    CHECK(rec.phase == Phase::kConflict);
    CHECK_THAT(rec.message, Catch::Contains("its entrypoint differs"));
    CHECK(rec.attempts.empty());
  }
  CHECK(w.SubmitsOf(id) == 1);
}

// A job with some of our labels, submitted by hand.
core::Value HandJob(const std::string& id, const std::string& entrypoint,
                    core::Value::Object metadata) {
  core::Value body = core::Value::Object{};
  body["submission_id"] = id;
  body["entrypoint"] = entrypoint;
  body["metadata"] = std::move(metadata);
  return body;
}

TEST_CASE("A job without gitops.repo or gitops.spec-hash is never stopped, adopted or deleted") {
  World w;
  const std::string managed = std::string(core::kMetaManagedBy);
  Plant(w.ray(), HandJob("by-hand-running", "sleep 3000", {{managed, "ray-gitops"}}));
  Plant(w.ray(), HandJob("by-hand-finished", "true",
                         {{managed, "ray-gitops"},
                          {std::string(core::kMetaRepo), "file:///in-memory/repo.git"},
                          {std::string(core::kMetaName), "train"}}));
  Plant(w.ray(), HandJob("by-hand-removed", "sleep 3000",
                         {{managed, "ray-gitops"},
                          {std::string(core::kMetaRepo), "file:///in-memory/repo.git"},
                          {std::string(core::kMetaName), "gone"}}));
  REQUIRE(w.ray().SetStatus("by-hand-running", RayJobStatus::kRunning));
  REQUIRE(w.ray().SetStatus("by-hand-removed", RayJobStatus::kRunning));
  REQUIRE(w.ray().SetStatus("by-hand-finished", RayJobStatus::kSucceeded));
  ReconcileOptions options;
  options.gc_finished_after_ms = 1;
  for (int pass = 0; pass < 3; ++pass) {
    w.Advance(1h);
    PassResult r = w.Pass(options);
    for (const std::string& id : r.deleted) CHECK_FALSE(id.starts_with("by-hand-"));
    CHECK(r.plan.FindJob("gone") == nullptr);
    size_t unmanaged = 0;
    for (const core::RayJob& job : r.plan.unmanaged) {
      unmanaged += job.submission_id.starts_with("by-hand-") ? 1 : 0;
    }
    CHECK(unmanaged == 3);
  }
  CHECK(w.ray().StatusOf("by-hand-running") == RayJobStatus::kRunning);
  CHECK(w.ray().StatusOf("by-hand-removed") == RayJobStatus::kRunning);
  CHECK(w.ray().StatusOf("by-hand-finished") == RayJobStatus::kSucceeded);
  CHECK_FALSE(Stopped(w.ray()));
  // The spec's own run went its way beside them: it ended, and was cleaned up.
  REQUIRE(w.Record("train").attempts.size() == 1);
  CHECK(w.Record("train").phase == Phase::kSucceeded);
}

}  // namespace
}  // namespace rg::engine
