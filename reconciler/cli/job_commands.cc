// The seed's one-off actions against a Ray head (DESIGN.md 6): submit, status, stop, logs,
// list. Output for people goes to stdout; what went wrong goes to stderr prefixed
// "ray-gitops: ". Exit status 0 on success, 1 on any error; submit exits 3 when the one-off
// run exists already and nothing was submitted.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "reconciler/adapters/artifact_writer.h"
#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/cli/logging.h"
#include "reconciler/cli/pass_runner.h"
#include "reconciler/cli/ray_client_flags.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/render.h"
#include "reconciler/core/text_table.h"
#include "reconciler/core/time_format.h"
#include "reconciler/core/value.h"
#include "reconciler/engine/submit_attempt.h"
#include "reconciler/ports/job_server.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::cli {
namespace {

namespace fs = std::filesystem;

// submit: the one-off run exists already; nothing was submitted (DESIGN.md 2.2).
constexpr int kExitRunExists = 3;

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
                              "pass --config with a cluster file that has an address");
}

// For commands that take an optional --config only to learn the address.
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

core::Result<std::unique_ptr<adapters::RayHttpJobServer>> ConnectFromFlags(
    const GlobalOptions& global, const std::string& config_path) {
  core::Result<std::string> fallback = AddressFromConfig(config_path);
  if (!fallback.ok()) return fallback.error();
  core::Result<adapters::RayClientOptions> options = ResolveOptions(global, *fallback);
  if (!options.ok()) return options.error();
  // What these commands print goes through the one redaction step (RedactForOutput).
  AddLogSecrets(ProcessSecrets(*options, nullptr));
  return std::make_unique<adapters::RayHttpJobServer>(std::move(*options));
}

// Ray's message as every command shows it: redacted, then cut to its first line.
std::string ShownMessage(const std::string& ray_message) {
  return core::FirstLineOfMessage(RedactForOutput(ray_message));
}

std::string FormatTime(const std::optional<int64_t>& ms) {
  if (!ms) return "-";
  return core::FormatRfc3339Seconds(*ms);
}

core::Value MetadataOrNull(const core::RayJob& job, std::string_view key) {
  auto it = job.metadata.find(key);
  return it == job.metadata.end() ? core::Value() : core::Value(it->second);
}

std::string JobKey(const core::RayJob& job) {
  if (!job.submission_id.empty()) return job.submission_id;
  return job.job_id.value_or("-");
}

// The last `n` lines of `text` (a final line without '\n' counts as a line).
std::string_view LastLines(std::string_view text, int n) {
  if (n < 0) return text;
  if (n == 0) return {};
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  int seen = 0;
  while (end > 0) {
    const size_t nl = text.rfind('\n', end - 1);
    if (nl == std::string_view::npos) return text;
    if (++seen == n) return text.substr(nl + 1);
    end = nl;
  }
  return text;
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

// The number of the next one-off run of `spec` (DESIGN.md 2.2): one past the highest run
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
};

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
  return OneOffFiles{std::move(*config_text), std::move(*spec_text), std::move(*cluster.value),
                     std::move(*job.value)};
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
  // The Ray token, the header values and the secret-named env vars of both files: what the
  // output and the artifacts of this command must never show.
  core::Redactor secrets = ProcessSecrets(*options, nullptr);
  core::DesiredState inputs_read;
  inputs_read.cluster = files->cluster;
  inputs_read.jobs.push_back(files->job);
  secrets.AddDesiredState(inputs_read);

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

// --- status, stop, logs, list ---

int RunStatus(const GlobalOptions& global, const std::string& config, const std::string& id) {
  auto server = ConnectFromFlags(global, config);
  if (!server.ok()) return Fail(server.error().message());
  core::Result<core::RayJob> job = (*server)->Get(id);
  if (!job.ok()) {
    if (job.error().IsNotFound()) return Fail("no job " + id + " in Ray");
    return Fail(job.error().ToString());
  }
  std::ostringstream out;
  out << "submission_id: " << JobKey(*job) << "\n"
      << "status: " << core::RayJobStatusName(job->status) << "\n"
      << "message: " << ShownMessage(job->message) << "\n"
      << "error_type: " << job->error_type.value_or("-") << "\n"
      << "start_time: " << FormatTime(job->start_time_ms) << "\n"
      << "end_time: " << FormatTime(job->end_time_ms) << "\n"
      << "driver_exit_code: "
      << (job->driver_exit_code ? std::to_string(*job->driver_exit_code) : "-") << "\n"
      << "managed_by: " << engine::OwnerOf(*job) << "\n";
  std::cout << RedactForOutput(out.str());
  return 0;
}

int RunStop(const GlobalOptions& global, const std::string& config, const std::string& id) {
  auto server = ConnectFromFlags(global, config);
  if (!server.ok()) return Fail(server.error().message());
  core::Result<bool> stopped = (*server)->Stop(id);
  if (!stopped.ok()) {
    if (stopped.error().IsNotFound()) return Fail("no job " + id + " in Ray");
    return Fail(stopped.error().ToString());
  }
  if (*stopped) {
    std::cout << "stop sent to " << id << " (Ray stops it asynchronously)\n";
  } else {
    std::cout << id << " had already ended; no stop sent\n";
  }
  return 0;
}

// --follow polls GET /logs once a second and prints the bytes past what it printed before,
// until the job is terminal (then one last fetch). Polling, not the /logs/tail WebSocket:
// it needs nothing beyond the calls every other command makes, survives a dropped
// connection, and a second of delay does not matter for training logs.
int RunLogs(const GlobalOptions& global, const std::string& config, const std::string& id,
            bool follow, int tail) {
  auto server = ConnectFromFlags(global, config);
  if (!server.ok()) return Fail(server.error().message());
  core::Result<std::string> logs = (*server)->Logs(id);
  if (!logs.ok()) {
    if (logs.error().IsNotFound()) return Fail("no job " + id + " in Ray");
    return Fail(logs.error().ToString());
  }
  std::cout << LastLines(*logs, tail) << std::flush;
  if (!follow) return 0;

  size_t printed = logs->size();
  while (true) {
    core::Result<core::RayJob> job = (*server)->Get(id);
    if (!job.ok()) return Fail(job.error().ToString());
    const bool terminal = core::IsTerminal(job->status);
    core::Result<std::string> now = (*server)->Logs(id);
    if (!now.ok()) return Fail(now.error().ToString());
    if (now->size() < printed) printed = 0;  // the log was replaced: print it anew
    std::cout << std::string_view(*now).substr(printed) << std::flush;
    printed = now->size();
    if (terminal) return 0;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

core::Value JobToJson(const core::RayJob& job) {
  core::Value::Object metadata;
  for (const auto& [k, v] : job.metadata) metadata[k] = v;
  core::Value::Object o;
  auto optional_int = [](const std::optional<int64_t>& v) {
    return v ? core::Value(*v) : core::Value();
  };
  o["type"] = job.type;
  o["submission_id"] = job.submission_id.empty() ? core::Value() : core::Value(job.submission_id);
  o["job_id"] = job.job_id ? core::Value(*job.job_id) : core::Value();
  o["status"] = std::string(core::RayJobStatusName(job.status));
  o["message"] = ShownMessage(job.message);
  o["error_type"] = job.error_type ? core::Value(*job.error_type) : core::Value();
  o["entrypoint"] = RedactForOutput(job.entrypoint);
  o["start_time"] = job.start_time_ms ? core::Value(FormatTime(job.start_time_ms)) : core::Value();
  o["end_time"] = job.end_time_ms ? core::Value(FormatTime(job.end_time_ms)) : core::Value();
  o["driver_exit_code"] = optional_int(job.driver_exit_code);
  o["name"] = MetadataOrNull(job, core::kMetaName);
  // The labels as they are: an instance, or null for a one-off run, which has submitted_by.
  o["managed_by"] = MetadataOrNull(job, core::kMetaManagedBy);
  o["submitted_by"] = MetadataOrNull(job, core::kMetaSubmittedBy);
  o["metadata"] = std::move(metadata);
  return o;
}

int RunList(const GlobalOptions& global, const std::string& config, const std::string& format) {
  auto server = ConnectFromFlags(global, config);
  if (!server.ok()) return Fail(server.error().message());
  core::Result<std::vector<core::RayJob>> jobs = (*server)->List();
  if (!jobs.ok()) return Fail(jobs.error().ToString());
  std::vector<core::RayJob> sorted = std::move(*jobs);
  // Oldest first, like `ray job list`; jobs not started yet last.
  std::stable_sort(sorted.begin(), sorted.end(), [](const core::RayJob& a, const core::RayJob& b) {
    return a.start_time_ms.value_or(INT64_MAX) < b.start_time_ms.value_or(INT64_MAX);
  });

  if (format == "json") {
    core::Value::Array array;
    for (const core::RayJob& job : sorted) array.push_back(JobToJson(job));
    std::cout << core::ToPrettyJson(core::Value(std::move(array))) << "\n";
    return 0;
  }

  const std::vector<std::string> header = {"SUBMISSION_ID", "NAME",       "STATUS",    "TYPE",
                                           "MANAGED_BY",    "START_TIME", "ENTRYPOINT"};
  std::vector<core::TextRow> rows = {header};
  for (const core::RayJob& job : sorted) {
    std::string entrypoint = RedactForOutput(job.entrypoint);
    std::replace(entrypoint.begin(), entrypoint.end(), '\n', ' ');
    if (entrypoint.size() > 60) entrypoint = entrypoint.substr(0, 57) + "...";
    auto name = job.metadata.find(core::kMetaName);
    rows.push_back({JobKey(job), name == job.metadata.end() ? "-" : name->second,
                    std::string(core::RayJobStatusName(job.status)),
                    job.type.empty() ? "-" : job.type, engine::OwnerOf(job),
                    FormatTime(job.start_time_ms), entrypoint});
  }
  std::cout << core::FormatTextTable(rows);
  return 0;
}

}  // namespace

namespace {

// The other commands take the id as a positional and an optional cluster file whose address
// is the last fallback.
struct IdFlags {
  std::string id;
  std::string config;
  bool follow = false;
  int tail = -1;
  std::string format = "table";
};

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

void AddListCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto list_flags = std::make_shared<IdFlags>();
  CLI::App* list = app.add_subcommand(
      "list",
      "list every job Ray knows, managed or not; MANAGED_BY is the instance, cli for a "
      "one-off run of `submit`, - for neither");
  list->add_option("--format", list_flags->format, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  list->add_option("--config", list_flags->config,
                   "a cluster file whose address is used when no other is given");
  list->callback([&global, exit_code, list_flags] {
    *exit_code = RunList(global, list_flags->config, list_flags->format);
  });
}

}  // namespace

void AddJobCommands(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  AddSubmitCommand(app, global, exit_code);

  auto add_id_command = [&app](const std::string& name, const std::string& help,
                               const std::shared_ptr<IdFlags>& flags) {
    CLI::App* cmd = app.add_subcommand(name, help);
    cmd->add_option("id", flags->id, "the submission id (or Ray job id)")->required();
    cmd->add_option("--config", flags->config,
                    "a cluster file whose address is used when no other is given");
    return cmd;
  };

  auto status_flags = std::make_shared<IdFlags>();
  add_id_command("status", "print a job's status, message, times and exit code", status_flags)
      ->callback([&global, exit_code, status_flags] {
        *exit_code = RunStatus(global, status_flags->config, status_flags->id);
      });

  auto stop_flags = std::make_shared<IdFlags>();
  add_id_command("stop", "ask Ray to stop a job", stop_flags)
      ->callback([&global, exit_code, stop_flags] {
        *exit_code = RunStop(global, stop_flags->config, stop_flags->id);
      });

  auto logs_flags = std::make_shared<IdFlags>();
  CLI::App* logs = add_id_command("logs", "print a job's driver log", logs_flags);
  logs->add_flag("--follow,-f", logs_flags->follow,
                 "keep printing new output (polled every second) until the job ends");
  logs->add_option("--tail", logs_flags->tail, "print only the last N lines first")
      ->check(CLI::NonNegativeNumber);
  logs->callback([&global, exit_code, logs_flags] {
    *exit_code =
        RunLogs(global, logs_flags->config, logs_flags->id, logs_flags->follow, logs_flags->tail);
  });

  AddListCommand(app, global, exit_code);
}

}  // namespace rg::cli
