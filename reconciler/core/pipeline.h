#pragma once
// Pipelines (docs/jobspec.md, "Pipelines"): `after: [names]` holds a job until the current
// run of every job it names has SUCCEEDED, and `${runs.<name>.dir}` in its strings is that
// run's directory. Pure: the identity of a job with `after` (its spec hash takes in the spec
// hash of every job it names, recursively), the order in which jobs are planned, and the
// resolution of the variable.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/result.h"
#include "reconciler/core/spec_model.h"

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

// Upstream job name -> the submission id of its current successful run.
using UpstreamRuns = std::map<std::string, std::string, std::less<>>;

// <shared_root>/jobs/<submission_id>: a run's directory (its artifacts, and its checkpoints
// under checkpoints/).
std::string RunDirectory(std::string_view shared_root, std::string_view submission_id);

// A copy of `spec` whose rendered strings (code_path, the trainer's fields and overrides,
// entrypoint, runtime_env, env_vars) have every `${runs.<name>.dir}` replaced by the run
// directory of runs.at(name). Errors (kInvalidInput) when a named job has no run in `runs`, or
// the cluster sets no shared_root.
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
