#include "reconciler/core/schedule.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "reconciler/core/time_format.h"

namespace rg::core {
namespace {

// The system's tzdata (scripts/install-deps.sh installs it); "UTC" is the built-in zone.
TimeZone Zone(const std::string& name) {
  if (name == "UTC") return Utc();
  std::ifstream in("/usr/share/zoneinfo/" + name, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  INFO("zone " << name << " from /usr/share/zoneinfo (is tzdata installed?)");
  auto zone = ParseTzif(bytes.str());
  REQUIRE(zone.ok());
  return std::move(zone).value();
}

CronExpression Cron(const char* text) {
  auto cron = ParseCron(text);
  INFO(text);
  REQUIRE(cron.ok());
  return *cron;
}

int64_t At(const char* rfc3339) {
  const auto ms = ParseRfc3339Millis(rfc3339);
  REQUIRE(ms.has_value());
  return *ms / 1000;
}

std::string Show(std::optional<int64_t> t) {
  return t ? FormatRfc3339Seconds(*t * 1000) : std::string("none");
}

struct Row {
  const char* zone;
  const char* cron;
  const char* at;
  const char* want;  // "none" for no slot
};

TEST_CASE("the latest slot at or before now", "[schedule]") {
  const std::vector<Row> rows = {
      {"UTC", "*/15 * * * *", "2026-03-10T10:07:30Z", "2026-03-10T10:00:00Z"},
      {"UTC", "*/15 * * * *", "2026-03-10T10:14:59Z", "2026-03-10T10:00:00Z"},
      {"UTC", "*/15 * * * *", "2026-03-10T10:15:00Z", "2026-03-10T10:15:00Z"},
      {"UTC", "*/15 * * * *", "2026-01-01T00:05:00Z", "2026-01-01T00:00:00Z"},
      {"UTC", "0 3 * * *", "2026-03-10T02:59:59Z", "2026-03-09T03:00:00Z"},
      {"UTC", "0 3 * * *", "2026-03-10T03:00:00Z", "2026-03-10T03:00:00Z"},
      {"UTC", "0 3 * * *", "2026-01-01T00:00:00Z", "2025-12-31T03:00:00Z"},
      // Berlin, spring: 02:30 does not exist on 2026-03-29; it fires at 03:00 CEST = 01:00Z.
      {"Europe/Berlin", "30 2 * * *", "2026-03-29T00:59:59Z", "2026-03-28T01:30:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-03-29T12:00:00Z", "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-03-30T00:29:59Z", "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-03-30T00:30:00Z", "2026-03-30T00:30:00Z"},
      // Berlin, autumn: 02:30 occurs twice on 2026-10-25; only the first (CEST) is a slot.
      {"Europe/Berlin", "30 2 * * *", "2026-10-25T00:29:59Z", "2026-10-24T00:30:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-10-25T00:30:00Z", "2026-10-25T00:30:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-10-25T01:30:00Z", "2026-10-25T00:30:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-10-26T01:29:59Z", "2026-10-25T00:30:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-10-26T01:30:00Z", "2026-10-26T01:30:00Z"},
      // Several skipped wall times collapse into the one instant at the end of the gap.
      {"Europe/Berlin", "0 2 * * *", "2026-03-29T00:59:59Z", "2026-03-28T01:00:00Z"},
      {"Europe/Berlin", "0 2 * * *", "2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "*/30 2 * * *", "2026-03-29T05:00:00Z", "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "*/30 2 * * *", "2026-03-29T00:59:59Z", "2026-03-28T01:30:00Z"},
      // The same in 2050, where only the footer's rule speaks.
      {"Europe/Berlin", "30 2 * * *", "2050-03-27T12:00:00Z", "2050-03-27T01:00:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2050-10-30T01:45:00Z", "2050-10-30T00:30:00Z"},
      // New York, 2026-03-08 (02:00 EST -> 03:00 EDT) and 2026-11-01 (02:00 EDT -> 01:00 EST).
      {"America/New_York", "30 2 * * *", "2026-03-08T06:59:59Z", "2026-03-07T07:30:00Z"},
      {"America/New_York", "30 2 * * *", "2026-03-08T07:00:00Z", "2026-03-08T07:00:00Z"},
      {"America/New_York", "30 1 * * *", "2026-11-01T06:45:00Z", "2026-11-01T05:30:00Z"},
      {"America/New_York", "30 2 * * *", "2026-11-01T07:30:00Z", "2026-11-01T07:30:00Z"},
      // Lord Howe: a 30-minute change, 02:00 -> 02:30 on 2026-10-04.
      {"Australia/Lord_Howe", "15 2 * * *", "2026-10-03T16:00:00Z", "2026-10-03T15:30:00Z"},
      {"Asia/Kolkata", "0 9 * * *", "2026-03-10T04:00:00Z", "2026-03-10T03:30:00Z"},
      // Friday or the 13th: the last slot before Thursday 2026-03-12 is Friday the 6th, the
      // last before Tuesday 2026-04-14 is Monday the 13th.
      {"UTC", "0 12 13 * 5", "2026-03-12T00:00:00Z", "2026-03-06T12:00:00Z"},
      {"UTC", "0 12 13 * 5", "2026-04-14T00:00:00Z", "2026-04-13T12:00:00Z"},
      {"UTC", "0 12 13 * FRI", "2026-03-13T12:00:00Z", "2026-03-13T12:00:00Z"},
      // A stepped star ANDs: the 1st, 11th, 21st or 31st that is a Monday.
      {"UTC", "0 12 */10 * MON", "2026-05-31T00:00:00Z", "2026-05-11T12:00:00Z"},
      {"UTC", "0 12 */10 * MON", "2026-06-30T00:00:00Z", "2026-06-01T12:00:00Z"},
      // February 29, years back, without walking minute by minute.
      {"UTC", "0 0 29 2 *", "2027-06-01T00:00:00Z", "2024-02-29T00:00:00Z"},
      {"UTC", "0 0 29 2 *", "2024-02-28T23:59:59Z", "2020-02-29T00:00:00Z"},
      {"UTC", "0 0 29 2 *", "2104-01-01T00:00:00Z", "2096-02-29T00:00:00Z"},
      {"Europe/Berlin", "0 0 29 2 *", "2027-06-01T00:00:00Z", "2024-02-28T23:00:00Z"},
      // Feb 29 on a Sunday (the star of */7 ANDs): 2004, then 2032; beyond the look-back.
      {"UTC", "0 0 29 2 */7", "2030-01-01T00:00:00Z", "none"},
      {"UTC", "0 0 29 2 */7", "2011-01-01T00:00:00Z", "2004-02-29T00:00:00Z"},
      {"UTC", "0 0 1 1 *", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"},
      {"UTC", "59 23 31 12 *", "2026-06-01T00:00:00Z", "2025-12-31T23:59:00Z"},
  };
  for (const Row& row : rows) {
    INFO(row.zone << " \"" << row.cron << "\" at " << row.at);
    CHECK(Show(LatestSlotAtOrBefore(Cron(row.cron), Zone(row.zone), At(row.at))) == row.want);
  }
}

TEST_CASE("the next slot after an instant", "[schedule]") {
  const std::vector<Row> rows = {
      {"UTC", "*/15 * * * *", "2026-03-10T10:07:30Z", "2026-03-10T10:15:00Z"},
      {"UTC", "*/15 * * * *", "2026-03-10T10:15:00Z", "2026-03-10T10:30:00Z"},
      {"UTC", "*/15 * * * *", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z"},
      {"UTC", "0 3 * * *", "2026-03-10T03:00:00Z", "2026-03-11T03:00:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-03-29T00:59:59Z", "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
      {"Europe/Berlin", "0 2 * * *", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "*/30 2 * * *", "2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2050-10-29T12:00:00Z", "2050-10-30T00:30:00Z"},
      {"Europe/Berlin", "30 2 * * *", "2050-10-30T00:30:00Z", "2050-10-31T01:30:00Z"},
      {"America/New_York", "30 2 * * *", "2026-03-07T12:00:00Z", "2026-03-08T07:00:00Z"},
      {"America/New_York", "30 1 * * *", "2026-10-31T12:00:00Z", "2026-11-01T05:30:00Z"},
      {"America/New_York", "30 1 * * *", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"},
      {"Australia/Lord_Howe", "0 2 * * *", "2026-10-03T12:00:00Z", "2026-10-03T15:30:00Z"},
      {"Australia/Lord_Howe", "45 1 * * *", "2026-04-04T12:00:00Z", "2026-04-04T14:45:00Z"},
      {"Australia/Lord_Howe", "45 1 * * *", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"},
      {"UTC", "0 12 13 * 5", "2026-03-06T12:00:00Z", "2026-03-13T12:00:00Z"},
      {"UTC", "0 12 13 * 5", "2026-04-10T12:00:00Z", "2026-04-13T12:00:00Z"},
      {"UTC", "0 0 29 2 *", "2024-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
      {"UTC", "0 0 29 2 *", "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z"},
      {"UTC", "0 0 29 2 */7", "2026-01-01T00:00:00Z", "2032-02-29T00:00:00Z"},
      {"UTC", "0 0 29 2 */7", "2005-01-01T00:00:00Z", "none"},
  };
  for (const Row& row : rows) {
    INFO(row.zone << " \"" << row.cron << "\" after " << row.at);
    CHECK(Show(NextSlotAfter(Cron(row.cron), Zone(row.zone), At(row.at))) == row.want);
  }
}

// Every slot instant of `cron` in `zone` whose wall time lies in [from - 2 days, to + 2 days],
// by trying every minute.
std::set<int64_t> SlotsByBruteForce(const CronExpression& cron, const TimeZone& zone, int64_t from,
                                    int64_t to) {
  std::set<int64_t> slots;
  for (int64_t m = (from - 2 * 86400) / 60; m <= (to + 2 * 86400) / 60; ++m) {
    const int64_t day = m / 1440;  // the windows are after 1970
    const CivilDate date = CivilFromDays(day);
    const auto minute_of_day = static_cast<size_t>(m % 1440);
    if (cron.months.test(static_cast<size_t>(date.month)) &&
        cron.MatchesDay(date.day, WeekdayFromDays(day)) && cron.hours.test(minute_of_day / 60) &&
        cron.minutes.test(minute_of_day % 60)) {
      slots.insert(zone.ResolveLocal(m * 60).instant);
    }
  }
  return slots;
}

TEST_CASE("slots walked forward and back are every wall time's instant, once", "[schedule]") {
  struct Walk {
    const char* zone;
    const char* cron;
    const char* from;
    const char* to;
    std::vector<const char*> want;  // empty: check against the brute force only
  };
  const std::vector<Walk> walks = {
      {"Europe/Berlin",
       "*/30 2 * * *",
       "2026-03-28T00:00:00Z",
       "2026-03-30T23:59:59Z",
       {"2026-03-28T01:00:00Z", "2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z",
        "2026-03-30T00:00:00Z", "2026-03-30T00:30:00Z"}},
      // 02:00 and 02:30 CET are skipped into 03:00 CEST, itself a slot: one instant.
      {"Europe/Berlin",
       "*/30 1-3 * * *",
       "2026-03-28T23:00:00Z",
       "2026-03-29T03:00:00Z",
       {"2026-03-29T00:00:00Z", "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z",
        "2026-03-29T01:30:00Z"}},
      // 02:00 and 02:30 occur twice: the CET ones (01:00Z, 01:30Z) are no slots.
      {"Europe/Berlin",
       "*/30 1-3 * * *",
       "2026-10-24T22:00:00Z",
       "2026-10-25T04:00:00Z",
       {"2026-10-24T23:00:00Z", "2026-10-24T23:30:00Z", "2026-10-25T00:00:00Z",
        "2026-10-25T00:30:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:30:00Z"}},
      {"Australia/Lord_Howe",
       "*/15 2 * * *",
       "2026-10-03T15:00:00Z",
       "2026-10-03T16:00:00Z",
       {"2026-10-03T15:30:00Z", "2026-10-03T15:45:00Z"}},
      {"Europe/Berlin", "*/10 * * * *", "2026-03-28T00:00:00Z", "2026-03-30T00:00:00Z", {}},
      {"Europe/Berlin", "*/10 * * * *", "2026-10-24T00:00:00Z", "2026-10-26T00:00:00Z", {}},
      {"Europe/Berlin", "7 1-3 * * *", "2050-10-29T00:00:00Z", "2050-10-31T00:00:00Z", {}},
      {"America/New_York", "*/20 0-4 * * *", "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z", {}},
      {"America/New_York", "*/20 0-4 * * *", "2026-10-31T00:00:00Z", "2026-11-03T00:00:00Z", {}},
      {"Australia/Lord_Howe", "*/5 1-2 * * *", "2026-04-03T00:00:00Z", "2026-04-06T00:00:00Z", {}},
      {"Australia/Lord_Howe", "*/5 1-2 * * *", "2026-10-02T00:00:00Z", "2026-10-05T00:00:00Z", {}},
  };
  for (const Walk& walk : walks) {
    INFO(walk.zone << " \"" << walk.cron << "\" from " << walk.from << " to " << walk.to);
    const CronExpression cron = Cron(walk.cron);
    const TimeZone zone = Zone(walk.zone);
    const int64_t from = At(walk.from);
    const int64_t to = At(walk.to);
    std::vector<int64_t> forward;
    for (auto t = NextSlotAfter(cron, zone, from - 1); t && *t <= to;
         t = NextSlotAfter(cron, zone, *t)) {
      forward.push_back(*t);
    }
    std::vector<int64_t> back;
    for (auto t = LatestSlotAtOrBefore(cron, zone, to); t && *t >= from;
         t = LatestSlotAtOrBefore(cron, zone, *t - 1)) {
      back.insert(back.begin(), *t);
    }
    CHECK(forward == back);
    std::vector<int64_t> brute;
    for (const int64_t t : SlotsByBruteForce(cron, zone, from, to)) {
      if (t >= from && t <= to) brute.push_back(t);
    }
    CHECK(forward == brute);
    if (!walk.want.empty()) {
      std::vector<std::string> shown;
      for (const int64_t t : forward) shown.push_back(Show(t));
      CHECK(shown == std::vector<std::string>(walk.want.begin(), walk.want.end()));
    }
  }
}

TEST_CASE("slot id suffixes are the instant's minute in UTC", "[schedule]") {
  struct SuffixRow {
    int64_t at;
    const char* want;
  };
  const std::vector<SuffixRow> rows = {
      {0, "197001010000"},
      {59, "197001010000"},
      {-1, "196912312359"},
      {At("2026-03-29T01:00:00Z"), "202603290100"},
      {At("2026-03-29T01:00:59Z"), "202603290100"},
      {At("2026-10-25T00:30:00Z"), "202610250030"},
      {At("2024-02-29T23:59:00Z"), "202402292359"},
      {At("9999-12-31T23:59:59Z"), "999912312359"},
  };
  for (const SuffixRow& row : rows) {
    INFO(row.at);
    CHECK(SlotIdSuffix(row.at) == row.want);
  }
  // A slot found in Berlin is named by its UTC minute.
  const auto slot =
      LatestSlotAtOrBefore(Cron("30 2 * * *"), Zone("Europe/Berlin"), At("2026-03-29T12:00:00Z"));
  REQUIRE(slot.has_value());
  CHECK(SlotIdSuffix(*slot) == "202603290100");
}

}  // namespace
}  // namespace rg::core
