#pragma once
// The slots of a scheduled job (DESIGN §3.4, "Schedules"): pure functions of a cron
// expression, a time zone and an instant; the clock is the caller's.
//
// A slot is a local wall time (to the minute) that the cron fields match in the zone; its
// identity is the UTC instant it stands for. A local time skipped by a DST change stands for
// the end of the gap (the first instant after the change), so several skipped times collapse
// into one slot; a local time that occurs twice stands for its first occurrence only.

#include <cstdint>
#include <optional>
#include <string>

#include "reconciler/core/cron.h"
#include "reconciler/core/tzif.h"

namespace rg::core {

// How far LatestSlotAtOrBefore looks back and NextSlotAfter looks ahead, in days: eight years
// and two days. Any expression that fires at all fires within that span except those that
// also tie a February 29 to a weekday ("0 0 29 2 */7"), which may wait 28 years: Feb 29
// comes every four years, and eight covers the century years that skip it (2096 to 2104).
inline constexpr int64_t kSlotSearchDays = 8 * 366 + 2;

// The instant (UTC seconds) of the latest slot at or before `now_utc_seconds`; nullopt when
// there is none within kSlotSearchDays.
std::optional<int64_t> LatestSlotAtOrBefore(const CronExpression& cron, const TimeZone& zone,
                                            int64_t now_utc_seconds);

// The instant of the first slot strictly after `utc_seconds`; nullopt when there is none
// within kSlotSearchDays.
std::optional<int64_t> NextSlotAfter(const CronExpression& cron, const TimeZone& zone,
                                     int64_t utc_seconds);

// "YYYYMMDDHHMM" of the instant in UTC, the suffix of a slot's submission id (DESIGN §2.1).
// REQUIRES: the instant lies in the years 0000-9999
std::string SlotIdSuffix(int64_t utc_seconds);

}  // namespace rg::core
