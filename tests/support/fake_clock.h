#pragma once
// A ports::Clock that moves only when told to. WaitFor never blocks: it advances the clock by
// the timeout, as if the wait had run to its end, so a loop driven by it runs through simulated
// time at full speed. Thread-safe.

#include <atomic>
#include <cstdint>

#include "reconciler/ports/clock.h"

namespace rg::testing {

class FakeClock : public ports::Clock {
 public:
  // Wall time starts at 2026-01-01T00:00:00Z; monotonic time at an arbitrary 1000 s.
  static constexpr int64_t kStartWallMs = 1767225600000;
  static constexpr int64_t kStartMonotonicUs = 1'000'000'000;

  int64_t NowMs() override { return kStartWallMs + elapsed_us_.load() / 1000; }
  int64_t MonotonicUs() override { return kStartMonotonicUs + elapsed_us_.load(); }
  void WaitFor(std::unique_lock<std::mutex>&, std::condition_variable&,
               int64_t timeout_us) override {
    ++waits_;
    if (timeout_us > 0) elapsed_us_ += timeout_us;
  }

  void AdvanceMs(int64_t ms) { elapsed_us_ += ms * 1000; }
  void AdvanceUs(int64_t us) { elapsed_us_ += us; }
  int64_t ElapsedMs() const { return elapsed_us_.load() / 1000; }
  int waits() const { return waits_.load(); }

 private:
  std::atomic<int64_t> elapsed_us_{0};
  std::atomic<int> waits_{0};
};

}  // namespace rg::testing
