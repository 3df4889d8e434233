#pragma once
// Who wrote a commit of the desired-state repository, read from the workspace's clone: what
// `ray-gitops history` shows beside each spec commit.

#include <optional>
#include <string>
#include <string_view>

#include "reconciler/adapters/git_workspace.h"

namespace rg::adapters {

struct CommitAuthor {
  std::string name;
  std::string email;
};

// The author of `commit_hex` (a full or abbreviated commit id), or nullopt when the clone does
// not have that commit (fetched away by a force push, never fetched) or the id is not one.
std::optional<CommitAuthor> LookUpCommitAuthor(GitWorkspace& workspace,
                                               std::string_view commit_hex);

}  // namespace rg::adapters
