#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>
#include <utility>

#include "reconciler/core/identity.h"
#include "reconciler/spec/loaded_job_spec.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::spec {
namespace {

namespace fs = std::filesystem;

std::string_view TrimSlashes(std::string_view dir) {
  while (dir.starts_with("./")) dir.remove_prefix(2);
  while (!dir.empty() && dir.back() == '/') dir.remove_suffix(1);
  if (dir == ".") return {};
  return dir;
}

bool HasHiddenComponent(std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    if (end > start && path[start] == '.') return true;
    start = end + 1;
  }
  return false;
}

void AddDiagnostic(LoadedJobSpec& spec, const std::string& path, core::SourcePos pos,
                   std::string message) {
  spec.parsed.diagnostics.push_back({path, pos.line, pos.column, std::move(message)});
}

void SortByPosition(core::Diagnostics& diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const auto& a, const auto& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
}

core::DesiredState Assemble(const std::string& cluster_path,
                            const std::optional<SourceFile>& cluster_file,
                            const std::vector<SourceFile>& spec_files, std::string_view jobs_dir) {
  std::optional<Parsed<core::RayConfig>> cluster;
  if (cluster_file) cluster = LoadRayConfig(cluster_file->content, cluster_file->path);
  std::vector<LoadedSpecFile> loaded;
  loaded.reserve(spec_files.size());
  for (const auto& file : spec_files) {
    loaded.push_back({file.path, ParseSpecFileForDesiredState(file.content, file.path, jobs_dir)});
  }
  return CheckDesiredStateSet(cluster, cluster_path, loaded);
}

// Reads at most kMaxSpecFileBytes + 1 bytes: enough for the loader to reject a larger file.
std::optional<std::string> ReadFileBounded(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string content(kMaxSpecFileBytes + 1, '\0');
  in.read(content.data(), static_cast<std::streamsize>(content.size()));
  if (in.bad()) return std::nullopt;
  content.resize(static_cast<size_t>(in.gcount()));
  return content;
}

}  // namespace

std::shared_ptr<const LoadedJobSpec> ParseSpecFileForDesiredState(std::string_view text,
                                                                  const std::string& path,
                                                                  std::string_view jobs_dir) {
  return std::make_shared<const LoadedJobSpec>(LoadJobSpecForDesiredState(text, path, jobs_dir));
}

core::DesiredState CheckDesiredStateSet(const std::optional<Parsed<core::RayConfig>>& cluster,
                                        const std::string& cluster_path,
                                        const std::vector<LoadedSpecFile>& spec_files) {
  core::DesiredState state;
  if (cluster) {
    state.cluster = cluster->value;
    state.cluster_diagnostics = cluster->diagnostics;
  } else {
    state.cluster_diagnostics.push_back({cluster_path, 0, 0, "file not found"});
  }

  std::vector<const LoadedSpecFile*> files;
  files.reserve(spec_files.size());
  for (const auto& file : spec_files) files.push_back(&file);
  std::stable_sort(
      files.begin(), files.end(),
      [](const LoadedSpecFile* a, const LoadedSpecFile* b) { return a->path < b->path; });

  // Copies: the checks below add diagnostics, and cached results must stay as parsed.
  std::vector<LoadedJobSpec> loaded;
  loaded.reserve(files.size());
  for (const LoadedSpecFile* file : files) loaded.push_back(*file->loaded);

  // Cross-file checks see invalid files too: a broken file still owns its name.
  std::map<std::string, std::vector<size_t>> by_name;
  std::map<std::string, std::vector<size_t>> by_pin;
  for (size_t i = 0; i < loaded.size(); ++i) {
    by_name[loaded[i].name].push_back(i);
    if (loaded[i].pinned_id) by_pin[*loaded[i].pinned_id].push_back(i);
  }
  auto others = [&](const std::vector<size_t>& group, size_t self) {
    std::string out;
    for (size_t other : group) {
      if (other == self) continue;
      if (!out.empty()) out += ", ";
      out += files[other]->path;
    }
    return out;
  };
  for (const auto& [name, group] : by_name) {
    if (group.size() < 2) continue;
    for (size_t i : group) {
      LoadedJobSpec& spec = loaded[i];
      AddDiagnostic(spec, files[i]->path, spec.name_pos,
                    "name \"" + name + "\"" +
                        (spec.name_is_explicit ? "" : " (derived from the path)") +
                        " is also used by " + others(group, i));
    }
  }
  for (const auto& [pin, group] : by_pin) {
    if (group.size() < 2) continue;
    for (size_t i : group) {
      AddDiagnostic(loaded[i], files[i]->path, loaded[i].pinned_id_pos,
                    "submission_id \"" + pin + "\" is also pinned by " + others(group, i));
    }
  }
  if (state.cluster && !state.cluster->shared_root) {
    for (size_t i = 0; i < loaded.size(); ++i) {
      for (core::SourcePos pos : loaded[i].shared_root_uses) {
        AddDiagnostic(loaded[i], files[i]->path, pos,
                      "${shared_root} is used but " + state.cluster->path + " sets no shared_root");
      }
    }
  }

  for (size_t i = 0; i < loaded.size(); ++i) {
    LoadedJobSpec& spec = loaded[i];
    if (spec.parsed.diagnostics.empty() && spec.parsed.value) {
      state.jobs.push_back(std::move(*spec.parsed.value));
      continue;
    }
    SortByPosition(spec.parsed.diagnostics);
    state.invalid.push_back({files[i]->path, spec.name, std::move(spec.parsed.diagnostics)});
  }
  return state;
}

core::DesiredState LoadDesiredState(const std::optional<SourceFile>& cluster_file,
                                    const std::vector<SourceFile>& spec_files,
                                    std::string_view jobs_dir) {
  return Assemble("cluster.yaml", cluster_file, spec_files, jobs_dir);
}

bool IsSpecPath(std::string_view path, std::string_view jobs_dir) {
  jobs_dir = TrimSlashes(jobs_dir);
  while (path.starts_with("./")) path.remove_prefix(2);
  if (!jobs_dir.empty()) {
    if (!path.starts_with(jobs_dir) || path.size() <= jobs_dir.size() ||
        path[jobs_dir.size()] != '/') {
      return false;
    }
    path.remove_prefix(jobs_dir.size() + 1);
  }
  if (path.empty() || HasHiddenComponent(path)) return false;
  return path.ends_with(".yaml") || path.ends_with(".yml");
}

core::DesiredState LoadDesiredStateFromDirectory(const std::string& repo_dir,
                                                 const std::string& cluster_file,
                                                 const std::string& jobs_dir) {
  const fs::path root(repo_dir);
  std::optional<SourceFile> cluster;
  std::optional<core::Diagnostic> cluster_read_error;
  std::error_code ec;
  if (fs::exists(root / cluster_file, ec)) {
    if (auto content = ReadFileBounded(root / cluster_file)) {
      cluster = SourceFile{cluster_file, std::move(*content)};
    } else {
      cluster_read_error = core::Diagnostic{cluster_file, 0, 0, "cannot read the file"};
    }
  }

  std::vector<SourceFile> specs;
  std::vector<core::InvalidSpec> unreadable;
  const fs::path jobs_root = root / std::string(TrimSlashes(jobs_dir));
  std::error_code list_ec;
  if (fs::is_directory(jobs_root, ec)) {
    fs::recursive_directory_iterator it(jobs_root, fs::directory_options::skip_permission_denied,
                                        list_ec);
    for (; !list_ec && it != fs::recursive_directory_iterator(); it.increment(list_ec)) {
      std::error_code entry_ec;
      const std::string name = it->path().filename().string();
      if (name.starts_with('.')) {
        if (it->is_directory(entry_ec)) it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(entry_ec)) continue;
      const std::string relative = it->path().lexically_relative(root).generic_string();
      if (!IsSpecPath(relative, jobs_dir)) continue;
      if (auto content = ReadFileBounded(it->path())) {
        specs.push_back({relative, std::move(*content)});
      } else {
        unreadable.push_back({relative,
                              core::DefaultJobName(relative, jobs_dir),
                              {{relative, 0, 0, "cannot read the file"}}});
      }
    }
  }

  core::DesiredState state = Assemble(cluster_file, cluster, specs, jobs_dir);
  if (cluster_read_error) state.cluster_diagnostics = {*cluster_read_error};
  if (list_ec) {
    state.cluster_diagnostics.push_back(
        {jobs_dir, 0, 0, "cannot list the directory: " + list_ec.message()});
  }
  for (auto& bad : unreadable) state.invalid.push_back(std::move(bad));
  std::stable_sort(state.invalid.begin(), state.invalid.end(),
                   [](const auto& a, const auto& b) { return a.path < b.path; });
  return state;
}

}  // namespace rg::spec
