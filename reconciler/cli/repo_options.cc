#include "reconciler/cli/repo_options.h"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "reconciler/adapters/ssh_host_keys.h"
#include "reconciler/cli/leave_to_exit.h"
#include "reconciler/cli/logging.h"
#include "reconciler/core/duration.h"
#include "reconciler/core/render.h"

namespace rg::cli {
namespace {

bool SameBranch(const std::string& ref, const std::string& branch) {
  return ref == branch || ref == "refs/heads/" + branch;
}

// ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ (it becomes part of a branch name).
bool IsValidInstanceName(std::string_view name) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back())) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-'; });
}

// The build whose parsers made a cache's entries: the version, and the executable's size and
// modification time, so that a rebuild of one version never trusts an older build's results.
std::string ParseCacheProgramVersion() {
  std::string version = "ray-gitops " RG_VERSION;
  struct stat st {};
  if (::stat("/proc/self/exe", &st) == 0) {
    version += " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
               std::to_string(st.st_mtim.tv_nsec);
  }
  return version;
}

}  // namespace

std::shared_ptr<adapters::ParseCache> OpenParseCache(const RepoOptions& options,
                                                     const adapters::GitWorkspace& workspace) {
  auto cache = std::make_shared<adapters::ParseCache>(
      adapters::ParseCachePath(options.cache_dir, workspace.url()), ParseCacheProgramVersion());
  if (std::string problem = cache->load_problem(); !problem.empty()) {
    LogEvent("debug", "parse cache not used, rebuilding it",
             {{"path", cache->path()}, {"reason", problem}});
  }
  return cache;
}

void SaveParseCache(adapters::ParseCache* cache) {
  if (cache == nullptr) return;
  if (core::Status saved = cache->Save(); !saved.ok()) {
    LogEvent("debug", "parse cache not saved",
             {{"path", cache->path()}, {"reason", saved.error().message()}});
  }
}

void DropGitCaches(const RepoHandles& handles) {
  if (!handles.workspace) return;
  if (core::Status dropped = handles.workspace->DropCaches(); !dropped.ok()) {
    LogEvent("warn", "cannot reopen the clone to free its caches",
             {{"reason", dropped.error().message()}});
  }
}

void LeaveRepoToExit(RepoHandles&& handles) {
  SaveParseCache(handles.parse_cache.get());
  LeaveToExit(std::move(handles));
}

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

void PrepareGitSsh(const GlobalOptions& global, RepoOptions* repo) {
  if (repo->cache_dir.empty()) repo->cache_dir = adapters::DefaultGitCacheDir();
  adapters::SshHostKeyConfig config = adapters::KnownHostsFromEnvironment(global.known_hosts);
  config.private_home = (std::filesystem::path(repo->cache_dir) / "ssh-home").string();
  config.warn = [](const std::string& line) { LogEvent("warn", "known_hosts: " + line); };
  adapters::ConfigureSshHostKeys(std::move(config));
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
  cmd->add_option("--cache-dir", o->cache_dir, "where the clone and the parse cache are kept");
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

core::Result<RepoHandles> OpenRepo(const RepoOptions& options, bool read_only) {
  adapters::GitWorkspaceOptions ws;
  ws.repo = options.repo;
  ws.cache_dir = options.cache_dir;
  ws.token_file = options.git_token_file;
  ws.ssh_key_file = options.git_ssh_key;
  core::Result<std::shared_ptr<adapters::GitWorkspace>> opened = adapters::GitWorkspace::Open(ws);
  if (!opened.ok()) return opened.error();
  RepoHandles h;
  h.workspace = *opened;
  h.parse_cache = OpenParseCache(options, *h.workspace);
  adapters::GitDesiredStateOptions src;
  src.cluster_file = options.cluster_file;
  src.jobs_dir = options.jobs_dir;
  src.parse_cache = h.parse_cache;
  src.lean_instance = options.instance;
  if (SameBranch(options.ref, options.status_branch)) src.excluded_dir = "status";
  h.source = std::make_unique<adapters::GitDesiredStateSource>(h.workspace, src);
  adapters::GitStatusStoreOptions st;
  st.parse_cache = h.parse_cache;
  st.branch = options.status_branch;
  st.markdown_header.repo_url = h.workspace->recorded_url();
  st.markdown_header.instance = options.instance;
  st.markdown_header.watched_branch = options.ref;  // "HEAD": the store asks the remote
  st.read_only = read_only;
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
  cmd->add_option("--dashboard-url", flags->dashboard_url,
                  "the Ray dashboard as browsers reach it, for links (default: the Ray address)")
      ->check(
          [](const std::string& url) -> std::string {
            if (url.starts_with("http://") || url.starts_with("https://")) return "";
            return "--dashboard-url must start with http:// or https://";
          },
          "URL");
  cmd->add_option_function<std::string>(
         "--gc-finished-after",
         [flags](const std::string& text) {
           flags->gc_finished_after_ms = core::ParseDurationMs(text, core::BareNumber::kRefused);
         },
         "delete runs of ours from Ray once they ended this long ago (e.g. 7d, 12h) and their "
         "end is committed to the status branch; the ledger keeps them (default: never)")
      ->check(
          [](const std::string& text) -> std::string {
            if (core::ParseDurationMs(text, core::BareNumber::kRefused)) return "";
            return "--gc-finished-after takes a duration such as 7d, 12h or 30m (got \"" + text +
                   "\")";
          },
          "DURATION");
  return max_stops;
}

void ApplyPassFlags(const PassFlags& flags, engine::ReconcileOptions* options) {
  options->record_status = !flags.no_status;
  options->policy.max_stops = flags.max_stops;
  options->policy.max_stops_explicit = flags.max_stops_given;
  options->parallelism = flags.parallelism;
  options->dashboard_url = core::StripUrlCredentials(flags.dashboard_url);
  options->gc_finished_after_ms = flags.gc_finished_after_ms;
}

}  // namespace rg::cli
