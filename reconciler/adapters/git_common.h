#pragma once
// Internal to the libgit2 adapters: library lifetime, owning handles and error mapping.
// Nothing outside reconciler/adapters/git_*.cc and code_package.cc includes this file.

#include <git2.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/core/result.h"

namespace rg::adapters::git {

// git_libgit2_init once per process, with the socket stream of git_transport.h registered;
// the matching shutdown runs at exit.
void EnsureLibraryInitialised();

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const {
    if (p != nullptr) Free(p);
  }
};
template <typename T, void (*Free)(T*)>
using Owned = std::unique_ptr<T, Deleter<T, Free>>;

using Repository = Owned<git_repository, git_repository_free>;
using Remote = Owned<git_remote, git_remote_free>;
using Reference = Owned<git_reference, git_reference_free>;
using Commit = Owned<git_commit, git_commit_free>;
using Tree = Owned<git_tree, git_tree_free>;
using TreeEntry = Owned<git_tree_entry, git_tree_entry_free>;
using Blob = Owned<git_blob, git_blob_free>;
using Object = Owned<git_object, git_object_free>;
using Signature = Owned<git_signature, git_signature_free>;
using RevWalk = Owned<git_revwalk, git_revwalk_free>;
using Odb = Owned<git_odb, git_odb_free>;

// The error of the libgit2 call that just returned `code`, as a value: authentication ->
// kUnauthorized, missing object or ref -> kNotFound, rejected non-fast-forward -> kConflict,
// malformed names -> kInvalidInput, network/TLS/SSH/HTTP -> kTransient, not a repository ->
// kInvalidInput, anything else kFatal. The message is "<what>: <libgit2's message>".
core::Error LastError(int code, std::string_view what);

// When the git_repository_open* of `path` that just returned `code` failed because another
// user owns the repository (libgit2's safe.directory check), what to tell the user: the path,
// both uids, and the two ways out. nullopt for any other failure. libgit2 1.5 reports this case
// as a missing `safe.directory` config value, later versions as GIT_EOWNER: both are matched.
std::optional<std::string> ForeignOwnerProblem(int code, const std::string& path);

std::string OidHex(const git_oid& oid);
std::optional<git_oid> ParseOid(std::string_view hex);

// The commit (full hex id) that `revision` names (anything git_revparse_single reads: a
// branch, a tag, a commit id, main~1), or nullopt when it names none.
std::optional<std::string> RevparseCommit(git_repository* repo, const std::string& revision);

// The blob's bytes, or nullopt when `oid` is not a readable blob.
std::optional<std::string> ReadBlob(git_repository* repo, const git_oid& oid);

}  // namespace rg::adapters::git
