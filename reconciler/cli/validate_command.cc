#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <vector>

#include "reconciler/adapters/code_folders.h"
#include "reconciler/adapters/schedule_zones.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/cli/local_repo.h"
#include "reconciler/cli/logging.h"
#include "reconciler/core/diagnostic.h"
#include "reconciler/core/render.h"
#include "reconciler/core/spec_warnings.h"
#include "reconciler/core/value.h"
#include "reconciler/spec/spec_entry.h"
#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/verl_config.h"

namespace rg::cli {
namespace {

namespace fs = std::filesystem;

struct ValidateOptions : LocalRepoOptions {
  std::vector<std::string> files;
  std::string verl_config;  // --verl-config
  std::string format = "text";
};

// A diagnostic and, where one is known, the spec field it concerns (for --format json). A
// warning (core/spec_warnings.h) is shown, but leaves the file valid.
struct Reported {
  core::Diagnostic diagnostic;
  std::string field;
  bool warning = false;
};

std::string Plural(size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// A FILE argument names a path inside the repository: relative to the repository first (as a
// pre-commit hook passes them), else relative to the working directory.
struct SelectedFile {
  std::string repo_relative;
  std::optional<core::Diagnostic> problem;
};

// `known`: every path the repository read reported on (specs valid or not, links and
// submodules among them, and the cluster file). A FILE is never opened here: what is known
// was read without following links, and anything else is only described.
SelectedFile SelectFile(const std::string& file, const ValidateOptions& options,
                        const std::set<std::string>& known) {
  const std::optional<RepoFile> resolved = ResolveRepoFile(options.repo, file);
  if (!resolved) {
    return {"", core::Diagnostic{file, 0, 0, "not inside the repository " + options.repo}};
  }
  const std::string& relative = resolved->relative;
  if (known.contains(relative)) return {relative, std::nullopt};
  // Inside a link or a submodule that is itself an error: that error is the answer.
  for (fs::path up = fs::path(relative).parent_path(); !up.empty(); up = up.parent_path()) {
    if (known.contains(up.generic_string())) return {up.generic_string(), std::nullopt};
  }
  std::error_code ec;
  const std::string link = spec::FirstLinkAlong(fs::absolute(options.repo, ec), relative);
  if (!link.empty() && link != relative) {
    return {relative,
            core::Diagnostic{file, 0, 0, link + " is a symbolic link; nothing is read through it"}};
  }
  if (!fs::exists(fs::symlink_status(resolved->full, ec))) {
    return {relative, core::Diagnostic{file, 0, 0, "file not found"}};
  }
  if (relative != options.cluster_file && !spec::IsSpecPath(relative, options.jobs_dir)) {
    return {relative, core::Diagnostic{file, 0, 0,
                                       "neither the cluster file nor a JobSpec (*.yaml or *.yml "
                                       "under " +
                                           options.jobs_dir + "/)"}};
  }
  return {relative, core::Diagnostic{file, 0, 0, "is not a regular file"}};
}

// Every path the state reports on, valid or not.
std::set<std::string> KnownPaths(const core::DesiredState& state, const std::string& cluster) {
  std::set<std::string> known{cluster};
  for (const auto& job : state.jobs) known.insert(job.path);
  for (const auto& bad : state.invalid) known.insert(bad.path);
  return known;
}

// What the FILE arguments select: the cluster file and the specs named (nullopt: everything),
// and the arguments that name nothing that can be validated.
struct Selection {
  std::optional<std::set<std::string>> paths;
  core::Diagnostics problems;
  bool Contains(const std::string& path) const { return !paths || paths->contains(path); }
};

Selection Select(const core::DesiredState& state, const ValidateOptions& options) {
  Selection selection;
  if (options.files.empty()) return selection;
  selection.paths = std::set<std::string>{options.cluster_file};
  const std::set<std::string> known = KnownPaths(state, options.cluster_file);
  for (const auto& file : options.files) {
    SelectedFile choice = SelectFile(file, options, known);
    if (choice.problem) {
      selection.problems.push_back(*choice.problem);
    } else {
      selection.paths->insert(choice.repo_relative);
    }
  }
  return selection;
}

// The folder of verl's config below <code_path> when that is a readable folder; empty when
// there is none.
std::string CodePathConfigDir(const core::JobSpec& job, const core::DesiredState& state) {
  if (!job.trainer().code_path || !state.cluster) return "";
  const auto code_path = core::InterpolateSharedRoot(*job.trainer().code_path, *state.cluster);
  if (!code_path.ok()) return "";
  const fs::path dir = fs::path(*code_path) / "verl" / "trainer" / "config";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "";
  fs::directory_iterator readable(dir, ec);
  return ec ? "" : dir.string();
}

// The repository when `dir` lies inside it as written (a folder under review, whose reader
// must not leave the repository either); else empty.
std::string RepositoryAround(const std::string& dir, const std::string& repo) {
  std::error_code ec;
  const fs::path folder = fs::absolute(dir, ec).lexically_normal();
  const fs::path root = fs::absolute(repo, ec).lexically_normal();
  const fs::path relative = folder.lexically_relative(root);
  return !relative.empty() && *relative.begin() != ".." ? repo : "";
}

// verl's config of a spec's code folder: verl/trainer/config as the zip would hold it, from the
// working tree (no link followed, an export-ignored one included: a file behind one is not
// there) or from code_ref's tree.
spec::ConfigReader CodeConfigReader(const core::JobSpec& job, const ValidateOptions& options) {
  static constexpr std::string_view kConfig = "verl/trainer/config";
  adapters::CodeFileReader code = adapters::CodeFileReaderOnDisk(job, options.repo);
  return [code](const std::string& path) -> core::Result<std::string> {
    std::optional<std::string> text = code(std::string(kConfig) + "/" + path);
    if (!text) return core::Error::NotFound(path);
    return std::move(*text);
  };
}

// Where a spec's verl config is read from: a name for the folder (specs that share it share
// its parsed files and compositions) and its reader.
struct VerlConfigSource {
  std::string folder;
  spec::ConfigReader read;
};

// verl's config for this spec: --verl-config; else, for a spec with `code`, the config of the
// verl that folder holds (verl/trainer/config, from the working tree or from code_ref's tree),
// when it holds one; else <code_path>/verl/trainer/config when readable; else none. A folder
// inside the repository is read no further than the repository.
std::optional<VerlConfigSource> VerlConfig(const core::JobSpec& job,
                                           const core::DesiredState& state,
                                           const ValidateOptions& options) {
  if (!options.verl_config.empty()) {
    return VerlConfigSource{
        "--verl-config",
        spec::DirectoryConfigReader(options.verl_config,
                                    RepositoryAround(options.verl_config, options.repo))};
  }
  if (job.has_code()) {
    if (job.code().tree_id.empty()) return std::nullopt;  // not resolved: its error is reported
    spec::ConfigReader reader = CodeConfigReader(job, options);
    const std::string top = std::string(spec::VerlConfigName(job.workload)) + ".yaml";
    const core::Result<std::string> found = reader(top);
    // Not there: verl comes from elsewhere (the image).
    if (!found && found.error().IsNotFound()) return std::nullopt;
    const std::string folder =
        job.code().ref ? "tree " + job.code().tree_id : "code " + job.code().folder;
    return VerlConfigSource{folder, std::move(reader)};
  }
  const std::string dir = CodePathConfigDir(job, state);
  if (dir.empty()) return std::nullopt;
  return VerlConfigSource{"dir " + dir,
                          spec::DirectoryConfigReader(dir, RepositoryAround(dir, options.repo))};
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The Hydra keys of every selected ppo, grpo and sft spec against verl's config; `failed`
// receives the paths of the specs with a problem.
std::vector<Reported> CheckVerlKeys(const core::DesiredState& state, const Selection& selection,
                                    const ValidateOptions& options, std::set<std::string>& failed) {
  std::vector<Reported> out;
  std::error_code ec;
  if (!options.verl_config.empty() && !fs::is_directory(options.verl_config, ec)) {
    out.push_back({core::Diagnostic{options.verl_config, 0, 0,
                                    "--verl-config: not a folder (verl's verl/trainer/config)"},
                   ""});
    return out;
  }
  const bool has_shared_root = state.cluster && state.cluster->shared_root.has_value();
  std::map<std::string, std::unique_ptr<spec::ConfigFolder>> folders;
  for (const core::JobSpec& job : state.jobs) {
    if (!selection.Contains(job.path) || spec::VerlConfigName(job.workload).empty()) continue;
    std::optional<VerlConfigSource> source = VerlConfig(job, state, options);
    if (!source) continue;
    std::unique_ptr<spec::ConfigFolder>& folder = folders[source->folder];
    if (!folder) folder = std::make_unique<spec::ConfigFolder>(std::move(source->read));
    const std::string text = ReadText(fs::path(options.repo) / job.path);
    for (auto& problem : spec::CheckVerlKeys(job, text, has_shared_root, *folder)) {
      failed.insert(job.path);
      out.push_back({std::move(problem.diagnostic), std::move(problem.field)});
    }
  }
  return out;
}

// Every problem of the selected files, sorted by file, line and column.
std::vector<Reported> Collect(const core::DesiredState& state, const Selection& selection,
                              const ValidateOptions& options, std::set<std::string>& failed) {
  std::vector<Reported> reported;
  for (core::Diagnostic& d : state.AllDiagnostics()) {
    if (selection.Contains(d.path)) reported.push_back({std::move(d), ""});
  }
  for (const core::Diagnostic& d : selection.problems) reported.push_back({d, ""});
  for (Reported& r : CheckVerlKeys(state, selection, options, failed)) {
    reported.push_back(std::move(r));
  }
  for (const core::JobSpec& job : state.jobs) {
    if (!selection.Contains(job.path)) continue;
    for (core::Diagnostic& d : core::SpecWarnings(job)) {
      reported.push_back({std::move(d), "", /*warning=*/true});
    }
  }
  std::stable_sort(reported.begin(), reported.end(), [](const auto& a, const auto& b) {
    return std::tie(a.diagnostic.path, a.diagnostic.line, a.diagnostic.column) <
           std::tie(b.diagnostic.path, b.diagnostic.line, b.diagnostic.column);
  });
  return reported;
}

core::Value PositionOrNull(int n) { return n > 0 ? core::Value(n) : core::Value(); }

size_t CountErrors(const std::vector<Reported>& reported) {
  return static_cast<size_t>(std::count_if(reported.begin(), reported.end(),
                                           [](const Reported& r) { return !r.warning; }));
}

// {"version":1,"valid":…,"files":N,"diagnostics":[{"file","line","column","field",
// "severity","message"}]}: line, column and field are null where unknown; severity is "error"
// or "warning", and only errors make it invalid.
std::string ToJson(const std::vector<Reported>& reported, size_t files) {
  core::Value::Array diagnostics;
  for (const Reported& r : reported) {
    core::Value::Object d;
    d["file"] = RedactForOutput(r.diagnostic.path);
    d["line"] = PositionOrNull(r.diagnostic.line);
    d["column"] = PositionOrNull(r.diagnostic.column);
    d["field"] = r.field.empty() ? core::Value() : core::Value(r.field);
    d["severity"] = r.warning ? "warning" : "error";
    d["message"] = RedactForOutput(r.diagnostic.message);
    diagnostics.emplace_back(std::move(d));
  }
  core::Value::Object doc;
  doc["version"] = 1;
  doc["valid"] = CountErrors(reported) == 0;
  doc["files"] = static_cast<int64_t>(files);
  doc["diagnostics"] = std::move(diagnostics);
  return core::ToPrettyJson(core::Value(std::move(doc)));
}

// The cluster file and every selected spec, valid or not.
size_t CountFiles(const core::DesiredState& state, const Selection& selection,
                  const std::string& cluster_file) {
  std::set<std::string> files{cluster_file};
  for (const auto& job : state.jobs) {
    if (selection.Contains(job.path)) files.insert(job.path);
  }
  for (const auto& bad : state.invalid) {
    if (selection.Contains(bad.path)) files.insert(bad.path);
  }
  return files.size();
}

void PrintText(const std::vector<Reported>& reported, const ValidateOptions& options,
               size_t valid_specs) {
  std::set<std::string> files_with_errors;
  for (const Reported& r : reported) {
    std::cerr << RedactForOutput(r.diagnostic.ToString(r.warning ? "warning" : "error")) << "\n";
    if (!r.warning) files_with_errors.insert(r.diagnostic.path);
  }
  const size_t errors = CountErrors(reported);
  const size_t warnings = reported.size() - errors;
  const std::string warned = warnings == 0 ? "" : " (" + Plural(warnings, "warning") + ")";
  if (errors > 0) {
    std::cout << Plural(errors, "error") << " in " << Plural(files_with_errors.size(), "file")
              << warned << "\n";
    return;
  }
  std::cout << "ok: " << options.cluster_file << " and " << Plural(valid_specs, "jobspec")
            << (valid_specs == 1 ? " is" : " are") << " valid" << warned << "\n";
}

int RunValidate(const ValidateOptions& options) {
  core::DesiredState state =
      spec::LoadDesiredStateFromDirectory(options.repo, options.cluster_file, options.jobs_dir,
                                          /*keep_documents=*/false);
  adapters::ZoneCache zones;
  adapters::ResolveScheduleZones(state, zones);
  adapters::ResolveCodeOnDisk(state, options.repo);
  const Selection selection = Select(state, options);
  std::set<std::string> failed;
  const std::vector<Reported> reported = Collect(state, selection, options, failed);
  if (options.format == "json") {
    std::cout << ToJson(reported, CountFiles(state, selection, options.cluster_file)) << "\n";
  } else {
    const auto valid_specs = static_cast<size_t>(
        std::count_if(state.jobs.begin(), state.jobs.end(), [&](const core::JobSpec& job) {
          return selection.Contains(job.path) && !failed.contains(job.path);
        }));
    PrintText(reported, options, valid_specs);
  }
  return CountErrors(reported) == 0 ? 0 : 1;
}

}  // namespace

void AddValidateCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto options = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand(
      "validate",
      "validate the cluster file and the JobSpecs on disk (all of them, or only FILEs); exit 0 "
      "valid, 1 invalid");
  AddLocalRepoOptions(cmd, options.get());
  cmd->add_option("files", options->files,
                  "report only these files (relative to the repository) and the cluster file");
  cmd->add_option("--verl-config", options->verl_config,
                  "verl's config folder (verl/trainer/config) to check every Hydra key of the "
                  "ppo, grpo and sft specs against (default: <code_path>/verl/trainer/config "
                  "when readable)");
  cmd->add_option("-o,--format", options->format, "text or json (default text)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([options, &global, exit_code] {
    (void)global;
    *exit_code = RunValidate(*options);
  });
}

}  // namespace rg::cli
