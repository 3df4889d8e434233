#pragma once
// The status branch (docs/status-branch.md): status/<name>.yaml per job plus STATUS.md, written as
// one commit built in memory and pushed. Read back, the records are the ledger.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/result.h"
#include "reconciler/core/status_model.h"

namespace rg::ports {

// One pass's changes: name -> new record, or nullopt to delete that job's status file.
using StatusChanges = core::RecordChanges;

struct StatusCommit {
  std::string subject;                          // first line
  std::vector<std::string> body_lines;          // one transition per line
  std::map<std::string, std::string> trailers;  // e.g. Spec-Commit, Ray-Cluster
};

struct StatusHistoryEntry {
  std::string commit;
  int64_t time_ms = 0;  // commit time
  std::string subject;
  std::optional<core::StatusRecord> record;  // the file at that commit; nullopt if deleted
};

// Whose ledger a pass reads (docs/status-branch.md): the ledger belongs to one instance on one
// cluster. Empty fields match every record (tools that only print history).
struct LedgerScope {
  std::string instance;     // --instance
  std::string ray_cluster;  // cluster.yaml's `name`, else the address without credentials
};

// A file on the status branch that ReadLedger could not use: unreadable YAML, a record that
// does not match its file name, a file that is no status record at all. `name` is the job it
// belongs to when its path says so (status/<name>.yaml), else empty. That job is frozen: the
// pass neither submits nor stops it until the file is fixed (a warning, not an unready daemon:
// docs/daemon.md, "Readiness").
struct SkippedStatusFile {
  std::string path;
  std::string name;
  std::string problem;
};

class StatusStore {
 public:
  virtual ~StatusStore() = default;

  // Every status record of `scope` at the tip of the status branch (empty when the branch
  // does not exist yet). Files that cannot be used are skipped and listed by SkippedFiles.
  virtual core::Result<core::Ledger> ReadLedger(const LedgerScope& scope) = 0;

  // The files the last ReadLedger skipped.
  virtual std::vector<SkippedStatusFile> SkippedFiles() const = 0;

  // What ReadLedger would give for `names` alone, read from the tip as last fetched (no
  // fetch): the records of `scope` among status/<name>.yaml of those names, reading nothing
  // else (a narrow pass: engine/narrow_pass.h). nullopt when this store cannot say cheaply or
  // when ReadLedger would say more: a file of those names that would be skipped, or our
  // instance's record of another cluster (the caller then reads the whole ledger, which
  // reports them). Afterwards SkippedFiles is empty and Write refuses as after a ReadLedger
  // of `scope`.
  virtual core::Result<std::optional<core::Ledger>> ReadLedgerOf(
      const LedgerScope& scope, const std::vector<std::string>& names) {
    (void)scope;
    (void)names;
    return std::optional<core::Ledger>();
  }

  // Applies `changes` on top of the current tip as one commit (STATUS.md regenerated from the
  // resulting set of records) and publishes it. Nothing is committed when the resulting tree
  // equals the tip's. When another writer moved the branch meanwhile, fetches, re-applies the
  // same changes on the new tip and retries (bounded); other writers' files survive. Returns
  // the new commit id, or an empty string when there was nothing to commit.
  virtual core::Result<std::string> Write(const StatusChanges& changes,
                                          const StatusCommit& message) = 0;

  // Brings the local copy up to date and returns the tip of the status branch ("" when the
  // branch does not exist), without reading it; nullopt when this store cannot tell cheaply.
  virtual core::Result<std::optional<std::string>> Tip() { return std::optional<std::string>(); }

  // The tip as of the last ReadLedger or Write of this store (the commit it made, if any), with
  // no fetch; nullopt when unknown.
  virtual std::optional<std::string> KnownTip() const { return std::nullopt; }

  // The commits that touched status/<name>.yaml, newest first.
  virtual core::Result<std::vector<StatusHistoryEntry>> History(const std::string& name) = 0;
};

}  // namespace rg::ports
