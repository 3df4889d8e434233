#pragma once
// The yaml-cpp document builder ParseYamlDocument used to be, kept so that a test can compare
// the two on every YAML file the repository holds. Not for production code.

#include <string>
#include <string_view>

#include "reconciler/spec/yaml_document.h"

namespace rg::spec {

// ParseYamlDocument as it was: the same checks before parsing, libfyaml's syntax check, then
// yaml-cpp (a counting pass, then YAML::Load). Never throws.
YamlParse ParseYamlDocumentLegacy(std::string_view text, const std::string& path);

}  // namespace rg::spec
