#pragma once
// In-memory DesiredStateSource and StatusStore for engine tests: the source hands out a
// snapshot built from file texts (parsed with the real loader), the store keeps records and
// the commits made to them.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/result.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/ports/status_store.h"

namespace rg::testing {

class InMemoryDesiredStateSource : public ports::DesiredStateSource {
 public:
  // Replaces the repository content: path -> text ("cluster.yaml", "jobs/..."), as a new
  // commit with the given id.
  void SetFiles(std::map<std::string, std::string> files, std::string commit);
  void SetFile(const std::string& path, std::string text, std::string commit);
  void RemoveFile(const std::string& path, std::string commit);
  // Every Load fails with this error until cleared.
  void FailWith(std::optional<core::Error> error) { error_ = std::move(error); }

  core::Result<ports::DesiredSnapshot> Load(const std::string& ref) override;
  int loads() const { return loads_; }
  // The commit, without building a snapshot (fails like Load).
  core::Result<std::optional<std::string>> Head(const std::string& ref) override;

  // What Relate answers for a commit; commits not set count as part of every view.
  void SetRelation(const std::string& commit, ports::CommitRelation relation) {
    relations_[commit] = relation;
  }
  ports::CommitRelation Relate(const std::string& commit, const std::string&) override {
    auto it = relations_.find(commit);
    return it == relations_.end() ? ports::CommitRelation::kAncestorOrSame : it->second;
  }
  // A remote to ask for the tip (the tip check before stops): RemoteTip answers the current
  // commit, after running `on_remote_tip` (a push while the pass planned, say), and
  // ChangesAtTip names the cluster file and spec files whose texts differ from the snapshot's.
  // Without a remote (the default) RemoteTip answers nullopt, as a repository read in place.
  void EnableRemote(std::function<void()> on_remote_tip = nullptr) {
    remote_ = true;
    on_remote_tip_ = std::move(on_remote_tip);
  }
  // Every RemoteTip fails with this error until cleared.
  void FailRemoteTipWith(std::optional<core::Error> error) { remote_error_ = std::move(error); }
  core::Result<std::optional<std::string>> RemoteTip(const std::string& ref) override;
  core::Result<ports::TipChanges> ChangesAtTip(const ports::DesiredSnapshot& snapshot) override;
  int remote_tips() const { return remote_tips_; }

  // Runs at the start of every Load (a fetch that finds the remote moved, say).
  void OnLoad(std::function<void()> hook) { on_load_ = std::move(hook); }
  // Runs on every loaded desired state, as a real source completes it (the zones of scheduled
  // specs: adapters::ResolveScheduleZones).
  void OnState(std::function<void(core::DesiredState&)> hook) { on_state_ = std::move(hook); }

 private:
  std::map<std::string, ports::CommitRelation> relations_;
  std::function<void()> on_load_;
  std::function<void(core::DesiredState&)> on_state_;
  std::map<std::string, std::string> files_;
  std::string commit_ = "0000000000000000000000000000000000000000";
  std::optional<core::Error> error_;
  int loads_ = 0;
  bool remote_ = false;
  std::function<void()> on_remote_tip_;
  std::optional<core::Error> remote_error_;
  int remote_tips_ = 0;
};

class InMemoryStatusStore : public ports::StatusStore {
 public:
  struct Commit {
    std::string id;
    ports::StatusChanges changes;
    ports::StatusCommit message;
    core::Ledger after;
  };

  core::Result<core::Ledger> ReadLedger(const ports::LedgerScope& scope) override;
  std::vector<ports::SkippedStatusFile> SkippedFiles() const override { return skipped_; }
  // What the next ReadLedger reports as skipped (its records are not in the ledger).
  void SetSkippedFiles(std::vector<ports::SkippedStatusFile> files) { skipped_ = std::move(files); }
  core::Result<std::string> Write(const ports::StatusChanges& changes,
                                  const ports::StatusCommit& message) override;
  core::Result<std::vector<ports::StatusHistoryEntry>> History(const std::string& name) override;

  // The id of the last commit ("" before the first).
  core::Result<std::optional<std::string>> Tip() override {
    if (read_error_) return *read_error_;
    return std::optional<std::string>(TipId());
  }
  std::optional<std::string> KnownTip() const override { return TipId(); }

  const core::Ledger& ledger() const { return ledger_; }
  const std::vector<Commit>& commits() const { return commits_; }
  void FailReadsWith(std::optional<core::Error> error) { read_error_ = std::move(error); }

 private:
  core::Ledger ledger_;
  std::vector<Commit> commits_;
  std::optional<core::Error> read_error_;
  std::vector<ports::SkippedStatusFile> skipped_;

  std::string TipId() const { return commits_.empty() ? std::string() : commits_.back().id; }
};

}  // namespace rg::testing
