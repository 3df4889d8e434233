#include "reconciler/core/desired_state.h"

namespace rg::core {

Diagnostics DesiredState::AllDiagnostics() const {
  Diagnostics out = cluster_diagnostics;
  for (const auto& bad : invalid) {
    out.insert(out.end(), bad.diagnostics.begin(), bad.diagnostics.end());
  }
  return out;
}

}  // namespace rg::core
