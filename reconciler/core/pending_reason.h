#pragma once
// Why a run is PENDING: what its driver asks for that the cluster does not have. Ray accepts a
// job whose driver cannot be placed and leaves it PENDING without saying why; the pass reads
// the cluster's resources (GET /api/cluster_status) and the record's message says what is
// missing, e.g. "asks for 1 GPU; the cluster has 0 GPU, so it cannot start until the cluster
// grows" or "asks for 2 GPU; the cluster has 2 GPU, 1 free". Pure.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/planner.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/spec_model.h"

namespace rg::core {

// One resource a driver asks for: "CPU", "GPU", "memory" (bytes) or a custom resource.
struct ResourceAmount {
  std::string name;
  double amount = 0;

  friend bool operator==(const ResourceAmount&, const ResourceAmount&) = default;
};

// The cluster's resources as Ray's autoscaler last reported them: the total of every live
// node, and what is not in use. Keys are as Ray's dashboard spells them: it turns
// snake_case names into camelCase (`worker_node` is `workerNode`); FindClusterResource looks
// a name up either way. Memory is in bytes.
struct ClusterResources {
  std::map<std::string, double, std::less<>> total;
  std::map<std::string, double, std::less<>> available;
};

// What the driver of `spec`'s run asks for: its entrypoint_num_cpus, entrypoint_num_gpus,
// entrypoint_memory and entrypoint_resources, each the spec's else the cluster file's (the
// rule RenderSubmission follows). CPU, GPU and memory first, then custom resources by name;
// amounts of zero are left out.
std::vector<ResourceAmount> DriverResources(const JobSpec& spec, const RayConfig& cluster);

// The key Ray's dashboard gives a resource name in its JSON answers (Python's
// `to_camel_case`): split at '_', the first part as is, every other part title-cased.
// "worker_node" -> "workerNode", "node:__internal_head__" -> "node:InternalHead".
std::string RayDashboardKey(std::string_view name);

// The amount of `name` in `resources`, found under the name or its dashboard key.
std::optional<double> FindClusterResource(
    const std::map<std::string, double, std::less<>>& resources, std::string_view name);

// An amount as people read it: memory in B, KiB, MiB, GiB or TiB with at most two decimals
// ("1.5 GiB"), anything else with at most four (Ray counts in ten-thousandths: "0.25 GPU").
std::string FormatResourceAmount(std::string_view name, double amount);

// One line saying what `request` asks for that `cluster` lacks: first against the total (a
// request larger than the total can never be met, and the line says so), then, when it fits
// the total, against what is free. nullopt when everything fits.
std::optional<std::string> ExplainPending(const std::vector<ResourceAmount>& request,
                                          const ClusterResources& cluster);

// True when the explanation above starts `message` (a record's message written by an
// earlier pass).
bool IsPendingExplanation(std::string_view message);

// True when some planned job's latest run is PENDING in Ray: only then is reading the
// cluster's resources worth a request.
bool AnyRunPending(const Plan& plan, const RayJobsById& ray_jobs);

}  // namespace rg::core
