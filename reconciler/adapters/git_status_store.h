#pragma once
// ports::StatusStore on a branch of the desired-state repository, in the same
// GitWorkspace clone as the source. Commits are built in memory from the tip's tree (no working
// tree, no index on disk) and pushed as fast-forwards; a push refused because another writer
// moved the branch is answered by fetching, re-applying the same changes on the new tip and
// pushing again, up to `max_push_attempts` times. See docs/status-branch.md.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "reconciler/adapters/git_workspace.h"
#include "reconciler/core/status_markdown.h"
#include "reconciler/ports/status_store.h"

struct git_repository;
struct git_oid;

namespace rg::adapters {

class ParseCache;

inline constexpr std::string_view kDefaultStatusBranch = "ray-gitops/status";

struct GitStatusStoreOptions {
  // The branch; may be the watched branch itself (same-branch mode: give the desired-state
  // source excluded_dir = "status" so the status files are never read as specs).
  std::string branch = std::string(kDefaultStatusBranch);
  std::string author_name = "ray-gitops";
  std::string author_email = "ray-gitops@localhost";
  std::string markdown_path = "STATUS.md";
  core::StatusMarkdownHeader markdown_header;
  int max_push_attempts = 5;
  // The ref the ledger is read from, when not the branch itself (refs/heads/<branch>): e.g.
  // refs/remotes/origin/<branch> in a checkout read in place. Such a store is only read.
  std::string read_ref;
  // A store that is only read (`plan`, `history`): it keeps neither the STATUS.md rows nor the
  // decoded records a later write or pass would reuse (at 50,000 jobs, about 90 MB).
  bool read_only = false;
  // Test hook, not for production use: called after a commit is built and before it is pushed,
  // with the 0-based attempt number, so a test can move the remote branch at exactly that
  // moment and exercise the retry deterministically.
  std::function<void(int attempt)> before_push;
  // Decoded status records kept on disk across runs (adapters/parse_cache.h), by blob id; null:
  // none. Only records that decoded are kept; the name check stays the store's.
  std::shared_ptr<ParseCache> parse_cache;
};

// Where a checkout read in place keeps the status branch: as a local branch, as origin's
// remote-tracking branch (refs/remotes/origin/<branch>), or both. Of both, the one that
// contains the other; when they have diverged, the remote-tracking one (the remote is the
// truth), and `note` says so. `ref` is empty when the checkout holds neither.
struct LocalLedgerRef {
  std::string ref;
  std::string note;  // for people: which was chosen and why
};
LocalLedgerRef ChooseLocalLedgerRef(git_repository* repo, const std::string& branch);

// The STATUS.md rows of one status folder, every record's of every owner (GitStatusStore keeps
// them between writes).
struct StatusRowCache {
  // The folder they are of: the id in hex of status/ in a tree, "" for a tree without status/;
  // nullopt: none.
  std::optional<std::string> folder;
  core::StatusMarkdownHeader header;  // rendered with it (core::SameRowHeader)
  core::StatusMarkdownRows rows;
};

class GitStatusStore : public ports::StatusStore {
 public:
  GitStatusStore(std::shared_ptr<GitWorkspace> workspace, GitStatusStoreOptions options);

  // Fetches, then reads status/<name>.yaml at the tip of the remote branch: the records of
  // `scope` (core::MatchLedger; records written before ledgers had owners are adopted), never
  // another instance's. Everything else under status/ that is not a record named after its
  // file (unreadable YAML, a record of another name, status/notes.txt, a folder, a link) is
  // skipped and listed by SkippedFiles, with the job name when the path gives one. kFatal when
  // the branch holds records of scope.instance for another cluster: two daemons of one
  // instance on two clusters share this branch (the message names both clusters and the fix);
  // the pass then fails, and the daemon is not ready until a person fixes the setup.
  core::Result<core::Ledger> ReadLedger(const ports::LedgerScope& scope) override;
  std::vector<ports::SkippedStatusFile> SkippedFiles() const override { return skipped_; }

  // See ports::StatusStore: no fetch, and of status/ only the entries of `names`, looked up by
  // name. Records come from the store's own map or are decoded from YAML, not from the
  // persistent parse cache (which would be loaded whole for a few files).
  core::Result<std::optional<core::Ledger>> ReadLedgerOf(
      const ports::LedgerScope& scope, const std::vector<std::string>& names) override;

  // Builds on the tip as last fetched (ReadLedger earlier in the pass fetched it) and fetches
  // again only after a refused push. A change whose record differs from the one on the branch
  // only in bookkeeping (see core::MeaningfulChange) is left out, so passes that learn nothing
  // new commit nothing. A record is joined with the one on the tip (core::MergeRecords), so a
  // second writer of this ledger that recorded more meanwhile loses nothing: a run it saw end
  // is not turned back into an active one, an attempt it added is kept.
  // STATUS.md's header takes the Spec-Commit trailer when
  // markdown_header.spec_commit is empty. kConflict when every push attempt was refused.
  // A change is refused, and its file left untouched, when its name is not a valid job name
  // (it would become a tree path), when the file there could not be read (a skipped file), or
  // when the file holds the record of another instance or cluster than the written record's
  // (for a deletion: the scope of the last ReadLedger). The other changes are still committed
  // and pushed; then the refusals are returned as one error, kConflict when a file of another
  // owner was in the way, else kInvalidInput.
  // The store keeps STATUS.md's rows of the status folder it last read whole (ReadLedger) or
  // wrote (StatusRowCache). When the tip's status/ is that folder (the same tree id) and the
  // rows were rendered for the same repository and branches, only the files of the changed
  // names are read (by path) and STATUS.md is assembled from the kept rows: the same tree as
  // reading every file gives, at a cost in proportion to the changes.
  core::Result<std::string> Write(const ports::StatusChanges& changes,
                                  const ports::StatusCommit& message) override;

  // Fetches, then walks the branch from its tip along first parents and every other parent,
  // newest first, keeping the commits whose status/<name>.yaml differs from their first
  // parent's.
  core::Result<std::vector<ports::StatusHistoryEntry>> History(const std::string& name) override;

  // Fetches, then the tip of the branch ("" when it does not exist); nothing is read.
  core::Result<std::optional<std::string>> Tip() override;
  // The tip the last ReadLedger read, or the commit the last Write built on or made.
  std::optional<std::string> KnownTip() const override { return known_tip_; }

  // Forgets the records decoded so far (the persistent cache, when there is one, still has
  // them): the daemon's memory between passes. STATUS.md's rows are kept (about 250 bytes a
  // job): they spare the next Write reading every file.
  void ReleaseMemory() { std::unordered_map<std::string, core::StatusRecord>().swap(decoded_); }

  // Copies the STATUS.md rows kept across passes into allocations of the calling thread: the
  // daemon calls it from its loop's thread after a full pass, so that they do not pin pages
  // of the pass thread's arena (docs/daemon.md, "Memory").
  void CompactMemory() {
    StatusRowCache copy = row_cache_;
    row_cache_ = std::move(copy);
  }

  int push_attempts() const { return push_attempts_; }
  // Status files decoded from YAML since construction; records taken from the store's own map
  // (by blob id, across passes) or from the persistent cache are not counted.
  int status_parses() const { return status_parses_; }
  // Records held decoded for a later write or pass (none with a held parse cache).
  size_t held_records() const { return decoded_.size(); }
  // Reads of a whole status folder since construction: every ReadLedger, and every Write
  // attempt that could not take the incremental path.
  int full_status_reads() const { return full_status_reads_; }
  // Write attempts that read only the changed names' files.
  int incremental_writes() const { return incremental_writes_; }
  // Status commits whose new blobs were written as one pack rather than loose (a write of at
  // least 100 files).
  int packed_writes() const { return packed_writes_; }
  // Whether the last ReadLedger or History found the branch (false: no ledger at all).
  bool found_branch() const { return found_branch_; }

  // "subject\n\nbody...\n\nKey: value\n..." with empty sections left out: the trailers are the
  // last paragraph, as Git's trailer format wants, Spec-Commit first, then Ray-Cluster, then
  // any other by name. Line breaks inside a subject, body line or trailer value become spaces.
  // The message is built by engine/status_commit.h; this only lays it out.
  static std::string FormatCommitMessage(const ports::StatusCommit& message);

 private:
  // One build and push on the tip as fetched: the commit id ("" when nothing changed), or
  // nullopt when the push was refused because another writer moved the branch.
  core::Result<std::optional<std::string>> WriteOnce(const ports::StatusChanges& changes,
                                                     const core::StatusMarkdownHeader& header,
                                                     const std::string& text, int attempt);

  // The record a status blob holds: from `decoded_` or the persistent cache, else read and
  // decoded (and put into both); what is used goes into `used` too, unless it is null.
  // nullopt when the blob cannot be read; an error when it is not a status record.
  // `cache` is the persistent one or null (not used).
  std::optional<core::Result<core::StatusRecord>> DecodeStatusBlob(
      const git_oid& oid, const std::string& path,
      std::unordered_map<std::string, core::StatusRecord>* used, ParseCache* cache);
  // DecodeStatusBlob with `used` bound, for reading a whole status folder.
  std::function<std::optional<core::Result<core::StatusRecord>>(const git_oid&, const std::string&)>
  DecoderInto(std::unordered_map<std::string, core::StatusRecord>* used);
  // For a write's reads: through the persistent cache when there is one and it is held (not
  // let go of since the pass read the ledger), else into `decoded_`.
  std::function<std::optional<core::Result<core::StatusRecord>>(const git_oid&, const std::string&)>
  WriteDecoder();
  // DecodeStatusBlob into `decoded_` without the persistent cache, for reading a few files.
  std::function<std::optional<core::Result<core::StatusRecord>>(const git_oid&, const std::string&)>
  NarrowDecoder();

  // options_.markdown_header with the branches filled in: all that STATUS.md's rows depend on.
  core::StatusMarkdownHeader RowHeader() const;

  std::shared_ptr<GitWorkspace> workspace_;
  GitStatusStoreOptions options_;
  // Records by blob id, of the status files of the last ReadLedger (and of later writes) when
  // there is no parse cache; with one, only those the narrow reads decoded.
  std::unordered_map<std::string, core::StatusRecord> decoded_;
  int status_parses_ = 0;
  int full_status_reads_ = 0;
  int incremental_writes_ = 0;
  int packed_writes_ = 0;
  StatusRowCache row_cache_;
  int push_attempts_ = 0;
  std::string last_refusal_;                       // why the remote refused the last push
  ports::LedgerScope scope_;                       // of the last ReadLedger
  std::vector<ports::SkippedStatusFile> skipped_;  // by the last ReadLedger
  bool found_branch_ = false;
  std::optional<std::string> known_tip_;

  std::string ReadRef() const {
    return options_.read_ref.empty() ? GitWorkspace::TrackingRef(options_.branch)
                                     : options_.read_ref;
  }
};

}  // namespace rg::adapters
