#include "reconciler/cli/prefetched_list.h"

#include <utility>

namespace rg::cli {

PrefetchedListServer::PrefetchedListServer(std::unique_ptr<ports::JobServer> inner,
                                           std::string address)
    : inner_(std::move(inner)), address_(std::move(address)) {
  ports::JobServer* server = inner_.get();
  first_ = std::async(std::launch::async, [server]() { return server->List(); });
}

PrefetchedListServer::~PrefetchedListServer() {
  if (first_.valid()) first_.wait();  // the thread uses inner_
}

ports::JobServer& PrefetchedListServer::Settled() {
  if (first_.valid()) first_.wait();
  return *inner_;
}

core::Result<std::vector<core::RayJob>> PrefetchedListServer::List() {
  if (!used_) {
    used_ = true;
    return first_.get();  // moved out, not copied
  }
  return Settled().List();
}

core::Result<core::RayVersion> PrefetchedListServer::Version() { return Settled().Version(); }
core::Result<std::string> PrefetchedListServer::Submit(const core::Value& body) {
  return Settled().Submit(body);
}
core::Result<core::RayJob> PrefetchedListServer::Get(std::string_view id) {
  return Settled().Get(id);
}
void PrefetchedListServer::DigestListsWith(const core::SipHasher::Key& key) {
  Settled().DigestListsWith(key);
}
core::Result<uint64_t> PrefetchedListServer::ListDigest(const core::SipHasher::Key& key) {
  return Settled().ListDigest(key);
}
uint64_t PrefetchedListServer::ListedDigest(const std::vector<core::RayJob>& jobs,
                                            const core::SipHasher::Key& key) {
  return Settled().ListedDigest(jobs, key);
}
std::optional<int64_t> PrefetchedListServer::HeadClockOffsetMs() {
  return Settled().HeadClockOffsetMs();
}
std::optional<int64_t> PrefetchedListServer::HeadNowMs() { return Settled().HeadNowMs(); }
core::Result<bool> PrefetchedListServer::JobsReadableWithoutCredentials() {
  return Settled().JobsReadableWithoutCredentials();
}
core::Result<bool> PrefetchedListServer::Stop(std::string_view id) { return Settled().Stop(id); }
core::Result<bool> PrefetchedListServer::Delete(std::string_view id) {
  return Settled().Delete(id);
}
core::Result<std::string> PrefetchedListServer::Logs(std::string_view id) {
  return Settled().Logs(id);
}

core::Result<ports::LogTail> PrefetchedListServer::TailLogs(std::string_view id, size_t max_bytes) {
  return Settled().TailLogs(id, max_bytes);
}
core::Result<bool> PrefetchedListServer::HasPackage(std::string_view name) {
  return Settled().HasPackage(name);
}
core::Status PrefetchedListServer::UploadPackage(std::string_view name, std::string_view zip) {
  return Settled().UploadPackage(name, zip);
}
core::Result<std::string> PrefetchedListServer::ClusterStatus() {
  return Settled().ClusterStatus();
}
core::Result<core::ClusterResources> PrefetchedListServer::Resources() {
  return Settled().Resources();
}

}  // namespace rg::cli
