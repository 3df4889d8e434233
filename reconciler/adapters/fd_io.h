#pragma once
// Writing through a file descriptor, for the adapters that write files of their own (the parse
// cache, status packs).

#include <unistd.h>

#include <cerrno>
#include <string_view>

namespace rg::adapters {

// Every byte of `bytes` to `fd`, again after a short write or a signal; false on an error,
// with errno saying which.
inline bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;  // nothing written and no error: say so
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace rg::adapters
