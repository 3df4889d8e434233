#include "reconciler/engine/submit_attempt.h"

#include <utility>

#include "reconciler/core/adoption.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/ownership.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/secrets.h"

namespace rg::engine {
namespace {

// The id the body carries; the renderer always sets it, the fallback keeps this total.
std::string SubmissionIdOf(const core::Value& body, const core::JobSpec& spec, int attempt) {
  if (const core::Value* id = body.Find("submission_id"); id != nullptr && id->is_string()) {
    return id->as_string();
  }
  return core::SubmissionIdForAttempt(spec, attempt);
}

// Adoption needs the same spec, the same owner (instance and repository) and the body this
// attempt renders (core/adoption.h): labels alone are a claim anyone can make. Anything else is
// someone else's run.
core::Result<core::RayJob> AdoptExisting(ports::JobServer& server, const std::string& id,
                                         const core::JobSpec& spec, const core::Value& body,
                                         const core::Ownership& owner,
                                         const core::StringMap& secrets,
                                         const std::string& ray_text) {
  core::Result<core::RayJob> existing = server.Get(id);
  if (!existing.ok()) {
    return core::Error(existing.error().kind(),
                       "submission id " + id + " already exists in Ray (" + ray_text +
                           ") but could not be read back: " + existing.error().message());
  }
  const std::string hash = existing->Label(core::kMetaSpecHash);
  if (!spec.IsCurrentHash(hash)) {
    return core::Error::Conflict(
        "submission id " + id + " already exists in Ray with a different spec (" +
        std::string(core::kMetaSpecHash) + " " + (hash.empty() ? "unset" : "'" + hash + "'") +
        ", this spec has '" + spec.spec_hash + "'); not adopting it");
  }
  switch (core::ClassifyJob(*existing, owner)) {
    case core::JobOwnership::kOurs:
    case core::JobOwnership::kOursPrevious:
      if (std::string what = core::RenderMismatch(*existing, body, secrets); !what.empty()) {
        return core::Error::Conflict(core::DisownedMessage(id, what));
      }
      return existing;
    case core::JobOwnership::kDisowned:
      return core::Error::Conflict(core::DisownedMessage(id, owner.disowned.at(id)));
    case core::JobOwnership::kForeign:
      return core::Error::Conflict("submission id " + id + " already exists in Ray, a run of " +
                                   core::RecordedRepoOf(*existing) +
                                   ", another repository using instance '" + owner.instance +
                                   "'; not adopting it (give each repository its own --instance)");
    case core::JobOwnership::kNotOurs:
      break;
  }
  const std::string managed_by = existing->Label(core::kMetaManagedBy);
  return core::Error::Conflict(
      "submission id " + id + " already exists in Ray, managed by " +
      (managed_by.empty() ? std::string("nobody") : "'" + managed_by + "'") + ", not by '" +
      owner.instance + "'; not adopting it");
}

// A submission as sent, and as every record shows it: the same body, but with each secret's
// value as its placeholder (core::SecretPlaceholder), which adoption takes for any value.
struct RenderedBodies {
  core::Value sent;
  core::Value shown;
};

// The bodies of `spec` for `context`: rendered twice when the context delivers values. A spec
// whose secrets go with env delivery is never sent without its values (a placeholder would
// reach the run as its value).
core::Result<RenderedBodies> RenderBodies(const core::JobSpec& spec, const core::RayConfig& cluster,
                                          const core::RenderContext& context) {
  if (context.secret_values == nullptr && cluster.secret_delivery == core::SecretDelivery::kEnv &&
      !core::EffectiveSecrets(spec, cluster).empty()) {
    return core::Error::InvalidInput(
        spec.path +
        " has secrets to deliver with secret_delivery: env, and no values were read: only `sync` "
        "and the daemon read the secrets directory (let them submit it, or use "
        "secret_delivery: node)");
  }
  core::Result<core::Value> sent = core::RenderSubmission(spec, cluster, context);
  if (!sent.ok()) return sent.error();
  if (context.secret_values == nullptr) return RenderedBodies{*sent, std::move(*sent)};
  core::RenderContext shown_context = context;
  shown_context.secret_values = nullptr;
  core::Result<core::Value> shown = core::RenderSubmission(spec, cluster, shown_context);
  if (!shown.ok()) return shown.error();
  return RenderedBodies{std::move(*sent), std::move(*shown)};
}

// What a duplicate id means: the daemon's run of the same spec (adopted when it is ours), or
// a one-off run that exists already (never adopted).
enum class OnDuplicate { kAdopt, kRefuse };

// `secrets`: the job's (core::EffectiveSecrets), whose values adoption never compares and the
// artifacts never record.
core::Result<SubmitAttemptResult> SendAndRecord(
    ports::JobServer& server, ports::ArtifactSink* artifacts, const core::JobSpec& spec,
    RenderedBodies bodies, int attempt, const core::RenderContext& context,
    const SubmitArtifactInputs& inputs, OnDuplicate on_duplicate, const core::Ownership& owner,
    const core::StringMap& secrets) {
  SubmitAttemptResult result;
  result.body = std::move(bodies.shown);
  result.submission_id = SubmissionIdOf(result.body, spec, attempt);

  std::string cluster_status;
  if (artifacts != nullptr) {
    core::Result<std::string> status = server.ClusterStatus();
    if (!status.ok()) {
      cluster_status = "unavailable: " + status.error().ToString();
    } else if (status->empty()) {
      cluster_status = "unavailable: Ray returned an empty cluster status";
    } else {
      cluster_status = std::move(*status);
    }
  }

  std::string ray_answer;
  core::Result<std::string> submitted = server.Submit(bodies.sent);
  bodies.sent = core::Value();  // the values go no further
  if (submitted.ok()) {
    ray_answer = "accepted: submission_id " + *submitted;
  } else if (submitted.error().IsConflict() && on_duplicate == OnDuplicate::kRefuse) {
    return core::Error::Conflict("submission id " + result.submission_id +
                                 " already exists in Ray; a one-off run is never adopted");
  } else if (submitted.error().IsConflict()) {
    core::Result<core::RayJob> adopted =
        AdoptExisting(server, result.submission_id, spec, result.body, owner, secrets,
                      submitted.error().message());
    if (!adopted.ok()) return adopted.error();
    result.adopted = true;
    ray_answer = "duplicate submission id: " + submitted.error().message() + "\n" +
                 "adopted the existing job (same spec hash, instance and rendered body), status " +
                 std::string(core::RayJobStatusName(adopted->status));
  } else {
    return submitted.error();
  }

  if (artifacts != nullptr) {
    ports::SubmissionRecord record;
    record.submission_id = result.submission_id;
    record.adopted = result.adopted;
    record.ray_config_text = inputs.ray_config_text;
    record.jobspec_text = inputs.jobspec_text;
    // The body as sent, a secret's value shown as its reference (docs/jobspec.md, "Secrets").
    record.submit_payload = core::WithSecretPlaceholders(result.body, secrets);
    record.ray_address = inputs.ray_address;
    record.commit = context.commit;
    record.ray_answer = std::move(ray_answer);
    record.cluster_status_pre = std::move(cluster_status);
    core::Result<std::vector<core::RayJob>> jobs = server.List();
    record.job_list_post =
        jobs.ok() ? FormatJobListLines(*jobs) : "unavailable: " + jobs.error().ToString();
    if (core::Status written = artifacts->WriteSubmission(record); !written.ok()) {
      result.artifact_error = written.error().ToString();
    }
  }
  return result;
}

}  // namespace

std::string OwnerOf(const core::RayJob& job) {
  std::string instance = job.Label(core::kMetaManagedBy);
  if (!instance.empty()) return instance;
  if (job.Label(core::kMetaSubmittedBy) == core::kSubmittedByCli) {
    return std::string(core::kSubmittedByCli);
  }
  return "-";
}

std::string FormatJobListLines(const std::vector<core::RayJob>& jobs) {
  std::string out;
  for (const core::RayJob& job : jobs) {
    std::string id = job.submission_id;
    if (id.empty()) id = job.job_id.value_or("-");
    out += id;
    out += ' ';
    out += core::RayJobStatusName(job.status);
    out += ' ';
    out += job.type.empty() ? "-" : job.type;
    out += " managed-by=" + OwnerOf(job);
    out += ' ';
    // One line per job, whatever the entrypoint holds.
    for (char c : job.entrypoint) out += (c == '\n' || c == '\r') ? ' ' : c;
    out += '\n';
  }
  return out;
}

core::Result<SubmitAttemptResult> SubmitAttempt(
    ports::JobServer& server, ports::ArtifactSink* artifacts, const core::JobSpec& spec,
    const core::RayConfig& cluster, const core::RenderContext& context,
    const SubmitArtifactInputs& inputs, const core::Ownership* owner) {
  // A job with `after` runs only from its upstreams' successful runs, which the plan names: a
  // submission without them would carry ${runs.<name>.dir} unresolved.
  if (!spec.pipeline().after.empty() && !context.upstream_runs) {
    return core::Error::InvalidInput(spec.path + " has after, and no upstream run was given");
  }
  core::Result<RenderedBodies> bodies = RenderBodies(spec, cluster, context);
  if (!bodies.ok()) return bodies.error();
  core::Ownership from_context;
  from_context.instance = context.instance;
  from_context.repo = core::RepoIdentity(context.repo_url);
  return SendAndRecord(server, artifacts, spec, std::move(*bodies), context.attempt, context,
                       inputs, OnDuplicate::kAdopt, owner != nullptr ? *owner : from_context,
                       core::EffectiveSecrets(spec, cluster));
}

core::Result<SubmitAttemptResult> SubmitOneOff(ports::JobServer& server,
                                               ports::ArtifactSink* artifacts,
                                               const core::JobSpec& spec, int run,
                                               const core::RayConfig& cluster,
                                               const core::RenderContext& context,
                                               const SubmitArtifactInputs& inputs) {
  core::JobSpec pinned = spec;
  pinned.submission_id = core::OneOffSubmissionId(spec, run);
  core::RenderContext one_off = context;
  one_off.attempt = 0;
  // A one-off run of a job with `after` is the person's call, but its ${runs.<name>.dir} name
  // runs only the daemon's plan knows: such a spec cannot run as a one-off.
  if (!spec.pipeline().after.empty()) {
    core::Result<core::JobSpec> alone = core::ResolveRunsVariables(spec, {}, cluster);
    if (!alone.ok()) {
      return core::Error::InvalidInput(
          spec.path + " uses " +
          alone.error().message().substr(0, alone.error().message().find(':')) +
          ", the run directory of an upstream's successful run, which only the daemon's plan "
          "resolves; a one-off run cannot (let the daemon submit it)");
    }
    one_off.upstream_runs.emplace();
  }
  core::Result<RenderedBodies> bodies = RenderBodies(pinned, cluster, one_off);
  if (!bodies.ok()) return bodies.error();
  for (core::Value* body : {&bodies->sent, &bodies->shown}) {
    core::Value::Object& metadata = (*body)["metadata"].as_object();
    metadata.erase(std::string(core::kMetaManagedBy));
    metadata[std::string(core::kMetaSubmittedBy)] = std::string(core::kSubmittedByCli);
  }
  return SendAndRecord(server, artifacts, pinned, std::move(*bodies), one_off.attempt, one_off,
                       inputs, OnDuplicate::kRefuse, core::Ownership{},
                       core::EffectiveSecrets(pinned, cluster));
}

}  // namespace rg::engine
