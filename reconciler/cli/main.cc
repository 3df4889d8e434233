#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "reconciler/cli/global_options.h"
#include "reconciler/cli/heap.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"ray-gitops: a declarative GitOps reconciler for Ray jobs"};
  app.require_subcommand(1);
  // Global flags may also follow the subcommand: `ray-gitops list --ray-address URL`.
  app.fallthrough();
  app.set_version_flag("--version", std::string("ray-gitops ") + RG_VERSION);

  rg::cli::GlobalOptions global;
  app.add_option("--ray-address", global.ray_address,
                 "Ray Jobs API address (else RAY_API_SERVER_ADDRESS, then RAY_ADDRESS, then "
                 "cluster.yaml)");
  app.add_option("--ray-token-file", global.ray_token_file,
                 "file holding the Ray auth token (else RAY_AUTH_TOKEN)");
  app.add_option("--ray-header", global.ray_headers,
                 "extra HTTP header K=V for every Ray request (else RAY_JOB_HEADERS JSON)");
  app.add_option("--ray-ca-file", global.ray_ca_file, "CA bundle for an https:// Ray address");
  app.add_flag("--ray-insecure", global.ray_insecure,
               "do not verify the Ray server's TLS certificate");
  app.add_option("--known-hosts", global.known_hosts,
                 "SSH known_hosts file the Git host's key is checked against (else "
                 "RAY_GITOPS_KNOWN_HOSTS, else ~/.ssh/known_hosts)");
  app.add_option("--secrets-dir", global.secrets_dir,
                 "directory of job secrets, one file per reference, read by sync and run at "
                 "every pass (else $CREDENTIALS_DIRECTORY)");
  app.add_option("--log-format", global.log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--log-level", global.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  int exit_code = 0;
  rg::cli::AddValidateCommand(app, global, &exit_code);
  rg::cli::AddRenderCommand(app, global, &exit_code);
  rg::cli::AddVersionCommand(app, global, &exit_code);
  rg::cli::AddJobCommands(app, global, &exit_code);
  rg::cli::AddPlanCommand(app, global, &exit_code);
  rg::cli::AddDiffCommand(app, global, &exit_code);
  rg::cli::AddSyncCommand(app, global, &exit_code);
  rg::cli::AddHistoryCommand(app, global, &exit_code);
  rg::cli::AddRunCommand(app, global, &exit_code);
  rg::cli::AddKnownHostsCommand(app, global, &exit_code);

  // Before any command runs: every command but the daemon runs once and exits; the daemon sets
  // it for each full pass (cli/heap.h).
  app.parse_complete_callback([&app]() {
    if (!app.got_subcommand("run")) rg::cli::ReturnFreedPagesSoon();
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}

}  // namespace

// What a library throws is caught in the adapter that calls it; anything still escaping is a
// bug, reported as one error line rather than std::terminate's abort.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 1;
  }
}
