#include <CLI/CLI.hpp>
#include <iostream>

#include "reconciler/cli/global_options.h"

namespace rg::cli {

void AddVersionCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto* cmd = app.add_subcommand("version", "print the ray-gitops version");
  cmd->callback([&global, exit_code] {
    (void)global;
    std::cout << "ray-gitops " << RG_VERSION << "\n";
    *exit_code = 0;
  });
}

}  // namespace rg::cli
