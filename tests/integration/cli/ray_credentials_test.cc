// Where the Ray token and the extra headers go, as the command line's commands run them
// against real repositories and fake heads over HTTP (docs/hooks.md, "Pull requests from
// others"). `plan` reads a commit under review: a pull request can point its cluster.yaml at
// a host of its own, so that address never gets a credential; the token and headers go only
// to --ray-address or the environment's address. `sync` and the daemon apply the branch they
// were pointed at and use its cluster.yaml address with credentials. `validate`, `render` and
// `diff` never contact Ray. The operator's own cluster file (`--config`) is trusted.

#include <CLI/CLI.hpp>
#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/cli/global_options.h"
#include "reconciler/cli/pass_runner.h"
#include "reconciler/cli/ray_client_flags.h"
#include "reconciler/cli/repo_options.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/git_test_repo.h"
#include "tests/support/ray_env.h"

namespace rg {
namespace {

constexpr std::string_view kToken = "tok-7c1d4e9b2a";
constexpr std::string_view kHeaderValue = "hdr-3f8a6b0e5d";
constexpr std::string_view kHeadersJson = R"({"X-Api-Key": "hdr-3f8a6b0e5d"})";

// Every request a head got, whatever its route.
int AllRequests(const testing::FakeRayServer& server) {
  constexpr std::array kRoutes = {
      testing::kRouteVersion,       testing::kRouteAuthMode,   testing::kRouteHealthz,
      testing::kRouteClusterStatus, testing::kRouteSubmit,     testing::kRouteList,
      testing::kRouteGet,           testing::kRouteStop,       testing::kRouteDelete,
      testing::kRouteLogs,          testing::kRoutePackageGet, testing::kRoutePackagePut};
  int n = 0;
  for (std::string_view route : kRoutes) n += server.RequestCount(route);
  for (std::string_view other : {"GET other", "POST other", "PUT other", "DELETE other"}) {
    n += server.RequestCount(other);
  }
  return n;
}

testing::FakeRayOptions TokenHead(ports::Clock* clock) {
  testing::FakeRayOptions options = testing::FrozenHeadOptions(clock);
  options.token = std::string(kToken);
  return options;
}

struct Setup {
  Setup() {
    remote.person->Write("cluster.yaml", "address: " + pointed.address() + "\n");
    remote.person->Write("jobs/hello.yaml", "workload: custom\nentrypoint: python train.py\n");
    remote.person->CommitAndPush("main", "initial");
  }

  // The repository's cluster.yaml names `address` from now on, on `branch` (made from main).
  void PointClusterAt(const std::string& address, const std::string& branch = "main") {
    remote.person->Write("cluster.yaml", "address: " + address + "\n");
    remote.person->Commit(branch, "cluster.yaml names " + address, "main");
    remote.person->Push(branch);
  }

  // The Ray credentials in the environment, as CI holds them.
  void CredentialsInEnvironment() {
    env.Set("RAY_AUTH_TOKEN", std::string(kToken));
    env.Set("RAY_JOB_HEADERS", std::string(kHeadersJson));
  }

  std::string WriteFile(const std::string& name, const std::string& content) const {
    const std::string path = remote.tmp.Sub(name);
    std::ofstream(path) << content;
    return path;
  }

  // `ray-gitops ARGS...` with `global` as the global flags; its exit status.
  int Run(const std::vector<std::string>& args) const {
    CLI::App app;
    app.require_subcommand(1);
    int exit_code = -1;
    cli::AddValidateCommand(app, global, &exit_code);
    cli::AddRenderCommand(app, global, &exit_code);
    cli::AddJobCommands(app, global, &exit_code);
    cli::AddPlanCommand(app, global, &exit_code);
    cli::AddDiffCommand(app, global, &exit_code);
    cli::AddSyncCommand(app, global, &exit_code);
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 reads from the back
    app.parse(reversed);
    return exit_code;
  }

  // `plan` of main with the repository's flags.
  int Plan() const {
    return Run({"plan", "--repo", remote.remote, "--ref", "main", "--cache-dir", cache});
  }

  testing::RayEnv env;
  testing::FakeClock clock;
  // The operator's head: token auth, so a request without the token is refused.
  testing::FakeRayServer head{TokenHead(&clock)};
  // Where the commit's cluster.yaml points: a host the pull request controls.
  testing::FakeRayServer pointed{testing::FrozenHeadOptions(&clock)};
  testing::TestRemote remote;
  std::string cache = remote.tmp.Sub("cache");
  cli::GlobalOptions global;
};

void CheckCredentialsReached(const testing::FakeRayServer& server, std::string_view route) {
  const std::map<std::string, std::string> headers = server.LastHeaders(route);
  CHECK(headers.contains("authorization"));
  if (headers.contains("authorization")) {
    CHECK(headers.at("authorization") == "Bearer " + std::string(kToken));
  }
  CHECK(headers.contains("x-api-key"));
  if (headers.contains("x-api-key")) CHECK(headers.at("x-api-key") == kHeaderValue);
}

TEST_CASE("plan sends no credential to the cluster.yaml address of the commit under review") {
  Setup s;
  SECTION("token and headers from the environment") { s.CredentialsInEnvironment(); }
  SECTION("the token from RAY_AUTH_TOKEN alone") { s.env.Set("RAY_AUTH_TOKEN", "tok-only-42x"); }
  SECTION("the headers from RAY_JOB_HEADERS alone") {
    s.env.Set("RAY_JOB_HEADERS", std::string(kHeadersJson));
  }
  SECTION("--ray-token-file") {
    s.global.ray_token_file = s.WriteFile("token", std::string(kToken) + "\n");
  }
  SECTION("--ray-header") { s.global.ray_headers = {"X-Api-Key=" + std::string(kHeaderValue)}; }
  CHECK(s.Plan() == 1);
  CHECK(AllRequests(s.pointed) == 0);  // not even a request without the credentials
  CHECK(AllRequests(s.head) == 0);
}

TEST_CASE("the refusal names --ray-address and the variables, never a credential") {
  Setup s;
  s.CredentialsInEnvironment();
  core::Result<adapters::RayClientOptions> ray =
      cli::ResolveRayFromGlobal(s.global, s.pointed.address(), "put an address in the cluster file",
                                cli::AddressTrust::kUnderReview);
  REQUIRE_FALSE(ray.ok());
  const std::string& message = ray.error().message();
  CHECK(ray.error().kind() == core::ErrorKind::kInvalidInput);
  for (const char* named :
       {"--ray-address", "RAY_ADDRESS", "commit under review", "RAY_AUTH_TOKEN"}) {
    INFO(message);
    CHECK(message.find(named) != std::string::npos);
  }
  CHECK(message.find(kToken) == std::string::npos);
  CHECK(message.find(kHeaderValue) == std::string::npos);

  // The operator's own file is another matter.
  CHECK(cli::ResolveRayFromGlobal(s.global, s.pointed.address(), "", cli::AddressTrust::kOperator)
            .ok());
}

TEST_CASE("plan sends the credentials to the address the operator gives, and only there") {
  Setup s;
  s.CredentialsInEnvironment();
  SECTION("--ray-address") { s.global.ray_address = s.head.address(); }
  SECTION("RAY_ADDRESS") { s.env.Set("RAY_ADDRESS", s.head.address()); }
  SECTION("RAY_API_SERVER_ADDRESS") { s.env.Set("RAY_API_SERVER_ADDRESS", s.head.address()); }
  CHECK(s.Plan() == 2);  // hello is to be submitted
  CheckCredentialsReached(s.head, testing::kRouteList);
  CHECK(AllRequests(s.pointed) == 0);
}

TEST_CASE("plan without any credential plans against the cluster.yaml address of the commit") {
  Setup s;
  CHECK(s.Plan() == 2);
  CHECK(s.pointed.RequestCount(testing::kRouteList) >= 1);
  CHECK_FALSE(s.pointed.LastHeaders(testing::kRouteList).contains("authorization"));
}

TEST_CASE("sync sends the credentials to the cluster.yaml address of what it applies") {
  Setup s;
  s.CredentialsInEnvironment();
  std::string ref = "main";
  SECTION("the default branch") { s.PointClusterAt(s.head.address()); }
  // `sync --ref` is the operator's deliberate choice of what to apply: it submits that commit's
  // jobs, so its cluster.yaml is trusted as the watched branch's is.
  SECTION("another branch, named by --ref") {
    ref = "release";
    s.PointClusterAt(s.head.address(), ref);
  }
  CHECK(s.Run({"sync", "--repo", s.remote.remote, "--ref", ref, "--cache-dir", s.cache,
               "--no-artifacts", "--no-status"}) == 0);
  CHECK(s.head.RequestCount(testing::kRouteSubmit) == 1);
  CheckCredentialsReached(s.head, testing::kRouteSubmit);
  CheckCredentialsReached(s.head, testing::kRouteList);
  CHECK(AllRequests(s.pointed) == 0);
}

TEST_CASE("the daemon's pass sends the credentials to the watched branch's cluster.yaml address") {
  Setup s;
  s.CredentialsInEnvironment();
  s.PointClusterAt(s.head.address());
  cli::RepoOptions repo;
  repo.repo = s.remote.remote;
  repo.cache_dir = s.cache;
  repo.ref = "main";
  repo.no_artifacts = true;
  core::Result<cli::RepoHandles> handles = cli::OpenRepo(repo);
  REQUIRE(handles.ok());
  engine::ReconcileOptions options;
  options.ref = repo.ref;
  options.record_status = false;
  cli::PassWiring wiring;  // as the daemon wires its passes
  wiring.ray_call_attempts = 1;
  core::Result<cli::PassRun> run =
      cli::RunPassOnRepo(s.global, repo, *handles->source, nullptr, options, wiring);
  REQUIRE(run.ok());
  CHECK(run->result.exit_status == engine::kExitApplied);
  CheckCredentialsReached(s.head, testing::kRouteSubmit);
  CHECK(AllRequests(s.pointed) == 0);
}

TEST_CASE("validate, render and diff never contact Ray, with or without credentials") {
  Setup s;
  s.CredentialsInEnvironment();
  // A developer's checkout: its files on disk and its commits.
  const std::string checkout = s.remote.tmp.Sub("checkout");
  testing::InitWorkingRepository(checkout);
  auto person = testing::GitTestClone::OpenInPlace(checkout);
  const auto put = [&](const std::string& path, const std::string& content) {
    std::filesystem::create_directories(std::filesystem::path(checkout + "/" + path).parent_path());
    std::ofstream(checkout + "/" + path) << content;
    person->Write(path, content);
  };
  put("cluster.yaml", "address: " + s.pointed.address() + "\n");
  put("jobs/hello.yaml", "workload: custom\nentrypoint: python train.py\n");
  const std::string base = person->Commit("main", "initial");
  put("jobs/hello.yaml", "workload: custom\nentrypoint: python train.py --more\n");
  const std::string head = person->Commit("main", "more");

  CHECK(s.Run({"validate", "--repo", checkout}) == 0);
  CHECK(s.Run({"render", "--repo", checkout, "jobs/hello.yaml"}) == 0);
  CHECK(s.Run({"diff", "--repo", checkout, base, head}) == 2);
  CHECK(s.Run({"diff", "--repo", checkout, base}) == 2);  // against the working tree
  CHECK(AllRequests(s.pointed) == 0);
  CHECK(AllRequests(s.head) == 0);
}

TEST_CASE("the operator's cluster file (--config) gets the credentials") {
  Setup s;
  s.CredentialsInEnvironment();
  const std::string config = s.WriteFile("cluster.yaml", "address: " + s.head.address() + "\n");
  CHECK(s.Run({"list", "--config", config}) == 0);
  CheckCredentialsReached(s.head, testing::kRouteList);
  const std::string spec =
      s.WriteFile("hello.yaml", "workload: custom\nentrypoint: python train.py\n");
  CHECK(s.Run({"submit", "--config", config, "--jobspec", spec, "--no-artifacts"}) == 0);
  CheckCredentialsReached(s.head, testing::kRouteSubmit);
  CHECK(AllRequests(s.pointed) == 0);
}

}  // namespace
}  // namespace rg
