#include "reconciler/adapters/secrets_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "reconciler/adapters/fd_io.h"
#include "reconciler/core/redaction.h"

namespace rg::adapters {
namespace {

// The canonical path of `path` (symbolic links, `.` and `..` resolved by the kernel); empty
// with errno set when it cannot be resolved.
std::string CanonicalPath(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return {};
  std::string out(real);
  std::free(real);  // NOLINT(cppcoreguidelines-no-malloc): realpath's buffer
  return out;
}

bool InsideDirectory(const std::string& path, const std::string& root) {
  if (root == "/") return path.size() > 1 && path.front() == '/';
  return path.size() > root.size() + 1 && path.compare(0, root.size(), root) == 0 &&
         path[root.size()] == '/';
}

// A reference names one file of the directory: the loader's pattern
// (^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$) is checked again here, so no reference can name a path
// elsewhere whatever reached this adapter.
bool IsReference(std::string_view ref) {
  constexpr size_t kMaxReference = 128;
  if (ref.empty() || ref.size() > kMaxReference) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(ref.front())) return false;
  return std::all_of(ref.begin(), ref.end(),
                     [&](char c) { return alnum(c) || c == '_' || c == '.' || c == '-'; });
}

std::string JoinNames(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// What the file descriptor `fd` is open on, as the kernel says; empty when it cannot say.
std::string OpenedPath(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  std::array<char, PATH_MAX> buf{};
  const ssize_t n = ::readlink(link.c_str(), buf.data(), buf.size() - 1);
  if (n <= 0) return {};
  return {buf.data(), static_cast<size_t>(n)};
}

// The value without its one line ending ("\n" or "\r\n").
void StripLineEnding(std::string& value) {
  if (value.empty() || value.back() != '\n') return;
  value.pop_back();
  if (!value.empty() && value.back() == '\r') value.pop_back();
}

// Reads at most `limit` + 1 bytes of `fd`; false with errno on an error.
bool ReadUpTo(int fd, size_t limit, std::string& out) {
  std::array<char, 8192> buf{};
  while (out.size() <= limit) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string SecretValueProblem(std::string_view value) {
  if (value.empty()) return "is empty";
  if (value.find('\0') != std::string_view::npos) {
    return "holds a NUL byte, which an environment variable cannot hold";
  }
  // Surrounding whitespace is not counted: the redactor matches the value without it.
  const size_t first = value.find_first_not_of(" \t\r\n\f");
  const size_t last = value.find_last_not_of(" \t\r\n\f");
  if (first == std::string_view::npos || last - first + 1 < core::kMinSecretLength) {
    return "is shorter than " + std::to_string(core::kMinSecretLength) +
           " bytes (surrounding whitespace not counted), too short to be redacted safely from "
           "what ray-gitops writes";
  }
  for (size_t i = value.find('$'); i != std::string_view::npos; i = value.find('$', i + 1)) {
    if (i + 1 == value.size()) break;
    const char c = value[i + 1];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '{') {
      return "holds '$' followed by a letter, '_' or '{', which Ray expands on the node as a "
             "variable: the job would receive an altered value";
    }
  }
  return {};
}

std::string SecretsDirFromFlagOrEnv(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("CREDENTIALS_DIRECTORY");  // NOLINT(concurrency-mt-unsafe)
  return env != nullptr ? std::string(env) : std::string();
}

std::vector<std::string> SecretsDirectory::References() const {
  std::vector<std::string> names;
  DIR* dir = ::opendir(dir_.c_str());
  if (dir == nullptr) return names;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): each directory stream is this call's own
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// An error about `ref` in `dir`: what is wrong, then the references present.
core::Error RefError(core::ErrorKind kind, const SecretsDirectory& dir, std::string_view ref,
                     const std::string& what) {
  return {kind, "secret reference '" + std::string(ref) + "' in the secrets directory " +
                    dir.dir() + " " + what +
                    " (references present: " + JoinNames(dir.References()) + ")"};
}

// Resolves DIR/<ref> to a canonical path inside DIR, or says why not.
core::Result<std::string> ResolveInside(const SecretsDirectory& dir, std::string_view ref) {
  if (dir.dir().empty()) {
    return core::Error::NotFound(
        "secret reference '" + std::string(ref) +
        "' cannot be read: no secrets directory is configured (give --secrets-dir DIR, or run "
        "under systemd with LoadCredential=, which sets $CREDENTIALS_DIRECTORY)");
  }
  const std::string root = CanonicalPath(dir.dir());
  struct stat st {};
  if (root.empty() || ::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return core::Error::NotFound("secret reference '" + std::string(ref) +
                                 "' cannot be read: the secrets directory " + dir.dir() +
                                 " does not exist or is not a directory");
  }
  if (!IsReference(ref)) {
    return RefError(core::ErrorKind::kInvalidInput, dir, ref, "is not a valid reference");
  }
  const std::string candidate = root + "/" + std::string(ref);
  const std::string real = CanonicalPath(candidate);
  if (real.empty()) {
    const int err = errno;
    struct stat link {};
    if (err == ELOOP) return RefError(core::ErrorKind::kInvalidInput, dir, ref, "is a link loop");
    if (err == ENOENT && ::lstat(candidate.c_str(), &link) == 0) {
      return RefError(core::ErrorKind::kNotFound, dir, ref,
                      "is a symbolic link to nothing (a Secret being updated reads again next "
                      "pass)");
    }
    if (err == ENOENT) return RefError(core::ErrorKind::kNotFound, dir, ref, "does not exist");
    return RefError(core::ErrorKind::kInvalidInput, dir, ref,
                    std::string("cannot be resolved: ") + std::strerror(err));
  }
  if (!InsideDirectory(real, root)) {
    return RefError(core::ErrorKind::kInvalidInput, dir, ref,
                    "is a symbolic link that leads outside the directory; refused");
  }
  return real;
}

// True when `real` (a canonical path) is one of `own` (paths of the daemon's credentials).
bool IsOwnCredential(const std::string& real, const std::vector<std::string>& own) {
  return std::any_of(own.begin(), own.end(), [&real](const std::string& path) {
    return !path.empty() && CanonicalPath(path) == real;
  });
}

}  // namespace

core::Result<std::string> SecretsDirectory::Read(std::string_view reference) {
  core::Result<std::string> real = ResolveInside(*this, reference);
  if (!real.ok()) return real.error();
  if (IsOwnCredential(*real, own_credentials_)) {
    return RefError(core::ErrorKind::kInvalidInput, *this, reference,
                    "is one of ray-gitops' own credentials (a --ray-token-file, --git-token-file, "
                    "--git-ssh-key or --webhook-secret-file); a job never gets it");
  }
  // O_NONBLOCK: a FIFO planted under the name must not hang the pass before fstat refuses it.
  const Fd fd(::open(real->c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) {
    const int err = errno;
    return RefError(err == ENOENT ? core::ErrorKind::kNotFound : core::ErrorKind::kInvalidInput,
                    *this, reference, std::string("cannot be opened: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return RefError(core::ErrorKind::kInvalidInput, *this, reference, "is not a regular file");
  }
  // A link swapped in after the path was resolved is caught by what was actually opened.
  const std::string root = CanonicalPath(dir_);
  if (const std::string opened = OpenedPath(fd.get());
      !opened.empty() && !InsideDirectory(opened, root)) {
    return RefError(core::ErrorKind::kInvalidInput, *this, reference,
                    "leads outside the directory; refused");
  }
  const std::string too_large = "is larger than 64 KiB; refused";
  if (static_cast<uint64_t>(st.st_size) > kMaxSecretFileBytes) {
    return RefError(core::ErrorKind::kInvalidInput, *this, reference, too_large);
  }
  std::string value;
  if (!ReadUpTo(fd.get(), kMaxSecretFileBytes, value)) {
    return RefError(core::ErrorKind::kTransient, *this, reference,
                    std::string("cannot be read: ") + std::strerror(errno));
  }
  if (value.size() > kMaxSecretFileBytes) {
    return RefError(core::ErrorKind::kInvalidInput, *this, reference, too_large);
  }
  StripLineEnding(value);
  if (std::string problem = SecretValueProblem(value); !problem.empty()) {
    return RefError(core::ErrorKind::kInvalidInput, *this, reference,
                    "has a value that " + problem);
  }
  return value;
}

}  // namespace rg::adapters
