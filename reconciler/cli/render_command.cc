#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "reconciler/adapters/code_folders.h"
#include "reconciler/adapters/schedule_zones.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/cli/local_repo.h"
#include "reconciler/cli/logging.h"
#include "reconciler/core/byte_size.h"
#include "reconciler/core/code_package.h"
#include "reconciler/core/desired_state.h"
#include "reconciler/core/diagnostic.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/render.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::cli {
namespace {

struct RenderOptions : LocalRepoOptions {
  std::string file;
  std::string format = "yaml";
  std::string instance = std::string(core::kDefaultInstance);
  int attempt = 0;
};

void PrintError(const std::string& path, const std::string& message) {
  ReportDiagnostics({core::Diagnostic{path, 0, 0, message}});
}

// Prints what keeps the spec from rendering: the cluster file's problems and the spec's own.
// True when there were any.
bool ReportUnrenderable(const RenderOptions& options, const core::DesiredState& state,
                        const core::InvalidSpec* invalid) {
  bool failed = false;
  ReportDiagnostics(state.cluster_diagnostics);
  failed = !state.cluster_diagnostics.empty();
  if (!state.ClusterValid() && state.cluster_diagnostics.empty()) {
    PrintError(options.cluster_file, "cluster file not found");
    failed = true;
  }
  if (invalid != nullptr) {
    ReportDiagnostics(invalid->diagnostics);
    failed = true;
  }
  return failed;
}

// A job with `after`: its ${runs.<name>.dir} stay as written, since which run of the upstream
// succeeds is known only then; a note on stderr says what each will be.
void NoteRunsVariables(const core::DesiredState& state, const core::JobSpec& spec) {
  for (const std::string& name : spec.pipeline().after) {
    const core::JobSpec* up = nullptr;
    for (const core::JobSpec& job : state.jobs) {
      if (job.name == name) up = &job;
    }
    std::string note = "note: ";
    note.append(spec.path).append(": waits for ").append(name);
    if (up != nullptr) {
      note.append("; ${runs.").append(name);
      note += ".dir} is resolved, when the daemon submits this job, to the run folder of ";
      note.append(name).append("'s successful run: ");
      note += core::RunDirectory(state.cluster->shared_root.value_or("<shared_root>"),
                                 core::SubmissionIdBase(*up));
    } else {
      note += ", whose spec is invalid: this job is frozen until it is valid";
    }
    std::cerr << note << "\n";
  }
}

// A spec with `code`: what its working_dir holds (on stderr: stdout is the body).
void NoteCode(const core::JobSpec& spec) {
  if (!spec.has_code()) return;
  const core::CodeFields& code = spec.code();
  std::string note = spec.path + ": code " + code.folder;
  if (code.ref) note.append(" at code_ref ").append(*code.ref);
  note.append(code.commit.empty() ? " (working tree)"
                                  : " (commit " + code.commit.substr(0, 12) + ")");
  note.append(": tree ").append(code.tree_id);
  note.append(", ")
      .append(std::to_string(code.files))
      .append(code.files == 1 ? " file, " : " files, ");
  note.append(core::HumanBytes(code.bytes)).append(", shipped as ");
  note.append(core::CodePackageUri(code.tree_id));
  std::cerr << note << "\n";
}

int PrintSubmission(const RenderOptions& options, const core::DesiredState& state,
                    const core::JobSpec& spec) {
  core::RenderContext context;
  context.instance = options.instance;
  context.attempt = options.attempt;
  // `spec` is bound to the instance (and to its upstreams): the id its daemon would give it.
  auto body = core::RenderSubmission(spec, *state.cluster, context);
  if (!body.ok()) {
    PrintError(spec.path, body.error().message());
    return 1;
  }
  // What may be written (docs/security.md): secret-named env vars show as <redacted>, and any
  // other place their values appear is redacted too.
  const core::Value shown = core::RedactSecrets(*body);
  core::Redactor secrets;
  secrets.AddDesiredState(state);
  if (options.format == "json") {
    std::cout << secrets.Apply(core::ToPrettyJson(shown)) << "\n";
  } else {
    std::cout << secrets.Apply(spec::ToYaml(shown));
  }
  return 0;
}

int RunRender(const RenderOptions& options) {
  // FILE names a JobSpec relative to the repository or, failing that, to the working directory.
  const std::optional<RepoFile> file = ResolveRepoFile(options.repo, options.file);
  if (!file) {
    PrintError(options.file, "not inside the repository " + options.repo);
    return 1;
  }
  core::DesiredState state =
      spec::LoadDesiredStateFromDirectory(options.repo, options.cluster_file, options.jobs_dir);
  adapters::ZoneCache zones;
  adapters::ResolveScheduleZones(state, zones);
  adapters::ResolveCodeOnDisk(state, options.repo);
  core::BindDesiredState(state, options.instance);

  const std::string& path = file->relative;
  const core::JobSpec* spec = nullptr;
  for (const auto& job : state.jobs) {
    if (job.path == path) spec = &job;
  }
  const core::InvalidSpec* invalid = nullptr;
  for (const auto& bad : state.invalid) {
    if (bad.path == path) invalid = &bad;
  }
  if (spec == nullptr && invalid == nullptr) {
    PrintError(options.file, "not a JobSpec of the repository (*.yaml or *.yml under " +
                                 options.jobs_dir + "/ in " + options.repo + ")");
    return 1;
  }
  if (ReportUnrenderable(options, state, invalid)) return 1;
  NoteRunsVariables(state, *spec);
  NoteCode(*spec);
  return PrintSubmission(options, state, *spec);
}

}  // namespace

void AddRenderCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto options = std::make_shared<RenderOptions>();
  auto* cmd = app.add_subcommand(
      "render",
      "print the POST /api/jobs/ body that one JobSpec submits; exit 0, or 1 when the spec or "
      "the cluster file is invalid");
  cmd->add_option("file", options->file, "the JobSpec (relative to the repository or to here)")
      ->required();
  AddLocalRepoOptions(cmd, options.get());
  cmd->add_option("--format,-o", options->format, "yaml or json")
      ->check(CLI::IsMember({"yaml", "json"}))
      ->capture_default_str();
  cmd->add_option("--instance", options->instance, "instance name recorded in gitops.managed-by")
      ->capture_default_str();
  cmd->add_option("--attempt", options->attempt, "attempt number (0 is the first run)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->callback([options, &global, exit_code] {
    (void)global;
    *exit_code = RunRender(*options);
  });
}

}  // namespace rg::cli
