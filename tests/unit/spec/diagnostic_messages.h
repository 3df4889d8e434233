#pragma once
// The spec tests compare diagnostics as the lines a user reads ("path:line:col: error: ...").

#include <string>
#include <vector>

#include "reconciler/core/diagnostic.h"

namespace rg::spec {

inline std::vector<std::string> Messages(const core::Diagnostics& diagnostics) {
  std::vector<std::string> out;
  for (const auto& d : diagnostics) out.push_back(d.ToString());
  return out;
}

}  // namespace rg::spec
