// Code from the repository (docs/code-in-the-repository.md), end to end through the reconcile
// pass: a real libgit2 repository whose src/ folder is a spec's `code`, one fake Ray head that
// keeps packages and runs `cat FILE` in them. A code push is a new run with the new code; specs
// sharing a folder share one package (one zip, one PUT); a pass with nothing to submit sends no
// package request; a head that forgot the package gets it again; code_ref holds the code still
// while the folder moves on; a folder that cannot be shipped makes the spec invalid and leaves
// its running run alone.

#include <git2.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "reconciler/adapters/artifact_writer.h"
#include "reconciler/adapters/code_folders.h"
#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/core/code_package.h"
#include "reconciler/core/render.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/status_codec.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

using namespace std::chrono_literals;
using core::ActionKind;
using core::RayJobStatus;

constexpr const char* kStatusBranch = "ray-gitops/status";

testing::FakeRayOptions Immediate() {
  testing::FakeRayOptions options;
  options.start_delay = 0ms;
  options.run_time = 0ms;
  return options;
}

// One ray-gitops process over a test remote: its clone, its status branch, its Ray client.
class Process {
 public:
  // Watching `ref` of `remote` (the status branch itself when the two are one).
  Process(const std::string& remote, const std::string& cache_dir, testing::FakeRayServer& ray,
          std::string ref = "main")
      : ray_(ray), server_(testing::FastClientOptions(ray.address())), ref_(std::move(ref)) {
    adapters::GitWorkspaceOptions options;
    options.repo = remote;
    options.cache_dir = cache_dir;
    auto ws = adapters::GitWorkspace::Open(options);
    if (!ws) FAIL(ws.error().ToString());
    source_ =
        std::make_unique<adapters::GitDesiredStateSource>(*ws, adapters::GitDesiredStateOptions{});
    adapters::GitStatusStoreOptions store_options;
    store_options.branch = kStatusBranch;
    store_ = std::make_unique<adapters::GitStatusStore>(*ws, store_options);
  }

  // Where passes keep artifacts; null: none.
  ports::ArtifactSink* artifacts = nullptr;

  // The next pass runs `ms` later (an infrastructure retry's backoff).
  void Wait(int64_t ms) { now_ms_ += ms; }

  engine::PassResult Pass(bool dry_run = false) {
    engine::ReconcileOptions options;
    options.ref = ref_;
    options.ray_address = ray_.address();
    options.now_ms = now_ms_ += 1000;
    options.dry_run = dry_run;
    engine::ReconcileDeps deps;
    deps.source = source_.get();
    deps.server = &server_;
    deps.store = store_.get();
    deps.artifacts = artifacts;
    engine::PassResult result = engine::RunReconcilePass(deps, options);
    ray_.Tick();
    return result;
  }

 private:
  testing::FakeRayServer& ray_;
  adapters::RayHttpJobServer server_;
  std::string ref_;
  std::unique_ptr<adapters::GitDesiredStateSource> source_;
  std::unique_ptr<adapters::GitStatusStore> store_;
  int64_t now_ms_ = testing::FakeClock::kStartWallMs;
};

std::string Errors(const engine::PassResult& r) {
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  for (const auto& d : r.diagnostics) out += d.ToString() + "\n";
  return out;
}

// The submission ids the pass submitted.
std::vector<std::string> Submitted(const engine::PassResult& r) {
  std::vector<std::string> out;
  for (const auto& o : r.outcomes) {
    if (o.ok && o.action.kind == ActionKind::kSubmit) out.push_back(o.action.submission_id);
  }
  return out;
}

// The logs of `id` on the head, "" when it has none.
std::string LogsOf(testing::FakeRayServer& ray, const std::string& id) {
  adapters::RayHttpJobServer client(testing::FastClientOptions(ray.address()));
  core::Result<std::string> logs = client.Logs(id);
  return logs.ok() ? *logs : "";
}

std::optional<core::StatusRecord> RecordOf(const std::string& remote, const std::string& name) {
  auto text = testing::ReadFileAt(remote, kStatusBranch, spec::StatusFilePath(name));
  if (!text) return std::nullopt;
  auto record = spec::DecodeStatusYaml(*text, name);
  if (!record) FAIL(record.error().ToString());
  return *record;
}

// A lightweight tag on the remote, as `git tag NAME COMMIT && git push --tags` leaves it.
void TagOnRemote(const std::string& remote, const std::string& name, const std::string& commit) {
  git_repository* repo = nullptr;
  REQUIRE(git_repository_open(&repo, remote.c_str()) == 0);
  git_oid oid;
  REQUIRE(git_oid_fromstr(&oid, commit.c_str()) == 0);
  git_object* target = nullptr;
  REQUIRE(git_object_lookup(&target, repo, &oid, GIT_OBJECT_COMMIT) == 0);
  git_oid tag;
  REQUIRE(git_tag_create_lightweight(&tag, repo, name.c_str(), target, 0) == 0);
  git_object_free(target);
  git_repository_free(repo);
}

constexpr const char* kCluster = "address: http://127.0.0.1:1\n";  // the flags' address wins
constexpr const char* kMarkerSpec = "workload: custom\ncode: src\nentrypoint: cat marker.txt\n";

TEST_CASE("A code push is a new run that gets the new code, and the status records the code") {
  git_libgit2_init();
  testing::FakeRayServer ray(Immediate());
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", kCluster);
  repo.person->Write("jobs/marker.yaml", kMarkerSpec);
  repo.person->Write("src/marker.txt", "marker A\n");
  const std::string first = repo.person->CommitAndPush("main", "code A");
  Process daemon(repo.remote, repo.tmp.Sub("cache"), ray);
  adapters::ArtifactWriter artifacts(repo.tmp.Sub("artifacts"));
  daemon.artifacts = &artifacts;

  engine::PassResult one = daemon.Pass();
  INFO(Errors(one));
  REQUIRE(Submitted(one).size() == 1);
  const std::string run_a = Submitted(one).front();
  CHECK(one.code.uploads == 1);
  CHECK(one.code.zips == 1);
  CHECK(ray.PackageNames().size() == 1);
  // The body names the package as its working_dir, and the run printed marker A from it.
  const std::string body = ray.SubmitBodies().back();
  CHECK(body.find("\"working_dir\":\"gcs://" + ray.PackageNames().front() + "\"") !=
        std::string::npos);
  daemon.Pass();
  CHECK(ray.StatusOf(run_a) == RayJobStatus::kSucceeded);
  CHECK(LogsOf(ray, run_a).find("marker A") != std::string::npos);
  std::optional<core::StatusRecord> rec = RecordOf(repo.remote, "marker");
  REQUIRE(rec);
  CHECK(rec->code.get().folder == "src");
  CHECK(rec->code.get().tree.size() == 40);
  CHECK(rec->code.get().commit == first);
  CHECK(core::CodePackageName(rec->code.get().tree) == ray.PackageNames().front());
  // The artifacts record the code the run got.
  std::ifstream submit_out(artifacts.JobDir(run_a) / "logs" / "submit.out");
  std::stringstream submitted;
  submitted << submit_out.rdbuf();
  CHECK(submitted.str().find("code_tree: " + rec->code.get().tree + "\ncode_commit: " + first +
                             "\n") != std::string::npos);

  SECTION("a pass with nothing to submit sends no package request and builds no zip") {
    ray.ResetCounters();
    engine::PassResult quiet = daemon.Pass();
    CHECK(Submitted(quiet).empty());
    CHECK(quiet.code.checks == 0);
    CHECK(ray.RequestCount(testing::kRoutePackageGet) == 0);
    CHECK(ray.RequestCount(testing::kRoutePackagePut) == 0);
  }

  SECTION("changing only the code: the plan names it, the new run prints marker B") {
    repo.person->Write("src/marker.txt", "marker B\n");
    repo.person->CommitAndPush("main", "code B");
    engine::PassResult plan = daemon.Pass(/*dry_run=*/true);
    bool named = false;
    for (const auto& jp : plan.plan.jobs) {
      if (jp.name == "marker") {
        named = jp.message.find("code changed: src (1 file: marker.txt)") != std::string::npos;
        INFO(jp.message);
        CHECK(named);
      }
    }
    CHECK(named);
    engine::PassResult two = daemon.Pass();
    INFO(Errors(two));
    REQUIRE(Submitted(two).size() == 1);
    const std::string run_b = Submitted(two).front();
    CHECK(run_b != run_a);
    CHECK(ray.PackageNames().size() == 2);
    daemon.Pass();
    CHECK(LogsOf(ray, run_b).find("marker B") != std::string::npos);
    CHECK(RecordOf(repo.remote, "marker")->code.get().tree != rec->code.get().tree);
  }
}

TEST_CASE("A head restart that drops the package: the next attempt uploads it again") {
  git_libgit2_init();
  testing::FakeRayServer ray(Immediate());
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", kCluster);
  repo.person->Write("jobs/long.yaml",
                     "workload: custom\ncode: src\nentrypoint: sleep 600\nretries: 2\n");
  repo.person->Write("src/train.py", "print('hello')\n");
  repo.person->CommitAndPush("main", "a long run with code");
  Process daemon(repo.remote, repo.tmp.Sub("cache"), ray);
  engine::PassResult one = daemon.Pass();
  INFO(Errors(one));
  REQUIRE(Submitted(one).size() == 1);
  daemon.Pass();
  ray.Restart();  // the run and the package are gone
  CHECK(ray.PackageNames().empty());
  ray.ResetCounters();
  REQUIRE(Submitted(daemon.Pass()).empty());  // Lost: its retry waits for the backoff
  daemon.Wait(30'000);
  engine::PassResult again = daemon.Pass();
  INFO(Errors(again));
  REQUIRE(Submitted(again).size() == 1);
  CHECK(Submitted(again).front() == Submitted(one).front() + "-r1");
  CHECK(ray.RequestCount(testing::kRoutePackageGet) == 1);
  CHECK(ray.RequestCount(testing::kRoutePackagePut) == 1);
  CHECK(ray.PackageNames().size() == 1);
  daemon.Pass();
  CHECK(ray.StatusOf(Submitted(again).front()) == RayJobStatus::kRunning);
}

// The code tree of the spec named `name` as a dry run reads it.
std::string TreeOf(Process& daemon, const std::string& name) {
  engine::PassResult plan = daemon.Pass(/*dry_run=*/true);
  REQUIRE(plan.snapshot);
  for (const core::JobSpec& spec : plan.snapshot->state.jobs) {
    if (spec.name == name && spec.has_code()) return spec.code().tree_id;
  }
  FAIL("no spec " + name + " with code");
  return "";
}

TEST_CASE("A package planted under the name ray-gitops would upload is never run as the code") {
  git_libgit2_init();
  testing::FakeRayServer ray(Immediate());
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", kCluster);
  repo.person->Write("jobs/marker.yaml", kMarkerSpec);
  repo.person->Write("src/marker.txt", "marker A\n");
  repo.person->CommitAndPush("main", "code A");
  Process daemon(repo.remote, repo.tmp.Sub("cache"), ray);
  const std::string name = core::CodePackageName(TreeOf(daemon, "marker"));
  // Someone who read the pull request knows the tree, so the name, before it merges.
  adapters::RayHttpJobServer other(testing::FastClientOptions(ray.address()));
  REQUIRE(other.UploadPackage(name, "PK planted bytes").ok());

  for (int pass = 0; pass < 2; ++pass) {
    engine::PassResult r = daemon.Pass();
    CHECK(Submitted(r).empty());
    std::optional<core::StatusRecord> rec = RecordOf(repo.remote, "marker");
    REQUIRE(rec);
    INFO(rec->message);
    CHECK(rec->phase == core::Phase::kConflict);
    CHECK_THAT(rec->message, Catch::Contains("gcs://" + name));
    CHECK_THAT(rec->message, Catch::Contains("ray-gitops did not upload it"));
    CHECK(rec->attempts.empty());
  }
  CHECK(ray.SubmitBodies().empty());
  CHECK(ray.RequestCount(testing::kRoutePackagePut) == 1);  // the planted one: never replaced
  CHECK(ray.PackageBytes(name) == "PK planted bytes");
}

TEST_CASE("A job planted with our render and a planted package is not adopted") {
  // Even a body equal to the render runs the planted package's files.
  git_libgit2_init();
  testing::FakeRayServer ray(Immediate());
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", kCluster);
  repo.person->Write("jobs/marker.yaml", kMarkerSpec);
  repo.person->Write("src/marker.txt", "marker A\n");
  repo.person->CommitAndPush("main", "code A");
  Process daemon(repo.remote, repo.tmp.Sub("cache"), ray);
  engine::PassResult plan = daemon.Pass(/*dry_run=*/true);
  REQUIRE(plan.snapshot);
  const core::JobSpec& spec = plan.snapshot->state.jobs.at(0);
  core::RenderContext context;
  context.commit = plan.snapshot->commit;
  context.repo_url = plan.snapshot->repo_url;
  auto body = core::RenderSubmission(spec, *plan.snapshot->state.cluster, context);
  REQUIRE(body.ok());
  adapters::RayHttpJobServer other(testing::FastClientOptions(ray.address()));
  REQUIRE(other.UploadPackage(core::CodePackageName(spec.code().tree_id), "PK planted").ok());
  REQUIRE(other.Submit(*body).ok());

  engine::PassResult r = daemon.Pass();
  CHECK(Submitted(r).empty());
  std::optional<core::StatusRecord> rec = RecordOf(repo.remote, "marker");
  REQUIRE(rec);
  INFO(rec->message);
  CHECK(rec->phase == core::Phase::kConflict);
  CHECK_THAT(rec->message, Catch::Contains(core::CodePackageUri(spec.code().tree_id)));
  CHECK(rec->attempts.empty());
  CHECK(ray.RequestCount(testing::kRouteStop) == 0);
}

TEST_CASE("Our package from an earlier process, recorded in the ledger, is used as it is") {
  git_libgit2_init();
  testing::FakeRayServer ray(Immediate());
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", kCluster);
  repo.person->Write("jobs/flaky.yaml",
                     "workload: custom\ncode: src\nentrypoint: exit 3\nretries: 1\n");
  repo.person->Write("src/train.py", "print('hello')\n");
  repo.person->CommitAndPush("main", "a run that fails once");
  {
    Process first(repo.remote, repo.tmp.Sub("cache-1"), ray);
    engine::PassResult one = first.Pass();
    INFO(Errors(one));
    REQUIRE(Submitted(one).size() == 1);
  }
  CHECK(ray.RequestCount(testing::kRoutePackagePut) == 1);
  // A new process: it uploaded nothing itself, and its ledger records the run with that code.
  Process second(repo.remote, repo.tmp.Sub("cache-2"), ray);
  engine::PassResult retry = second.Pass();
  INFO(Errors(retry));
  REQUIRE(Submitted(retry).size() == 1);
  CHECK(Submitted(retry).front().ends_with("-r1"));
  CHECK(ray.RequestCount(testing::kRoutePackagePut) == 1);
  CHECK(retry.code.uploads == 0);
}

TEST_CASE("Specs sharing a code folder share one package: one zip, one PUT") {
  git_libgit2_init();
  testing::FakeRayServer ray(Immediate());
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", kCluster);
  for (int i = 0; i < 3; ++i) {
    repo.person->Write("jobs/m" + std::to_string(i) + ".yaml",
                       "workload: custom\ncode: src\nentrypoint: cat marker.txt\nrerun: \"" +
                           std::to_string(i) + "\"\n");
  }
  repo.person->Write("src/marker.txt", "shared\n");
  repo.person->CommitAndPush("main", "three specs, one folder");
  Process daemon(repo.remote, repo.tmp.Sub("cache"), ray);
  engine::PassResult one = daemon.Pass();
  INFO(Errors(one));
  CHECK(Submitted(one).size() == 3);
  CHECK(one.code.zips == 1);
  CHECK(one.code.uploads == 1);
  CHECK(ray.RequestCount(testing::kRoutePackagePut) == 1);
  CHECK(ray.RequestCount(testing::kRoutePackageGet) == 3);  // checked before every submit
}

TEST_CASE("code_ref holds the code at a tag while the folder moves on, with no restart") {
  git_libgit2_init();
  testing::FakeRayServer ray(Immediate());
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", kCluster);
  repo.person->Write("src/marker.txt", "marker A\n");
  const std::string v1 = repo.person->CommitAndPush("main", "code A");
  TagOnRemote(repo.remote, "v1", v1);
  repo.person->Write("jobs/pinned.yaml",
                     "workload: custom\ncode: src\ncode_ref: v1\nentrypoint: cat marker.txt\n");
  repo.person->Write("src/marker.txt", "marker B\n");
  repo.person->CommitAndPush("main", "spec pinned to v1, code B on main");
  Process daemon(repo.remote, repo.tmp.Sub("cache"), ray);
  engine::PassResult one = daemon.Pass();
  INFO(Errors(one));
  REQUIRE(Submitted(one).size() == 1);
  const std::string run = Submitted(one).front();
  daemon.Pass();
  CHECK(LogsOf(ray, run).find("marker A") != std::string::npos);
  CHECK(RecordOf(repo.remote, "pinned")->code.get().commit == v1);

  repo.person->Write("src/marker.txt", "marker C\n");
  repo.person->CommitAndPush("main", "code C on main");
  engine::PassResult later = daemon.Pass();
  INFO(Errors(later));
  CHECK(Submitted(later).empty());
  CHECK(RecordOf(repo.remote, "pinned")->submission_id == run);
}

TEST_CASE(
    "A code folder that cannot be shipped makes the spec invalid, and its run keeps running") {
  git_libgit2_init();
  testing::FakeRayServer ray(Immediate());
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", std::string(kCluster) + "code_max_bytes: 4096\n");
  repo.person->Write("jobs/long.yaml", "workload: custom\ncode: src\nentrypoint: sleep 600\n");
  repo.person->Write("jobs/other.yaml", "workload: custom\nentrypoint: sleep 600\n");
  repo.person->Write("src/train.py", "print('hello')\n");
  repo.person->CommitAndPush("main", "a running job with code");
  Process daemon(repo.remote, repo.tmp.Sub("cache"), ray);
  engine::PassResult one = daemon.Pass();
  INFO(Errors(one));
  REQUIRE(Submitted(one).size() == 2);
  std::string run;
  for (const std::string& id : Submitted(one)) {
    if (id.starts_with("long-")) run = id;
  }
  REQUIRE(!run.empty());

  const auto noise = [](int n) {
    std::string bytes;
    uint32_t x = 12345;
    for (int i = 0; i < n; ++i) {
      x = x * 1103515245U + 12345U;
      bytes += static_cast<char>(x >> 24);
    }
    return bytes;
  };
  SECTION("files over code_max_bytes: the error names the folder's size and its largest files") {
    repo.person->Write("src/weights.bin", noise(20000));
    repo.person->CommitAndPush("main", "a big file in the code folder");
    engine::PassResult r = daemon.Pass();
    const std::string errors = Errors(r);
    INFO(errors);
    CHECK(errors.find("jobs/long.yaml:2:7: error: code: src holds 19.5 KiB of files, over the "
                      "limit of 4.0 KiB (code_max_bytes") != std::string::npos);
    CHECK(errors.find("src/weights.bin (19.5 KiB), src/train.py (15 bytes)") != std::string::npos);
  }
  SECTION("files of zeros over code_max_bytes: refused by their size, whatever they zip to") {
    repo.person->Write("src/zeros.bin", std::string(20000, '\0'));
    repo.person->CommitAndPush("main", "a file of zeros in the code folder");
    const std::string errors = Errors(daemon.Pass());
    INFO(errors);
    CHECK(errors.find("jobs/long.yaml:2:7: error: code: src holds 19.5 KiB of files") !=
          std::string::npos);
  }
  SECTION("files under code_max_bytes whose zip is over it: the zip's size") {
    repo.person->Write("src/weights.bin", noise(4000));
    repo.person->CommitAndPush("main", "a file that does not compress");
    const std::string errors = Errors(daemon.Pass());
    INFO(errors);
    CHECK(errors.find("jobs/long.yaml:2:7: error: code: src would be a zip of") !=
          std::string::npos);
    CHECK(errors.find("src/weights.bin (3.9 KiB)") != std::string::npos);
  }
  SECTION("a symlink or a submodule inside: the error names it") {
    repo.person->WriteSymlink("src/data", "/etc/passwd");
    repo.person->CommitAndPush("main", "a link in the code folder");
    engine::PassResult r = daemon.Pass();
    const std::string errors = Errors(r);
    INFO(errors);
    CHECK(errors.find("jobs/long.yaml:2:7: error: code: src/data is a symlink") !=
          std::string::npos);
    repo.person->Remove("src/data");
    repo.person->WriteGitlink("src/vendor", std::string(40, 'a'));
    repo.person->CommitAndPush("main", "a submodule in the code folder");
    const std::string again = Errors(daemon.Pass());
    INFO(again);
    CHECK(again.find("jobs/long.yaml:2:7: error: code: src/vendor is a submodule") !=
          std::string::npos);
  }
  SECTION("a missing folder: the error names it") {
    repo.person->Remove("src/train.py");
    repo.person->Write("lib/train.py", "print('moved')\n");
    repo.person->CommitAndPush("main", "the folder moved");
    engine::PassResult r = daemon.Pass();
    const std::string errors = Errors(r);
    INFO(errors);
    CHECK(errors.find("jobs/long.yaml:2:7: error: code: src does not exist") != std::string::npos);
  }
  // Either way nothing was sent for it, and the run it had goes on.
  engine::PassResult after = daemon.Pass();
  CHECK(Submitted(after).empty());
  for (const auto& a : after.plan.actions) CHECK(a.kind != ActionKind::kStop);
  CHECK(ray.StatusOf(run) == RayJobStatus::kRunning);
  CHECK(RecordOf(repo.remote, "long")->phase == core::Phase::kInvalid);
}

TEST_CASE(
    "The status folder is no code folder: with the status branch watched, status commits "
    "restart nothing") {
  git_libgit2_init();
  testing::FakeRayServer ray(Immediate());
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", kCluster);
  repo.person->Write("jobs/status.yaml", "workload: custom\ncode: status\nentrypoint: sleep 600\n");
  repo.person->Write("jobs/code.yaml", "workload: custom\ncode: src\nentrypoint: sleep 600\n");
  repo.person->Write("status/README.md", "status files land here\n");
  repo.person->Write("src/train.py", "print('hello')\n");
  repo.person->CommitAndPush(kStatusBranch, "specs on the status branch");
  Process daemon(repo.remote, repo.tmp.Sub("cache"), ray, kStatusBranch);
  std::vector<std::string> submitted;
  for (int pass = 0; pass < 4; ++pass) {
    engine::PassResult r = daemon.Pass();
    INFO("pass " << pass << ": " << Errors(r));
    CHECK(Errors(r).find("jobs/status.yaml:2:7: error: code: status is the status folder status: "
                         "every status commit would change the code's tree") != std::string::npos);
    for (const std::string& id : Submitted(r)) submitted.push_back(id);
  }
  // Four passes and the status commits they made on the watched branch: one run, of the other
  // spec.
  REQUIRE(submitted.size() == 1);
  CHECK(submitted[0].starts_with("code-"));
  CHECK(testing::CountCommits(repo.remote, kStatusBranch) >= 2);
}

TEST_CASE("A folder's tree seen before is not read again, whatever commit names it") {
  git_libgit2_init();
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", kCluster);
  repo.person->Write("jobs/a.yaml", kMarkerSpec);
  repo.person->Write("jobs/b.yaml", std::string(kMarkerSpec) + "rerun: \"b\"\n");
  repo.person->Write("src/marker.txt", "marker A\n");
  const std::string first = repo.person->CommitAndPush("main", "two specs on src");
  repo.person->Write("README.md", "outside the folder\n");
  const std::string second = repo.person->CommitAndPush("main", "a commit that leaves src alone");
  repo.person->Write("src/marker.txt", "marker B\n");
  const std::string third = repo.person->CommitAndPush("main", "src changes");

  git_repository* raw = nullptr;
  REQUIRE(git_repository_open(&raw, repo.remote.c_str()) == 0);
  std::unique_ptr<git_repository, decltype(&git_repository_free)> git(raw, git_repository_free);
  auto no_refs = [](const std::string& ref) -> core::Result<std::string> {
    return core::Error::NotFound(ref);
  };
  auto load = [](const std::string& text_a, const std::string& text_b) {
    core::DesiredState state =
        spec::LoadDesiredState(spec::SourceFile{"cluster.yaml", kCluster},
                               {{"jobs/a.yaml", text_a}, {"jobs/b.yaml", text_b}});
    REQUIRE(state.jobs.size() == 2);
    return state;
  };
  const std::string b_text = std::string(kMarkerSpec) + "rerun: \"b\"\n";
  adapters::CodeFolders folders;
  core::DesiredState one = load(kMarkerSpec, b_text);
  folders.ResolveAtCommit(one, git.get(), first, no_refs);
  CHECK(folders.folder_reads() == 1);  // two specs, one folder, one read
  core::DesiredState two = load(kMarkerSpec, b_text);
  folders.ResolveAtCommit(two, git.get(), second, no_refs);
  CHECK(folders.folder_reads() == 1);  // the same tree at another commit: nothing read
  CHECK(two.jobs[0].code().tree_id == one.jobs[0].code().tree_id);
  CHECK(two.jobs[0].code().commit == second);
  CHECK(two.jobs[0].code().files == 1);
  core::DesiredState three = load(kMarkerSpec, b_text);
  folders.ResolveAtCommit(three, git.get(), third, no_refs);
  CHECK(folders.folder_reads() == 2);
  CHECK(three.jobs[0].code().tree_id != one.jobs[0].code().tree_id);
}

}  // namespace
}  // namespace rg
