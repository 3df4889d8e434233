// The daemon's HTTP server under the attacks found in issue 9, with its default limits: slow
// request heads on more connections than there are handler threads, and a GET announcing a
// 1 GB body. Probes must keep answering quickly and memory must stay small.

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "reconciler/core/metrics.h"
#include "reconciler/server/http_server.h"
#include "tests/support/sanitizer.h"
#include "tests/unit/server/raw_http.h"
#include "tests/unit/server/sample_snapshot.h"

namespace {

using rg::server::testing::RawClock;
using rg::server::testing::RawSocket;
using std::chrono::milliseconds;

[[maybe_unused]] constexpr long kMaxResidentBytes = 100L << 20;  // not checked under ASan
constexpr int kSlowClients = 8;

// Slow clients that each send a request head one byte at a time and never finish it, plus
// one GET announcing a 1 GB body that then sends as much of the body as the server takes.
class Attack {
 public:
  explicit Attack(int port) : big_(port) {
    for (int i = 0; i < kSlowClients; ++i) slow_.push_back(std::make_unique<RawSocket>(port));
    drip_ = std::thread([this] { Drip(); });
    body_ = std::thread([this] { SendHugeBody(); });
  }
  ~Attack() {
    stop_ = true;
    drip_.join();
    body_.join();
  }

  int drip_rounds() const { return rounds_; }
  bool slow_clients_alive() const { return !slow_client_cut_; }
  bool body_sender_done() const { return body_done_; }
  long peak_resident_bytes() const { return peak_rss_; }
  long body_bytes_sent() const { return body_sent_; }

 private:
  void Drip() {
    for (auto& s : slow_) {
      if (!s->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n")) slow_client_cut_ = true;
    }
    const std::string filler = "X-Filler: aaaaaaaaaaaaaaaaaaaa\r\n";
    for (size_t i = 0; !stop_; ++i) {
      for (auto& s : slow_) {
        if (!s->Send(std::string_view(&filler[i % filler.size()], 1))) slow_client_cut_ = true;
      }
      SamplePeak();
      ++rounds_;
      std::this_thread::sleep_for(milliseconds(100));  // the attack's pace, not a wait
    }
  }

  void SendHugeBody() {
    const std::string chunk(64 * 1024, 'x');
    if (big_.Send("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n")) {
      // At most 256 MB: a server that buffers it shows far beyond the limit.
      while (!stop_ && body_sent_ < (256L << 20) && big_.Send(chunk)) {
        body_sent_ += static_cast<long>(chunk.size());
        SamplePeak();
      }
    }
    body_done_ = true;
  }

  void SamplePeak() {
    const long rss = rg::server::testing::ResidentBytes();
    long seen = peak_rss_;
    while (rss > seen && !peak_rss_.compare_exchange_weak(seen, rss)) {
    }
  }

  std::vector<std::unique_ptr<RawSocket>> slow_;
  RawSocket big_;
  std::atomic<bool> stop_{false};
  std::atomic<int> rounds_{0};
  std::atomic<bool> slow_client_cut_{false};
  std::atomic<bool> body_done_{false};
  std::atomic<long> body_sent_{0};
  std::atomic<long> peak_rss_{0};
  std::thread drip_;
  std::thread body_;
};

template <typename Pred>
bool WaitFor(Pred pred, milliseconds timeout) {
  const auto deadline = RawClock::now() + timeout;
  while (!pred()) {
    if (RawClock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

}  // namespace

TEST_CASE("slow heads on 8 connections and a 1 GB GET leave the probes fast and memory small") {
  rg::core::MetricsRegistry metrics;
  rg::server::HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  options.webhook.secret = "hook-secret";
  rg::server::HttpServer server(
      options, metrics, [](std::string) {}, [] { return rg::server::testing::SampleSnapshot(); });
  REQUIRE(server.Start().ok());
  const long baseline = rg::server::testing::ResidentBytes();

  Attack attack(server.port());
  // The attack is in place once every slow client has dripped a few bytes and the huge body
  // has been refused (or has been sent as far as this test goes).
  REQUIRE(WaitFor([&] { return attack.drip_rounds() >= 5 && attack.body_sender_done(); },
                  milliseconds(120000)));

  for (const char* probe : {"/healthz", "/readyz"}) {
    const auto start = RawClock::now();
    const auto response = rg::server::testing::RawGet(server.port(), probe, milliseconds(30000));
    const auto latency = std::chrono::duration<double, std::milli>(RawClock::now() - start);
    std::printf("%s under attack answered in %.1f ms\n", probe, latency.count());
    REQUIRE(response);
    CHECK(rg::server::testing::StatusCodeOf(*response) == 200);
    CHECK(latency.count() < 1000.0);
  }
  // The probes were answered while the slow clients still held their connections.
  CHECK(attack.slow_clients_alive());

  const long peak = attack.peak_resident_bytes();
  std::printf("RSS: %.1f MB before the attack, peak %.1f MB; %.1f MB of the huge body sent\n",
              baseline / 1048576.0, peak / 1048576.0, attack.body_bytes_sent() / 1048576.0);
  CHECK(peak - baseline < 64L << 20);
#if !defined(RG_UNDER_ASAN)
  CHECK(peak < kMaxResidentBytes);  // ASan's shadow memory alone is near this
#endif
}
