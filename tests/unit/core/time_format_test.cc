#include "reconciler/core/time_format.h"

#include <catch2/catch.hpp>
#include <chrono>

namespace rg::core {
namespace {

TEST_CASE("times are written in UTC with milliseconds, and read back") {
  CHECK(FormatRfc3339Millis(0) == "1970-01-01T00:00:00.000Z");
  CHECK(FormatRfc3339Millis(1795338691123) == "2026-11-22T09:11:31.123Z");
  CHECK(FormatRfc3339Millis(951782400007) == "2000-02-29T00:00:00.007Z");
  CHECK(FormatRfc3339Millis(-1) == "1969-12-31T23:59:59.999Z");
  for (int64_t ms : {int64_t{0}, int64_t{1795338691123}, int64_t{951782400007}, int64_t{-1}}) {
    CHECK(ParseRfc3339Millis(FormatRfc3339Millis(ms)) == ms);
  }
  CHECK(ParseRfc3339Millis("2026-11-22T09:11:31.123Z") == 1795338691123);
  CHECK(ParseRfc3339Millis("2026-11-22T09:11:31Z") == 1795338691000);
  CHECK_FALSE(ParseRfc3339Millis("2026-13-22T09:11:31Z").has_value());
  CHECK_FALSE(ParseRfc3339Millis("2026-11-22T09:11:31.12Z").has_value());
  CHECK_FALSE(ParseRfc3339Millis("2026-11-22T09:11:31.123").has_value());
  CHECK_FALSE(ParseRfc3339Millis("yesterday").has_value());
}

TEST_CASE("whole-second times drop the milliseconds and are read back by the same parser") {
  using std::chrono::milliseconds;
  using std::chrono::system_clock;
  CHECK(FormatRfc3339Seconds(0) == "1970-01-01T00:00:00Z");
  CHECK(FormatRfc3339Seconds(1795338691999) == "2026-11-22T09:11:31Z");
  CHECK(FormatRfc3339Seconds(system_clock::time_point(milliseconds(951782400500))) ==
        "2000-02-29T00:00:00Z");
  CHECK(ParseRfc3339Millis(FormatRfc3339Seconds(1795338691999)) == 1795338691000);
}

}  // namespace
}  // namespace rg::core
