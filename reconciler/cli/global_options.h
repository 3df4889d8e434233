#pragma once
// Flags shared by every subcommand, and how each command plugs into main().

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace rg::cli {

struct GlobalOptions {
  std::string ray_address;               // --ray-address
  std::string ray_token_file;            // --ray-token-file (else RAY_AUTH_TOKEN)
  std::vector<std::string> ray_headers;  // --ray-header K=V (else RAY_JOB_HEADERS)
  std::string ray_ca_file;               // --ray-ca-file
  bool ray_insecure = false;             // --ray-insecure
  std::string log_format = "text";       // --log-format text|json
  std::string log_level = "info";        // --log-level
  // --known-hosts: the SSH known_hosts file (else RAY_GITOPS_KNOWN_HOSTS, else
  // $HOME/.ssh/known_hosts; adapters/ssh_host_keys.h).
  std::string known_hosts;
  // --secrets-dir (else $CREDENTIALS_DIRECTORY): job secrets' values, read by `sync` and the
  // daemon at every pass (adapters/secrets_directory.h).
  std::string secrets_dir;
};

// Each Add*Command registers a subcommand whose callback stores its exit status in
// *exit_code. The options object outlives the parse.
void AddValidateCommand(CLI::App& app, const GlobalOptions& global, int* exit_code);
void AddRenderCommand(CLI::App& app, const GlobalOptions& global, int* exit_code);
void AddVersionCommand(CLI::App& app, const GlobalOptions& global, int* exit_code);
// The seed's one-off actions against a Ray head: submit, status, stop, logs, list.
void AddJobCommands(CLI::App& app, const GlobalOptions& global, int* exit_code);

// The reconciler against a desired-state repository: plan, sync, history.
void AddPlanCommand(CLI::App& app, const GlobalOptions& global, int* exit_code);
void AddDiffCommand(CLI::App& app, const GlobalOptions& global, int* exit_code);
void AddSyncCommand(CLI::App& app, const GlobalOptions& global, int* exit_code);
void AddHistoryCommand(CLI::App& app, const GlobalOptions& global, int* exit_code);
// `known-hosts scan HOST[:PORT]`: a host's SSH keys as known_hosts lines with fingerprints.
void AddKnownHostsCommand(CLI::App& app, const GlobalOptions& global, int* exit_code);
// The daemon: reconcile passes on a timer and on triggers, the HTTP endpoints.
void AddRunCommand(CLI::App& app, const GlobalOptions& global, int* exit_code);

}  // namespace rg::cli
