#pragma once
// Deadlines and cancellation for every Git network connection of the process (docs/daemon.md:
// every call to Git has a deadline, "Deadlines"; a Git transfer in flight is cancelled at once,
// "Shutdown").
//
// libgit2 1.5 has no timeout option of its own: a remote that accepts the connection and never
// answers blocks a fetch forever. So the process registers its own socket stream with libgit2
// (git_stream_register, GIT_STREAM_STANDARD), which every network transport of libgit2 1.5
// opens its connection through: http:// and git:// read and write through it, https:// wraps
// it in TLS (libgit2's TLS stream asks for the standard stream first), and ssh:// takes its
// socket and hands it to libssh2. Each connection then has:
// - a connect timeout;
// - an I/O timeout: a read or write that moves no byte for this long fails (http, https, git);
// - a transfer timeout: a connection older than this is shut down, whatever it is doing. This
//   is the one bound on ssh://, whose I/O libssh2 does on the socket directly.
// Local remotes (a path or file://) use no socket; Fetch checks for cancellation in its
// progress callbacks instead.
//
// Thread-safe. The stream is registered by git::EnsureLibraryInitialised, so every libgit2 user
// of the process has it, with the default limits until SetGitTransportLimits.

#include <chrono>
#include <cstdint>
#include <string>

namespace rg::adapters {

struct GitTransportLimits {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds io_timeout{60'000};
  std::chrono::milliseconds transfer_timeout{600'000};
};

// The limits for connections opened from now on.
void SetGitTransportLimits(const GitTransportLimits& limits);
GitTransportLimits CurrentGitTransportLimits();

// Shuts down every Git connection open now: the transfer fails at once with "cancelled".
// Connections opened afterwards work normally (the daemon still records status on its way
// out). Local transfers in flight are cancelled at their next progress report.
void CancelGitTransfers();

// Increases with every CancelGitTransfers; a transfer that saw another value when it began
// has been cancelled.
uint64_t GitCancelGeneration();

// Connections currently open through the stream (for tests and diagnostics).
int OpenGitConnections();

namespace git {
// Registers the stream with libgit2. REQUIRES: git_libgit2_init has run. Idempotent.
void RegisterTimedSocketStream();
}  // namespace git

}  // namespace rg::adapters
