// HTTPS credentials: a token from --git-token-file goes out as HTTP basic credentials through
// libgit2's credential callback, never in the URL, and a refusal ends as kUnauthorized
// instead of a retry loop. The "server" is a loopback HTTP endpoint that demands basic auth
// and records what it was sent.

#include <httplib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_workspace.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

class BasicAuthWall {
 public:
  BasicAuthWall() {
    server_.Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mutex_);
      targets_.push_back(req.target);
      authorizations_.push_back(req.get_header_value("Authorization"));
      res.status = 401;
      res.set_header("WWW-Authenticate", "Basic realm=\"test\"");
      res.set_content("denied\n", "text/plain");
    });
    // Bound and listening on return: connections queue until the thread serves them.
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~BasicAuthWall() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/org/repo.git"; }
  std::vector<std::string> authorizations() {
    std::lock_guard lock(mutex_);
    return authorizations_;
  }
  std::vector<std::string> targets() {
    std::lock_guard lock(mutex_);
    return targets_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> targets_;
  std::vector<std::string> authorizations_;
};

TEST_CASE("A token file is sent as basic credentials and a refusal is kUnauthorized",
          "[git][credentials]") {
  testing::TempDir tmp;
  BasicAuthWall wall;
  const std::string token_file = tmp.Sub("token");
  std::ofstream(token_file) << "s3cret-token\n";

  adapters::GitWorkspaceOptions options;
  options.repo = wall.url();
  options.cache_dir = tmp.Sub("cache");
  options.token_file = token_file;
  auto ws = adapters::GitWorkspace::Open(options);
  REQUIRE(ws.ok());
  adapters::GitDesiredStateSource source(*ws, {});
  auto snapshot = source.Load("main");
  REQUIRE_FALSE(snapshot.ok());
  CHECK(snapshot.error().kind() == core::ErrorKind::kUnauthorized);

  const auto sent = wall.authorizations();
  REQUIRE_FALSE(sent.empty());
  CHECK(sent.front().empty());  // the first request carries nothing; the 401 asks for it
  // base64("x-access-token:s3cret-token")
  const std::string expected = "Basic eC1hY2Nlc3MtdG9rZW46czNjcmV0LXRva2Vu";
  CHECK(std::count(sent.begin(), sent.end(), expected) >= 1);
  // Bounded: libgit2 asks again after each refusal, and the callback stops it.
  CHECK(sent.size() <= 5);
  for (const auto& target : wall.targets()) CHECK(target.find("s3cret") == std::string::npos);
}

TEST_CASE("Without a token the remote's demand for credentials is kUnauthorized and says how",
          "[git][credentials]") {
  testing::TempDir tmp;
  BasicAuthWall wall;
  adapters::GitWorkspaceOptions options;
  options.repo = wall.url();
  options.cache_dir = tmp.Sub("cache");
  auto ws = adapters::GitWorkspace::Open(options);
  REQUIRE(ws.ok());
  CHECK((*ws)->Fetch().error().kind() == core::ErrorKind::kUnauthorized);
  CHECK((*ws)->Fetch().error().message().find("--git-token-file") != std::string::npos);
  for (const auto& header : wall.authorizations()) CHECK(header.empty());
}

}  // namespace
}  // namespace rg
