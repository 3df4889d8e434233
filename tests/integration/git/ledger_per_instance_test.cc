// One ledger per instance and cluster (docs/status-branch.md), end to end through the reconcile
// pass: real libgit2 repositories, one clone per daemon as separate processes would have, and fake
// Ray heads. Two instances on one repository each keep their own ledger without a commit war;
// the documented two-cluster setup (one daemon per cluster, each its own --instance and status
// branch) gives each cluster its runs; two clusters that share one branch by mistake never
// use or overwrite each other's records.

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/engine/reconcile_loop.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/spec/status_codec.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

using namespace std::chrono_literals;

constexpr const char* kDefaultBranch = "ray-gitops/status";

testing::FakeRayOptions Immediate() {
  testing::FakeRayOptions options;
  options.start_delay = 0ms;  // RUNNING at the first look: passes converge without waiting
  return options;
}

// The desired-state repository: cluster.yaml pointing at `address`, and one long job.
struct Repo : testing::TestRemote {
  explicit Repo(const std::string& cluster_yaml) {
    person->Write("cluster.yaml", cluster_yaml);
    person->Write("jobs/hello.yaml", "workload: custom\nentrypoint: sleep 300\n");
    // A second team's folder with a job of the same name (and so the same status file name).
    person->Write("team-b/hello.yaml", "workload: custom\nentrypoint: sleep 301\n");
    person->CommitAndPush("main", "initial");
  }

  std::optional<core::StatusRecord> RecordOn(const std::string& branch, const std::string& name) {
    auto text = testing::ReadFileAt(remote, branch, spec::StatusFilePath(name));
    if (!text) return std::nullopt;
    auto record = spec::DecodeStatusYaml(*text, name);
    if (!record) FAIL(record.error().ToString());
    return *record;
  }
};

// One `ray-gitops run`: its own clone, its --instance, its status branch and its Ray address.
class Daemon {
 public:
  Daemon(Repo& repo, const std::string& name, std::string instance, std::string status_branch,
         testing::FakeRayServer& ray, std::string address = "", std::string jobs_dir = "jobs")
      : instance_(std::move(instance)),
        address_(address.empty() ? ray.address() : std::move(address)),
        ray_(ray),
        client_(testing::FastClientOptions(address_)) {
    adapters::GitWorkspaceOptions options;
    options.repo = repo.remote;
    options.cache_dir = repo.tmp.Sub("cache-" + name);
    auto ws = adapters::GitWorkspace::Open(options);
    if (!ws) FAIL(ws.error().ToString());
    workspace_ = *ws;
    adapters::GitDesiredStateOptions source_options;
    source_options.jobs_dir = std::move(jobs_dir);
    source_ = std::make_unique<adapters::GitDesiredStateSource>(*ws, source_options);
    adapters::GitStatusStoreOptions store_options;
    store_options.branch = std::move(status_branch);
    store_ = std::make_unique<adapters::GitStatusStore>(*ws, store_options);
  }

  engine::PassResult Pass() {
    engine::ReconcileDeps deps;
    deps.source = source_.get();
    deps.server = &client_;
    deps.store = store_.get();
    if (drop_caches_after_reads) {
      deps.after_reads = [this]() {
        ++after_reads_calls;
        jobs_at_reads = ray_.JobCount();
        const core::Status dropped = workspace_->DropCaches();
        CHECK(dropped.ok());
      };
      deps.after_load = [this]() {
        ++after_load_calls;
        const core::Status dropped = workspace_->DropCaches();
        CHECK(dropped.ok());
      };
    }
    engine::ReconcileOptions options;
    options.policy.owner.instance = instance_;
    options.ray_address = address_;
    options.now_ms = now_ms_ += 1000;
    engine::PassResult result = engine::RunReconcilePass(deps, options);
    ray_.Tick();
    return result;
  }

  // What the daemon, `sync` and `plan` do (engine::ReconcileDeps::after_load, after_reads):
  // the clone reopened between reading the specs and the ledger, and between the pass's
  // reads and its plan. Counted, with Ray's job count at the second.
  bool drop_caches_after_reads = false;
  int after_load_calls = 0;
  int after_reads_calls = 0;
  size_t jobs_at_reads = 0;

  // Passes until one commits nothing (at most `limit`); what a running daemon reaches.
  void Converge(int limit = 4) {
    for (int i = 0; i < limit; ++i) {
      if (Pass().status_commit.empty()) return;
    }
    FAIL("no quiet pass after " << limit << " passes");
  }

 private:
  std::string instance_;
  std::string address_;
  std::shared_ptr<adapters::GitWorkspace> workspace_;
  testing::FakeRayServer& ray_;
  adapters::RayHttpJobServer client_;
  std::unique_ptr<adapters::GitDesiredStateSource> source_;
  std::unique_ptr<adapters::GitStatusStore> store_;
  int64_t now_ms_ = 1'800'000'000'000;
};

std::string Errors(const engine::PassResult& r) {
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

// Two teams on one cluster, each its own --instance and jobs folder, both with a job "hello".
TEST_CASE("Two instances on one repository keep their own ledgers and stop committing",
          "[git][ledger]") {
  testing::FakeRayServer ray(Immediate());
  Repo repo("address: " + ray.address() + "\n");
  Daemon a(repo, "a", "ray-gitops", kDefaultBranch, ray);
  Daemon b(repo, "b", "team-b", "ray-gitops/status-team-b", ray, "", "team-b");

  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    auto ra = a.Pass();
    CHECK(Errors(ra).empty());
    auto rb = b.Pass();
    CHECK(Errors(rb).empty());
  }
  a.Converge();
  b.Converge();
  CHECK(ray.JobCount() == 2);  // one run per instance

  // No flip-flop: once both have run, a further pass of each, in turn, commits nothing.
  const std::string tip_a = testing::BranchTip(repo.remote, kDefaultBranch);
  const std::string tip_b = testing::BranchTip(repo.remote, "ray-gitops/status-team-b");
  for (int round = 0; round < 2; ++round) {
    CHECK(a.Pass().status_commit.empty());
    CHECK(b.Pass().status_commit.empty());
  }
  CHECK(testing::BranchTip(repo.remote, kDefaultBranch) == tip_a);
  CHECK(testing::BranchTip(repo.remote, "ray-gitops/status-team-b") == tip_b);

  const auto mine = repo.RecordOn(kDefaultBranch, "hello");
  const auto theirs = repo.RecordOn("ray-gitops/status-team-b", "hello");
  REQUIRE(mine.has_value());
  REQUIRE(theirs.has_value());
  CHECK(mine->instance == "ray-gitops");
  CHECK(theirs->instance == "team-b");
  CHECK(mine->ray_cluster == ray.address());
  CHECK(mine->phase == core::Phase::kRunning);
  CHECK(theirs->phase == core::Phase::kRunning);
  CHECK(mine->submission_id != theirs->submission_id);
  CHECK(ray.StatusOf(mine->submission_id) == core::RayJobStatus::kRunning);
  CHECK(ray.StatusOf(theirs->submission_id) == core::RayJobStatus::kRunning);
}

TEST_CASE("Two instances that share one status branch by mistake never flip a status file",
          "[git][ledger]") {
  testing::FakeRayServer ray(Immediate());
  Repo repo("address: " + ray.address() + "\n");
  Daemon a(repo, "a", "ray-gitops", kDefaultBranch, ray);
  Daemon b(repo, "b", "team-b", kDefaultBranch, ray, "", "team-b");
  a.Converge();
  const auto before = repo.RecordOn(kDefaultBranch, "hello");
  REQUIRE(before.has_value());
  const std::string tip = testing::BranchTip(repo.remote, kDefaultBranch);

  // b never reads a's record as its own: it runs its own job, and is told why it cannot
  // record it, on every pass, without ever touching a's file.
  for (int round = 0; round < 3; ++round) {
    auto rb = b.Pass();
    REQUIRE(rb.errors.size() == 1);
    CHECK(rb.errors[0].IsConflict());
    CHECK_THAT(rb.errors[0].message(), Catch::Contains("holds the record of instance ray-gitops") &&
                                           Catch::Contains("--status-branch"));
    CHECK(a.Pass().status_commit.empty());
  }
  CHECK(ray.JobCount() == 2);
  CHECK(testing::BranchTip(repo.remote, kDefaultBranch) == tip);
  CHECK(repo.RecordOn(kDefaultBranch, "hello") == before);
}

TEST_CASE("A branch shared by mistake over many jobs names ten of them and counts the rest",
          "[git][ledger]") {
  testing::FakeRayServer ray(Immediate());
  Repo repo("address: " + ray.address() + "\n");
  for (int i = 0; i < 14; ++i) {
    const std::string file = "job-" + std::to_string(10 + i) + ".yaml";
    const std::string spec =
        "workload: custom\nentrypoint: sleep " + std::to_string(400 + i) + "\n";
    repo.person->Write("jobs/" + file, spec);
    repo.person->Write("team-b/" + file, spec);
  }
  repo.person->CommitAndPush("main", "fourteen more jobs in each folder");
  Daemon a(repo, "a", "ray-gitops", kDefaultBranch, ray);
  Daemon b(repo, "b", "team-b", kDefaultBranch, ray, "", "team-b");
  a.Converge();
  auto rb = b.Pass();
  REQUIRE(rb.errors.size() == 1);
  CHECK(rb.errors[0].IsConflict());
  const std::string message = rb.errors[0].message();
  CHECK_THAT(message, Catch::StartsWith("cannot record status: status not recorded for 15 jobs: "
                                        "status/"));
  size_t listed = 0;
  for (size_t at = message.find("is left as it is"); at != std::string::npos;
       at = message.find("is left as it is", at + 1)) {
    ++listed;
  }
  CHECK(listed == 10);
  CHECK_THAT(message, Catch::EndsWith("--status-branch; and 5 more"));
  CHECK(ray.JobCount() == 30);  // b's runs still go on
}

TEST_CASE("A pass that reopens its clone between its reads and its plan acts and records",
          "[git][ledger]") {
  testing::FakeRayServer ray(Immediate());
  Repo repo("address: " + ray.address() + "\n");
  Daemon a(repo, "a", "ray-gitops", kDefaultBranch, ray);
  a.drop_caches_after_reads = true;

  auto first = a.Pass();
  CHECK(Errors(first).empty());
  CHECK(a.after_load_calls == 1);  // the ledger read through the clone reopened after the specs
  CHECK(a.after_reads_calls == 1);
  CHECK(a.jobs_at_reads == 0);  // before anything was applied
  CHECK(ray.JobCount() == 1);
  CHECK_FALSE(first.status_commit.empty());  // written through the reopened clone
  const auto recorded = repo.RecordOn(kDefaultBranch, "hello");
  REQUIRE(recorded.has_value());
  const std::string first_run = recorded->submission_id;

  // A change: the old run stopped, the new one submitted, both read and recorded again.
  repo.person->Write("jobs/hello.yaml", "workload: custom\nentrypoint: sleep 302\n");
  repo.person->CommitAndPush("main", "hello sleeps longer");
  auto second = a.Pass();
  CHECK(Errors(second).empty());
  CHECK(a.after_load_calls == 2);
  CHECK(a.after_reads_calls == 2);
  CHECK(ray.JobCount() == 2);
  a.Converge();
  const auto now = repo.RecordOn(kDefaultBranch, "hello");
  REQUIRE(now.has_value());
  CHECK(now->submission_id != first_run);
  CHECK(now->attempts.size() == 2);
}

TEST_CASE("Two clusters, one daemon each with its own instance and status branch, both run",
          "[git][ledger]") {
  testing::FakeRayServer east(Immediate());
  testing::FakeRayServer west(Immediate());
  // One cluster.yaml; the second daemon reaches its own cluster with --ray-address.
  Repo repo("address: " + east.address() + "\n");
  Daemon e(repo, "east", "east", "ray-gitops/status-east", east);
  Daemon w(repo, "west", "west", "ray-gitops/status-west", west);

  e.Converge();
  w.Converge();
  CHECK(east.JobCount() == 1);
  CHECK(west.JobCount() == 1);
  const auto on_east = repo.RecordOn("ray-gitops/status-east", "hello");
  const auto on_west = repo.RecordOn("ray-gitops/status-west", "hello");
  REQUIRE(on_east.has_value());
  REQUIRE(on_west.has_value());
  CHECK(on_east->ray_cluster == east.address());
  CHECK(on_west->ray_cluster == west.address());
  CHECK(east.StatusOf(on_east->submission_id) == core::RayJobStatus::kRunning);
  CHECK(west.StatusOf(on_west->submission_id) == core::RayJobStatus::kRunning);
  CHECK(e.Pass().status_commit.empty());
  CHECK(w.Pass().status_commit.empty());
}

TEST_CASE("Two clusters of one instance sharing a branch: the second does nothing and says why",
          "[git][ledger]") {
  testing::FakeRayServer east(Immediate());
  testing::FakeRayServer west(Immediate());
  Repo repo("address: " + east.address() + "\n");
  Daemon e(repo, "east", "ray-gitops", kDefaultBranch, east);
  Daemon w(repo, "west", "ray-gitops", kDefaultBranch, west);
  e.Converge();
  const std::string tip = testing::BranchTip(repo.remote, kDefaultBranch);

  auto rw = w.Pass();
  REQUIRE(rw.errors.size() == 1);
  CHECK(rw.errors[0].kind() == core::ErrorKind::kFatal);
  CHECK(engine::ClassifyPass(rw) == engine::PassVerdict::kFailed);  // the daemon turns unready
  CHECK_THAT(rw.errors[0].message(), Catch::Contains(east.address()) &&
                                         Catch::Contains(west.address()) &&
                                         Catch::Contains("--status-branch"));
  CHECK_FALSE(rw.planned);
  CHECK(west.JobCount() == 0);
  CHECK(testing::BranchTip(repo.remote, kDefaultBranch) == tip);

  // The fix the message gives: the west daemon gets its own instance and branch.
  Daemon fixed(repo, "west-fixed", "west", "ray-gitops/status-west", west);
  fixed.Converge();
  CHECK(west.JobCount() == 1);
  CHECK(e.Pass().status_commit.empty());
}

TEST_CASE("Two clusters of two instances sharing a branch by mistake each get their runs",
          "[git][ledger]") {
  testing::FakeRayServer east(Immediate());
  testing::FakeRayServer west(Immediate());
  Repo repo("address: " + east.address() + "\n");
  Daemon e(repo, "east", "east", kDefaultBranch, east);
  Daemon w(repo, "west", "west", kDefaultBranch, west);
  e.Converge();
  const auto before = repo.RecordOn(kDefaultBranch, "hello");

  auto rw = w.Pass();
  CHECK(rw.planned);
  REQUIRE(rw.errors.size() == 1);
  CHECK(rw.errors[0].IsConflict());  // its record cannot be kept there: it says so
  CHECK(east.JobCount() == 1);
  CHECK(west.JobCount() == 1);
  CHECK(repo.RecordOn(kDefaultBranch, "hello") == before);
  // A second pass of west finds its run in Ray and submits nothing more.
  w.Pass();
  CHECK(west.JobCount() == 1);
  CHECK(west.SubmitBodies().size() == 1);
}

TEST_CASE("cluster.yaml's name makes two addresses of one cluster one ledger", "[git][ledger]") {
  testing::FakeRayServer ray(Immediate());
  const std::string by_ip = ray.address();
  const std::string by_name = "http://localhost:" + std::to_string(ray.port());
  Repo repo("name: prod\naddress: " + by_ip + "\n");
  Daemon first(repo, "first", "ray-gitops", kDefaultBranch, ray, by_ip);
  Daemon second(repo, "second", "ray-gitops", kDefaultBranch, ray, by_name);
  first.Converge();
  auto r = second.Pass();
  CHECK(Errors(r).empty());
  CHECK(r.status_commit.empty());
  CHECK(ray.JobCount() == 1);
  const auto record = repo.RecordOn(kDefaultBranch, "hello");
  REQUIRE(record.has_value());
  CHECK(record->ray_cluster == "prod");
}

TEST_CASE("A record from before ledgers had owners is adopted, not re-run, and then stamped",
          "[git][ledger]") {
  testing::FakeRayServer ray(Immediate());
  Repo repo("address: " + ray.address() + "\n");
  Daemon a(repo, "a", "ray-gitops", kDefaultBranch, ray);
  a.Converge();
  auto record = repo.RecordOn(kDefaultBranch, "hello");
  REQUIRE(record.has_value());
  REQUIRE(ray.SetStatus(record->submission_id, core::RayJobStatus::kSucceeded));
  a.Converge();

  // The branch as an older ray-gitops left it: the same record without its owner.
  testing::GitTestClone old(repo.remote, repo.tmp.Sub("old.git"));
  auto legacy = *repo.RecordOn(kDefaultBranch, "hello");
  REQUIRE(legacy.phase == core::Phase::kSucceeded);
  legacy.instance.clear();
  legacy.ray_cluster.clear();
  old.Write("status/hello.yaml", spec::EncodeStatusYaml(legacy));
  old.CommitAndPush(kDefaultBranch, "as written before owners");

  // The head restarts and forgets the finished run: the adopted record still says it ended.
  ray.Restart();
  auto r = a.Pass();
  CHECK(Errors(r).empty());
  CHECK(ray.JobCount() == 0);
  CHECK_FALSE(r.status_commit.empty());
  REQUIRE(r.transitions.size() == 1);
  CHECK(r.transitions[0] ==
        "hello: Succeeded, now in the ledger of ray-gitops on " + ray.address());
  const auto stamped = repo.RecordOn(kDefaultBranch, "hello");
  REQUIRE(stamped.has_value());
  CHECK(stamped->instance == "ray-gitops");
  CHECK(stamped->ray_cluster == ray.address());
  CHECK(a.Pass().status_commit.empty());
}

}  // namespace
}  // namespace rg
