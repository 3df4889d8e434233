#include "reconciler/cli/local_repo.h"

#include <CLI/CLI.hpp>
#include <system_error>

namespace rg::cli {

namespace fs = std::filesystem;

void AddLocalRepoOptions(CLI::App* cmd, LocalRepoOptions* options) {
  cmd->add_option("--repo", options->repo, "desired-state repository directory")
      ->capture_default_str();
  cmd->add_option("--cluster-file", options->cluster_file,
                  "cluster file, relative to the repository")
      ->capture_default_str();
  cmd->add_option("--jobs-dir", options->jobs_dir, "JobSpec folder, relative to the repository")
      ->capture_default_str();
}

std::optional<RepoFile> ResolveRepoFile(const std::string& repo_dir, const std::string& file) {
  std::error_code ec;
  const fs::path repo = fs::absolute(repo_dir, ec).lexically_normal();
  const fs::path given(file);
  fs::path full = given.is_absolute() ? given : repo / given;
  // symlink_status: a link counts as there (even a dangling one) and is never followed.
  auto there = [&ec](const fs::path& p) { return fs::exists(fs::symlink_status(p, ec)); };
  if (!given.is_absolute() && !there(full) && there(given)) {
    full = fs::absolute(given, ec);
  }
  full = full.lexically_normal();
  std::string relative = full.lexically_relative(repo).generic_string();
  if (relative.empty() || relative == "." || relative.starts_with("..")) return std::nullopt;
  return RepoFile{full, relative};
}

}  // namespace rg::cli
