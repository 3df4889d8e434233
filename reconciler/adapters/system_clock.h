#pragma once
// ports::Clock on the operating system's clocks: std::chrono::system_clock for wall time,
// std::chrono::steady_clock for deadlines and waits. Thread-safe.

#include "reconciler/ports/clock.h"

namespace rg::adapters {

class SystemClock : public ports::Clock {
 public:
  int64_t NowMs() override;
  int64_t MonotonicUs() override;
  void WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
               int64_t timeout_us) override;
};

}  // namespace rg::adapters
