#include "reconciler/engine/narrow_pass.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/render.h"
#include "reconciler/engine/pass_steps.h"

namespace rg::engine {

PassIndex IndexPass(const PassResult& result, const ports::StatusStore* store) {
  PassIndex index;
  if (store == nullptr || !result.snapshot || !result.ledger) return index;
  // Foreign jobs and a skewed clock: warnings about the cluster, which a narrow pass keeps
  // (and reads anew); any other names a file a narrow pass would not read.
  const bool foreign_only = std::ranges::all_of(result.warnings, [](const Warning& w) {
    return w.kind == kWarnForeignJobs || w.kind == kWarnClockSkew;
  });
  if (!foreign_only) return index;
  index.memo = RememberPass(result, store);
  if (!index.valid()) return index;
  const core::DesiredState& state = result.snapshot->state;
  index.name_of_path.reserve(state.jobs.size());
  index.path_of_name.reserve(state.jobs.size());
  for (const core::JobSpec& spec : state.jobs) {
    index.name_of_path.emplace(spec.path, spec.name);
    index.path_of_name.emplace(spec.name, spec.path);
    if (spec.submission_id) index.path_of_pin.emplace(*spec.submission_id, spec.path);
  }
  // The removed jobs' hashes: from their records after the pass (which hold the ledger's
  // attempts and those Ray lists), and from what is left of the ledger once the pass built
  // its records from it (the records of jobs the plan did not name).
  auto add_removed = [&index](const core::StatusRecord& record) {
    if (index.path_of_name.contains(record.name)) return;
    index.removed_by_hash.emplace(record.spec_hash, record.name);
    for (const core::AttemptRecord& a : record.attempts) {
      index.removed_by_hash.emplace(a.spec_hash, record.name);
    }
  };
  for (const core::StatusRecord& record : result.records) add_removed(record);
  for (const auto& [name, record] : *result.ledger) add_removed(record);
  index.cluster = state.cluster;
  index.pipelines = core::HasPipelines(state);
  index.code = state.uses_code;
  index.warnings = result.warnings;
  index.redactor = result.redactor;
  return index;
}

namespace {

// The commit `ref` names now, when it moved on from the index's (fast-forward) while the
// status branch stayed where the index left it; nullopt otherwise, and `why` says why not.
std::optional<std::string> MovedCommit(const PassIndex& index, const ReconcileDeps& deps,
                                       const std::string& ref, std::string& why) {
  core::Result<std::optional<std::string>> head = deps.source->Head(ref);
  if (!head.ok() || !head->has_value()) {
    why = "the watched branch cannot be read";
    return std::nullopt;
  }
  if (**head == index.memo.spec_commit) {
    why = "the watched branch has not moved (Ray's jobs or the status branch did)";
    return std::nullopt;
  }
  core::Result<std::optional<std::string>> tip = deps.store->Tip();
  if (!tip.ok() || !tip->has_value() || **tip != index.memo.ledger_tip) {
    why = "the status branch moved";
    return std::nullopt;
  }
  if (deps.source->Relate(index.memo.spec_commit, **head) !=
      ports::CommitRelation::kAncestorOrSame) {
    why = "the watched branch's history was rewritten";
    return std::nullopt;
  }
  return **head;
}

// The jobs a narrow pass plans (the old names of the changed files, the new ones, and removed
// jobs in the ledger whose content a new job has), and the spec hashes of the new jobs.
struct Wanted {
  NameSet names;
  std::unordered_set<std::string> new_hashes;
};

// nullopt when a new name or pin is held by a file that did not change. `desired`: the
// changed specs, bound to the instance (their hashes are the recorded ones).
std::optional<Wanted> WantedNames(const PassIndex& index, const core::DesiredState& desired,
                                  const std::vector<std::string>& gone_paths, std::string& why) {
  Wanted wanted;
  const std::unordered_set<std::string> gone(gone_paths.begin(), gone_paths.end());
  for (const std::string& path : gone_paths) {
    auto it = index.name_of_path.find(path);
    if (it == index.name_of_path.end()) {
      why = path + " changed and was not a valid spec at the last full pass";
      return std::nullopt;
    }
    wanted.names.insert(it->second);
  }
  for (const core::JobSpec& spec : desired.jobs) {
    wanted.names.insert(spec.name);
    auto held = index.path_of_name.find(spec.name);
    if (held != index.path_of_name.end() && !gone.contains(held->second)) {
      why = spec.path + " takes the name " + spec.name + " of " + held->second;
      return std::nullopt;
    }
    if (spec.submission_id) {
      auto pinned = index.path_of_pin.find(*spec.submission_id);
      if (pinned != index.path_of_pin.end() && !gone.contains(pinned->second)) {
        why = spec.path + " pins the submission id of " + pinned->second;
        return std::nullopt;
      }
    }
    if (held == index.path_of_name.end()) wanted.new_hashes.insert(spec.spec_hash);
  }
  for (const std::string& hash : wanted.new_hashes) {
    auto [from, to] = index.removed_by_hash.equal_range(hash);
    for (auto it = from; it != to; ++it) wanted.names.insert(it->second);
  }
  return wanted;
}

// The desired state of the changed files, bound to the instance, with the secrets it adds.
PassInputs ChangedInputs(ports::SpecChanges changes, const PassIndex& index,
                         const ReconcileOptions& options, PassResult& result) {
  PassInputs in;
  in.snapshot = std::move(changes.snapshot);
  in.owner = OwnershipFor(options.policy.owner, in.snapshot);
  core::BindDesiredState(in.snapshot.state, in.owner.instance);
  in.desired_elsewhere =
      static_cast<int>(index.name_of_path.size()) - static_cast<int>(changes.gone.size());
  result.spec_commit = in.snapshot.commit;
  result.redactor = options.secrets;
  result.redactor.Merge(index.redactor);
  result.redactor.AddDesiredState(in.snapshot.state);
  return in;
}

// Ray's jobs of the wanted names, when Ray's list is the one the index was taken with (the
// others are dropped as the list is read). A run of a removed job that only Ray knows has the
// content of a new job: nullopt, for a full pass to say "renamed from" with all its runs.
std::optional<std::vector<core::RayJob>> WantedJobs(const PassIndex& index, const Wanted& wanted,
                                                    const ReconcileDeps& deps,
                                                    const ReconcileOptions& options,
                                                    std::string& why) {
  if (!options.digest_key) {
    why = "no key to digest Ray's job list with";
    return std::nullopt;
  }
  deps.server->DigestListsWith(*options.digest_key);
  bool renamed_unknown = false;
  core::Result<std::vector<core::RayJob>> listed =
      deps.server->ListWhere([&](const core::RayJob& job) {
        const std::string_view name = job.LabelView(core::kMetaName);
        if (wanted.names.contains(name)) return true;
        if (!name.empty() && !wanted.new_hashes.empty() &&
            wanted.new_hashes.contains(std::string(job.LabelView(core::kMetaSpecHash))) &&
            !index.path_of_name.contains(std::string(name))) {
          renamed_unknown = true;
        }
        return false;
      });
  if (!listed.ok()) {
    why = "cannot list Ray's jobs: " + listed.error().message();
    return std::nullopt;
  }
  if (renamed_unknown) {
    why = "a run of a removed job that only Ray knows has a new spec's content";
    return std::nullopt;
  }
  if (deps.server->ListedDigest(*listed, *options.digest_key) != index.memo.ray_digest) {
    why = "Ray's job list changed since the last full pass";
    return std::nullopt;
  }
  return std::move(*listed);
}

// Steps 1 to 3 of a narrow pass; nullopt when a full pass must run instead.
std::optional<PassInputs> NarrowInputs(const PassIndex& index, const ReconcileDeps& deps,
                                       const ReconcileOptions& options, PassResult& result,
                                       std::string& why) {
  const std::optional<std::string> commit = MovedCommit(index, deps, options.ref, why);
  if (!commit) return std::nullopt;
  core::Result<std::optional<ports::SpecChanges>> changes =
      deps.source->LoadChanges(options.ref, index.memo.spec_commit, kMaxNarrowFiles);
  if (!changes.ok() || !changes->has_value()) {
    why = changes.ok() ? "more than spec files changed (the cluster file, a link, a submodule, "
                         "the jobs folder), or more than " +
                             std::to_string(kMaxNarrowFiles) + " of them"
                       : "cannot compare the commits: " + changes.error().message();
    return std::nullopt;
  }
  if ((*changes)->snapshot.commit != *commit) {
    why = "the watched branch moved again while the pass read it";
    return std::nullopt;
  }
  const core::DesiredState& changed = (*changes)->snapshot.state;
  if (!changed.ClusterValid() || !changed.cluster_diagnostics.empty() || !changed.invalid.empty()) {
    why = "a changed spec is invalid";
    return std::nullopt;
  }
  if (core::HasPipelines(changed)) {
    why = "a changed spec has after: its plan depends on its upstreams'";
    return std::nullopt;
  }
  const std::vector<std::string> gone = (*changes)->gone;
  PassInputs in = ChangedInputs(std::move(**changes), index, options, result);
  std::optional<Wanted> wanted = WantedNames(index, in.snapshot.state, gone, why);
  if (!wanted) return std::nullopt;
  std::optional<std::vector<core::RayJob>> observed =
      WantedJobs(index, *wanted, deps, options, why);
  if (!observed) return std::nullopt;
  in.observed = std::move(*observed);
  in.head_now_ms = deps.server->HeadNowMs();
  in.head_clock_offset_ms = deps.server->HeadClockOffsetMs();
  SanitizeJobs(in.observed, result.redactor);
  if (!RunsFromNewerCommits(*deps.source, in).empty()) {
    why = "a run of a changed job comes from a newer commit";
    return std::nullopt;
  }
  ports::LedgerScope scope;
  scope.instance = options.policy.owner.instance;
  scope.ray_cluster = core::RayClusterName(*in.snapshot.state.cluster, options.ray_address);
  core::Result<std::optional<core::Ledger>> ledger = deps.store->ReadLedgerOf(
      scope, std::vector<std::string>(wanted->names.begin(), wanted->names.end()));
  if (!ledger.ok() || !ledger->has_value()) {
    why = "a status file of a changed job cannot be read as a record of this cluster";
    return std::nullopt;
  }
  in.ledger = std::move(**ledger);
  in.only = std::move(wanted->names);
  return in;
}

}  // namespace

std::optional<PassResult> NarrowPass(const PassIndex& index, const ReconcileDeps& deps,
                                     const ReconcileOptions& options,
                                     const NarrowArtifacts& artifacts, std::string* why_not) {
  std::string why;
  const auto cannot = [&]() {
    if (why_not != nullptr) *why_not = why;
    return std::optional<PassResult>();
  };
  if (!index.valid() || deps.store == nullptr) {
    why = index.valid() ? "no status store" : "no index of a full pass at rest";
    return cannot();
  }
  if (index.pipelines) {
    why = "a spec has after: a job's plan depends on its upstreams'";
    return cannot();
  }
  if (index.code) {
    why = "a spec has code: a commit outside the jobs folder can change what it runs";
    return cannot();
  }
  // A run's deadline or a schedule's slot fell due since: every job must be planned at this
  // time, not only these.
  if (!MemoHolds(index.memo, options.now_ms)) {
    why = "a deadline or a schedule slot fell due since the full pass at rest";
    return cannot();
  }
  PassResult result;
  std::optional<PassInputs> in = NarrowInputs(index, deps, options, result, why);
  if (!in) return cannot();
  result.loads = 1;
  result.ray_digest = index.memo.ray_digest;
  result.narrow = true;
  result.narrow_names.assign(in->only->begin(), in->only->end());
  result.warnings = index.warnings;
  ReconcileDeps narrowed = deps;
  if (artifacts) narrowed.artifacts = artifacts(in->snapshot);
  // A tip that moved before the stops, or a remote that cannot be asked: a full pass sorts it
  // out, with its own reloads.
  if (const TipCheck check = PlanApplyRecord(narrowed, options, *in, result); !check.proceed()) {
    why = check.moved
              ? "the watched branch moved again before the stops: " + TipMovedSummary(*check.moved)
              : check.error->message();
    return cannot();
  }
  FinishPass(result);
  return result;
}

}  // namespace rg::engine
