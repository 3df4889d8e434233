#pragma once
// Resolves the `code` folders of a desired state (docs/code-in-the-repository.md): each valid
// spec with `code` gets its folder's Git tree id, the commit the tree came from, and its size;
// a folder that is missing, has a symlink or a submodule on its path or inside it, or whose
// files or zip are over cluster.yaml's code_max_bytes (the files are sized before any is read)
// makes its spec invalid, with the error at `code` (or `code_ref`). Runs where the Git objects are:
// after a commit is read (the Git source), or on a working tree (render, validate, diff). Results
// are kept by tree id, so a pass over a tree seen before reads nothing again.

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "reconciler/adapters/code_package.h"
#include "reconciler/core/desired_state.h"
#include "reconciler/core/result.h"

struct git_repository;

namespace rg::adapters {

class CodeFolders {
 public:
  // Names a commit (full hex id) for a `code_ref`: a tag, a branch or a commit id.
  using RefResolver = std::function<core::Result<std::string>(const std::string& ref)>;

  // From `commit` (full hex id) of `repo`; code_ref resolved by `resolve_ref`.
  void ResolveAtCommit(core::DesiredState& state, git_repository* repo, const std::string& commit,
                       const RefResolver& resolve_ref);
  // From the working tree `workdir` (its files as `git add -A` would commit them); code_ref
  // resolved in `repo` by `resolve_ref`. `repo` may be null when workdir is no Git checkout
  // (then a code_ref is an error).
  void ResolveOnDisk(core::DesiredState& state, git_repository* repo, const std::string& workdir,
                     const RefResolver& resolve_ref);

  // Every spec with `code` invalid for `why` (its folder cannot be read: the checkout Git
  // refuses to open), at `code`, or at `code_ref` for a spec that names one.
  void FailAll(core::DesiredState& state, const core::Error& why);

  // How many folders were looked up (specs sharing a folder at one commit count once) since
  // this object was made; a tree seen before is looked up without being read again.
  int inspections() const { return inspections_; }
  // How many folders were read from Git (their files listed and sized).
  int folder_reads() const { return folder_reads_; }

 private:
  // The folder of a spec at `commit` ("" for the working tree), whose files may add up to at
  // most `max_bytes` (a working tree's folder is refused over it before any file is read).
  using Inspect = std::function<core::Result<CodeFolderInfo>(
      const core::JobSpec&, const std::string& commit, int64_t max_bytes)>;
  // The size of the zip of a spec's folder (built, counted, never held in memory).
  using ZipSize =
      std::function<core::Result<uint64_t>(const core::JobSpec&, const CodeFolderInfo&)>;
  void Resolve(core::DesiredState& state, const Inspect& inspect, const ZipSize& zip_size,
               const RefResolver& resolve_ref, const std::string& head_commit);
  // InspectCodeFolder, answered from inspected_trees_ when the folder's tree was seen before.
  core::Result<CodeFolderInfo> InspectAtCommit(git_repository* repo, const std::string& commit,
                                               const std::string& folder);
  core::Status CheckSize(const core::JobSpec& spec, const CodeFolderInfo& info, int64_t max_bytes,
                         const ZipSize& zip_size);

  // What InspectCodeFolder found for a tree (its successes only): a later commit whose folder
  // has the same tree reads nothing but the entry that names it. Bounded by kKeptInspections.
  std::map<std::string, CodeFolderInfo, std::less<>> inspected_trees_;
  // Tree id + "\n" + limit -> the size check's outcome (the zip is built only for a folder
  // whose bound exceeds the limit).
  std::map<std::string, core::Status, std::less<>> size_checked_;
  int inspections_ = 0;
  int folder_reads_ = 0;
};

// For commands that read a checkout on disk (`render`, `validate`, `diff` of the working tree,
// a one-off `submit`): resolves the code folders of `state` in the working tree `repo_dir`,
// a code_ref among the checkout's own branches, tags and commits. Opens nothing when no spec
// has `code`.
void ResolveCodeOnDisk(core::DesiredState& state, const std::string& repo_dir);

// The zip of spec `spec`'s code as ResolveCodeOnDisk read it: from the working tree, or from
// code_ref's commit.
core::Result<std::string> CodeZipOnDisk(const core::JobSpec& spec, const std::string& repo_dir);

// Reads one file of spec `spec`'s code as ResolveCodeOnDisk read it, by its path inside the
// code folder: from the working tree, or from code_ref's tree. nullopt for a path that is not
// a regular file there (a folder, a symlink, a submodule, nothing).
using CodeFileReader = std::function<std::optional<std::string>(const std::string& path)>;
CodeFileReader CodeFileReaderOnDisk(const core::JobSpec& spec, const std::string& repo_dir);

}  // namespace rg::adapters
