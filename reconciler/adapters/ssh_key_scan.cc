#include "reconciler/adapters/ssh_key_scan.h"

#include <fcntl.h>
#include <libssh2.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "reconciler/adapters/git_transport.h"

namespace rg::adapters {
namespace {

// The host key methods offered in each handshake, one key type each. RSA keys are one type
// whichever signature the server makes with them.
constexpr std::array<const char*, 5> kScanMethods = {
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "rsa-sha2-512,rsa-sha2-256,ssh-rsa",
};

void InitLibssh2() {
  static std::once_flag once;
  std::call_once(once, [] { libssh2_init(0); });
}

class Socket {
 public:
  Socket() = default;
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Connects `sock` to one address within `timeout`; the reason when it cannot.
std::string ConnectScanSocket(Socket& sock, const addrinfo& ai, std::chrono::milliseconds timeout) {
  sock.reset(::socket(ai.ai_family, ai.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai.ai_protocol));
  if (sock.fd() < 0) return std::strerror(errno);
  if (::connect(sock.fd(), ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return std::strerror(errno);
    pollfd p{sock.fd(), POLLOUT, 0};
    int rc = 0;
    do {
      rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) return "no answer for " + std::to_string(timeout.count() / 1000) + " s";
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    if (rc < 0 || ::getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) {
      return std::strerror(errno);
    }
    if (so_error != 0) return std::strerror(so_error);
  }
  // libssh2 waits on a blocking socket itself, bounded by its session timeout.
  ::fcntl(sock.fd(), F_SETFL, ::fcntl(sock.fd(), F_GETFL) & ~O_NONBLOCK);
  return "";
}

std::string Connect(Socket& sock, const std::string& host, int port,
                    std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* info = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &info); rc != 0) {
    return "cannot resolve " + host + ": " + ::gai_strerror(rc);
  }
  std::string why = "no address";
  for (const addrinfo* ai = info; ai != nullptr; ai = ai->ai_next) {
    why = ConnectScanSocket(sock, *ai, timeout);
    if (why.empty()) break;
  }
  ::freeaddrinfo(info);
  return why.empty() ? "" : "cannot connect to " + host + ":" + service + ": " + why;
}

std::string Libssh2Error(LIBSSH2_SESSION* session) {
  char* message = nullptr;
  int len = 0;
  libssh2_session_last_error(session, &message, &len, 0);
  return message != nullptr ? std::string(message, static_cast<size_t>(len)) : "libssh2 error";
}

// The methods of the comma list `methods` that this libssh2 knows for host keys, in order.
// libssh2 1.10's libssh2_session_method_pref drops an unknown method from the list with an
// overlapping memcpy (undefined behaviour), so it is only ever given known ones.
std::string SupportedHostKeyMethods(LIBSSH2_SESSION* session, std::string_view methods) {
  const char** algs = nullptr;
  const int count = libssh2_session_supported_algs(session, LIBSSH2_METHOD_HOSTKEY, &algs);
  if (count <= 0 || algs == nullptr) return "";
  const std::span<const char*> known(algs, static_cast<size_t>(count));
  std::string out;
  size_t start = 0;
  while (start <= methods.size()) {
    size_t end = methods.find(',', start);
    if (end == std::string_view::npos) end = methods.size();
    const std::string_view method = methods.substr(start, end - start);
    if (std::any_of(known.begin(), known.end(),
                    [&](const char* k) { return k != nullptr && method == k; })) {
      if (!out.empty()) out += ',';
      out += method;
    }
    start = end + 1;
  }
  libssh2_free(session, static_cast<void*>(algs));
  return out;
}

// One handshake offering only `methods`: the key the server proved it holds, or the reason.
// *silent: the server did not answer in time or closed the connection (no other key type will
// do better).
std::optional<SshHostKey> Handshake(int fd, const char* methods, std::chrono::milliseconds wait,
                                    std::string* why, bool* silent) {
  LIBSSH2_SESSION* session = libssh2_session_init();
  if (session == nullptr) {
    *why = "cannot start an SSH session";
    return std::nullopt;
  }
  libssh2_session_set_blocking(session, 1);
  libssh2_session_set_timeout(session, static_cast<long>(wait.count()));
  std::optional<SshHostKey> key;
  const std::string known = SupportedHostKeyMethods(session, methods);
  if (known.empty()) {
    *why = std::string("this libssh2 cannot check ") + methods + " host keys";
    libssh2_session_free(session);
    return std::nullopt;
  }
  int rc = libssh2_session_method_pref(session, LIBSSH2_METHOD_HOSTKEY, known.c_str());
  if (rc == 0) rc = libssh2_session_handshake(session, fd);
  if (rc != 0) {
    *why = Libssh2Error(session);
    *silent = rc == LIBSSH2_ERROR_TIMEOUT || rc == LIBSSH2_ERROR_BANNER_RECV ||
              rc == LIBSSH2_ERROR_SOCKET_RECV || rc == LIBSSH2_ERROR_SOCKET_DISCONNECT ||
              rc == LIBSSH2_ERROR_SOCKET_SEND;
  } else {
    size_t len = 0;
    int type = 0;
    const char* raw = libssh2_session_hostkey(session, &len, &type);
    if (raw != nullptr) key = ParseSshKeyBlob(std::string_view(raw, len));
    if (!key) *why = "the server sent no readable host key";
    libssh2_session_disconnect(session, "ray-gitops known-hosts scan: done");
  }
  libssh2_session_free(session);
  return key;
}

}  // namespace

SshKeyScan ScanSshHostKeys(const std::string& host, int port) {
  InitLibssh2();
  const GitTransportLimits limits = CurrentGitTransportLimits();
  // Each handshake is bounded as a Git transfer's reads are, and by its whole-transfer limit.
  const std::chrono::milliseconds wait = std::min(limits.io_timeout, limits.transfer_timeout);
  SshKeyScan scan;
  std::string last_why;
  for (const char* methods : kScanMethods) {
    Socket sock;
    if (std::string why = Connect(sock, host, port, limits.connect_timeout); !why.empty()) {
      // The host cannot be reached: no other key type will do better.
      if (scan.keys.empty()) scan.error = why;
      return scan;
    }
    std::string why;
    bool silent = false;
    std::optional<SshHostKey> key = Handshake(sock.fd(), methods, wait, &why, &silent);
    if (!key) {
      last_why = why;
      if (silent) break;
      continue;
    }
    const bool seen = std::any_of(scan.keys.begin(), scan.keys.end(),
                                  [&](const SshHostKey& k) { return k.blob == key->blob; });
    if (!seen) scan.keys.push_back(std::move(*key));
  }
  if (scan.keys.empty()) {
    scan.error = "no SSH handshake with " + host + ":" + std::to_string(port) +
                 " succeeded (last: " + last_why + ")";
  }
  return scan;
}

}  // namespace rg::adapters
