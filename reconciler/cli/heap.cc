#include "reconciler/cli/heap.h"

#if defined(RG_WITH_JEMALLOC)
#include <jemalloc/jemalloc.h>
#else
#include <malloc.h>
#endif

#include <string>

namespace rg::cli {

std::string_view AllocatorName() {
#if defined(RG_WITH_JEMALLOC)
  return "jemalloc";
#else
  return "glibc";
#endif
}

void ReturnFreeMemory() {
#if defined(RG_WITH_JEMALLOC)
  // The thread's cache of freed objects first, so that its pages can be purged too.
  mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
  const std::string purge = "arena." + std::to_string(MALLCTL_ARENAS_ALL) + ".purge";
  mallctl(purge.c_str(), nullptr, nullptr, nullptr, 0);
#else
  malloc_trim(0);
#endif
}

}  // namespace rg::cli
