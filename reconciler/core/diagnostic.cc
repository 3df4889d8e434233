#include "reconciler/core/diagnostic.h"

#include "reconciler/core/escape.h"

namespace rg::core {

std::string Diagnostic::ToString() const {
  std::string out = EscapeText(path);
  if (line > 0) {
    out += ':' + std::to_string(line);
    if (column > 0) out += ':' + std::to_string(column);
  }
  out += ": error: ";
  out += EscapeText(message);
  return out;
}

}  // namespace rg::core
