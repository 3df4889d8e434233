#pragma once
// The process's heap: which allocator serves it, and giving freed memory back to the system.
//
// Builds link jemalloc (CMake option RG_JEMALLOC, on; docs/performance.md, "The allocator"):
// a pass allocates and frees hundreds of thousands of small objects, and jemalloc does both
// markedly faster than glibc's malloc. Sanitizer and fuzz builds keep the C library's allocator,
// which the sanitizers replace.

#include <optional>
#include <string_view>

namespace rg::cli {

// "jemalloc" or "glibc".
std::string_view AllocatorName();

// Gives the heap's free pages back to the system now: jemalloc purges every arena's unused
// pages (it would otherwise return them over the next seconds, and only while the process
// allocates), glibc trims every arena (it returns freed heap only from the top unless asked).
// The daemon calls it after every pass, so that what it holds at rest is what it keeps.
void ReturnFreeMemory();

// From now on, pages freed go back to the system within about 100 ms (kFreedPagesDecayMs:
// jemalloc's decay times, 10 s by default; glibc already unmaps large blocks as they are freed).
// A command frees large buffers it does not reuse (Ray's answer, what parsing leaves), and its
// peak resident set is what its user sees; so is the peak of the daemon's full passes, which
// read and plan everything as a `sync` does (at 50,000 specs its first pass fell from 300 to
// 287 MB). Not 0: pages freed and taken again at once (zlib's state of every object written,
// 1,000 times in a commit of 1,000 files) would each cost an madvise and its page faults.
inline constexpr long kFreedPagesDecayMs = 100;
void ReturnFreedPagesSoon();

// jemalloc's configured decay times again (10 s for dirty pages unless MALLOC_CONF says
// otherwise). The daemon sets them after each full pass: its other passes (one at rest, a
// narrow one) free little, and 100 ms cost a narrow pass at 1,000 specs 4 ms of its 11 ms of
// own time. It also returns every free page after each pass (ReturnFreeMemory).
void KeepFreedPagesLonger();

// The decay time of freed dirty pages now, and as configured, in ms; nullopt without jemalloc.
std::optional<long> FreedPagesDecayMs();
std::optional<long> ConfiguredFreedPagesDecayMs();

}  // namespace rg::cli
