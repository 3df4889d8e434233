// Deadlines and cancellation of Git transfers (docs/daemon.md, "Deadlines" and "Shutdown"): a
// remote that accepts the connection and never answers fails the fetch within its timeout, a
// cancel ends it at once, and a clone deleted under a running workspace is made again.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "reconciler/adapters/git_transport.h"
#include "reconciler/adapters/git_workspace.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

using adapters::GitTransportLimits;
using adapters::GitWorkspace;
using adapters::GitWorkspaceOptions;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// A TCP listener on 127.0.0.1 that accepts every connection and never writes a byte.
class BlackholeServer {
 public:
  BlackholeServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Accept(); });
  }
  ~BlackholeServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    std::lock_guard<std::mutex> lock(mu_);
    for (int c : accepted_) ::close(c);
  }
  int port() const { return port_; }
  int accepted() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(accepted_.size());
  }

 private:
  void Accept() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::lock_guard<std::mutex> lock(mu_);
      accepted_.push_back(c);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<int> accepted_;
};

// Restores the process-wide limits after a test.
struct ScopedLimits {
  explicit ScopedLimits(GitTransportLimits limits) : saved(adapters::CurrentGitTransportLimits()) {
    adapters::SetGitTransportLimits(limits);
  }
  ~ScopedLimits() { adapters::SetGitTransportLimits(saved); }
  GitTransportLimits saved;
};

std::shared_ptr<GitWorkspace> OpenWorkspace(const std::string& repo, const std::string& cache) {
  GitWorkspaceOptions options;
  options.repo = repo;
  options.cache_dir = cache;
  auto ws = GitWorkspace::Open(options);
  if (!ws) FAIL(ws.error().ToString());
  return *ws;
}

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

TEST_CASE("A remote that accepts and never answers fails the fetch after the I/O timeout",
          "[git][deadline]") {
  const std::string scheme = GENERATE(std::string("http"), std::string("git"));
  BlackholeServer blackhole;
  testing::TempDir tmp;
  ScopedLimits limits({milliseconds(2000), milliseconds(1000), milliseconds(600'000)});
  auto ws = OpenWorkspace(scheme + "://127.0.0.1:" + std::to_string(blackhole.port()) + "/r.git",
                          tmp.Sub("cache"));

  const auto start = SteadyClock::now();
  const core::Status fetched = ws->Fetch();
  const double seconds = SecondsSince(start);
  INFO(scheme << ":// fetch failed after " << seconds << " s");
  REQUIRE_FALSE(fetched.ok());
  CHECK(fetched.error().IsTransient());
  CHECK_THAT(fetched.error().message(), Catch::Contains("timed out"));
  CHECK(blackhole.accepted() >= 1);
  CHECK(seconds >= 0.9);
  CHECK(seconds < 10);
  CHECK(adapters::OpenGitConnections() == 0);
}

TEST_CASE("An ls-remote of a remote that never answers fails after the I/O timeout, as a fetch",
          "[git][deadline][tip]") {
  BlackholeServer blackhole;
  testing::TempDir tmp;
  ScopedLimits limits({milliseconds(2000), milliseconds(1000), milliseconds(600'000)});
  auto ws = OpenWorkspace("http://127.0.0.1:" + std::to_string(blackhole.port()) + "/r.git",
                          tmp.Sub("cache"));

  const auto start = SteadyClock::now();
  const auto refs = ws->RemoteRefs({"refs/heads/main"});
  const double seconds = SecondsSince(start);
  INFO("ls-remote failed after " << seconds << " s");
  REQUIRE_FALSE(refs.ok());
  CHECK(refs.error().IsTransient());
  CHECK_THAT(refs.error().message(), Catch::Contains("timed out"));
  CHECK(seconds >= 0.9);
  CHECK(seconds < 10);
  CHECK(adapters::OpenGitConnections() == 0);
}

TEST_CASE("An ssh remote that never answers is cut off at the transfer timeout",
          "[git][deadline]") {
  BlackholeServer blackhole;
  testing::TempDir tmp;
  // libssh2 reads the socket itself, so only the transfer timeout bounds it.
  ScopedLimits limits({milliseconds(2000), milliseconds(600'000), milliseconds(1500)});
  auto ws = OpenWorkspace("ssh://git@127.0.0.1:" + std::to_string(blackhole.port()) + "/r.git",
                          tmp.Sub("cache"));

  const auto start = SteadyClock::now();
  const core::Status fetched = ws->Fetch();
  const double seconds = SecondsSince(start);
  INFO("ssh:// fetch failed after " << seconds
                                    << " s: " << (fetched.ok() ? "" : fetched.error().message()));
  REQUIRE_FALSE(fetched.ok());
  CHECK(fetched.error().IsTransient());
  CHECK(blackhole.accepted() >= 1);
  CHECK(seconds < 10);
}

TEST_CASE("CancelGitTransfers ends a stalled fetch at once, later fetches work again",
          "[git][deadline]") {
  BlackholeServer blackhole;
  testing::TempDir tmp;
  ScopedLimits limits({milliseconds(2000), milliseconds(600'000), milliseconds(600'000)});
  auto ws = OpenWorkspace("http://127.0.0.1:" + std::to_string(blackhole.port()) + "/r.git",
                          tmp.Sub("cache"));

  auto fetch = std::async(std::launch::async, [&] { return ws->Fetch(); });
  const auto wait_start = SteadyClock::now();
  while (adapters::OpenGitConnections() == 0 && SecondsSince(wait_start) < 60) {
    std::this_thread::yield();
  }
  REQUIRE(adapters::OpenGitConnections() == 1);
  const auto cancel = SteadyClock::now();
  adapters::CancelGitTransfers();
  const core::Status fetched = fetch.get();
  const double seconds = SecondsSince(cancel);
  INFO("the fetch ended " << seconds << " s after the cancel");
  REQUIRE_FALSE(fetched.ok());
  CHECK_THAT(fetched.error().message(), Catch::Contains("cancelled"));
  CHECK(seconds < 2);

  // A remote that works, after the cancel: the cancel is for transfers in flight only.
  const std::string remote = tmp.Sub("remote.git");
  testing::InitBareRepository(remote);
  testing::GitTestClone person(remote, tmp.Sub("person.git"));
  person.Write("a.txt", "a\n");
  person.CommitAndPush("main", "one");
  auto local = OpenWorkspace(remote, tmp.Sub("cache"));
  CHECK(local->Fetch().ok());
}

TEST_CASE("A clone deleted under a running workspace is made again by the next fetch",
          "[git][cache]") {
  testing::TempDir tmp;
  const std::string remote = tmp.Sub("remote.git");
  testing::InitBareRepository(remote);
  testing::GitTestClone person(remote, tmp.Sub("person.git"));
  person.Write("a.txt", "a\n");
  const std::string first = person.CommitAndPush("main", "one");
  auto ws = OpenWorkspace(remote, tmp.Sub("cache"));
  REQUIRE(ws->Fetch().ok());

  std::filesystem::remove_all(tmp.Sub("cache"));
  person.Write("a.txt", "b\n");
  const std::string second = person.CommitAndPush("main", "two");
  const core::Status fetched = ws->Fetch();
  INFO((fetched.ok() ? std::string() : fetched.error().message()));
  REQUIRE(fetched.ok());
  CHECK(std::filesystem::exists(ws->clone_path() + "/HEAD"));
  CHECK(testing::BranchTip(ws->clone_path(), "main") == second);
  CHECK(ws->remote_head() == "refs/heads/main");
}

TEST_CASE("The clone mirrors the remote's branch names", "[git]") {
  testing::TempDir tmp;
  const std::string remote = tmp.Sub("remote.git");
  testing::InitBareRepository(remote);
  testing::GitTestClone person(remote, tmp.Sub("person.git"));
  person.Write("a.txt", "a\n");
  const std::string tip = person.CommitAndPush("main", "one");
  person.Write("status/x.yaml", "x\n");
  const std::string status = person.Commit("ray-gitops/status", "status", "main");
  person.Push("ray-gitops/status");
  auto ws = OpenWorkspace(remote, tmp.Sub("cache"));
  REQUIRE(ws->Fetch().ok());
  CHECK(GitWorkspace::TrackingRef("main") == "refs/heads/main");
  CHECK(testing::BranchTip(ws->clone_path(), "main") == tip);
  CHECK(testing::BranchTip(ws->clone_path(), "ray-gitops/status") == status);
}

}  // namespace
}  // namespace rg
