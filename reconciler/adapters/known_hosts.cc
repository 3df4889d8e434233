#include "reconciler/adapters/known_hosts.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace rg::adapters {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reads one SSH wire-format string (uint32 length, bytes) at `*pos`; nullopt past the end.
std::optional<std::string_view> ReadWireString(std::string_view blob, size_t* pos) {
  if (*pos > blob.size() || blob.size() - *pos < 4) return std::nullopt;
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) {
    len = (len << 8U) | static_cast<unsigned char>(blob[*pos + static_cast<size_t>(i)]);
  }
  *pos += 4;
  if (blob.size() - *pos < len) return std::nullopt;
  std::string_view out = blob.substr(*pos, len);
  *pos += len;
  return out;
}

// The bit length of an SSH mpint (big-endian, a leading zero byte when the top bit is set).
int MpintBits(std::string_view mpint) {
  size_t i = 0;
  while (i < mpint.size() && mpint[i] == '\0') ++i;
  if (i == mpint.size()) return 0;
  int top = 0;
  for (auto b = static_cast<unsigned char>(mpint[i]); b != 0; b >>= 1U) ++top;
  return static_cast<int>((mpint.size() - i - 1) * 8) + top;
}

bool IsBase64Char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '/';
}

bool HasPattern(std::string_view name) {
  return name.find_first_of("*?") != std::string_view::npos || name.starts_with('!');
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

std::string LineList(const std::vector<const KnownHostsEntry*>& entries) {
  std::string out;
  for (const KnownHostsEntry* e : entries) {
    if (!out.empty()) out += ", ";
    out += std::to_string(e->line);
  }
  return out;
}

std::string HmacSha1(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  HMAC(EVP_sha1(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &len);
  return {reinterpret_cast<const char*>(out.data()), len};
}

// Reads the names field into `entry`; the reason when it cannot be used.
std::string ReadNames(std::string_view names, KnownHostsEntry* entry) {
  entry->names_text = std::string(names);
  if (names.starts_with("|1|")) {
    const std::string_view rest = names.substr(3);
    const size_t bar = rest.find('|');
    if (bar == std::string_view::npos) return "a hashed host name needs |1|salt|hash";
    std::optional<std::string> salt = DecodeBase64(rest.substr(0, bar));
    std::optional<std::string> hmac = DecodeBase64(rest.substr(bar + 1));
    if (!salt || !hmac || salt->empty() || hmac->size() != 20) {
      return "the hashed host name is not |1|<base64 salt>|<base64 SHA-1 HMAC>";
    }
    entry->hashed_salt = std::move(*salt);
    entry->hashed_hmac = std::move(*hmac);
    return "";
  }
  if (names.starts_with('|')) return "unknown hashed host name format (only |1| is known)";
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = names.find(',', start);
    if (comma == std::string_view::npos) comma = names.size();
    const std::string_view name = names.substr(start, comma - start);
    if (name.empty()) return "an empty host name in the list";
    if (HasPattern(name)) {
      return "host patterns (*, ?, !) are not supported; the line is skipped (write the host's "
             "names in full)";
    }
    entry->names.push_back(Lower(name));
    start = comma + 1;
  }
  return "";
}

// Parses one non-blank, non-comment line into `entry`; the reason when it is skipped.
std::string ParseLine(std::string_view line, KnownHostsEntry* entry) {
  std::vector<std::string_view> fields = SplitFields(line);
  if (!fields.empty() && fields.front().starts_with('@')) {
    if (fields.front() == "@cert-authority") {
      return "@cert-authority lines are not supported; the line is skipped";
    }
    if (fields.front() != "@revoked") {
      return "unknown marker " + std::string(fields.front()) + "; the line is skipped";
    }
    entry->revoked = true;
    fields.erase(fields.begin());
  }
  if (fields.size() < 3) return "expected host names, a key type and a base64 key";
  if (std::string why = ReadNames(fields[0], entry); !why.empty()) return why;
  std::optional<std::string> blob = DecodeBase64(fields[2]);
  if (!blob) return "the key is not base64";
  std::optional<SshHostKey> key = ParseSshKeyBlob(*blob);
  if (!key) return "the key is not an SSH public key";
  if (key->type != fields[1]) {
    return "the key type " + std::string(fields[1]) + " does not match the key, which is " +
           key->type;
  }
  entry->key = std::move(*key);
  return "";
}

std::string LinesOf(const KnownHostsFile& file, const std::vector<const KnownHostsEntry*>& lines) {
  return file.path + (lines.size() == 1 ? " line " : " lines ") + LineList(lines);
}

std::string SkippedNote(const KnownHostsFile& file) {
  if (file.skipped_lines.empty()) return "";
  std::string lines;
  for (int l : file.skipped_lines) lines += (lines.empty() ? "" : ", ") + std::to_string(l);
  return " (line" + std::string(file.skipped_lines.size() == 1 ? " " : "s ") + lines +
         " of the file were skipped: @cert-authority, host patterns and unreadable lines are not "
         "used)";
}

std::string FileState(const KnownHostsFile& file) {
  if (!file.exists) return " (the file cannot be read: " + file.open_error + ")";
  return SkippedNote(file);
}

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '=') {
      if (i + 2 < text.size()) return std::nullopt;
      ++padding;
    } else if (!IsBase64Char(c) || padding > 0) {
      return std::nullopt;
    }
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0 || static_cast<size_t>(n) < padding) return std::nullopt;
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

std::string EncodeBase64(std::string_view bytes) {
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

std::optional<SshHostKey> ParseSshKeyBlob(std::string_view blob) {
  size_t pos = 0;
  std::optional<std::string_view> type = ReadWireString(blob, &pos);
  if (!type || type->empty() || type->size() > 64) return std::nullopt;
  for (char c : *type) {
    if (std::isgraph(static_cast<unsigned char>(c)) == 0) return std::nullopt;
  }
  return SshHostKey{std::string(*type), std::string(blob)};
}

std::string SshHostKey::Fingerprint() const {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(blob.data()), blob.size(), digest.data());
  std::string b64 =
      EncodeBase64(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  return "SHA256:" + b64;
}

std::string SshHostKey::Base64() const { return EncodeBase64(blob); }

int SshHostKey::Bits() const {
  size_t pos = 0;
  if (!ReadWireString(blob, &pos)) return 0;
  if (type == "ssh-ed25519" || type == "sk-ssh-ed25519@openssh.com") return 256;
  if (type.starts_with("ecdsa-sha2-nistp") || type.starts_with("sk-ecdsa-sha2-nistp")) {
    const std::optional<std::string_view> curve = ReadWireString(blob, &pos);
    if (curve == "nistp256") return 256;
    if (curve == "nistp384") return 384;
    if (curve == "nistp521") return 521;
    return 0;
  }
  if (type == "ssh-rsa") {
    if (!ReadWireString(blob, &pos)) return 0;  // e
    const std::optional<std::string_view> n = ReadWireString(blob, &pos);
    return n ? MpintBits(*n) : 0;
  }
  if (type == "ssh-dss") {
    const std::optional<std::string_view> p = ReadWireString(blob, &pos);
    return p ? MpintBits(*p) : 0;
  }
  return 0;
}

std::string SshHostKey::Label() const {
  if (type == "ssh-ed25519") return "ED25519";
  if (type == "sk-ssh-ed25519@openssh.com") return "ED25519-SK";
  if (type.starts_with("ecdsa-sha2-")) return "ECDSA";
  if (type.starts_with("sk-ecdsa-sha2-")) return "ECDSA-SK";
  if (type == "ssh-rsa") return "RSA";
  if (type == "ssh-dss") return "DSA";
  return "UNKNOWN";
}

std::string SshHostKey::Describe() const { return type + " " + Fingerprint(); }

std::string KnownHostsName(std::string_view host, int port) {
  std::string h = Lower(host);
  if (port == 22 || port <= 0) return h;
  return "[" + h + "]:" + std::to_string(port);
}

bool KnownHostsEntry::Names(std::string_view name) const {
  const std::string lower = Lower(name);
  if (!hashed_salt.empty()) return HmacSha1(hashed_salt, lower) == hashed_hmac;
  return std::find(names.begin(), names.end(), lower) != names.end();
}

KnownHostsFile ParseKnownHosts(std::string_view text, const std::string& path) {
  KnownHostsFile file;
  file.path = path;
  file.exists = true;
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    KnownHostsEntry entry;
    entry.line = number;
    if (std::string why = ParseLine(line.substr(first), &entry); !why.empty()) {
      std::string warning = path;
      warning += ":" + std::to_string(number) + ": ";
      warning += why;
      file.warnings.push_back(std::move(warning));
      file.skipped_lines.push_back(number);
      continue;
    }
    file.entries.push_back(std::move(entry));
  }
  return file;
}

KnownHostsFile ReadKnownHosts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    KnownHostsFile missing;
    missing.path = path;
    missing.open_error = std::strerror(errno);
    return missing;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseKnownHosts(buffer.str(), path);
}

std::vector<const KnownHostsEntry*> EntriesFor(const KnownHostsFile& file, std::string_view host,
                                               int port) {
  const std::string name = KnownHostsName(host, port);
  std::vector<const KnownHostsEntry*> out;
  for (const KnownHostsEntry& e : file.entries) {
    if (e.Names(name)) out.push_back(&e);
  }
  return out;
}

HostKeyCheck CheckHostKey(const KnownHostsFile& file, std::string_view host, int port,
                          const SshHostKey& key) {
  const std::vector<const KnownHostsEntry*> named = EntriesFor(file, host, port);
  HostKeyCheck out;
  // A revoked key is refused whoever the line names, as OpenSSH does.
  for (const KnownHostsEntry& e : file.entries) {
    if (e.revoked && e.key.blob == key.blob) return {HostKeyVerdict::kRevoked, {&e}};
  }
  std::vector<const KnownHostsEntry*> same_type;
  std::vector<const KnownHostsEntry*> other_types;
  for (const KnownHostsEntry* e : named) {
    if (e->revoked) continue;
    if (e->key.blob == key.blob) return {HostKeyVerdict::kMatch, {e}};
    (e->key.type == key.type ? same_type : other_types).push_back(e);
  }
  if (!same_type.empty()) return {HostKeyVerdict::kChanged, same_type};
  if (!other_types.empty()) return {HostKeyVerdict::kOtherTypes, other_types};
  return out;
}

std::string ScanCommand(std::string_view host, int port) {
  std::string target(host);
  if (target.find(':') != std::string::npos) target = "[" + target + "]";
  if (port != 22 && port > 0) target += ":" + std::to_string(port);
  return "ray-gitops known-hosts scan " + target;
}

std::string HostKeyRefusal(const KnownHostsFile& file, std::string_view host, int port,
                           const SshHostKey& key, const HostKeyCheck& check) {
  const std::string name = KnownHostsName(host, port);
  const std::string scan = "`" + ScanCommand(host, port) + "`";
  const std::string offered = key.Describe();
  switch (check.verdict) {
    case HostKeyVerdict::kMatch:
      return "";
    case HostKeyVerdict::kRevoked:
      return "SSH host key REVOKED: " + name + " offered " + offered + ", which " +
             LinesOf(file, check.lines) +
             " marks @revoked; nothing was fetched or sent. Do not trust this key: ask the Git "
             "host's operators which key the server should present.";
    case HostKeyVerdict::kNotInFile:
      return "SSH host key not known: " + name + " is not in the known_hosts file " + file.path +
             FileState(file) + ". The server offered " + offered +
             ". Nothing was fetched or sent. Compare that fingerprint with the ones the Git host "
             "publishes (" +
             scan +
             " prints every key of the host with its fingerprint), then append the "
             "matching known_hosts line to " +
             file.path + ".";
    case HostKeyVerdict::kOtherTypes: {
      std::string listed;
      for (const KnownHostsEntry* e : check.lines) {
        listed += (listed.empty() ? "" : ", ") + e->key.type + " " + e->key.Fingerprint() +
                  " (line " + std::to_string(e->line) + ")";
      }
      return "SSH host key of another type: the known_hosts file " + file.path + " lists " + name +
             " only with " + listed + "; the server offered " + offered +
             ". Nothing was fetched or sent. Compare that fingerprint with the ones the Git host "
             "publishes (" +
             scan + " prints every key of the host), then add its " + key.type + " line to " +
             file.path + ".";
    }
    case HostKeyVerdict::kChanged: {
      std::string old_keys;
      for (const KnownHostsEntry* e : check.lines) {
        old_keys += (old_keys.empty() ? "" : ", ") + e->key.Fingerprint();
      }
      return "SSH host key CHANGED for " + name + ": the server offered " + offered + ", but " +
             LinesOf(file, check.lines) + " holds " + key.type + " " + old_keys +
             ". Someone may be intercepting the connection (man-in-the-middle), or the host's key "
             "was replaced; nothing was fetched or sent. Check the new fingerprint against the "
             "ones the Git host publishes; only if it is theirs, replace the old line (`ssh-keygen "
             "-R '" +
             name + "' -f " + file.path + "` removes the host's lines) with the " + key.type +
             " line " + scan + " prints.";
    }
  }
  return "";
}

std::string HostNotInFileMessage(const KnownHostsFile& file, std::string_view host, int port,
                                 const std::vector<SshHostKey>& scanned,
                                 const std::string& scan_error) {
  const std::string name = KnownHostsName(host, port);
  std::string out = "SSH host key not known: " + name + " is not in the known_hosts file " +
                    file.path + FileState(file) + ". ";
  if (scanned.empty()) {
    out += "Its keys could not be read (" + scan_error + ").";
  } else {
    out += "The host offers ";
    for (size_t i = 0; i < scanned.size(); ++i) {
      out += (i == 0 ? "" : ", ") + scanned[i].Describe();
    }
    out += ".";
  }
  out += " Compare the fingerprints with the ones the Git host publishes (`" +
         ScanCommand(host, port) +
         "` prints each key as a known_hosts line with its fingerprint), then append the matching "
         "line to " +
         file.path + ".";
  return out;
}

}  // namespace rg::adapters
