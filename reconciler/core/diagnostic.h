#pragma once
// A problem found in a file a person wrote, located precisely enough to jump to.

#include <string>
#include <string_view>
#include <vector>

namespace rg::core {

struct Diagnostic {
  std::string path;  // as the user named it: repo-relative ("jobs/ppo/x.yaml") or as given
  int line = 0;      // 1-based; 0 when the problem concerns the whole file
  int column = 0;    // 1-based; 0 when unknown
  std::string message;

  // "path:line:col: error: message" (line and column left out when 0), one line: the path and
  // the message, which may quote a value, are shown as EscapeText shows them. `severity` is
  // "warning" for a warning (core/spec_warnings.h).
  std::string ToString(std::string_view severity = "error") const;
  friend bool operator==(const Diagnostic&, const Diagnostic&) = default;
};

using Diagnostics = std::vector<Diagnostic>;

}  // namespace rg::core
