#pragma once
// Reads an SSH server's host keys, as `ssh-keyscan` does: one handshake per key type
// (ssh-ed25519, ecdsa-sha2-nistp256/384/521, RSA), each ended right after the server proved it
// holds the key (no authentication, nothing else sent). libssh2 does the handshakes. Each
// connection has the Git transport's connect timeout, and each handshake its I/O timeout or its
// transfer timeout, whichever is shorter (git_transport.h, CurrentGitTransportLimits); a server
// that does not answer ends the scan. Nothing is written anywhere. Thread-safe.

#include <string>
#include <vector>

#include "reconciler/adapters/known_hosts.h"

namespace rg::adapters {

struct SshKeyScan {
  std::vector<SshHostKey> keys;  // in the order above, each key once
  // Why nothing was read (the connection failed, or no handshake succeeded); empty when a key
  // was read.
  std::string error;
};

// `host` as a name or an address (IPv6 without brackets).
SshKeyScan ScanSshHostKeys(const std::string& host, int port);

}  // namespace rg::adapters
