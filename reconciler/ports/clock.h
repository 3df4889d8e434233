#pragma once
// Time as the daemon sees it, behind an interface so the reconcile loop runs on a fake clock in
// tests (no sleeps, no flaky timing).

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace rg::ports {

class Clock {
 public:
  virtual ~Clock() = default;

  // Wall-clock time in milliseconds since the Unix epoch: for records, logs and the
  // last-successful-pass metric. May jump; never use it to measure durations.
  virtual int64_t NowMs() = 0;
  // Monotonic time in microseconds from an arbitrary origin: for deadlines and durations.
  virtual int64_t MonotonicUs() = 0;

  // REQUIRES: `lock` holds the mutex that guards the caller's condition and that notifiers of
  // `cv` take. Waits until `timeout_us` has passed on this clock or `cv` is notified, and
  // returns with `lock` held. May return early (a spurious wakeup, or a fake clock that moves
  // time forward instead of blocking): callers re-check their condition and deadline.
  virtual void WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                       int64_t timeout_us) = 0;
};

}  // namespace rg::ports
