#pragma once
// The Ray head's clock as a pass estimates it (docs/reconcile.md, "The head's clock"). Ray
// dates a run's start and end on the head's clock, so deadlines and --gc-finished-after compare
// them with the head's time, estimated from the Date header of Ray's answers
// (ports::JobServer::HeadNowMs), never with the daemon's own clock: a daemon whose clock is
// hours ahead must not stop a run it takes for hours old. The skew between the two clocks
// (ports::JobServer::HeadClockOffsetMs) above kClockSkewWarnMs is a warning (kWarnClockSkew).

#include <cstdint>
#include <optional>

#include "reconciler/engine/warning.h"

namespace rg::engine {

inline constexpr int64_t kClockSkewWarnMs = 60'000;
// How far the estimate may move between a pass at rest and the next before the next is a full
// pass (engine/pass_memo.h): the memo's due time is on the daemon's clock, reckoned with the
// skew of its pass. Two estimates of one skew differ by up to a second (a Date is cut to the
// second) and the answers' latency.
inline constexpr int64_t kClockSkewStepMs = 5'000;

// The head's time a pass compares Ray's times with: `head_now_ms`, as the pass read it with
// Ray's list (ports::JobServer::HeadNowMs: a lower bound, never ahead of the head's clock);
// now_ms, the daemon's time, when the head's is unknown; 0 when now_ms is 0 (the pass's time
// is unknown: no deadline and no clean-up falls due).
int64_t RayNowMs(int64_t now_ms, std::optional<int64_t> head_now_ms);

// The daemon's time when the head's clock shows `head_ms`, for a pass whose clocks read
// `now_ms` and `head_now_ms` (RayNowMs).
inline int64_t DaemonTimeOf(int64_t head_ms, int64_t now_ms, int64_t head_now_ms) {
  return head_ms - head_now_ms + now_ms;
}

// The warning for a skew above kClockSkewWarnMs, naming it: "the daemon's clock is 2h3s ahead
// of the Ray head's ..."; nullopt for a smaller or unknown one.
std::optional<Warning> ClockSkewWarning(std::optional<int64_t> head_offset_ms);

}  // namespace rg::engine
