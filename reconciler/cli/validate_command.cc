#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "reconciler/cli/global_options.h"
#include "reconciler/cli/local_repo.h"
#include "reconciler/cli/logging.h"
#include "reconciler/core/diagnostic.h"
#include "reconciler/spec/spec_entry.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::cli {
namespace {

namespace fs = std::filesystem;

struct ValidateOptions : LocalRepoOptions {
  std::vector<std::string> files;
};

std::string Plural(size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// A FILE argument names a path inside the repository: relative to the repository first (as a
// pre-commit hook passes them), else relative to the working directory.
struct SelectedFile {
  std::string repo_relative;
  std::optional<core::Diagnostic> problem;
};

// `known`: every path the repository read reported on (specs valid or not, links and
// submodules among them, and the cluster file). A FILE is never opened here: what is known
// was read without following links, and anything else is only described.
SelectedFile SelectFile(const std::string& file, const ValidateOptions& options,
                        const std::set<std::string>& known) {
  const std::optional<RepoFile> resolved = ResolveRepoFile(options.repo, file);
  if (!resolved) {
    return {"", core::Diagnostic{file, 0, 0, "not inside the repository " + options.repo}};
  }
  const std::string& relative = resolved->relative;
  if (known.contains(relative)) return {relative, std::nullopt};
  // Inside a link or a submodule that is itself an error: that error is the answer.
  for (fs::path up = fs::path(relative).parent_path(); !up.empty(); up = up.parent_path()) {
    if (known.contains(up.generic_string())) return {up.generic_string(), std::nullopt};
  }
  std::error_code ec;
  const std::string link = spec::FirstLinkAlong(fs::absolute(options.repo, ec), relative);
  if (!link.empty() && link != relative) {
    return {relative,
            core::Diagnostic{file, 0, 0, link + " is a symbolic link; nothing is read through it"}};
  }
  if (!fs::exists(fs::symlink_status(resolved->full, ec))) {
    return {relative, core::Diagnostic{file, 0, 0, "file not found"}};
  }
  if (relative != options.cluster_file && !spec::IsSpecPath(relative, options.jobs_dir)) {
    return {relative, core::Diagnostic{file, 0, 0,
                                       "neither the cluster file nor a JobSpec (*.yaml or *.yml "
                                       "under " +
                                           options.jobs_dir + "/)"}};
  }
  return {relative, core::Diagnostic{file, 0, 0, "is not a regular file"}};
}

// Every path the state reports on, valid or not.
std::set<std::string> KnownPaths(const core::DesiredState& state, const std::string& cluster) {
  std::set<std::string> known{cluster};
  for (const auto& job : state.jobs) known.insert(job.path);
  for (const auto& bad : state.invalid) known.insert(bad.path);
  return known;
}

int RunValidate(const ValidateOptions& options) {
  const core::DesiredState state =
      spec::LoadDesiredStateFromDirectory(options.repo, options.cluster_file, options.jobs_dir);
  core::Diagnostics diagnostics = state.AllDiagnostics();
  size_t valid_specs = state.jobs.size();

  if (!options.files.empty()) {
    std::set<std::string> selected{options.cluster_file};
    const std::set<std::string> known = KnownPaths(state, options.cluster_file);
    core::Diagnostics argument_problems;
    for (const auto& file : options.files) {
      SelectedFile choice = SelectFile(file, options, known);
      if (choice.problem) {
        argument_problems.push_back(*choice.problem);
      } else {
        selected.insert(choice.repo_relative);
      }
    }
    std::erase_if(diagnostics,
                  [&](const core::Diagnostic& d) { return !selected.contains(d.path); });
    diagnostics.insert(diagnostics.end(), argument_problems.begin(), argument_problems.end());
    valid_specs = static_cast<size_t>(
        std::count_if(state.jobs.begin(), state.jobs.end(),
                      [&](const core::JobSpec& job) { return selected.contains(job.path); }));
  }

  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const auto& a, const auto& b) {
    return std::tie(a.path, a.line, a.column) < std::tie(b.path, b.line, b.column);
  });
  std::set<std::string> files_with_errors;
  ReportDiagnostics(diagnostics);
  for (const auto& d : diagnostics) files_with_errors.insert(d.path);
  if (!diagnostics.empty()) {
    std::cout << Plural(diagnostics.size(), "error") << " in "
              << Plural(files_with_errors.size(), "file") << "\n";
    return 1;
  }
  std::cout << "ok: " << options.cluster_file << " and " << Plural(valid_specs, "jobspec")
            << (valid_specs == 1 ? " is" : " are") << " valid\n";
  return 0;
}

}  // namespace

void AddValidateCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto options = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand(
      "validate",
      "validate the cluster file and the JobSpecs on disk (all of them, or only FILEs); exit 0 "
      "valid, 1 invalid");
  AddLocalRepoOptions(cmd, options.get());
  cmd->add_option("files", options->files,
                  "report only these files (relative to the repository) and the cluster file");
  cmd->callback([options, &global, exit_code] {
    (void)global;
    *exit_code = RunValidate(*options);
  });
}

}  // namespace rg::cli
