#include "reconciler/adapters/system_clock.h"

#include <chrono>

namespace rg::adapters {

int64_t SystemClock::NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SystemClock::MonotonicUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SystemClock::WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          int64_t timeout_us) {
  if (timeout_us <= 0) return;
  cv.wait_for(lock, std::chrono::microseconds(timeout_us));
}

}  // namespace rg::adapters
