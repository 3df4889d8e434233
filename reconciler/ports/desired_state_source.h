#pragma once
// Where desired state comes from: a commit of a Git repository, read as a tree (never a
// working tree), its cluster file and JobSpecs parsed and validated. The libgit2 adapter
// (adapters/git_desired_state_source.h) caches parsed specs by blob id, so a pass over an
// unchanged tree parses nothing and a one-file change parses one file.

#include <map>
#include <string>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/result.h"

namespace rg::ports {

struct DesiredSnapshot {
  std::string commit;    // full hex id of the commit read
  std::string ref;       // what was resolved, e.g. "refs/heads/main"
  std::string repo_url;  // the repository as recorded in metadata (credentials stripped)
  core::DesiredState state;
  // File texts by repo-relative path (cluster file and every spec), for artifacts and diffs.
  std::map<std::string, std::string, std::less<>> texts;
};

class DesiredStateSource {
 public:
  virtual ~DesiredStateSource() = default;

  // Brings the local copy up to date with the remote (a no-op for a local repository opened
  // in place) and reads the commit at the tip of `ref` (a branch name, "HEAD", a full ref
  // or a commit id). kTransient when the remote cannot be reached; kNotFound when the ref
  // does not exist; kInvalidInput when the repository is not one.
  virtual core::Result<DesiredSnapshot> Load(const std::string& ref) = 0;
};

}  // namespace rg::ports
