#pragma once
// ports::JobServer over HTTP with cpp-httplib, honouring every quirk of docs/ray-jobs-api.md.
// Thread-compatible: one instance per thread, or external locking.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/ports/job_server.h"

namespace rg::adapters {

// Ends every Ray call of the process in flight now, and makes later ones fail at once
// (kTransient, "abandoned"). For the daemon's shutdown (docs/daemon.md): a call in flight is
// awaited for a while, then abandoned; the next start adopts a submitted run by its id.
// Thread-safe; may be called repeatedly.
void AbandonRayCalls();

// Ray calls of the process in flight now (for tests).
int RayCallsInFlight();

// One request as it goes on the wire (the path holds the address's prefix and the query),
// and what came back: `status` 0 when no answer came, and then `failure` says why.
struct RayHttpRequest {
  std::string method;
  std::string path;
  std::string body;
  std::map<std::string, std::string> headers;
};
struct RayHttpAnswer {
  int status = 0;
  std::string body;
  std::string failure;
  std::map<std::string, std::string> headers;  // as sent; names in any case
};
using RayHttpTransport = std::function<RayHttpAnswer(const RayHttpRequest&)>;

// The resources in the JSON answer of GET /api/cluster_status (no `format`), which Ray 2.51
// and 2.60 shape alike: data.clusterStatus.loadMetricsReport.usage maps each resource, its
// name in the dashboard's camelCase (core::RayDashboardKey), to [used, total]; memory in
// bytes. kTransient when data.clusterStatus is null (a head that has not reported yet);
// kFatal when the answer has another shape.
core::Result<core::ClusterResources> ParseClusterResources(std::string_view body);

class RayHttpJobServer : public ports::JobServer {
 public:
  explicit RayHttpJobServer(RayClientOptions options);
  // Over `transport` instead of the network; everything above the wire (the headers, gating,
  // parsing, error classes, the duplicate-id and lost-answer rules, retries) is the same. The
  // engine's tests talk to the fake head in process this way (tests/support/).
  RayHttpJobServer(RayClientOptions options, RayHttpTransport transport);
  ~RayHttpJobServer() override;

  core::Result<core::RayVersion> Version() override;
  core::Result<std::string> Submit(const core::Value& body) override;
  core::Result<core::RayJob> Get(std::string_view id) override;
  core::Result<std::vector<core::RayJob>> List() override;
  // Drops the jobs `keep` refuses as it reads the answer; the digest stays the whole answer's.
  core::Result<std::vector<core::RayJob>> ListWhere(const JobFilter& keep) override;
  // Digests of GET /api/jobs/ are of the body as received (ports::JobServer).
  void DigestListsWith(const core::SipHasher::Key& key) override;
  core::Result<uint64_t> ListDigest(const core::SipHasher::Key& key) override;
  uint64_t ListedDigest(const std::vector<core::RayJob>& jobs,
                        const core::SipHasher::Key& key) override;
  // From the Date header of every 2xx answer (an error may be a proxy's, on its clock), read
  // as soon as the answer's head has arrived, against RayClientOptions::clock (its wall time
  // for the offset, its monotonic time for HeadNowMs).
  std::optional<int64_t> HeadClockOffsetMs() override;
  std::optional<int64_t> HeadNowMs() override;
  // One GET, not retried (the pass asks again next time); the answer's head is read, and the
  // connection closed before its body.
  core::Result<bool> JobsReadableWithoutCredentials() override;
  core::Result<bool> Stop(std::string_view id) override;
  core::Result<bool> Delete(std::string_view id) override;
  core::Result<std::string> Logs(std::string_view id) override;
  core::Result<ports::LogTail> TailLogs(std::string_view id, size_t max_bytes) override;
  // GET /api/packages/gcs/<name>, retried as every GET; a 404 is false. A name that is not
  // "_ray_pkg_<[0-9a-z]+>.zip" is kInvalidInput, and nothing is sent.
  core::Result<bool> HasPackage(std::string_view name) override;
  // PUT /api/packages/gcs/<name> with `zip` as an application/octet-stream body, within
  // RayClientOptions::upload_timeout. Retried on kTransient like a GET: the store is keyed by
  // the name, so a second PUT stores the same bytes again. A zip over Ray's 100 MiB limit is
  // refused here (kInvalidInput), as is a bad name; a refusal of the size by the head is
  // kInvalidInput too, and a 404 kFatal.
  core::Status UploadPackage(std::string_view name, std::string_view zip) override;
  core::Result<std::string> ClusterStatus() override;
  core::Result<core::ClusterResources> Resources() override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rg::adapters
