#pragma once
// YAML loading and validation of cluster.yaml and JobSpecs: the only place a YAML library
// appears. Every problem in a file is reported (not just the first), each as a
// Diagnostic "path:line:col: error: message". A document that is not well-formed YAML 1.2 is
// one error and nothing else is read from it. Hostile input (over 1 MiB, alias bombs,
// non-UTF-8, documents that are not a mapping) is rejected with a diagnostic, never a
// crash or a hang.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/diagnostic.h"
#include "reconciler/core/spec_model.h"

namespace rg::spec {

inline constexpr size_t kMaxSpecFileBytes = size_t{1024} * 1024;

template <typename T>
struct Parsed {
  std::optional<T> value;  // set iff diagnostics is empty
  core::Diagnostics diagnostics;
  bool ok() const { return value.has_value(); }
  friend bool operator==(const Parsed&, const Parsed&) = default;
};

// `path` is used in diagnostics and, for a JobSpec, to derive the default name.
Parsed<core::RayConfig> LoadRayConfig(std::string_view text, const std::string& path);

// The keys each kind of document takes, in the order of its table of fields (spec_loader.cc);
// schema/cluster.schema.json and schema/jobspec.schema.json list the same keys.
std::vector<std::string_view> RayConfigKeys();
std::vector<std::string_view> JobSpecKeys();
// The known key closest to `key` by edit distance, for a "did you mean"; empty when none is
// close enough. On a tie the earlier candidate wins.
std::string_view DidYouMean(std::string_view key, const std::vector<std::string_view>& known);

Parsed<core::JobSpec> LoadJobSpec(std::string_view text, const std::string& path,
                                  std::string_view jobs_dir = "jobs");

// A file handed to LoadDesiredState: its repo-relative path and content.
struct SourceFile {
  std::string path;
  std::string content;
};

// Loads the cluster file (nullopt: missing) and every JobSpec, then checks what only the
// whole set can show: duplicate names and duplicate pinned ids (both files become invalid),
// and `${shared_root}` used while cluster.yaml has none.
core::DesiredState LoadDesiredState(const std::optional<SourceFile>& cluster_file,
                                    const std::vector<SourceFile>& spec_files,
                                    std::string_view jobs_dir = "jobs");

// For callers that cache per-file parse results (e.g. by Git blob id): one JobSpec file parsed
// as LoadDesiredState parses it, keeping what the checks across files need (see
// loaded_job_spec.h). Immutable once shared, so one result can serve many passes.
struct LoadedJobSpec;
struct LoadedSpecFile {
  std::string path;
  std::shared_ptr<const LoadedJobSpec> loaded;
};
std::shared_ptr<const LoadedJobSpec> ParseSpecFileForDesiredState(std::string_view text,
                                                                  const std::string& path,
                                                                  std::string_view jobs_dir);
// A parsed spec to change before it is shared (a pass that lets go of its document): `loaded`
// itself when nothing else holds it, else a copy.
std::shared_ptr<LoadedJobSpec> OwnLoadedSpec(std::shared_ptr<const LoadedJobSpec> loaded);

// The half of LoadDesiredState that parses nothing: takes the parsed cluster file (nullopt:
// missing, reported against `cluster_path`) and parsed specs, and runs the checks across files
// (duplicate names and pinned ids, `${shared_root}` without a shared_root). Cheap; run it on
// every pass even when every file came from a cache. A loaded spec that `spec_files` alone
// holds (nobody else shares it: not a cache's) is moved into the result, not copied; every
// LoadedJobSpec is made mutable (std::make_shared<LoadedJobSpec>) for that, whatever the
// pointer's constness says.
core::DesiredState CheckDesiredStateSet(const std::optional<Parsed<core::RayConfig>>& cluster,
                                        const std::string& cluster_path,
                                        std::vector<LoadedSpecFile> spec_files);

// True for paths under jobs_dir ending in .yaml or .yml.
bool IsSpecPath(std::string_view path, std::string_view jobs_dir);

// Reads a desired-state repository from a directory on disk (for `validate`, `render`):
// <repo>/<cluster_file> and every *.yaml|*.yml under <repo>/<jobs_dir>, paths reported
// relative to repo. Files that cannot be read become diagnostics. Without `keep_documents`
// each spec's parsed document (JobSpec::document) is let go as the spec is read: `validate`
// needs the fields and their positions only, and at 50,000 specs the documents are 100 MB.
core::DesiredState LoadDesiredStateFromDirectory(const std::string& repo_dir,
                                                 const std::string& cluster_file = "cluster.yaml",
                                                 const std::string& jobs_dir = "jobs",
                                                 bool keep_documents = true);

// Serialises a value as block-style YAML (for `render --format yaml` and status files).
std::string ToYaml(const core::Value& value);

}  // namespace rg::spec
