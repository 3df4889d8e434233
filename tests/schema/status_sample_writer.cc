// Writes status files through the real encoder (rg::spec::EncodeStatusYaml) into the directory
// given as the only argument, one file per record, so that schema_checks.py can hold them
// against schema/status.schema.json. The records cover every phase, every Ray status, unknown
// values (written as null) and text that YAML must quote.

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "reconciler/core/ray_job.h"
#include "reconciler/core/status_model.h"
#include "reconciler/spec/status_codec.h"

namespace {

using rg::core::AttemptRecord;
using rg::core::Phase;
using rg::core::RayJobStatus;
using rg::core::StatusRecord;

constexpr int64_t kStartMs = 1795339801250;  // 2026-11-22T09:30:01.250Z

StatusRecord RunningAfterAFailure() {
  StatusRecord r;
  r.name = "ppo-qwen2.5-0.5b-gsm8k";
  r.instance = "ray-gitops";
  r.ray_cluster = "http://127.0.0.1:8265";
  r.spec_path = "jobs/ppo/qwen2.5-0.5b-gsm8k.yaml";
  r.spec_hash = "3f2a1c9b0e";
  r.spec_commit = "0123456789abcdef0123456789abcdef01234567";
  r.phase = Phase::kRunning;
  r.submission_id = "ppo-qwen2.5-0.5b-gsm8k-3f2a1c9b0e-r1";
  r.attempt = 1;
  r.status = RayJobStatus::kRunning;
  r.message = "Job is currently running.";
  r.job_id = "02000000";
  r.start_time_ms = kStartMs;
  r.dashboard_url = "http://127.0.0.1:8265/#/jobs/ppo-qwen2.5-0.5b-gsm8k-3f2a1c9b0e-r1";
  AttemptRecord first;
  first.attempt = 0;
  first.submission_id = "ppo-qwen2.5-0.5b-gsm8k-3f2a1c9b0e";
  first.spec_hash = "3f2a1c9b0e";
  first.status = RayJobStatus::kFailed;
  first.phase = Phase::kFailed;
  first.start_time_ms = kStartMs - 3600000;
  first.end_time_ms = kStartMs - 60000;
  first.message = "Job entrypoint command failed with exit code 1: 'trainer: error'";
  AttemptRecord second;
  second.attempt = 1;
  second.submission_id = r.submission_id;
  second.spec_hash = r.spec_hash;
  second.status = RayJobStatus::kRunning;
  second.phase = Phase::kRunning;
  second.start_time_ms = kStartMs;
  r.attempts = {first, second};
  return r;
}

StatusRecord InvalidSpec() {
  StatusRecord r;
  r.name = "broken";
  r.spec_path = "jobs/broken.yaml";
  r.phase = Phase::kInvalid;
  r.errors = {"jobs/broken.yaml:3:9: error: nnodes must be an integer >= 1 (got \"two\")",
              "jobs/broken.yaml:4:1: error: unknown key \"nnode\" (did you mean \"nnodes\"?)"};
  return r;
}

StatusRecord RemovedButKept() {
  StatusRecord r;
  r.name = "smoke-hello";
  r.spec_path = "jobs/smoke/hello.yaml";
  r.spec_hash = "0a1b2c3d4e";
  r.phase = Phase::kRemoved;
  r.on_remove = rg::core::OnRemove::kKeep;
  r.submission_id = "smoke-hello-0a1b2c3d4e";
  r.attempt = 0;
  r.status = RayJobStatus::kStopped;
  r.message = "Job was intentionally stopped.\nSecond line: with # and 'quotes'";
  r.error_type = "JOB_ENTRYPOINT_COMMAND_ERROR";
  r.start_time_ms = 0;
  r.end_time_ms = kStartMs;
  r.driver_exit_code = -15;
  AttemptRecord only;
  only.attempt = 0;
  only.submission_id = r.submission_id;
  only.status = RayJobStatus::kStopped;
  only.phase = Phase::kStopped;
  only.stop_reason = rg::core::StopReason::kRemoval;
  only.stop_sent_ms = kStartMs - 5000;
  r.attempts = {only};
  return r;
}

bool Write(const std::string& dir, const std::string& file, const StatusRecord& record) {
  std::ofstream out(dir + "/" + file, std::ios::binary);
  out << rg::spec::EncodeStatusYaml(record);
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = Write(dir, "running-after-a-failure.yaml", RunningAfterAFailure()) &&
            Write(dir, "invalid-spec.yaml", InvalidSpec()) &&
            Write(dir, "removed-but-kept.yaml", RemovedButKept());

  // Every phase the model has, so that a new one cannot be missing from the schema.
  const auto& phases = rg::core::kAllPhases;
  const std::vector<RayJobStatus> statuses = {RayJobStatus::kPending, RayJobStatus::kRunning,
                                              RayJobStatus::kStopped, RayJobStatus::kSucceeded,
                                              RayJobStatus::kFailed,  RayJobStatus::kUnknown};
  for (size_t i = 0; i < phases.size(); ++i) {
    StatusRecord r = RunningAfterAFailure();
    r.phase = phases[i];
    r.status = statuses[i % statuses.size()];
    r.attempts.back().phase = phases[i];
    r.attempts.back().status = r.status;
    if (phases[i] == Phase::kDeadlineExceeded) {
      r.attempts.back().stop_reason = rg::core::StopReason::kDeadline;
    }
    ok = ok && Write(dir, "phase-" + std::string(rg::core::PhaseName(phases[i])) + ".yaml", r);
  }
  if (!ok) {
    std::fprintf(stderr, "cannot write the status samples to %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
