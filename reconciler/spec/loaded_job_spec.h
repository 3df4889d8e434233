#pragma once
// Internal to rg_spec: a JobSpec file as loaded on its own, plus what the checks across
// files need to know about it even when it is invalid.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/boxed.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::spec {

// Where a spec's strings use what lies under the cluster's shared_root; most specs use nothing
// of it, so a LoadedJobSpec keeps these apart (LoadedJobSpec::root_uses).
struct SharedRootUses {
  // Every string value that mentions ${shared_root}.
  std::vector<core::SourcePos> shared_root;
  // Every string value that uses ${runs.<name>.dir} (a run directory is under shared_root).
  std::vector<core::SourcePos> run_dirs;

  friend bool operator==(const SharedRootUses&, const SharedRootUses&) = default;
};

struct LoadedJobSpec {
  Parsed<core::JobSpec> parsed;
  // The name the job has or would have: explicit when readable, else derived from the path.
  std::string name;
  bool name_is_explicit = false;
  core::SourcePos name_pos{1, 1};
  std::optional<std::string> pinned_id;
  core::SourcePos pinned_id_pos;
  // Boxed: two vectors in place made a LoadedJobSpec 776 bytes, allocated with its shared_ptr's
  // count in jemalloc's class of 896 instead of 768 (6 MB at 50,000 specs).
  core::Boxed<SharedRootUses> root_uses;
  // The `after` of a spec with errors (whose `parsed.value` is then empty), as far as it could be
  // read: the checks across files still name its unknown upstreams and the cycles through it, so
  // that one `validate` reports them beside its other errors. Empty for a valid spec (its `after`
  // is in `parsed.value`) and for most invalid ones.
  core::Boxed<core::PipelineFields> invalid_after;

  friend bool operator==(const LoadedJobSpec&, const LoadedJobSpec&) = default;
};

LoadedJobSpec LoadJobSpecForDesiredState(std::string_view text, const std::string& path,
                                         std::string_view jobs_dir);

}  // namespace rg::spec
