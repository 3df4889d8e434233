#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/cli/ray_client_flags.h"
#include "reconciler/core/render.h"

namespace rg::cli {
namespace {

// The Ray side of `version`: only when an address is known from --ray-address or the
// environment, and never a failure: the command must answer even when Ray is down.
void PrintRayVersion(const GlobalOptions& global) {
  core::Result<adapters::RayClientOptions> options =
      adapters::ResolveRayClientOptions(RayFlagsFromGlobal(global));
  if (!options.ok()) {
    std::cout << "ray: unknown (" << options.error().message() << ")\n";
    return;
  }
  if (options->address.empty()) return;
  const std::string shown = core::StripUrlCredentials(options->address);
  options->connect_timeout = std::chrono::seconds(2);
  options->read_timeout = std::chrono::seconds(5);
  options->max_attempts = 1;
  adapters::RayHttpJobServer server(std::move(*options));
  core::Result<core::RayVersion> version = server.Version();
  if (!version.ok()) {
    std::cout << "ray: unreachable at " << shown << " (" << version.error().ToString() << ")\n";
    return;
  }
  std::cout << "ray " << version->ray_version << " at " << shown << " (Jobs API version "
            << version->version << ")\n";
}

}  // namespace

void AddVersionCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "version", "print the ray-gitops version, and Ray's when an address is known");
  cmd->callback([&global, exit_code] {
    std::cout << "ray-gitops " << RG_VERSION << "\n";
    PrintRayVersion(global);
    *exit_code = 0;
  });
}

}  // namespace rg::cli
