#include "reconciler/core/schedule.h"

#include <algorithm>
#include <string>
#include <utility>

#include "reconciler/core/time_format.h"

namespace rg::core {

namespace {

constexpr int64_t kSecondsPerDay = 86400;
constexpr int64_t kMinutesPerDay = 1440;
// Beyond ±2^40 s (about 35,000 years) there are no slots: the searches stay far from overflow.
constexpr int64_t kSlotInstantLimit = int64_t{1} << 40;

int64_t FloorDivide(int64_t a, int64_t b) {
  return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0);
}

// The highest set bit at or below `from`, or -1.
template <size_t N>
int PrevBit(const std::bitset<N>& bits, int from) {
  for (int i = from; i >= 0; --i) {
    if (bits.test(static_cast<size_t>(i))) return i;
  }
  return -1;
}

// The lowest set bit at or above `from`, or -1.
template <size_t N>
int NextBit(const std::bitset<N>& bits, int from) {
  for (int i = from; i < static_cast<int>(N); ++i) {
    if (bits.test(static_cast<size_t>(i))) return i;
  }
  return -1;
}

// A local wall time as minutes since 1970-01-01T00:00 on the local clock, taken apart.
struct WallMinute {
  int64_t day;     // days since 1970-01-01
  int64_t start;   // the minute the day starts at
  CivilDate date;  // of `day`
  int hour;
  int minute;
};

WallMinute Split(int64_t minutes) {
  const int64_t day = FloorDivide(minutes, kMinutesPerDay);
  const auto of_day = static_cast<int>(minutes - day * kMinutesPerDay);
  return {day, day * kMinutesPerDay, CivilFromDays(day), of_day / 60, of_day % 60};
}

bool MonthMatches(const CronExpression& cron, const WallMinute& t) {
  return cron.months.test(static_cast<size_t>(t.date.month));
}

bool DayMatches(const CronExpression& cron, const WallMinute& t) {
  return cron.MatchesDay(t.date.day, WeekdayFromDays(t.day));
}

// The latest wall minute at or before `m`, and not before `floor`, that the fields match.
// It skips whole months, days and hours that cannot match rather than minutes.
std::optional<int64_t> PrevMatch(const CronExpression& cron, int64_t m, int64_t floor) {
  while (m >= floor) {
    const WallMinute t = Split(m);
    if (!MonthMatches(cron, t)) {  // to the last minute of the month before
      m = DaysFromCivil(t.date.year, t.date.month, 1) * kMinutesPerDay - 1;
      continue;
    }
    const int hour = DayMatches(cron, t) ? PrevBit(cron.hours, t.hour) : -1;
    if (hour < 0) {  // to the last minute of the day before
      m = t.start - 1;
      continue;
    }
    const int minute = PrevBit(cron.minutes, hour == t.hour ? t.minute : 59);
    if (minute < 0) {  // to the last minute of the hour before
      m = t.start + int64_t{hour} * 60 - 1;
      continue;
    }
    return t.start + int64_t{hour} * 60 + minute;
  }
  return std::nullopt;
}

// The earliest wall minute at or after `m`, and not after `ceiling`, that the fields match.
std::optional<int64_t> NextMatch(const CronExpression& cron, int64_t m, int64_t ceiling) {
  while (m <= ceiling) {
    const WallMinute t = Split(m);
    if (!MonthMatches(cron, t)) {  // to the first minute of the month after
      m = (DaysFromCivil(t.date.year, t.date.month, 1) + DaysInMonth(t.date.year, t.date.month)) *
          kMinutesPerDay;
      continue;
    }
    const int hour = DayMatches(cron, t) ? NextBit(cron.hours, t.hour) : -1;
    if (hour < 0) {  // to the first minute of the day after
      m = t.start + kMinutesPerDay;
      continue;
    }
    const int minute = NextBit(cron.minutes, hour == t.hour ? t.minute : 0);
    if (minute < 0) {  // to the first minute of the hour after
      m = t.start + int64_t{hour + 1} * 60;
      continue;
    }
    return t.start + int64_t{hour} * 60 + minute;
  }
  return std::nullopt;
}

// The least and greatest UT offsets in effect between two instants.
std::pair<int32_t, int32_t> OffsetRange(const TimeZone& zone, int64_t from, int64_t to) {
  int32_t least = zone.UtOffsetAt(from);
  int32_t greatest = least;
  int64_t at = from;
  while (const std::optional<int64_t> next = zone.NextTransitionAfter(at)) {
    if (*next > to) break;
    const int32_t offset = zone.UtOffsetAt(*next);
    least = std::min(least, offset);
    greatest = std::max(greatest, offset);
    at = *next;
  }
  return {least, greatest};
}

// The instant a slot at wall minute `m` stands for: its one or first occurrence, or the end
// of the DST gap that skips it.
int64_t SlotInstant(const TimeZone& zone, int64_t m) { return zone.ResolveLocal(m * 60).instant; }

}  // namespace

// Slot instants never decrease as wall times increase (a skipped time maps to the end of its
// gap, a repeated one to its first occurrence), so the walk goes back over matching wall times
// from one whose instant is surely after now, and stops at the first at or before now.
std::optional<int64_t> LatestSlotAtOrBefore(const CronExpression& cron, const TimeZone& zone,
                                            int64_t now_utc_seconds) {
  const int64_t now = now_utc_seconds;
  if (now < -kSlotInstantLimit || now > kSlotInstantLimit) return std::nullopt;
  // A wall time after now + the greatest offset around now stands for an instant after now.
  const int32_t greatest =
      OffsetRange(zone, now - 2 * kSecondsPerDay, now + 2 * kSecondsPerDay).second;
  int64_t m = FloorDivide(now + greatest, 60);
  const int64_t floor = m - kSlotSearchDays * kMinutesPerDay;
  while (const std::optional<int64_t> wall = PrevMatch(cron, m, floor)) {
    const int64_t slot = SlotInstant(zone, *wall);
    if (slot <= now) return slot;
    m = *wall - 1;
  }
  return std::nullopt;
}

// The mirror image: forward from a wall time whose instant is surely at or before `after`.
std::optional<int64_t> NextSlotAfter(const CronExpression& cron, const TimeZone& zone,
                                     int64_t utc_seconds) {
  const int64_t after = utc_seconds;
  if (after < -kSlotInstantLimit || after > kSlotInstantLimit) return std::nullopt;
  const int32_t least =
      OffsetRange(zone, after - 2 * kSecondsPerDay, after + 2 * kSecondsPerDay).first;
  int64_t m = FloorDivide(after + least, 60);
  const int64_t ceiling = m + kSlotSearchDays * kMinutesPerDay;
  while (const std::optional<int64_t> wall = NextMatch(cron, m, ceiling)) {
    const int64_t slot = SlotInstant(zone, *wall);
    if (slot > after) return slot;
    m = *wall + 1;
  }
  return std::nullopt;
}

std::string SlotIdSuffix(int64_t utc_seconds) {
  // "2026-03-29T01:00:00Z" -> "202603290100": the one way times are written, its digits.
  std::string digits;
  for (const char c : FormatRfc3339Seconds(utc_seconds * 1000).substr(0, 16)) {
    if (c >= '0' && c <= '9') digits += c;
  }
  return digits;
}

}  // namespace rg::core
