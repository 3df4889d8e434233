// `ray-gitops known-hosts scan HOST[:PORT]`: the host's SSH keys, each as the fingerprint line
// `ssh-keygen -lf` prints (as a comment) followed by its known_hosts line, as `ssh-keyscan`
// prints it. Nothing is written: the user compares the fingerprints with the ones the Git host
// publishes and adds the matching lines to the file themselves (docs/operations.md, "SSH host
// keys"). Exit 0 when a key was read, 1 otherwise with the reason.

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "reconciler/adapters/known_hosts.h"
#include "reconciler/adapters/ssh_host_keys.h"
#include "reconciler/adapters/ssh_key_scan.h"
#include "reconciler/cli/global_options.h"

namespace rg::cli {
namespace {

int ScanHost(const std::string& target) {
  const std::optional<adapters::SshRemote> remote = adapters::ParseHostPort(target);
  if (!remote) {
    std::cerr << "error: known-hosts scan takes HOST or HOST:PORT (or [HOST]:PORT), got \""
              << target << "\"\n";
    return 1;
  }
  const adapters::SshKeyScan scan = adapters::ScanSshHostKeys(remote->host, remote->port);
  if (scan.keys.empty()) {
    std::cerr << "error: no host key read from " << target << ": " << scan.error << "\n";
    return 1;
  }
  const std::string name = adapters::KnownHostsName(remote->host, remote->port);
  std::cout << "# Compare each fingerprint with the ones the Git host publishes; add to your "
               "known_hosts file only the lines whose fingerprints match.\n";
  for (const adapters::SshHostKey& key : scan.keys) {
    std::cout << "# " << key.Bits() << " " << key.Fingerprint() << " " << name << " ("
              << key.Label() << ")\n"
              << name << " " << key.type << " " << key.Base64() << "\n";
  }
  return 0;
}

}  // namespace

void AddKnownHostsCommand(CLI::App& app, const GlobalOptions& /*global*/, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("known-hosts", "SSH host keys of Git remotes");
  cmd->require_subcommand(1);
  CLI::App* scan = cmd->add_subcommand(
      "scan",
      "print HOST's SSH keys as known_hosts lines with their fingerprints (writes no file)");
  auto target = std::make_shared<std::string>();
  scan->add_option("host", *target, "HOST or HOST:PORT (default port 22)")->required();
  scan->callback([target, exit_code]() { *exit_code = ScanHost(*target); });
}

}  // namespace rg::cli
