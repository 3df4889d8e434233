// The heap gives freed memory back to the system when asked, whichever allocator serves it: the
// daemon relies on it after every pass (docs/daemon.md, "Memory").

#include "reconciler/cli/heap.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/sanitizer.h"

namespace rg::cli {
namespace {

// AddressSanitizer keeps freed memory in its quarantine on purpose: nothing to measure there.
#if !defined(RG_UNDER_ASAN)
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  int64_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

TEST_CASE("freed small objects go back to the system when the heap is asked to return them") {
  CHECK((AllocatorName() == "jemalloc" || AllocatorName() == "glibc"));
  constexpr int64_t kMiB = 1 << 20;
  constexpr size_t kObjects = 400000;  // 400,000 objects of 200 bytes: about 80 MB
  ReturnFreeMemory();
  const int64_t before = ResidentBytes();
  int64_t allocated = 0;
  {
    std::vector<std::unique_ptr<std::string>> objects;
    objects.reserve(kObjects);
    for (size_t i = 0; i < kObjects; ++i) {
      objects.push_back(std::make_unique<std::string>(200, static_cast<char>('a' + i % 26)));
    }
    allocated = ResidentBytes();
    // Every other one first: the heap is left full of holes, as a pass leaves it.
    for (size_t i = 0; i < kObjects; i += 2) objects[i].reset();
  }
  const int64_t freed = ResidentBytes();
  ReturnFreeMemory();
  const int64_t after = ResidentBytes();
  INFO("allocator " << AllocatorName() << ": resident " << before / kMiB << " MiB before, "
                    << allocated / kMiB << " MiB with the objects, " << freed / kMiB
                    << " MiB once they were freed, " << after / kMiB << " MiB after");
  REQUIRE(allocated - before > 60 * kMiB);
  CHECK(after - before < 16 * kMiB);
}

// Allocates and frees blocks, the activity that drives jemalloc's decay, until the
// resident set is below `bound` or `seconds` have passed; the resident set then. The state is
// checked after every round of blocks: no fixed wait.
int64_t ResidentAfterActivity(int64_t bound, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
  int64_t resident = ResidentBytes();
  while (resident >= bound && std::chrono::steady_clock::now() < deadline) {
    // Blocks of 64 KiB: above what a thread's cache keeps, so each one reaches the arena.
    for (int i = 0; i < 1000; ++i) {
      auto churn = std::make_unique<std::string>(64 << 10, 'x');
      CHECK(churn->size() == 64 << 10);
    }
    resident = ResidentBytes();
  }
  return resident;
}

TEST_CASE("the decay of freed pages is set to 100 ms and back to jemalloc's configured one") {
  const std::optional<long> configured = ConfiguredFreedPagesDecayMs();
  if (AllocatorName() != "jemalloc") {
    CHECK_FALSE(configured.has_value());
    CHECK_FALSE(FreedPagesDecayMs().has_value());
    return;
  }
  REQUIRE(configured.has_value());
  CHECK(*configured != kFreedPagesDecayMs);  // 10 s unless MALLOC_CONF says otherwise
  ReturnFreedPagesSoon();
  CHECK(FreedPagesDecayMs() == kFreedPagesDecayMs);
  KeepFreedPagesLonger();
  CHECK(FreedPagesDecayMs() == configured);
  ReturnFreedPagesSoon();
  CHECK(FreedPagesDecayMs() == kFreedPagesDecayMs);
}

// Last in this file: it changes the heap for the rest of the process.
TEST_CASE("once freed pages go back soon, freed memory leaves without being asked") {
  constexpr int64_t kMiB = 1 << 20;
  ReturnFreeMemory();
  ReturnFreedPagesSoon();
  const int64_t before = ResidentBytes();
  int64_t allocated = 0;
  {
    // Blocks of 1 MiB: below the size an allocator serves apart and unmaps on its own.
    std::vector<std::unique_ptr<std::string>> blocks;
    for (int i = 0; i < 96; ++i) {
      blocks.push_back(std::make_unique<std::string>(kMiB, static_cast<char>('a' + i % 26)));
    }
    allocated = ResidentBytes();
  }
  // Within 2 s of the process going on allocating (kFreedPagesDecayMs is 100 ms; jemalloc's
  // default of 10 s would keep most of the 96 MiB that long).
  const int64_t after = ResidentAfterActivity(before + 16 * kMiB, 2.0);
  INFO("allocator " << AllocatorName() << ": resident " << before / kMiB << " MiB before, "
                    << allocated / kMiB << " MiB with the blocks, " << after / kMiB
                    << " MiB once they were freed");
  REQUIRE(allocated - before > 80 * kMiB);
  CHECK(after - before < 16 * kMiB);
}
#endif

}  // namespace
}  // namespace rg::cli
