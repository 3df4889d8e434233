#include "reconciler/core/diagnostic.h"

#include "reconciler/core/escape.h"

namespace rg::core {

std::string Diagnostic::ToString(std::string_view severity) const {
  std::string out = EscapeText(path);
  if (line > 0) {
    out += ':' + std::to_string(line);
    if (column > 0) out += ':' + std::to_string(column);
  }
  out += ": ";
  out += severity;
  out += ": ";
  out += EscapeText(message);
  return out;
}

}  // namespace rg::core
