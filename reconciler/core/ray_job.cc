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

}  // namespace rg::core
