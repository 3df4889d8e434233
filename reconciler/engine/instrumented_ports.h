#pragma once
// Decorators of the ports a pass talks through that time every call into the metrics
// registry: rg_ray_request_seconds{call=...} for the Ray Jobs API and
// rg_git_request_seconds{call=...} for the desired-state repository and the status branch.
// Each forwards every call unchanged (results and errors included). A decorator is as
// thread-compatible as what it wraps; the registry and the clock are thread-safe.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/core/metrics.h"
#include "reconciler/ports/clock.h"
#include "reconciler/ports/desired_state_source.h"
#include "reconciler/ports/job_server.h"
#include "reconciler/ports/status_store.h"

namespace rg::engine {

// Declares both histogram families (idempotent). The decorators call it themselves.
void DeclareRequestMetrics(core::MetricsRegistry& metrics);

// Times every call under
// call=version|submit|get|list|stop|delete|logs|cluster_status|package_get|package_put|probe
// (Resources reads the same endpoint and counts as cluster_status; HasPackage is package_get,
// UploadPackage package_put, JobsReadableWithoutCredentials probe).
class InstrumentedJobServer : public ports::JobServer {
 public:
  // `metrics` and `clock` must outlive this object.
  // When `spent_us` is given, the time of every call is also added to it (the daemon's own
  // time in a pass is the pass minus its Ray and Git calls).
  InstrumentedJobServer(std::unique_ptr<ports::JobServer> inner, core::MetricsRegistry& metrics,
                        ports::Clock& clock, std::atomic<int64_t>* spent_us = nullptr);

  core::Result<core::RayVersion> Version() override;
  core::Result<std::string> Submit(const core::Value& body) override;
  core::Result<core::RayJob> Get(std::string_view id) override;
  core::Result<std::vector<core::RayJob>> List() override;
  // Timed under call=list, as List.
  core::Result<std::vector<core::RayJob>> ListWhere(const JobFilter& keep) override;
  void DigestListsWith(const core::SipHasher::Key& key) override { inner_->DigestListsWith(key); }
  // Timed as call=list: the same request.
  core::Result<uint64_t> ListDigest(const core::SipHasher::Key& key) override;
  uint64_t ListedDigest(const std::vector<core::RayJob>& jobs,
                        const core::SipHasher::Key& key) override {
    return inner_->ListedDigest(jobs, key);
  }
  std::optional<int64_t> HeadClockOffsetMs() override { return inner_->HeadClockOffsetMs(); }
  std::optional<int64_t> HeadNowMs() override { return inner_->HeadNowMs(); }
  core::Result<bool> JobsReadableWithoutCredentials() override;
  core::Result<bool> Stop(std::string_view id) override;
  core::Result<bool> Delete(std::string_view id) override;
  core::Result<std::string> Logs(std::string_view id) override;
  // Timed as call=logs: the same request.
  core::Result<ports::LogTail> TailLogs(std::string_view id, size_t max_bytes) override;
  core::Result<bool> HasPackage(std::string_view name) override;
  core::Status UploadPackage(std::string_view name, std::string_view zip) override;
  core::Result<std::string> ClusterStatus() override;
  core::Result<core::ClusterResources> Resources() override;

 private:
  template <typename F>
  auto Call(std::string_view name, F&& call);

  std::unique_ptr<ports::JobServer> inner_;
  core::MetricsRegistry& metrics_;
  ports::Clock& clock_;
  std::atomic<int64_t>* spent_us_;
};

// Times Load (fetch included) and LoadChanges under call=load, Head under call=head, the tip
// check before stops under call=ls_remote and call=tip_changes.
class InstrumentedDesiredStateSource : public ports::DesiredStateSource {
 public:
  // `inner`, `metrics` and `clock` must outlive this object.
  InstrumentedDesiredStateSource(ports::DesiredStateSource& inner, core::MetricsRegistry& metrics,
                                 ports::Clock& clock);

  core::Result<ports::DesiredSnapshot> Load(const std::string& ref) override;
  // Timed under call=head.
  core::Result<std::optional<std::string>> Head(const std::string& ref) override;
  // Timed under call=load, as Load.
  core::Result<std::optional<ports::SpecChanges>> LoadChanges(const std::string& ref,
                                                              const std::string& since,
                                                              size_t max_files) override;
  // Timed under call=ls_remote.
  core::Result<std::optional<std::string>> RemoteTip(const std::string& ref) override;
  // Timed under call=tip_changes (a fetch, then trees compared).
  core::Result<ports::TipChanges> ChangesAtTip(const ports::DesiredSnapshot& snapshot) override;
  // Not timed: answered from the local object database, no network.
  ports::CommitRelation Relate(const std::string& commit, const std::string& pass_commit) override {
    return inner_.Relate(commit, pass_commit);
  }
  // Not timed: read from the local object database, no network.
  core::Result<std::string> CodeZip(const std::string& tree_id) override {
    return inner_.CodeZip(tree_id);
  }
  core::Result<std::vector<std::string>> CodeChanges(const std::string& from_tree,
                                                     const std::string& to_tree) override {
    return inner_.CodeChanges(from_tree, to_tree);
  }
  // Not timed: a blob read from the local object database, no network.
  std::string SpecText(const ports::DesiredSnapshot& snapshot, const std::string& path) override {
    return inner_.SpecText(snapshot, path);
  }

 private:
  ports::DesiredStateSource& inner_;
  core::MetricsRegistry& metrics_;
  ports::Clock& clock_;
};

// Times calls under call=read_ledger|write_status|history|tip.
class InstrumentedStatusStore : public ports::StatusStore {
 public:
  // `inner`, `metrics` and `clock` must outlive this object.
  InstrumentedStatusStore(ports::StatusStore& inner, core::MetricsRegistry& metrics,
                          ports::Clock& clock);

  core::Result<core::Ledger> ReadLedger(const ports::LedgerScope& scope) override;
  std::vector<ports::SkippedStatusFile> SkippedFiles() const override;
  // Timed under call=read_ledger, as ReadLedger.
  core::Result<std::optional<core::Ledger>> ReadLedgerOf(
      const ports::LedgerScope& scope, const std::vector<std::string>& names) override;
  core::Result<std::string> Write(const ports::StatusChanges& changes,
                                  const ports::StatusCommit& message) override;
  core::Result<std::vector<ports::StatusHistoryEntry>> History(const std::string& name) override;
  // Timed under call=tip.
  core::Result<std::optional<std::string>> Tip() override;
  std::optional<std::string> KnownTip() const override { return inner_.KnownTip(); }

 private:
  ports::StatusStore& inner_;
  core::MetricsRegistry& metrics_;
  ports::Clock& clock_;
};

}  // namespace rg::engine
