#pragma once

#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/ports/job_server.h"

namespace rg::cli {

// A Ray client whose first List() is answered by a listing started earlier, on a thread of its
// own. A one-shot `plan` or `sync` whose Ray address is known from its flags starts listing
// before it loads the desired state: the GET (one second at 50,000 jobs, most of it the
// head's) runs while the commit is read, instead of after it (docs/performance.md). The
// listing is then older than the commit by the load's time, as a listing taken just before a
// push would be; deterministic ids make acting on it safe. Every other call waits for the
// listing to end first, so the client is never used by two threads at once. Not for a client
// that digests its listings (DigestListsWith): the early listing was not digested.
class PrefetchedListServer : public ports::JobServer {
 public:
  // Starts inner->List() on a thread of its own; `address` is the head's, as inner reaches it.
  PrefetchedListServer(std::unique_ptr<ports::JobServer> inner, std::string address);
  ~PrefetchedListServer() override;
  PrefetchedListServer(const PrefetchedListServer&) = delete;
  PrefetchedListServer& operator=(const PrefetchedListServer&) = delete;
  PrefetchedListServer(PrefetchedListServer&&) = delete;
  PrefetchedListServer& operator=(PrefetchedListServer&&) = delete;

  const std::string& address() const { return address_; }
  // Whether the listing started early has been handed out.
  bool prefetch_used() const { return used_; }

  core::Result<core::RayVersion> Version() override;
  core::Result<std::string> Submit(const core::Value& body) override;
  core::Result<core::RayJob> Get(std::string_view id) override;
  core::Result<std::vector<core::RayJob>> List() override;
  void DigestListsWith(const core::SipHasher::Key& key) override;
  core::Result<uint64_t> ListDigest(const core::SipHasher::Key& key) override;
  uint64_t ListedDigest(const std::vector<core::RayJob>& jobs,
                        const core::SipHasher::Key& key) override;
  std::optional<int64_t> HeadClockOffsetMs() override;
  std::optional<int64_t> HeadNowMs() override;
  core::Result<bool> JobsReadableWithoutCredentials() override;
  core::Result<bool> Stop(std::string_view id) override;
  core::Result<bool> Delete(std::string_view id) override;
  core::Result<std::string> Logs(std::string_view id) override;
  core::Result<ports::LogTail> TailLogs(std::string_view id, size_t max_bytes) override;
  core::Result<bool> HasPackage(std::string_view name) override;
  core::Status UploadPackage(std::string_view name, std::string_view zip) override;
  core::Result<std::string> ClusterStatus() override;
  core::Result<core::ClusterResources> Resources() override;

 private:
  // Waits for the early listing to end (its answer stays for the first List()).
  ports::JobServer& Settled();

  std::unique_ptr<ports::JobServer> inner_;
  std::string address_;
  std::future<core::Result<std::vector<core::RayJob>>> first_;  // invalid once handed out
  bool used_ = false;
};

}  // namespace rg::cli
