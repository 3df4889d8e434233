#pragma once
// Internal to rg_spec: the strict YAML 1.2 well-formedness check that runs before a document
// is built. yaml-cpp, which builds the document, accepts many malformed streams and reads them
// as something else (an unterminated quote swallowing the lines after it, a line without a
// colon becoming a key with a null value); libfyaml's parser refuses them. See
// docs/architecture.md, "Reading YAML".

#include <optional>
#include <string>
#include <string_view>

#include "reconciler/core/diagnostic.h"

namespace rg::spec {

// The first syntax error of the YAML stream `text`, as a diagnostic against `path` with a
// 1-based line and column, or nullopt when the stream is well-formed. A stream of several
// documents is well-formed here; the caller decides how many it wants. Only syntax is checked:
// duplicate keys, unknown anchors, tags and depth are left to the document builder.
// Never throws and prints nothing. REQUIRES: `text` is valid UTF-8 (the caller checks first,
// to keep its own message for bad bytes).
std::optional<core::Diagnostic> FindYamlSyntaxError(std::string_view text, const std::string& path);

}  // namespace rg::spec
