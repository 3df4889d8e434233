#include "reconciler/engine/instrumented_ports.h"

#include <string>
#include <utility>

namespace rg::engine {
namespace {

constexpr std::string_view kRayHistogram = "rg_ray_request_seconds";
constexpr std::string_view kGitHistogram = "rg_git_request_seconds";

// Runs `call` and observes its duration in `histogram`{call=`name`}.
template <typename F>
auto Timed(core::MetricsRegistry& metrics, ports::Clock& clock, std::string_view histogram,
           std::string_view name, F&& call) {
  const int64_t start = clock.MonotonicUs();
  auto result = std::forward<F>(call)();
  const double seconds = static_cast<double>(clock.MonotonicUs() - start) / 1e6;
  metrics.Observe(histogram, seconds, {{"call", std::string(name)}});
  return result;
}

}  // namespace

void DeclareRequestMetrics(core::MetricsRegistry& metrics) {
  const std::vector<double> buckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                       0.25,  0.5,    1,     2.5,  5,     10,   30};
  metrics.DeclareHistogram(kRayHistogram, "Duration of Ray Jobs API requests, by call.", buckets);
  metrics.DeclareHistogram(
      kGitHistogram, "Duration of Git operations (fetch and read, status), by call.", buckets);
}

InstrumentedJobServer::InstrumentedJobServer(std::unique_ptr<ports::JobServer> inner,
                                             core::MetricsRegistry& metrics, ports::Clock& clock,
                                             std::atomic<int64_t>* spent_us)
    : inner_(std::move(inner)), metrics_(metrics), clock_(clock), spent_us_(spent_us) {
  DeclareRequestMetrics(metrics_);
}

template <typename F>
auto InstrumentedJobServer::Call(std::string_view name, F&& call) {
  const int64_t start = clock_.MonotonicUs();
  auto result = Timed(metrics_, clock_, kRayHistogram, name, std::forward<F>(call));
  if (spent_us_ != nullptr) *spent_us_ += clock_.MonotonicUs() - start;
  return result;
}

core::Result<core::RayVersion> InstrumentedJobServer::Version() {
  return Call("version", [&] { return inner_->Version(); });
}

core::Result<std::string> InstrumentedJobServer::Submit(const core::Value& body) {
  return Call("submit", [&] { return inner_->Submit(body); });
}

core::Result<core::RayJob> InstrumentedJobServer::Get(std::string_view id) {
  return Call("get", [&] { return inner_->Get(id); });
}

core::Result<std::vector<core::RayJob>> InstrumentedJobServer::List() {
  return Call("list", [&] { return inner_->List(); });
}

core::Result<std::vector<core::RayJob>> InstrumentedJobServer::ListWhere(const JobFilter& keep) {
  return Call("list", [&] { return inner_->ListWhere(keep); });
}

core::Result<uint64_t> InstrumentedJobServer::ListDigest(const core::SipHasher::Key& key) {
  return Call("list", [&] { return inner_->ListDigest(key); });
}

core::Result<bool> InstrumentedJobServer::Stop(std::string_view id) {
  return Call("stop", [&] { return inner_->Stop(id); });
}

core::Result<bool> InstrumentedJobServer::Delete(std::string_view id) {
  return Call("delete", [&] { return inner_->Delete(id); });
}

core::Result<std::string> InstrumentedJobServer::Logs(std::string_view id) {
  return Call("logs", [&] { return inner_->Logs(id); });
}

core::Result<ports::LogTail> InstrumentedJobServer::TailLogs(std::string_view id,
                                                             size_t max_bytes) {
  return Call("logs", [&] { return inner_->TailLogs(id, max_bytes); });
}

core::Result<bool> InstrumentedJobServer::HasPackage(std::string_view name) {
  return Call("package_get", [&] { return inner_->HasPackage(name); });
}

core::Status InstrumentedJobServer::UploadPackage(std::string_view name, std::string_view zip) {
  return Call("package_put", [&] { return inner_->UploadPackage(name, zip); });
}

core::Result<bool> InstrumentedJobServer::JobsReadableWithoutCredentials() {
  return Call("probe", [&] { return inner_->JobsReadableWithoutCredentials(); });
}

core::Result<std::string> InstrumentedJobServer::ClusterStatus() {
  return Call("cluster_status", [&] { return inner_->ClusterStatus(); });
}

core::Result<core::ClusterResources> InstrumentedJobServer::Resources() {
  return Call("cluster_status", [&] { return inner_->Resources(); });
}

InstrumentedDesiredStateSource::InstrumentedDesiredStateSource(ports::DesiredStateSource& inner,
                                                               core::MetricsRegistry& metrics,
                                                               ports::Clock& clock)
    : inner_(inner), metrics_(metrics), clock_(clock) {
  DeclareRequestMetrics(metrics_);
}

core::Result<ports::DesiredSnapshot> InstrumentedDesiredStateSource::Load(const std::string& ref) {
  return Timed(metrics_, clock_, kGitHistogram, "load", [&] { return inner_.Load(ref); });
}

core::Result<std::optional<std::string>> InstrumentedDesiredStateSource::Head(
    const std::string& ref) {
  return Timed(metrics_, clock_, kGitHistogram, "head", [&] { return inner_.Head(ref); });
}

core::Result<std::optional<ports::SpecChanges>> InstrumentedDesiredStateSource::LoadChanges(
    const std::string& ref, const std::string& since, size_t max_files) {
  return Timed(metrics_, clock_, kGitHistogram, "load",
               [&] { return inner_.LoadChanges(ref, since, max_files); });
}

core::Result<std::optional<std::string>> InstrumentedDesiredStateSource::RemoteTip(
    const std::string& ref) {
  return Timed(metrics_, clock_, kGitHistogram, "ls_remote", [&] { return inner_.RemoteTip(ref); });
}

core::Result<ports::TipChanges> InstrumentedDesiredStateSource::ChangesAtTip(
    const ports::DesiredSnapshot& snapshot) {
  return Timed(metrics_, clock_, kGitHistogram, "tip_changes",
               [&] { return inner_.ChangesAtTip(snapshot); });
}

InstrumentedStatusStore::InstrumentedStatusStore(ports::StatusStore& inner,
                                                 core::MetricsRegistry& metrics,
                                                 ports::Clock& clock)
    : inner_(inner), metrics_(metrics), clock_(clock) {
  DeclareRequestMetrics(metrics_);
}

core::Result<core::Ledger> InstrumentedStatusStore::ReadLedger(const ports::LedgerScope& scope) {
  return Timed(metrics_, clock_, kGitHistogram, "read_ledger",
               [&] { return inner_.ReadLedger(scope); });
}

core::Result<std::optional<core::Ledger>> InstrumentedStatusStore::ReadLedgerOf(
    const ports::LedgerScope& scope, const std::vector<std::string>& names) {
  return Timed(metrics_, clock_, kGitHistogram, "read_ledger",
               [&] { return inner_.ReadLedgerOf(scope, names); });
}

std::vector<ports::SkippedStatusFile> InstrumentedStatusStore::SkippedFiles() const {
  return inner_.SkippedFiles();
}

core::Result<std::string> InstrumentedStatusStore::Write(const ports::StatusChanges& changes,
                                                         const ports::StatusCommit& message) {
  return Timed(metrics_, clock_, kGitHistogram, "write_status",
               [&] { return inner_.Write(changes, message); });
}

core::Result<std::optional<std::string>> InstrumentedStatusStore::Tip() {
  return Timed(metrics_, clock_, kGitHistogram, "tip", [&] { return inner_.Tip(); });
}

core::Result<std::vector<ports::StatusHistoryEntry>> InstrumentedStatusStore::History(
    const std::string& name) {
  return Timed(metrics_, clock_, kGitHistogram, "history", [&] { return inner_.History(name); });
}

}  // namespace rg::engine
