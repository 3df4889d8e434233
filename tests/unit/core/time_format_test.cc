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
  // Digits only: no sign in a field.
  CHECK_FALSE(ParseRfc3339Millis("2026-11-22T09:11:-1Z").has_value());
  CHECK_FALSE(ParseRfc3339Millis("-026-11-22T09:11:31Z").has_value());
  CHECK_FALSE(ParseRfc3339Millis("2026-11-22T09:11:31.-12Z").has_value());
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

TEST_CASE("HTTP dates are read in the three forms RFC 7231 has recipients accept") {
  // RFC 7231's own example, 1994-11-06T08:49:37Z.
  constexpr int64_t kExample = 784111777000;
  CHECK(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT") == kExample);
  CHECK(ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT") == kExample);
  CHECK(ParseHttpDate("Sun Nov  6 08:49:37 1994") == kExample);
  CHECK(ParseHttpDate("Sun, 29 Nov 2026 04:26:17 GMT") == 1795926377000);
  CHECK(ParseHttpDate("Tue, 29 Feb 2028 23:59:59 GMT") == 1835481599000);
  CHECK(ParseHttpDate("Thursday, 01-Jan-70 00:00:00 GMT") == 0);
  CHECK(ParseHttpDate("Friday, 01-Jan-38 00:00:00 GMT") == 2145916800000);
  CHECK(ParseHttpDate("Thu Dec 31 23:59:60 2026") == 1798761600000);  // a leap second
}

TEST_CASE("a malformed HTTP date is none at all") {
  for (const char* bad : {
           "",
           "yesterday",
           "Sun, 06 Nov 1994 08:49:37 UTC",   // only GMT
           "Sun, 06 Nov 1994 08:49:37 GMT ",  // trailing space (callers trim)
           "sun, 06 Nov 1994 08:49:37 GMT",   // names are case-sensitive
           "Sun, 06 nov 1994 08:49:37 GMT",
           "Mon, 06 Nov 1994 08:49:37 GMT",  // the day name is not the date's
           "Sun, 6 Nov 1994 08:49:37 GMT",   // the day has two digits
           "Sun, 06 Nov 94 08:49:37 GMT",    // the year has four
           "Sun, 31 Nov 1994 08:49:37 GMT",  // no such day
           "Sun, 06 Nov 1994 24:00:00 GMT",  // no such hour
           "Sun, 06 Nov 1994 08:60:00 GMT",
           "Sun, 06 Nov 1994 08:49:61 GMT",
           "Sun, 06 Nov 1994 08-49-37 GMT",
           "Sun, 06 Nov 1994 08:49:3x GMT",
           "Sun, 06 Nov 1994T08:49:37 GMT",
           "Sun, 06 Nov +994 08:49:37 GMT",
           "Sun,  6 Nov 1994 08:49:37 GMT",
           "Sun 06 Nov 1994 08:49:37 GMT",
           "Sun, 06 Nov 1994 08:49:37 GMT extra",
           "Sunday, 06-Nov-1994 08:49:37 GMT",  // RFC 850 has a two-digit year
           "Sun, 06-Nov-94 08:49:37 GMT",       // and the long day name
           "Sunday 06-Nov-94 08:49:37 GMT",
           "Sun Nov 06 08:49:37 94",  // asctime has a four-digit year
           "Sun Nov 6 08:49:37 1994",
           "1994-11-06T08:49:37Z",  // not RFC 3339
       }) {
    INFO(bad);
    CHECK_FALSE(ParseHttpDate(bad).has_value());
  }
}

TEST_CASE("HTTP dates are written as IMF-fixdate, to the second, and read back") {
  CHECK(FormatHttpDate(784111777000) == "Sun, 06 Nov 1994 08:49:37 GMT");
  CHECK(FormatHttpDate(784111777999) == "Sun, 06 Nov 1994 08:49:37 GMT");  // dropped, not rounded
  CHECK(FormatHttpDate(0) == "Thu, 01 Jan 1970 00:00:00 GMT");
  CHECK(FormatHttpDate(-1) == "Wed, 31 Dec 1969 23:59:59 GMT");
  for (int64_t ms :
       {int64_t{0}, int64_t{1795926377000}, int64_t{951782400000}, int64_t{4102444799000}}) {
    CHECK(ParseHttpDate(FormatHttpDate(ms)) == ms);
  }
}

}  // namespace
}  // namespace rg::core
