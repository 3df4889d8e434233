#pragma once
// What `validate` and `render` share: a desired-state repository read from a directory on disk
// (--repo, --cluster-file, --jobs-dir) and FILE arguments that name paths inside it.

#include <filesystem>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace rg::cli {

struct LocalRepoOptions {
  std::string repo = ".";                     // --repo
  std::string cluster_file = "cluster.yaml";  // --cluster-file
  std::string jobs_dir = "jobs";              // --jobs-dir
};

// Registers --repo, --cluster-file and --jobs-dir on `cmd`, defaults shown in --help.
void AddLocalRepoOptions(CLI::App* cmd, LocalRepoOptions* options);

struct RepoFile {
  std::filesystem::path full;  // absolute, normalized
  std::string relative;        // to the repository, '/'-separated
};

// `file` taken relative to the repository (as a pre-commit hook passes it) or, when no such
// file exists there but one does relative to the working directory, relative to that. Empty
// when the result is not inside the repository.
std::optional<RepoFile> ResolveRepoFile(const std::string& repo, const std::string& file);

}  // namespace rg::cli
