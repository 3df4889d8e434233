#pragma once
// What `plan`, `sync`, `history` (and the daemon) share: the desired-state repository and the
// status branch (--repo and friends), the Ray client resolved from the global flags with
// cluster.yaml's address as the last fallback, artifacts, and the log output.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/parse_cache.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/core/ownership.h"
#include "reconciler/core/result.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/ports/status_store.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace rg::cli {

// The status branch of `instance` when --status-branch is not given (docs/status-branch.md):
// the default instance keeps ray-gitops/status, any other writes ray-gitops/status-<instance>,
// so instances and clusters sharing a repository each keep their own ledger. (Not
// ray-gitops/status/<i>: Git cannot hold ray-gitops/status as a branch and as a folder of
// branches at once.)
std::string DefaultStatusBranch(std::string_view instance);

// Why `repo` may not be given on the command line, or empty when it may: a URL holding
// credentials (anything but a bare SSH user name; see core::StripUrlCredentials). The message
// names --git-token-file and never repeats the credential.
std::string RepoCredentialProblem(std::string_view repo, std::string_view flag = "--repo");

struct RepoOptions {
  std::string repo;            // --repo DIR|URL (required; refused with credentials in it)
  std::string ref = "HEAD";    // --ref: the remote's default branch unless given
  std::string cache_dir;       // --cache-dir (default $XDG_CACHE_HOME/ray-gitops)
  std::string git_token_file;  // --git-token-file
  std::string git_ssh_key;     // --git-ssh-key
  std::string status_branch = "ray-gitops/status";  // --status-branch, else DefaultStatusBranch
  std::string instance = std::string(core::kDefaultInstance);  // --instance
  std::string cluster_file = "cluster.yaml";                   // --cluster-file
  std::string jobs_dir = "jobs";                               // --jobs-dir
  std::string artifacts_root;  // --artifacts-root (default: cluster.yaml's shared_root)
  bool no_artifacts = false;   // --no-artifacts
  // --previous-repo (repeatable): URLs this repository was reached at before it moved; runs
  // recorded under them are ours (docs/operations.md, "One cluster, several teams").
  std::vector<std::string> previous_repos;
};

// For every command that may reach a Git remote, first thing, before any thread starts: the
// default cache directory resolved from the real HOME into `repo`, then the SSH host key
// check configured (adapters/ssh_host_keys.h: --known-hosts, and libgit2's private HOME under
// the cache directory).
void PrepareGitSsh(const GlobalOptions& global, RepoOptions* repo);

// Registers the repository flags on `cmd`. `with_ref` adds --ref; `with_artifacts` adds
// --artifacts-root and --no-artifacts.
void AddRepoOptions(CLI::App* cmd, RepoOptions* options, bool with_ref, bool with_artifacts);

// Registers --previous-repo on a command that reconciles (plan, sync, run).
void AddPreviousRepoOption(CLI::App* cmd, RepoOptions* options);

// --no-status, --max-stops and --parallelism, as `sync` and `run` take them.
struct PassFlags {
  bool no_status = false;
  int max_stops = 5;
  bool max_stops_given = false;  // --max-stops appeared on the command line
  int parallelism = 4;
  // --dashboard-url: the Ray dashboard as browsers reach it, for links; empty: the Ray address.
  std::string dashboard_url;
  // --gc-finished-after: delete finished runs from Ray this long after they ended (ms); unset:
  // never.
  std::optional<int64_t> gc_finished_after_ms;
};

// Registers the pass flags on `cmd`. `stops_per` completes the --max-stops help ("stop at most
// N jobs<stops_per> (default 5)"). Returns --max-stops, whose count() after the parse says
// whether it was given.
CLI::Option* AddPassFlags(CLI::App* cmd, PassFlags* flags, std::string_view stops_per);

// Copies the pass flags into `options`.
void ApplyPassFlags(const PassFlags& flags, engine::ReconcileOptions* options);

// The parse cache of the repository `workspace` reads (adapters/parse_cache.h), beside its
// clone under --cache-dir; a repository read in place gets one there too, named by its path.
// Scoped by this build: the version and the executable's size and time. A file that cannot be
// used is logged at debug level and rebuilt.
std::shared_ptr<adapters::ParseCache> OpenParseCache(const RepoOptions& options,
                                                     const adapters::GitWorkspace& workspace);

// Saves `cache` when it changed (null: nothing). The cache only saves time, so a failure is
// logged at debug level and the command goes on.
void SaveParseCache(adapters::ParseCache* cache);

// The clone, the desired-state source and the status store over it, sharing one parse cache,
// which is saved when the handles go away (and by the daemon after each pass that parsed
// something): every command that read the repository leaves it up to date.
struct RepoHandles {
  RepoHandles() = default;
  RepoHandles(RepoHandles&&) = default;
  RepoHandles& operator=(RepoHandles&&) = default;
  RepoHandles(const RepoHandles&) = delete;
  RepoHandles& operator=(const RepoHandles&) = delete;
  // A destructor must not throw: a save that fails by throwing (out of memory) leaves the
  // cache file as it was, which only costs the next command its parsing.
  ~RepoHandles() {
    try {
      SaveParseCache(parse_cache.get());
    } catch (...) {  // see above: nothing more to do
    }
  }

  std::shared_ptr<adapters::GitWorkspace> workspace;
  std::unique_ptr<adapters::GitDesiredStateSource> source;
  std::unique_ptr<adapters::GitStatusStore> store;
  std::shared_ptr<adapters::ParseCache> parse_cache;
};
// `read_only`: the store is never written (adapters::GitStatusStoreOptions::read_only).
core::Result<RepoHandles> OpenRepo(const RepoOptions& options, bool read_only = false);

// For a one-shot command that is done with the repository: saves the parse cache, then leaves
// the handles (and what their source and store hold) to the process's exit (leave_to_exit.h).
void LeaveRepoToExit(RepoHandles&& handles);

// Frees what libgit2 caches for the clone: packs' mapped windows, delta bases, objects
// (adapters::GitWorkspace::DropCaches, whose REQUIRES holds). A failure is logged as a warning;
// the next read opens the clone again.
void DropGitCaches(const RepoHandles& handles);

// For the commands that only read (`plan`, `history`), as CI runs them: a local checkout is
// read where it is (its own commits: a shallow clone works, and HEAD is what is checked out),
// and its ledger is origin's status branch, fetched, when origin can be reached; else the local
// or the remote-tracking branch, whichever contains the other. `ledger_from` says which, in
// words. A bare repository is read in place too, its own status branch the ledger (it is the
// remote itself). A URL and same-branch mode go through OpenRepo.
core::Result<RepoHandles> OpenRepoForReading(const RepoOptions& options, std::string* ledger_from);

// What a command that read `store` says when it found no status branch at all: every job is
// taken as never run. Empty when the branch was found.
std::string NoLedgerNote(const adapters::GitStatusStore& store, const RepoOptions& options,
                         const std::string& ledger_from);

}  // namespace rg::cli
