// The pass runner's wiring (cli/pass_runner.h) against a real libgit2 repository and the fake
// Ray head: how many times a failing Ray call is tried. A one-shot command (`sync`, `plan`)
// has nothing above it to try again, so its client retries a transient failure itself; the
// daemon's passes try each call once, and the loop's backoff is the one retry layer, so a pass
// never sleeps inside itself.

#include "reconciler/cli/pass_runner.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "reconciler/cli/repo_options.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

struct Setup {
  Setup() {
    remote.person->Write("cluster.yaml", "address: " + ray.address() + "\n");
    remote.person->Write("jobs/hello.yaml", "workload: custom\nentrypoint: python train.py\n");
    remote.person->CommitAndPush("main", "initial");
    global.ray_address = ray.address();
    repo.repo = remote.remote;
    repo.cache_dir = remote.tmp.Sub("cache");
    repo.ref = "main";
    repo.no_artifacts = true;
  }

  // One pass as the command line runs it; the number of job lists Ray saw.
  int ListsIn(const cli::PassWiring& wiring, bool* failed, bool overlap_reads = false) {
    core::Result<cli::RepoHandles> handles = cli::OpenRepo(repo);
    REQUIRE(handles.ok());
    engine::ReconcileOptions options;
    options.ref = repo.ref;
    options.overlap_reads = overlap_reads;
    ray.ResetCounters();
    core::Result<cli::PassRun> run =
        cli::RunPassOnRepo(global, repo, *handles->source, nullptr, options, wiring);
    REQUIRE(run.ok());
    *failed = run->result.exit_status != engine::kExitApplied;
    return ray.RequestCount(testing::kRouteList);
  }

  testing::FakeClock clock;
  // The head's jobs move only on `clock`, which this test never advances: hello stays PENDING
  // from its submission on, so every pass after the first plans nothing.
  testing::FakeRayServer ray{testing::FrozenHeadOptions(&clock)};
  testing::TestRemote remote;
  cli::GlobalOptions global;
  cli::RepoOptions repo;
};

TEST_CASE(
    "a one-shot pass retries a transient Ray failure and a daemon pass leaves that to the loop") {
  Setup s;
  bool failed = true;
  s.ListsIn({}, &failed);  // submits hello; later passes find it pending and change nothing
  REQUIRE_FALSE(failed);
  const int clean = s.ListsIn({}, &failed);
  REQUIRE_FALSE(failed);
  REQUIRE(clean >= 1);
  REQUIRE(s.ray.RequestCount(testing::kRouteSubmit) == 0);  // hello is still pending

  // The command line's pass: the 503 is tried again, and the pass goes through.
  s.ray.FailNext(testing::kRouteList, 1, 503, "busy");
  CHECK(s.ListsIn({}, &failed) == clean + 1);
  CHECK_FALSE(failed);

  // The daemon's pass: the same 503 fails the pass at once; nothing is tried twice.
  s.ray.FailNext(testing::kRouteList, 1, 503, "busy");
  cli::PassWiring daemon;
  daemon.ray_call_attempts = 1;
  CHECK(s.ListsIn(daemon, &failed) == 1);
  CHECK(failed);
  CHECK(s.ray.JobCount() == 1);
}

TEST_CASE("plan and sync list Ray once: the listing started before the load is the pass's") {
  Setup s;
  bool failed = true;
  s.ListsIn({}, &failed);  // submits hello; later passes change nothing
  REQUIRE_FALSE(failed);
  // The flags name the head: the early listing is the one the pass plans from (a second GET
  // would mean it was thrown away).
  CHECK(s.ListsIn({}, &failed, /*overlap_reads=*/true) == 1);
  CHECK_FALSE(failed);
  // The address only in cluster.yaml: nothing to list early, still one GET.
  s.global.ray_address.clear();
  CHECK(s.ListsIn({}, &failed, /*overlap_reads=*/true) == 1);
  CHECK_FALSE(failed);
  CHECK(s.ray.JobCount() == 1);
}

TEST_CASE("a one-shot pass saves the parse cache though its repository is left to the exit") {
  Setup s;
  engine::ReconcileOptions options;
  options.ref = s.repo.ref;
  options.dry_run = true;
  core::Result<cli::PassRun> run = cli::RunPassFromFlags(s.global, s.repo, options, false);
  REQUIRE(run.ok());
  CHECK(run->result.planned);
  int cache_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(s.repo.cache_dir)) {
    cache_files += entry.path().extension() == ".parse-cache" ? 1 : 0;
  }
  CHECK(cache_files == 1);  // written before the handles were left to the exit
}

// A full snapshot of the Git source holds no spec texts: the artifacts of a submission read
// the submitted spec's text from the commit.
TEST_CASE("a pass's submission artifacts hold the spec file and the cluster file as committed") {
  Setup s;
  s.repo.no_artifacts = false;
  s.repo.artifacts_root = s.remote.tmp.Sub("artifacts");
  core::Result<cli::RepoHandles> handles = cli::OpenRepo(s.repo);
  REQUIRE(handles.ok());
  engine::ReconcileOptions options;
  options.ref = s.repo.ref;
  cli::PassWiring wiring;
  wiring.artifacts = true;
  core::Result<cli::PassRun> run =
      cli::RunPassOnRepo(s.global, s.repo, *handles->source, nullptr, options, wiring);
  REQUIRE(run.ok());
  REQUIRE(run->result.outcomes.size() == 1);
  CHECK(run->result.outcomes[0].artifact_error.empty());
  const std::filesystem::path config = std::filesystem::path(s.repo.artifacts_root) / "jobs" /
                                       run->result.outcomes[0].action.submission_id / "config";
  auto read = [](const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  CHECK(read(config / "jobspec.yaml") == "workload: custom\nentrypoint: python train.py\n");
  CHECK(read(config / "ray_config.yaml") == "address: " + s.ray.address() + "\n");
}

}  // namespace
}  // namespace rg
