#pragma once
// What the planner's table tests share: a desired state of given specs, and a plan's actions
// in one line ("stop <id>;submit <id>;").

#include <string>
#include <utility>
#include <vector>

#include "reconciler/core/planner.h"

namespace rg::core::fixtures {

inline DesiredState Desired(std::vector<JobSpec> jobs) {
  DesiredState d;
  d.cluster = RayConfig{};
  d.jobs = std::move(jobs);
  return d;
}

inline std::string Describe(const Plan& plan) {
  std::string out;
  for (const auto& a : plan.actions) {
    out += a.kind == ActionKind::kStop ? "stop " : "submit ";
    out += a.submission_id + ";";
  }
  return out;
}

}  // namespace rg::core::fixtures
