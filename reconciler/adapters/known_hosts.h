#pragma once
// OpenSSH known_hosts files (sshd(8), "SSH_KNOWN_HOSTS FILE FORMAT") and the host key check
// that ray-gitops makes against one (docs/operations.md, "SSH host keys").
//
// A line is `[marker] names keytype base64-key [comment]`. Names are a comma list of plain
// host names (`host`, or `[host]:port` for a port other than 22) or one hashed name
// (`|1|base64 salt|base64 HMAC-SHA1(salt, name)`, as `ssh-keygen -H` writes it). `@revoked`
// lines reject their key whatever else the file says. `@cert-authority` lines and lines whose
// names hold a pattern (`*`, `?`, a leading `!`) are not supported: they are skipped with a
// warning naming the file and line, so a host named only by them is not in the file. Blank
// lines and `#` comments are ignored; a line that cannot be read is skipped with a warning.
// Reading never fails on the file's content, whatever it holds.
//
// Crypto and encodings come from OpenSSL: HMAC-SHA1 for hashed names, SHA-256 and base64 for
// fingerprints (`SHA256:` and the digest in base64 without padding, as `ssh-keygen -lf`
// prints it). The SSH wire format of a key (RFC 4253 6.6) is read here: only its type name and
// its size in bits are needed, which no library of ours exposes.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rg::adapters {

// A public host key as the server sends it: the SSH wire-format blob.
struct SshHostKey {
  std::string type;  // from the blob: "ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa", ...
  std::string blob;  // raw bytes

  // "SHA256:<base64 of SHA-256(blob), no padding>", as `ssh-keygen -lf` prints it.
  std::string Fingerprint() const;
  // The blob in base64, as a known_hosts line holds it.
  std::string Base64() const;
  // Its size as `ssh-keygen -l` prints it (256 for ed25519, the modulus for RSA); 0 unknown.
  int Bits() const;
  // `ssh-keygen -l`'s name of the type: "ED25519", "ECDSA", "RSA", "DSA", ...
  std::string Label() const;
  // "ssh-ed25519 SHA256:...", for messages.
  std::string Describe() const;
};

// The key in `blob`, with its type read from the blob; nullopt when the blob is not an SSH
// public key (too short, or its type name is not printable).
std::optional<SshHostKey> ParseSshKeyBlob(std::string_view blob);

// Standard base64 with padding (what known_hosts and the hashed names use); nullopt when
// `text` is not that.
std::optional<std::string> DecodeBase64(std::string_view text);
std::string EncodeBase64(std::string_view bytes);

// The name a known_hosts file gives `host` at `port`: "host" for 22, else "[host]:port".
std::string KnownHostsName(std::string_view host, int port);

struct KnownHostsEntry {
  int line = 0;
  bool revoked = false;            // @revoked
  std::vector<std::string> names;  // plain names, lowercased; empty for a hashed line
  std::string hashed_salt;         // hashed name: the salt and the HMAC, raw bytes
  std::string hashed_hmac;
  std::string names_text;  // the names field as written
  SshHostKey key;

  // True when this line names `name` (as KnownHostsName gives it; compared case-insensitively).
  bool Names(std::string_view name) const;
};

struct KnownHostsFile {
  std::string path;
  bool exists = false;  // false: the file could not be opened (then it has no entries)
  std::string open_error;
  std::vector<KnownHostsEntry> entries;
  // "<path>:<line>: <why>" for each line skipped (unsupported or unreadable).
  std::vector<std::string> warnings;
  std::vector<int> skipped_lines;  // the lines of `warnings`, in order
};

// Parses a file's text; `path` names it in warnings.
KnownHostsFile ParseKnownHosts(std::string_view text, const std::string& path);

// Reads and parses the file at `path` (a missing or unreadable file has no entries and
// exists == false).
KnownHostsFile ReadKnownHosts(const std::string& path);

// The entries that name `host` at `port` (revoked ones included), in file order.
std::vector<const KnownHostsEntry*> EntriesFor(const KnownHostsFile& file, std::string_view host,
                                               int port);

// What the file says about the key a server presented.
enum class HostKeyVerdict {
  kMatch,       // a line holds this key for this host
  kRevoked,     // an @revoked line holds this key
  kNotInFile,   // no usable line names the host
  kOtherTypes,  // lines name the host, only with keys of other types
  kChanged,     // lines name the host with a key of this type, a different one
};

struct HostKeyCheck {
  HostKeyVerdict verdict = HostKeyVerdict::kNotInFile;
  // kMatch, kRevoked: the line that decided. kChanged: the lines holding keys of the type.
  // kOtherTypes: the lines of the other types.
  std::vector<const KnownHostsEntry*> lines;
};

HostKeyCheck CheckHostKey(const KnownHostsFile& file, std::string_view host, int port,
                          const SshHostKey& key);

// The message for a check that is not kMatch: the case, the key type and fingerprint, the file
// and lines, and what to do. `host` and `port` as connected to; `scanned` (optional) are keys
// a scan of the host read, listed with their fingerprints.
std::string HostKeyRefusal(const KnownHostsFile& file, std::string_view host, int port,
                           const SshHostKey& key, const HostKeyCheck& check);

// Message (a) without a key in hand (a daemon refusing to start): the host is not in the
// file; the keys a scan read, if any, with their fingerprints, else `scan_error`.
std::string HostNotInFileMessage(const KnownHostsFile& file, std::string_view host, int port,
                                 const std::vector<SshHostKey>& scanned,
                                 const std::string& scan_error);

// `ray-gitops known-hosts scan HOST:PORT`, as a user types it ("host" alone for port 22).
std::string ScanCommand(std::string_view host, int port);

}  // namespace rg::adapters
