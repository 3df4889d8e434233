#include "reconciler/server/connection_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace rg::server {

namespace {

constexpr size_t kMaxDrainBytes = size_t{256} * 1024;
constexpr auto kAcceptPauseOnFdExhaustion = std::chrono::milliseconds(100);
// Chunked framing around the data: a budget of twice the data limit plus room for chunk
// headers and trailers, enough for any sane chunking; the handler enforces the data limit.
constexpr uint64_t kChunkFramingAllowance = uint64_t{16} * 1024;

std::string CannedResponse(int status, std::string_view text) {
  const std::string body = std::to_string(status) + " " + std::string(text) + "\n";
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + std::string(text) + "\r\n";
  r += "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n";
  if (status == 503) r += "Retry-After: 1\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return r;
}

std::string_view StatusText(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Service Unavailable";
  }
}

// Best effort: the socket is new or its answer is small, so the send buffer takes it whole;
// a client that does not read is not waited for.
void SendCanned(int fd, int status) {
  const std::string r = CannedResponse(status, StatusText(status));
  (void)send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

std::string PeerAddress(const sockaddr_storage& addr) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text.data(),
              text.size());
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text.data(),
              text.size());
  }
  return text.data();
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in&>(addr).sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6&>(addr).sin6_port);
}

}  // namespace

core::Result<Listener> OpenListener(const std::string& host, int port) {
  const auto fail = [&](std::string_view why) {
    return core::Error::Fatal("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                              std::string(why));
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0) {
    return fail(gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
      freeaddrinfo(found);
      return Listener{fd, BoundPort(fd)};
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  return fail(why);
}

ConnectionGate::ConnectionGate(int listen_fd, GateLimits limits, GateCallbacks callbacks)
    : listen_fd_(listen_fd), limits_(limits), callbacks_(std::move(callbacks)) {}

ConnectionGate::~ConnectionGate() {
  Stop();
  close(listen_fd_);
}

void ConnectionGate::Start() {
  std::array<int, 2> wake{};
  if (pipe2(wake.data(), O_NONBLOCK | O_CLOEXEC) != 0) std::abort();  // out of descriptors at start
  wake_read_ = wake[0];
  wake_write_ = wake[1];
  probe_pool_ = std::make_unique<WorkerPool>(limits_.probe_workers, limits_.max_queued);
  main_pool_ = std::make_unique<WorkerPool>(limits_.workers, limits_.max_queued);
  {
    std::lock_guard lock(mu_);
    running_ = true;
  }
  thread_ = std::thread([this] { Run(); });
}

void ConnectionGate::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    running_ = false;
    // A handler waiting for body bytes sees the end at once; its answer can still be sent.
    for (const int fd : in_handlers_) shutdown(fd, SHUT_RD);
  }
  stopping_ = true;
  (void)write(wake_write_, "x", 1);
  thread_.join();
  probe_pool_->Shutdown();
  main_pool_->Shutdown();
  close(wake_read_);
  close(wake_write_);
}

void ConnectionGate::Run() {
  std::vector<pollfd> fds;
  while (!stopping_) {
    fds.clear();
    fds.push_back({wake_read_, POLLIN, 0});
    const bool accepting = GateClock::now() >= accept_paused_until_;
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    for (const Conn& c : conns_) fds.push_back({c.fd, POLLIN, 0});
    const size_t polled = conns_.size();
    if (poll(fds.data(), fds.size(), PollTimeoutMs()) < 0 && errno != EINTR) break;
    for (size_t i = 0; i < polled; ++i) {
      if (fds[i + 2].revents != 0) Advance(conns_[i]);
    }
    if (fds[0].revents != 0) TakeRetired();
    if (fds[1].revents != 0) AcceptAll();
    Expire();
    std::erase_if(conns_, [](const Conn& c) { return c.fd < 0; });
    ReportCounts();
  }
  CloseEverything();
}

int ConnectionGate::PollTimeoutMs() const {
  auto next = GateClock::time_point::max();
  for (const Conn& c : conns_) next = std::min(next, c.deadline);
  if (GateClock::now() < accept_paused_until_) next = std::min(next, accept_paused_until_);
  if (next == GateClock::time_point::max()) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - GateClock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

void ConnectionGate::AcceptAll() {
  for (;;) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int fd =
        accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: the pending connection stays in the backlog, so stop polling the
      // listener for a moment instead of spinning on it.
      if (errno == EMFILE || errno == ENFILE) {
        accept_paused_until_ = GateClock::now() + kAcceptPauseOnFdExhaustion;
      }
      return;
    }
    std::string peer = PeerAddress(addr);
    if (open_ >= limits_.max_connections ||
        per_client_[peer] >= limits_.max_connections_per_client) {
      if (callbacks_.refused) callbacks_.refused("too_many_connections", 503, nullptr);
      SendCanned(fd, 503);
      close(fd);
      if (per_client_[peer] == 0) per_client_.erase(peer);
      continue;
    }
    ++open_;
    ++per_client_[peer];
    conns_.push_back(Conn{fd, std::move(peer), GateClock::now() + limits_.head_timeout, {}});
  }
}

void ConnectionGate::Advance(Conn& c) {
  std::array<char, 4096> scratch{};
  if (c.closing) {
    const ssize_t n = recv(c.fd, scratch.data(), scratch.size(), 0);
    if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) return Close(c);
    if (n > 0) c.drained += static_cast<size_t>(n);
    if (c.drained > kMaxDrainBytes) Close(c);
    return;
  }
  const size_t room = limits_.max_head_bytes - c.buffer.size();
  const ssize_t n = recv(c.fd, scratch.data(), std::min(room, scratch.size()), 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) return Close(c);  // the client left before finishing its head
  c.buffer.append(scratch.data(), static_cast<size_t>(n));
  if (const auto end = FindRequestHeadEnd(c.buffer)) return Admit(c, *end);
  if (c.buffer.size() >= limits_.max_head_bytes) Refuse(c, 431, "head_too_large", nullptr);
}

void ConnectionGate::Admit(Conn& c, size_t head_size) {
  auto head = ParseRequestHead(std::string_view(c.buffer).substr(0, head_size));
  if (!head.ok()) return Refuse(c, 400, "bad_request", nullptr);
  const Admission admission = callbacks_.classify(*head);
  if (head->content_length && *head->content_length > admission.max_body_bytes) {
    return Refuse(c, 413, "body_too_large", &*head);
  }
  // Without a length or chunking a request has no body (RFC 9112 6.3), whatever follows.
  const uint64_t body_budget = head->chunked ? 2 * admission.max_body_bytes + kChunkFramingAllowance
                                             : head->content_length.value_or(0);
  const uint64_t extra = std::min<uint64_t>(c.buffer.size() - head_size, body_budget);
  auto req = std::make_shared<GatedRequest>();
  req->fd = c.fd;
  req->peer = c.peer;
  req->buffered = c.buffer.substr(0, head_size + extra);
  req->head_size = head_size;
  req->head = std::move(*head);
  req->socket_budget = body_budget - extra;
  req->deadline = GateClock::now() + limits_.request_timeout;
  WorkerPool& pool = admission.lane == Lane::kProbe ? *probe_pool_ : *main_pool_;
  {
    std::lock_guard lock(mu_);
    in_handlers_.insert(c.fd);
  }
  const bool posted = pool.TryPost([this, req] {
    callbacks_.serve(*req);
    Retire(req->fd, req->peer);
  });
  if (!posted) {
    {
      std::lock_guard lock(mu_);
      in_handlers_.erase(c.fd);
    }
    return Refuse(c, 503, "busy", &req->head);
  }
  c.fd = -1;  // the handler has it now; it comes back through Retire
}

void ConnectionGate::Refuse(Conn& c, int status, std::string_view reason, const RequestHead* head) {
  // Counted before the answer is sent, so a client that has its answer sees the count.
  if (callbacks_.refused) callbacks_.refused(reason, status, head);
  SendCanned(c.fd, status);
  StartClosing(c);
}

void ConnectionGate::StartClosing(Conn& c) {
  shutdown(c.fd, SHUT_WR);
  c.closing = true;
  c.buffer.clear();
  c.buffer.shrink_to_fit();
  c.drained = 0;
  c.deadline = GateClock::now() + limits_.linger_timeout;
}

void ConnectionGate::Close(Conn& c) {
  close(c.fd);
  c.fd = -1;
  --open_;
  if (--per_client_[c.peer] == 0) per_client_.erase(c.peer);
}

void ConnectionGate::Expire() {
  const auto now = GateClock::now();
  for (Conn& c : conns_) {
    if (c.fd < 0 || now < c.deadline) continue;
    if (c.closing) {
      Close(c);
    } else {
      Refuse(c, 408, "head_timeout", nullptr);
    }
  }
}

void ConnectionGate::Retire(int fd, std::string peer) {
  shutdown(fd, SHUT_WR);
  {
    std::lock_guard lock(mu_);
    in_handlers_.erase(fd);
    if (running_) {
      Conn c{fd, std::move(peer), {}, {}};
      retired_.push_back(std::move(c));
      (void)write(wake_write_, "x", 1);
      return;
    }
  }
  close(fd);  // the gate has stopped: no draining
}

void ConnectionGate::TakeRetired() {
  std::array<char, 64> drain{};
  while (read(wake_read_, drain.data(), drain.size()) > 0) {
  }
  std::vector<Conn> retired;
  {
    std::lock_guard lock(mu_);
    retired.swap(retired_);
  }
  for (Conn& c : retired) {
    c.closing = true;
    c.deadline = GateClock::now() + limits_.linger_timeout;
    conns_.push_back(std::move(c));
  }
}

void ConnectionGate::ReportCounts() {
  GateCounts counts;
  for (const Conn& c : conns_) ++(c.closing ? counts.closing : counts.reading_head);
  {
    std::lock_guard lock(mu_);
    counts.in_handlers = in_handlers_.size();
  }
  if (counts == last_counts_) return;
  last_counts_ = counts;
  if (callbacks_.counts) callbacks_.counts(counts);
}

void ConnectionGate::CloseEverything() {
  for (Conn& c : conns_) {
    if (c.fd >= 0) Close(c);
  }
  conns_.clear();
  std::lock_guard lock(mu_);
  for (Conn& c : retired_) close(c.fd);
  retired_.clear();
}

}  // namespace rg::server
