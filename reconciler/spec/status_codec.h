#pragma once
// The status file format (docs/status-branch.md, schema/status.schema.json): one StatusRecord as
// status/<name>.yaml on the status branch. Encoding is deterministic (the same record gives
// the same bytes), so an unchanged record never makes a commit. Decoding ignores keys it does
// not know, so that files written by a newer ray-gitops can still be read.

#include <string>
#include <string_view>

#include "reconciler/core/result.h"
#include "reconciler/core/status_model.h"

namespace rg::spec {

inline constexpr std::string_view kStatusDir = "status";

// "status/<name>.yaml".
std::string StatusFilePath(std::string_view name);

// Every key of the schema is written, in the schema's order; values that are unknown or
// empty are written as null. Times are RFC 3339 UTC with milliseconds.
std::string EncodeStatusYaml(const core::StatusRecord& record);

// kInvalidInput (message starting with `path`) when the text is not YAML, not a mapping, lacks
// `name` or `phase`, or holds a known key with a value of the wrong type. Unknown keys are
// ignored; an unknown Ray status reads as kUnknown. A file without `instance` and
// `ray_cluster` (written before ledgers had owners) reads with both empty. Whether the name
// matches the file's name is the reader's business (the store checks it).
core::Result<core::StatusRecord> DecodeStatusYaml(std::string_view text, const std::string& path);

}  // namespace rg::spec
