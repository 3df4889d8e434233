#include "reconciler/cli/pass_runner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unordered_set>

#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/adapters/secrets_directory.h"
#include "reconciler/adapters/ssh_host_keys.h"
#include "reconciler/cli/leave_to_exit.h"
#include "reconciler/cli/logging.h"
#include "reconciler/cli/prefetched_list.h"
#include "reconciler/cli/ray_client_flags.h"
#include "reconciler/core/render.h"

namespace rg::cli {
namespace {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  return text.str();
}

}  // namespace

core::Result<adapters::RayClientOptions> ResolveRay(const GlobalOptions& global,
                                                    const std::string& fallback_address,
                                                    AddressTrust fallback_trust) {
  return ResolveRayFromGlobal(global, fallback_address, "put an address in the cluster file",
                              fallback_trust);
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

namespace {

// A one-shot pass whose Ray address the flags give lists Ray while it loads the commit
// (prefetched_list.h); null when the address comes from the cluster file, or for the daemon.
// Nor over SSH: a host key the known_hosts file refuses stops the command before anything is
// sent to Ray (adapters/ssh_host_keys.h).
std::unique_ptr<PrefetchedListServer> StartEarlyListing(const GlobalOptions& global,
                                                        const RepoOptions& repo,
                                                        const engine::ReconcileOptions& options,
                                                        const PassWiring& wiring) {
  if (!options.overlap_reads || wiring.decorate || options.digest_key) return nullptr;
  if (adapters::ParseSshRemote(adapters::NormaliseRepoUrl(repo.repo))) return nullptr;
  core::Result<adapters::RayClientOptions> known =
      ResolveRay(global, "", AddressTrust::kOperator);  // the flags and the environment only
  if (!known.ok()) return nullptr;  // the pass resolves it again and reports what is wrong
  if (wiring.ray_call_attempts > 0) known->max_attempts = wiring.ray_call_attempts;
  const std::string address = known->address;
  return std::make_unique<PrefetchedListServer>(
      std::make_unique<adapters::RayHttpJobServer>(std::move(*known)), address);
}

// Whose runs are ours: this instance's, and the --previous-repo URLs'.
void SetOwner(const RepoOptions& repo, core::Ownership& owner) {
  owner.instance = repo.instance;
  for (const std::string& url : repo.previous_repos) {
    // A path is compared as the absolute path it names, like --repo.
    owner.AddPrevious(adapters::NormaliseRepoUrl(url));
  }
}

// Makes clients of the head `ray` names, decorated.
std::function<std::unique_ptr<ports::JobServer>()> ServerFactory(
    const adapters::RayClientOptions& ray, const JobServerDecorator& decorate) {
  return [ray, decorate]() -> std::unique_ptr<ports::JobServer> {
    auto server = std::make_unique<adapters::RayHttpJobServer>(ray);
    if (!decorate) return server;
    return decorate(std::move(server));
  };
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What every pass takes from the command line's repository and Ray options: the process's
// secrets (logged redacted from now on), the time, whose runs are ours, the head's address.
void CompleteOptions(const RepoOptions& repo, const adapters::RayClientOptions& ray,
                     engine::ReconcileOptions& options) {
  options.secrets.Merge(ProcessSecrets(ray, &repo));
  AddLogSecrets(options.secrets);
  if (options.now_ms == 0) options.now_ms = NowMs();
  SetOwner(repo, options.policy.owner);
  options.ray_address = ray.address;
}

// The job secrets' directory (--secrets-dir, else $CREDENTIALS_DIRECTORY), whose files the
// daemon's own credentials never are to a job.
adapters::SecretsDirectory JobSecrets(const GlobalOptions& global, const RepoOptions& repo,
                                      const PassWiring& wiring) {
  std::vector<std::string> own = {global.ray_token_file, repo.git_token_file, repo.git_ssh_key,
                                  wiring.webhook_secret_file};
  return adapters::SecretsDirectory(adapters::SecretsDirFromFlagOrEnv(global.secrets_dir),
                                    std::move(own));
}

}  // namespace

core::Result<PassRun> RunPassFromFlags(const GlobalOptions& global, const RepoOptions& repo,
                                       engine::ReconcileOptions options, bool artifacts) {
  core::Result<RepoHandles> handles = OpenRepo(repo);
  if (!handles.ok()) return handles.error();
  // A one-shot command's repository is freed by the process's exit, not object by object.
  const AtScopeEnd leave([&]() { LeaveRepoToExit(std::move(*handles)); });
  PassWiring wiring;
  wiring.artifacts = artifacts;
  // libgit2's caches of the packs a one-shot pass read go as soon as it has read from them:
  // after the specs, before the ledger (and Ray's list) are read on top of them; after the
  // ledger, before the records and the status commit.
  wiring.drop_git_caches = [&handles]() { DropGitCaches(*handles); };
  return RunPassOnRepo(global, repo, *handles->source, handles->store.get(), std::move(options),
                       wiring);
}

core::Result<PassRun> RunPassOnRepo(const GlobalOptions& global, const RepoOptions& repo,
                                    ports::DesiredStateSource& repo_source,
                                    ports::StatusStore* store, engine::ReconcileOptions options,
                                    const PassWiring& wiring) {
  std::unique_ptr<PrefetchedListServer> early = StartEarlyListing(global, repo, options, wiring);
  core::Result<ports::DesiredSnapshot> loaded = repo_source.Load(options.ref);
  if (!loaded.ok()) {
    return core::Error(loaded.error().kind(), "cannot read " + options.ref + " of " + repo.repo +
                                                  ": " + loaded.error().message());
  }
  PassRun run;
  ports::DesiredSnapshot& loaded_snapshot = *loaded;
  const auto& cluster = loaded_snapshot.state.cluster;
  core::Result<adapters::RayClientOptions> ray =
      ResolveRay(global, cluster ? cluster->address : std::string(), wiring.cluster_address);
  adapters::RayClientOptions ray_options;
  if (ray.ok()) {
    ray_options = std::move(*ray);
  } else if (cluster) {
    return ray.error();
  }  // else: the pass stops at the invalid cluster file before it would talk to Ray
  if (wiring.ray_call_attempts > 0) ray_options.max_attempts = wiring.ray_call_attempts;
  run.ray_address = core::StripUrlCredentials(ray_options.address);

  auto make_server = ServerFactory(ray_options, wiring.decorate);
  // The early listing is used when it went to the head the pass talks to.
  std::unique_ptr<ports::JobServer> server =
      early && early->address() == ray_options.address ? std::move(early) : make_server();
  std::unique_ptr<ports::ArtifactSink> sink;
  if (wiring.artifacts && !options.dry_run) {
    std::string why_none;
    sink = MakeArtifactSink(repo, loaded_snapshot, ray_options, &why_none);
    if (!sink) LogEvent("debug", "no submission artifacts", {{"reason", why_none}});
  }
  LoadedSnapshotSource source(std::move(loaded_snapshot), repo_source);
  CompleteOptions(repo, ray_options, options);
  // Named afresh for every pass, and read by it: an updated file needs no restart.
  adapters::SecretsDirectory secrets = JobSecrets(global, repo, wiring);
  engine::ReconcileDeps deps;
  if (!options.dry_run) deps.secrets = &secrets;
  deps.source = &source;
  deps.server = server.get();
  deps.server_factory = make_server;
  deps.store = store;
  deps.artifacts = sink.get();
  deps.after_reads = wiring.drop_git_caches;
  deps.after_load = wiring.drop_git_caches;
  deps.known_packages = wiring.known_packages;
  run.result = engine::RunReconcilePass(deps, options);
  run.make_server = make_server;
  // A pass that loaded again planned from a newer commit: show that one.
  run.snapshot = run.result.snapshot;
  AddLogSecrets(run.result.redactor);
  return run;
}

core::Result<std::optional<PassRun>> RunNarrowPassOnRepo(
    const GlobalOptions& global, const RepoOptions& repo, ports::DesiredStateSource& source,
    ports::StatusStore* store, engine::ReconcileOptions options, const PassWiring& wiring,
    const engine::PassIndex& index, std::string* why_not) {
  const std::optional<PassRun> none;
  const auto say = [why_not](std::string why) {
    if (why_not != nullptr) *why_not = std::move(why);
  };
  if (!index.valid() || !index.cluster || store == nullptr || options.dry_run) {
    say("no index of a full pass at rest, or a dry run");
    return none;
  }
  core::Result<adapters::RayClientOptions> ray =
      ResolveRay(global, index.cluster->address, wiring.cluster_address);
  if (!ray.ok()) {
    say("no Ray address");  // the full pass reports it
    return none;
  }
  if (wiring.ray_call_attempts > 0) ray->max_attempts = wiring.ray_call_attempts;
  auto make_server = ServerFactory(*ray, wiring.decorate);
  std::unique_ptr<ports::JobServer> server = make_server();
  std::unique_ptr<ports::ArtifactSink> sink;
  engine::NarrowArtifacts artifacts = [&](const ports::DesiredSnapshot& changed) {
    if (!wiring.artifacts) return static_cast<ports::ArtifactSink*>(nullptr);
    core::Redactor secrets = ProcessSecrets(*ray, &repo);
    secrets.Merge(index.redactor);
    secrets.AddDesiredState(changed.state);
    std::string why_none;
    sink = MakeArtifactWriter(repo.no_artifacts, repo.artifacts_root, &*index.cluster,
                              std::move(secrets), &why_none);
    return sink.get();
  };
  CompleteOptions(repo, *ray, options);
  adapters::SecretsDirectory secrets = JobSecrets(global, repo, wiring);
  engine::ReconcileDeps deps;
  deps.secrets = &secrets;  // a narrow pass is never a dry run
  deps.source = &source;
  deps.server = server.get();
  deps.server_factory = make_server;
  deps.store = store;
  deps.known_packages = wiring.known_packages;
  std::optional<engine::PassResult> result =
      engine::NarrowPass(index, deps, options, artifacts, why_not);
  if (!result) return none;
  PassRun run;
  run.result = std::move(*result);
  run.make_server = make_server;
  run.snapshot = run.result.snapshot;
  run.ray_address = core::StripUrlCredentials(ray->address);
  AddLogSecrets(run.result.redactor);
  return std::optional(std::move(run));
}

namespace {

// The lines for the pass's actions as a whole: how many and how long they took, and the code
// packages they built and uploaded.
void LogActionTotals(const engine::PassResult& result) {
  if (result.code.uploads > 0 || result.code.zips > 0) {
    LogEvent("info", "code uploaded",
             {{"packages", std::to_string(result.code.uploads)},
              {"zips", std::to_string(result.code.zips)},
              {"bytes", std::to_string(result.code.bytes)},
              {"zip_ms", std::to_string(result.code.zip_ms)},
              {"upload_ms", std::to_string(result.code.upload_ms)}});
  }
  if (result.outcomes.empty()) return;
  int submits = 0;
  int stops = 0;
  int failed = 0;
  for (const engine::ActionOutcome& o : result.outcomes) {
    if (!o.ok) {
      ++failed;
    } else if (o.action.kind == core::ActionKind::kStop) {
      ++stops;
    } else {
      ++submits;
    }
  }
  std::array<char, 32> ms{};
  std::snprintf(ms.data(), ms.size(), "%.1f", static_cast<double>(result.apply_us) / 1000.0);
  LogEvent("info", "actions done",
           {{"submits", std::to_string(submits)},
            {"stops", std::to_string(stops)},
            {"failed", std::to_string(failed)},
            {"ms", ms.data()}});
}

}  // namespace

void LogPass(const engine::PassResult& result) {
  for (const engine::TipMoved& moved : result.tip_moves) {
    LogEvent("info", "tip moved before stops; starting over on the new tip",
             {{"ref", moved.ref},
              {"from", moved.from},
              {"to", moved.to},
              {"changed", engine::ChangedPathsText(moved)}});
  }
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
  LogActionTotals(result);
  if (result.blocked) LogEvent("warn", "blocked", {{"reason", result.plan.blocked_reason}});
  // An action's error is in result.errors too, as "<name> (<submission id>): <message>", and
  // was logged with its action above. By set, not by a look through every outcome per error:
  // 50,000 submits refused are 50,000 of each.
  std::unordered_set<std::string> action_errors;
  for (const engine::ActionOutcome& o : result.outcomes) {
    if (o.error) {
      action_errors.insert(o.action.name + " (" + o.action.submission_id +
                           "): " + o.error->message());
    }
  }
  for (const core::Error& e : result.errors) {
    if (!action_errors.contains(e.message())) LogEvent("error", e.ToString());
  }
  for (const std::string& t : result.transitions) LogEvent("info", "status", {{"change", t}});
  if (!result.status_commit.empty()) {
    LogEvent("info", "status committed", {{"commit", result.status_commit}});
  }
  for (const std::string& id : result.driver_logs_kept) {
    LogEvent("info", "driver log kept", {{"submission_id", id}});
  }
  for (const std::string& id : result.deleted) {
    LogEvent("info", "deleted from Ray", {{"submission_id", id}, {"reason", "gc-finished-after"}});
  }
  for (const engine::Warning& w : result.warnings) {
    if (w.kind == engine::kWarnDriverLog || w.kind == engine::kWarnGcFinished) {
      LogEvent("warn", w.message);
    }
  }
}

void LogClockSkew(const engine::PassResult& result) {
  for (const engine::Warning& w : result.warnings) {
    if (w.kind == engine::kWarnClockSkew) LogEvent("warn", w.message);
  }
}

}  // namespace rg::cli
