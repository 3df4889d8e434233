#include "reconciler/adapters/git_commit_author.h"

#include "reconciler/adapters/git_common.h"

namespace rg::adapters {

namespace {
constexpr size_t kMaxHexLength = 40;  // a SHA-1 commit id
}  // namespace

std::optional<CommitAuthor> LookUpCommitAuthor(GitWorkspace& workspace,
                                               std::string_view commit_hex) {
  if (commit_hex.size() < 4 || commit_hex.size() > kMaxHexLength) return std::nullopt;
  git_oid oid;
  if (git_oid_fromstrn(&oid, commit_hex.data(), commit_hex.size()) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  git_commit* raw = nullptr;
  if (git_commit_lookup_prefix(&raw, workspace.repository(), &oid, commit_hex.size()) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  git::Commit commit(raw);
  const git_signature* author = git_commit_author(commit.get());
  if (author == nullptr) return std::nullopt;
  CommitAuthor out;
  out.name = author->name != nullptr ? author->name : "";
  out.email = author->email != nullptr ? author->email : "";
  return out;
}

}  // namespace rg::adapters
