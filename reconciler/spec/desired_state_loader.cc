#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "reconciler/core/identity.h"
#include "reconciler/spec/loaded_job_spec.h"
#include "reconciler/spec/spec_entry.h"
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

// The name an invalid spec's status record is written under: its own when valid, else one made
// from its path, so that a record's path is always status/<valid name>.yaml (never a path like
// "../x" that breaks the status commit, or "sub/dir" that the ledger never reads back).
std::string RecordName(const std::string& name, const std::string& path) {
  if (core::IsValidJobName(name)) return name;
  return "invalid-" + core::Sha256Hex(path).substr(0, 10);
}

LoadedSpecFile InvalidEntry(const std::string& path, std::string_view jobs_dir,
                            std::string message) {
  LoadedJobSpec spec;
  spec.name = core::DefaultJobName(path, jobs_dir);
  spec.parsed.diagnostics.push_back({path, 0, 0, std::move(message)});
  return {path, std::make_shared<LoadedJobSpec>(std::move(spec))};
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::optional<std::string> ReadRegularFileBounded(const fs::path& path, size_t limit) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  // The buffer holds what the file holds (one byte more, to see it end), never the limit: a
  // folder of 50,000 small specs must not cost 50,000 megabytes. A file that grows while it is
  // read is followed, up to limit + 1 bytes.
  const size_t cap = limit + 1;
  const size_t expected = std::min(static_cast<size_t>(std::max<off_t>(st.st_size, 0)), cap);
  std::string content;
  content.resize(std::min(expected + 1, cap));
  size_t used = 0;
  while (used < cap) {
    if (used == content.size()) content.resize(std::min(cap, std::max<size_t>(used * 2, 4096)));
    const ssize_t n = ::read(fd.get(), content.data() + used, content.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  content.resize(used);
  return content;
}

namespace {

std::optional<Parsed<core::RayConfig>> ReadClusterFromDirectory(const fs::path& root,
                                                                const std::string& path) {
  auto rejected = [&](const std::string& where, EntryKind kind) {
    Parsed<core::RayConfig> out = RejectedClusterEntry(path, kind);
    if (where != path) out.diagnostics.front().message.insert(0, where + " ");
    return out;
  };
  if (std::string link = FirstLinkAlong(root, path); !link.empty()) {
    return rejected(link, EntryKind::kSymlink);
  }
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(root / path, ec);
  if (!fs::exists(status)) return std::nullopt;
  if (!fs::is_regular_file(status)) return rejected(path, EntryKind::kNotRegular);
  std::optional<std::string> content = ReadRegularFileBounded(root / path, kMaxSpecFileBytes);
  if (!content) {
    return Parsed<core::RayConfig>{std::nullopt, {{path, 0, 0, "cannot read the file"}}};
  }
  return LoadRayConfig(*content, path);
}

struct JobsListing {
  std::vector<LoadedSpecFile> files;        // parsed specs and rejected entries
  std::optional<core::Diagnostic> problem;  // the folder itself is a link, a file, or unlistable
  bool keep_documents = true;               // else each spec's parsed document is let go
};

// The spec as parsed, its document let go when `keep` is false.
std::shared_ptr<const LoadedJobSpec> KeepDocument(std::shared_ptr<const LoadedJobSpec> loaded,
                                                  bool keep) {
  if (keep || !loaded || !loaded->parsed.value) return loaded;
  std::shared_ptr<LoadedJobSpec> own = OwnLoadedSpec(std::move(loaded));
  own->parsed.value->document = core::Value();
  return own;
}

// One entry met by the walk of the jobs folder: parsed, rejected, or skipped.
void AddJobsEntry(const fs::directory_entry& entry, const std::string& relative,
                  std::string_view jobs_dir, JobsListing& out) {
  std::error_code ec;
  const fs::file_status status = entry.symlink_status(ec);
  if (fs::is_symlink(status)) {
    out.files.push_back(RejectedSpecEntry(relative, jobs_dir, EntryKind::kSymlink));
    return;
  }
  if (fs::is_directory(status)) {
    if (fs::exists(fs::symlink_status(entry.path() / ".git", ec))) {
      out.files.push_back(RejectedSpecEntry(relative, jobs_dir, EntryKind::kSubmodule));
    }
    return;
  }
  if (!IsSpecPath(relative, jobs_dir)) return;
  if (!fs::is_regular_file(status)) {
    out.files.push_back(RejectedSpecEntry(relative, jobs_dir, EntryKind::kNotRegular));
  } else if (std::optional<std::string> content =
                 ReadRegularFileBounded(entry.path(), kMaxSpecFileBytes)) {
    out.files.push_back(
        {relative, KeepDocument(ParseSpecFileForDesiredState(*content, relative, jobs_dir),
                                out.keep_documents)});
  } else {
    out.files.push_back(InvalidEntry(relative, jobs_dir, "cannot read the file"));
  }
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
  return CheckDesiredStateSet(cluster, cluster_path, std::move(loaded));
}

// Every entry under <root>/<jobs_dir> but the cluster file (which may sit there) and hidden ones.
JobsListing ListJobsDirectory(const fs::path& root, std::string_view jobs_dir,
                              const std::string& cluster_file, bool keep_documents) {
  JobsListing out;
  out.keep_documents = keep_documents;
  const std::string dir(TrimSlashes(jobs_dir));
  if (std::string link = FirstLinkAlong(root, dir); !link.empty()) {
    out.problem = {link, 0, 0, EntryMessage(EntryKind::kSymlink, EntryRole::kJobsDir)};
    return out;
  }
  const fs::path jobs_root = dir.empty() ? root : root / dir;
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(jobs_root, ec);
  if (!fs::exists(status)) return out;
  if (!fs::is_directory(status)) {
    out.problem = {dir, 0, 0, EntryMessage(EntryKind::kNotRegular, EntryRole::kJobsDir)};
    return out;
  }
  // Links to folders are not descended into (no follow_directory_symlink): each is an entry.
  fs::recursive_directory_iterator it(jobs_root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().starts_with('.')) {
      it.disable_recursion_pending();
      continue;
    }
    const std::string relative = it->path().lexically_relative(root).generic_string();
    if (relative == cluster_file) continue;
    const size_t before = out.files.size();
    AddJobsEntry(*it, relative, jobs_dir, out);
    // A folder that became an entry is a submodule: nothing in it is read.
    if (out.files.size() > before) it.disable_recursion_pending();
  }
  if (ec) out.problem = {dir, 0, 0, "cannot list the directory: " + ec.message()};
  return out;
}

}  // namespace

// The first of `relative`'s components (from the root down) that is a symbolic link, as a
// '/'-separated path relative to root; empty when there is none.
std::string FirstLinkAlong(const std::filesystem::path& root, std::string_view relative) {
  std::filesystem::path at = root;
  std::filesystem::path walked;
  for (const std::filesystem::path& part : std::filesystem::path(relative)) {
    at /= part;
    walked /= part;
    std::error_code ec;
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(at, ec))) {
      return walked.generic_string();
    }
  }
  return "";
}

std::shared_ptr<LoadedJobSpec> OwnLoadedSpec(std::shared_ptr<const LoadedJobSpec> loaded) {
  if (loaded.use_count() == 1) return std::const_pointer_cast<LoadedJobSpec>(std::move(loaded));
  return std::make_shared<LoadedJobSpec>(*loaded);
}

std::shared_ptr<const LoadedJobSpec> ParseSpecFileForDesiredState(std::string_view text,
                                                                  const std::string& path,
                                                                  std::string_view jobs_dir) {
  // Mutable underneath: CheckDesiredStateSet moves from a spec nobody else holds.
  return std::make_shared<LoadedJobSpec>(LoadJobSpecForDesiredState(text, path, jobs_dir));
}

namespace {

// The spec files in path order, each paired with its loaded result: the checks add
// diagnostics, and cached results must stay as parsed, so a shared one is copied. One that
// only the list holds is taken over (every LoadedJobSpec is made as a mutable object).
struct SpecSet {
  std::vector<const LoadedSpecFile*> files;
  // Each file's spec, taken from it: held only here (a shared one was copied), and let go of
  // as soon as its JobSpec has moved into the desired state.
  std::vector<std::shared_ptr<LoadedJobSpec>> loaded;

  // The paths of the group's files other than `self`, comma-separated.
  std::string Others(const std::vector<size_t>& group, size_t self) const {
    std::string out;
    for (size_t other : group) {
      if (other == self) continue;
      if (!out.empty()) out += ", ";
      out += files[other]->path;
    }
    return out;
  }
};

// No LoadedJobSpec is moved into a second array: at 50,000 specs that array (about 1 KB a
// spec) beside the shells left in the files took the checks from 40 MB of heap to 88 MB.
SpecSet SortedSpecSet(std::vector<LoadedSpecFile>& spec_files) {
  SpecSet set;
  set.files.reserve(spec_files.size());
  for (const auto& file : spec_files) set.files.push_back(&file);
  std::stable_sort(
      set.files.begin(), set.files.end(),
      [](const LoadedSpecFile* a, const LoadedSpecFile* b) { return a->path < b->path; });
  set.loaded.reserve(set.files.size());
  for (const LoadedSpecFile* file : set.files) {
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): the files are ours (by value)
    set.loaded.push_back(OwnLoadedSpec(std::move(const_cast<LoadedSpecFile*>(file)->loaded)));
  }
  return set;
}

// Two files may not share a name or a pinned submission id. Invalid files count too: a broken
// file still owns its name.
void CheckUniqueNamesAndPins(SpecSet& set) {
  std::map<std::string, std::vector<size_t>> by_name;
  std::map<std::string, std::vector<size_t>> by_pin;
  for (size_t i = 0; i < set.loaded.size(); ++i) {
    by_name[set.loaded[i]->name].push_back(i);
    if (set.loaded[i]->pinned_id) by_pin[*set.loaded[i]->pinned_id].push_back(i);
  }
  for (const auto& [name, group] : by_name) {
    if (group.size() < 2) continue;
    for (size_t i : group) {
      LoadedJobSpec& spec = *set.loaded[i];
      AddDiagnostic(spec, set.files[i]->path, spec.name_pos,
                    "name \"" + name + "\"" +
                        (spec.name_is_explicit ? "" : " (derived from the path)") +
                        " is also used by " + set.Others(group, i));
    }
  }
  for (const auto& [pin, group] : by_pin) {
    if (group.size() < 2) continue;
    for (size_t i : group) {
      AddDiagnostic(*set.loaded[i], set.files[i]->path, set.loaded[i]->pinned_id_pos,
                    "submission_id \"" + pin + "\" is also pinned by " + set.Others(group, i));
    }
  }
}

void CheckSharedRootUses(const core::RayConfig& cluster, SpecSet& set) {
  if (cluster.shared_root) return;
  for (size_t i = 0; i < set.loaded.size(); ++i) {
    for (core::SourcePos pos : set.loaded[i]->root_uses.get().shared_root) {
      AddDiagnostic(*set.loaded[i], set.files[i]->path, pos,
                    core::NoSharedRootMessage(cluster.path));
    }
    for (core::SourcePos pos : set.loaded[i]->root_uses.get().run_dirs) {
      AddDiagnostic(*set.loaded[i], set.files[i]->path, pos,
                    "${runs.<name>.dir} is used but " + cluster.path +
                        " sets no shared_root, which run directories are under");
    }
  }
}

// Where cluster.yaml wrote `key` (a field, or "secrets.<NAME>"), as " (cluster.yaml:12)".
std::string ClusterLine(const core::RayConfig& cluster, const std::string& key) {
  auto it = cluster.positions.find(key);
  if (it == cluster.positions.end() || it->second.line <= 0) return " (" + cluster.path + ")";
  return " (" + cluster.path + ":" + std::to_string(it->second.line) + ")";
}

// A name that is a secret on one side and a plain env var on the other, across a spec and
// cluster.yaml, is an error in the spec, as it is within one file (docs/jobspec.md, "Secrets"):
// the value the job would get would hang on a precedence rule nobody sees in either file, and
// a plain value beside a secret of the same name is most often a credential about to be
// committed. A job's own secrets still win over the cluster's secrets per name.
void CheckSecretsAcrossFiles(const core::RayConfig& cluster, SpecSet& set) {
  if (cluster.secrets.empty() && cluster.runtime_env.Find("env_vars") == nullptr) return;
  const core::StringMap cluster_env = cluster.EnvVars();
  for (size_t i = 0; i < set.loaded.size(); ++i) {
    if (!set.loaded[i]->parsed.value) continue;
    const core::JobSpec& spec = *set.loaded[i]->parsed.value;
    for (const auto& [name, reference] : spec.secrets()) {
      if (!cluster_env.contains(name)) continue;
      const auto pos = spec.secret_fields().name_pos.find(name);
      AddDiagnostic(*set.loaded[i], set.files[i]->path,
                    pos != spec.secret_fields().name_pos.end() ? pos->second : core::SourcePos{},
                    "secrets." + std::string(name) + ": " + cluster.path +
                        "'s runtime_env.env_vars also sets " + std::string(name) +
                        ClusterLine(cluster, "runtime_env.env_vars." + std::string(name)) +
                        "; a variable is either a secret or a plain value: remove one of them");
    }
    for (const auto& [name, value] : spec.env_vars) {
      // Named under the spec's own secrets too: that error is the spec's alone.
      if (!cluster.secrets.contains(name) || spec.secrets().contains(name)) continue;
      const auto pos = spec.positions.find("env_vars");
      AddDiagnostic(*set.loaded[i], set.files[i]->path,
                    pos != spec.positions.end() ? pos->second : core::SourcePos{},
                    "env_vars." + std::string(name) + ": " + cluster.path + " names " +
                        std::string(name) + " under secrets" +
                        ClusterLine(cluster, "secrets." + std::string(name)) +
                        "; a variable is either a secret or a plain value: remove it from "
                        "env_vars (the job gets the secret), or name another reference under "
                        "this spec's secrets");
    }
  }
}

// A spec's `after` as far as it was read (that of a spec with other errors too), or nullptr
// when it has none.
const core::PipelineFields* AfterOf(const LoadedJobSpec& spec) {
  const core::PipelineFields& p =
      spec.parsed.value ? spec.parsed.value->pipeline() : spec.invalid_after.get();
  return p.after.empty() ? nullptr : &p;
}

// The cycles of `after` among the specs, valid or not (a spec with another error is reported
// on its cycle in the same run): each member gets an error at the name that leads on along the
// cycle, which the error spells out with its files.
void CheckAfterCycles(SpecSet& set, const std::unordered_map<std::string_view, size_t>& by_name) {
  const size_t n = set.loaded.size();
  std::vector<const core::PipelineFields*> pipelines(n, nullptr);
  for (size_t i = 0; i < n; ++i) pipelines[i] = AfterOf(*set.loaded[i]);
  // The index of the job `after` entry k of spec i names, when that job has an `after` itself
  // (only such a job can be on a cycle).
  auto next_of = [&](size_t i, size_t k) -> std::optional<size_t> {
    auto it = by_name.find(pipelines[i]->after[k]);
    if (it == by_name.end() || pipelines[it->second] == nullptr) return std::nullopt;
    return it->second;
  };
  std::vector<int> color(n, 0);  // 0 unvisited, 1 on the walk's path, 2 done
  std::vector<bool> reported(n, false);
  for (size_t start = 0; start < n; ++start) {
    if (pipelines[start] == nullptr || color[start] != 0) continue;
    std::vector<std::pair<size_t, size_t>> path = {{start, 0}};  // (spec, next after entry)
    color[start] = 1;
    while (!path.empty()) {
      auto& [i, k] = path.back();
      if (k == pipelines[i]->after.size()) {
        color[i] = 2;
        path.pop_back();
        continue;
      }
      const size_t entry = k++;
      const std::optional<size_t> next = next_of(i, entry);
      if (!next) continue;
      if (color[*next] == 0) {
        color[*next] = 1;
        path.emplace_back(*next, 0);
        continue;
      }
      if (color[*next] != 1) continue;
      // A cycle: the path from *next to i, then back to *next.
      size_t from = path.size() - 1;
      while (path[from].first != *next) --from;
      std::string names;
      std::string files;
      for (size_t p = from; p < path.size(); ++p) {
        names += set.loaded[path[p].first]->name + " -> ";
        files += (p == from ? "" : ", ") + set.files[path[p].first]->path;
      }
      names += set.loaded[*next]->name;
      std::string message = "after: ";
      message.append(names).append(" is a cycle (").append(files);
      message += "); a job cannot wait for itself";
      for (size_t p = from; p < path.size(); ++p) {
        const size_t member = path[p].first;
        if (reported[member]) continue;
        reported[member] = true;
        const size_t via = path[p].second - 1;  // the entry that led on along the cycle
        AddDiagnostic(*set.loaded[member], set.files[member]->path,
                      pipelines[member]->after_pos[via], message);
      }
    }
  }
}

// `after` across files: every name it lists is a job of this repository and not a scheduled
// one, and no job waits on itself through a cycle. (A name whose spec is invalid is known: the job
// waits, frozen.)
void CheckPipelines(SpecSet& set) {
  std::unordered_map<std::string_view, size_t> by_name;
  bool any = false;
  for (size_t i = 0; i < set.loaded.size(); ++i) {
    by_name.emplace(set.loaded[i]->name, i);
    any = any || AfterOf(*set.loaded[i]) != nullptr;
  }
  if (!any) return;
  CheckAfterCycles(set, by_name);
  for (size_t i = 0; i < set.loaded.size(); ++i) {
    const core::PipelineFields* p = AfterOf(*set.loaded[i]);
    if (p == nullptr) continue;
    for (size_t k = 0; k < p->after.size(); ++k) {
      auto up = by_name.find(p->after[k]);
      if (up == by_name.end()) {
        AddDiagnostic(*set.loaded[i], set.files[i]->path, p->after_pos[k],
                      "after: there is no job named " + p->after[k] + " in this repository");
      } else if (const LoadedJobSpec& named = *set.loaded[up->second];
                 named.parsed.value && named.parsed.value->lifecycle().schedule.has_value()) {
        AddDiagnostic(*set.loaded[i], set.files[i]->path, p->after_pos[k],
                      "after: " + p->after[k] + " (" + set.files[up->second]->path +
                          ") is a scheduled job, which has a run per slot, not one current "
                          "run to wait for");
      }
    }
  }
}

}  // namespace

core::DesiredState CheckDesiredStateSet(const std::optional<Parsed<core::RayConfig>>& cluster,
                                        const std::string& cluster_path,
                                        std::vector<LoadedSpecFile> spec_files) {
  core::DesiredState state;
  if (cluster) {
    state.cluster = cluster->value;
    state.cluster_diagnostics = cluster->diagnostics;
  } else {
    state.cluster_diagnostics.push_back({cluster_path, 0, 0, "file not found"});
  }
  SpecSet set = SortedSpecSet(spec_files);
  CheckUniqueNamesAndPins(set);
  CheckPipelines(set);
  if (state.cluster) {
    CheckSharedRootUses(*state.cluster, set);
    CheckSecretsAcrossFiles(*state.cluster, set);
  }

  state.jobs.reserve(set.loaded.size());  // a JobSpec is large: no doubling slack
  for (size_t i = 0; i < set.loaded.size(); ++i) {
    LoadedJobSpec& spec = *set.loaded[i];
    if (spec.parsed.diagnostics.empty() && spec.parsed.value) {
      state.jobs.push_back(std::move(*spec.parsed.value));
    } else {
      SortByPosition(spec.parsed.diagnostics);
      state.invalid.push_back({set.files[i]->path, RecordName(spec.name, set.files[i]->path),
                               std::move(spec.parsed.diagnostics)});
    }
    set.loaded[i].reset();
  }
  return state;
}

core::DesiredState LoadDesiredState(const std::optional<SourceFile>& cluster_file,
                                    const std::vector<SourceFile>& spec_files,
                                    std::string_view jobs_dir) {
  return Assemble("cluster.yaml", cluster_file, spec_files, jobs_dir);
}

bool IsUnderJobsDir(std::string_view path, std::string_view jobs_dir) {
  jobs_dir = TrimSlashes(jobs_dir);
  while (path.starts_with("./")) path.remove_prefix(2);
  if (!jobs_dir.empty()) {
    if (!path.starts_with(jobs_dir) || path.size() <= jobs_dir.size() ||
        path[jobs_dir.size()] != '/') {
      return false;
    }
    path.remove_prefix(jobs_dir.size() + 1);
  }
  return !path.empty() && !HasHiddenComponent(path);
}

bool IsSpecPath(std::string_view path, std::string_view jobs_dir) {
  return IsUnderJobsDir(path, jobs_dir) && (path.ends_with(".yaml") || path.ends_with(".yml"));
}

std::string EntryMessage(EntryKind kind, EntryRole role) {
  std::string rule;
  switch (role) {
    case EntryRole::kSpec:
      rule = "specs must be regular files";
      break;
    case EntryRole::kClusterFile:
      rule = "the cluster file must be a regular file";
      break;
    case EntryRole::kJobsDir:
      rule = "the jobs folder must be a folder of this repository";
      break;
  }
  switch (kind) {
    case EntryKind::kSymlink:
      return "is a symbolic link; " + rule + " (links are never followed)";
    case EntryKind::kSubmodule:
      return "is a Git submodule; " + rule + " (nothing in a submodule is read)";
    case EntryKind::kNotRegular:
      break;
  }
  return role == EntryRole::kJobsDir ? "is not a folder; " + rule
                                     : "is not a regular file; " + rule;
}

LoadedSpecFile RejectedSpecEntry(const std::string& path, std::string_view jobs_dir,
                                 EntryKind kind) {
  return InvalidEntry(path, jobs_dir, EntryMessage(kind, EntryRole::kSpec));
}

Parsed<core::RayConfig> RejectedClusterEntry(const std::string& path, EntryKind kind) {
  return {std::nullopt, {{path, 0, 0, EntryMessage(kind, EntryRole::kClusterFile)}}};
}

core::DesiredState LoadDesiredStateFromDirectory(const std::string& repo_dir,
                                                 const std::string& cluster_file,
                                                 const std::string& jobs_dir, bool keep_documents) {
  const fs::path root(repo_dir);
  const std::optional<Parsed<core::RayConfig>> cluster =
      ReadClusterFromDirectory(root, cluster_file);
  JobsListing listing = ListJobsDirectory(root, jobs_dir, cluster_file, keep_documents);
  core::DesiredState state = CheckDesiredStateSet(cluster, cluster_file, std::move(listing.files));
  if (listing.problem) state.cluster_diagnostics.push_back(std::move(*listing.problem));
  return state;
}

}  // namespace rg::spec
