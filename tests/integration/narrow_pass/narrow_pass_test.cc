// Narrow passes (engine/narrow_pass.h) on a real repository and the fake head: after a pass
// that found the world at rest, a push of a few spec files is planned from those files alone.
// Every change is planned both ways, narrow and full (dry runs over the same inputs): the
// narrow pass must decide what the full one decides for its jobs, and the full one nothing
// for the others. Then the narrow pass is applied, and a full pass right after must find
// nothing left to do or to record. Changes a narrow view cannot decide send the daemon to a
// full pass.

#include "reconciler/engine/narrow_pass.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/engine/pass_memo.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/engine/warning.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/git_test_repo.h"
#include "tests/support/in_process_ray.h"

namespace rg {
namespace {

using engine::PassResult;

std::string Spec(int version, const std::string& extra = "") {
  return "workload: custom\nentrypoint: sleep infinity\nenv_vars:\n  V: \"" +
         std::to_string(version) + "\"\n" + extra;
}

std::string Actions(const PassResult& r) {
  std::string out;
  for (const auto& a : r.plan.actions) {
    out += a.kind == core::ActionKind::kStop ? "stop " : "submit ";
    out += a.name + "@" + std::to_string(a.attempt) + " " + a.reason + ";";
  }
  return out;
}

std::string DescribeJob(const core::JobPlan& jp) {
  return jp.name + " " + jp.spec_path + " " + std::string(core::PhaseName(jp.phase)) + " " +
         jp.message + " " + jp.submission_id + " " + std::to_string(jp.attempt.value_or(-1)) +
         " renamed_from=" + jp.renamed_from + " changed=" + std::to_string(jp.spec_changed);
}

const core::StatusRecord* RecordOf(const PassResult& r, const std::string& name) {
  for (const core::StatusRecord& record : r.records) {
    if (record.name == name) return &record;
  }
  return nullptr;
}

// A repository, its daemon's clone, source and store, and the fake head on a test clock.
struct World {
  testing::TestRemote repo;
  testing::FakeClock clock;
  testing::FakeRayServer ray{Head(&clock)};
  std::unique_ptr<adapters::RayHttpJobServer> client = testing::InProcessClient(ray);
  std::shared_ptr<adapters::GitWorkspace> workspace;
  std::unique_ptr<adapters::GitDesiredStateSource> source;
  std::unique_ptr<adapters::GitStatusStore> store;
  core::SipHasher::Key key{7, 11};
  std::string instance;  // --instance; empty: the default

  static testing::FakeRayOptions Head(ports::Clock* clock) {
    testing::FakeRayOptions options = testing::FrozenHeadOptions(clock);
    options.listen = false;
    return options;
  }

  World() {
    repo.person->Write("cluster.yaml", "address: http://127.0.0.1:1\n");
    for (int i = 0; i < 6; ++i) repo.person->Write("jobs/j" + std::to_string(i) + ".yaml", Spec(1));
    repo.person->CommitAndPush("main", "start");
    adapters::GitWorkspaceOptions options;
    options.repo = repo.remote;
    options.cache_dir = repo.tmp.Sub("cache");
    auto opened = adapters::GitWorkspace::Open(options);
    REQUIRE(opened.ok());
    workspace = *opened;
    source = std::make_unique<adapters::GitDesiredStateSource>(workspace,
                                                               adapters::GitDesiredStateOptions{});
    store =
        std::make_unique<adapters::GitStatusStore>(workspace, adapters::GitStatusStoreOptions{});
  }

  engine::ReconcileDeps Deps() {
    engine::ReconcileDeps deps;
    deps.source = source.get();
    deps.server = client.get();
    deps.store = store.get();
    return deps;
  }

  engine::ReconcileOptions Options(bool dry_run) {
    engine::ReconcileOptions options;
    options.ref = "main";
    options.ray_address = "http://127.0.0.1:1";
    options.now_ms = clock.NowMs();
    options.digest_key = key;
    options.dry_run = dry_run;
    if (!instance.empty()) options.policy.owner.instance = instance;
    return options;
  }

  PassResult Full(bool dry_run = false) {
    return engine::RunReconcilePass(Deps(), Options(dry_run));
  }

  std::optional<PassResult> Narrow(const engine::PassIndex& index, bool dry_run = false,
                                   std::string* why_not = nullptr) {
    return engine::NarrowPass(index, Deps(), Options(dry_run), {}, why_not);
  }

  // Lets the runs move on (started, stopped).
  void Advance() {
    clock.AdvanceMs(1000);
    ray.Tick();
  }

  // Full passes, time moving on between them, until one finds the world at rest.
  PassResult Settle() {
    for (int i = 0; i < 8; ++i) {
      PassResult r = Full();
      if (engine::IsFixpoint(r)) return r;
      Advance();
    }
    FAIL("the world did not come to rest");
    return {};
  }
};

// The narrow plan decides for its jobs what the full plan decides, and the full plan
// decides nothing for the others (their records stay as the settled pass left them).
void CheckSameDecisions(const PassResult& narrow, const PassResult& full,
                        const PassResult& settled) {
  INFO("narrow: " << Actions(narrow) << "\nfull: " << Actions(full));
  CHECK(Actions(narrow) == Actions(full));
  CHECK(narrow.blocked == full.blocked);
  CHECK(narrow.transitions == full.transitions);
  CHECK(narrow.exit_status == full.exit_status);
  const std::set<std::string> names(narrow.narrow_names.begin(), narrow.narrow_names.end());
  for (const core::JobPlan& jp : full.plan.jobs) {
    if (!names.contains(jp.name)) continue;
    const core::JobPlan* mine = narrow.plan.FindJob(jp.name);
    REQUIRE(mine != nullptr);
    CHECK(DescribeJob(*mine) == DescribeJob(jp));
  }
  CHECK(narrow.plan.jobs.size() <= names.size());
  for (const core::StatusRecord& record : full.records) {
    const PassResult& expected = names.contains(record.name) ? narrow : settled;
    const core::StatusRecord* other = RecordOf(expected, record.name);
    INFO(record.name);
    REQUIRE(other != nullptr);
    CHECK(*other == record);
  }
  for (const core::StatusRecord& record : narrow.records) {
    CHECK(RecordOf(full, record.name) != nullptr);
  }
}

// After the narrow pass applied its plan, a full pass finds nothing to do or to record.
void CheckNothingLeft(World& w) {
  const PassResult after = w.Full(/*dry_run=*/true);
  INFO(Actions(after));
  CHECK(after.plan.actions.empty());
  CHECK(after.transitions.empty());
}

// One change pushed to a world at rest, planned narrow and full; the narrow pass applied.
PassResult NarrowStep(World& w, const std::string& what) {
  INFO(what);
  const PassResult settled = w.Settle();
  const engine::PassIndex index = engine::IndexPass(settled, w.store.get());
  REQUIRE(index.valid());
  w.repo.person->CommitAndPush("main", what);
  const std::optional<PassResult> narrow = w.Narrow(index, /*dry_run=*/true);
  REQUIRE(narrow.has_value());
  CHECK(narrow->narrow);
  const PassResult full = w.Full(/*dry_run=*/true);
  CheckSameDecisions(*narrow, full, settled);
  const std::optional<PassResult> applied = w.Narrow(index);
  REQUIRE(applied.has_value());
  CHECK(Actions(*applied) == Actions(full));
  CHECK(applied->errors.empty());
  CheckNothingLeft(w);
  return *applied;
}

// A change the narrow view cannot decide: a full pass must run, and `why` says why.
void FullStep(World& w, const std::string& what, const std::string& why) {
  INFO(what);
  const PassResult settled = w.Settle();
  const engine::PassIndex index = engine::IndexPass(settled, w.store.get());
  REQUIRE(index.valid());
  w.repo.person->CommitAndPush("main", what);
  std::string why_not;
  CHECK_FALSE(w.Narrow(index, /*dry_run=*/true, &why_not).has_value());
  CHECK(why_not == why);
}

TEST_CASE("a narrow pass plans a changed spec as a full pass does, and reads one file") {
  World w;
  const PassResult settled = w.Settle();
  const engine::PassIndex index = engine::IndexPass(settled, w.store.get());
  REQUIRE(index.valid());
  w.repo.person->Write("jobs/j3.yaml", Spec(2));
  w.repo.person->CommitAndPush("main", "j3 v2");
  const int parses = w.source->parses();
  const std::optional<PassResult> narrow = w.Narrow(index);
  REQUIRE(narrow.has_value());
  CHECK(w.source->parses() == parses + 1);
  CHECK(narrow->narrow_names == std::vector<std::string>{"j3"});
  CHECK(Actions(*narrow).starts_with("stop j3@0"));
  REQUIRE(narrow->records.size() == 1);
  CHECK(narrow->records[0].name == "j3");
  CHECK_FALSE(narrow->status_commit.empty());
  CheckNothingLeft(w);
}

TEST_CASE("narrow passes decide every kind of spec change as full passes do") {
  World w;
  SECTION("edits, additions, removals, renames and suspensions") {
    w.repo.person->Write("jobs/j1.yaml", Spec(2));
    NarrowStep(w, "edit j1");
    w.repo.person->Write("jobs/new.yaml", Spec(1));
    NarrowStep(w, "add new");
    w.repo.person->Remove("jobs/j2.yaml");
    NarrowStep(w, "remove j2");
    w.repo.person->Write("jobs/again.yaml", Spec(1));
    const PassResult again =
        NarrowStep(w, "a removed job's content under a new name (renamed from)");
    REQUIRE(again.plan.FindJob("again") != nullptr);
    CHECK(again.plan.FindJob("again")->renamed_from == "j2");
    w.repo.person->Remove("jobs/j4.yaml");
    w.repo.person->Write("jobs/moved.yaml", Spec(1));
    NarrowStep(w, "rename j4 to moved (same content, so a new name)");
    w.repo.person->Write("jobs/j2.yaml", Spec(1));
    NarrowStep(w, "restore j2");
    w.repo.person->Write("jobs/j5.yaml", Spec(1, "suspend: true\n"));
    NarrowStep(w, "suspend j5");
    w.repo.person->Write("jobs/j5.yaml", Spec(1));
    NarrowStep(w, "unsuspend j5");
    w.repo.person->Write("jobs/j0.yaml", Spec(3));
    w.repo.person->Write("jobs/j1.yaml", Spec(3, "name: j1\n"));
    w.repo.person->Remove("jobs/new.yaml");
    NarrowStep(w, "three files at once");
    w.repo.person->Write("jobs/renamed-j3.yaml", Spec(2, "name: j3\n"));
    w.repo.person->Remove("jobs/j3.yaml");
    NarrowStep(w, "j3's file moved, its name kept");
    w.repo.person->Write("README.md", "not a spec\n");
    NarrowStep(w, "nothing but a file outside the jobs folder");
  }
  SECTION("changes a narrow view cannot decide") {
    w.repo.person->Write("cluster.yaml", "address: http://127.0.0.1:1\n# moved\n");
    FullStep(w, "the cluster file",
             "more than spec files changed (the cluster file, a link, a submodule, the jobs "
             "folder), or more than 64 of them");
    w.repo.person->Write("jobs/j1.yaml", "workload: [\n");
    FullStep(w, "an invalid spec", "a changed spec is invalid");
    w.repo.person->Write("jobs/j1.yaml", Spec(1));
    w.repo.person->CommitAndPush("main", "fixed");
    w.repo.person->Write("jobs/other.yaml", Spec(9, "name: j2\n"));
    FullStep(w, "a new file takes an unchanged file's name",
             "jobs/other.yaml takes the name j2 of jobs/j2.yaml");
    w.repo.person->Remove("jobs/other.yaml");
    w.repo.person->CommitAndPush("main", "fixed");
    w.repo.person->Write("jobs/pinned.yaml", Spec(1, "submission_id: pinned-run\n"));
    w.repo.person->CommitAndPush("main", "a pinned run");
    w.repo.person->Write("jobs/pin2.yaml", Spec(2, "submission_id: pinned-run\n"));
    FullStep(w, "a new file pins an unchanged file's submission id",
             "jobs/pin2.yaml pins the submission id of jobs/pinned.yaml");
    w.repo.person->Remove("jobs/pin2.yaml");
    w.repo.person->CommitAndPush("main", "fixed");
    w.repo.person->Write("jobs/sub/deep.yaml", Spec(4));
    NarrowStep(w, "a spec in a sub-folder");
    CHECK(engine::IsFixpoint(w.Settle()));
  }
  SECTION("a spec with code: a push outside the jobs folder can change what it runs") {
    w.repo.person->Write("src/train.py", "print('v1')\n");
    w.repo.person->Write("jobs/coded.yaml", "workload: custom\ncode: src\nentrypoint: sleep 600\n");
    w.repo.person->CommitAndPush("main", "a spec with code");
    w.repo.person->Write("src/train.py", "print('v2')\n");
    FullStep(w, "only the code changed",
             "a spec has code: a commit outside the jobs folder can change what it runs");
  }
  SECTION("a run that ended since the index was taken") {
    const PassResult settled = w.Settle();
    const engine::PassIndex index = engine::IndexPass(settled, w.store.get());
    REQUIRE(index.valid());
    REQUIRE_FALSE(settled.plan.jobs.empty());
    REQUIRE(w.ray.SetStatus(settled.plan.jobs[0].submission_id, core::RayJobStatus::kFailed));
    w.repo.person->Write("jobs/j3.yaml", Spec(33));
    w.repo.person->CommitAndPush("main", "j3 edited");
    std::string why_not;
    CHECK_FALSE(w.Narrow(index, /*dry_run=*/true, &why_not).has_value());
    CHECK(why_not == "Ray's job list changed since the last full pass");
  }
}

// A skewed clock is a warning about the cluster, not about a file: it keeps narrow passes,
// each of which reads the head's clock anew (docs/reconcile.md, "The head's clock").
TEST_CASE("a head whose clock is off keeps narrow passes, which read its clock anew") {
  World w;
  w.ray.SetClockOffset(std::chrono::hours(-2));
  const PassResult settled = w.Settle();
  REQUIRE(settled.warnings.size() == 1);
  CHECK(settled.warnings[0].kind == engine::kWarnClockSkew);
  const engine::PassIndex index = engine::IndexPass(settled, w.store.get());
  REQUIRE(index.valid());
  w.ray.SetClockOffset(std::chrono::hours(-3));
  w.repo.person->Write("jobs/j3.yaml", Spec(2));
  w.repo.person->CommitAndPush("main", "j3 v2");
  const std::optional<PassResult> narrow = w.Narrow(index);
  REQUIRE(narrow.has_value());
  CHECK(narrow->narrow);
  REQUIRE(narrow->warnings.size() == 1);
  CHECK_THAT(narrow->warnings[0].message, Catch::StartsWith("the daemon's clock is 3h ahead"));
  CHECK(narrow->head_clock_offset_ms == -3 * 3'600'000);
  CheckNothingLeft(w);
}

TEST_CASE("narrow passes of a named instance plan with the instance's spec hashes") {
  World w;
  w.instance = "blue";
  w.repo.person->Write("jobs/j1.yaml", Spec(2));
  NarrowStep(w, "edit j1");
  w.repo.person->Remove("jobs/j2.yaml");
  NarrowStep(w, "remove j2");
  w.repo.person->Write("jobs/again.yaml", Spec(1));
  const PassResult again = NarrowStep(w, "j2's content under a new name");
  REQUIRE(again.plan.FindJob("again") != nullptr);
  CHECK(again.plan.FindJob("again")->renamed_from == "j2");
}

TEST_CASE("random pushes are planned narrow as full passes plan them") {
  World w;
  std::mt19937 random(20261126);
  std::set<std::string> present = {"j0", "j1", "j2", "j3", "j4", "j5"};
  int version = 10;
  for (int step = 0; step < 12; ++step) {
    const int changes = 1 + static_cast<int>(random() % 3);
    for (int c = 0; c < changes; ++c) {
      const std::string name = "j" + std::to_string(random() % 9);
      const std::string path = "jobs/" + name + ".yaml";
      switch (random() % 4) {
        case 0:
          if (present.erase(name) > 0) w.repo.person->Remove(path);
          break;
        case 1:
          w.repo.person->Write(path, Spec(version++, "suspend: true\n"));
          present.insert(name);
          break;
        default:
          w.repo.person->Write(path, Spec(version++));
          present.insert(name);
          break;
      }
    }
    NarrowStep(w, "step " + std::to_string(step));
  }
}

}  // namespace
}  // namespace rg
