#include "reconciler/core/ray_job.h"

namespace rg::core {

std::string_view RayJobStatusName(RayJobStatus s) {
  switch (s) {
    case RayJobStatus::kPending:
      return "PENDING";
    case RayJobStatus::kRunning:
      return "RUNNING";
    case RayJobStatus::kStopped:
      return "STOPPED";
    case RayJobStatus::kSucceeded:
      return "SUCCEEDED";
    case RayJobStatus::kFailed:
      return "FAILED";
    case RayJobStatus::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

RayJobStatus ParseRayJobStatus(std::string_view s) {
  if (s == "PENDING") return RayJobStatus::kPending;
  if (s == "RUNNING") return RayJobStatus::kRunning;
  if (s == "STOPPED") return RayJobStatus::kStopped;
  if (s == "SUCCEEDED") return RayJobStatus::kSucceeded;
  if (s == "FAILED") return RayJobStatus::kFailed;
  return RayJobStatus::kUnknown;
}

namespace {

void AddOptional(SipHasher& h, const std::optional<std::string>& value) {
  h.Field(static_cast<uint64_t>(value.has_value()));
  if (value) h.Field(*value);
}

void AddOptional(SipHasher& h, const std::optional<int64_t>& value) {
  h.Field(static_cast<uint64_t>(value.has_value()));
  if (value) h.Field(static_cast<uint64_t>(*value));
}

}  // namespace

uint64_t DigestJobs(const std::vector<RayJob>& jobs, const SipHasher::Key& key) {
  SipHasher h(key);
  h.Field(static_cast<uint64_t>(jobs.size()));
  for (const RayJob& job : jobs) {
    h.Field(job.type);
    AddOptional(h, job.job_id);
    h.Field(job.submission_id);
    h.Field(static_cast<uint64_t>(job.status));
    h.Field(job.entrypoint);
    h.Field(job.message);
    AddOptional(h, job.error_type);
    AddOptional(h, job.start_time_ms);
    AddOptional(h, job.end_time_ms);
    h.Field(static_cast<uint64_t>(job.metadata.size()));
    for (const auto& [name, value] : job.metadata) {
      h.Field(name);
      h.Field(value);
    }
    AddOptional(h, job.driver_exit_code);
    AddOptional(h, job.driver_node_id);
  }
  return h.Finish();
}

}  // namespace rg::core
