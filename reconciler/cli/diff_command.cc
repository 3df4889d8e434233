// `ray-gitops diff BASE [HEAD]`: what merging HEAD over BASE would do to runs, offline (no Ray,
// no ledger): per job submit, replace, stop if active or unchanged, with field and rendered
// diffs, and the jobs a cluster.yaml change reaches. HEAD defaults to the working tree of a
// local checkout, uncommitted files included. Exit 0 no effect on runs, 2 runs would change,
// 1 error.

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reconciler/adapters/code_folders.h"
#include "reconciler/adapters/code_package.h"
#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/schedule_zones.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/cli/logging.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/state_diff.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::cli {
namespace {

constexpr int kDiffNoEffect = 0;
constexpr int kDiffError = 1;
constexpr int kDiffRunsChange = 2;

struct DiffFlags {
  RepoOptions repo;
  std::string base;
  std::string head;  // empty: the working tree
  std::string format = "text";
};

struct Side {
  core::DesiredState state;
  std::string label;
};

// A local checkout is read where it is (its own revisions, its working tree); a URL through the
// clone under --cache-dir.
core::Result<std::shared_ptr<adapters::GitWorkspace>> OpenWorkspace(const RepoOptions& repo) {
  if (adapters::IsLocalRepo(repo.repo)) return adapters::GitWorkspace::OpenInPlace(repo.repo);
  adapters::GitWorkspaceOptions options;
  options.repo = repo.repo;
  options.cache_dir = repo.cache_dir;
  options.token_file = repo.git_token_file;
  options.ssh_key_file = repo.git_ssh_key;
  return adapters::GitWorkspace::Open(options);
}

void BindToInstance(core::DesiredState& state, std::string_view instance) {
  core::BindDesiredState(state, instance);
}

core::Result<Side> LoadCommit(adapters::GitDesiredStateSource& source, const std::string& ref) {
  core::Result<ports::DesiredSnapshot> snapshot = source.Load(ref);
  if (!snapshot.ok()) {
    return core::Error(snapshot.error().kind(),
                       "cannot read " + ref + ": " + snapshot.error().message());
  }
  return Side{std::move(snapshot->state), ref + " (" + snapshot->commit.substr(0, 10) + ")"};
}

core::Result<Side> LoadHead(const DiffFlags& flags, const adapters::GitWorkspace& workspace,
                            adapters::GitDesiredStateSource& source) {
  if (!flags.head.empty()) return LoadCommit(source, flags.head);
  if (workspace.workdir().empty()) {
    return core::Error::InvalidInput("give HEAD: " + flags.repo.repo +
                                     " is not a local checkout, so it has no working tree");
  }
  core::DesiredState state = spec::LoadDesiredStateFromDirectory(
      workspace.workdir(), flags.repo.cluster_file, flags.repo.jobs_dir);
  adapters::ZoneCache zones;
  adapters::ResolveScheduleZones(state, zones);
  adapters::ResolveCodeOnDisk(state, workspace.workdir());
  return Side{std::move(state), "working tree"};
}

// The files of a code change: between two commits' trees from the object database; for a
// folder of the working tree (its tree not committed yet, when `head` was read from the working
// tree), by comparing the base's tree with the files on disk.
core::CodeChangeLister CodeChanges(adapters::GitDesiredStateSource& source,
                                   const adapters::GitWorkspace& workspace,
                                   const core::DesiredState& head, bool head_is_working_tree) {
  std::map<std::string, std::string> on_disk;  // tree id -> folder, for the working tree's specs
  if (head_is_working_tree) {
    for (const core::JobSpec& job : head.jobs) {
      if (job.has_code() && !job.code().ref && !job.code().tree_id.empty()) {
        on_disk.emplace(job.code().tree_id, job.code().folder);
      }
    }
  }
  return [&source, &workspace, on_disk = std::move(on_disk)](const std::string& from,
                                                             const std::string& to) {
    core::Result<std::vector<std::string>> files = source.CodeChanges(from, to);
    if (files.ok()) return std::move(*files);
    auto folder = on_disk.find(to);
    if (folder == on_disk.end()) return std::vector<std::string>();
    files = adapters::CodeChangesOnDisk(workspace.repository(), from, workspace.workdir(),
                                        folder->second);
    return files.ok() ? std::move(*files) : std::vector<std::string>();
  };
}

std::string Format(const core::StateDiff& diff, const std::string& format) {
  if (format == "json") return core::FormatDiffJson(diff);
  if (format == "markdown") return core::FormatDiffMarkdown(diff);
  return core::FormatDiffText(diff);
}

int RunDiff(const GlobalOptions& global, const DiffFlags& flags) {
  ConfigureLogging(global);
  core::Result<std::shared_ptr<adapters::GitWorkspace>> workspace = OpenWorkspace(flags.repo);
  if (!workspace.ok()) return Fail(workspace.error().ToString());
  // Held as RepoHandles so that the parse cache is saved however the command ends.
  RepoHandles handles;
  handles.workspace = *workspace;
  handles.parse_cache = OpenParseCache(flags.repo, **workspace);
  adapters::GitDesiredStateOptions options;
  options.cluster_file = flags.repo.cluster_file;
  options.jobs_dir = flags.repo.jobs_dir;
  options.parse_cache = handles.parse_cache;
  handles.source = std::make_unique<adapters::GitDesiredStateSource>(*workspace, options);
  adapters::GitDesiredStateSource& source = *handles.source;
  core::Result<Side> base = LoadCommit(source, flags.base);
  if (!base.ok()) return Fail(base.error().ToString());
  core::Result<Side> head = LoadHead(flags, **workspace, source);
  if (!head.ok()) return Fail(head.error().ToString());
  BindToInstance(base->state, flags.repo.instance);
  BindToInstance(head->state, flags.repo.instance);

  core::StateDiff diff =
      core::DiffStates(base->state, head->state, flags.repo.instance,
                       CodeChanges(source, **workspace, head->state, flags.head.empty()));
  diff.base_label = base->label;
  diff.head_label = head->label;
  // Both sides' secret-named env values: a secret removed at HEAD is still one at BASE.
  core::Redactor secrets;
  secrets.AddDesiredState(base->state);
  secrets.AddDesiredState(head->state);
  AddLogSecrets(secrets);
  std::cout << secrets.Apply(Format(diff, flags.format));
  if (diff.HasErrors()) return kDiffError;
  return diff.RunsChange() ? kDiffRunsChange : kDiffNoEffect;
}

}  // namespace

void AddDiffCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto flags = std::make_shared<DiffFlags>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "offline review of a change, no Ray needed: what merging HEAD (default: the working tree) "
      "over BASE does to runs (exit 0 no effect on runs, 2 runs would change, 1 error)");
  cmd->add_option("base", flags->base,
                  "the commit the change is merged into (a branch, tag, "
                  "commit or revision such as origin/main or HEAD~1)")
      ->required();
  cmd->add_option("head", flags->head,
                  "the change (default: the working tree of a local checkout, uncommitted files "
                  "included)");
  AddRepoOptions(cmd, &flags->repo, /*with_ref=*/false, /*with_artifacts=*/false);
  cmd->add_option("-o,--format", flags->format, "text, markdown or json")
      ->check(CLI::IsMember({"text", "markdown", "json"}));
  cmd->callback([&global, flags, exit_code]() {
    PrepareGitSsh(global, &flags->repo);
    *exit_code = RunDiff(global, *flags);
  });
}

}  // namespace rg::cli
