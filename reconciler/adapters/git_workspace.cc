#include "reconciler/adapters/git_workspace.h"

#include <sys/stat.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>

#include "reconciler/adapters/git_common.h"
#include "reconciler/adapters/git_pack_writer.h"
#include "reconciler/adapters/git_transport.h"
#include "reconciler/adapters/ssh_host_keys.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/render.h"

namespace rg::adapters {
namespace {

namespace fs = std::filesystem;

constexpr const char* kOutgoingRef = "refs/ray-gitops/outgoing";
// libgit2 asks again after refused credentials; give up instead of looping.
constexpr int kMaxCredentialCalls = 3;

bool IsScpLike(std::string_view repo) {
  // git@host:path: a colon before any slash, and not a path that merely holds a colon.
  const size_t colon = repo.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  const size_t slash = repo.find('/');
  return (slash == std::string_view::npos || colon < slash) && repo.front() != '.' &&
         repo.front() != '/';
}

bool HasScheme(std::string_view repo) { return repo.find("://") != std::string_view::npos; }

// The directory of a local repository named by a plain path or a file:// URL.
std::optional<std::string> LocalPath(std::string_view repo) {
  if (repo.starts_with("file://")) return std::string(repo.substr(7));
  if (HasScheme(repo) || IsScpLike(repo)) return std::nullopt;
  return std::string(repo);
}

std::string ReadTrimmedFile(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  ok = static_cast<bool>(in) || in.eof();
  std::string text = buffer.str();
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.pop_back();
  }
  size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start])) != 0) {
    ++start;
  }
  return text.substr(start);
}

// A push into a local repository (a path or file:// URL) updates the remote's refs in this
// process. A push killed between taking the branch's lock and renaming it over the ref leaves
// <gitdir>/refs/heads/<branch>.lock behind, and every later push of that branch fails with
// GIT_ELOCKED. A live writer holds the lock for a moment; a lock that stays the same file
// (same inode, size and change time) for kStaleLockAfter was left by a writer that died, and
// is removed. Only the branch being pushed, which only ray-gitops writes. Returns the lock's
// path when it was removed; empty when there was none, it went away (a live writer), or the
// remote is not local.
constexpr auto kStaleLockAfter = std::chrono::milliseconds(1500);

std::string RemoveStaleRefLock(const std::string& remote_url, const std::string& branch) {
  const std::optional<std::string> local = LocalPath(remote_url);
  if (!local) return "";
  git_repository* raw = nullptr;
  if (git_repository_open_ext(&raw, local->c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) != 0) {
    git_error_clear();
    return "";
  }
  git::Repository remote(raw);
  const fs::path lock =
      fs::path(git_repository_path(remote.get())) / "refs" / "heads" / (branch + ".lock");
  struct stat first {};
  if (::stat(lock.c_str(), &first) != 0) return "";
  const auto give_up = std::chrono::steady_clock::now() + kStaleLockAfter;
  while (std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    struct stat now {};
    if (::stat(lock.c_str(), &now) != 0 || now.st_ino != first.st_ino ||
        now.st_size != first.st_size || now.st_ctim.tv_sec != first.st_ctim.tv_sec ||
        now.st_ctim.tv_nsec != first.st_ctim.tv_nsec) {
      return "";  // a live writer took or released it
    }
  }
  std::error_code ec;
  return fs::remove(lock, ec) ? lock.string() : "";
}

// Why the local repository at `local` (named `shown` on the command line) did not open.
core::Error NotARepository(int rc, const std::string& shown, const std::string& local) {
  if (std::optional<std::string> foreign = git::ForeignOwnerProblem(rc, local)) {
    return core::Error::InvalidInput(*foreign);
  }
  return core::Error::InvalidInput("not a Git repository: " + shown + " (" +
                                   git::LastError(rc, "open").message() + ")");
}

struct CallbackState {
  const GitWorkspaceOptions* options = nullptr;
  int credential_calls = 0;
  std::string rejection;    // set by the push status callback
  uint64_t generation = 0;  // GitCancelGeneration() when the transfer began
  bool cancelled = false;
  SshHostKeyCheck* ssh = nullptr;  // the transfer's host key check
};

// Progress callbacks: a non-zero answer makes libgit2 abandon the transfer. This is how a
// local transfer (no socket to shut down) learns of CancelGitTransfers.
bool Cancelled(void* payload) {
  auto* state = static_cast<CallbackState*>(payload);
  if (GitCancelGeneration() != state->generation) state->cancelled = true;
  return state->cancelled;
}
int StopIfCancelled(const git_indexer_progress* /*stats*/, void* payload) {
  return Cancelled(payload) ? GIT_EUSER : 0;
}
int StopIfCancelledOnMessage(const char* /*text*/, int /*len*/, void* payload) {
  return Cancelled(payload) ? GIT_EUSER : 0;
}
int StopPushIfCancelled(unsigned int /*current*/, unsigned int /*total*/, size_t /*bytes*/,
                        void* payload) {
  return Cancelled(payload) ? GIT_EUSER : 0;
}

int AcquireCredentials(git_credential** out, const char* /*url*/, const char* username_from_url,
                       unsigned int allowed, void* payload) {
  auto* state = static_cast<CallbackState*>(payload);
  const GitWorkspaceOptions& options = *state->options;
  if (Cancelled(payload)) return GIT_EUSER;
  if (++state->credential_calls > kMaxCredentialCalls) {
    git_error_set_str(GIT_ERROR_NET, "the remote refused the credentials");
    return GIT_EAUTH;
  }
  const bool has_user = username_from_url != nullptr && *username_from_url != '\0';
  if ((allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT) != 0) {
    if (options.token_file.empty()) {
      git_error_set_str(GIT_ERROR_NET,
                        "the remote asks for credentials; pass a token with --git-token-file");
      return GIT_EAUTH;
    }
    bool ok = false;
    const std::string token = ReadTrimmedFile(options.token_file, ok);
    if (!ok || token.empty()) {
      git_error_set_str(GIT_ERROR_NET, ("cannot read a token from " + options.token_file).c_str());
      return GIT_EAUTH;
    }
    const std::string user = options.token_user.empty() ? "x-access-token" : options.token_user;
    return git_credential_userpass_plaintext_new(out, user.c_str(), token.c_str());
  }
  const char* user = has_user ? username_from_url : "git";
  if ((allowed & GIT_CREDENTIAL_SSH_KEY) != 0) {
    if (options.ssh_key_file.empty()) return git_credential_ssh_key_from_agent(out, user);
    const std::string public_key = options.ssh_key_file + ".pub";
    std::error_code ec;
    return git_credential_ssh_key_new(out, user,
                                      fs::exists(public_key, ec) ? public_key.c_str() : nullptr,
                                      options.ssh_key_file.c_str(), nullptr);
  }
  if ((allowed & GIT_CREDENTIAL_USERNAME) != 0) return git_credential_username_new(out, user);
  return GIT_PASSTHROUGH;
}

// Every certificate of a transfer: SSH host keys are checked against the known_hosts file
// (ssh_host_keys.h), TLS certificates go on to libgit2's own check.
int CheckCertificate(git_cert* cert, int /*valid*/, const char* /*host*/, void* payload) {
  auto* state = static_cast<CallbackState*>(payload);
  if (state->ssh == nullptr) return GIT_PASSTHROUGH;
  return state->ssh->OnCertificate(cert);
}

// After a transfer that failed with `error`: the SSH host key refusal, or the explanation of an
// SSH handshake that failed before the key was checked (ssh_host_keys.h), prefixed as `error`
// is; nullopt when the failure is another one. *retry: see SshHostKeyCheck::ExplainFailure.
std::optional<core::Error> SshRefusal(SshHostKeyCheck& ssh, const core::Error& error,
                                      const std::string& what, bool* retry) {
  *retry = false;
  if (ssh.refusal()) return core::Error::Unauthorized(what + ": " + ssh.refusal()->message());
  if (std::optional<core::Error> explained = ssh.ExplainFailure(error.message(), retry)) {
    return core::Error::Unauthorized(what + ": " + explained->message());
  }
  return std::nullopt;
}

// The error of a transfer (a fetch, an ls-remote) that failed with `rc`: cancelled and
// unreachable are kTransient, refused credentials and host keys kUnauthorized. nullopt when
// `may_retry` and the SSH handshake is worth one more attempt (SshHostKeyCheck::ExplainFailure).
std::optional<core::Error> TransferFailure(int rc, const std::string& what,
                                           const CallbackState& state, SshHostKeyCheck& ssh,
                                           bool may_retry) {
  core::Error e = git::LastError(rc, what);
  if (state.cancelled) return core::Error::Transient(what + ": cancelled");
  bool retry = false;
  if (std::optional<core::Error> refused = SshRefusal(ssh, e, what, &retry)) return *refused;
  if (retry && may_retry) return std::nullopt;
  if (e.IsUnauthorized()) return e;
  return core::Error::Transient(e.message());
}

int RecordPushStatus(const char* refname, const char* status, void* payload) {
  if (status != nullptr) {
    auto* state = static_cast<CallbackState*>(payload);
    state->rejection = std::string(refname) + ": " + status;
  }
  return 0;
}

struct InsteadOfMatch {
  const std::string* url = nullptr;
  std::string base;   // the <base> of the longest matching url.<base>.insteadOf
  size_t prefix = 0;  // the length of the value it matched with
  bool found = false;
};

int MatchInsteadOf(const git_config_entry* entry, void* payload) {
  constexpr std::string_view kSection = "url.";
  constexpr std::string_view kKey = ".insteadof";  // libgit2 lowercases section and key names
  auto* match = static_cast<InsteadOfMatch*>(payload);
  const std::string_view name = entry->name;
  const std::string_view value = entry->value != nullptr ? entry->value : "";
  if (!name.starts_with(kSection) || !name.ends_with(kKey) ||
      name.size() <= kSection.size() + kKey.size() || value.empty() ||
      !match->url->starts_with(value) || (match->found && value.size() <= match->prefix)) {
    return 0;
  }
  match->base = name.substr(kSection.size(), name.size() - kSection.size() - kKey.size());
  match->prefix = value.size();
  match->found = true;
  return 0;
}

// The URL after the url.<base>.insteadOf rules of the repository's configuration (its own, the
// user's and the system's): the longest matching value wins, as in git. libgit2 applies these
// rules itself when it makes a remote, but by walking the configuration with a regular
// expression, and libgit2 1.5 leaks the pcre2 match data of every entry that does not match
// (about 20 KB each, on every git_remote_lookup and git_remote_create). A plain walk of the
// entries does not.
std::string ApplyInsteadOf(git_repository* repo, const std::string& url) {
  git_config* raw = nullptr;
  if (git_repository_config_snapshot(&raw, repo) != 0) {
    git_error_clear();
    return url;
  }
  InsteadOfMatch match;
  match.url = &url;
  if (git_config_foreach(raw, MatchInsteadOf, &match) != 0) git_error_clear();
  git_config_free(raw);
  return match.found ? match.base + url.substr(match.prefix) : url;
}

// Every downloading fetch adds a pack to the clone and every status commit adds loose objects;
// libgit2 keeps each pack's index mapped and its bookkeeping in memory for the repository's
// lifetime, so a daemon's memory would grow with every change it ever saw. Past this many
// packs the clone is compacted into one (see Compact).
constexpr int kMaxPacks = 16;

int CountPacks(const std::string& clone_path) {
  std::error_code ec;
  int packs = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(clone_path) / "objects" / "pack", ec)) {
    if (entry.path().extension() == ".pack") ++packs;
  }
  return packs;
}

struct PackInputs {
  git_packbuilder* pack = nullptr;
  git_revwalk* walk = nullptr;
  int error = 0;
};

// Commits go to the walk (their history comes along); annotated tags and other objects are
// inserted with everything they reach.
int AddRefToPack(git_reference* ref, void* payload) {
  auto* in = static_cast<PackInputs*>(payload);
  git::Reference owned(ref);
  git_reference* resolved_raw = nullptr;
  if (git_reference_resolve(&resolved_raw, ref) != 0) {
    git_error_clear();
    return 0;  // a symbolic ref to nothing (an unborn HEAD branch)
  }
  git::Reference resolved(resolved_raw);
  const git_oid* target = git_reference_target(resolved.get());
  git_object* raw = nullptr;
  if (target == nullptr ||
      git_object_lookup(&raw, git_reference_owner(ref), target, GIT_OBJECT_ANY) != 0) {
    in->error = -1;
    return -1;
  }
  git::Object object(raw);
  in->error = git_object_type(object.get()) == GIT_OBJECT_COMMIT
                  ? git_revwalk_push(in->walk, target)
                  : git_packbuilder_insert_recur(in->pack, target, nullptr);
  return in->error;
}

// Removes every pack but `keep` and every loose object: all of them are in the new pack, or
// reachable from no ref.
void RemoveOldObjects(const fs::path& objects, const std::string& keep) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(objects / "pack", ec)) {
    const std::string name = entry.path().filename().string();
    // A pack file being written by a process that died (git::PackWriter) goes too; one being
    // written now is read by its writer through its open descriptor, so nothing is lost.
    if ((name.starts_with("pack-") && name.find(keep) == std::string::npos) ||
        name.starts_with(git::kPackTempPrefix)) {
      fs::remove(entry.path(), ec);
    }
  }
  for (const auto& entry : fs::directory_iterator(objects, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == 2 && std::isxdigit(static_cast<unsigned char>(name[0])) != 0 &&
        std::isxdigit(static_cast<unsigned char>(name[1])) != 0) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

}  // namespace

std::string DefaultGitCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return (fs::path(xdg) / "ray-gitops").string();
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return (fs::path(home) / ".cache" / "ray-gitops").string();
  }
  return ".ray-gitops-cache";
}

std::string NormaliseRepoUrl(std::string_view repo) {
  if (!repo.starts_with("file://") && LocalPath(repo)) {
    std::error_code ec;
    fs::path absolute = fs::absolute(fs::path(std::string(repo)), ec);
    if (!ec) {
      std::string out = absolute.lexically_normal().string();
      while (out.size() > 1 && out.back() == '/') out.pop_back();
      return out;
    }
  }
  return core::StripUrlCredentials(repo);
}

// The checkout's remote.origin.url as written, read from its configuration and not through
// git_remote_lookup, which leaks in libgit2 1.5 (see ApplyInsteadOf). No insteadOf rule is
// applied: a daemon records the URL it was given, not the one it fetches from.
std::string OriginUrl(git_repository* repo) {
  git_config* raw = nullptr;
  if (git_repository_config_snapshot(&raw, repo) != 0) {
    git_error_clear();
    return "";
  }
  std::unique_ptr<git_config, decltype(&git_config_free)> config(raw, git_config_free);
  const char* url = nullptr;
  if (git_config_get_string(&url, config.get(), "remote.origin.url") != 0) {
    git_error_clear();
    return "";
  }
  if (url == nullptr || *url == '\0') return "";
  std::string origin = url;
  if (auto path = LocalPath(origin); path && !fs::path(*path).is_absolute()) {
    // Relative to the checkout, as git reads it from there.
    const char* base = git_repository_workdir(repo);
    if (base == nullptr) base = git_repository_path(repo);
    origin = (fs::path(base) / *path).lexically_normal().string();
  }
  return NormaliseRepoUrl(origin);
}

std::string GitCacheDirName(std::string_view remote_url) {
  const std::string url = core::StripUrlCredentials(remote_url);
  std::string_view stem = url;
  while (!stem.empty() && (stem.back() == '/')) stem.remove_suffix(1);
  if (stem.ends_with(".git")) stem.remove_suffix(4);
  const size_t cut = stem.find_last_of("/:");
  if (cut != std::string_view::npos) stem.remove_prefix(cut + 1);
  std::string name;
  for (char c : stem) {
    const bool plain =
        std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
    name += plain ? c : '_';
    if (name.size() >= 40) break;
  }
  if (name.empty() || name.front() == '.') name.insert(0, "repo");
  return name + "-" + core::Sha256Hex(url).substr(0, 16) + ".git";
}

std::string GitWorkspace::TrackingRef(std::string_view branch) {
  if (branch.starts_with("refs/heads/")) branch.remove_prefix(11);
  return "refs/heads/" + std::string(branch);
}

core::Result<std::shared_ptr<GitWorkspace>> GitWorkspace::Open(const GitWorkspaceOptions& options) {
  git::EnsureLibraryInitialised();
  if (options.repo.empty()) return core::Error::InvalidInput("no repository given");
  const std::string url = NormaliseRepoUrl(options.repo);

  std::string origin;
  if (auto local = LocalPath(url)) {
    git_repository* probe = nullptr;
    const int rc =
        git_repository_open_ext(&probe, local->c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr);
    git::Repository owned_probe(probe);
    if (rc != 0) return NotARepository(rc, options.repo, *local);
    // Only a checkout: a bare copy with an origin is a mirror or a moved repository, a
    // repository of its own that adopts the old one's runs with --previous-repo.
    if (git_repository_is_bare(probe) == 0) origin = OriginUrl(probe);
  }

  std::shared_ptr<GitWorkspace> ws(new GitWorkspace());
  ws->options_ = options;
  ws->url_ = url;
  // A checkout with an origin is that repository (docs/operations.md): `plan --repo .` in a CI
  // clone and the daemon watching the remote agree on whose runs are whose.
  ws->recorded_url_ = origin.empty() ? url : origin;
  if (!origin.empty()) ws->aliases_.push_back(url);
  const std::string cache = options.cache_dir.empty() ? DefaultGitCacheDir() : options.cache_dir;
  ws->clone_path_ = (fs::path(cache) / GitCacheDirName(url)).string();

  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) {
    return core::Error::InvalidInput("cannot create the cache directory " + cache + ": " +
                                     ec.message());
  }
  if (core::Status opened = ws->OpenClone(); !opened) return opened.error();
  return ws;
}

bool IsLocalRepo(std::string_view repo) { return LocalPath(repo).has_value(); }

core::Result<std::shared_ptr<GitWorkspace>> GitWorkspace::OpenInPlace(const std::string& path) {
  git::EnsureLibraryInitialised();
  const std::string url = NormaliseRepoUrl(path);
  const std::optional<std::string> local = LocalPath(url);
  if (!local) return core::Error::InvalidInput("not a local repository: " + path);
  git_repository* raw = nullptr;
  const int rc =
      git_repository_open_ext(&raw, local->c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr);
  if (rc != 0) return NotARepository(rc, path, *local);
  std::shared_ptr<GitWorkspace> ws(new GitWorkspace());
  ws->repo_ = raw;
  ws->in_place_ = true;
  ws->url_ = url;
  ws->clone_path_ = *local;
  const std::string origin = git_repository_is_bare(raw) == 0 ? OriginUrl(raw) : "";
  ws->recorded_url_ = origin.empty() ? url : origin;
  if (!origin.empty()) ws->aliases_.push_back(url);
  if (const char* workdir = git_repository_workdir(raw); workdir != nullptr) ws->workdir_ = workdir;
  git_reference* head = nullptr;
  if (git_reference_lookup(&head, raw, "HEAD") == 0) {
    if (const char* target = git_reference_symbolic_target(head); target != nullptr) {
      ws->remote_head_ = target;
    }
    git_reference_free(head);
  }
  git_error_clear();
  return ws;
}

bool GitWorkspace::CloneIntact() const {
  std::error_code ec;
  return fs::is_regular_file(fs::path(clone_path_) / "HEAD", ec) &&
         fs::is_directory(fs::path(clone_path_) / "objects", ec) &&
         fs::is_directory(fs::path(clone_path_) / "refs", ec);
}

core::Status GitWorkspace::OpenClone() {
  git_remote_free(std::exchange(remote_, nullptr));
  git_repository_free(std::exchange(repo_, nullptr));
  blobs_read_ = 0;
  std::error_code ec;
  fs::create_directories(fs::path(clone_path_).parent_path(), ec);
  int rc = git_repository_open_bare(&repo_, clone_path_.c_str());
  if (rc != 0) {
    if (std::optional<std::string> foreign = git::ForeignOwnerProblem(rc, clone_path_)) {
      return core::Error::InvalidInput("the clone in the cache: " + *foreign);
    }
    rc = git_repository_init(&repo_, clone_path_.c_str(), /*is_bare=*/1);
    if (rc != 0) return git::LastError(rc, "cannot create the clone at " + clone_path_);
  }
  // An in-memory remote, kept for the workspace's lifetime: nothing is written to the clone's
  // configuration, and Fetch names its refspec itself. It skips libgit2's own insteadOf
  // handling (see ApplyInsteadOf for why); the rules are applied to the URL instead.
  remote_url_ = ApplyInsteadOf(repo_, url_);
  git_remote_create_options remote_options{};
  git_remote_create_options_init(&remote_options, GIT_REMOTE_CREATE_OPTIONS_VERSION);
  remote_options.repository = repo_;
  remote_options.flags =
      GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
  rc = git_remote_create_with_opts(&remote_, remote_url_.c_str(), &remote_options);
  if (rc != 0) return git::LastError(rc, "cannot configure the clone's remote");
  return core::OkStatus();
}

core::Status GitWorkspace::DropCaches() {
  if (in_place_ || repo_ == nullptr) return core::OkStatus();
  return OpenClone();
}

core::Result<bool> GitWorkspace::NoteBlobRead() {
  if (in_place_ || repo_ == nullptr || ++blobs_read_ < options_.blobs_per_cache_drop) {
    return false;
  }
  ++cache_drops_;
  // A reopen that fails leaves no clone open; the next Fetch opens it again (Fetch).
  if (core::Status reopened = DropCaches(); !reopened) {
    return core::Error(reopened.error().kind(),
                       "cannot reopen the clone at " + clone_path_ +
                           " among its reads: " + reopened.error().message());
  }
  return true;
}

GitWorkspace::~GitWorkspace() {
  git_remote_free(remote_);
  git_repository_free(repo_);
}

core::Status GitWorkspace::Compact() {
  git_packbuilder* raw_pack = nullptr;
  git_revwalk* raw_walk = nullptr;
  if (git_packbuilder_new(&raw_pack, repo_) != 0) return git::LastError(-1, "cannot repack");
  std::unique_ptr<git_packbuilder, void (*)(git_packbuilder*)> pack(raw_pack, git_packbuilder_free);
  if (git_revwalk_new(&raw_walk, repo_) != 0) return git::LastError(-1, "cannot repack");
  git::RevWalk walk(raw_walk);
  git_packbuilder_set_threads(pack.get(), 1);
  PackInputs in{pack.get(), walk.get(), 0};
  int rc = git_reference_foreach(repo_, AddRefToPack, &in);
  if (rc == 0) rc = git_packbuilder_insert_walk(pack.get(), walk.get());
  const fs::path objects = fs::path(clone_path_) / "objects";
  if (rc == 0) {
    rc = git_packbuilder_write(pack.get(), (objects / "pack").c_str(), 0, nullptr, nullptr);
  }
  if (rc != 0) return git::LastError(rc, "cannot repack the clone at " + clone_path_);
  const std::string keep = git_packbuilder_name(pack.get());
  pack.reset();
  walk.reset();
  RemoveOldObjects(objects, keep);
  ++compactions_;
  return OpenClone();  // drops the old packs' mappings and every cached object
}

namespace {

// Adds the time from its construction to its destruction to a counter.
class NetworkTimer {
 public:
  explicit NetworkTimer(std::atomic<int64_t>& total)
      : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~NetworkTimer() {
    total_ += std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - start_)
                  .count();
  }
  NetworkTimer(const NetworkTimer&) = delete;
  NetworkTimer& operator=(const NetworkTimer&) = delete;

 private:
  std::atomic<int64_t>& total_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

namespace {

// A mirror: the remote's refs under the same names. libgit2 1.5's local transport (a path or
// file://) looks up every remote ref name in the clone with git_revparse_single to hide what
// the clone already has; a name the clone lacks goes on to the `git describe` pattern, whose
// match data leaks when the name holds "-g" (refs/heads/ray-gitops/status does). With the same
// names in the clone every lookup succeeds, nothing leaks, and a fetch sends only new objects
// instead of the whole history. Remote repositories get their branches only (not refs/pull/*
// and the like; `only_branch` alone when given); their transports negotiate without that
// lookup.
std::string MirrorRefspec(const std::string& url, const std::string& only_branch) {
  if (LocalPath(url).has_value()) return "+refs/*:refs/*";
  if (only_branch.empty()) return "+refs/heads/*:refs/heads/*";
  const std::string ref = GitWorkspace::TrackingRef(only_branch);
  return "+" + ref + ":" + ref;
}

}  // namespace

core::Status GitWorkspace::Fetch() {
  const NetworkTimer timer(network_us_);
  if (in_place_) {  // read where it is: nothing to bring up to date
    ++fetches_;
    return core::OkStatus();
  }
  // A cache directory deleted under a running daemon, or a reopen that failed (Compact,
  // DropCaches): open (or clone) again rather than fail forever.
  if (!CloneIntact() || repo_ == nullptr) {
    if (core::Status reopened = OpenClone(); !reopened) {
      return core::Error::Transient(reopened.error().message());
    }
  } else if (CountPacks(clone_path_) > kMaxPacks) {
    // A failed compaction leaves the clone as it was (old objects go only after the new pack
    // is written): fetch anyway.
    if (core::Status compacted = Compact(); !compacted && repo_ == nullptr) {
      return core::Error::Transient(compacted.error().message());
    }
  }
  git_fetch_options opts{};
  git_fetch_options_init(&opts, GIT_FETCH_OPTIONS_VERSION);
  opts.prune = GIT_FETCH_PRUNE;
  opts.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_ALL;
  opts.callbacks.credentials = AcquireCredentials;
  opts.callbacks.certificate_check = CheckCertificate;
  opts.callbacks.transfer_progress = StopIfCancelled;
  opts.callbacks.sideband_progress = StopIfCancelledOnMessage;
  std::string spec = MirrorRefspec(url_, options_.only_branch);
  std::array<char*, 1> specs = {const_cast<char*>(spec.c_str())};
  const git_strarray refspecs{specs.data(), specs.size()};
  SshHostKeyCheck ssh(remote_url_);
  // A second attempt only when the first one's SSH handshake asked for a key type the server
  // lacks while the file holds another key of the server's (SshHostKeyCheck::ExplainFailure).
  for (int attempt = 0;; ++attempt) {
    ssh.Prepare();
    CallbackState state{&options_, 0, {}, GitCancelGeneration(), false, &ssh};
    opts.callbacks.payload = &state;
    const int rc = git_remote_fetch(remote_, &refspecs, &opts, "ray-gitops fetch");
    if (rc == 0) break;
    if (std::optional<core::Error> failed =
            TransferFailure(rc, "cannot fetch " + url_, state, ssh, attempt == 0)) {
      return *failed;
    }
  }
  ++fetches_;
  git_buf head = GIT_BUF_INIT;
  if (git_remote_default_branch(&head, remote_) == 0) {
    remote_head_.assign(head.ptr, head.size);
  } else {
    git_error_clear();
    remote_head_.clear();
  }
  git_buf_dispose(&head);
  return core::OkStatus();
}

core::Result<std::map<std::string, std::string>> GitWorkspace::RemoteRefs(
    const std::set<std::string, std::less<>>& names) {
  if (in_place_) return core::Error::InvalidInput("a repository read in place has no remote");
  const NetworkTimer timer(network_us_);
  if (!CloneIntact() || repo_ == nullptr) {
    if (core::Status reopened = OpenClone(); !reopened) {
      return core::Error::Transient(reopened.error().message());
    }
  }
  git_remote_callbacks callbacks{};
  git_remote_init_callbacks(&callbacks, GIT_REMOTE_CALLBACKS_VERSION);
  callbacks.credentials = AcquireCredentials;
  callbacks.certificate_check = CheckCertificate;
  callbacks.sideband_progress = StopIfCancelledOnMessage;
  git_proxy_options proxy{};
  git_proxy_options_init(&proxy, GIT_PROXY_OPTIONS_VERSION);  // as a fetch: no proxy
  const std::string what = "cannot list the refs of " + url_;
  SshHostKeyCheck ssh(remote_url_);
  for (int attempt = 0;; ++attempt) {
    ssh.Prepare();
    CallbackState state{&options_, 0, {}, GitCancelGeneration(), false, &ssh};
    callbacks.payload = &state;
    std::map<std::string, std::string> found;
    int rc = Cancelled(&state)
                 ? GIT_EUSER
                 : git_remote_connect(remote_, GIT_DIRECTION_FETCH, &callbacks, &proxy, nullptr);
    if (rc == 0) {
      const git_remote_head** heads = nullptr;
      size_t count = 0;
      rc = git_remote_ls(&heads, &count, remote_);
      // The list belongs to the connection: copied before it is closed.
      for (size_t i = 0; rc == 0 && i < count; ++i) {
        if (names.contains(heads[i]->name)) found[heads[i]->name] = git::OidHex(heads[i]->oid);
      }
    }
    // Closed whatever happened: the callbacks' state lives on this stack frame only.
    git_remote_disconnect(remote_);
    if (rc == 0) return found;
    if (std::optional<core::Error> failed = TransferFailure(rc, what, state, ssh, attempt == 0)) {
      return *failed;
    }
  }
}

core::Status GitWorkspace::PushCommit(const std::string& commit_hex, const std::string& branch) {
  if (in_place_) return core::Error::InvalidInput("a repository read in place is never written");
  const NetworkTimer timer(network_us_);
  auto oid = git::ParseOid(commit_hex);
  if (!oid) return core::Error::InvalidInput("not a commit id: " + commit_hex);
  git_reference* raw_ref = nullptr;
  int rc =
      git_reference_create(&raw_ref, repo_, kOutgoingRef, &*oid, /*force=*/1, "ray-gitops push");
  git::Reference outgoing(raw_ref);
  if (rc != 0) return git::LastError(rc, "cannot prepare the push");

  SshHostKeyCheck ssh(remote_url_);
  ssh.Prepare();
  CallbackState state{&options_, 0, {}, GitCancelGeneration(), false, &ssh};
  git_push_options opts{};
  git_push_options_init(&opts, GIT_PUSH_OPTIONS_VERSION);
  opts.callbacks.credentials = AcquireCredentials;
  opts.callbacks.certificate_check = CheckCertificate;
  opts.callbacks.push_transfer_progress = StopPushIfCancelled;
  opts.callbacks.push_update_reference = RecordPushStatus;
  opts.callbacks.payload = &state;
  // The pack's delta search on every core (libgit2 uses one by default): a status commit of
  // 1,000 new files is 1,000 blobs to compare.
  opts.pb_parallelism = 0;
  const std::string spec = std::string(kOutgoingRef) + ":refs/heads/" + branch;
  std::array<char*, 1> specs = {const_cast<char*>(spec.c_str())};
  const git_strarray refspecs{specs.data(), specs.size()};
  rc = git_remote_push(remote_, &refspecs, &opts);
  // A local remote reports a held lock as GIT_ELOCKED or as the ref's rejection.
  if ((rc == GIT_ELOCKED || (rc == 0 && !state.rejection.empty())) &&
      !RemoveStaleRefLock(remote_url_, branch).empty()) {
    state = CallbackState{&options_, 0, {}, GitCancelGeneration(), false, &ssh};
    opts.callbacks.payload = &state;
    rc = git_remote_push(remote_, &refspecs, &opts);
  }
  if (rc != 0) {
    core::Error e = git::LastError(rc, "cannot push " + branch + " to " + url_);
    bool retry = false;
    if (std::optional<core::Error> refused =
            SshRefusal(ssh, e, "cannot push " + branch + " to " + url_, &retry)) {
      return *refused;
    }
    if (e.IsConflict() || e.IsUnauthorized()) return e;
    return core::Error::Transient(e.message());
  }
  if (!state.rejection.empty()) {
    return core::Error::Conflict("the remote refused " + state.rejection);
  }
  // The remote now has it; keep the tracking ref in step without another fetch.
  git_reference* tracking = nullptr;
  if (git_reference_create(&tracking, repo_, TrackingRef(branch).c_str(), &*oid, 1,
                           "ray-gitops push") == 0) {
    git_reference_free(tracking);
  } else {
    git_error_clear();
  }
  return core::OkStatus();
}

}  // namespace rg::adapters
