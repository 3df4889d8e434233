#pragma once
// SSH host keys of Git remotes, checked by ray-gitops against one known_hosts file
// (docs/operations.md, "SSH host keys"): `--known-hosts FILE`, else RAY_GITOPS_KNOWN_HOSTS,
// else $HOME/.ssh/known_hosts. Every SSH fetch and push asks libgit2's certificate check
// callback (SshHostKeyCheck::OnCertificate), which passes HTTPS certificates through to the
// normal TLS check and refuses an SSH key the file does not hold for the host, before any data
// moves, with one of the messages of known_hosts.h. There is no switch that turns it off.
//
// What libgit2 1.5.1 does on its own, and how it is controlled:
// - For every SSH connection it reads $HOME/.ssh/known_hosts (and fails when HOME is unset:
//   systemd's DynamicUser and ProtectHome leave it so), and frees what it parsed only when the
//   connection fails: each successful connection leaks the parsed file, about 270 bytes a
//   line (544 KB a fetch with a 2,001-line file; tests/bench/ssh_fetch_memory.cc).
// - It makes libssh2 offer only the key type of the first line it finds for the host; without
//   one, libssh2 picks its own first choice (ECDSA before ed25519), which need not be the type
//   the user's file holds.
// So ConfigureSshHostKeys points HOME, once and before any thread starts, at a private home
// under the cache directory (`<cache-dir>/ssh-home`), and before each transfer Prepare writes
// its `.ssh/known_hosts` with one plain line per host this process reaches: the host's key of
// the type to prefer (ed25519, then ECDSA) from the chosen file. libgit2 then parses a line or
// two instead of the user's file, and makes libssh2 ask for a type the file holds. RSA lines
// are not copied: libgit2 would pin `ssh-rsa` (SHA-1 signatures), which OpenSSH 8.8 and later
// refuse (and libssh2 1.10 has no rsa-sha2 host keys); libssh2's own order then applies. The
// git configuration's global files are located by git_libgit2_init from the real HOME, which
// runs before HOME changes.
// What libgit2 still leaks of that small parse (about 420 bytes a fetch with one ECDSA line,
// 170 with none) is freed with its session (libssh2_knownhost_release.cc), so memory stays
// flat: over 200 fetches the heap grows 22 KB in the last 100 (valgrind finds 88 bytes a fetch
// in two blocks libgit2 loses elsewhere on a connection, outside the host key code) and the
// resident set 56 KB, against 53 MB of heap in the last 100 when libgit2 keeps its parse of a
// 2,001-line file (tests/bench/ssh_fetch_memory.sh).
// When the file lists the host only with types the server does not offer, libssh2's handshake
// fails before the callback; ExplainFailure then reads the server's keys (ssh_key_scan.h) and
// turns that failure into the other-type message with the server's real keys, or, when the
// server does hold a key of the file under another type, has the transfer retried preferring
// that type.
//
// Rejected: an ssh:// transport of our own (git_transport_register with libssh2 directly)
// would leak nothing and choose the types itself, but repeats libgit2's authentication (agent,
// key files, keyboard-interactive) and channel code, about a thousand lines to keep right;
// giving libgit2 no file at all leaks less but leaves the key type to libssh2 (ECDSA first),
// so a file holding only the host's ed25519 key would be refused; setting HOME around each
// transfer races with every other thread's getenv.
//
// Thread-safe once configured.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/adapters/known_hosts.h"
#include "reconciler/core/result.h"

struct git_cert;

namespace rg::adapters {

struct SshHostKeyConfig {
  // The known_hosts file checked against; empty when none can be named (no flag, no
  // RAY_GITOPS_KNOWN_HOSTS, HOME unset): every SSH connection is then refused, saying so.
  std::string known_hosts_file;
  std::string source;  // how it was chosen: "--known-hosts", "RAY_GITOPS_KNOWN_HOSTS", "$HOME"
  // The HOME libgit2 is given; empty: HOME is left alone (libgit2 reads the user's file, and
  // the check is made all the same).
  std::string private_home;
  // Receives "<file>:<line>: <why>" for each line of the file that is skipped, once per
  // content of the file.
  std::function<void(const std::string&)> warn;
};

// The file from `flag` (--known-hosts), else RAY_GITOPS_KNOWN_HOSTS, else
// $HOME/.ssh/known_hosts. Reads the environment: call it before ConfigureSshHostKeys.
SshHostKeyConfig KnownHostsFromEnvironment(const std::string& flag);

// Makes `config` the process's. Initialises libgit2 first, then sets HOME to
// `config.private_home` (when given). REQUIRES: no other thread runs; whatever derives from
// the real HOME (the default cache directory) was computed before.
void ConfigureSshHostKeys(SshHostKeyConfig config);

// The configuration in force (KnownHostsFromEnvironment("") until ConfigureSshHostKeys).
SshHostKeyConfig CurrentSshHostKeyConfig();

struct SshRemote {
  std::string host;  // IPv6 without brackets
  int port = 22;
};

// "host", "host:port", "[host]:port", "[v6]:port" or a bare IPv6 address; port 22 unless
// given. nullopt when the port is not 1 to 65535 or the host is empty.
std::optional<SshRemote> ParseHostPort(std::string_view authority);

// The host and port of an SSH remote (ssh://, ssh+git://, git+ssh://, user@host:path);
// nullopt for any other URL or a local path.
std::optional<SshRemote> ParseSshRemote(std::string_view url);

// The check of one transfer (a fetch or a push) to `remote_url`.
class SshHostKeyCheck {
 public:
  explicit SshHostKeyCheck(std::string_view remote_url);

  bool ssh() const { return remote_.has_value(); }
  // Before the transfer: reads the file (its skipped lines to the config's warn) and writes
  // the private home's line for the host (the type libgit2 makes libssh2 ask for).
  void Prepare();
  // libgit2's certificate check: GIT_PASSTHROUGH for a certificate that is not an SSH host key,
  // 0 for a key the file holds for the host, else GIT_ECERTIFICATE with the message set as
  // libgit2's error (and kept in refusal()).
  int OnCertificate(git_cert* cert);
  // The refusal of the last OnCertificate, if it refused.
  const std::optional<core::Error>& refusal() const { return refusal_; }
  // After a transfer that failed with `message` before any key was checked: when the SSH
  // key exchange failed (no host key type in common), the server's keys are read; the other-type,
  // changed or revoked refusal when they say so; nullopt otherwise, with *retry set when the file
  // holds one of the server's keys of a type not asked for (Prepare again, then retry the transfer
  // once).
  std::optional<core::Error> ExplainFailure(const std::string& message, bool* retry);

 private:
  std::optional<SshRemote> remote_;
  KnownHostsFile file_;
  SshHostKeyConfig config_;
  bool key_seen_ = false;
  std::optional<core::Error> refusal_;
};

// How many known_hosts lists libgit2 left behind were freed with their session
// (libssh2_knownhost_release.cc).
uint64_t KnownHostListsReleased();
// Off: lists made from now on are left to libgit2, which leaks them. Only for the memory
// benchmark, to show the leak avoided; on by default.
void SetKnownHostListRelease(bool on);

// For a daemon about to start: kUnauthorized with the not-in-file message when the file holds
// no usable (not @revoked) line for the SSH remote's host, with the host's fingerprints when
// it can be reached; nullopt when it does, or the remote is not SSH.
std::optional<core::Error> CheckKnownHostBeforeStart(std::string_view remote_url);

}  // namespace rg::adapters
