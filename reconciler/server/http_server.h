#pragma once
// The daemon's HTTP side: health, readiness, metrics, the status API and page, the webhook and
// the manual sync endpoint. Serves on threads of its own; the reconcile loop talks to it only
// through the two callbacks and the metrics registry.
//
// Every connection passes a ConnectionGate first (connection_gate.h): bounded head time and
// size, body size, connections per client, and probes on handler threads of their own.
//
// Endpoints: GET /healthz, GET /readyz, GET /metrics, GET /api/v1/status, POST /api/v1/sync,
// POST /webhook, GET / (docs/http-api.md has the contract).
//
// Thread-safety: Start() and Stop() from one thread; the callbacks are called from server
// threads, possibly concurrently, and must be thread-safe.

#include <functional>
#include <memory>
#include <string>

#include "reconciler/core/metrics.h"
#include "reconciler/core/result.h"
#include "reconciler/engine/daemon_snapshot.h"
#include "reconciler/server/connection_gate.h"
#include "reconciler/server/webhook_verifier.h"

namespace rg::server {

inline constexpr std::string_view kDefaultListenAddress = "127.0.0.1:9190";

struct HttpServerOptions {
  // "host:port" or "[v6]:port". Port 0 picks a free port (see HttpServer::port()).
  std::string listen = std::string(kDefaultListenAddress);
  // Without it only loopback hosts (127.0.0.0/8, ::1, localhost) are accepted.
  bool allow_non_loopback = false;
  std::string branch;  // the watched branch: webhook pushes to other branches are ignored
  // The webhook secret also guards POST /api/v1/sync (as a bearer token) when set.
  WebhookConfig webhook;
  int page_refresh_seconds = 15;  // meta refresh of the status page; 0 = none
  // The body limit of every request but an authenticated webhook's (webhook.max_body_bytes).
  size_t max_body_bytes = size_t{64} * 1024;
  // Deadlines, connection limits and handler threads (docs/http-api.md, "Limits").
  GateLimits limits;
};

// Called with the trigger's source: "webhook:github", "webhook:gitlab", "webhook:bearer",
// "api". Must not block: the loop coalesces triggers and runs the pass on its own thread.
using TriggerCallback = std::function<void(std::string source)>;
using SnapshotCallback = std::function<engine::DaemonSnapshot()>;

struct ListenAddress {
  std::string host;
  int port = 0;
};
// Parses "host:port", "[::1]:port" or ":port" (host 127.0.0.1). InvalidInput on bad syntax,
// a port outside 0..65535, or a non-loopback host when `allow_non_loopback` is false.
core::Result<ListenAddress> ParseListenAddress(std::string_view text, bool allow_non_loopback);

class HttpServer {
 public:
  // Declares the server's metric families in `metrics` (rg_http_requests_total{path,code},
  // rg_webhook_rejected_total{reason}, rg_webhook_ignored_total{reason},
  // rg_triggers_total{source}). `metrics` must outlive the server.
  HttpServer(HttpServerOptions options, core::MetricsRegistry& metrics, TriggerCallback trigger,
             SnapshotCallback snapshot);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving on a new thread. InvalidInput for a bad or refused address,
  // Fatal when the address cannot be bound. REQUIRES: not started.
  core::Status Start();
  // The bound port once Start() succeeded (the real one when asked for port 0), else 0.
  int port() const;
  // Stops accepting, finishes requests in flight, joins the thread. Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rg::server
