#pragma once
// What `plan`, `sync`, `history` (and the daemon) share: the desired-state repository and the
// status branch (--repo and friends), the Ray client resolved from the global flags with
// cluster.yaml's address as the last fallback, artifacts, and the log output.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/adapters/artifact_writer.h"
#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/core/ownership.h"
#include "reconciler/core/result.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/ports/artifact_sink.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/ports/job_server.h"
#include "reconciler/ports/status_store.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace rg::cli {

// The status branch of `instance` when --status-branch is not given (DESIGN.md 4): the default
// instance keeps ray-gitops/status, any other writes ray-gitops/status-<instance>, so instances
// and clusters sharing a repository each keep their own ledger. (Not ray-gitops/status/<i>:
// Git cannot hold ray-gitops/status as a branch and as a folder of branches at once.)
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
  // recorded under them are ours (DESIGN.md 2.2).
  std::vector<std::string> previous_repos;
};

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
};

// Registers the pass flags on `cmd`. `stops_per` completes the --max-stops help ("stop at most
// N jobs<stops_per> (default 5)"). Returns --max-stops, whose count() after the parse says
// whether it was given.
CLI::Option* AddPassFlags(CLI::App* cmd, PassFlags* flags, std::string_view stops_per);

// Copies the pass flags into `options`.
void ApplyPassFlags(const PassFlags& flags, engine::ReconcileOptions* options);

// The clone, the desired-state source and the status store over it.
struct RepoHandles {
  std::shared_ptr<adapters::GitWorkspace> workspace;
  std::unique_ptr<adapters::GitDesiredStateSource> source;
  std::unique_ptr<adapters::GitStatusStore> store;
};
core::Result<RepoHandles> OpenRepo(const RepoOptions& options);

// A source that hands out one snapshot already loaded (so the address fallback and the pass
// read the same commit, and the remote is fetched once).
// The first Load returns the snapshot already read (the Ray address came from it); a pass that
// finds its view older than a run of ours loads again from `inner` (DESIGN.md 3.2), and asks
// `inner` how commits relate. `inner` must outlive this object.
class LoadedSnapshotSource : public ports::DesiredStateSource {
 public:
  LoadedSnapshotSource(ports::DesiredSnapshot snapshot, ports::DesiredStateSource& inner)
      : snapshot_(std::move(snapshot)), inner_(inner) {}
  core::Result<ports::DesiredSnapshot> Load(const std::string& ref) override {
    if (!first_returned_) {
      first_returned_ = true;
      return snapshot_;
    }
    return inner_.Load(ref);
  }
  ports::CommitRelation Relate(const std::string& commit, const std::string& pass_commit) override {
    return inner_.Relate(commit, pass_commit);
  }

 private:
  ports::DesiredSnapshot snapshot_;
  ports::DesiredStateSource& inner_;
  bool first_returned_ = false;
};

// Ray client options from the global flags and the environment, with `fallback_address`
// (cluster.yaml's) last. kInvalidInput when no address results.
core::Result<adapters::RayClientOptions> ResolveRay(const GlobalOptions& global,
                                                    const std::string& fallback_address);

// The one place artifacts are set up (`sync`, the daemon and `submit`): a writer under
// `artifacts_root`, else under the cluster's shared_root when it is a directory on this
// machine, redacting `secrets`; or null when `no_artifacts` or there is no such directory,
// and then `why_none` says which ("--no-artifacts", "the cluster file has no shared_root",
// "shared_root /x is not a directory on this machine").
std::unique_ptr<adapters::ArtifactWriter> MakeArtifactWriter(bool no_artifacts,
                                                             const std::string& artifacts_root,
                                                             const core::RayConfig* cluster,
                                                             core::Redactor secrets,
                                                             std::string* why_none);

// The artifact sink for a pass (MakeArtifactWriter), redacting the secrets of the process
// and of the whole desired state.
std::unique_ptr<ports::ArtifactSink> MakeArtifactSink(const RepoOptions& options,
                                                      const ports::DesiredSnapshot& snapshot,
                                                      const adapters::RayClientOptions& ray,
                                                      std::string* why_none);

// One pass as `plan` and `sync` run it: opens the repository, loads the snapshot at
// options.ref, resolves Ray (cluster.yaml's address as the fallback), sets up artifacts (when
// `artifacts`) and runs engine::RunReconcilePass. Errors before the pass (the repository, the
// Ray flags) come back as an Error; everything after is in the PassResult.
struct PassRun {
  engine::PassResult result;
  ports::DesiredSnapshot snapshot;
  std::string ray_address;  // credentials stripped
};
core::Result<PassRun> RunPassFromFlags(const GlobalOptions& global, const RepoOptions& repo,
                                       engine::ReconcileOptions options, bool artifacts);

// Wraps each Ray client a pass makes (the daemon times them); an empty one leaves them as is.
using JobServerDecorator =
    std::function<std::unique_ptr<ports::JobServer>(std::unique_ptr<ports::JobServer>)>;

// RunPassFromFlags over a repository opened once (the daemon's clone and parse cache live
// across passes): loads `source` at options.ref, then as RunPassFromFlags. `store` may be null.
core::Result<PassRun> RunPassOnRepo(const GlobalOptions& global, const RepoOptions& repo,
                                    ports::DesiredStateSource& source, ports::StatusStore* store,
                                    engine::ReconcileOptions options, bool artifacts,
                                    const JobServerDecorator& decorate = {});

// The secrets this process holds for `ray` and `repo` (may be null): the Ray token, the
// --ray-header values and the Git token; the one redaction step of DESIGN.md 4 is fed with
// them. The webhook secret is added by the daemon.
core::Redactor ProcessSecrets(const adapters::RayClientOptions& ray, const RepoOptions* repo);

// Adds secrets that every later log line is redacted with (thread-safe; never removed).
void AddLogSecrets(const core::Redactor& secrets);
// `text` with every secret known to the log redactor replaced.
std::string RedactForOutput(std::string_view text);

// Logs what a pass did: one line per action and per failure, the diagnostics, the guard.
void LogPass(const engine::PassResult& result);

// spdlog on stderr at --log-level; with --log-format json one JSON object per line.
void ConfigureLogging(const GlobalOptions& global);

// One log line: the message and key=value fields (text), or {"time","level","msg",fields...}
// (json). `level` is "debug", "info", "warn" or "error".
void LogEvent(std::string_view level, std::string_view message,
              const std::map<std::string, std::string>& fields = {});

}  // namespace rg::cli
