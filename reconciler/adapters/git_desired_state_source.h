#pragma once
// ports::DesiredStateSource over a GitWorkspace: fetches, resolves a ref, and reads the cluster
// file and every JobSpec from the commit's tree (never a working tree). Parse results are
// cached by blob id (JobSpecs by blob id and path, since the default name derives from the
// path), so a Load of an unchanged tree parses nothing and a one-file change parses one file.
// The checks across files run on every Load; they are cheap and parse nothing. With a
// persistent ParseCache, a blob this source has not seen is looked up there before it is read
// and parsed, so a fresh source over an unchanged tree parses nothing either.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reconciler/adapters/code_folders.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/schedule_zones.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/spec/spec_loader.h"

struct git_repository;
struct git_tree;
struct git_oid;

namespace rg::adapters {

class ParseCache;

struct GitDesiredStateOptions {
  std::string cluster_file = "cluster.yaml";
  std::string jobs_dir = "jobs";
  // Files under this folder are never read as specs: the status folder when the status branch
  // is the watched branch (same-branch mode). Empty: nothing excluded.
  std::string excluded_dir;
  // Parse results kept on disk across runs (adapters/parse_cache.h), looked up when a blob is
  // not in this source's own map; null: none.
  std::shared_ptr<ParseCache> parse_cache;
  // Set: the specs Load, Read and LoadChanges give are a pass's, bound to this instance's
  // identity (core::BindSpecToInstance) and without what only `diff` and the field diffs of
  // `plan` need: the parsed document and each field's position. At 50,000 specs those are
  // 100 MB. ReadWhole and ReadWholeSpec still give them. Unset: specs as parsed.
  std::optional<std::string> lean_instance;
  // Where the time zones of scheduled specs are read from (adapters/schedule_zones.h); empty:
  // $TZDIR, else /usr/share/zoneinfo.
  std::string zoneinfo_dir;
};

class GitDesiredStateSource : public ports::DesiredStateSource {
 public:
  GitDesiredStateSource(std::shared_ptr<GitWorkspace> workspace, GitDesiredStateOptions options);

  // `ref`: "HEAD" (the remote's default branch), a branch name or "refs/heads/<b>" (the
  // remote's branch as just fetched), another full ref ("refs/tags/v1"), a tag name, or a
  // full commit id.
  core::Result<ports::DesiredSnapshot> Load(const std::string& ref) override;

  // Fetches and resolves `ref` as Load does, without reading the commit's tree.
  core::Result<std::optional<std::string>> Head(const std::string& ref) override;

  // The spec files that changed since `since`, from the local copy as the last Head or Load
  // left it (ports::DesiredStateSource::LoadChanges). The changed files are parsed here, not
  // looked up in the persistent cache (a narrow pass reads a few files; the cache file is
  // large), and counted as parses; the next Read puts them there.
  core::Result<std::optional<ports::SpecChanges>> LoadChanges(const std::string& ref,
                                                              const std::string& since,
                                                              size_t max_files) override;

  // As Load, from the local copy as it is: no fetch. For reading older commits after a Load
  // (the spec a run was submitted from).
  core::Result<ports::DesiredSnapshot> Read(const std::string& ref);
  // As Read, with every spec whole (documents and positions kept, whatever lean_instance
  // says), not bound to an instance.
  core::Result<ports::DesiredSnapshot> ReadWhole(const std::string& ref);
  // The spec file at `path` in commit `commit` (a full hex id), parsed whole and not bound to
  // an instance; nullopt when there is no such file or it is not a valid spec.
  core::Result<std::optional<core::JobSpec>> ReadWholeSpec(const std::string& commit,
                                                           const std::string& path);

  // A spec's text read from the snapshot's commit: full snapshots hold none.
  std::string SpecText(const ports::DesiredSnapshot& snapshot, const std::string& path) override;

  // The deterministic zip of a code folder's tree, from the clone's objects.
  core::Result<std::string> CodeZip(const std::string& tree_id) override;
  // The files that differ between two trees of a code folder, by libgit2's tree diff.
  core::Result<std::vector<std::string>> CodeChanges(const std::string& from_tree,
                                                     const std::string& to_tree) override;

  // One ls-remote of the snapshot's ref (a branch or a tag; an annotated tag by its commit).
  // nullopt for a workspace read in place, and for a ref that is no full ref (a commit id, a
  // revision such as main~1): nothing moves under those.
  core::Result<std::optional<std::string>> RemoteTip(const std::string& ref) override;
  // Fetches, resolves the snapshot's ref, and compares the two commits' trees by object id:
  // the cluster file's entry, the jobs folder's (spec files only, as Load reads them: the
  // excluded folder, other files and hidden folders under it do not count), and the code
  // folder of each valid spec with `code` (against the tree the snapshot recorded, at the new
  // commit, or at code_ref's commit as it resolves now). Nothing is parsed.
  core::Result<ports::TipChanges> ChangesAtTip(const ports::DesiredSnapshot& snapshot) override;

  // Ancestry by libgit2 in the clone. A commit that was not included in the view (missing,
  // or a descendant) and still is not after a later Fetch is no longer on the branch (a force
  // push removed it, or the branch moved back): kDiverged, so that it costs no further fetch.
  ports::CommitRelation Relate(const std::string& commit, const std::string& pass_commit) override;

  // Forgets the parse results kept in memory (the persistent cache, when there is one, still
  // has them): the daemon's memory between passes.
  // The cluster file's parse is kept: it is small, and a narrow pass needs it.
  void ReleaseMemory() { std::map<std::string, CachedSpec>().swap(spec_cache_); }

  // Files parsed since construction (for tests and metrics); results taken from the
  // persistent cache are not parses.
  int parses() const { return spec_parses_ + cluster_parses_; }
  int spec_parses() const { return spec_parses_; }
  int cluster_parses() const { return cluster_parses_; }

 private:
  struct ResolvedRef {
    std::string name;  // what the snapshot reports as `ref`
    std::string commit;
  };
  core::Result<ResolvedRef> Resolve(const std::string& ref);

  struct CachedSpec {
    std::shared_ptr<const spec::LoadedJobSpec> loaded;
  };
  struct CachedCluster {
    std::string text;
    spec::Parsed<core::RayConfig> parsed;
  };

  // A blob not in this source's map: from the persistent cache, else read and parsed (and put
  // there). `blob_id` is the blob's hex id.
  core::Result<CachedSpec> ParseSpecBlob(git_repository* repo, const git_oid& oid,
                                         const std::string& blob_id, const std::string& path);
  // The spec blob at `path`, parsed. With a persistent cache, from there (nothing is kept
  // here: a spec held twice would be copied by the checks across files); else from this
  // source's map or parsed, and kept in `next_cache` for the next Load.
  core::Result<CachedSpec> SpecFile(git_repository* repo, const git_oid& oid,
                                    const std::string& path,
                                    std::map<std::string, CachedSpec>& next_cache);
  // A spec as a pass keeps it when lean_instance is set (and `lean`), else as given.
  std::shared_ptr<const spec::LoadedJobSpec> ForPass(
      std::shared_ptr<const spec::LoadedJobSpec> loaded, bool lean) const;
  core::Result<ports::DesiredSnapshot> ReadCommit(const std::string& ref, bool lean);
  // What is known only once the specs of `commit` are read: the zones of scheduled specs
  // (adapters::ResolveScheduleZones) and the trees of code folders (adapters::CodeFolders).
  void ResolveAfterLoading(core::DesiredState& state, const std::string& commit);
  // Puts pending_specs_ into the parse cache (a full read loads it anyway) and clears them.
  void PutPendingSpecs();
  core::Result<CachedCluster> ParseClusterBlob(git_repository* repo, const git_oid& oid,
                                               const std::string& blob_id);

  // The cluster file of `tree`, parsed (from the cache when its blob was read before); nullopt
  // when the tree has none. Its text goes into `snapshot`, its cache entry into `next_cache`.
  // `keep` marks a result found in memory as used in the persistent cache (which loads it).
  core::Result<std::optional<spec::Parsed<core::RayConfig>>> ReadClusterFile(
      git_repository* repo, git_tree* tree, ports::DesiredSnapshot& snapshot,
      std::map<std::string, CachedCluster>& next_cache, bool keep = true);

  std::shared_ptr<GitWorkspace> workspace_;
  GitDesiredStateOptions options_;
  // Keyed by blob id + '\0' + path; only entries of the last tree read are kept. Unused when
  // there is a persistent parse cache (it keeps them).
  std::map<std::string, CachedSpec> spec_cache_;
  std::map<std::string, CachedCluster> cluster_cache_;  // by blob id
  ZoneCache zones_;           // the zones of scheduled specs, each read once
  CodeFolders code_folders_;  // the trees of specs' code folders
  int spec_parses_ = 0;
  int cluster_parses_ = 0;
  // Commits Relate found outside the view -> the workspace's fetch count at that time.
  std::map<std::string, int> outside_view_since_;
  // Specs LoadChanges parsed, for the persistent cache: put there by the next Read, which
  // loads the cache anyway (a narrow pass does not).
  struct PendingSpec {
    std::string blob_id;
    std::string path;
    std::shared_ptr<const spec::LoadedJobSpec> loaded;
  };
  std::vector<PendingSpec> pending_specs_;
};

}  // namespace rg::adapters
