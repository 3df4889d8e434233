#pragma once
// The HTTP library's view of a request that passed the connection gate: it first reads the
// bytes the gate already received (the head, maybe the start of the body), then the socket,
// but never more than the body's framing allows and never past the request's deadline. So a
// handler thread is bounded in time by the deadline and in memory by the body limit, however
// slowly or much the client sends. Used by one handler thread at a time.

#include <httplib.h>

#include "reconciler/server/connection_gate.h"

namespace rg::server {

class GatedStream final : public httplib::Stream {
 public:
  explicit GatedStream(const GatedRequest& request) : request_(request) {}

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return request_.fd; }

 private:
  // Waits for `events` on the socket until the deadline; false when it passed.
  bool WaitFor(short events) const;

  const GatedRequest& request_;
  size_t replayed_ = 0;
  uint64_t socket_read_ = 0;
};

}  // namespace rg::server
