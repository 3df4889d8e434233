#include "reconciler/engine/adoption_check.h"

#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "reconciler/core/adoption.h"
#include "reconciler/core/code_package.h"
#include "reconciler/core/render.h"
#include "reconciler/core/secrets.h"

namespace rg::engine {
namespace {

// A job of ours by its labels that the ledger's record of its name does not know.
bool UnknownToLedger(const core::RayJob& job, const core::Ledger& ledger) {
  auto it = ledger.find(job.LabelView(core::kMetaName));
  return it == ledger.end() || it->second.FindAttempt(job.submission_id) == nullptr;
}

// The valid specs by name (the last of a name, as the records find them).
std::unordered_map<std::string_view, const core::JobSpec*> SpecsByName(
    const core::DesiredState& state) {
  std::unordered_map<std::string_view, const core::JobSpec*> out;
  out.reserve(state.jobs.size());
  for (const core::JobSpec& spec : state.jobs) out.insert_or_assign(spec.name, &spec);
  return out;
}

// The context of the attempt `job` claims: its attempt and slot labels, and for a job with
// `after` the upstream runs the plan found SUCCEEDED. nullopt, with `why`, when an upstream has
// none (then no run of ours can exist for this version).
std::optional<core::RenderContext> ClaimedContext(const core::RayJob& job,
                                                  const core::JobSpec& spec,
                                                  const ports::DesiredSnapshot& snapshot,
                                                  const core::Plan& plan,
                                                  const core::Ledger& ledger,
                                                  const core::Ownership& owner, std::string& why) {
  core::RenderContext context;
  context.instance = owner.instance;
  context.attempt = core::AttemptLabel(job).value_or(0);
  context.slot = job.Label(core::kMetaSlot);
  context.commit = job.Label(core::kMetaCommit);
  context.repo_url = snapshot.repo_url;
  if (spec.pipeline().after.empty()) return context;
  context.upstream_runs.emplace();
  for (const std::string& name : spec.pipeline().after) {
    const core::JobPlan* up = plan.FindJob(name);
    if (up == nullptr || up->phase != core::Phase::kSucceeded || up->submission_id.empty()) {
      why = "its upstream " + name +
            " has no successful run, so ray-gitops cannot have submitted this one";
      return std::nullopt;
    }
    auto rec = ledger.find(name);
    context.upstream_runs->emplace(
        name,
        core::UpstreamRunOf(up->submission_id, up->attempt.value_or(0),
                            rec == ledger.end() ? nullptr : &rec->second, *snapshot.state.cluster));
  }
  return context;
}

// What differs between `job` and the render of the attempt it claims; empty when it is that run.
std::string CheckOne(ports::JobServer& server, const core::RayJob& listed,
                     const core::JobSpec& spec, const ports::DesiredSnapshot& snapshot,
                     const core::Plan& plan, const core::Ledger& ledger,
                     const core::Ownership& owner, const PackageOwners& packages, bool& gone) {
  std::string why;
  std::optional<core::RenderContext> context =
      ClaimedContext(listed, spec, snapshot, plan, ledger, owner, why);
  if (!context) return why;
  // A run recorded under an earlier rule's hash (core::JobSpec::legacy_spec_hashes) was
  // rendered with that hash in its id.
  core::JobSpec claimed;
  const core::JobSpec* rendered = &spec;
  if (const std::string_view hash = listed.LabelView(core::kMetaSpecHash); hash != spec.spec_hash) {
    claimed = spec;
    claimed.spec_hash = std::string(hash);
    rendered = &claimed;
  }
  core::Result<core::Value> body =
      core::RenderSubmission(*rendered, *snapshot.state.cluster, *context);
  if (!body.ok()) {
    return "ray-gitops cannot render the attempt it claims: " + body.error().message();
  }
  core::Result<core::RayJob> job = server.Get(listed.submission_id);
  if (!job.ok()) {
    gone = job.error().IsNotFound();
    return "it could not be read back to check it: " + job.error().message();
  }
  job->submission_id = listed.submission_id;
  if (std::string what =
          core::RenderMismatch(*job, *body, core::EffectiveSecrets(spec, *snapshot.state.cluster));
      !what.empty()) {
    return what;
  }
  if (spec.has_code() && !packages.Owns(spec.code().tree_id)) {
    return "its code package " + core::CodePackageUri(spec.code().tree_id) +
           " was not uploaded by ray-gitops";
  }
  return "";
}

}  // namespace

UnknownRunCheck CheckUnknownRuns(ports::JobServer& server, const ports::DesiredSnapshot& snapshot,
                                 const std::vector<core::RayJob>& observed,
                                 const core::Ledger& ledger, const core::Plan& plan,
                                 const core::Ownership& owner, const PackageOwners& packages) {
  UnknownRunCheck out;
  std::vector<const core::RayJob*> unknown;
  for (const core::RayJob& job : observed) {
    if (job.submission_id.empty() || !core::IsOurs(core::ClassifyJob(job, owner))) continue;
    if (UnknownToLedger(job, ledger)) unknown.push_back(&job);
  }
  if (unknown.empty() || !snapshot.state.cluster) return out;
  const auto specs = SpecsByName(snapshot.state);
  for (const core::RayJob* job : unknown) {
    const core::JobPlan* row = plan.FindJob(job->LabelView(core::kMetaName));
    if (row != nullptr && (row->frozen || row->phase == core::Phase::kInvalid)) continue;
    auto it = specs.find(job->LabelView(core::kMetaName));
    if (it == specs.end() || !it->second->IsCurrentHash(job->LabelView(core::kMetaSpecHash))) {
      // It claims an older version or a removed spec, which cannot be rendered: its full labels
      // are all there is. The planner stops it while active (a replaced or removed run is not
      // left running: a run whose status commit was lost must not run beside its successor),
      // and it is never recorded, adopted or deleted, since nothing proves it is ours.
      continue;
    }
    ++out.checked;
    bool gone = false;
    std::string what =
        CheckOne(server, *job, *it->second, snapshot, plan, ledger, owner, packages, gone);
    if (gone) continue;
    if (what.empty()) {
      out.proven.insert(job->submission_id);
    } else {
      out.disowned.insert_or_assign(job->submission_id, std::move(what));
    }
  }
  return out;
}

}  // namespace rg::engine
