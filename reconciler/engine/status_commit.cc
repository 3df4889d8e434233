#include "reconciler/engine/status_commit.h"

#include "reconciler/core/render.h"

namespace rg::engine {

ports::StatusCommit MakeStatusCommit(const core::StatusDiff& diff, const std::string& spec_commit,
                                     const std::string& ray_address) {
  ports::StatusCommit commit;
  const size_t n = diff.changes.size();
  commit.subject = "ray-gitops: " + std::to_string(n) + (n == 1 ? " change" : " changes");
  commit.body_lines = diff.transitions;
  if (!spec_commit.empty()) commit.trailers["Spec-Commit"] = spec_commit;
  if (!ray_address.empty()) commit.trailers["Ray-Cluster"] = core::StripUrlCredentials(ray_address);
  return commit;
}

}  // namespace rg::engine
