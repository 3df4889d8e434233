#pragma once
// What the planner's and the status update's table tests share: a spec, a run of it as Ray
// lists it, its ledger attempt and record, a desired state of given specs, and a plan's
// actions in one line ("stop <id>;submit <id>;").

#include <string>
#include <utility>
#include <vector>

#include "reconciler/core/planner.h"
#include "reconciler/core/render.h"

namespace rg::core::fixtures {

inline constexpr const char* kHash = "aaaaaaaaaa";
inline constexpr const char* kOldHash = "bbbbbbbbbb";

inline JobSpec Spec(const std::string& name, const std::string& hash = kHash) {
  JobSpec s;
  s.name = name;
  s.path = "jobs/" + name + ".yaml";
  s.workload = Workload::kCustom;
  s.entrypoint = "true";
  s.spec_hash = hash;
  return s;
}

inline RayJob Job(const std::string& name, int attempt, RayJobStatus status,
                  const std::string& hash = kHash, const std::string& instance = "ray-gitops") {
  RayJob j;
  j.type = "SUBMISSION";
  j.submission_id = name + "-" + hash + (attempt > 0 ? "-r" + std::to_string(attempt) : "");
  j.status = status;
  j.start_time_ms = 1000 + attempt;
  j.metadata = {{std::string(kMetaManagedBy), instance},
                {std::string(kMetaName), name},
                {std::string(kMetaSpecPath), "jobs/" + name + ".yaml"},
                {std::string(kMetaSpecHash), hash},
                {std::string(kMetaAttempt), std::to_string(attempt)},
                {std::string(kMetaRepo), "https://git.example/team-a/jobs"}};
  return j;
}

inline AttemptRecord Attempt(const std::string& name, int attempt, RayJobStatus status,
                             const std::string& stop_reason = "", const std::string& hash = kHash) {
  AttemptRecord a;
  a.attempt = attempt;
  a.submission_id = name + "-" + hash + (attempt > 0 ? "-r" + std::to_string(attempt) : "");
  a.spec_hash = hash;
  a.status = status;
  a.phase = PhaseForRayStatus(status);
  if (!stop_reason.empty()) {  // as the status codec reads it
    a.stop_reason = ParseStopReason(stop_reason).value_or(StopReason::kUnknown);
    if (a.stop_reason == StopReason::kUnknown) a.unknown_stop_reason = stop_reason;
  }
  return a;
}

inline StatusRecord Record(const std::string& name, std::vector<AttemptRecord> attempts,
                           OnRemove on_remove = OnRemove::kStop) {
  StatusRecord r;
  r.name = name;
  r.spec_path = "jobs/" + name + ".yaml";
  r.spec_hash = attempts.empty() ? kHash : attempts.back().spec_hash;
  r.on_remove = on_remove;
  if (!attempts.empty()) {
    r.submission_id = attempts.back().submission_id;
    r.attempt = attempts.back().attempt;
    r.status = attempts.back().status;
    r.phase = attempts.back().phase;
  }
  r.attempts = std::move(attempts);
  return r;
}

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
