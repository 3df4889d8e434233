#pragma once
// What the files of the job commands share: job_commands.cc (submit, and the registration of
// every job command) and job_query_commands.cc (status, stop, logs, list).

#include <string>
#include <string_view>

#include "reconciler/cli/global_options.h"
#include "reconciler/core/result.h"

namespace rg::cli {

// The whole file; kInvalidInput "<flag>: cannot read '<path>'" when it cannot be read.
core::Result<std::string> ReadTextFile(const std::string& path, std::string_view flag);

// The address of the cluster file at `config_path` (--config), "" when no path is given;
// kInvalidInput with its diagnostics when the file is invalid.
core::Result<std::string> AddressFromConfig(const std::string& config_path);

// Registers status, stop, logs and list.
void AddJobQueryCommands(CLI::App& app, const GlobalOptions& global, int* exit_code);

}  // namespace rg::cli
