#include "reconciler/engine/head_clock.h"

#include <cstdlib>
#include <string>

#include "reconciler/core/duration.h"

namespace rg::engine {

int64_t RayNowMs(int64_t now_ms, std::optional<int64_t> head_now_ms) {
  if (now_ms == 0 || !head_now_ms) return now_ms;
  return *head_now_ms;
}

std::optional<Warning> ClockSkewWarning(std::optional<int64_t> head_offset_ms) {
  if (!head_offset_ms) return std::nullopt;
  // In whole seconds, rounded up: the skew is at least the offset, and within a second of it.
  const int64_t offset_ms = *head_offset_ms;
  const int64_t skew_s = offset_ms >= 0 ? (offset_ms + 999) / 1000 : -(-offset_ms / 1000);
  if (std::llabs(skew_s) * 1000 <= kClockSkewWarnMs) return std::nullopt;
  const int64_t rounded_ms = std::llabs(skew_s) * 1000;
  return Warning{std::string(kWarnClockSkew),
                 "the daemon's clock is " + core::FormatDurationMs(rounded_ms) +
                     (skew_s < 0 ? " ahead of" : " behind") +
                     " the Ray head's (read from the Date header of its answers); deadlines "
                     "and --gc-finished-after count on the head's clock; check the time "
                     "synchronisation (NTP) of both machines"};
}

}  // namespace rg::engine
