#pragma once
// The daemon's own copy of the desired-state repository: a bare clone under a cache
// directory, brought up to date by Fetch. Every --repo form (a local path, file://, https://,
// ssh://, git@host:path) goes through the clone, so reads never touch anyone's working tree
// and the status branch is pushed back to the same remote. Credentials come from a token file
// (HTTPS basic auth), an SSH key file, or the SSH agent, never from the URL, and the URL is
// recorded with credentials stripped. url.<base>.insteadOf rules of the Git configuration are
// applied to the URL the remote is reached at, as git applies them. Not thread-safe: one pass
// uses it at a time.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/result.h"

struct git_repository;
struct git_remote;

namespace rg::adapters {

struct GitWorkspaceOptions {
  std::string repo;       // a local path or a URL, as given to --repo
  std::string cache_dir;  // empty: DefaultGitCacheDir()
  // HTTPS: a file holding a token, sent as the basic-auth password with `token_user` as the
  // user name. Read on each authentication, so a rotated token is picked up.
  std::string token_file;
  std::string token_user = "x-access-token";
  // SSH: a private key ("<key>.pub" is used when it exists). Empty: the SSH agent.
  std::string ssh_key_file;
  // Fetch only this branch of a remote repository (e.g. the status branch of a CI checkout's
  // origin); empty: every branch. A local remote is always mirrored whole (see Fetch).
  std::string only_branch;
  // How many blobs a long read takes from the clone between two reopens (NoteBlobRead).
  int blobs_per_cache_drop = 4096;
};

// $XDG_CACHE_HOME/ray-gitops, else $HOME/.cache/ray-gitops, else ./.ray-gitops-cache.
std::string DefaultGitCacheDir();

// The clone's directory name under the cache dir: a readable stem of the URL and 16 hex digits
// of the SHA-256 of the URL with credentials stripped, so two repos never share a clone and a
// token change keeps the same clone.
std::string GitCacheDirName(std::string_view remote_url);

// What libgit2 is given as the remote: local paths made absolute, credentials stripped.
std::string NormaliseRepoUrl(std::string_view repo);

// True when `repo` names a repository on this machine: a path or a file:// URL.
bool IsLocalRepo(std::string_view repo);

// The URL of `repo`'s remote "origin" as NormaliseRepoUrl gives it (a relative path taken from
// the checkout), or "" when it has none.
std::string OriginUrl(git_repository* repo);

class GitWorkspace {
 public:
  // Creates (or reopens) the bare clone; no network traffic. kInvalidInput when `repo` is a
  // local path or file:// URL that is not a Git repository, or the cache cannot be created.
  static core::Result<std::shared_ptr<GitWorkspace>> Open(const GitWorkspaceOptions& options);

  // A local repository read where it is, for commands that only read commits (`diff`): no
  // clone, no fetch (Fetch does nothing), no push. Revisions resolve as in the repository
  // itself (HEAD, HEAD~1, origin/main, a short commit id). kInvalidInput when `path` is not a
  // local Git repository.
  static core::Result<std::shared_ptr<GitWorkspace>> OpenInPlace(const std::string& path);

  ~GitWorkspace();
  GitWorkspace(const GitWorkspace&) = delete;
  GitWorkspace& operator=(const GitWorkspace&) = delete;

  // The repository URL as given (NormaliseRepoUrl): what the clone is made from.
  const std::string& url() const { return url_; }
  // The repository as recorded in `gitops.repo` (docs/operations.md): url(), except that a local
  // checkout (not a bare repository) with an origin remote records its origin's URL.
  const std::string& recorded_url() const { return recorded_url_; }
  // Other URLs of this repository whose runs are ours: url() when recorded_url() differs.
  const std::vector<std::string>& aliases() const { return aliases_; }
  const std::string& clone_path() const { return clone_path_; }
  // OpenInPlace: the repository is read where it is.
  bool in_place() const { return in_place_; }
  // The working tree of an in-place checkout; empty for a bare repository or a clone.
  const std::string& workdir() const { return workdir_; }
  // The bare clone. Owned by the workspace; a Fetch that re-creates a deleted clone replaces
  // it, so hold it (and its objects) only between two Fetch calls.
  git_repository* repository() const { return repo_; }
  // Where Fetch and PushCommit reach the remote: url() after the insteadOf rules.
  const std::string& remote_url() const { return remote_url_; }

  // Fetches every branch and tag, as a mirror (refs/heads/* to refs/heads/*, pruning deleted
  // ones; every ref of a local remote). Re-creates the clone first when its directory was
  // deleted, and compacts it first when it holds more than 16 packs. kTransient when the remote
  // cannot be reached, the transfer timed out or was cancelled (git_transport.h), kUnauthorized on
  // refused credentials.
  core::Status Fetch();
  int fetches() const { return fetches_; }
  // Time spent in Fetch and PushCommit since the workspace was opened, in microseconds: the
  // Git network part of a pass (the daemon's own time is the rest).
  int64_t network_us() const { return network_us_.load(); }
  // How often Fetch compacted the clone (its packs and loose objects into one pack).
  int compactions() const { return compactions_; }

  // The commits the remote's refs among `names` point at now (full ref names; "<tag>^{}" for
  // an annotated tag's commit), by name; a name the remote lacks is left out. One ls-remote:
  // nothing is fetched or written. Errors as Fetch's; kInvalidInput for a repository read in
  // place (it has no remote).
  core::Result<std::map<std::string, std::string>> RemoteRefs(
      const std::set<std::string, std::less<>>& names);

  // The remote's default branch as of the last Fetch, e.g. "refs/heads/main"; empty when
  // unknown (an empty remote).
  const std::string& remote_head() const { return remote_head_; }

  // The clone's copy of the remote's branch, as of the last Fetch (or PushCommit):
  // "refs/heads/<branch>" for a branch name or "refs/heads/<branch>". The clone mirrors the
  // remote's ref names (see Fetch for why).
  static std::string TrackingRef(std::string_view branch);

  // Pushes the local commit `commit_hex` to refs/heads/<branch> on the remote, as a
  // fast-forward only. kConflict when the remote refused it because the branch moved.
  core::Status PushCommit(const std::string& commit_hex, const std::string& branch);

  // Frees what libgit2 keeps for the clone between calls (cached objects, packs' delta bases:
  // several MB after a pass over 10,000 files, scattered through the heap) by opening it
  // again. The daemon calls it after a full pass. A workspace read in place keeps its handle.
  // REQUIRES: no libgit2 object of the repository is alive (none is between passes).
  core::Status DropCaches();
  // Called after each blob that a long read (every spec or status file of a commit) takes
  // from the clone: every GitWorkspaceOptions::blobs_per_cache_drop of them, DropCaches.
  // libgit2 keeps up to 16 MiB of delta bases for each pack it reads from while the clone is
  // open: a cold `plan` at 50,000 specs over a clone of four packs peaked at 292 to 297 MB,
  // and at 234 MB, as over one pack, once reopened every 4,096 blobs (docs/performance.md).
  // True when the clone was reopened: the caller takes repository() afresh. A reopen that
  // fails is an error naming the clone and the cause; no clone is open then, so the caller
  // stops its read and reports it (never a blob read from a null repository, nor a status
  // file skipped for it). REQUIRES: as DropCaches.
  core::Result<bool> NoteBlobRead();
  // How often NoteBlobRead reopened the clone.
  int cache_drops() const { return cache_drops_; }

 private:
  GitWorkspace() = default;
  // The bare clone's files are all there (not deleted under a running daemon).
  bool CloneIntact() const;
  // Writes every object reachable from a ref of the clone into one pack, removes the other
  // packs and the loose objects, and reopens the clone. REQUIRES: as OpenClone.
  core::Status Compact();
  // Opens (or makes) the clone at clone_path_ and the in-memory remote over it, freeing any
  // earlier ones. REQUIRES: no libgit2 object of the old repository is alive.
  core::Status OpenClone();

  GitWorkspaceOptions options_;
  std::string url_;
  std::string recorded_url_;
  std::vector<std::string> aliases_;
  std::string remote_url_;
  std::string clone_path_;
  git_repository* repo_ = nullptr;
  // One in-memory remote for the workspace's lifetime, made once in Open (see there why).
  git_remote* remote_ = nullptr;
  std::string remote_head_;
  int fetches_ = 0;
  std::atomic<int64_t> network_us_{0};
  int compactions_ = 0;
  int blobs_read_ = 0;  // by NoteBlobRead since the clone was last opened
  int cache_drops_ = 0;
  bool in_place_ = false;
  std::string workdir_;
};

}  // namespace rg::adapters
