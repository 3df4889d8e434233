#pragma once
// Internal to rg_spec: a JobSpec file as loaded on its own, plus what the checks across
// files need to know about it even when it is invalid.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/spec_model.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::spec {

struct LoadedJobSpec {
  Parsed<core::JobSpec> parsed;
  // The name the job has or would have: explicit when readable, else derived from the path.
  std::string name;
  bool name_is_explicit = false;
  core::SourcePos name_pos{1, 1};
  std::optional<std::string> pinned_id;
  core::SourcePos pinned_id_pos;
  // Every string value that mentions ${shared_root}.
  std::vector<core::SourcePos> shared_root_uses;
  // Every string value that uses ${runs.<name>.dir} (a run directory is under shared_root).
  std::vector<core::SourcePos> run_dir_uses;

  friend bool operator==(const LoadedJobSpec&, const LoadedJobSpec&) = default;
};

LoadedJobSpec LoadJobSpecForDesiredState(std::string_view text, const std::string& path,
                                         std::string_view jobs_dir);

}  // namespace rg::spec
