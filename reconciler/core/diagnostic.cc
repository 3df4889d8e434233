#include "reconciler/core/diagnostic.h"

namespace rg::core {

std::string Diagnostic::ToString() const {
  std::string out = path;
  if (line > 0) {
    out += ':' + std::to_string(line);
    if (column > 0) out += ':' + std::to_string(column);
  }
  out += ": error: ";
  out += message;
  return out;
}

}  // namespace rg::core
