// The seed's one-off submission against a Ray head, and the registration of
// every job command (status, stop, logs and list are in job_query_commands.cc). Output for
// people goes to stdout; what went wrong goes to stderr prefixed "ray-gitops: ". Exit status 0
// on success, 1 on any error; submit exits 3 when the one-off run exists already and nothing
// was submitted.

#include "reconciler/cli/job_commands.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/adapters/artifact_writer.h"
#include "reconciler/adapters/code_folders.h"
#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/cli/logging.h"
#include "reconciler/cli/pass_runner.h"
#include "reconciler/cli/ray_client_flags.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/render.h"
#include "reconciler/core/value.h"
#include "reconciler/engine/code_upload.h"
#include "reconciler/engine/submit_attempt.h"
#include "reconciler/ports/job_server.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::cli {
namespace {

namespace fs = std::filesystem;

// submit: the one-off run exists already; nothing was submitted (docs/operations.md).
constexpr int kExitRunExists = 3;

// The path a spec is known by in the repository: from its last "jobs/" component on, so that
// `--jobspec ~/repo/jobs/ppo/x.yaml` gets the same name and spec-path as the daemon would
// give it; a file outside any jobs/ folder is treated as jobs/<file name>.
std::string RepoRelativeSpecPath(const std::string& given) {
  std::string path = fs::path(given).lexically_normal().generic_string();
  if (path.rfind("jobs/", 0) == 0) return path;
  if (size_t at = path.rfind("/jobs/"); at != std::string::npos) return path.substr(at + 1);
  return "jobs/" + fs::path(path).filename().string();
}

// Address and credentials from the global flags, then Ray's environment variables, then
// the cluster file's address (when one was read).
core::Result<adapters::RayClientOptions> ResolveOptions(const GlobalOptions& global,
                                                        const std::string& fallback_address) {
  return ResolveRayFromGlobal(global, fallback_address,
                              "pass --config with a cluster file that has an address",
                              AddressTrust::kOperator);
}

// --- submit ---

struct SubmitFlags {
  std::string config;
  std::string jobspec;
  std::string instance;  // accepted for old scripts; a one-off run belongs to no instance
  std::string artifacts_root;
  bool no_artifacts = false;
  bool new_run = false;
};

// "<id> already exists: FAILED (Job entrypoint command failed ...); nothing submitted; ..."
// Of Ray's message only the first line is printed, redacted: a FAILED job's message goes on
// with the tail of the driver's log.
int RefuseExisting(const core::RayJob& job, const std::string& id, const core::Redactor& secrets) {
  std::cout << id << "\n";
  std::string text = id + " already exists: " + std::string(core::RayJobStatusName(job.status));
  if (std::string message = secrets.SafeMessage(job.message); !message.empty()) {
    text += " (" + message + ")";
  }
  Report(text + "; nothing submitted; use --new-run to submit another run");
  return kExitRunExists;
}

// The number of the next one-off run of `spec` (docs/operations.md): one past the highest run
// whose id Ray lists, or run 0 ("-cli") when Ray lists none.
core::Result<int> NextOneOffRun(ports::JobServer& server, const core::JobSpec& spec) {
  core::Result<std::vector<core::RayJob>> jobs = server.List();
  if (!jobs.ok()) return jobs.error();
  int next = 0;
  for (const core::RayJob& job : *jobs) {
    if (std::optional<int> run = core::OneOffRunOf(spec, job.submission_id)) {
      next = std::max(next, *run + 1);
    }
  }
  return next;
}

// The two files of a one-off submit, read and loaded; nullopt once their problems are printed.
struct OneOffFiles {
  std::string config_text;
  std::string spec_text;
  core::RayConfig cluster;
  core::JobSpec job;
  std::string repo_root;  // for a spec with `code`: the checkout its folder is read from
};

// The checkout a one-off spec belongs to: the folder holding its jobs/ folder, else the
// cluster file's folder.
std::string OneOffRepoRoot(const SubmitFlags& flags) {
  const std::string spec = fs::absolute(flags.jobspec).lexically_normal().generic_string();
  if (size_t at = spec.rfind("/jobs/"); at != std::string::npos) return spec.substr(0, at);
  return fs::absolute(flags.config).parent_path().lexically_normal().generic_string();
}

// A spec with `code`: its folder's tree, as the working tree holds it (or at code_ref), and
// the identity that takes the tree in. False (errors reported) when the folder cannot be
// shipped.
bool ResolveOneOffCode(const SubmitFlags& flags, OneOffFiles& files) {
  if (!files.job.has_code()) return true;
  files.repo_root = OneOffRepoRoot(flags);
  core::DesiredState state;
  state.cluster = files.cluster;
  state.jobs.push_back(files.job);
  adapters::ResolveCodeOnDisk(state, files.repo_root);
  if (!state.invalid.empty()) {
    std::vector<core::Diagnostic> shown = state.invalid.front().diagnostics;
    for (core::Diagnostic& d : shown) d.path = flags.jobspec;
    ReportDiagnostics(shown);
    return false;
  }
  core::BindDesiredState(state, core::kDefaultInstance);
  files.job = std::move(state.jobs.front());
  return true;
}

std::optional<OneOffFiles> LoadOneOffFiles(const SubmitFlags& flags) {
  core::Result<std::string> config_text = ReadTextFile(flags.config, "--config");
  if (!config_text.ok()) {
    Fail(config_text.error().message());
    return std::nullopt;
  }
  core::Result<std::string> spec_text = ReadTextFile(flags.jobspec, "--jobspec");
  if (!spec_text.ok()) {
    Fail(spec_text.error().message());
    return std::nullopt;
  }

  spec::Parsed<core::RayConfig> cluster = spec::LoadRayConfig(*config_text, flags.config);
  spec::Parsed<core::JobSpec> job =
      spec::LoadJobSpec(*spec_text, RepoRelativeSpecPath(flags.jobspec));
  if (!cluster.ok() || !job.ok()) {
    ReportDiagnostics(cluster.diagnostics);
    std::vector<core::Diagnostic> shown = job.diagnostics;
    for (core::Diagnostic& d : shown) d.path = flags.jobspec;  // the file as the user named it
    ReportDiagnostics(shown);
    return std::nullopt;
  }
  OneOffFiles files{std::move(*config_text), std::move(*spec_text), std::move(*cluster.value),
                    std::move(*job.value), ""};
  if (!ResolveOneOffCode(flags, files)) return std::nullopt;
  return files;
}

// Where the run's artifacts go (MakeArtifactWriter); when nowhere but not by --no-artifacts,
// `note` says why.
std::unique_ptr<adapters::ArtifactWriter> OneOffArtifactWriter(const SubmitFlags& flags,
                                                               const core::RayConfig& cluster,
                                                               const core::Redactor& secrets,
                                                               std::string& note) {
  std::string why_none;
  auto writer =
      MakeArtifactWriter(flags.no_artifacts, flags.artifacts_root, &cluster, secrets, &why_none);
  if (!writer && !flags.no_artifacts) {
    note = "no artifacts: " + why_none + " (use --artifacts-root)";
  }
  return writer;
}

void ReportOneOff(const engine::SubmitAttemptResult& result, const std::string& address,
                  const adapters::ArtifactWriter* writer, const std::string& artifacts_note) {
  std::cout << result.submission_id << "\n";
  Report("submitted " + result.submission_id + " to " + core::StripUrlCredentials(address) +
         " (a one-off run: no ray-gitops instance manages it)");
  if (writer != nullptr) {
    if (result.artifact_error.empty()) {
      Report("artifacts in " + writer->JobDir(result.submission_id).string());
    } else {
      Report("warning: the job was submitted but its artifacts were not written: " +
             result.artifact_error);
    }
  } else if (!artifacts_note.empty()) {
    Report(artifacts_note);
  }
}

// The Ray token, the header values and the secret-named env vars of both files: what the
// output and the artifacts of a one-off submit must never show.
core::Redactor OneOffSecrets(const adapters::RayClientOptions& options, const OneOffFiles& files) {
  core::Redactor secrets = ProcessSecrets(options, nullptr);
  core::DesiredState inputs_read;
  inputs_read.cluster = files.cluster;
  inputs_read.jobs.push_back(files.job);
  secrets.AddDesiredState(inputs_read);
  return secrets;
}

// The code first: a run whose working_dir Ray cannot find fails in its runtime_env setup.
core::Status ShipOneOffCode(ports::JobServer& server, const OneOffFiles& files) {
  if (!files.job.has_code()) return core::OkStatus();
  engine::CodeUploader code(
      [&files](const std::string&) { return adapters::CodeZipOnDisk(files.job, files.repo_root); });
  core::Status shipped = code.Ensure(server, files.job.code().tree_id);
  if (shipped.ok()) return shipped;
  return core::Error(shipped.error().kind(), "code " + files.job.code().folder + ": " +
                                                 shipped.error().ToString() +
                                                 "; nothing submitted");
}

int RunSubmit(const GlobalOptions& global, const SubmitFlags& flags) {
  const std::optional<OneOffFiles> files = LoadOneOffFiles(flags);
  if (!files) return 1;
  if (!flags.instance.empty()) {
    Report("warning: --instance is ignored: a one-off run belongs to no instance (it carries " +
           std::string(core::kMetaSubmittedBy) + ": " + std::string(core::kSubmittedByCli) + ")");
  }

  core::Result<adapters::RayClientOptions> options = ResolveOptions(global, files->cluster.address);
  if (!options.ok()) return Fail(options.error().message());
  adapters::RayHttpJobServer server(*options);
  const core::Redactor secrets = OneOffSecrets(*options, *files);

  int run = 0;
  const std::string first_id = core::OneOffSubmissionId(files->job, 0);
  if (flags.new_run) {
    core::Result<int> next = NextOneOffRun(server, files->job);
    if (!next.ok()) return Fail("cannot list the jobs in Ray: " + next.error().ToString());
    run = *next;
  } else {
    core::Result<core::RayJob> existing = server.Get(first_id);
    if (existing.ok()) return RefuseExisting(*existing, first_id, secrets);
    if (!existing.error().IsNotFound()) {
      return Fail("cannot learn whether " + first_id + " exists: " + existing.error().ToString());
    }
  }

  std::string artifacts_note;
  const std::unique_ptr<adapters::ArtifactWriter> writer =
      OneOffArtifactWriter(flags, files->cluster, secrets, artifacts_note);
  core::RenderContext context;
  engine::SubmitArtifactInputs inputs{files->config_text, files->spec_text, options->address};
  if (core::Status shipped = ShipOneOffCode(server, *files); !shipped.ok()) {
    return Fail(shipped.error().message());
  }
  // Another submit of the same spec may take the id between the look-up and the POST: then
  // the plain submit reports that run, and --new-run moves on to the next number.
  constexpr int kMaxTries = 5;
  auto submit_run = [&](int n) {
    return engine::SubmitOneOff(server, writer.get(), files->job, n, files->cluster, context,
                                inputs);
  };
  core::Result<engine::SubmitAttemptResult> result = submit_run(run);
  for (int tries = 1;
       flags.new_run && tries < kMaxTries && !result.ok() && result.error().IsConflict(); ++tries) {
    result = submit_run(++run);
  }
  if (!result.ok() && result.error().IsConflict() && !flags.new_run) {
    if (core::Result<core::RayJob> existing = server.Get(first_id); existing.ok()) {
      return RefuseExisting(*existing, first_id, secrets);
    }
  }
  if (!result.ok()) return Fail("submit failed: " + result.error().ToString());
  ReportOneOff(*result, options->address, writer.get(), artifacts_note);
  return 0;
}

void AddSubmitCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto submit_flags = std::make_shared<SubmitFlags>();
  CLI::App* submit = app.add_subcommand(
      "submit",
      "submit one JobSpec to Ray now as a one-off run that no daemon manages, with artifacts");
  submit->footer(
      "The run's id is <name>-<spec_hash>-cli (<pin>-cli for a pinned submission_id) and its "
      "metadata has gitops.submitted-by: cli instead of gitops.managed-by, so no ray-gitops "
      "instance ever adopts or stops it. The id goes to stdout.\n"
      "Exit status: 0 submitted; 3 the run exists already: nothing submitted, stderr names it "
      "and its state (use --new-run for another run); 1 error.");
  submit->add_option("--config", submit_flags->config, "the cluster file (RayConfig)")->required();
  submit->add_option("--jobspec", submit_flags->jobspec, "the JobSpec file")->required();
  submit->add_flag("--new-run", submit_flags->new_run,
                   "submit another one-off run of the spec: <id>-cli-<n>, one past the highest "
                   "run Ray lists");
  submit->add_option("--instance", submit_flags->instance,
                     "ignored (with a warning): one-off runs belong to no instance");
  submit->add_option("--artifacts-root", submit_flags->artifacts_root,
                     "write artifacts under DIR/jobs/<submission_id>/ instead of shared_root");
  submit->add_flag("--no-artifacts", submit_flags->no_artifacts, "write no artifacts");
  submit->callback(
      [&global, exit_code, submit_flags] { *exit_code = RunSubmit(global, *submit_flags); });
}

}  // namespace

core::Result<std::string> ReadTextFile(const std::string& path, std::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::Error::InvalidInput(std::string(flag) + ": cannot read '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return core::Error::InvalidInput(std::string(flag) + ": cannot read '" + path + "'");
  }
  return text.str();
}

// The cluster file's address, for the commands that take --config only to learn it.
core::Result<std::string> AddressFromConfig(const std::string& config_path) {
  if (config_path.empty()) return std::string();
  core::Result<std::string> text = ReadTextFile(config_path, "--config");
  if (!text.ok()) return text.error();
  spec::Parsed<core::RayConfig> cluster = spec::LoadRayConfig(*text, config_path);
  if (!cluster.ok()) {
    std::string message = "invalid cluster file:";
    for (const core::Diagnostic& d : cluster.diagnostics) message += "\n" + d.ToString();
    return core::Error::InvalidInput(message);
  }
  return cluster.value->address;
}

void AddJobCommands(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  AddSubmitCommand(app, global, exit_code);
  AddJobQueryCommands(app, global, exit_code);
}

}  // namespace rg::cli
