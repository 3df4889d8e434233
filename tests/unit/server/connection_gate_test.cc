// The HTTP server's connection gate over real loopback sockets, with small limits so each
// bound is reached quickly: total head deadline, head and body size, connections per client,
// handler threads and their queue, probes on their own threads, prompt Stop.

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "reconciler/core/metrics.h"
#include "reconciler/server/http_server.h"
#include "tests/unit/server/raw_http.h"

namespace {

using rg::server::testing::RawClock;
using rg::server::testing::RawGet;
using rg::server::testing::RawSocket;
using rg::server::testing::StatusCodeOf;
using std::chrono::milliseconds;

constexpr milliseconds kGenerous{20000};

struct GateFixture {
  explicit GateFixture(rg::server::GateLimits limits) {
    rg::server::HttpServerOptions o;
    o.listen = "127.0.0.1:0";
    o.webhook.secret = "hook-secret";
    o.webhook.max_body_bytes = 1024;
    o.limits = limits;
    server = std::make_unique<rg::server::HttpServer>(
        o, metrics, [](std::string) {},
        [] {
          rg::engine::DaemonSnapshot ready;
          ready.ready = true;
          return ready;
        });
    REQUIRE(server->Start().ok());
    port = server->port();
  }

  double Connections(const char* state) {
    return metrics.Value("rg_http_connections", {{"state", state}});
  }
  double Refused(const char* reason) {
    return metrics.Value("rg_http_refused_total", {{"reason", reason}});
  }

  // Waits until the gate reports `n` connections in `state`.
  bool WaitForConnections(const char* state, double n) {
    const auto deadline = RawClock::now() + kGenerous;
    while (Connections(state) != n) {
      if (RawClock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return true;
  }

  rg::core::MetricsRegistry metrics;
  std::unique_ptr<rg::server::HttpServer> server;
  int port = 0;
};

double Seconds(RawClock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

TEST_CASE("a head still arriving byte by byte is answered 408 at its total deadline") {
  rg::server::GateLimits limits;
  limits.head_timeout = milliseconds(600);
  limits.linger_timeout = milliseconds(200);
  GateFixture f(limits);
  RawSocket slow(f.port);
  REQUIRE(slow.Send("GET /healthz HTTP/1.1\r\n"));
  const auto start = RawClock::now();
  std::atomic<bool> done{false};
  // Far faster than any per-byte read timeout: only a total deadline ends this.
  std::thread drip([&] {
    while (!done && slow.Send("a")) std::this_thread::sleep_for(milliseconds(20));
  });
  const auto response = slow.ReadUntilClosed(kGenerous);
  const double elapsed = Seconds(RawClock::now() - start);
  done = true;
  drip.join();
  REQUIRE(response);
  CHECK(StatusCodeOf(*response) == 408);
  CHECK(elapsed >= 0.5);
  CHECK(f.Refused("head_timeout") == 1);
}

TEST_CASE("a declared body over the limit is refused with 413 before any of it is sent") {
  GateFixture f(rg::server::GateLimits{});
  RawSocket get(f.port);
  REQUIRE(get.Send("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n"));
  const auto refused = get.ReadUntilClosed(kGenerous);
  REQUIRE(refused);
  CHECK(StatusCodeOf(*refused) == 413);

  // The webhook has its own, larger limit (1024 bytes here): 1025 is refused and counted.
  RawSocket hook(f.port);
  REQUIRE(hook.Send("POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n"));
  const auto hook_refused = hook.ReadUntilClosed(kGenerous);
  REQUIRE(hook_refused);
  CHECK(StatusCodeOf(*hook_refused) == 413);
  CHECK(f.Refused("body_too_large") == 2);
  CHECK(f.metrics.Value("rg_webhook_rejected_total", {{"reason", "too_large"}}) == 1);
  CHECK(f.metrics.Value("rg_http_requests_total", {{"path", "/webhook"}, {"code", "413"}}) == 1);

  // Every other route allows 64 KiB, on any method.
  RawSocket sync(f.port);
  REQUIRE(sync.Send("POST /api/v1/sync HTTP/1.1\r\nHost: x\r\nContent-Length: 65537\r\n\r\n"));
  const auto sync_refused = sync.ReadUntilClosed(kGenerous);
  REQUIRE(sync_refused);
  CHECK(StatusCodeOf(*sync_refused) == 413);
}

TEST_CASE("a head over the size limit is 431") {
  rg::server::GateLimits limits;
  limits.max_head_bytes = 1024;
  GateFixture f(limits);
  RawSocket s(f.port);
  REQUIRE(s.Send("GET / HTTP/1.1\r\nX-Big: " + std::string(2048, 'a')));
  const auto r = s.ReadUntilClosed(kGenerous);
  REQUIRE(r);
  CHECK(StatusCodeOf(*r) == 431);
  CHECK(f.Refused("head_too_large") == 1);
}

TEST_CASE("ambiguous body framing is 400") {
  GateFixture f(rg::server::GateLimits{});
  RawSocket s(f.port);
  REQUIRE(s.Send(
      "POST /api/v1/sync HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const auto r = s.ReadUntilClosed(kGenerous);
  REQUIRE(r);
  CHECK(StatusCodeOf(*r) == 400);
}

TEST_CASE("a POST without a length is answered without waiting for the client to close") {
  GateFixture f(rg::server::GateLimits{});
  RawSocket s(f.port);
  REQUIRE(
      s.Send("POST /api/v1/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer hook-secret\r\n\r\n"));
  const auto r = s.ReadUntilClosed(kGenerous);  // the server closes after answering
  REQUIRE(r);
  CHECK(StatusCodeOf(*r) == 202);
}

TEST_CASE("connections beyond the per-client limit are refused at once, the others kept") {
  rg::server::GateLimits limits;
  limits.max_connections_per_client = 3;
  GateFixture f(limits);
  std::vector<std::unique_ptr<RawSocket>> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(std::make_unique<RawSocket>(f.port));
  REQUIRE(f.WaitForConnections("reading_head", 3));
  RawSocket extra(f.port);
  const auto refused = extra.ReadUntilClosed(kGenerous);
  REQUIRE(refused);
  CHECK(StatusCodeOf(*refused) == 503);
  CHECK(f.Refused("too_many_connections") == 1);
  CHECK(f.Connections("reading_head") == 3);

  idle.pop_back();
  REQUIRE(f.WaitForConnections("reading_head", 2));
  const auto probe = RawGet(f.port, "/healthz", kGenerous);
  REQUIRE(probe);
  CHECK(StatusCodeOf(*probe) == 200);
}

TEST_CASE("probes answer while every handler thread waits for a slow body, more work is 503") {
  rg::server::GateLimits limits;
  limits.workers = 1;
  limits.max_queued = 0;
  limits.request_timeout = milliseconds(60000);
  GateFixture f(limits);
  RawSocket slow_body(f.port);
  REQUIRE(
      slow_body.Send("POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"ref\": "));
  REQUIRE(f.WaitForConnections("in_handler", 1));

  const auto busy = RawGet(f.port, "/metrics", kGenerous);
  REQUIRE(busy);
  CHECK(StatusCodeOf(*busy) == 503);
  CHECK(busy->find("Retry-After: 1") != std::string::npos);
  CHECK(f.Refused("busy") == 1);
  for (const char* probe : {"/healthz", "/readyz"}) {
    const auto r = RawGet(f.port, probe, kGenerous);
    REQUIRE(r);
    CHECK(StatusCodeOf(*r) == 200);
  }
}

TEST_CASE("Stop returns promptly while a handler waits for a slow body") {
  rg::server::GateLimits limits;
  limits.request_timeout = milliseconds(60000);
  GateFixture f(limits);
  RawSocket slow_body(f.port);
  REQUIRE(slow_body.Send("POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"));
  REQUIRE(f.WaitForConnections("in_handler", 1));
  const auto start = RawClock::now();
  f.server->Stop();
  CHECK(Seconds(RawClock::now() - start) < 10.0);  // far below the 60 s request deadline
  CHECK(slow_body.ReadUntilClosed(kGenerous));
}
