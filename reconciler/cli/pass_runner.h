#pragma once
// One reconcile pass from the command line's flags (`plan`, `sync`, each pass of `run`):
// the snapshot, the Ray connection, the artifacts, the secrets, then engine::RunReconcilePass;
// and the log lines of what it did.

#include <functional>
#include <memory>
#include <string>

#include "reconciler/adapters/artifact_writer.h"
#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/cli/ray_client_flags.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/result.h"
#include "reconciler/engine/narrow_pass.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/ports/artifact_sink.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/ports/job_server.h"
#include "reconciler/ports/status_store.h"

namespace rg::cli {

// A source that hands out one snapshot already loaded (so the address fallback and the pass
// read the same commit, and the remote is fetched once).
// The first Load returns the snapshot already read (the Ray address came from it); a pass that
// finds its view older than a run of ours loads again from `inner` (docs/reconcile.md, "Stale
// views"), and asks `inner` how commits relate. `inner` must outlive this object.
class LoadedSnapshotSource : public ports::DesiredStateSource {
 public:
  LoadedSnapshotSource(ports::DesiredSnapshot snapshot, ports::DesiredStateSource& inner)
      : snapshot_(std::move(snapshot)), inner_(inner) {}
  // The first Load hands the snapshot over (moved, not copied: at 50,000 specs a copy costs).
  core::Result<ports::DesiredSnapshot> Load(const std::string& ref) override {
    if (!first_returned_) {
      first_returned_ = true;
      return std::move(snapshot_);
    }
    return inner_.Load(ref);
  }
  ports::CommitRelation Relate(const std::string& commit, const std::string& pass_commit) override {
    return inner_.Relate(commit, pass_commit);
  }
  core::Result<std::optional<std::string>> RemoteTip(const std::string& ref) override {
    return inner_.RemoteTip(ref);
  }
  core::Result<ports::TipChanges> ChangesAtTip(const ports::DesiredSnapshot& snapshot) override {
    return inner_.ChangesAtTip(snapshot);
  }
  std::string SpecText(const ports::DesiredSnapshot& snapshot, const std::string& path) override {
    return inner_.SpecText(snapshot, path);
  }
  core::Result<std::string> CodeZip(const std::string& tree_id) override {
    return inner_.CodeZip(tree_id);
  }
  core::Result<std::vector<std::string>> CodeChanges(const std::string& from_tree,
                                                     const std::string& to_tree) override {
    return inner_.CodeChanges(from_tree, to_tree);
  }

 private:
  ports::DesiredSnapshot snapshot_;
  ports::DesiredStateSource& inner_;
  bool first_returned_ = false;
};

// Ray client options from the global flags and the environment, with `fallback_address`
// (cluster.yaml's) last, trusted as `fallback_trust` says. kInvalidInput when no address
// results, or when credentials would go to an address under review.
core::Result<adapters::RayClientOptions> ResolveRay(const GlobalOptions& global,
                                                    const std::string& fallback_address,
                                                    AddressTrust fallback_trust);

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
  // What the pass planned from (after a stale view's reload, the newer commit); null when it
  // stopped before planning.
  std::shared_ptr<const ports::DesiredSnapshot> snapshot;
  std::string ray_address;  // credentials stripped
  // Makes a client of the Ray head this pass talked to, as the pass made them (decorated);
  // empty when the pass stopped before it knew the head.
  std::function<std::unique_ptr<ports::JobServer>()> make_server;
};
core::Result<PassRun> RunPassFromFlags(const GlobalOptions& global, const RepoOptions& repo,
                                       engine::ReconcileOptions options, bool artifacts);

// Wraps each Ray client a pass makes (the daemon times them); an empty one leaves them as is.
using JobServerDecorator =
    std::function<std::unique_ptr<ports::JobServer>(std::unique_ptr<ports::JobServer>)>;

// How a pass reaches beyond the repository.
struct PassWiring {
  bool artifacts = false;
  JobServerDecorator decorate;
  // Tries per idempotent Ray call; 0 keeps the client's default (a few, with a short backoff:
  // a one-shot command has nothing above it to try again). The daemon gives 1: its loop is the
  // one backoff layer (docs/daemon.md, "Deadlines"), and a pass never sleeps inside itself.
  int ray_call_attempts = 0;
  // engine::ReconcileDeps::after_load and after_reads of a full pass: lets go of libgit2's
  // caches. Empty: nothing.
  std::function<void()> drop_git_caches;
  // `plan`: the commit is under review (a pull request's, perhaps from a fork), so the Ray
  // token and headers never go to its cluster.yaml address; `sync` and the daemon apply what
  // they read, and trust it.
  AddressTrust cluster_address = AddressTrust::kOperator;

  // The code packages known to be ours across passes (engine::ReconcileDeps::known_packages);
  // null: each pass knows its own.
  engine::KnownPackages* known_packages = nullptr;
  // The daemon's --webhook-secret-file: like the other credential files, never a job secret.
  std::string webhook_secret_file;
};

// RunPassFromFlags over a repository opened once (the daemon's clone and parse cache live
// across passes): loads `source` at options.ref, then as RunPassFromFlags. `store` may be null.
core::Result<PassRun> RunPassOnRepo(const GlobalOptions& global, const RepoOptions& repo,
                                    ports::DesiredStateSource& source, ports::StatusStore* store,
                                    engine::ReconcileOptions options, const PassWiring& wiring);

// A narrow pass (engine/narrow_pass.h) over what changed since `index` was taken, wired as
// RunPassOnRepo wires a full one (the Ray client of the cluster file's address, artifacts with
// every secret known); nullopt when a full pass must run instead, and then `why_not` (when
// given) says why.
core::Result<std::optional<PassRun>> RunNarrowPassOnRepo(
    const GlobalOptions& global, const RepoOptions& repo, ports::DesiredStateSource& source,
    ports::StatusStore* store, engine::ReconcileOptions options, const PassWiring& wiring,
    const engine::PassIndex& index, std::string* why_not = nullptr);

// The secrets this process holds for `ray` and `repo` (may be null): the Ray token, the
// --ray-header values and the Git token; the one redaction step (docs/security.md) is fed with
// them. The webhook secret is added by the daemon.
core::Redactor ProcessSecrets(const adapters::RayClientOptions& ray, const RepoOptions* repo);

// Logs what a pass did: one line per action and per failure, the diagnostics, the guard.
void LogPass(const engine::PassResult& result);

// Logs the pass's clock skew warning, if it has one (`plan` and `sync`; the daemon shows it on
// /readyz, its page and rg_warnings instead of in every pass's log).
void LogClockSkew(const engine::PassResult& result);

}  // namespace rg::cli
