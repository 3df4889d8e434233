#include "reconciler/adapters/ssh_host_keys.h"

#include <git2.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <utility>

#include "reconciler/adapters/git_common.h"
#include "reconciler/adapters/ssh_key_scan.h"
#include "reconciler/core/identity.h"

namespace rg::adapters {
namespace {

namespace fs = std::filesystem;

// The key types whose line is copied into the private home, most preferred first. libgit2
// turns the line's type into libssh2's only host key method (see the header for RSA).
constexpr std::array<const char*, 4> kPreferredTypes = {
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
};

// The process's configuration and what it wrote into the private home.
struct HostKeyState {
  std::mutex mu;
  bool configured = false;
  SshHostKeyConfig config;
  std::map<std::string, std::string> lines;   // host name -> the private home's line
  std::map<std::string, std::string> forced;  // host name -> key type to prefer
  std::set<std::string> warned;               // digests of file contents already warned of
  // The private file's content as this process last wrote it; nullopt before its first write
  // (the file may still hold an earlier process's lines).
  std::optional<std::string> written;
};

HostKeyState& Global() {
  static auto* const state = new HostKeyState();  // never destroyed: used until the process ends
  return *state;
}

std::optional<int> ParsePort(std::string_view text) {
  int port = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port <= 0 || port > 65535) {
    return std::nullopt;
  }
  return port;
}

}  // namespace

std::optional<SshRemote> ParseHostPort(std::string_view authority) {
  SshRemote remote;
  if (!authority.starts_with('[') && std::count(authority.begin(), authority.end(), ':') > 1) {
    remote.host = std::string(authority);  // an IPv6 address alone
  } else if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    remote.host = std::string(authority.substr(1, close - 1));
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (!rest.starts_with(':')) return std::nullopt;
      std::optional<int> port = ParsePort(rest.substr(1));
      if (!port) return std::nullopt;
      remote.port = *port;
    }
  } else {
    const size_t colon = authority.rfind(':');
    remote.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      std::optional<int> port = ParsePort(authority.substr(colon + 1));
      if (!port) return std::nullopt;
      remote.port = *port;
    }
  }
  // A bracketed scp host may hold its port: [host:port]:path.
  if (authority.starts_with('[') && remote.host.find(':') != std::string::npos &&
      std::count(remote.host.begin(), remote.host.end(), ':') == 1) {
    const size_t colon = remote.host.find(':');
    std::optional<int> port = ParsePort(std::string_view(remote.host).substr(colon + 1));
    if (!port) return std::nullopt;
    remote.port = *port;
    remote.host.resize(colon);
  }
  if (remote.host.empty()) return std::nullopt;
  return remote;
}

namespace {

std::string StripUser(std::string_view authority) {
  const size_t at = authority.rfind('@');
  return std::string(at == std::string_view::npos ? authority : authority.substr(at + 1));
}

std::string PrivateKnownHostsPath(const std::string& home) {
  return (fs::path(home) / ".ssh" / "known_hosts").string();
}

// Rewrites the private home's known_hosts from state.lines when it changed: a new file renamed
// over the old one, so that a connection reads one or the other, whole.
void WritePrivateFile(HostKeyState& state) {
  if (state.config.private_home.empty()) return;
  std::string content;
  for (const auto& [name, line] : state.lines) content += line + "\n";
  const std::string path = PrivateKnownHostsPath(state.config.private_home);
  std::error_code ec;
  if (state.written == content && fs::exists(path, ec)) return;
  fs::create_directories(fs::path(path).parent_path(), ec);
  fs::permissions(fs::path(path).parent_path(), fs::perms::owner_all, ec);
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) return;  // the preference only: the check itself does not depend on it
  }
  fs::rename(temp, path, ec);
  if (!ec) state.written = content;
}

// The line to give libgit2 for `name`: the file's key of the forced type, else of the first
// preferred type the file holds for the host; empty when it holds none of them.
std::string PreferenceLine(const std::vector<const KnownHostsEntry*>& entries,
                           const std::string& name, const std::string& forced) {
  std::vector<std::string> order;
  if (!forced.empty()) order.push_back(forced);
  order.insert(order.end(), std::begin(kPreferredTypes), std::end(kPreferredTypes));
  for (const std::string& type : order) {
    for (const KnownHostsEntry* e : entries) {
      if (e->revoked || e->key.type != type) continue;
      std::string line = name;
      line += " " + type + " ";
      line += e->key.Base64();
      return line;
    }
  }
  return "";
}

void WarnOnce(HostKeyState& state, const KnownHostsFile& file) {
  if (file.warnings.empty() || !state.config.warn) return;
  std::string all;
  for (const std::string& w : file.warnings) all += w + "\n";
  if (!state.warned.insert(core::Sha256Hex(all)).second) return;
  for (const std::string& w : file.warnings) state.config.warn(w);
}

std::string NoFileMessage() {
  return "no known_hosts file to check SSH host keys against: HOME is unset; give "
         "--known-hosts FILE (or RAY_GITOPS_KNOWN_HOSTS)";
}

// The scanned key whose verdict is the gravest (revoked, changed, other types, unknown), and
// that verdict; the first key when none is refused.
std::pair<const SshHostKey*, HostKeyCheck> GravestKey(const KnownHostsFile& file,
                                                      const SshRemote& remote,
                                                      const std::vector<SshHostKey>& keys) {
  auto rank = [](HostKeyVerdict v) {
    switch (v) {
      case HostKeyVerdict::kRevoked:
        return 4;
      case HostKeyVerdict::kChanged:
        return 3;
      case HostKeyVerdict::kOtherTypes:
        return 2;
      case HostKeyVerdict::kNotInFile:
        return 1;
      case HostKeyVerdict::kMatch:
        return 0;
    }
    return 0;
  };
  const SshHostKey* worst = &keys.front();
  HostKeyCheck worst_check = CheckHostKey(file, remote.host, remote.port, keys.front());
  for (const SshHostKey& k : keys) {
    HostKeyCheck c = CheckHostKey(file, remote.host, remote.port, k);
    if (rank(c.verdict) > rank(worst_check.verdict)) {
      worst = &k;
      worst_check = std::move(c);
    }
  }
  return {worst, worst_check};
}

std::string KeyList(const std::vector<SshHostKey>& keys) {
  std::string out;
  for (const SshHostKey& k : keys) out += (out.empty() ? "" : ", ") + k.Describe();
  return out;
}

}  // namespace

SshHostKeyConfig KnownHostsFromEnvironment(const std::string& flag) {
  SshHostKeyConfig config;
  if (!flag.empty()) {
    config.known_hosts_file = flag;
    config.source = "--known-hosts";
  } else if (const char* env = std::getenv("RAY_GITOPS_KNOWN_HOSTS");
             env != nullptr && *env != '\0') {
    config.known_hosts_file = env;
    config.source = "RAY_GITOPS_KNOWN_HOSTS";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    config.known_hosts_file = (fs::path(home) / ".ssh" / "known_hosts").string();
    config.source = "$HOME";
  }
  return config;
}

void ConfigureSshHostKeys(SshHostKeyConfig config) {
  git::EnsureLibraryInitialised();  // finds the global git configuration from the real HOME
  HostKeyState& state = Global();
  std::lock_guard<std::mutex> lock(state.mu);
  if (!config.private_home.empty()) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(config.private_home, ec);
    if (!ec) config.private_home = absolute.lexically_normal().string();
    ::setenv("HOME", config.private_home.c_str(), 1);
  }
  state.config = std::move(config);
  state.configured = true;
  state.written.reset();
}

SshHostKeyConfig CurrentSshHostKeyConfig() {
  HostKeyState& state = Global();
  std::lock_guard<std::mutex> lock(state.mu);
  if (!state.configured) {
    state.config = KnownHostsFromEnvironment("");
    state.configured = true;
  }
  return state.config;
}

std::optional<SshRemote> ParseSshRemote(std::string_view url) {
  for (std::string_view scheme : {"ssh://", "ssh+git://", "git+ssh://"}) {
    if (!url.starts_with(scheme)) continue;
    std::string_view rest = url.substr(scheme.size());
    const size_t slash = rest.find('/');
    return ParseHostPort(StripUser(rest.substr(0, slash)));
  }
  if (url.find("://") != std::string_view::npos || url.starts_with('/') || url.starts_with('.')) {
    return std::nullopt;
  }
  // scp-like: [user@]host:path, [user@][host:port]:path, [user@][v6]:path
  const size_t at = url.find('@');
  std::string_view rest = at == std::string_view::npos ? url : url.substr(at + 1);
  size_t colon = 0;
  if (rest.starts_with('[')) {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return std::nullopt;
    }
    colon = close + 1;
  } else {
    colon = rest.find(':');
    const size_t slash = rest.find('/');
    if (colon == std::string_view::npos || colon == 0 ||
        (slash != std::string_view::npos && slash < colon)) {
      return std::nullopt;
    }
  }
  std::optional<SshRemote> remote = ParseHostPort(rest.substr(0, colon));
  if (remote && !rest.starts_with('[')) remote->port = 22;
  return remote;
}

SshHostKeyCheck::SshHostKeyCheck(std::string_view remote_url)
    : remote_(ParseSshRemote(remote_url)) {}

void SshHostKeyCheck::Prepare() {
  if (!remote_) return;
  config_ = CurrentSshHostKeyConfig();
  key_seen_ = false;
  refusal_.reset();
  file_ = config_.known_hosts_file.empty() ? KnownHostsFile{}
                                           : ReadKnownHosts(config_.known_hosts_file);
  HostKeyState& state = Global();
  std::lock_guard<std::mutex> lock(state.mu);
  WarnOnce(state, file_);
  const std::string name = KnownHostsName(remote_->host, remote_->port);
  const std::string line =
      PreferenceLine(EntriesFor(file_, remote_->host, remote_->port), name, state.forced[name]);
  if (line.empty()) {
    state.lines.erase(name);
  } else {
    state.lines[name] = line;
  }
  WritePrivateFile(state);
}

int SshHostKeyCheck::OnCertificate(git_cert* cert) {
  if (cert == nullptr || cert->cert_type != GIT_CERT_HOSTKEY_LIBSSH2 || !remote_) {
    return GIT_PASSTHROUGH;
  }
  key_seen_ = true;
  const auto* hostkey = reinterpret_cast<const git_cert_hostkey*>(cert);
  std::optional<SshHostKey> key;
  if ((hostkey->type & GIT_CERT_SSH_RAW) != 0 && hostkey->hostkey != nullptr) {
    key = ParseSshKeyBlob(std::string_view(hostkey->hostkey, hostkey->hostkey_len));
  }
  std::string message;
  if (!key) {
    message = "the SSH server " + KnownHostsName(remote_->host, remote_->port) +
              " sent a host key that cannot be read; nothing was fetched or sent";
  } else if (config_.known_hosts_file.empty()) {
    message = NoFileMessage() + ". The server " + KnownHostsName(remote_->host, remote_->port) +
              " offered " + key->Describe() + "; nothing was fetched or sent.";
  } else {
    const HostKeyCheck check = CheckHostKey(file_, remote_->host, remote_->port, *key);
    if (check.verdict == HostKeyVerdict::kMatch) return 0;
    message = HostKeyRefusal(file_, remote_->host, remote_->port, *key, check);
  }
  refusal_ = core::Error::Unauthorized(message);
  git_error_set_str(GIT_ERROR_SSH, message.c_str());
  return GIT_ECERTIFICATE;
}

std::optional<core::Error> SshHostKeyCheck::ExplainFailure(const std::string& message,
                                                           bool* retry) {
  *retry = false;
  // libssh2's words when no host key type of ours is one the server has; a server that does
  // not answer ("Failed getting banner"), or a cut connection, is not explained by a scan.
  if (!remote_ || key_seen_ ||
      message.find("Unable to exchange encryption keys") == std::string::npos) {
    return std::nullopt;
  }
  const SshKeyScan scan = ScanSshHostKeys(remote_->host, remote_->port);
  if (scan.keys.empty()) return std::nullopt;
  const std::string name = KnownHostsName(remote_->host, remote_->port);
  for (const SshHostKey& k : scan.keys) {
    if (CheckHostKey(file_, remote_->host, remote_->port, k).verdict != HostKeyVerdict::kMatch) {
      continue;
    }
    // The file holds this key of the server's: ask for its type next time.
    HostKeyState& state = Global();
    std::lock_guard<std::mutex> lock(state.mu);
    if (state.forced[name] == k.type) return std::nullopt;
    state.forced[name] = k.type;
    *retry = true;
    return std::nullopt;
  }
  if (config_.known_hosts_file.empty()) {
    return core::Error::Unauthorized(NoFileMessage() + ". The server " + name + " offers " +
                                     KeyList(scan.keys) + ".");
  }
  const auto [key, check] = GravestKey(file_, *remote_, scan.keys);
  return core::Error::Unauthorized(
      HostKeyRefusal(file_, remote_->host, remote_->port, *key, check) + " (The SSH handshake " +
      "failed: the server offers no key of the types the file lists for it. Its keys: " +
      KeyList(scan.keys) + ".)");
}

std::optional<core::Error> CheckKnownHostBeforeStart(std::string_view remote_url) {
  const std::optional<SshRemote> remote = ParseSshRemote(remote_url);
  if (!remote) return std::nullopt;
  const SshHostKeyConfig config = CurrentSshHostKeyConfig();
  if (config.known_hosts_file.empty()) return core::Error::Unauthorized(NoFileMessage());
  const KnownHostsFile file = ReadKnownHosts(config.known_hosts_file);
  for (const KnownHostsEntry* e : EntriesFor(file, remote->host, remote->port)) {
    if (!e->revoked) return std::nullopt;
  }
  const SshKeyScan scan = ScanSshHostKeys(remote->host, remote->port);
  return core::Error::Unauthorized(
      HostNotInFileMessage(file, remote->host, remote->port, scan.keys, scan.error));
}

}  // namespace rg::adapters
