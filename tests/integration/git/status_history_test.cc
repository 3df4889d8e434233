// The ledger as people read it, end to end: real libgit2 repositories, reconcile passes against
// the fake Ray head on a frozen clock, and `ray-gitops history` run as the command line runs
// it. A job that fails with `retries: 1` shows attempt 0 Failed and then attempt 1 Pending; a
// replaced run shows Stopped; each status commit's subject names the job and its transition.

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

constexpr const char* kStatusBranch = "ray-gitops/status";

// The fake head's jobs move only when the test advances its clock.
testing::FakeRayOptions OnClock(ports::Clock* clock) {
  testing::FakeRayOptions options;
  options.clock = clock;
  return options;
}

// One daemon's clone of the repository and its passes.
class Daemon {
 public:
  Daemon(testing::TestRemote& repo, testing::FakeRayServer& ray)
      : ray_(ray), client_(testing::FastClientOptions(ray.address())) {
    adapters::GitWorkspaceOptions options;
    options.repo = repo.remote;
    options.cache_dir = repo.tmp.Sub("daemon-cache");
    auto ws = adapters::GitWorkspace::Open(options);
    if (!ws) FAIL(ws.error().ToString());
    source_ =
        std::make_unique<adapters::GitDesiredStateSource>(*ws, adapters::GitDesiredStateOptions{});
    store_ = std::make_unique<adapters::GitStatusStore>(*ws, adapters::GitStatusStoreOptions{});
  }

  // One pass; the status commit it made ("" when none). Afterwards every stop has taken effect.
  std::string Pass() {
    engine::ReconcileDeps deps;
    deps.source = source_.get();
    deps.server = &client_;
    deps.store = store_.get();
    engine::ReconcileOptions options;
    options.ray_address = ray_.address();
    options.now_ms = now_ms_ += 1000;
    engine::PassResult r = engine::RunReconcilePass(deps, options);
    for (const auto& e : r.errors) FAIL(e.ToString());
    ray_.Tick();
    return r.status_commit;
  }

 private:
  testing::FakeRayServer& ray_;
  adapters::RayHttpJobServer client_;
  std::unique_ptr<adapters::GitDesiredStateSource> source_;
  std::unique_ptr<adapters::GitStatusStore> store_;
  int64_t now_ms_ = 1'800'000'000'000;
};

// `ray-gitops history <args>`, the binary: its exit status and what it printed on stdout.
struct CommandRun {
  int exit_code = 0;
  std::string out;
};

std::string ShellQuote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

CommandRun History(const std::vector<std::string>& args) {
  std::string command = ShellQuote(RG_BINARY) + " history";
  for (const std::string& a : args) command += " " + ShellQuote(a);
  CommandRun run;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  for (size_t n; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) {
    run.out.append(buffer.data(), n);
  }
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// The lines of `text` that hold every one of `parts`.
std::vector<std::string> LinesWith(const std::string& text, const std::vector<std::string>& parts) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) out.push_back(line);
  }
  return out;
}

TEST_CASE("history shows a failed attempt, its retry and a replaced run's stop", "[git][history]") {
  testing::FakeClock clock;
  testing::FakeRayServer ray(OnClock(&clock));
  testing::TestRemote repo;
  repo.person->Write("cluster.yaml", "address: " + ray.address() + "\n");
  repo.person->Write("jobs/train.yaml", "workload: custom\nentrypoint: \"false\"\nretries: 1\n");
  repo.person->Write("jobs/serve.yaml", "workload: custom\nentrypoint: sleep 300\n");
  const std::string first_spec = repo.person->CommitAndPush("main", "two jobs");
  Daemon daemon(repo, ray);

  REQUIRE_FALSE(daemon.Pass().empty());  // both submitted, PENDING on the frozen clock
  clock.AdvanceMs(1000);                 // train fails, serve runs
  ray.Tick();
  REQUIRE_FALSE(daemon.Pass().empty());  // train's attempt 1 submitted
  repo.person->Write("jobs/serve.yaml", "workload: custom\nentrypoint: sleep 301\n");
  const std::string second_spec = repo.person->CommitAndPush("main", "serve: longer");
  REQUIRE_FALSE(daemon.Pass().empty());  // the old serve run stopped, the new one submitted
  REQUIRE_FALSE(daemon.Pass().empty());  // the old serve run's end recorded

  // Each status commit's subject names the job and its transition.
  const auto messages = testing::CommitMessages(repo.remote, kStatusBranch);
  REQUIRE(messages.size() == 4);
  const auto subject = [&](size_t newest_first) {
    return messages[newest_first].substr(0, messages[newest_first].find('\n'));
  };
  CHECK(subject(3) == "ray-gitops: serve new -> Pending, train new -> Pending");
  CHECK(subject(2) == "ray-gitops: serve Pending -> Running, train Pending -> Failed -> Pending");
  CHECK(subject(1) == "ray-gitops: serve Running -> Pending");
  CHECK(subject(0) == "ray-gitops: serve Pending -> Stopped -> Pending");
  for (const auto& m : messages) CHECK(subject(&m - messages.data()).size() <= 72);
  // The body lists both of train's transitions; the trailers close the message.
  CHECK(messages[2].find("\ntrain: Pending -> Failed (train-") != std::string::npos);
  CHECK(messages[2].find("\ntrain: new -> Pending (attempt 1, train-") != std::string::npos);
  CHECK(messages[2].find("\n\nSpec-Commit: " + first_spec + "\nRay-Cluster: ") !=
        std::string::npos);

  const std::vector<std::string> repo_flags = {"--repo", repo.remote, "--cache-dir",
                                               repo.tmp.Sub("history-cache")};
  std::vector<std::string> args = {"train"};
  args.insert(args.end(), repo_flags.begin(), repo_flags.end());
  CommandRun train = History(args);
  REQUIRE(train.exit_code == 0);
  INFO(train.out);
  // The attempt's end names Ray's error_type and whose failure it was.
  const auto failed = LinesWith(
      train.out, {" 0 ", "Pending -> Failed (JOB_ENTRYPOINT_COMMAND_ERROR, own)", "FAILED"});
  const auto retry = LinesWith(train.out, {" 1 ", "-r1", "new -> Pending", "PENDING"});
  REQUIRE(failed.size() == 1);
  REQUIRE(retry.size() == 1);
  CHECK(train.out.find(failed[0]) < train.out.find(retry[0]));  // oldest first
  // The spec commit and its author, from the desired-state repository.
  CHECK(failed[0].find(first_spec.substr(0, 10)) != std::string::npos);
  CHECK(failed[0].find("Test Person") != std::string::npos);

  args[0] = "serve";
  CommandRun serve = History(args);
  REQUIRE(serve.exit_code == 0);
  INFO(serve.out);
  // The stop was caused by the second spec commit, whose pass sent it.
  const auto stopped =
      LinesWith(serve.out, {"Running -> Stopped", "STOPPED", second_spec.substr(0, 10)});
  REQUIRE(stopped.size() == 1);
  const auto replacement = LinesWith(serve.out, {"new -> Pending", second_spec.substr(0, 10)});
  REQUIRE(replacement.size() == 1);
  CHECK(serve.out.find(replacement[0]) < serve.out.find(stopped[0]));

  args.insert(args.end(), {"-o", "json"});
  CommandRun json = History(args);
  REQUIRE(json.exit_code == 0);
  CHECK(json.out.find("\"version\": 1") != std::string::npos);
  CHECK(json.out.find("\"name\": \"serve\"") != std::string::npos);
  CHECK(json.out.find("\"from\": \"Running\"") != std::string::npos);
  CHECK(json.out.find("\"to\": \"Stopped\"") != std::string::npos);
  CHECK(json.out.find("\"failure_class\": null") != std::string::npos);
  CHECK(json.out.find("\"spec_commit\": \"" + second_spec + "\"") != std::string::npos);
}

}  // namespace
}  // namespace rg
