#include "reconciler/server/gated_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace rg::server {

namespace {

void AddressOf(const sockaddr_storage& addr, std::string& ip, int& port) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (addr.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &v4.sin_addr, text.data(), text.size());
    port = ntohs(v4.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &v6.sin6_addr, text.data(), text.size());
    port = ntohs(v6.sin6_port);
  }
  ip = text.data();
}

}  // namespace

bool GatedStream::WaitFor(short events) const {
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(request_.deadline - GateClock::now());
    if (left.count() <= 0) return false;
    pollfd p{request_.fd, events, 0};
    const int rc = poll(&p, 1, static_cast<int>(left.count()));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
}

bool GatedStream::is_readable() const {
  if (replayed_ < request_.buffered.size()) return true;
  return socket_read_ < request_.socket_budget && WaitFor(POLLIN);
}

bool GatedStream::is_writable() const { return WaitFor(POLLOUT); }

ssize_t GatedStream::read(char* ptr, size_t size) {
  if (replayed_ < request_.buffered.size()) {
    const size_t n = std::min(size, request_.buffered.size() - replayed_);
    std::memcpy(ptr, request_.buffered.data() + replayed_, n);
    replayed_ += n;
    return static_cast<ssize_t>(n);
  }
  // The body's framing is used up: the end of the request, whatever else the client sends.
  if (socket_read_ >= request_.socket_budget) return 0;
  size = static_cast<size_t>(std::min<uint64_t>(size, request_.socket_budget - socket_read_));
  for (;;) {
    if (!WaitFor(POLLIN)) return -1;
    const ssize_t n = recv(request_.fd, ptr, size, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n > 0) socket_read_ += static_cast<uint64_t>(n);
    return n;
  }
}

ssize_t GatedStream::write(const char* ptr, size_t size) {
  for (;;) {
    if (!WaitFor(POLLOUT)) return -1;
    const ssize_t n = send(request_.fd, ptr, size, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    return n;
  }
}

void GatedStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(request_.fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    AddressOf(addr, ip, port);
  }
}

void GatedStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(request_.fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    AddressOf(addr, ip, port);
  }
}

}  // namespace rg::server
