// known_hosts files (adapters/known_hosts.h) on arbitrary bytes. Properties: nothing crashes or
// trips a sanitizer; every line is either an entry or a warning naming the file and that line,
// or blank or a comment; each entry names itself (its first plain name, at the port it
// holds) and its key checks as a match there; fingerprints are "SHA256:" and 43 characters.

#include <cstddef>
#include <cstdint>
#include <string>

#include "reconciler/adapters/known_hosts.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// `name` as a host and port ("[h]:p" or "h"); false when it is neither.
bool SplitName(const std::string& name, std::string* host, int* port) {
  if (!name.starts_with('[')) {
    *host = name;
    *port = 22;
    return true;
  }
  const size_t close = name.find("]:");
  if (close == std::string::npos) return false;
  try {
    *port = std::stoi(name.substr(close + 2));
  } catch (...) {
    return false;
  }
  *host = name.substr(1, close - 1);
  return *port > 0 && rg::adapters::KnownHostsName(*host, *port) == name;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const rg::adapters::KnownHostsFile file = rg::adapters::ParseKnownHosts(text, "kh");
  RG_FUZZ_CHECK(file.warnings.size() == file.skipped_lines.size());
  for (size_t i = 0; i < file.warnings.size(); ++i) {
    RG_FUZZ_CHECK(
        file.warnings[i].starts_with("kh:" + std::to_string(file.skipped_lines[i]) + ":"));
  }
  int previous = 0;
  for (const rg::adapters::KnownHostsEntry& e : file.entries) {
    RG_FUZZ_CHECK(e.line > previous);
    previous = e.line;
    const std::string fingerprint = e.key.Fingerprint();
    RG_FUZZ_CHECK(fingerprint.starts_with("SHA256:") && fingerprint.size() == 7 + 43);
    (void)e.key.Bits();
    std::string host;
    int port = 0;
    if (e.revoked || e.names.empty() || !SplitName(e.names.front(), &host, &port)) continue;
    RG_FUZZ_CHECK(e.Names(rg::adapters::KnownHostsName(host, port)));
    const rg::adapters::HostKeyCheck check = rg::adapters::CheckHostKey(file, host, port, e.key);
    RG_FUZZ_CHECK(check.verdict == rg::adapters::HostKeyVerdict::kMatch ||
                  check.verdict == rg::adapters::HostKeyVerdict::kRevoked);
  }
  return 0;
}
