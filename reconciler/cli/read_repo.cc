// OpenRepoForReading: a CI checkout read in place, its ledger from origin when reachable.

#include <memory>
#include <string>

#include "reconciler/cli/logging.h"
#include "reconciler/cli/repo_options.h"

namespace rg::cli {
namespace {

adapters::GitStatusStoreOptions StoreOptions(const RepoOptions& options,
                                             const adapters::GitWorkspace& workspace) {
  adapters::GitStatusStoreOptions st;
  st.branch = options.status_branch;
  st.markdown_header.repo_url = workspace.recorded_url();
  st.markdown_header.instance = options.instance;
  st.markdown_header.watched_branch = options.ref;
  return st;
}

// origin's status branch, fetched into the cache; null when the checkout has no origin or it
// cannot be reached (then the warning says why).
std::shared_ptr<adapters::GitWorkspace> FetchOriginLedger(const RepoOptions& options,
                                                          git_repository* checkout) {
  const std::string origin = adapters::OriginUrl(checkout);
  if (origin.empty()) return nullptr;
  adapters::GitWorkspaceOptions o;
  o.repo = origin;
  o.cache_dir = options.cache_dir;
  o.token_file = options.git_token_file;
  o.ssh_key_file = options.git_ssh_key;
  o.only_branch = options.status_branch;
  core::Result<std::shared_ptr<adapters::GitWorkspace>> remote = adapters::GitWorkspace::Open(o);
  core::Status fetched = remote.ok() ? (*remote)->Fetch() : core::Status(remote.error());
  if (fetched.ok()) return *remote;
  LogEvent("warn", "cannot fetch " + options.status_branch + " from origin (" +
                       fetched.error().message() + "); reading the checkout's own copy");
  return nullptr;
}

}  // namespace

core::Result<RepoHandles> OpenRepoForReading(const RepoOptions& options, std::string* ledger_from) {
  *ledger_from = options.status_branch;
  if (!adapters::IsLocalRepo(options.repo) || options.ref == options.status_branch ||
      options.ref == "refs/heads/" + options.status_branch) {
    return OpenRepo(options, /*read_only=*/true);
  }
  core::Result<std::shared_ptr<adapters::GitWorkspace>> opened =
      adapters::GitWorkspace::OpenInPlace(options.repo);
  if (!opened.ok()) return opened.error();
  RepoHandles h;
  h.workspace = *opened;
  h.parse_cache = OpenParseCache(options, *h.workspace);
  adapters::GitDesiredStateOptions src;
  src.cluster_file = options.cluster_file;
  src.jobs_dir = options.jobs_dir;
  src.parse_cache = h.parse_cache;
  src.lean_instance = options.instance;
  h.source = std::make_unique<adapters::GitDesiredStateSource>(h.workspace, src);
  adapters::GitStatusStoreOptions st = StoreOptions(options, *h.workspace);
  st.parse_cache = h.parse_cache;  // by blob id: origin's status files too
  st.read_only = true;
  // A bare repository is the remote itself: its own status branch is the ledger.
  if (std::shared_ptr<adapters::GitWorkspace> origin =
          h.workspace->workdir().empty() ? nullptr
                                         : FetchOriginLedger(options, h.workspace->repository())) {
    *ledger_from = options.status_branch + " fetched from origin (" + origin->url() + ")";
    h.store = std::make_unique<adapters::GitStatusStore>(origin, st);
    return h;
  }
  adapters::LocalLedgerRef local =
      adapters::ChooseLocalLedgerRef(h.workspace->repository(), options.status_branch);
  if (local.ref.empty()) {
    *ledger_from = "the checkout's " + options.status_branch + " and origin/" +
                   options.status_branch + ", origin itself not being reachable";
  } else {
    st.read_ref = local.ref;
    *ledger_from = local.note;
  }
  h.store = std::make_unique<adapters::GitStatusStore>(h.workspace, st);
  return h;
}

std::string NoLedgerNote(const adapters::GitStatusStore& store, const RepoOptions& options,
                         const std::string& ledger_from) {
  if (store.found_branch()) return "";
  return "no ledger: the status branch " + options.status_branch + " was not found (looked at " +
         (ledger_from == options.status_branch ? options.repo : ledger_from) +
         "), so every job is taken as never run before; if it exists, fetch it (git fetch "
         "origin " +
         options.status_branch + ") or check --status-branch and --instance";
}

}  // namespace rg::cli
