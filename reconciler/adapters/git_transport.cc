#include "reconciler/adapters/git_transport.h"

#include <fcntl.h>
#include <git2.h>
#include <git2/sys/stream.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <type_traits>

namespace rg::adapters {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a wait may go without looking at cancellation and deadlines.
constexpr milliseconds kTick{100};

enum Killed : int { kAlive = 0, kCancelled = 1, kTimedOut = 2 };

// One connection, shared by its stream and the registry. `fd` and `killed` change under the
// registry's lock; `killed` is also read without it by the stream's own thread.
struct Connection {
  std::string host;
  int fd = -1;
  uint64_t generation = 0;  // GitCancelGeneration() when the stream was made
  GitTransportLimits limits;
  SteadyClock::time_point deadline;  // opened + limits.transfer_timeout
  std::atomic<int> killed{kAlive};
};

// The open connections, the limits and the watchdog that enforces the transfer timeout.
// Never destroyed: the watchdog thread waits on it until the process ends.
class Registry {
 public:
  static Registry& Get() {
    static auto* const registry = new Registry();
    return *registry;
  }

  GitTransportLimits limits() {
    std::lock_guard<std::mutex> lock(mu_);
    return limits_;
  }
  void set_limits(const GitTransportLimits& limits) {
    std::lock_guard<std::mutex> lock(mu_);
    limits_ = limits;
  }
  uint64_t generation() const { return generation_.load(); }

  // Makes `fd` the connection's socket; false when it was cancelled since it was made.
  bool Attach(Connection* c, int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    if (c->generation != generation_.load() || c->killed.load() != kAlive) return false;
    c->fd = fd;
    c->deadline = SteadyClock::now() + c->limits.transfer_timeout;
    open_.insert(c);
    if (!watchdog_started_) {
      watchdog_started_ = true;
      std::thread([this] { Watch(); }).detach();
    }
    cv_.notify_all();
    return true;
  }

  // Forgets the socket; the caller closes it afterwards, so the watchdog never shuts down a
  // descriptor number that was closed and reused.
  void Detach(Connection* c) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.erase(c);
    c->fd = -1;
  }

  void CancelAll() {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1);
    for (Connection* c : open_) Kill(c, kCancelled);
  }

  int Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(open_.size());
  }

 private:
  static void Kill(Connection* c, Killed why) {
    int expected = kAlive;
    if (c->killed.compare_exchange_strong(expected, why) && c->fd >= 0) {
      ::shutdown(c->fd, SHUT_RDWR);  // wakes any poll or recv on it, ours or libssh2's
    }
  }

  [[noreturn]] void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait_for(lock, open_.empty() ? milliseconds(60'000) : kTick * 2);
      const auto now = SteadyClock::now();
      for (Connection* c : open_) {
        if (now >= c->deadline) Kill(c, kTimedOut);
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  GitTransportLimits limits_;
  std::atomic<uint64_t> generation_{0};
  std::set<Connection*> open_;
  bool watchdog_started_ = false;
};

// libgit2 1.5's ssh transport casts the stream to its private git_socket_stream
// {git_stream parent; char* host; char* port; int s;} and hands `s` to libssh2, so this
// stream starts with exactly those members, in that order.
struct TimedStream {
  git_stream parent;
  char* host;
  char* port;
  int s;
  Connection* connection;
};
static_assert(std::is_standard_layout_v<TimedStream>);

Connection& Of(git_stream* stream) { return *reinterpret_cast<TimedStream*>(stream)->connection; }

int SetError(const Connection& c, const std::string& what) {
  std::string message;
  const int killed = c.killed.load();
  if (killed == kCancelled) {
    message = what + " " + c.host + ": cancelled (shutting down)";
  } else if (killed == kTimedOut) {
    message = what + " " + c.host + ": the transfer took longer than " +
              std::to_string(c.limits.transfer_timeout.count() / 1000) + " s";
  } else {
    message = what + " " + c.host + ": " + std::strerror(errno);
  }
  git_error_set_str(GIT_ERROR_NET, message.c_str());
  return -1;
}

enum class Wait { kReady, kTimedOut, kKilled, kError };

// Waits until `events` on the socket, the connection is shut down, `timeout` passes without
// them, or the transfer deadline passes.
Wait WaitForSocket(Connection& c, short events, milliseconds timeout) {
  const auto give_up = std::min(SteadyClock::now() + timeout, c.deadline);
  for (;;) {
    if (c.killed.load() != kAlive) return Wait::kKilled;
    const auto left =
        std::chrono::duration_cast<milliseconds>(give_up - SteadyClock::now()) + milliseconds(1);
    if (left <= milliseconds(0)) return Wait::kTimedOut;
    pollfd p{c.fd, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min(left, kTick).count()));
    if (rc > 0) return c.killed.load() != kAlive ? Wait::kKilled : Wait::kReady;
    if (rc < 0 && errno != EINTR) return Wait::kError;
  }
}

int TimedOut(const Connection& c, const char* what, milliseconds timeout) {
  const std::string message = std::string(what) + " " + c.host + ": no answer for " +
                              std::to_string(timeout.count() / 1000) + " s (timed out)";
  git_error_set_str(GIT_ERROR_NET, message.c_str());
  return -1;
}

// One address: true when connected; the socket is attached to `c` either way until closed.
bool ConnectOne(Connection& c, const addrinfo& ai, int* error) {
  const int fd =
      ::socket(ai.ai_family, ai.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai.ai_protocol);
  if (fd < 0) return false;
  if (!Registry::Get().Attach(&c, fd)) {
    ::close(fd);
    c.killed.store(kCancelled);
    *error = SetError(c, "cannot connect to");
    return false;
  }
  bool connected = ::connect(fd, ai.ai_addr, ai.ai_addrlen) == 0;
  if (!connected && errno == EINPROGRESS) {
    const Wait w = WaitForSocket(c, POLLOUT, c.limits.connect_timeout);
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    if (w == Wait::kReady && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) == 0) {
      connected = so_error == 0;
      errno = so_error;
    } else if (w == Wait::kTimedOut) {
      *error = TimedOut(c, "cannot connect to", c.limits.connect_timeout);
    } else {
      *error = SetError(c, "cannot connect to");
    }
  } else if (!connected) {
    *error = SetError(c, "cannot connect to");
  }
  if (!connected) {
    if (*error == 0) *error = SetError(c, "cannot connect to");
    Registry::Get().Detach(&c);
    ::close(fd);
  }
  return connected;
}

int StreamConnect(git_stream* stream) {
  auto* st = reinterpret_cast<TimedStream*>(stream);
  Connection& c = *st->connection;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* info = nullptr;
  if (const int rc = ::getaddrinfo(st->host, st->port, &hints, &info); rc != 0) {
    const std::string message = "cannot resolve " + c.host + ": " + std::string(::gai_strerror(rc));
    git_error_set_str(GIT_ERROR_NET, message.c_str());
    return -1;
  }
  int error = 0;
  for (const addrinfo* ai = info; ai != nullptr; ai = ai->ai_next) {
    error = 0;
    if (ConnectOne(c, *ai, &error)) {
      st->s = c.fd;
      ::freeaddrinfo(info);
      return 0;
    }
    if (c.killed.load() != kAlive) break;
  }
  ::freeaddrinfo(info);
  return error != 0 ? error : SetError(c, "cannot connect to");
}

ssize_t StreamRead(git_stream* stream, void* data, size_t len) {
  Connection& c = Of(stream);
  for (;;) {
    const ssize_t n = ::recv(c.fd, data, len, 0);
    if (n >= 0) return (n == 0 && c.killed.load() != kAlive) ? SetError(c, "cannot read from") : n;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return SetError(c, "cannot read from");
    }
    const Wait w = WaitForSocket(c, POLLIN, c.limits.io_timeout);
    if (w == Wait::kTimedOut) return TimedOut(c, "cannot read from", c.limits.io_timeout);
    if (w != Wait::kReady) return SetError(c, "cannot read from");
  }
}

ssize_t StreamWrite(git_stream* stream, const char* data, size_t len, int /*flags*/) {
  Connection& c = Of(stream);
  for (;;) {
    if (c.killed.load() != kAlive) return SetError(c, "cannot write to");
    const ssize_t n = ::send(c.fd, data, len, MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return SetError(c, "cannot write to");
    }
    const Wait w = WaitForSocket(c, POLLOUT, c.limits.io_timeout);
    if (w == Wait::kTimedOut) return TimedOut(c, "cannot write to", c.limits.io_timeout);
    if (w != Wait::kReady) return SetError(c, "cannot write to");
  }
}

int StreamClose(git_stream* stream) {
  auto* st = reinterpret_cast<TimedStream*>(stream);
  const int fd = st->connection->fd;
  Registry::Get().Detach(st->connection);
  st->s = -1;
  return fd >= 0 ? ::close(fd) : 0;
}

void StreamFree(git_stream* stream) {
  auto* st = reinterpret_cast<TimedStream*>(stream);
  if (st->connection->fd >= 0) StreamClose(stream);
  std::free(st->host);
  std::free(st->port);
  delete st->connection;
  delete st;
}

int StreamInit(git_stream** out, const char* host, const char* port) {
  auto* st = new TimedStream{};
  st->parent.version = GIT_STREAM_VERSION;
  st->parent.connect = StreamConnect;
  st->parent.read = StreamRead;
  st->parent.write = StreamWrite;
  st->parent.close = StreamClose;
  st->parent.free = StreamFree;
  st->host = ::strdup(host != nullptr ? host : "");
  st->port = ::strdup(port != nullptr ? port : "");
  st->s = -1;
  st->connection = new Connection();
  st->connection->host = st->host;
  st->connection->generation = Registry::Get().generation();
  st->connection->limits = Registry::Get().limits();
  *out = &st->parent;
  return 0;
}

}  // namespace

void SetGitTransportLimits(const GitTransportLimits& limits) { Registry::Get().set_limits(limits); }

GitTransportLimits CurrentGitTransportLimits() { return Registry::Get().limits(); }

void CancelGitTransfers() { Registry::Get().CancelAll(); }

uint64_t GitCancelGeneration() { return Registry::Get().generation(); }

int OpenGitConnections() { return Registry::Get().Count(); }

namespace git {

void RegisterTimedSocketStream() {
  static const bool registered = [] {
    git_stream_registration registration{};
    registration.version = GIT_STREAM_VERSION;
    registration.init = StreamInit;
    return git_stream_register(GIT_STREAM_STANDARD, &registration) == 0;
  }();
  (void)registered;
}

}  // namespace git
}  // namespace rg::adapters
