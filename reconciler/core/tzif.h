#pragma once
// Time zones read from TZif bytes (RFC 8536; versions 1 to 4) and POSIX TZ strings, for the
// schedules of DESIGN §3.4. g++ 12 has no std::chrono time zone database, and the C library's
// (localtime, mktime, TZ) is process-global state, so the zone is a value built here. Pure:
// bytes in, values out; the file is read by adapters/zoneinfo.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reconciler/core/result.h"

namespace rg::core {

// Proleptic Gregorian calendar arithmetic on days since 1970-01-01 (H. Hinnant's algorithms),
// exact for any day within ±2^60 seconds of 1970, where TimeZone clamps the instants it is
// asked about.
struct CivilDate {
  int64_t year = 1970;
  int month = 1;  // 1-12
  int day = 1;    // 1-31
};
int64_t DaysFromCivil(int64_t year, int month, int day);
CivilDate CivilFromDays(int64_t days);
// 0 = Sunday ... 6 = Saturday.
int WeekdayFromDays(int64_t days);
bool IsLeapYear(int64_t year);
int DaysInMonth(int64_t year, int month);

struct LocalTimeType {
  int32_t ut_offset = 0;  // seconds east of UTC
  bool is_dst = false;
  std::string abbreviation;
  bool operator==(const LocalTimeType&) const = default;
};

// A date rule of a POSIX TZ string, with the local time of day the change happens at.
struct PosixRuleDate {
  enum class Kind {
    kJulianNoLeap,  // "Jn": day n of 1-365, February 29 never counted
    kJulianZero,    // "n": day n of 0-365, February 29 counted
    kMonthWeekDay,  // "Mm.w.d": weekday d (0 = Sunday) of week w (1-5, 5 = last) of month m
  };
  Kind kind = Kind::kMonthWeekDay;
  int day = 0;
  int month = 0;
  int week = 0;
  int weekday = 0;
  // Seconds after the local midnight that starts the day, -167 h to 167 h (RFC 8536 §3.3.1
  // allows times outside 0-24 h); 02:00 when the rule names none.
  int32_t time = 2 * 3600;
  bool operator==(const PosixRuleDate&) const = default;
};

// "std offset [dst [offset] [,start[/time],end[/time]]]", the footer of a TZif file.
struct PosixTimeZone {
  LocalTimeType standard;
  std::optional<LocalTimeType> daylight;  // no daylight saving time when unset
  PosixRuleDate dst_start;                // its time in local standard time
  PosixRuleDate dst_end;                  // its time in local daylight time
};

// Parses a POSIX TZ string as RFC 8536 §3.3 extends it: names alphabetic ("CET") or quoted in
// angle brackets ("<+03>"), offsets [+-]hh[:mm[:ss]] with hh up to 24 (positive west of
// Greenwich, as POSIX has it), rule times [+-]hhh[:mm[:ss]] up to 167 h. A daylight name
// without rules takes the US rules ",M3.2.0,M11.1.0", as the reference implementation does.
// InvalidInput naming what is wrong, else.
Result<PosixTimeZone> ParsePosixTz(std::string_view text);

// How a local wall time maps onto instants.
struct LocalResolution {
  enum class Kind {
    kUnique,     // the clock shows it once
    kGap,        // skipped by a change forward: `instant` is the end of the gap, the first
                 // instant after the transition
    kAmbiguous,  // shown twice after a change back: `instant` is the first occurrence
  };
  Kind kind = Kind::kUnique;
  int64_t instant = 0;  // UTC seconds
};

class TimeZone {
 public:
  // What a zone is made of; FromParts checks that it holds together.
  struct Parts {
    std::vector<int64_t> transitions;       // UTC seconds, strictly ascending
    std::vector<uint8_t> transition_types;  // one index into `types` per transition
    std::vector<LocalTimeType> types;       // at least one; types[0] applies before the first
                                            // transition
    std::string footer;                     // POSIX TZ string for after the last transition;
                                            // empty: the last transition's type stays
  };
  // InvalidInput when the parts are inconsistent or the footer does not parse.
  static Result<TimeZone> FromParts(Parts parts);

  // The UT offset (seconds east) in effect at a UTC instant.
  int32_t UtOffsetAt(int64_t utc_seconds) const;
  // The local time type (offset, DST flag, abbreviation) in effect at a UTC instant.
  const LocalTimeType& TypeAt(int64_t utc_seconds) const;
  // The first instant after `utc_seconds` at which the local time type may change (a
  // transition of the file or of the footer's rule), or nullopt when none follows.
  std::optional<int64_t> NextTransitionAfter(int64_t utc_seconds) const;
  // The instant a local wall time (seconds since 1970-01-01T00:00 on the local clock) stands
  // for: unique, the end of the gap it falls in, or the first of its two occurrences.
  LocalResolution ResolveLocal(int64_t local_seconds) const;

  std::span<const int64_t> transitions() const { return parts_.transitions; }
  const std::vector<LocalTimeType>& types() const { return parts_.types; }
  const std::string& footer() const { return parts_.footer; }

 private:
  explicit TimeZone(Parts parts, std::optional<PosixTimeZone> rule)
      : parts_(std::move(parts)), rule_(std::move(rule)) {}
  // Whether `utc_seconds` is governed by the footer's rule rather than the transitions.
  bool UsesRule(int64_t utc_seconds) const;

  Parts parts_;
  std::optional<PosixTimeZone> rule_;  // the parsed footer, when there is one
};

// Parses a TZif file (RFC 8536, versions 1, 2, 3 and 4; the 64-bit data of version 2 and up,
// and its footer). Leap-second records ("right/" zones) are refused: their times are not UTC.
// InvalidInput naming what is wrong for truncated, inconsistent or out-of-range data; never
// reads outside `bytes`.
Result<TimeZone> ParseTzif(std::string_view bytes);

// A zone with no transitions, ruled by a POSIX TZ string ("CET-1CEST,M3.5.0,M10.5.0/3").
Result<TimeZone> TimeZoneFromPosix(std::string_view tz);

// UTC, built in, so that it works without any zoneinfo file.
TimeZone Utc();

}  // namespace rg::core
