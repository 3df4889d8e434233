#pragma once
// Where desired state comes from: a commit of a Git repository, read as a tree (never a
// working tree), its cluster file and JobSpecs parsed and validated. The libgit2 adapter
// (adapters/git_desired_state_source.h) caches parsed specs by blob id, so a pass over an
// unchanged tree parses nothing and a one-file change parses one file.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reconciler/core/code_change.h"
#include "reconciler/core/desired_state.h"
#include "reconciler/core/result.h"

namespace rg::ports {

struct DesiredSnapshot {
  std::string commit;    // full hex id of the commit read
  std::string ref;       // what was resolved, e.g. "refs/heads/main"
  std::string repo_url;  // the repository as recorded in metadata (credentials stripped)
  // Other URLs of the same repository whose runs are ours (a local checkout's own path when
  // its origin gives repo_url).
  std::vector<std::string> repo_aliases;
  core::DesiredState state;
  // File texts by repo-relative path, for artifacts: the cluster file's, and the specs' when
  // the source reads them up front. A source that does not (the Git source keeps no spec
  // text in a full snapshot: at 50,000 specs they are 35 MB) gives them by SpecText.
  std::map<std::string, std::string, std::less<>> texts;
};

// How the commit a run was submitted from (its gitops.commit) stands to the commit a pass plans
// from (docs/reconcile.md, "Stale views": a pass never acts on a view older than the cluster).
enum class CommitRelation {
  kAncestorOrSame,  // the pass's view includes it
  kDescendant,      // newer than the pass's commit: the view is stale
  // Neither: history was rewritten, the run came from another ref, or the commit was found
  // missing again after a later fetch (a force push removed it). The branch is the truth.
  kDiverged,
  kUnknown,  // not in the local copy: pushed after the pass's fetch, or force-pushed away
};

inline std::string_view CommitRelationName(CommitRelation r) {
  switch (r) {
    case CommitRelation::kAncestorOrSame:
      return "ancestor";
    case CommitRelation::kDescendant:
      return "descendant";
    case CommitRelation::kDiverged:
      return "diverged";
    case CommitRelation::kUnknown:
      return "unknown";
  }
  return "unknown";
}

// What changed among the JobSpec files from one commit to another, for a narrow pass
// (engine/narrow_pass.h): the new versions parsed, the old ones only by path.
struct SpecChanges {
  // Of the new commit: its cluster file, and of its spec files only those added or modified
  // (checked among themselves and against the cluster file as Load checks them), their texts.
  DesiredSnapshot snapshot;
  // Spec paths of the old commit that were modified or removed.
  std::vector<std::string> gone;
};

// What the tip check before a pass's stops finds at the tip of the branch after a fresh fetch
// (docs/reconcile.md, "Stale views").
struct TipChanges {
  std::string commit;  // the tip, full hex id
  // What of the pass's desired state differs there, repository paths, sorted: the cluster
  // file, spec files under the jobs folder (or the folder itself, when more than spec files
  // changed in it), the code folders of the pass's specs. Empty: the tip moved without
  // changing the desired state (a README, the status folder of a same-branch setup).
  std::vector<std::string> changed;
};

class DesiredStateSource {
 public:
  virtual ~DesiredStateSource() = default;

  // Brings the local copy up to date with the remote (a no-op for a local repository opened
  // in place) and reads the commit at the tip of `ref` (a branch name, "HEAD", a full ref
  // or a commit id). kTransient when the remote cannot be reached; kNotFound when the ref
  // does not exist; kInvalidInput when the repository is not one.
  virtual core::Result<DesiredSnapshot> Load(const std::string& ref) = 0;

  // Brings the local copy up to date and says which commit `ref` names now, without reading
  // its tree: how the daemon tells that nothing changed since its last pass (docs/daemon.md,
  // "Passes that change nothing"). nullopt: this source cannot tell cheaply (the caller then
  // loads). A Load right after it may reuse the fetch it made.
  virtual core::Result<std::optional<std::string>> Head(const std::string& ref) {
    (void)ref;
    return std::optional<std::string>();
  }

  // The commit the remote's `ref` names now, asked of the remote itself: one ls-remote, no
  // fetch, nothing read from the local copy. `ref` is a snapshot's (DesiredSnapshot::ref): a
  // full ref such as "refs/heads/main". nullopt when nothing can move under a pass: this
  // source has no remote (a repository read in place, a fake), or `ref` is no ref (a commit
  // id). kNotFound when the remote no longer has the ref; kTransient and kUnauthorized as for
  // Load. Every call has the deadline of a fetch.
  virtual core::Result<std::optional<std::string>> RemoteTip(const std::string& ref) {
    (void)ref;
    return std::optional<std::string>();
  }

  // Brings the local copy up to date (a fetch) and says what of `snapshot`'s desired state (one
  // this source loaded) differs at the commit its ref names now. The default, for sources
  // that cannot compare commits: any other commit differs as a whole.
  virtual core::Result<TipChanges> ChangesAtTip(const DesiredSnapshot& snapshot) {
    core::Result<std::optional<std::string>> head = Head(snapshot.ref);
    if (!head.ok()) return head.error();
    TipChanges tip;
    tip.commit = head->value_or(snapshot.commit);
    if (tip.commit != snapshot.commit) tip.changed.emplace_back("the desired state");
    return tip;
  }

  // The spec files that differ between commit `since` and the commit `ref` names, read from
  // the local copy as the last Head or Load left it (no fetch). nullopt when this source
  // cannot tell cheaply, or when anything but spec files changed under the jobs folder or in
  // the cluster file (a link, a submodule, the folder itself), or more than `max_files` spec
  // files changed: the caller then loads the whole commit.
  virtual core::Result<std::optional<SpecChanges>> LoadChanges(const std::string& ref,
                                                               const std::string& since,
                                                               size_t max_files) {
    (void)ref;
    (void)since;
    (void)max_files;
    return std::optional<SpecChanges>();
  }

  // The text of the spec file at `path` in `snapshot` (one this source loaded), for the
  // artifacts of its submission: from snapshot.texts when it is there, else read now. Empty
  // when it cannot be read. The default has only snapshot.texts.
  virtual std::string SpecText(const DesiredSnapshot& snapshot, const std::string& path) {
    auto it = snapshot.texts.find(path);
    return it == snapshot.texts.end() ? std::string() : it->second;
  }

  // The zip of the code folder whose Git tree is `tree_id` (docs/code-in-the-repository.md),
  // byte for byte what every other call gives for that tree. The default, for sources without
  // Git objects (test fakes): kFatal.
  virtual core::Result<std::string> CodeZip(const std::string& tree_id) {
    return core::Error::Fatal("this source cannot pack code (tree " + tree_id + ")");
  }
  // The paths (relative to the folder, sorted) of the files that differ between two trees of
  // a code folder: added, removed or changed. kNotFound when a tree is not in the local copy.
  virtual core::Result<std::vector<std::string>> CodeChanges(const std::string& from_tree,
                                                             const std::string& to_tree) {
    (void)to_tree;
    return core::Error::NotFound("this source cannot compare code trees (tree " + from_tree + ")");
  }

  // How `commit` stands to `pass_commit` (both full hex ids), as far as the local copy knows;
  // a later Load (a fresh fetch) may answer differently. Never fails: a commit that cannot be
  // read is kUnknown. The default, for sources without history (test fakes), counts every
  // commit as part of the view.
  virtual CommitRelation Relate(const std::string& commit, const std::string& pass_commit) {
    (void)commit;
    (void)pass_commit;
    return CommitRelation::kAncestorOrSame;
  }
};

// The planner's and the diff's way to list a code change (core/code_change.h), asked of
// `source` (which must outlive it); a change it cannot list comes back empty.
inline core::CodeChangeLister CodeChangeListerOf(DesiredStateSource& source) {
  return [&source](const std::string& from, const std::string& to) {
    core::Result<std::vector<std::string>> files = source.CodeChanges(from, to);
    return files.ok() ? std::move(*files) : std::vector<std::string>();
  };
}

}  // namespace rg::ports
