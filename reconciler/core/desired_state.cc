#include "reconciler/core/desired_state.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace rg::core {

Diagnostics DesiredState::AllDiagnostics() const {
  Diagnostics out = cluster_diagnostics;
  for (const auto& bad : invalid) {
    out.insert(out.end(), bad.diagnostics.begin(), bad.diagnostics.end());
  }
  return out;
}

void MoveToInvalid(DesiredState& state, const std::vector<bool>& failed,
                   std::vector<InvalidSpec> moved) {
  if (moved.empty()) return;
  size_t kept = 0;
  for (size_t i = 0; i < state.jobs.size(); ++i) {
    if (i < failed.size() && failed[i]) continue;
    if (kept != i) state.jobs[kept] = std::move(state.jobs[i]);
    ++kept;
  }
  state.jobs.erase(state.jobs.begin() + static_cast<std::ptrdiff_t>(kept), state.jobs.end());
  for (InvalidSpec& bad : moved) state.invalid.push_back(std::move(bad));
  std::stable_sort(state.invalid.begin(), state.invalid.end(),
                   [](const InvalidSpec& a, const InvalidSpec& b) { return a.path < b.path; });
}

}  // namespace rg::core
