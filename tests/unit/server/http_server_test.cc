#include "reconciler/server/http_server.h"

#include <httplib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reconciler/core/metrics.h"
#include "tests/unit/server/sample_snapshot.h"

using rg::server::GitHubSignature;
using rg::server::HttpServer;
using rg::server::HttpServerOptions;

namespace {

constexpr char kSecret[] = "hook-secret";

// A server on a free loopback port with a recording trigger and a settable snapshot.
struct Fixture {
  explicit Fixture(bool with_secret = true, size_t max_body = 1 << 20) {
    HttpServerOptions o;
    o.listen = "127.0.0.1:0";
    o.branch = "main";
    if (with_secret) o.webhook.secret = kSecret;
    o.webhook.max_body_bytes = max_body;
    server = std::make_unique<HttpServer>(
        o, metrics,
        [this](std::string source) {
          std::lock_guard lock(mu);
          triggers.push_back(std::move(source));
        },
        [this] {
          std::lock_guard lock(mu);
          return snapshot;
        });
    const auto started = server->Start();
    REQUIRE(started.ok());
    REQUIRE(server->port() > 0);
    client = std::make_unique<httplib::Client>("127.0.0.1", server->port());
    client->set_read_timeout(10);
  }

  std::vector<std::string> Triggers() {
    std::lock_guard lock(mu);
    return triggers;
  }

  void SetSnapshot(rg::engine::DaemonSnapshot s) {
    std::lock_guard lock(mu);
    snapshot = std::move(s);
  }

  httplib::Result PostGitHub(const std::string& body, const std::string& signature,
                             const std::string& event = "push") {
    httplib::Headers h{{"X-Hub-Signature-256", signature}, {"X-GitHub-Event", event}};
    return client->Post("/webhook", h, body, "application/json");
  }

  double Requests(const std::string& path, int code) {
    return metrics.Value("rg_http_requests_total",
                         {{"path", path}, {"code", std::to_string(code)}});
  }

  rg::core::MetricsRegistry metrics;
  std::mutex mu;
  std::vector<std::string> triggers;
  rg::engine::DaemonSnapshot snapshot = rg::server::testing::SampleSnapshot();
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
};

const std::string kPushMain = R"({"ref": "refs/heads/main"})";

}  // namespace

TEST_CASE("GET /healthz answers 200 ok as plain text") {
  Fixture f;
  auto r = f.client->Get("/healthz");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "ok\n");
  CHECK(r->get_header_value("Content-Type").starts_with("text/plain"));
  CHECK(f.Requests("/healthz", 200) == 1);
}

TEST_CASE("GET /readyz is 200 when ready and 503 with the reason when not") {
  Fixture f;
  auto ok = f.client->Get("/readyz");
  REQUIRE(ok);
  CHECK(ok->status == 200);
  auto s = rg::server::testing::SampleSnapshot();
  s.ready = false;
  s.last_error = "git fetch: connection refused";
  f.SetSnapshot(s);
  auto failing = f.client->Get("/readyz");
  REQUIRE(failing);
  CHECK(failing->status == 503);
  CHECK(failing->body.find("git fetch: connection refused") != std::string::npos);
  f.SetSnapshot(rg::engine::DaemonSnapshot{});
  auto starting = f.client->Get("/readyz");
  REQUIRE(starting);
  CHECK(starting->status == 503);
  CHECK(starting->body.find("no successful pass yet") != std::string::npos);
}

TEST_CASE("GET /metrics serves the registry as Prometheus text 0.0.4") {
  Fixture f;
  f.metrics.DeclareGauge("rg_test_gauge", "A test gauge.");
  f.metrics.Set("rg_test_gauge", 42);
  REQUIRE(f.client->Get("/healthz"));
  auto r = f.client->Get("/metrics");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->get_header_value("Content-Type").starts_with("text/plain; version=0.0.4"));
  CHECK(r->body.find("rg_test_gauge 42\n") != std::string::npos);
  CHECK(r->body.find("rg_http_requests_total{code=\"200\",path=\"/healthz\"} 1\n") !=
        std::string::npos);
}

TEST_CASE("GET /api/v1/status serves the snapshot as JSON") {
  Fixture f;
  auto r = f.client->Get("/api/v1/status");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->get_header_value("Content-Type") == "application/json");
  const auto j = nlohmann::json::parse(r->body);
  CHECK(j["instance"] == "lab-a");
  CHECK(j["jobs"].size() == 5);
}

TEST_CASE("GET / serves the HTML status page with a restrictive content policy") {
  Fixture f;
  auto r = f.client->Get("/");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->get_header_value("Content-Type").starts_with("text/html"));
  CHECK(r->get_header_value("Content-Security-Policy").find("default-src 'none'") !=
        std::string::npos);
  CHECK(r->body.starts_with("<!DOCTYPE html>"));
  CHECK(r->body.find("ppo-qwen") != std::string::npos);
}

TEST_CASE("an unknown path is 404 and counted under path other") {
  Fixture f;
  auto r = f.client->Get("/secret/../../etc/passwd");
  REQUIRE(r);
  CHECK(r->status == 404);
  CHECK(f.Requests("other", 404) == 1);
}

TEST_CASE("a GitHub push with a good signature is 202 and triggers exactly one pass") {
  Fixture f;
  auto r = f.PostGitHub(kPushMain, GitHubSignature(kSecret, kPushMain));
  REQUIRE(r);
  CHECK(r->status == 202);
  CHECK(f.Triggers() == std::vector<std::string>{"webhook:github"});
  CHECK(f.metrics.Value("rg_triggers_total", {{"source", "webhook:github"}}) == 1);
  CHECK(f.Requests("/webhook", 202) == 1);
}

TEST_CASE("a wrong signature is 401, counted as rejected, and triggers nothing") {
  Fixture f;
  auto r = f.PostGitHub(kPushMain, GitHubSignature("not-the-secret", kPushMain));
  REQUIRE(r);
  CHECK(r->status == 401);
  CHECK(f.Triggers().empty());
  CHECK(f.metrics.Value("rg_webhook_rejected_total", {{"reason", "bad_signature"}}) == 1);
  CHECK(f.Requests("/webhook", 401) == 1);
  CHECK(r->body.find(kSecret) == std::string::npos);
}

TEST_CASE("an unsigned webhook is 401 and triggers nothing") {
  Fixture f;
  auto r = f.client->Post("/webhook", kPushMain, "application/json");
  REQUIRE(r);
  CHECK(r->status == 401);
  CHECK(f.Triggers().empty());
  CHECK(f.metrics.Value("rg_webhook_rejected_total", {{"reason", "missing_signature"}}) == 1);
}

TEST_CASE("a ping and a push to another branch are 200 and trigger nothing") {
  Fixture f;
  const std::string ping = R"({"zen": "Keep it logically awesome."})";
  auto p = f.PostGitHub(ping, GitHubSignature(kSecret, ping), "ping");
  REQUIRE(p);
  CHECK(p->status == 200);
  CHECK(nlohmann::json::parse(p->body)["ignored"] == "ping");
  const std::string other = R"({"ref": "refs/heads/dev"})";
  auto o = f.PostGitHub(other, GitHubSignature(kSecret, other));
  REQUIRE(o);
  CHECK(o->status == 200);
  CHECK(f.Triggers().empty());
  CHECK(f.metrics.Value("rg_webhook_ignored_total", {{"source", "webhook:github"}}) == 2);
}

TEST_CASE("GitLab token and bearer token webhooks trigger with their source") {
  Fixture f;
  auto gl =
      f.client->Post("/webhook", {{"X-Gitlab-Token", kSecret}, {"X-Gitlab-Event", "Push Hook"}},
                     kPushMain, "application/json");
  REQUIRE(gl);
  CHECK(gl->status == 202);
  auto bearer = f.client->Post("/webhook", {{"Authorization", std::string("Bearer ") + kSecret}},
                               "", "application/json");
  REQUIRE(bearer);
  CHECK(bearer->status == 202);
  auto wrong =
      f.client->Post("/webhook", {{"X-Gitlab-Token", "guess"}}, kPushMain, "application/json");
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
  CHECK(f.Triggers() == std::vector<std::string>{"webhook:gitlab", "webhook:bearer"});
}

TEST_CASE("a malformed signature or a non-JSON signed body is 400") {
  Fixture f;
  auto bad_hex = f.PostGitHub(kPushMain, "sha256=xyz");
  REQUIRE(bad_hex);
  CHECK(bad_hex->status == 400);
  const std::string junk = "ref=refs/heads/main";
  auto bad_json = f.PostGitHub(junk, GitHubSignature(kSecret, junk));
  REQUIRE(bad_json);
  CHECK(bad_json->status == 400);
  CHECK(f.Triggers().empty());
}

TEST_CASE("a body over the limit is 413 and the server keeps serving") {
  Fixture f(true, 1024);
  const std::string big = R"({"ref": "refs/heads/main", "pad": ")" + std::string(4096, 'x') + "\"}";
  auto r = f.PostGitHub(big, GitHubSignature(kSecret, big));
  REQUIRE(r);
  CHECK(r->status == 413);
  CHECK(f.Triggers().empty());
  CHECK(f.metrics.Value("rg_webhook_rejected_total", {{"reason", "too_large"}}) == 1);
  httplib::Client fresh("127.0.0.1", f.server->port());
  auto after = fresh.Get("/healthz");
  REQUIRE(after);
  CHECK(after->status == 200);
}

TEST_CASE("a chunked body over the limit is 413") {
  Fixture f(true, 1024);
  const std::string chunk(512, 'x');
  auto r = f.client->Post(
      "/webhook", {{"Authorization", std::string("Bearer ") + kSecret}},
      [&chunk](size_t offset, httplib::DataSink& sink) {
        if (offset >= 8 * chunk.size()) {
          sink.done();
        } else {
          sink.write(chunk.data(), chunk.size());
        }
        return true;
      },
      "application/json");
  REQUIRE(r);
  CHECK(r->status == 413);
  CHECK(f.Triggers().empty());
}

TEST_CASE("without a secret the webhook is 404 and sync needs no token") {
  Fixture f(false);
  auto hook = f.PostGitHub(kPushMain, GitHubSignature(kSecret, kPushMain));
  REQUIRE(hook);
  CHECK(hook->status == 404);
  auto sync = f.client->Post("/api/v1/sync");
  REQUIRE(sync);
  CHECK(sync->status == 202);
  CHECK(f.Triggers() == std::vector<std::string>{"api"});
}

TEST_CASE("with a secret, sync needs the bearer token") {
  Fixture f;
  auto none = f.client->Post("/api/v1/sync");
  REQUIRE(none);
  CHECK(none->status == 401);
  auto wrong = f.client->Post("/api/v1/sync", {{"Authorization", "Bearer nope"}}, "", "");
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
  CHECK(f.Triggers().empty());
  auto good =
      f.client->Post("/api/v1/sync", {{"Authorization", std::string("Bearer ") + kSecret}}, "", "");
  REQUIRE(good);
  CHECK(good->status == 202);
  CHECK(f.Triggers() == std::vector<std::string>{"api"});
}

TEST_CASE("Stop right after Start returns and frees the port") {
  rg::core::MetricsRegistry m;
  HttpServerOptions o;
  o.listen = "127.0.0.1:0";
  HttpServer s(
      o, m, [](std::string) {}, [] { return rg::engine::DaemonSnapshot{}; });
  REQUIRE(s.Start().ok());
  const int port = s.port();
  s.Stop();
  CHECK(s.port() == 0);
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(1);
  CHECK_FALSE(c.Get("/healthz"));
}

TEST_CASE("a non-loopback listen address is refused unless allowed") {
  rg::core::MetricsRegistry m;
  HttpServerOptions o;
  o.listen = "0.0.0.0:0";
  HttpServer s(
      o, m, [](std::string) {}, [] { return rg::engine::DaemonSnapshot{}; });
  const auto st = s.Start();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().IsInvalidInput());
}

TEST_CASE("listen addresses parse host and port, bad ones are refused") {
  using rg::server::ParseListenAddress;
  auto a = ParseListenAddress("127.0.0.1:9190", false);
  REQUIRE(a.ok());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 9190);
  auto v6 = ParseListenAddress("[::1]:8080", false);
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  auto bare = ParseListenAddress(":0", false);
  REQUIRE(bare.ok());
  CHECK(bare->host == "127.0.0.1");
  CHECK(ParseListenAddress("localhost:1", false).ok());
  CHECK(ParseListenAddress("127.1.2.3:1", false).ok());
  CHECK(ParseListenAddress("0.0.0.0:9190", true).ok());
  for (const char* bad :
       {"0.0.0.0:9190", "10.0.0.1:80", "[::]:80", "example.com:80", "127.0.0.1",
        "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:80x", "::1:80", "[::1]80"}) {
    INFO(bad);
    CHECK_FALSE(ParseListenAddress(bad, false).ok());
  }
}

TEST_CASE("GET /readyz lists the warnings under ok and keeps 200") {
  Fixture f;
  auto s = rg::server::testing::SampleSnapshot();
  s.warnings = {{"invalid_cluster", "cluster.yaml: unknown key \"nodes\""},
                {"unreadable_status", "status/a.json: not JSON\nwarning: forged: line"}};
  f.SetSnapshot(s);
  auto r = f.client->Get("/readyz");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body ==
        "ok\n"
        "warning: invalid_cluster: cluster.yaml: unknown key \"nodes\"\n"
        "warning: unreadable_status: status/a.json: not JSON warning: forged: line\n");
}

TEST_CASE("GET /readyz says the loop's unready reason, else the reason from the pass state") {
  Fixture f;
  auto s = rg::server::testing::SampleSnapshot();
  s.ready = false;
  s.unready_reason = "Ray unreachable since 2026-11-18 11:01:40Z";
  s.last_error = "ray: connection refused";
  f.SetSnapshot(s);
  auto r = f.client->Get("/readyz");
  REQUIRE(r);
  CHECK(r->status == 503);
  CHECK(r->body == "not ready: Ray unreachable since 2026-11-18 11:01:40Z\n");
  s.unready_reason.clear();
  s.warnings = {{"foreign_jobs", "1 job of instance lab-b"}};
  f.SetSnapshot(s);
  auto fallback = f.client->Get("/readyz");
  REQUIRE(fallback);
  CHECK(fallback->status == 503);
  CHECK(fallback->body ==
        "not ready: last pass failed: ray: connection refused\n"
        "warning: foreign_jobs: 1 job of instance lab-b\n");
}
