#pragma once
// Every connection to the daemon's HTTP server passes this gate before a handler thread sees
// it. One thread accepts connections and reads request heads with poll(), so a slow client
// costs a file descriptor and a small buffer, never a thread. A connection is refused at once
// when its client holds too many connections; a head must arrive in full within a total
// deadline (not a per-byte timeout) and within a size limit; a declared body over the route's
// limit is answered 413 without reading it. Only then does the request go to a handler thread:
// probes (GET /healthz, /readyz) to threads of their own, everything else to the others, each
// lane with a bounded queue (a full one answers 503). One request per connection: no
// keep-alive, so a handler thread never waits for a client's next request.
//
// Refused and finished connections are closed gracefully (stop sending, drain briefly, close)
// so a client still sending sees the answer rather than a reset.
//
// Thread-safety: Start() and Stop() from one thread; the callbacks run on the gate thread
// (classify, refused, counts) or on a handler thread (serve), and must be thread-safe.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "reconciler/core/result.h"
#include "reconciler/server/request_head.h"
#include "reconciler/server/worker_pool.h"

namespace rg::server {

using GateClock = std::chrono::steady_clock;

struct GateLimits {
  std::chrono::milliseconds head_timeout{10000};     // from accept to the head's last byte
  std::chrono::milliseconds request_timeout{10000};  // after the head: body, handler, answer
  std::chrono::milliseconds linger_timeout{1000};    // draining a closed connection
  size_t max_head_bytes = size_t{16} * 1024;
  size_t max_connections = 256;            // open at once, all clients together
  size_t max_connections_per_client = 32;  // open at once from one client address
  size_t workers = 4;                      // handler threads for everything but probes
  size_t probe_workers = 2;                // handler threads for GET /healthz and /readyz
  size_t max_queued = 32;                  // requests waiting for a thread, per lane
};

// A request whose head arrived in full, on its way to a handler thread.
struct GatedRequest {
  int fd = -1;  // non-blocking; owned by the gate, which closes it after serve returns
  std::string peer;
  // The head and whatever part of the body arrived with it (never more than the body framing
  // allows).
  std::string buffered;
  size_t head_size = 0;
  RequestHead head;
  uint64_t socket_budget = 0;  // bytes the handler may still read from fd
  GateClock::time_point deadline;
};

enum class Lane { kProbe, kMain };

struct Admission {
  Lane lane = Lane::kMain;
  uint64_t max_body_bytes = 0;  // a larger declared body is refused with 413
};

struct GateCounts {
  size_t reading_head = 0;
  size_t in_handlers = 0;
  size_t closing = 0;
  friend bool operator==(const GateCounts&, const GateCounts&) = default;
};

struct GateCallbacks {
  std::function<Admission(const RequestHead&)> classify;
  std::function<void(GatedRequest&)> serve;
  // A refusal the gate answered itself; `head` is null when the head was not read.
  // Reasons: too_many_connections, head_timeout, head_too_large, bad_request, body_too_large,
  // busy.
  std::function<void(std::string_view reason, int status, const RequestHead* head)> refused;
  std::function<void(const GateCounts&)> counts;  // after each change
};

// A listening TCP socket on host:port (port 0 picks one). Fatal when it cannot be bound.
struct Listener {
  int fd = -1;
  int port = 0;
};
core::Result<Listener> OpenListener(const std::string& host, int port);

class ConnectionGate {
 public:
  // Takes ownership of `listen_fd`.
  ConnectionGate(int listen_fd, GateLimits limits, GateCallbacks callbacks);
  ~ConnectionGate();  // Stop()
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  void Start();
  // Stops accepting and closes connections still reading their head; requests in handlers
  // stop reading (their sockets are shut for reading) and finish their answer. Idempotent.
  void Stop();

 private:
  struct Conn {
    int fd = -1;
    std::string peer;
    GateClock::time_point deadline;
    std::string buffer;
    bool closing = false;  // answered or finished: draining before close
    size_t drained = 0;
  };

  void Run();
  int PollTimeoutMs() const;
  void AcceptAll();
  void Advance(Conn& c);
  void Admit(Conn& c, size_t head_size);
  void Refuse(Conn& c, int status, std::string_view reason, const RequestHead* head);
  void StartClosing(Conn& c);
  void Close(Conn& c);
  void Expire();
  void TakeRetired();
  void Retire(int fd, std::string peer);  // from a handler thread
  void ReportCounts();
  void CloseEverything();

  const int listen_fd_;
  const GateLimits limits_;
  const GateCallbacks callbacks_;
  int wake_read_ = -1;
  int wake_write_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  GateClock::time_point accept_paused_until_;

  // Gate thread only.
  std::vector<Conn> conns_;
  std::map<std::string, size_t> per_client_;
  size_t open_ = 0;
  GateCounts last_counts_;

  std::mutex mu_;  // guards the fields below
  bool running_ = false;
  std::set<int> in_handlers_;
  std::vector<Conn> retired_;

  std::unique_ptr<WorkerPool> probe_pool_;
  std::unique_ptr<WorkerPool> main_pool_;
};

}  // namespace rg::server
