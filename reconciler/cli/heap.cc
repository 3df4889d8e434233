#include "reconciler/cli/heap.h"

#if defined(RG_WITH_JEMALLOC)
#include <jemalloc/jemalloc.h>
#include <sys/types.h>
#else
#include <malloc.h>
#endif

#include <optional>
#include <string>

#if defined(RG_WITH_JEMALLOC)
// jemalloc's configuration, read when it starts (the MALLOC_CONF variable still overrides it):
// one arena for every thread. By default each thread takes one of 4 per core in turn, and
// memory one thread freed is not reused by another on a different arena: Ray's job list is
// received on one thread and decoded on a second while the pass runs on a third, and at
// 50,000 specs a warm plan's peak resident set was 30 MB higher for it. Our threads allocate
// little at once (an HTTP worker, the list's decoder, a few submitters), each with its own
// cache of small objects, so they seldom wait on the arena's lock. The price: the daemon's
// pass thread no longer has an arena apart from the loop's (cli/pass_thread.h), and its
// memory at rest rose a little (docs/daemon.md, "Memory").
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): jemalloc's declaration
const char* malloc_conf = "narenas:1";
#endif

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

namespace {

#if defined(RG_WITH_JEMALLOC)
// Sets one of jemalloc's decay times (`what`: "dirty_decay_ms" or "muzzy_decay_ms") to `ms`, for
// the arenas made later and for those that exist (an index not yet in use refuses: fine).
void SetDecay(const std::string& what, ssize_t ms) {
  mallctl(("arenas." + what).c_str(), nullptr, nullptr, &ms, sizeof(ms));
  unsigned arenas = 0;
  size_t size = sizeof(arenas);
  if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) != 0) return;
  for (unsigned i = 0; i < arenas; ++i) {
    mallctl(("arena." + std::to_string(i) + "." + what).c_str(), nullptr, nullptr, &ms, sizeof(ms));
  }
}

#endif

// A decay time jemalloc reports under `name`, in ms; nullopt without jemalloc.
std::optional<long> ReadDecay([[maybe_unused]] const char* name) {
#if defined(RG_WITH_JEMALLOC)
  ssize_t ms = 0;
  size_t size = sizeof(ms);
  if (mallctl(name, &ms, &size, nullptr, 0) != 0) return std::nullopt;
  return static_cast<long>(ms);
#else
  return std::nullopt;
#endif
}

}  // namespace

void ReturnFreedPagesSoon() {
#if defined(RG_WITH_JEMALLOC)
  SetDecay("dirty_decay_ms", kFreedPagesDecayMs);
  SetDecay("muzzy_decay_ms", kFreedPagesDecayMs);
#endif
}

void KeepFreedPagesLonger() {
#if defined(RG_WITH_JEMALLOC)
  SetDecay("dirty_decay_ms", ReadDecay("opt.dirty_decay_ms").value_or(kFreedPagesDecayMs));
  SetDecay("muzzy_decay_ms", ReadDecay("opt.muzzy_decay_ms").value_or(kFreedPagesDecayMs));
#endif
}

std::optional<long> FreedPagesDecayMs() { return ReadDecay("arena.0.dirty_decay_ms"); }

std::optional<long> ConfiguredFreedPagesDecayMs() { return ReadDecay("opt.dirty_decay_ms"); }

}  // namespace rg::cli
