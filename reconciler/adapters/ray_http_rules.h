#pragma once
// The pure rules of the Ray HTTP client, kept apart from the transport so that unit tests can
// walk them as tables: how an HTTP answer maps to an error kind, how job details are read,
// which submit fields a server version can take, and how long to back off. Also the decoder
// of the job list, which reads it as the transport hands it over (JobListStream). Private to
// adapters/ and its tests.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/ray_job.h"
#include "reconciler/core/result.h"
#include "reconciler/core/siphash.h"
#include "reconciler/core/value.h"

namespace rg::adapters::ray_http {

// At most this many bytes of a server's error body go into an error message.
inline constexpr size_t kMaxBodyInMessage = 512;

// `body` with surrounding whitespace removed and cut to kMaxBodyInMessage bytes (with "...").
// Of a Python traceback only the part from its last exception line ("ValueError: ...") is kept.
std::string TrimBodyForMessage(std::string_view body);

// The error for a non-2xx answer to `method path`. 400 -> kInvalidInput, 401/403 ->
// kUnauthorized, 404 -> kNotFound (kFatal for a PUT: the head has no such store), a body
// refused for its size (413, or a 500 whose text names aiohttp's HTTPRequestEntityTooLarge)
// -> kInvalidInput, 500 naming a duplicate submission id -> kConflict, 500 to a DELETE of a
// job that is not terminal -> kConflict, 408/429 and other 5xx -> kTransient, any other 4xx
// -> kFatal (a request we should never have sent, e.g. 405 to a browser-like client). The
// message holds the request, the status and the trimmed body.
core::Error ClassifyHttpError(std::string_view method, std::string_view path, int status,
                              std::string_view body);

// Ray's dashboard refuses request bodies over this many bytes (aiohttp's client_max_size,
// DASHBOARD_CLIENT_MAX_SIZE): 413 "Maximum request body size 104857600 exceeded.". A body of
// exactly this size is taken.
inline constexpr size_t kMaxRequestBodyBytes = size_t{100} << 20;

// True for a name of Ray's package store as ray-gitops makes them: "_ray_pkg_" then one or
// more of [0-9a-z], then ".zip".
bool IsPackageName(std::string_view name);

// True for the text Ray answers a duplicate submission id with.
bool IsDuplicateSubmissionBody(std::string_view body);

// Reads one job-details object (every key may be null or missing). kFatal if `text` is not a
// JSON object or a present key has the wrong type. Its runtime_env is kept (RayJob::runtime_env);
// the list readers below leave it out.
core::Result<core::RayJob> ParseJobDetails(std::string_view text);
// Reads the JSON array GET /api/jobs/ answers, job by job as the text is read, without a
// tree of the whole answer. Each element reads as ParseJobDetails reads it; the first element
// that does not is the error, but only once the whole text is known to be JSON.
core::Result<std::vector<core::RayJob>> ParseJobList(std::string_view text);
// ParseJobList keeping only the jobs `keep` accepts (all when it is empty): the others are
// dropped as they are read, never held together.
core::Result<std::vector<core::RayJob>> ParseJobList(
    std::string_view text, const std::function<bool(const core::RayJob&)>& keep);

// Where a GET's 2xx body goes as it arrives, instead of into one string: Begin once per
// attempt (a retry starts over), then Write any number of times.
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  virtual void Begin() = 0;
  virtual void Write(std::string_view bytes) = 0;
};

// Reads Ray's job list as ParseJobList reads it, while its bytes arrive, so that the text of
// an answer is never held whole: a 50 MB list passes through blocks of kBlockBytes, at most
// kBlocksAhead of them waiting for the decoder, which runs on a thread of its own beside the
// one that receives. The bytes can also be digested as they pass (with a key; equal to
// SipHash24 of the whole text), and a digest-only stream decodes nothing and starts no
// thread.
//
// For one answer: Begin, Write any number of times, Finish. Begin again starts over and
// drops what an earlier attempt read (a retry after a connection cut mid-answer). A text that
// is not JSON is reported with its first kMessagePrefix bytes (TrimBodyForMessage of them).
class JobListStream : public BodyStream {
 public:
  static constexpr size_t kBlockBytes = size_t{256} << 10;
  static constexpr size_t kBlocksAhead = 2;
  static constexpr size_t kMessagePrefix = size_t{64} << 10;

  // Keeps the jobs `keep` accepts (every job when it is empty); digests the bytes with
  // `digest_key` when there is one; without `decode`, only digests.
  explicit JobListStream(std::function<bool(const core::RayJob&)> keep = {},
                         std::optional<core::SipHasher::Key> digest_key = std::nullopt,
                         bool decode = true);
  ~JobListStream() override;
  JobListStream(const JobListStream&) = delete;
  JobListStream& operator=(const JobListStream&) = delete;
  JobListStream(JobListStream&&) = delete;
  JobListStream& operator=(JobListStream&&) = delete;

  void Begin() override;
  void Write(std::string_view bytes) override;
  // The jobs of the answer written since Begin, as ParseJobList gives them. REQUIRES: decode.
  core::Result<std::vector<core::RayJob>> Finish();
  // The digest of the bytes written since Begin. REQUIRES: a digest key.
  uint64_t Digest() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The same through a JSON tree of the whole answer: the reference ParseJobList is checked
// against, with exactly the same results and error messages for every input.
core::Result<std::vector<core::RayJob>> ParseJobListDom(std::string_view text);
core::Result<core::RayVersion> ParseVersion(std::string_view text);

// "2.60.0" -> {2, 60, 0}; missing parts are 0; nullopt when it does not start with a number.
struct VersionTriple {
  int major = 0;
  int minor = 0;
  int patch = 0;
  // clang-tidy 14 reads the 0 in the defaulted comparison's synthesized code as a null
  // pointer constant.
  // NOLINTNEXTLINE(modernize-use-nullptr)
  friend auto operator<=>(const VersionTriple&, const VersionTriple&) = default;
};
std::optional<VersionTriple> ParseVersionTriple(std::string_view text);

// The first Ray versions that accept each optional submit field. The first three are the
// SDK's own gates. entrypoint_label_selector is Ray 2.54.0's JobSubmitRequest (2.53.0 has no
// such field, and a 2.51.1 head answers 400 "unexpected keyword argument"); the SDK's gate
// for it says 2.2, which no head before 2.54 honours.
inline constexpr VersionTriple kSubmissionIdSince{2, 0, 0};
inline constexpr VersionTriple kEntrypointResourcesSince{2, 2, 0};
inline constexpr VersionTriple kEntrypointMemorySince{2, 8, 0};
inline constexpr VersionTriple kEntrypointLabelSelectorSince{2, 54, 0};

// The body to POST: `body` without null-valued keys and without the fields `ray_version`
// cannot take. An unparsable version (a dev build) is treated as recent.
core::Value GateSubmitBody(const core::Value& body, std::string_view ray_version);

// Full-jitter exponential backoff before retry number `retry` (0-based):
// uniform in [0, min(max_backoff, initial * 2^retry)], with `unit_random` in [0, 1).
std::chrono::milliseconds BackoffDelay(int retry, std::chrono::milliseconds initial,
                                       std::chrono::milliseconds max_backoff, double unit_random);

// `segment` percent-encoded for use as one path segment (".." included).
std::string EncodePathSegment(std::string_view segment);

}  // namespace rg::adapters::ray_http
