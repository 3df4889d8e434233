// Ownership on a shared cluster (docs/operations.md, "One cluster, several teams"), end to end
// through the reconcile pass: real libgit2 repositories and one fake Ray head. A job is ours only
// when its instance and its repository are ours. Two repositories that both kept the default
// instance never stop, adopt or record each other's runs: the other's runs are foreign, named in a
// warning, and a spec whose id a foreign run holds is a Conflict naming that repository. Two
// repositories with their own instances never share an id. A repository that moved keeps its runs
// with --previous-repo, and a local checkout with an origin remote is the repository it came from.

#include <git2.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/core/metrics.h"
#include "reconciler/core/ownership.h"
#include "reconciler/core/render.h"
#include "reconciler/engine/reconcile_loop.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/engine/warning.h"
#include "reconciler/spec/status_codec.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"
#include "tests/support/gated_job_server.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

using namespace std::chrono_literals;
using core::ActionKind;
using core::Phase;
using core::RayJobStatus;

constexpr const char* kStatusBranch = "ray-gitops/status";
// The spec both teams wrote, word for word: one name, one content, so one submission id on
// the default instance.
constexpr const char* kSharedSpec = "workload: custom\nentrypoint: sleep 300\n";

testing::FakeRayOptions Immediate() {
  testing::FakeRayOptions options;
  options.start_delay = 0ms;  // RUNNING at the first look: passes converge without waiting
  return options;
}

using testing::GatedJobServer;

// One team's desired-state repository: a bare remote holding cluster.yaml and `files`.
struct Repo : testing::TestRemote {
  Repo(const std::string& name, const std::string& cluster_yaml,
       const std::map<std::string, std::string>& files)
      : TestRemote(name) {
    person->Write("cluster.yaml", cluster_yaml);
    for (const auto& [path, text] : files) person->Write(path, text);
    person->CommitAndPush("main", "initial");
  }

  // How gitops.repo names this repository, compared: the path without ".git".
  std::string identity() const { return core::RepoIdentity(remote); }

  std::optional<core::StatusRecord> RecordOn(const std::string& name,
                                             const std::string& branch = kStatusBranch) const {
    return RecordIn(remote, name, branch);
  }

  static std::optional<core::StatusRecord> RecordIn(const std::string& repo,
                                                    const std::string& name,
                                                    const std::string& branch = kStatusBranch) {
    auto text = testing::ReadFileAt(repo, branch, spec::StatusFilePath(name));
    if (!text) return std::nullopt;
    auto record = spec::DecodeStatusYaml(*text, name);
    if (!record) FAIL(record.error().ToString());
    return *record;
  }
};

struct DaemonConfig {
  std::string instance = std::string(core::kDefaultInstance);
  std::string status_branch = kStatusBranch;
  std::vector<std::string> previous_repos;  // --previous-repo
};

// One ray-gitops process over `repo_url` (a bare remote or a local checkout): its own clone,
// its --instance, its status branch and its client of the shared head.
class Daemon {
 public:
  Daemon(const std::string& repo_url, const std::string& cache_dir, testing::FakeRayServer& ray,
         DaemonConfig config = {})
      : config_(std::move(config)), ray_(ray), server_(ray.address()) {
    adapters::GitWorkspaceOptions options;
    options.repo = repo_url;
    options.cache_dir = cache_dir;
    auto ws = adapters::GitWorkspace::Open(options);
    if (!ws) FAIL(ws.error().ToString());
    source_ =
        std::make_unique<adapters::GitDesiredStateSource>(*ws, adapters::GitDesiredStateOptions{});
    adapters::GitStatusStoreOptions store_options;
    store_options.branch = config_.status_branch;
    store_ = std::make_unique<adapters::GitStatusStore>(*ws, store_options);
  }

  GatedJobServer& server() { return server_; }

  // The options every pass of this process starts from: --instance and --previous-repo. The
  // repository itself comes from the snapshot, as the CLI leaves it.
  engine::ReconcileOptions BaseOptions() const {
    engine::ReconcileOptions options;
    options.ref = "main";  // the watched branch (a bare clone's HEAD may name another)
    options.policy.owner.instance = config_.instance;
    for (const std::string& url : config_.previous_repos) options.policy.owner.AddPrevious(url);
    options.ray_address = ray_.address();
    return options;
  }

  // One pass with `options` as given (the reconcile loop's pass function), then the fake
  // catches up with what it was asked.
  engine::PassResult Run(const engine::ReconcileOptions& options) {
    engine::ReconcileDeps deps;
    deps.source = source_.get();
    deps.server = &server_;
    deps.store = store_.get();
    engine::PassResult result = engine::RunReconcilePass(deps, options);
    ray_.Tick();
    return result;
  }

  // One stepped pass: BaseOptions, a later time, then `tweak` (AsSync, AsPlan).
  engine::PassResult Pass(const std::function<void(engine::ReconcileOptions&)>& tweak = {}) {
    engine::ReconcileOptions options = BaseOptions();
    options.now_ms = now_ms_ += 1000;
    if (tweak) tweak(options);
    return Run(options);
  }

  // Passes until one commits nothing (at most `limit`); what a running daemon reaches.
  void Converge(int limit = 4) {
    for (int i = 0; i < limit; ++i) {
      if (Pass().status_commit.empty()) return;
    }
    FAIL("no quiet pass after " << limit << " passes");
  }

 private:
  DaemonConfig config_;
  testing::FakeRayServer& ray_;
  GatedJobServer server_;
  std::unique_ptr<adapters::GitDesiredStateSource> source_;
  std::unique_ptr<adapters::GitStatusStore> store_;
  // An hour before the fake clock of the loop tests starts: stepped passes come first.
  int64_t now_ms_ = testing::FakeClock::kStartWallMs - 3'600'000;
};

// `sync --max-stops 100`: the deliberate override that lifts the stop guards, so nothing but
// ownership keeps a pass from stopping a run.
void AsSync(engine::ReconcileOptions& options) {
  options.policy.max_stops = 100;
  options.policy.max_stops_explicit = true;
}

// `plan`: nothing sent to Ray, nothing recorded.
void AsPlan(engine::ReconcileOptions& options) { options.dry_run = true; }

std::string Errors(const engine::PassResult& r) {
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

std::vector<engine::Warning> ForeignWarnings(const std::vector<engine::Warning>& warnings) {
  std::vector<engine::Warning> out;
  for (const auto& w : warnings) {
    if (w.kind == engine::kWarnForeignJobs) out.push_back(w);
  }
  return out;
}

std::set<std::string> SubmittedNames(const engine::PassResult& r) {
  std::set<std::string> out;
  for (const auto& a : r.plan.actions) {
    if (a.kind == ActionKind::kSubmit) out.insert(a.name);
  }
  return out;
}

// Sets `key` to `value` in the config of the repository at `repo_path`.
void SetConfig(const std::string& repo_path, const char* key, const std::string& value) {
  git_libgit2_init();
  git_repository* repo = nullptr;
  git_config* config = nullptr;
  int rc = git_repository_open(&repo, repo_path.c_str());
  if (rc == 0) rc = git_repository_config(&config, repo);
  if (rc == 0) rc = git_config_set_string(config, key, value.c_str());
  git_config_free(config);
  git_repository_free(repo);
  git_libgit2_shutdown();
  if (rc != 0) throw std::runtime_error(std::string("cannot set ") + key + " of " + repo_path);
}

// Gives the repository at `repo_path` the origin `origin_url`, as `git clone` leaves it.
void SetOrigin(const std::string& repo_path, const std::string& origin_url) {
  SetConfig(repo_path, "remote.origin.url", origin_url);
}

// Two teams on one cluster, both on the default instance. Team A runs "hello" (the very spec
// team B also wrote) and "train-a"; team B has "hello" and "eval-b".
struct TwoTeams {
  testing::FakeRayServer ray{Immediate()};
  Repo a{"team-a",
         "address: " + ray.address() + "\n",
         {{"jobs/hello.yaml", kSharedSpec},
          {"jobs/train-a.yaml", "workload: custom\nentrypoint: sleep 302\n"}}};
  Repo b{"team-b",
         "address: " + ray.address() + "\n",
         {{"jobs/hello.yaml", kSharedSpec},
          {"jobs/eval-b.yaml", "workload: custom\nentrypoint: sleep 303\n"}}};
  Daemon da{a.remote, a.tmp.Sub("cache"), ray};
  Daemon db{b.remote, b.tmp.Sub("cache"), ray};
};

// Nothing of A's in B's ledger: no status file of A's other job, no attempt of A's run in the
// record of the spec both wrote, and no file on B's branch that names A's other run.
void CheckNothingOfARecordedInB(const TwoTeams& t, const std::string& hello_id,
                                const std::string& train_id) {
  CHECK_FALSE(t.b.RecordOn("train-a").has_value());
  const auto hello = t.b.RecordOn("hello");
  REQUIRE(hello.has_value());
  CHECK(hello->FindAttempt(hello_id) == nullptr);
  CHECK(hello->attempts.empty());
  // The contested id is named, but A's run is not described as if it were B's.
  CHECK(hello->status == RayJobStatus::kUnknown);
  CHECK_FALSE(hello->start_time_ms.has_value());
  for (const std::string& path : testing::ListFiles(t.b.remote, kStatusBranch)) {
    INFO(path);
    CHECK_THAT(path, !Catch::Contains("train-a"));
    const auto text = testing::ReadFileAt(t.b.remote, kStatusBranch, path);
    REQUIRE(text.has_value());
    CHECK_THAT(*text, !Catch::Contains(train_id));
  }
}

TEST_CASE("Two repositories on the default instance never stop, adopt or record each other's runs",
          "[shared_cluster][foreign]") {
  TwoTeams t;
  t.da.Converge();
  const auto a_hello = t.a.RecordOn("hello");
  const auto a_train = t.a.RecordOn("train-a");
  REQUIRE(a_hello.has_value());
  REQUIRE(a_train.has_value());
  const std::string hello_id = a_hello->submission_id;
  const std::string train_id = a_train->submission_id;
  REQUIRE(t.ray.JobCount() == 2);

  // B's sync with the stop guards lifted: A's runs are not B's to stop, whatever the guards.
  auto sync = t.db.Pass(AsSync);
  REQUIRE(sync.planned);
  CHECK(sync.plan.CountActions(ActionKind::kStop) == 0);
  CHECK(SubmittedNames(sync) == std::set<std::string>{"eval-b"});
  CHECK(sync.plan.foreign.size() == 2);
  CHECK(sync.plan.adopted_previous.empty());
  CHECK_FALSE(sync.status_commit.empty());
  CHECK(Errors(sync).empty());
  {
    const auto foreign = ForeignWarnings(sync.warnings);
    REQUIRE(foreign.size() == 1);
    CHECK_THAT(foreign[0].message, Catch::Contains(t.a.identity()) && Catch::Contains("2 jobs") &&
                                       Catch::Contains("--instance"));
    CHECK_THAT(foreign[0].message, !Catch::Contains(t.b.identity()));
  }
  // The identical spec: A's run holds its id, so B's "hello" is a Conflict naming A.
  const core::JobPlan* hello_plan = sync.plan.FindJob("hello");
  REQUIRE(hello_plan != nullptr);
  CHECK(hello_plan->phase == Phase::kConflict);
  CHECK(hello_plan->submission_id == hello_id);
  CHECK_THAT(hello_plan->message, Catch::Contains(t.a.identity()));
  CHECK(t.ray.StatusOf(hello_id) == RayJobStatus::kRunning);
  CHECK(t.ray.StatusOf(train_id) == RayJobStatus::kRunning);
  CHECK(t.ray.JobCount() == 3);

  const auto b_hello = t.b.RecordOn("hello");
  REQUIRE(b_hello.has_value());
  CHECK(b_hello->phase == Phase::kConflict);
  CHECK_THAT(b_hello->message, Catch::Contains(t.a.identity()) && Catch::Contains("--instance"));
  const auto b_eval = t.b.RecordOn("eval-b");
  REQUIRE(b_eval.has_value());
  // Submitted by this pass, and running by the time the pass listed Ray's jobs again.
  CHECK(b_eval->phase == Phase::kRunning);
  CHECK(b_eval->status == RayJobStatus::kRunning);
  CheckNothingOfARecordedInB(t, hello_id, train_id);

  // B's daemon, timer-driven over a fake clock: the same, pass after pass, and ready (foreign
  // jobs are a warning, not a failure).
  testing::FakeClock clock;
  core::MetricsRegistry metrics;
  engine::LoopOptions loop_options;
  loop_options.random_seed = 1;
  loop_options.pass = t.db.BaseOptions();
  std::vector<engine::PassResult> passes;
  engine::ReconcileLoop loop(
      loop_options,
      [&](const engine::ReconcileOptions& options) {
        passes.push_back(t.db.Run(options));
        return passes.back();
      },
      clock, &metrics);
  loop.Trigger("api");
  REQUIRE(loop.Step());
  for (int round = 0; round < 2; ++round) {
    clock.AdvanceMs(loop_options.interval_ms);
    REQUIRE(loop.Step());
  }
  REQUIRE(passes.size() == 3);
  for (size_t i = 0; i < passes.size(); ++i) {
    INFO("daemon pass " << i);
    const auto& r = passes[i];
    CHECK(r.planned);
    CHECK(r.plan.actions.empty());
    // Nothing new: eval-b was recorded Running by the sync, and a Conflict that stays one is
    // never committed again.
    CHECK(r.transitions.empty());
    CHECK(r.status_commit.empty());
    CHECK(r.plan.foreign.size() == 2);
    CHECK(ForeignWarnings(r.warnings).size() == 1);
    const core::JobPlan* jp = r.plan.FindJob("hello");
    REQUIRE(jp != nullptr);
    CHECK(jp->phase == Phase::kConflict);
  }
  const engine::DaemonSnapshot snapshot = loop.Snapshot();
  CHECK(snapshot.ready);
  const auto shown = ForeignWarnings(snapshot.warnings);
  REQUIRE(shown.size() == 1);
  CHECK_THAT(shown[0].message, Catch::Contains(t.a.identity()));
  CHECK(metrics.Value("rg_warnings", {{"kind", std::string(engine::kWarnForeignJobs)}}) == 1);
  CHECK(t.ray.StatusOf(hello_id) == RayJobStatus::kRunning);
  CHECK(t.ray.StatusOf(train_id) == RayJobStatus::kRunning);
  CheckNothingOfARecordedInB(t, hello_id, train_id);

  // A's next pass keeps its runs, leaves B's alone and names B.
  const std::string a_tip = testing::BranchTip(t.a.remote, kStatusBranch);
  auto ra = t.da.Pass(AsSync);
  CHECK(Errors(ra).empty());
  CHECK(ra.plan.actions.empty());
  CHECK(ra.status_commit.empty());
  CHECK(testing::BranchTip(t.a.remote, kStatusBranch) == a_tip);
  CHECK(ra.plan.foreign.size() == 1);  // eval-b; B's "hello" was never submitted
  {
    const auto foreign = ForeignWarnings(ra.warnings);
    REQUIRE(foreign.size() == 1);
    CHECK_THAT(foreign[0].message, Catch::Contains(t.b.identity()) && Catch::Contains("1 job"));
  }
  const core::JobPlan* a_hello_plan = ra.plan.FindJob("hello");
  REQUIRE(a_hello_plan != nullptr);
  CHECK(a_hello_plan->phase == Phase::kRunning);
  CHECK(t.a.RecordOn("hello") == a_hello);
  CHECK(t.a.RecordOn("train-a") == a_train);
  CHECK_FALSE(t.a.RecordOn("eval-b").has_value());
  CHECK(t.ray.StatusOf(b_eval->submission_id) == RayJobStatus::kRunning);
  CHECK(t.ray.JobCount() == 3);
  CHECK(t.ray.SubmitBodies().size() == 3);

  // A's run of the shared spec ends: A's news, not B's. B's daemon commits nothing for it,
  // and A records it.
  const std::string b_tip = testing::BranchTip(t.b.remote, kStatusBranch);
  REQUIRE(t.ray.SetStatus(hello_id, RayJobStatus::kSucceeded));
  clock.AdvanceMs(loop_options.interval_ms);
  REQUIRE(loop.Step());
  CHECK(passes.back().status_commit.empty());
  CHECK(passes.back().transitions.empty());
  CHECK(testing::BranchTip(t.b.remote, kStatusBranch) == b_tip);
  CheckNothingOfARecordedInB(t, hello_id, train_id);
  auto ended = t.da.Pass();
  CHECK(Errors(ended).empty());
  CHECK_FALSE(ended.status_commit.empty());
  REQUIRE(t.a.RecordOn("hello").has_value());
  CHECK(t.a.RecordOn("hello")->phase == Phase::kSucceeded);
}

TEST_CASE(
    "A foreign run that takes the shared id between B's listing and its submit is not "
    "adopted",
    "[shared_cluster][foreign]") {
  TwoTeams t;
  // B lists Ray before A's first pass and submits after it: B's plan saw no "hello" and asks
  // for it; Ray says the id exists, and it is A's.
  t.db.server().after_next_list = [&t]() { t.da.Converge(); };
  auto rb = t.db.Pass();
  REQUIRE(rb.planned);
  CHECK(SubmittedNames(rb) == std::set<std::string>{"eval-b", "hello"});
  CHECK(rb.plan.foreign.empty());  // B's listing came first
  const auto a_hello = t.a.RecordOn("hello");
  REQUIRE(a_hello.has_value());
  const std::string hello_id = a_hello->submission_id;
  bool refused = false;
  for (const auto& o : rb.outcomes) {
    if (o.action.name != "hello") {
      CHECK(o.ok);
      continue;
    }
    REQUIRE_FALSE(o.ok);
    REQUIRE(o.error.has_value());
    CHECK(o.error->IsConflict());
    CHECK(o.action.submission_id == hello_id);
    CHECK_THAT(o.error->message(),
               Catch::Contains(t.a.identity()) && Catch::Contains("not adopting"));
    refused = true;
  }
  CHECK(refused);
  CHECK(engine::ClassifyPass(rb) == engine::PassVerdict::kInvalid);  // the daemon stays ready
  const auto b_hello = t.b.RecordOn("hello");
  REQUIRE(b_hello.has_value());
  CHECK(b_hello->phase == Phase::kConflict);
  CHECK_THAT(b_hello->message, Catch::Contains(t.a.identity()));
  CHECK(b_hello->FindAttempt(hello_id) == nullptr);
  CHECK(t.ray.JobCount() == 3);  // A's two, B's eval-b: one run of "hello"
  CHECK(t.ray.StatusOf(hello_id) == RayJobStatus::kRunning);

  // B's next pass sees A's run and plans the Conflict; A's run is still only A's.
  auto again = t.db.Pass();
  CHECK(again.plan.actions.empty());
  const core::JobPlan* jp = again.plan.FindJob("hello");
  REQUIRE(jp != nullptr);
  CHECK(jp->phase == Phase::kConflict);
  CHECK(ForeignWarnings(again.warnings).size() == 1);
  auto ra = t.da.Pass();
  CHECK(Errors(ra).empty());
  CHECK(ra.plan.actions.empty());
  CHECK(ra.status_commit.empty());
  CHECK(t.a.RecordOn("hello") == a_hello);
}

TEST_CASE("Two repositories with their own instances on one cluster get distinct ids, both run",
          "[shared_cluster][instance]") {
  testing::FakeRayServer ray(Immediate());
  Repo a("team-a", "address: " + ray.address() + "\n", {{"jobs/hello.yaml", kSharedSpec}});
  Repo b("team-b", "address: " + ray.address() + "\n", {{"jobs/hello.yaml", kSharedSpec}});
  Daemon da(a.remote, a.tmp.Sub("cache"), ray, {"team-a", "ray-gitops/status-team-a", {}});
  Daemon db(b.remote, b.tmp.Sub("cache"), ray, {"team-b", "ray-gitops/status-team-b", {}});

  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    auto ra = da.Pass();
    CHECK(Errors(ra).empty());
    CHECK(ForeignWarnings(ra.warnings).empty());
    auto rb = db.Pass();
    CHECK(Errors(rb).empty());
    CHECK(ForeignWarnings(rb.warnings).empty());
  }
  da.Converge();
  db.Converge();
  const auto mine = a.RecordOn("hello", "ray-gitops/status-team-a");
  const auto theirs = b.RecordOn("hello", "ray-gitops/status-team-b");
  REQUIRE(mine.has_value());
  REQUIRE(theirs.has_value());
  CHECK(mine->instance == "team-a");
  CHECK(theirs->instance == "team-b");
  CHECK(mine->submission_id != theirs->submission_id);
  CHECK(mine->spec_hash != theirs->spec_hash);
  CHECK(mine->phase == Phase::kRunning);
  CHECK(theirs->phase == Phase::kRunning);
  CHECK(ray.StatusOf(mine->submission_id) == RayJobStatus::kRunning);
  CHECK(ray.StatusOf(theirs->submission_id) == RayJobStatus::kRunning);
  CHECK(ray.JobCount() == 2);

  // Each sees the other's run as another instance's: never stopped, never a Conflict.
  auto ra = da.Pass(AsSync);
  auto rb = db.Pass(AsSync);
  for (const auto* r : {&ra, &rb}) {
    CHECK(r->plan.actions.empty());
    CHECK(r->status_commit.empty());
    CHECK(r->plan.foreign.empty());
    CHECK(r->plan.unmanaged.size() == 1);
    const core::JobPlan* jp = r->plan.FindJob("hello");
    REQUIRE(jp != nullptr);
    CHECK(jp->phase == Phase::kRunning);
  }
  CHECK(ray.JobCount() == 2);
}

TEST_CASE("A moved repository keeps its runs with --previous-repo and stops nothing without it",
          "[shared_cluster][previous_repo]") {
  testing::FakeRayServer ray(Immediate());
  Repo repo("old", "address: " + ray.address() + "\n",
            {{"jobs/hello.yaml", kSharedSpec},
             {"jobs/train.yaml", "workload: custom\nentrypoint: sleep 304\n"}});
  const std::string old_url = repo.remote;
  {
    Daemon before(old_url, repo.tmp.Sub("cache-before"), ray);
    before.Converge();
  }
  const auto hello = repo.RecordOn("hello");
  const auto train = repo.RecordOn("train");
  REQUIRE(hello.has_value());
  REQUIRE(train.has_value());
  REQUIRE(ray.JobCount() == 2);

  // The repository moves, history and status branch with it.
  const std::string new_url = repo.tmp.Sub("moved.git");
  std::filesystem::rename(old_url, new_url);
  const std::string new_identity = core::RepoIdentity(new_url);

  SECTION("without --previous-repo the old runs are foreign: nothing is stopped or submitted") {
    Daemon moved(new_url, repo.tmp.Sub("cache-plain"), ray);
    auto r = moved.Pass(AsSync);
    REQUIRE(r.planned);
    CHECK(r.plan.actions.empty());
    CHECK(r.plan.foreign.size() == 2);
    CHECK(r.plan.adopted_previous.empty());
    const auto foreign = ForeignWarnings(r.warnings);
    REQUIRE(foreign.size() == 1);
    CHECK_THAT(foreign[0].message, Catch::Contains(core::RepoIdentity(old_url)));
    for (const char* name : {"hello", "train"}) {
      INFO(name);
      const core::JobPlan* jp = r.plan.FindJob(name);
      REQUIRE(jp != nullptr);
      CHECK(jp->phase == Phase::kConflict);
    }
    CHECK(ray.StatusOf(hello->submission_id) == RayJobStatus::kRunning);
    CHECK(ray.StatusOf(train->submission_id) == RayJobStatus::kRunning);
    CHECK(ray.JobCount() == 2);
    CHECK(ray.SubmitBodies().size() == 2);
  }

  SECTION("with --previous-repo the old runs are ours: same ids, nothing restarted") {
    Daemon moved(new_url, repo.tmp.Sub("cache-moved"), ray, {.previous_repos = {old_url}});
    auto plan = moved.Pass(AsPlan);
    REQUIRE(plan.planned);
    CHECK(plan.plan.actions.empty());
    CHECK(plan.plan.foreign.empty());
    CHECK(ForeignWarnings(plan.warnings).empty());
    REQUIRE(plan.plan.adopted_previous.size() == 1);
    CHECK(plan.plan.adopted_previous.begin()->first == old_url);
    CHECK(plan.plan.adopted_previous.begin()->second == 2);

    auto r = moved.Pass(AsSync);
    CHECK(Errors(r).empty());
    CHECK(r.plan.actions.empty());
    CHECK(r.plan.adopted_previous.at(old_url) == 2);
    CHECK(ray.SubmitBodies().size() == 2);
    const auto hello_now = Repo::RecordIn(new_url, "hello");
    const auto train_now = Repo::RecordIn(new_url, "train");
    REQUIRE(hello_now.has_value());
    REQUIRE(train_now.has_value());
    CHECK(hello_now->submission_id == hello->submission_id);
    CHECK(train_now->submission_id == train->submission_id);
    CHECK(hello_now->phase == Phase::kRunning);
    CHECK(train_now->phase == Phase::kRunning);
    moved.Converge();

    // The adopted runs are ours in full: a spec change replaces the old run, and the new run
    // carries the new URL.
    testing::GitTestClone editor(new_url, repo.tmp.Sub("editor.git"));
    editor.Write("jobs/train.yaml", "workload: custom\nentrypoint: sleep 305\n");
    editor.CommitAndPush("main", "train longer");
    auto change = moved.Pass();
    CHECK(Errors(change).empty());
    CHECK(change.plan.CountActions(ActionKind::kStop) == 1);
    CHECK(change.plan.CountActions(ActionKind::kSubmit) == 1);
    CHECK(ray.StatusOf(train->submission_id) == RayJobStatus::kStopped);
    CHECK(ray.StatusOf(hello->submission_id) == RayJobStatus::kRunning);
    const auto replaced = Repo::RecordIn(new_url, "train");
    REQUIRE(replaced.has_value());
    CHECK(replaced->submission_id != train->submission_id);
    GatedJobServer client(ray.address());
    auto job = client.Get(replaced->submission_id);
    REQUIRE(job.ok());
    CHECK(core::RepoIdentity(job->Label(core::kMetaRepo)) == new_identity);
  }
}

TEST_CASE("A local checkout with an origin remote is the repository it was cloned from",
          "[shared_cluster][checkout]") {
  testing::FakeRayServer ray(Immediate());
  Repo repo("remote", "address: " + ray.address() + "\n",
            {{"jobs/hello.yaml", kSharedSpec},
             {"jobs/train.yaml", "workload: custom\nentrypoint: sleep 306\n"}});
  Daemon daemon(repo.remote, repo.tmp.Sub("cache-daemon"), ray);
  daemon.Converge();
  REQUIRE(ray.JobCount() == 2);

  // A developer's checkout (<dir>/.git and a working directory), every branch fetched, the
  // status branch too.
  const std::string checkout = repo.tmp.Sub("checkout");
  testing::GitTestClone copy(repo.remote, checkout + "/.git");
  SetConfig(checkout + "/.git", "core.bare", "false");

  // Without an origin the copy is a repository of its own, and the daemon's runs are foreign.
  {
    Daemon alone(checkout, repo.tmp.Sub("cache-alone"), ray);
    auto plan = alone.Pass(AsPlan);
    INFO(Errors(plan));
    REQUIRE(plan.planned);
    CHECK(plan.plan.foreign.size() == 2);
    const auto foreign = ForeignWarnings(plan.warnings);
    REQUIRE(foreign.size() == 1);
    CHECK_THAT(foreign[0].message, Catch::Contains(repo.identity()));
  }

  std::string origin;
  SECTION("origin as a path") { origin = repo.remote; }
  SECTION("origin as a file:// URL") { origin = "file://" + repo.remote; }
  SECTION("origin relative to the checkout") { origin = "../remote.git"; }
  SECTION("origin as written, whatever insteadOf rule would rewrite it") {
    // The daemon records the URL it was given; the checkout's identity is its origin as
    // written, not where a url.<base>.insteadOf rule would send a fetch.
    origin = repo.remote;
    SetConfig(checkout + "/.git", "url.file:///elsewhere/.insteadOf", repo.remote);
  }
  SetOrigin(checkout, origin);
  INFO("origin " << origin);

  Daemon ci(checkout, repo.tmp.Sub("cache-ci"), ray);
  auto plan = ci.Pass(AsPlan);
  REQUIRE(plan.planned);
  CHECK(Errors(plan).empty());
  CHECK(plan.warnings.empty());
  CHECK(plan.plan.foreign.empty());
  CHECK(plan.plan.actions.empty());
  CHECK(plan.plan.adopted_previous.empty());
  for (const char* name : {"hello", "train"}) {
    INFO(name);
    const core::JobPlan* jp = plan.plan.FindJob(name);
    REQUIRE(jp != nullptr);
    CHECK(jp->phase == Phase::kRunning);
  }

  // A sync from the checkout: nothing to do, and its copy of the ledger already says so.
  auto sync = ci.Pass(AsSync);
  CHECK(Errors(sync).empty());
  CHECK(sync.warnings.empty());
  CHECK(sync.plan.actions.empty());
  CHECK(sync.status_commit.empty());
  CHECK(ray.SubmitBodies().size() == 2);
  for (const char* name : {"hello", "train"}) {
    INFO(name);
    const auto record = Repo::RecordIn(checkout, name);
    REQUIRE(record.has_value());
    CHECK(record->phase == Phase::kRunning);
    CHECK(record->submission_id == repo.RecordOn(name)->submission_id);
  }
  // And the daemon on the remote is not disturbed by it.
  CHECK(daemon.Pass().status_commit.empty());
}

TEST_CASE("A bare copy with an origin is a repository of its own: a mirror or a moved one",
          "[shared_cluster][checkout]") {
  testing::FakeRayServer ray(Immediate());
  Repo repo("remote", "address: " + ray.address() + "\n", {{"jobs/hello.yaml", kSharedSpec}});
  Daemon daemon(repo.remote, repo.tmp.Sub("cache-daemon"), ray);
  daemon.Converge();
  REQUIRE(ray.JobCount() == 1);

  // What `git clone --bare` and `git clone --mirror` leave: a bare repository whose origin is
  // the repository it was copied from.
  const std::string mirror = repo.tmp.Sub("mirror.git");
  testing::GitTestClone copy(repo.remote, mirror);
  SetOrigin(mirror, repo.remote);

  Daemon moved(mirror, repo.tmp.Sub("cache-mirror"), ray);
  auto plan = moved.Pass(AsPlan);
  REQUIRE(plan.planned);
  CHECK(plan.plan.foreign.size() == 1);
  CHECK(plan.plan.actions.empty());
  const core::JobPlan* jp = plan.plan.FindJob("hello");
  REQUIRE(jp != nullptr);
  CHECK(jp->phase == Phase::kConflict);
  CHECK_THAT(jp->message, Catch::Contains(repo.identity()));
  const auto foreign = ForeignWarnings(plan.warnings);
  REQUIRE(foreign.size() == 1);
  CHECK_THAT(foreign[0].message, Catch::Contains(repo.identity()));
}

}  // namespace
}  // namespace rg
