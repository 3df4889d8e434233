#pragma once
// Pipelines (docs/jobspec.md, "Pipelines"): `after: [names]` holds a job until the current
// run of every job it names has SUCCEEDED, and `${runs.<name>.dir}` in its strings is that
// run's folder. Pure: the identity of a job with `after` (its spec hash takes in the spec
// hash of every job it names, recursively), the order in which jobs are planned, and the
// resolution of the variable.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/result.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/core/status_model.h"

namespace rg::core {

// One `${runs.` in a string: [begin, end) of the variable as written and the job it names.
// `well_formed` is false when it is not `${runs.<job name>.dir}` (then `name` is what stood
// between the prefix and the closing brace, or the rest of the text when there is none).
struct RunsVariableUse {
  size_t begin = 0;
  size_t end = 0;
  std::string name;
  bool well_formed = false;
};

// Every `${runs.` in `text`, in order.
std::vector<RunsVariableUse> FindRunsVariables(std::string_view text);

// <shared_root>/jobs/<id>: with a run id (the id of the run's attempt 0, DESIGN §2.1), the run
// folder that all its attempts share (verl's checkpoints are under checkpoints/); with a
// submission id, that attempt's folder (its artifacts: config/, logs/, debug/).
std::string RunDirectory(std::string_view shared_root, std::string_view id);

// RunDirectory(shared_root, run_id) + "/checkpoints": the trainer.default_local_dir of every
// attempt of a verl run, so a retried attempt resumes from its predecessors' checkpoints.
std::string CheckpointDirectory(std::string_view shared_root, std::string_view run_id);

// The run id of attempt `attempt` of a run whose attempt has id `submission_id`: the id without
// its "-r<attempt>" suffix (attempt 0's id is the run id). An id without that suffix is returned
// unchanged.
std::string RunIdOf(std::string_view submission_id, int attempt);

// What `${runs.<name>.dir}` of a downstream spec resolves to: an upstream's successful run.
struct UpstreamRun {
  std::string submission_id;  // the attempt that SUCCEEDED
  // The folder recorded for the run (StatusRecord::run_dir). Empty: the run was submitted before
  // run folders existed, or without a shared_root; the variable then names the successful
  // attempt's folder, RunDirectory(shared_root, submission_id), as it always did.
  std::string run_dir;

  friend bool operator==(const UpstreamRun&, const UpstreamRun&) = default;
};

// Upstream job name -> its current successful run.
using UpstreamRuns = std::map<std::string, UpstreamRun, std::less<>>;

// The UpstreamRun of attempt `attempt` (id `submission_id`) of an upstream that SUCCEEDED, from
// the ledger's record of that job (null when it has none). A record whose latest attempt is this
// one gives its run_dir (empty for a run submitted before run folders existed: that attempt's
// folder). With no record of it (a pass without a ledger, before its status was written), the
// run was submitted by this version: its run folder, when the cluster has a shared_root.
UpstreamRun UpstreamRunOf(std::string_view submission_id, int attempt, const StatusRecord* record,
                          const RayConfig& cluster);

// A copy of `spec` whose rendered strings (code_path, the trainer's fields and overrides,
// entrypoint, runtime_env, env_vars) have every `${runs.<name>.dir}` replaced by the folder of
// runs.at(name) (UpstreamRun). Errors (kInvalidInput) when a named job has no run in `runs`, or
// the run has no recorded folder and the cluster sets no shared_root.
Result<JobSpec> ResolveRunsVariables(const JobSpec& spec, const UpstreamRuns& runs,
                                     const RayConfig& cluster);

// Binds every valid spec of `state` to `instance` (BindSpecToInstance) and then gives every
// spec with `after` its pipeline identity: the hash of its own canonical JSON with
// "@after": {upstream name: upstream spec_hash}, upstreams bound first (so a change anywhere
// upstream reaches every job downstream). A spec whose upstream is not a valid spec (invalid,
// or itself waiting on an invalid one) keeps its own hash: it is frozen by the planner, which
// never acts on that hash. Specs with `after` drop their legacy hashes (no earlier rule knew
// `after`, and an old hash would not follow the upstream). Specs without a document (lean)
// keep their hash. Call it once per desired state, before planning or rendering.
void BindDesiredState(DesiredState& state, std::string_view instance);

// The valid specs of `state` (indices into state.jobs) in an order where every job comes after
// the valid jobs it names in `after`: the jobs without `after` in path order, then the others.
// REQUIRES: the `after` graph among valid specs has no cycle (the loader makes a spec on a
// cycle invalid); a cycle's members are appended last, in path order.
std::vector<size_t> PipelineOrder(const DesiredState& state);

// True when some valid spec of `state` has `after`.
bool HasPipelines(const DesiredState& state);

}  // namespace rg::core
