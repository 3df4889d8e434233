#include "reconciler/adapters/zoneinfo.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace rg::adapters {

namespace {

std::string UnknownZoneMessage(std::string_view name, const std::string& dir,
                               std::string_view why) {
  return "unknown time zone \"" + std::string(name) + "\": " + std::string(why) + " in " + dir;
}

// The whole regular file at `path`, read at the size it has (up to kMaxZoneFileBytes).
core::Result<std::string> ReadZoneFile(std::string_view name, const std::string& dir,
                                       const std::string& path) {
  // O_NONBLOCK: a FIFO planted under the name must not hang the open; it fails the check below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return core::Error::NotFound(UnknownZoneMessage(name, dir, "no file"));
    }
    return core::Error::Transient("cannot open " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return core::Error::NotFound(
        UnknownZoneMessage(name, dir, "no zone file (not a regular file)"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxZoneFileBytes) {
    ::close(fd);
    return core::Error::InvalidInput("time zone file " + path + " has " +
                                     std::to_string(st.st_size) + " bytes, over the " +
                                     std::to_string(kMaxZoneFileBytes) + " a zone may have");
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string message = "cannot read " + path + ": ";
      message += std::strerror(errno);
      ::close(fd);
      return core::Error::Transient(std::move(message));
    }
    if (n == 0) break;  // cut meanwhile: the parser reports the truncation
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

}  // namespace

std::string DefaultZoneinfoDir() {
  if (const char* dir = std::getenv("TZDIR"); dir != nullptr && *dir != '\0') return dir;
  return "/usr/share/zoneinfo";
}

bool IsValidZoneName(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  bool component_start = true;
  for (const char c : name) {
    if (c == '/') {
      if (component_start) return false;  // a leading "/" or an empty component
      component_start = true;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '+' || c == '-';
    if (!ok) return false;
    component_start = false;
  }
  return !component_start;  // no trailing "/"
}

core::Result<core::TimeZone> LoadTimeZone(std::string_view name, const std::string& zoneinfo_dir) {
  if (!IsValidZoneName(name)) {
    return core::Error::InvalidInput(
        "bad time zone name \"" + std::string(name) +
        R"(": expected an IANA name such as "Europe/Berlin" (letters, digits, _ + - and /))");
  }
  // Built in, so that a machine without tzdata still runs UTC schedules.
  if (name == "UTC" || name == "Etc/UTC") return core::Utc();
  const std::string path = zoneinfo_dir + "/" + std::string(name);
  auto bytes = ReadZoneFile(name, zoneinfo_dir, path);
  if (!bytes) return bytes.error();
  auto zone = core::ParseTzif(*bytes);
  if (!zone) {
    return core::Error::InvalidInput("time zone \"" + std::string(name) + "\" (" + path +
                                     "): " + zone.error().message());
  }
  return zone;
}

core::Result<core::TimeZone> LoadTimeZone(std::string_view name) {
  return LoadTimeZone(name, DefaultZoneinfoDir());
}

}  // namespace rg::adapters
