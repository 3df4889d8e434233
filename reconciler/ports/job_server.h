#pragma once
// The Ray Jobs API as ray-gitops needs it. One implementation speaks HTTP to a real head
// (adapters/ray_http_job_server.h); tests also run it against the fake in tests/support/.
// Errors come back as values: kTransient (5xx other than a duplicate id, timeouts, refused
// connections), kNotFound (404), kConflict (duplicate submission id), kUnauthorized
// (401/403), kInvalidInput (400), kFatal.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/pending_reason.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/result.h"
#include "reconciler/core/value.h"

namespace rg::ports {

// The end of a driver log: its last bytes, and how long the whole log is.
struct LogTail {
  std::string tail;
  size_t total_bytes = 0;
};

class JobServer {
 public:
  virtual ~JobServer() = default;

  // GET /api/version
  virtual core::Result<core::RayVersion> Version() = 0;
  // POST /api/jobs/ with `body` (as rendered; fields the server's version cannot take are
  // dropped). Returns the submission id. A duplicate id is kConflict whose message holds
  // Ray's text. A request that fails mid-flight is resolved by GET-ing the id, never by
  // sending it again.
  virtual core::Result<std::string> Submit(const core::Value& body) = 0;
  // GET /api/jobs/{id}
  virtual core::Result<core::RayJob> Get(std::string_view id) = 0;
  // GET /api/jobs/ — every job, DRIVER ones included.
  virtual core::Result<std::vector<core::RayJob>> List() = 0;
  // List, keeping only the jobs `keep` accepts (a narrow pass needs a few jobs of the list).
  // An implementation that reads the answer as it arrives drops the others as it reads them;
  // the digest of ListedDigest is still that of the whole answer there (the default digests
  // the jobs kept).
  using JobFilter = std::function<bool(const core::RayJob&)>;
  virtual core::Result<std::vector<core::RayJob>> ListWhere(const JobFilter& keep) {
    core::Result<std::vector<core::RayJob>> jobs = List();
    if (jobs.ok()) std::erase_if(*jobs, [&keep](const core::RayJob& job) { return !keep(job); });
    return jobs;
  }

  // The daemon's check that Ray's answer has not changed since a pass at rest
  // (engine/pass_memo.h). ListDigest lists and digests the answer with `key`, without
  // decoding it where the implementation can (the HTTP client digests the body as received).
  // ListedDigest gives the digest ListDigest would have given for the answer the last List
  // returned (`jobs`); an implementation that digests bodies does so for every List after
  // DigestListsWith. The defaults digest the decoded jobs (core::DigestJobs). Two digests
  // compare equal only when made by clients of one kind with one key.
  virtual void DigestListsWith(const core::SipHasher::Key& key) { (void)key; }
  virtual core::Result<uint64_t> ListDigest(const core::SipHasher::Key& key) {
    core::Result<std::vector<core::RayJob>> jobs = List();
    if (!jobs.ok()) return jobs.error();
    return core::DigestJobs(*jobs, key);
  }
  virtual uint64_t ListedDigest(const std::vector<core::RayJob>& jobs,
                                const core::SipHasher::Key& key) {
    return core::DigestJobs(jobs, key);
  }
  // The head's clock minus the caller's, in ms, from the last answer that carried a Date
  // header (docs/reconcile.md, "The head's clock"): its Date (the head's time, cut to the
  // second, when it answered) minus the caller's clock once the answer had arrived. A lower
  // bound: the caller's time plus this is never ahead of the head's, so a deadline counted on
  // it never falls due early. An answer without a readable Date leaves it as it was; nullopt
  // until one had it (then Ray's times can only be compared with the caller's clock).
  virtual std::optional<int64_t> HeadClockOffsetMs() { return std::nullopt; }
  // The head's time now, from the same answer: its Date plus the time since it arrived on the
  // caller's monotonic clock. A lower bound too, and read on no wall clock of the caller's:
  // what Ray's times are compared with. nullopt as HeadClockOffsetMs.
  virtual std::optional<int64_t> HeadNowMs() { return std::nullopt; }
  // The credentials probe (docs/operations.md, "Job secrets"): GET /api/jobs/ sent with no
  // token and none of the configured headers. True when any 2xx answers it (anyone who reaches
  // the Jobs API reads every job's runtime_env, so secret values must not go in it); false when
  // it is refused (401 or 403 from Ray's token auth, a proxy's 3xx to its login page, any
  // other 4xx). kTransient when no answer came or the head failed (5xx): unknown. The body is
  // never read. The default, for test doubles without credentials: false.
  virtual core::Result<bool> JobsReadableWithoutCredentials() { return false; }
  // POST /api/jobs/{id}/stop — true if a stop was sent, false if the job had already ended.
  virtual core::Result<bool> Stop(std::string_view id) = 0;
  // DELETE /api/jobs/{id} — kConflict while the job is not terminal.
  virtual core::Result<bool> Delete(std::string_view id) = 0;
  // GET /api/jobs/{id}/logs — the whole driver log.
  virtual core::Result<std::string> Logs(std::string_view id) = 0;
  // The same answer, of which only the last `max_bytes` of the log are kept (cut anywhere; a
  // caller that keeps lines cuts further). The default reads the whole log first; the HTTP
  // client never holds more than twice `max_bytes` of a log of any length.
  virtual core::Result<LogTail> TailLogs(std::string_view id, size_t max_bytes) {
    core::Result<std::string> whole = Logs(id);
    if (!whole.ok()) return whole.error();
    LogTail out;
    out.total_bytes = whole->size();
    out.tail =
        whole->size() > max_bytes ? whole->substr(whole->size() - max_bytes) : std::move(*whole);
    return out;
  }
  // GET /api/packages/gcs/<name> (name: "_ray_pkg_<hex>.zip"): true when Ray's package store
  // holds the package (the call also pins it for a while), false on 404. The defaults are for
  // job servers without a package store (test doubles): kFatal.
  virtual core::Result<bool> HasPackage(std::string_view name) {
    return core::Error::Fatal("this job server has no package store (package " + std::string(name) +
                              ")");
  }
  // PUT /api/packages/gcs/<name> with the zip's bytes as the body. kInvalidInput when Ray
  // refuses the size (its dashboard takes bodies up to 100 MiB).
  virtual core::Status UploadPackage(std::string_view name, std::string_view zip) {
    (void)zip;
    return core::Error::Fatal("this job server has no package store (package " + std::string(name) +
                              ")");
  }
  // GET /api/cluster_status?format=1 — the text of `ray status` (may be empty).
  virtual core::Result<std::string> ClusterStatus() = 0;
  // GET /api/cluster_status (JSON) — every resource's total and what is free, as Ray's
  // autoscaler last reported them. kTransient while Ray has no report yet (a head just
  // started); callers treat any error as "unknown", never as a failure of their work.
  virtual core::Result<core::ClusterResources> Resources() = 0;
};

}  // namespace rg::ports
