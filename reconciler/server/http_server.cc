#include "reconciler/server/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <utility>

#include "reconciler/server/connection_gate.h"
#include "reconciler/server/gated_stream.h"
#include "reconciler/server/status_page.h"

namespace rg::server {

namespace {

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kText = "text/plain; charset=utf-8";
constexpr std::string_view kPrometheusText = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view kHtml = "text/html; charset=utf-8";

constexpr std::string_view kRequestsMetric = "rg_http_requests_total";
constexpr std::string_view kRejectedMetric = "rg_webhook_rejected_total";
constexpr std::string_view kIgnoredMetric = "rg_webhook_ignored_total";
constexpr std::string_view kTriggersMetric = "rg_triggers_total";
constexpr std::string_view kRefusedMetric = "rg_http_refused_total";
constexpr std::string_view kConnectionsMetric = "rg_http_connections";

// Known routes keep their path as the metric label; anything else is "other", so a scanner
// cannot grow the registry without bound.
std::string PathLabel(const std::string& path) {
  for (const std::string_view known :
       {"/", "/healthz", "/readyz", "/metrics", "/api/v1/status", "/api/v1/sync", "/webhook"}) {
    if (path == known) return path;
  }
  // One label per route, not per job.
  if (path.starts_with("/jobs/")) return "/jobs/{name}";
  if (path.starts_with("/api/v1/jobs/")) return "/api/v1/jobs/{name}";
  return "other";
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    static const in6_addr kLoopback = IN6ADDR_LOOPBACK_INIT;
    return std::equal(std::begin(v6.s6_addr), std::end(v6.s6_addr), std::begin(kLoopback.s6_addr));
  }
  return false;
}

std::optional<std::string> Header(const httplib::Request& req, const char* name) {
  if (!req.has_header(name)) return std::nullopt;
  return req.get_header_value(name);
}

std::string StatusLine(int status) {
  std::string_view text = "Error";
  switch (status) {
    case 400:
      text = "Bad Request";
      break;
    case 404:
      text = "Not Found";
      break;
    case 405:
      text = "Method Not Allowed";
      break;
    case 413:
      text = "Payload Too Large";
      break;
    case 414:
      text = "URI Too Long";
      break;
    case 500:
      text = "Internal Server Error";
      break;
    default:
      break;
  }
  return std::to_string(status) + " " + std::string(text) + "\n";
}

std::string ReadinessReason(const engine::DaemonSnapshot& s) {
  if (s.shutting_down) return "shutting down";
  if (!s.unready_reason.empty()) return s.unready_reason;
  if (!s.last_error.empty()) return "last pass failed: " + s.last_error;
  if (!s.last_success_ms) return "no successful pass yet";
  return "last successful pass is too old";
}

// One line per warning; a line break inside a message must not forge another line.
std::string WarningLines(const engine::DaemonSnapshot& s) {
  std::string out;
  for (const auto& w : s.warnings) {
    std::string line = "warning: " + w.kind + ": " + w.message;
    std::replace_if(
        line.begin(), line.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    out += line + "\n";
  }
  return out;
}

bool IsProbe(const RequestHead& head) {
  return (head.method == "GET" || head.method == "HEAD") &&
         (head.path == "/healthz" || head.path == "/readyz");
}

// The HTTP library parses, routes and answers one request read from a GatedStream; its own
// accept loop and thread pool are never used.
class RoutingServer : public httplib::Server {
 public:
  void Serve(httplib::Stream& stream) {
    bool connection_closed = false;
    process_request(stream, /*close_connection=*/true, connection_closed, nullptr);
  }
};

}  // namespace

core::Result<ListenAddress> ParseListenAddress(std::string_view text, bool allow_non_loopback) {
  const auto bad = [&](std::string_view why) {
    return core::Error::InvalidInput("listen address \"" + std::string(text) +
                                     "\": " + std::string(why));
  };
  ListenAddress out;
  std::string_view port_text;
  if (text.starts_with("[")) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return bad("expected [host]:port");
    }
    out.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("expected host:port");
    out.host = std::string(text.substr(0, colon));
    if (out.host.find(':') != std::string::npos) return bad("write IPv6 hosts as [host]:port");
    port_text = text.substr(colon + 1);
  }
  if (out.host.empty()) out.host = "127.0.0.1";
  int port = -1;
  const auto [ptr, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || ptr != port_text.data() + port_text.size() ||
      port < 0 || port > 65535) {
    return bad("the port must be a number from 0 to 65535");
  }
  out.port = port;
  if (!allow_non_loopback && !IsLoopbackHost(out.host)) {
    return bad("not a loopback address; serving beyond this machine needs an explicit opt-in");
  }
  return out;
}

struct HttpServer::Impl {
  Impl(HttpServerOptions o, core::MetricsRegistry& m, TriggerCallback t, SnapshotCallback s)
      : options(std::move(o)), metrics(m), trigger(std::move(t)), snapshot(std::move(s)) {}

  void Fire(const std::string& source) {
    metrics.Add(kTriggersMetric, 1, {{"source", source}});
    trigger(source);
  }

  void ConfigureRouter();
  void Routes();
  void JobRoutes();  // /jobs/<name> and /api/v1/jobs/<name>
  void HandleWebhook(const httplib::Request& req, httplib::Response& res,
                     const httplib::ContentReader& reader);
  GateCallbacks Callbacks();
  Admission Classify(const RequestHead& head) const;
  void CountRefusal(std::string_view reason, int status, const RequestHead* head);
  void CountConnections(const GateCounts& counts);

  HttpServerOptions options;
  core::MetricsRegistry& metrics;
  TriggerCallback trigger;
  SnapshotCallback snapshot;
  RoutingServer router;
  std::unique_ptr<ConnectionGate> gate;
  int port = 0;
  bool started = false;
};

void HttpServer::Impl::Routes() {
  router.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", std::string(kText));
  });
  router.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const engine::DaemonSnapshot s = snapshot();
    if (s.ready && !s.shutting_down) {
      res.set_content("ok\n" + WarningLines(s), std::string(kText));
      return;
    }
    res.status = 503;
    res.set_content("not ready: " + ReadinessReason(s) + "\n" + WarningLines(s),
                    std::string(kText));
  });
  router.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.RenderPrometheusText(), std::string(kPrometheusText));
  });
  router.Get("/api/v1/status", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(RenderStatusJson(snapshot()), std::string(kJson));
  });
  router.Get("/", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(RenderStatusPage(snapshot(), options.page_refresh_seconds), std::string(kHtml));
    res.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
    res.set_header("X-Content-Type-Options", "nosniff");
  });
  JobRoutes();
  router.Post("/api/v1/sync", [this](const httplib::Request& req, httplib::Response& res) {
    if (options.webhook.secret) {
      if (!BearerTokenMatches(Header(req, "Authorization"), *options.webhook.secret)) {
        res.status = 401;
        res.set_header("WWW-Authenticate", "Bearer");
        res.set_content(R"({"error": "missing or wrong bearer token"})", std::string(kJson));
        return;
      }
    }
    Fire("api");
    res.status = 202;
    res.set_content(R"({"accepted": "reconcile pass queued"})", std::string(kJson));
  });
  router.Post("/webhook",
              [this](const httplib::Request& req, httplib::Response& res,
                     const httplib::ContentReader& reader) { HandleWebhook(req, res, reader); });
}

// A job's page and JSON; 404 for a name that is not a valid job name or not a known job.
void HttpServer::Impl::JobRoutes() {
  router.Get(R"(/jobs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    const engine::DaemonSnapshot s = snapshot();
    const core::StatusRecord* job = FindJob(s, req.matches[1].str());
    res.set_header("X-Content-Type-Options", "nosniff");
    if (job == nullptr) {
      res.status = 404;
      res.set_content("no such job\n", std::string(kText));
      return;
    }
    res.set_content(RenderJobPage(s, *job, options.page_refresh_seconds), std::string(kHtml));
    res.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
  });
  router.Get(R"(/api/v1/jobs/([^/]+))",
             [this](const httplib::Request& req, httplib::Response& res) {
               const engine::DaemonSnapshot s = snapshot();
               const core::StatusRecord* job = FindJob(s, req.matches[1].str());
               if (job == nullptr) {
                 res.status = 404;
                 res.set_content("{\"error\": \"no such job\"}\n", std::string(kJson));
                 return;
               }
               res.set_content(RenderJobJson(s, *job), std::string(kJson));
             });
}

void HttpServer::Impl::HandleWebhook(const httplib::Request& req, httplib::Response& res,
                                     const httplib::ContentReader& reader) {
  const size_t limit = options.webhook.max_body_bytes;
  WebhookRequest w;
  // An over-limit body is never kept: the gate refuses a declared length over the limit before
  // reading any of it (the check below is a backstop), and a chunked body is cut off as soon as
  // it passes the limit.
  std::string body;
  if (req.has_header("Content-Length")) {
    const std::string declared = req.get_header_value("Content-Length");
    uint64_t length = 0;
    const auto [ptr, ec] =
        std::from_chars(declared.data(), declared.data() + declared.size(), length);
    if (ec == std::errc::result_out_of_range ||
        (ec == std::errc() && length > static_cast<uint64_t>(limit))) {
      w.body_too_large = true;
    }
  }
  const bool read_ok = reader([&](const char* data, size_t n) {
    if (w.body_too_large) return true;  // drained, not kept
    if (body.size() + n > limit) {
      w.body_too_large = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  if (!read_ok && !w.body_too_large) {
    res.status = 400;
    res.set_content(R"({"error": "could not read the body"})", std::string(kJson));
    metrics.Add(kRejectedMetric, 1, {{"reason", "malformed_payload"}});
    return;
  }
  if (w.body_too_large) res.set_header("Connection", "close");
  w.body = body;
  w.github_signature = Header(req, "X-Hub-Signature-256");
  w.github_event = Header(req, "X-GitHub-Event");
  w.gitlab_token = Header(req, "X-Gitlab-Token");
  w.gitlab_event = Header(req, "X-Gitlab-Event");
  w.authorization = Header(req, "Authorization");

  WebhookVerdict v = VerifyWebhook(options.webhook, options.branch, w);
  res.status = v.http_status;
  res.set_content(v.response_json + "\n", std::string(kJson));
  if (!v.reject_reason.empty()) {
    metrics.Add(kRejectedMetric, 1, {{"reason", v.reject_reason}});
    if (v.http_status == 401) res.set_header("WWW-Authenticate", "Bearer");
    return;
  }
  if (v.trigger) {
    Fire(v.source);
  } else {
    metrics.Add(kIgnoredMetric, 1, {{"source", v.source}});
  }
}

Admission HttpServer::Impl::Classify(const RequestHead& head) const {
  Admission a;
  a.lane = IsProbe(head) ? Lane::kProbe : Lane::kMain;
  // Only the webhook carries a payload worth its size; without a secret it answers 404 and
  // needs none.
  a.max_body_bytes = head.path == "/webhook" && options.webhook.secret
                         ? options.webhook.max_body_bytes
                         : options.max_body_bytes;
  return a;
}

void HttpServer::Impl::CountRefusal(std::string_view reason, int status, const RequestHead* head) {
  metrics.Add(kRefusedMetric, 1, {{"reason", std::string(reason)}});
  if (head == nullptr) return;
  metrics.Add(kRequestsMetric, 1,
              {{"path", PathLabel(head->path)}, {"code", std::to_string(status)}});
  if (status == 413 && head->path == "/webhook") {
    metrics.Add(kRejectedMetric, 1, {{"reason", "too_large"}});
  }
}

void HttpServer::Impl::CountConnections(const GateCounts& counts) {
  metrics.Set(kConnectionsMetric, static_cast<double>(counts.reading_head),
              {{"state", "reading_head"}});
  metrics.Set(kConnectionsMetric, static_cast<double>(counts.in_handlers),
              {{"state", "in_handler"}});
  metrics.Set(kConnectionsMetric, static_cast<double>(counts.closing), {{"state", "closing"}});
}

GateCallbacks HttpServer::Impl::Callbacks() {
  GateCallbacks c;
  c.classify = [this](const RequestHead& head) { return Classify(head); };
  c.serve = [this](GatedRequest& request) {
    GatedStream stream(request);
    router.Serve(stream);
  };
  c.refused = [this](std::string_view reason, int status, const RequestHead* head) {
    CountRefusal(reason, status, head);
  };
  c.counts = [this](const GateCounts& counts) { CountConnections(counts); };
  return c;
}

void HttpServer::Impl::ConfigureRouter() {
  // A backstop behind the gate, which refuses larger declared bodies before reading them.
  router.set_payload_max_length(std::max(options.webhook.max_body_bytes, options.max_body_bytes));
  // Counted before the response is written, so a client that has its answer sees the count.
  router.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    metrics.Add(kRequestsMetric, 1,
                {{"path", PathLabel(req.path)}, {"code", std::to_string(res.status)}});
  });
  router.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        res.set_content(StatusLine(res.status), std::string(kText));
        return httplib::Server::HandlerResponse::Handled;
      }));
  router.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
        res.status = 500;
        res.set_content("500 Internal Server Error\n", std::string(kText));
      });
  Routes();
}

HttpServer::HttpServer(HttpServerOptions options, core::MetricsRegistry& metrics,
                       TriggerCallback trigger, SnapshotCallback snapshot)
    : impl_(std::make_unique<Impl>(std::move(options), metrics, std::move(trigger),
                                   std::move(snapshot))) {
  metrics.DeclareCounter(kRequestsMetric, "HTTP requests served, by route and status code.");
  metrics.DeclareCounter(kRejectedMetric, "Webhook requests rejected, by reason.");
  metrics.DeclareCounter(kIgnoredMetric,
                         "Authenticated webhook requests that triggered nothing (ping, other "
                         "branch, other event), by source.");
  metrics.DeclareCounter(kTriggersMetric, "Reconcile passes requested over HTTP, by source.");
  metrics.DeclareCounter(kRefusedMetric,
                         "HTTP connections and requests the server refused before any handler "
                         "saw them, by reason.");
  metrics.DeclareGauge(kConnectionsMetric,
                       "Open HTTP connections: reading_head (waiting for the request head), "
                       "in_handler (queued or being answered), closing.");
}

HttpServer::~HttpServer() { Stop(); }

core::Status HttpServer::Start() {
  Impl& s = *impl_;
  if (s.started) return core::Error::Fatal("the HTTP server is already started");
  auto addr = ParseListenAddress(s.options.listen, s.options.allow_non_loopback);
  if (!addr.ok()) return addr.error();
  auto listener = OpenListener(addr->host, addr->port);
  if (!listener.ok()) return listener.error();
  s.ConfigureRouter();
  s.gate = std::make_unique<ConnectionGate>(listener->fd, s.options.limits, s.Callbacks());
  s.gate->Start();
  s.port = listener->port;
  s.started = true;
  return core::OkStatus();
}

int HttpServer::port() const { return impl_->started ? impl_->port : 0; }

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (!s.started) return;
  s.gate.reset();  // stops and closes the listener
  s.started = false;
}

}  // namespace rg::server
