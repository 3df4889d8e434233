#pragma once
// What a commit (or a directory on disk) says should run.

#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/diagnostic.h"
#include "reconciler/core/spec_model.h"

namespace rg::core {

// A JobSpec file that failed validation. Its job is frozen: nothing is submitted or stopped
// for it. `name` is the name it would have (explicit if readable, else derived from the path).
struct InvalidSpec {
  std::string path;
  std::string name;
  Diagnostics diagnostics;
};

struct DesiredState {
  std::optional<RayConfig> cluster;  // unset when cluster.yaml is missing or invalid
  Diagnostics cluster_diagnostics;
  std::vector<JobSpec> jobs;         // valid specs, sorted by path
  std::vector<InvalidSpec> invalid;  // sorted by path
  // Some spec (valid or not) ships a `code` folder (adapters::CodeFolders): a commit that
  // changes only files outside the jobs folder can then change what runs.
  bool uses_code = false;

  bool ClusterValid() const { return cluster.has_value(); }
  // Every diagnostic, cluster first, then specs by path.
  Diagnostics AllDiagnostics() const;
};

// Makes the valid specs state.jobs[i] with failed[i] invalid: they leave `jobs` (the others
// keep their order) and `moved` (one entry per failed spec) joins `invalid`, sorted by path.
// For the checks that run after loading (time zones, code folders).
void MoveToInvalid(DesiredState& state, const std::vector<bool>& failed,
                   std::vector<InvalidSpec> moved);

}  // namespace rg::core
