#pragma once
// A daemon snapshot with jobs in several phases, one of them carrying hostile text, shared by
// the status page tests and the browser test.

#include "reconciler/core/status_model.h"
#include "reconciler/engine/daemon_snapshot.h"

namespace rg::server::testing {

inline constexpr char kHostileMessage[] =
    "<script>document.title='pwned'</script><img src=x onerror=alert(1)> & \"quoted\"";

inline engine::DaemonSnapshot SampleSnapshot() {
  using core::Phase;
  using core::RayJobStatus;
  engine::DaemonSnapshot s;
  s.now_ms = 1795000000000;  // 2026-11-18T...
  s.instance = "lab-a";
  s.repo_url = "https://git.example.com/ml/training-jobs.git";
  s.branch = "main";
  s.status_branch = "ray-gitops/status";
  s.ray_address = "http://127.0.0.1:8265";
  s.dashboard_url = "http://127.0.0.1:8265";
  s.last_pass_start_ms = s.now_ms - 12000;
  s.last_pass_end_ms = s.now_ms - 9000;
  s.last_success_ms = s.now_ms - 9000;
  s.next_pass_ms = s.now_ms + 6000;
  s.ready = true;
  s.spec_commit = "3f2a1c9b0e4d5f60718293a4b5c6d7e8f9012345";
  s.status_commit = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807";
  s.jobs_as_of_ms = s.last_pass_end_ms;

  core::StatusRecord running;
  running.name = "ppo-qwen";
  running.spec_path = "jobs/ppo-qwen.yaml";
  running.spec_commit = s.spec_commit;
  running.phase = Phase::kRunning;
  running.submission_id = "ppo-qwen-3f2a1c9b0e";
  running.attempt = 1;
  running.status = RayJobStatus::kRunning;
  running.start_time_ms = s.now_ms - 3600000;
  running.message = "Job is currently running.";

  core::StatusRecord failed;
  failed.name = "grpo-llama";
  failed.spec_path = "jobs/grpo-llama.yaml";
  failed.spec_commit = s.spec_commit;
  failed.phase = Phase::kFailed;
  failed.submission_id = "grpo-llama-77aa01bc2d-2";
  failed.attempt = 2;
  failed.status = RayJobStatus::kFailed;
  failed.start_time_ms = s.now_ms - 7200000;
  failed.end_time_ms = s.now_ms - 7000000;
  failed.message = kHostileMessage;
  failed.driver_exit_code = 1;
  core::AttemptRecord first;
  first.attempt = 1;
  first.submission_id = "grpo-llama-77aa01bc2d";
  first.status = RayJobStatus::kFailed;
  first.phase = Phase::kFailed;
  first.start_time_ms = s.now_ms - 9000000;
  first.end_time_ms = s.now_ms - 8000000;
  first.message = "Job entrypoint command failed with exit code 1";
  core::AttemptRecord second = first;
  second.attempt = 2;
  second.submission_id = failed.submission_id;
  second.start_time_ms = failed.start_time_ms;
  second.end_time_ms = failed.end_time_ms;
  second.message = kHostileMessage;
  failed.attempts = {first, second};

  core::StatusRecord done;
  done.name = "sft-mistral";
  done.spec_path = "jobs/sft-mistral.yaml";
  done.spec_commit = "0011223344556677889900112233445566778899";
  done.phase = Phase::kSucceeded;
  done.submission_id = "sft-mistral-0b1c2d3e4f";
  done.attempt = 1;
  done.status = RayJobStatus::kSucceeded;
  done.start_time_ms = s.now_ms - 90000000;
  done.end_time_ms = s.now_ms - 80000000;
  done.message = "Job finished successfully.";

  core::StatusRecord invalid;
  invalid.name = "broken-spec";
  invalid.spec_path = "jobs/broken-spec.yaml";
  invalid.phase = Phase::kInvalid;
  invalid.errors = {"jobs/broken-spec.yaml:4:3: error: unknown key \"entrypint\""};

  core::StatusRecord pending;
  pending.name = "dpo-gemma";
  pending.spec_path = "jobs/dpo-gemma.yaml";
  pending.spec_commit = s.spec_commit;
  pending.phase = Phase::kPending;
  pending.submission_id = "dpo-gemma-5e6f7a8b9c";
  pending.attempt = 1;
  pending.status = RayJobStatus::kPending;

  s.jobs = {invalid, pending, failed, running, done};
  return s;
}

}  // namespace rg::server::testing
