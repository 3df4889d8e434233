#include "reconciler/cli/repo_options.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "reconciler/adapters/artifact_writer.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/cli/ray_client_flags.h"
#include "reconciler/core/render.h"
#include "reconciler/core/time_format.h"

namespace rg::cli {
namespace {

bool g_json_logs = false;

// The secrets every log line is redacted with; grows as passes learn the desired state's.
std::mutex g_log_secrets_mu;
core::Redactor g_log_secrets;

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  return text.str();
}

bool SameBranch(const std::string& ref, const std::string& branch) {
  return ref == branch || ref == "refs/heads/" + branch;
}

// DESIGN.md 2.2: ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ (it becomes part of a branch name).
bool IsValidInstanceName(std::string_view name) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back())) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-'; });
}

}  // namespace

std::string DefaultStatusBranch(std::string_view instance) {
  std::string branch(adapters::kDefaultStatusBranch);
  if (instance != core::kDefaultInstance) branch += "-" + std::string(instance);
  return branch;
}

std::string RepoCredentialProblem(std::string_view repo, std::string_view flag) {
  const std::string stripped = core::StripUrlCredentials(repo);
  if (stripped == repo) return "";
  return std::string(flag) +
         ": the URL holds credentials, which never come from the command line (they show in "
         "the process list, shell history and CI logs); give " +
         std::string(flag) + " " + stripped +
         (flag == "--repo" ? " and put the token in a file named by --git-token-file" : "");
}

void AddPreviousRepoOption(CLI::App* cmd, RepoOptions* o) {
  cmd->add_option_function<std::vector<std::string>>(
         "--previous-repo",
         [o](const std::vector<std::string>& urls) {
           for (const std::string& url : urls) {
             if (std::string problem = RepoCredentialProblem(url, "--previous-repo");
                 !problem.empty()) {
               throw CLI::ValidationError(problem, 1);
             }
           }
           o->previous_repos = urls;
         },
         "a URL this repository had before it moved (repeatable): runs recorded under it are "
         "ours, kept and adopted, not restarted")
      ->allow_extra_args(false);
}

void AddRepoOptions(CLI::App* cmd, RepoOptions* o, bool with_ref, bool with_artifacts) {
  // Checked as the flag is parsed, so that nothing runs with it; exit status 1 as for any error.
  cmd->add_option_function<std::string>(
         "--repo",
         [o](const std::string& repo) {
           if (std::string problem = RepoCredentialProblem(repo, "--repo"); !problem.empty()) {
             throw CLI::ValidationError(problem, 1);
           }
           o->repo = repo;
         },
         "desired-state repository: a local path or a URL (no credentials in it: an HTTPS "
         "token comes from --git-token-file)")
      ->required();
  if (with_ref) {
    cmd->add_option("--ref", o->ref, "branch, tag or commit to read (default: the remote's HEAD)");
  }
  cmd->add_option("--cache-dir", o->cache_dir, "where the clone is kept");
  cmd->add_option("--git-token-file", o->git_token_file, "file holding an HTTPS token");
  cmd->add_option("--git-ssh-key", o->git_ssh_key, "SSH private key (else the SSH agent)");
  CLI::Option* status_branch = cmd->add_option(
      "--status-branch", o->status_branch,
      "branch the status is written to (default: ray-gitops/status for the default instance, "
      "ray-gitops/status-<instance> for any other)");
  cmd->add_option_function<std::string>(
      "--instance",
      [o, status_branch](const std::string& instance) {
        if (!IsValidInstanceName(instance)) {
          throw CLI::ValidationError(
              "--instance must be 1 to 63 characters of [a-z0-9-] starting and ending with a "
              "letter or digit (got \"" +
                  instance + "\")",
              1);
        }
        o->instance = instance;
        // An explicit --status-branch wins; callbacks run after the whole line is parsed.
        if (status_branch->count() == 0) o->status_branch = DefaultStatusBranch(instance);
      },
      "this reconciler's gitops.managed-by name (default ray-gitops)");
  cmd->add_option("--cluster-file", o->cluster_file, "path of the cluster file in the repo");
  cmd->add_option("--jobs-dir", o->jobs_dir, "folder of the JobSpecs in the repo");
  if (with_artifacts) {
    cmd->add_option("--artifacts-root", o->artifacts_root,
                    "where submission artifacts go (default: cluster.yaml's shared_root)");
    cmd->add_flag("--no-artifacts", o->no_artifacts, "write no submission artifacts");
  }
}

core::Result<RepoHandles> OpenRepo(const RepoOptions& options) {
  adapters::GitWorkspaceOptions ws;
  ws.repo = options.repo;
  ws.cache_dir = options.cache_dir;
  ws.token_file = options.git_token_file;
  ws.ssh_key_file = options.git_ssh_key;
  core::Result<std::shared_ptr<adapters::GitWorkspace>> opened = adapters::GitWorkspace::Open(ws);
  if (!opened.ok()) return opened.error();
  RepoHandles h;
  h.workspace = *opened;
  adapters::GitDesiredStateOptions src;
  src.cluster_file = options.cluster_file;
  src.jobs_dir = options.jobs_dir;
  if (SameBranch(options.ref, options.status_branch)) src.excluded_dir = "status";
  h.source = std::make_unique<adapters::GitDesiredStateSource>(h.workspace, src);
  adapters::GitStatusStoreOptions st;
  st.branch = options.status_branch;
  st.markdown_header.repo_url = h.workspace->recorded_url();
  st.markdown_header.instance = options.instance;
  h.store = std::make_unique<adapters::GitStatusStore>(h.workspace, st);
  return h;
}

CLI::Option* AddPassFlags(CLI::App* cmd, PassFlags* flags, std::string_view stops_per) {
  cmd->add_flag("--no-status", flags->no_status, "do not write the status branch");
  CLI::Option* max_stops =
      cmd->add_option("--max-stops", flags->max_stops,
                      "stop at most N jobs" + std::string(stops_per) +
                          " (default 5); given explicitly, also allows stopping every job");
  max_stops->check(CLI::NonNegativeNumber);
  cmd->add_option("--parallelism", flags->parallelism, "submits in flight at once (default 4)")
      ->check(CLI::PositiveNumber);
  return max_stops;
}

void ApplyPassFlags(const PassFlags& flags, engine::ReconcileOptions* options) {
  options->record_status = !flags.no_status;
  options->policy.max_stops = flags.max_stops;
  options->policy.max_stops_explicit = flags.max_stops_given;
  options->parallelism = flags.parallelism;
}

core::Result<adapters::RayClientOptions> ResolveRay(const GlobalOptions& global,
                                                    const std::string& fallback_address) {
  return ResolveRayFromGlobal(global, fallback_address, "put an address in the cluster file");
}

std::unique_ptr<adapters::ArtifactWriter> MakeArtifactWriter(bool no_artifacts,
                                                             const std::string& artifacts_root,
                                                             const core::RayConfig* cluster,
                                                             core::Redactor secrets,
                                                             std::string* why_none) {
  if (no_artifacts) {
    *why_none = "--no-artifacts";
    return nullptr;
  }
  std::string root = artifacts_root;
  if (root.empty()) {
    if (cluster == nullptr || !cluster->shared_root) {
      *why_none = "the cluster file has no shared_root";
      return nullptr;
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(*cluster->shared_root, ec)) {
      *why_none = "shared_root " + *cluster->shared_root + " is not a directory on this machine";
      return nullptr;
    }
    root = *cluster->shared_root;
  }
  return std::make_unique<adapters::ArtifactWriter>(root, std::move(secrets));
}

std::unique_ptr<ports::ArtifactSink> MakeArtifactSink(const RepoOptions& options,
                                                      const ports::DesiredSnapshot& snapshot,
                                                      const adapters::RayClientOptions& ray,
                                                      std::string* why_none) {
  core::Redactor secrets = ProcessSecrets(ray, &options);
  secrets.AddDesiredState(snapshot.state);
  const auto& cluster = snapshot.state.cluster;
  return MakeArtifactWriter(options.no_artifacts, options.artifacts_root,
                            cluster ? &*cluster : nullptr, std::move(secrets), why_none);
}

core::Redactor ProcessSecrets(const adapters::RayClientOptions& ray, const RepoOptions* repo) {
  core::Redactor secrets;
  if (ray.token) secrets.Add(*ray.token);
  for (const auto& [name, value] : ray.headers) secrets.Add(value);
  if (repo != nullptr && !repo->git_token_file.empty()) {
    secrets.Add(ReadWholeFile(repo->git_token_file));
  }
  return secrets;
}

void AddLogSecrets(const core::Redactor& secrets) {
  std::lock_guard lock(g_log_secrets_mu);
  g_log_secrets.Merge(secrets);
}

std::string RedactForOutput(std::string_view text) {
  std::lock_guard lock(g_log_secrets_mu);
  return g_log_secrets.Apply(text);
}

core::Result<PassRun> RunPassFromFlags(const GlobalOptions& global, const RepoOptions& repo,
                                       engine::ReconcileOptions options, bool artifacts) {
  core::Result<RepoHandles> handles = OpenRepo(repo);
  if (!handles.ok()) return handles.error();
  return RunPassOnRepo(global, repo, *handles->source, handles->store.get(), std::move(options),
                       artifacts);
}

core::Result<PassRun> RunPassOnRepo(const GlobalOptions& global, const RepoOptions& repo,
                                    ports::DesiredStateSource& repo_source,
                                    ports::StatusStore* store, engine::ReconcileOptions options,
                                    bool artifacts, const JobServerDecorator& decorate) {
  core::Result<ports::DesiredSnapshot> loaded = repo_source.Load(options.ref);
  if (!loaded.ok()) {
    return core::Error(loaded.error().kind(), "cannot read " + options.ref + " of " + repo.repo +
                                                  ": " + loaded.error().message());
  }
  PassRun run;
  run.snapshot = std::move(*loaded);
  const auto& cluster = run.snapshot.state.cluster;
  core::Result<adapters::RayClientOptions> ray =
      ResolveRay(global, cluster ? cluster->address : std::string());
  adapters::RayClientOptions ray_options;
  if (ray.ok()) {
    ray_options = std::move(*ray);
  } else if (cluster) {
    return ray.error();
  }  // else: the pass stops at the invalid cluster file before it would talk to Ray
  run.ray_address = core::StripUrlCredentials(ray_options.address);

  auto make_server = [ray_options, decorate]() -> std::unique_ptr<ports::JobServer> {
    auto server = std::make_unique<adapters::RayHttpJobServer>(ray_options);
    if (!decorate) return server;
    return decorate(std::move(server));
  };
  std::unique_ptr<ports::JobServer> server = make_server();
  LoadedSnapshotSource source(run.snapshot, repo_source);
  std::unique_ptr<ports::ArtifactSink> sink;
  if (artifacts && !options.dry_run) {
    std::string why_none;
    sink = MakeArtifactSink(repo, run.snapshot, ray_options, &why_none);
    if (!sink) LogEvent("debug", "no submission artifacts", {{"reason", why_none}});
  }
  options.secrets.Merge(ProcessSecrets(ray_options, &repo));
  AddLogSecrets(options.secrets);
  if (options.now_ms == 0) {
    options.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  }
  engine::ReconcileDeps deps;
  deps.source = &source;
  deps.server = server.get();
  deps.server_factory = make_server;
  deps.store = store;
  deps.artifacts = sink.get();
  options.policy.owner.instance = repo.instance;
  for (const std::string& url : repo.previous_repos) {
    // A path is compared as the absolute path it names, like --repo.
    options.policy.owner.AddPrevious(adapters::NormaliseRepoUrl(url));
  }
  options.ray_address = ray_options.address;
  run.result = engine::RunReconcilePass(deps, options);
  // A pass that loaded again planned from a newer commit: show that one.
  if (run.result.snapshot) run.snapshot = *run.result.snapshot;
  AddLogSecrets(run.result.redactor);
  return run;
}

void LogPass(const engine::PassResult& result) {
  for (const core::Diagnostic& d : result.diagnostics) LogEvent("error", d.ToString());
  for (const engine::ActionOutcome& o : result.outcomes) {
    std::map<std::string, std::string> fields = {{"job", o.action.name},
                                                 {"submission_id", o.action.submission_id}};
    const bool stop = o.action.kind == core::ActionKind::kStop;
    if (!o.ok) {
      fields["error"] = o.error->ToString();
      LogEvent("error", stop ? "stop failed" : "submit failed", fields);
      continue;
    }
    if (stop) {
      fields["reason"] = core::StopReasonName(o.action.stop_reason);
      LogEvent("info", o.stop_sent ? "stopped" : "already ended", fields);
    } else {
      fields["attempt"] = std::to_string(o.action.attempt);
      LogEvent("info", o.adopted ? "adopted" : "submitted", fields);
      if (!o.artifact_error.empty()) {
        fields["error"] = o.artifact_error;
        LogEvent("warn", "artifacts not written", fields);
      }
    }
  }
  if (result.blocked) LogEvent("warn", "blocked", {{"reason", result.plan.blocked_reason}});
  for (const core::Error& e : result.errors) {
    const bool action_error = std::any_of(
        result.outcomes.begin(), result.outcomes.end(), [&](const engine::ActionOutcome& o) {
          return o.error && e.message().ends_with(o.error->message());
        });
    if (!action_error) LogEvent("error", e.ToString());
  }
  for (const std::string& t : result.transitions) LogEvent("info", "status", {{"change", t}});
  if (!result.status_commit.empty()) {
    LogEvent("info", "status committed", {{"commit", result.status_commit}});
  }
}

void ConfigureLogging(const GlobalOptions& global) {
  g_json_logs = global.log_format == "json";
  auto logger = spdlog::stderr_logger_mt("ray-gitops");
  logger->set_level(spdlog::level::from_str(global.log_level));
  if (g_json_logs) {
    logger->set_pattern("%v");
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  }
  spdlog::set_default_logger(logger);
}

void LogEvent(std::string_view level, std::string_view message,
              const std::map<std::string, std::string>& fields) {
  const spdlog::level::level_enum lvl = spdlog::level::from_str(std::string(level));
  if (!spdlog::default_logger()->should_log(lvl)) return;
  // Redacted before it is formatted, so a secret escaped as JSON is still found.
  const std::string safe_message = RedactForOutput(message);
  std::map<std::string, std::string> safe_fields;
  for (const auto& [k, v] : fields) safe_fields[k] = RedactForOutput(v);
  std::string line;
  if (g_json_logs) {
    nlohmann::json j;
    const auto now = std::chrono::system_clock::now();
    j["time"] = core::FormatRfc3339Seconds(now);
    j["level"] = std::string(level);
    j["msg"] = safe_message;
    for (const auto& [k, v] : safe_fields) j[k] = v;
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = safe_message;
    for (const auto& [k, v] : safe_fields) {
      line += " " + k + "=";
      line += v.find_first_of(" \t\"") == std::string::npos ? v : nlohmann::json(v).dump();
    }
  }
  spdlog::log(lvl, "{}", line);
}

}  // namespace rg::cli
