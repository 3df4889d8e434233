#include "reconciler/cli/plan_changes.h"

#include <optional>
#include <string_view>
#include <unordered_map>

#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/plan_format.h"

namespace rg::cli {
namespace {

// Desired states at older commits, each read once; nullptr for one the local copy lacks.
class CommitStates {
 public:
  CommitStates(adapters::GitDesiredStateSource& source, std::string instance)
      : source_(source), instance_(std::move(instance)) {}

  const core::DesiredState* At(const std::string& commit) {
    auto [it, fresh] = states_.try_emplace(commit);
    if (fresh) {
      core::Result<ports::DesiredSnapshot> read = source_.ReadWhole(commit);
      if (read.ok()) {
        core::BindDesiredState(read->state, instance_);
        it->second = std::move(read->state);
      }
    }
    return it->second ? &*it->second : nullptr;
  }

 private:
  adapters::GitDesiredStateSource& source_;
  std::string instance_;
  std::map<std::string, std::optional<core::DesiredState>> states_;
};

// The job called `name` in `state`, else the one at `path`. (Once per replaced job, in an old
// commit's state.)
const core::JobSpec* FindSpec(const core::DesiredState& state, std::string_view name,
                              std::string_view path) {
  const core::JobSpec* by_path = nullptr;
  for (const core::JobSpec& spec : state.jobs) {
    if (spec.name == name) return &spec;
    if (spec.path == path) by_path = &spec;
  }
  return by_path;
}

const core::RayConfig* ClusterOf(const core::DesiredState& state) {
  return state.cluster ? &*state.cluster : nullptr;
}

// The job's spec now, whole: the pass's specs are lean (no document to diff).
std::optional<core::JobSpec> SpecNow(adapters::GitDesiredStateSource& source,
                                     const std::string& commit, const core::JobPlan& jp,
                                     const std::string& instance) {
  core::Result<std::optional<core::JobSpec>> now = source.ReadWholeSpec(commit, jp.spec_path);
  if (!now.ok() || !*now || (*now)->name != jp.name) return std::nullopt;
  core::BindSpecToInstance(**now, instance);
  return std::move(*now);
}

// The pass's spec of `name` (its identity is the pass's, `after` included), or nullptr.
const core::JobSpec* DesiredSpec(const core::DesiredState& desired, std::string_view name) {
  for (const core::JobSpec& spec : desired.jobs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::optional<core::JobDiff> ReplacedJobChange(adapters::GitDesiredStateSource& source,
                                               CommitStates& states, const core::JobPlan& jp,
                                               const core::DesiredState& desired,
                                               const std::string& commit,
                                               const core::StatusRecord& record,
                                               const std::string& instance) {
  if (record.spec_commit.empty()) return std::nullopt;
  std::optional<core::JobSpec> whole = SpecNow(source, commit, jp, instance);
  // A job with `after` has the hash its upstreams give it, which one file alone cannot.
  if (const core::JobSpec* bound = DesiredSpec(desired, jp.name); whole && bound != nullptr) {
    whole->spec_hash = bound->spec_hash;
    whole->legacy_spec_hashes = bound->legacy_spec_hashes;
    // And a job with `code` the tree the pass read (one file alone has no tree).
    if (bound->has_code()) whole->mutable_code() = bound->code();
  }
  const core::JobSpec* now = whole ? &*whole : nullptr;
  if (now == nullptr) return std::nullopt;
  const core::DesiredState* then = states.At(record.spec_commit);
  const core::JobSpec* old = then != nullptr ? FindSpec(*then, jp.name, record.spec_path) : nullptr;
  if (old == nullptr) {
    core::JobDiff missing;
    missing.name = jp.name;
    missing.render_error = "the spec of the old run (" + record.spec_path + " at " +
                           record.spec_commit.substr(0, 10) +
                           ") is not in this repository's history: no field diff";
    return missing;
  }
  return core::DiffJob(old, ClusterOf(*then), now, ClusterOf(desired), instance);
}

bool ActiveAndKept(const core::PlanActionIndex& acts, const core::JobPlan& jp) {
  return acts.JobActionName(jp) == "keep" && jp.observed && core::IsActive(jp.observed->status);
}

}  // namespace

PlanChanges ComputePlanChanges(adapters::GitDesiredStateSource& source, const core::Plan& plan,
                               const core::DesiredState& desired, const std::string& commit,
                               const core::Ledger& ledger, const std::string& instance) {
  PlanChanges out;
  CommitStates states(source, instance);
  std::unordered_map<std::string_view, const core::JobSpec*> by_name;
  for (const core::JobSpec& spec : desired.jobs) by_name.emplace(spec.name, &spec);
  // Active runs submitted from another commit, by that commit: whom a cluster change reaches.
  std::map<std::string, std::vector<const core::JobSpec*>> kept_by_commit;
  const core::PlanActionIndex acts(plan);
  for (const core::JobPlan& jp : plan.jobs) {
    auto record = ledger.find(jp.name);
    if (record == ledger.end()) continue;
    const std::string action = acts.JobActionName(jp);
    if (action == "replace" || (action == "submit" && jp.spec_changed)) {
      if (auto change =
              ReplacedJobChange(source, states, jp, desired, commit, record->second, instance)) {
        out.jobs.emplace(jp.name, std::move(*change));
      }
    } else if (ActiveAndKept(acts, jp) && !record->second.spec_commit.empty() &&
               record->second.spec_commit != commit) {
      if (auto spec = by_name.find(jp.name); spec != by_name.end()) {
        kept_by_commit[record->second.spec_commit].push_back(spec->second);
      }
    }
  }
  for (const auto& [then_commit, specs] : kept_by_commit) {
    const core::DesiredState* then = states.At(then_commit);
    if (then == nullptr) continue;
    core::ClusterDiff c = core::DiffCluster(ClusterOf(*then), ClusterOf(desired), specs, instance);
    if (c.fields.empty()) continue;
    c.since = then_commit.substr(0, 10);
    out.cluster.push_back(std::move(c));
  }
  return out;
}

}  // namespace rg::cli
