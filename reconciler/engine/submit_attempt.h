#pragma once
// One idempotent submission of a JobSpec (docs/artifacts.md): render the body, record
// the cluster's view, submit with the deterministic id, adopt the run when Ray already has
// it from the same spec, and leave the artifacts behind.

#include <string>
#include <vector>

#include "reconciler/core/ownership.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/render.h"
#include "reconciler/core/result.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/core/value.h"
#include "reconciler/ports/artifact_sink.h"
#include "reconciler/ports/job_server.h"

namespace rg::engine {

// What the artifacts record besides the rendered body: the inputs as read, and where they
// were sent.
struct SubmitArtifactInputs {
  std::string ray_config_text;  // cluster.yaml as read
  std::string jobspec_text;     // the JobSpec as read
  std::string ray_address;      // the Jobs API address (credentials are stripped on record)
};

struct SubmitAttemptResult {
  std::string submission_id;
  // True when Ray already had this id from the same spec and instance: nothing was sent.
  bool adopted = false;
  // The POST /api/jobs/ body as rendered, each secret's value shown as its placeholder (what
  // the artifacts record); the body sent with the values is not kept.
  core::Value body;
  // Why the artifacts could not be written; empty when they were (or no sink was given).
  // The submission stands either way.
  std::string artifact_error;
};

// Renders `spec` against `cluster` and submits it.
// - Errors from rendering (kInvalidInput) stop before anything is sent.
// - A duplicate id (kConflict from the server) is resolved by GET-ing the job: it is adopted
//   when its metadata has the spec's gitops.spec-hash, it is ours (`owner`; null: the
//   context's instance and repository) and its entrypoint, runtime_env and code tree are this
//   attempt's render (core::RenderMismatch); otherwise kConflict, naming the job and what
//   differs (the other repository of a foreign run; never a value).
// - Every other server error is returned as is.
// The cluster status before submitting and the job list after are fetched only for the
// artifacts, and only when `artifacts` is not null; their failures are recorded, not
// returned.
core::Result<SubmitAttemptResult> SubmitAttempt(
    ports::JobServer& server, ports::ArtifactSink* artifacts, const core::JobSpec& spec,
    const core::RayConfig& cluster, const core::RenderContext& context,
    const SubmitArtifactInputs& inputs, const core::Ownership* owner = nullptr);

// One one-off run of `spec` (`ray-gitops submit`), which no instance manages (docs/operations.md):
// - its id is core::OneOffSubmissionId(spec, run); the run is rendered as the spec pinned to
//   that id, so an entrypoint that names its run (verl's experiment name and checkpoint
//   folder) names this one;
// - its metadata holds gitops.submitted-by: cli and the name, spec-path, spec-hash and
//   attempt labels (commit and repo only when the context has them), never
//   gitops.managed-by; context.instance is not used;
// - a duplicate id is never adopted: kConflict, and no artifact is written (the directory
//   belongs to the run that exists).
// Otherwise as SubmitAttempt.
core::Result<SubmitAttemptResult> SubmitOneOff(ports::JobServer& server,
                                               ports::ArtifactSink* artifacts,
                                               const core::JobSpec& spec, int run,
                                               const core::RayConfig& cluster,
                                               const core::RenderContext& context,
                                               const SubmitArtifactInputs& inputs);

// Who a job belongs to, as the job list shows it: the instance in gitops.managed-by, else
// "cli" for a one-off run (gitops.submitted-by: cli), else "-".
std::string OwnerOf(const core::RayJob& job);

// One line per job, in the server's order:
// "<submission_id or job_id> <STATUS> <type> managed-by=<OwnerOf(job)> <entrypoint>".
std::string FormatJobListLines(const std::vector<core::RayJob>& jobs);

}  // namespace rg::engine
