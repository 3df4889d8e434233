#pragma once
// A job as the Ray Jobs API reports it (docs/ray-jobs-api.md, "Job details").

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/boxed.h"
#include "reconciler/core/siphash.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/core/value.h"

namespace rg::core {

enum class RayJobStatus { kPending, kRunning, kStopped, kSucceeded, kFailed, kUnknown };

std::string_view RayJobStatusName(RayJobStatus s);
RayJobStatus ParseRayJobStatus(std::string_view s);  // unknown strings -> kUnknown
inline bool IsTerminal(RayJobStatus s) {
  return s == RayJobStatus::kStopped || s == RayJobStatus::kSucceeded || s == RayJobStatus::kFailed;
}
inline bool IsActive(RayJobStatus s) {
  return s == RayJobStatus::kPending || s == RayJobStatus::kRunning;
}

struct RayJob {
  std::string type;                   // "SUBMISSION" or "DRIVER"
  std::optional<std::string> job_id;  // driver JobID (hex), null until the driver starts
  std::string submission_id;          // empty for DRIVER jobs
  RayJobStatus status = RayJobStatus::kUnknown;
  std::string entrypoint;
  std::string message;
  std::optional<std::string> error_type;
  std::optional<int64_t> start_time_ms;  // Unix epoch milliseconds
  std::optional<int64_t> end_time_ms;
  StringMap metadata;
  std::optional<int64_t> driver_exit_code;
  std::optional<std::string> driver_node_id;
  // The runtime_env Ray echoes, as submitted (null when none was): read by GET /api/jobs/<id>
  // only, to check a job before adopting it (core/adoption.h). A listing leaves it empty, so
  // that 50,000 listed jobs pay a pointer each; the list's digest does not cover it.
  Boxed<Value> runtime_env;

  // The metadata value under `key`, or `fallback` when the job has none.
  std::string Label(std::string_view key, std::string_view fallback = {}) const {
    return std::string(LabelView(key, fallback));
  }
  // The same without a copy: valid while the job and `fallback` are.
  std::string_view LabelView(std::string_view key, std::string_view fallback = {}) const {
    auto it = metadata.find(key);
    return it == metadata.end() ? fallback : std::string_view(it->second);
  }
};

// Ray's jobs by submission id, as views of jobs someone else holds (a job listed twice: the
// one indexed last).
using RayJobsById = std::map<std::string_view, const RayJob*, std::less<>>;

struct RayVersion {
  std::string version;      // Jobs API version, e.g. "4"
  std::string ray_version;  // e.g. "2.52.0"
  std::string ray_commit;
  std::string session_name;  // changes when the head restarts
};

// A keyed digest of a job list: every field of every job, in the order given (the daemon's
// check that Ray's answer has not changed, engine/pass_memo.h).
uint64_t DigestJobs(const std::vector<RayJob>& jobs, const SipHasher::Key& key);

}  // namespace rg::core
