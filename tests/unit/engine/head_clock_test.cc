// The head's clock as a pass estimates it (engine/head_clock.h): the head's time from the
// daemon's and the offset, and when a skew is a warning.

#include "reconciler/engine/head_clock.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

namespace rg::engine {
namespace {

TEST_CASE("the head's time is the one read with Ray's list, or the daemon's when unknown",
          "[engine]") {
  CHECK(RayNowMs(1'000'000, -6'200'000) == -6'200'000);
  CHECK(RayNowMs(1'000'000, 1'000'500) == 1'000'500);
  CHECK(RayNowMs(1'000'000, std::nullopt) == 1'000'000);
  CHECK(RayNowMs(0, 500) == 0);  // the pass's time unknown: no deadline, no clean-up
  CHECK(DaemonTimeOf(5'000, 1'000'000, 2'000) == 1'003'000);
}

TEST_CASE("a skew above a minute is a warning naming it to the second", "[engine]") {
  CHECK_FALSE(ClockSkewWarning(std::nullopt).has_value());
  CHECK_FALSE(ClockSkewWarning(0).has_value());
  CHECK_FALSE(ClockSkewWarning(60'000).has_value());
  CHECK_FALSE(ClockSkewWarning(-60'000).has_value());
  const std::optional<Warning> ahead = ClockSkewWarning(-7'203'400);
  REQUIRE(ahead.has_value());
  CHECK(ahead->kind == kWarnClockSkew);
  CHECK(ahead->message ==
        "the daemon's clock is 2h3s ahead of the Ray head's (read from the Date header of its "
        "answers); deadlines and --gc-finished-after count on the head's clock; check the time "
        "synchronisation (NTP) of both machines");
  // The offset is a lower bound of the head's clock less the daemon's: the skew is rounded up.
  const std::optional<Warning> behind = ClockSkewWarning(60'001);
  REQUIRE(behind.has_value());
  CHECK_THAT(behind->message,
             Catch::StartsWith("the daemon's clock is 1m1s behind the Ray head's"));
  CHECK_FALSE(ClockSkewWarning(-60'999).has_value());  // 60 s ahead, and up to 0.999 more
  CHECK_THAT(ClockSkewWarning(-61'000)->message, Catch::StartsWith("the daemon's clock is 1m1s "));
  CHECK_THAT(ClockSkewWarning(90'500)->message, Catch::StartsWith("the daemon's clock is 1m31s "));
  CHECK_THAT(ClockSkewWarning(-86'400'000)->message,
             Catch::StartsWith("the daemon's clock is 1d ahead"));
}

}  // namespace
}  // namespace rg::engine
