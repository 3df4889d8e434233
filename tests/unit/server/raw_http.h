#pragma once
// Raw loopback sockets for the HTTP server tests: clients that misbehave on purpose (slow
// heads, huge declared bodies, idle connections), which no HTTP client library will play.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

namespace rg::server::testing {

using RawClock = std::chrono::steady_clock;

// A connected TCP socket to 127.0.0.1:port; closed on destruction. fd() < 0 when the
// connection failed.
class RawSocket {
 public:
  explicit RawSocket(int port) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawSocket() {
    if (fd_ >= 0) close(fd_);
  }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  int fd() const { return fd_; }

  // Sends all of `data`; false once the peer has closed or reset the connection.
  bool Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads until the peer closes the connection or `timeout` passes. nullopt on timeout (the
  // connection is still open); what arrived otherwise (a reset after a response keeps it).
  std::optional<std::string> ReadUntilClosed(std::chrono::milliseconds timeout) {
    const auto deadline = RawClock::now() + timeout;
    std::string out;
    char buf[4096];
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - RawClock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
};

// The status code of a raw HTTP response ("HTTP/1.1 413 ..."), 0 when there is none.
inline int StatusCodeOf(std::string_view response) {
  if (!response.starts_with("HTTP/1.") || response.size() < 12) return 0;
  return std::stoi(std::string(response.substr(9, 3)));
}

// One GET over a fresh connection; the response, or nullopt when none came within `timeout`.
inline std::optional<std::string> RawGet(int port, std::string_view path,
                                         std::chrono::milliseconds timeout) {
  RawSocket s(port);
  if (s.fd() < 0) return std::nullopt;
  if (!s.Send("GET " + std::string(path) + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) {
    return std::nullopt;
  }
  auto response = s.ReadUntilClosed(timeout);
  if (response && response->empty()) return std::nullopt;
  return response;
}

// This process's resident set size in bytes (VmRSS of /proc/self/status).
inline long ResidentBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6)) * 1024;
  }
  return -1;
}

}  // namespace rg::server::testing
