#include "reconciler/engine/status_commit.h"

#include "reconciler/core/render.h"
#include "reconciler/core/status_transitions.h"

namespace rg::engine {
namespace {

// The cluster whose ledger the records are in (every record of one pass names the same one).
std::string RayClusterOf(const core::StatusDiff& diff, const std::string& ray_address) {
  for (const auto& [name, record] : diff.changes) {
    if (record && !record->ray_cluster.empty()) return record->ray_cluster;
  }
  return core::StripUrlCredentials(ray_address);
}

}  // namespace

ports::StatusCommit MakeStatusCommit(const core::StatusDiff& diff, const std::string& spec_commit,
                                     const std::string& ray_address) {
  ports::StatusCommit commit;
  commit.subject = core::StatusCommitSubject(diff.subject_items);
  commit.body_lines = diff.transitions;
  if (!spec_commit.empty()) commit.trailers["Spec-Commit"] = spec_commit;
  if (std::string cluster = RayClusterOf(diff, ray_address); !cluster.empty()) {
    commit.trailers["Ray-Cluster"] = std::move(cluster);
  }
  return commit;
}

}  // namespace rg::engine
