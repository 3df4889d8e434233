#include "reconciler/adapters/git_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "reconciler/adapters/git_transport.h"

namespace rg::adapters::git {

void EnsureLibraryInitialised() {
  static const bool initialised = [] {
    git_libgit2_init();
    // Objects are not hashed again on every read, as git itself does not: what a fetch brings
    // is hashed by the indexer as the pack arrives, and what we write we hashed to name it.
    // Re-hashing a 10,000-entry tree on each read was a fifth of a narrow pass
    // (docs/performance.md).
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
    // Trees of up to 10,000 and more entries stay parsed in the object cache (by default only
    // trees under 4 KiB do): a narrow pass reads the jobs and status folders more than once.
    // The daemon reopens the clone after each full pass, which empties the cache.
    git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE, size_t{4} << 20U);
    // Packs are read through mapped windows of 4 MiB, at most 8 MiB of them mapped at once
    // (libgit2's defaults: 1 GiB windows, 8 GiB in all). Mapped pages count in the resident
    // set: at 50,000 specs a status commit's pack read back by the push, beside the clone's
    // packs, added 25 MB to the peak, and reading every spec and status file held 28 MB of
    // windows, for no time that could be told from the noise.
    git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, size_t{4} << 20U);
    git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, size_t{8} << 20U);
    // Every network connection of libgit2 goes through the stream with deadlines.
    RegisterTimedSocketStream();
    std::atexit([] { git_libgit2_shutdown(); });
    return true;
  }();
  (void)initialised;
}

core::Error LastError(int code, std::string_view what) {
  const git_error* e = git_error_last();
  std::string message(what);
  message += ": ";
  message += (e != nullptr && e->message != nullptr) ? e->message
                                                     : "libgit2 error " + std::to_string(code);
  const int klass = e != nullptr ? e->klass : GIT_ERROR_NONE;
  switch (code) {
    case GIT_EAUTH:
    case GIT_ECERTIFICATE:
      return core::Error::Unauthorized(std::move(message));
    case GIT_ENOTFOUND:
      if (klass == GIT_ERROR_REPOSITORY) return core::Error::InvalidInput(std::move(message));
      return core::Error::NotFound(std::move(message));
    case GIT_ENONFASTFORWARD:
    case GIT_EMODIFIED:
    case GIT_ELOCKED:
      return core::Error::Conflict(std::move(message));
    case GIT_EINVALIDSPEC:
    case GIT_EINVALID:
    case GIT_EAMBIGUOUS:
      return core::Error::InvalidInput(std::move(message));
    default:
      break;
  }
  switch (klass) {
    case GIT_ERROR_NET:
    case GIT_ERROR_SSL:
    case GIT_ERROR_SSH:
    case GIT_ERROR_HTTP:
      return core::Error::Transient(std::move(message));
    case GIT_ERROR_REPOSITORY:
      return core::Error::InvalidInput(std::move(message));
    default:
      return core::Error::Fatal(std::move(message));
  }
}

std::optional<std::string> ForeignOwnerProblem(int code, const std::string& path) {
  const git_error* e = git_error_last();
  const std::string_view said = e != nullptr && e->message != nullptr ? e->message : "";
  if (code != GIT_EOWNER && said.find("safe.directory") == std::string_view::npos &&
      said.find("not owned by current user") == std::string_view::npos) {
    return std::nullopt;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec).lexically_normal();
  if (ec) absolute = path;
  std::string shown = absolute.string();
  while (shown.size() > 1 && shown.back() == '/') shown.pop_back();
  const uid_t self = ::geteuid();
  // libgit2 checks the working tree, the .git file or folder and the git directory: the first
  // of them another user owns is named.
  std::string owner;
  for (const std::string& candidate : {shown, shown + "/.git"}) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && st.st_uid != self) {
      owner = std::to_string(st.st_uid);
      break;
    }
  }
  const std::string run_as = owner.empty() ? "its owner" : "uid " + owner;
  return "the Git repository " + shown + " is owned by another user (" +
         (owner.empty() ? "" : "uid " + owner + "; ") + "this process runs as uid " +
         std::to_string(self) +
         "), and Git refuses to open it (safe.directory): trust it with `git config --global "
         "--add safe.directory " +
         shown + "` as this user, or run ray-gitops as " + run_as;
}

std::string OidHex(const git_oid& oid) {
  std::array<char, GIT_OID_HEXSZ + 1> buf{};
  git_oid_tostr(buf.data(), buf.size(), &oid);
  return buf.data();
}

std::optional<git_oid> ParseOid(std::string_view hex) {
  if (hex.size() != GIT_OID_HEXSZ) return std::nullopt;
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return std::nullopt;
    }
  }
  git_oid oid;
  if (git_oid_fromstrn(&oid, hex.data(), hex.size()) != 0) return std::nullopt;
  return oid;
}

std::optional<std::string> RevparseCommit(git_repository* repo, const std::string& revision) {
  git_object* raw = nullptr;
  if (git_revparse_single(&raw, repo, revision.c_str()) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  Object object(raw);
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, object.get(), GIT_OBJECT_COMMIT) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  Object commit(peeled);
  return OidHex(*git_object_id(commit.get()));
}

std::optional<std::string> ReadBlob(git_repository* repo, const git_oid& oid) {
  git_blob* raw = nullptr;
  if (git_blob_lookup(&raw, repo, &oid) != 0) return std::nullopt;
  Blob blob(raw);
  const auto* data = static_cast<const char*>(git_blob_rawcontent(blob.get()));
  return std::string(data, static_cast<size_t>(git_blob_rawsize(blob.get())));
}

}  // namespace rg::adapters::git
