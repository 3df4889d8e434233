#include "reconciler/core/tzif.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reconciler/core/time_format.h"

namespace rg::core {
namespace {

// The system's tzdata (scripts/install-deps.sh installs it).
std::string ZoneBytes(const std::string& name) {
  std::ifstream in("/usr/share/zoneinfo/" + name, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TimeZone Zone(const std::string& name) {
  const std::string bytes = ZoneBytes(name);
  INFO("zone " << name << " from /usr/share/zoneinfo (is tzdata installed?)");
  REQUIRE_FALSE(bytes.empty());
  auto zone = ParseTzif(bytes);
  INFO((zone.ok() ? std::string() : zone.error().message()));
  REQUIRE(zone.ok());
  return std::move(zone).value();
}

// "2026-03-29T01:00:00Z" in seconds.
int64_t At(const char* rfc3339) {
  const auto ms = ParseRfc3339Millis(rfc3339);
  REQUIRE(ms.has_value());
  return *ms / 1000;
}

// ---- Hand-built TZif files -------------------------------------------------------------------

void Be32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}
void Be64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

struct TypeSpec {
  int32_t offset;
  bool dst;
  uint8_t abbreviation_index;
};

struct DataSpec {
  std::vector<int64_t> times;
  std::vector<uint8_t> indices;
  std::vector<TypeSpec> types;
  std::string chars;  // NUL-separated abbreviations
};

// Header and data block; time_size 4 or 8.
std::string Block(char version, const DataSpec& d, int time_size) {
  std::string out = "TZif";
  out.push_back(version);
  out.append(15, '\0');
  for (const size_t count :
       {size_t{0}, size_t{0}, size_t{0}, d.times.size(), d.types.size(), d.chars.size()}) {
    Be32(out, static_cast<uint32_t>(count));
  }
  for (const int64_t t : d.times) {
    if (time_size == 8) {
      Be64(out, static_cast<uint64_t>(t));
    } else {
      Be32(out, static_cast<uint32_t>(t));
    }
  }
  for (const uint8_t i : d.indices) out.push_back(static_cast<char>(i));
  for (const TypeSpec& t : d.types) {
    Be32(out, static_cast<uint32_t>(t.offset));
    out.push_back(t.dst ? 1 : 0);
    out.push_back(static_cast<char>(t.abbreviation_index));
  }
  out += d.chars;
  return out;
}

std::string V1File(const DataSpec& d) { return Block('\0', d, 4); }

std::string V2File(char version, const DataSpec& d, const std::string& footer) {
  return Block(version, d, 4) + Block(version, d, 8) + "\n" + footer + "\n";
}

// Standard time "AAA" (+1 h) until 2001-09-09T01:46:40Z, then "BBB" (+2 h, DST).
DataSpec TwoTypes() {
  return {{1000000000}, {1}, {{3600, false, 0}, {7200, true, 4}}, std::string("AAA\0BBB\0", 8)};
}

TEST_CASE("real zones give the offsets of their rules, before and after the last transition",
          "[tzif]") {
  struct Row {
    const char* zone;
    const char* at;
    int32_t offset;
    bool dst;
    const char* abbreviation;
  };
  const std::vector<Row> rows = {
      {"Europe/Berlin", "2026-01-15T12:00:00Z", 3600, false, "CET"},
      {"Europe/Berlin", "2026-03-29T00:59:59Z", 3600, false, "CET"},
      {"Europe/Berlin", "2026-03-29T01:00:00Z", 7200, true, "CEST"},
      {"Europe/Berlin", "2026-10-25T00:59:59Z", 7200, true, "CEST"},
      {"Europe/Berlin", "2026-10-25T01:00:00Z", 3600, false, "CET"},
      {"Europe/Berlin", "2050-01-15T12:00:00Z", 3600, false, "CET"},
      {"Europe/Berlin", "2050-03-27T00:59:59Z", 3600, false, "CET"},
      {"Europe/Berlin", "2050-03-27T01:00:00Z", 7200, true, "CEST"},
      {"Europe/Berlin", "2050-10-30T00:59:59Z", 7200, true, "CEST"},
      {"Europe/Berlin", "2050-10-30T01:00:00Z", 3600, false, "CET"},
      {"Europe/Berlin", "1945-06-01T00:00:00Z", 10800, true, "CEMT"},
      {"America/New_York", "2026-03-08T06:59:59Z", -18000, false, "EST"},
      {"America/New_York", "2026-03-08T07:00:00Z", -14400, true, "EDT"},
      {"America/New_York", "2026-11-01T05:59:59Z", -14400, true, "EDT"},
      {"America/New_York", "2026-11-01T06:00:00Z", -18000, false, "EST"},
      {"America/New_York", "2050-07-01T00:00:00Z", -14400, true, "EDT"},
      {"America/New_York", "2050-12-01T00:00:00Z", -18000, false, "EST"},
      {"America/New_York", "1880-01-01T00:00:00Z", -17762, false, "LMT"},
      {"Australia/Lord_Howe", "2026-01-15T00:00:00Z", 39600, true, "+11"},
      {"Australia/Lord_Howe", "2026-07-15T00:00:00Z", 37800, false, "+1030"},
      {"Australia/Lord_Howe", "2026-10-03T15:29:59Z", 37800, false, "+1030"},
      {"Australia/Lord_Howe", "2026-10-03T15:30:00Z", 39600, true, "+11"},
      {"Australia/Lord_Howe", "2050-01-15T00:00:00Z", 39600, true, "+11"},
      {"Australia/Lord_Howe", "2050-07-15T00:00:00Z", 37800, false, "+1030"},
      {"Asia/Kolkata", "2026-01-15T00:00:00Z", 19800, false, "IST"},
      {"Asia/Kolkata", "2050-07-15T00:00:00Z", 19800, false, "IST"},
      {"UTC", "2026-01-15T00:00:00Z", 0, false, "UTC"},
      {"UTC", "2050-07-15T00:00:00Z", 0, false, "UTC"},
  };
  for (const Row& row : rows) {
    INFO(row.zone << " at " << row.at);
    const TimeZone zone = Zone(row.zone);
    const LocalTimeType& type = zone.TypeAt(At(row.at));
    CHECK(type.ut_offset == row.offset);
    CHECK(type.is_dst == row.dst);
    CHECK(type.abbreviation == row.abbreviation);
    CHECK(zone.UtOffsetAt(At(row.at)) == row.offset);
  }
}

TEST_CASE("the footer alone gives the answers of the explicit transitions", "[tzif]") {
  for (const char* name :
       {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"}) {
    INFO(name);
    const TimeZone zone = Zone(name);
    REQUIRE_FALSE(zone.footer().empty());
    const auto rule = TimeZoneFromPosix(zone.footer());
    REQUIRE(rule.ok());
    // From 2008 (the current US and EU rules are older) to past the last transition.
    const int64_t from = At("2008-01-01T00:00:00Z");
    const int64_t to = At("2045-01-01T00:00:00Z");
    // Plain comparisons in the loop: tens of thousands of Catch assertions would take seconds.
    std::optional<int64_t> differs;
    for (int64_t t = from; t < to && !differs; t += 6 * 3600 + 17) {
      if (!(zone.TypeAt(t) == rule->TypeAt(t))) differs = t;
    }
    CHECK((differs ? FormatRfc3339Seconds(*differs * 1000) : std::string("none")) == "none");
    for (const int64_t t : zone.transitions()) {
      // Fat files also hold transitions that change nothing (at 2^31 - 1, for 32-bit readers).
      if (t < from || zone.TypeAt(t - 1) == zone.TypeAt(t)) continue;
      INFO("transition " << FormatRfc3339Seconds(t * 1000));
      CHECK(rule->NextTransitionAfter(t - 1) == t);
      for (const int64_t near : {t - 1, t, t + 1}) CHECK(zone.TypeAt(near) == rule->TypeAt(near));
    }
  }
}

TEST_CASE("local wall times resolve to one instant, a gap's end or a first occurrence", "[tzif]") {
  using Kind = LocalResolution::Kind;
  struct Row {
    const char* zone;
    const char* local;  // wall time, written as if it were UTC
    Kind kind;
    const char* instant;
  };
  const std::vector<Row> rows = {
      {"Europe/Berlin", "2026-07-01T12:00:00Z", Kind::kUnique, "2026-07-01T10:00:00Z"},
      {"Europe/Berlin", "2026-03-29T01:59:59Z", Kind::kUnique, "2026-03-29T00:59:59Z"},
      {"Europe/Berlin", "2026-03-29T02:00:00Z", Kind::kGap, "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "2026-03-29T02:30:00Z", Kind::kGap, "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "2026-03-29T02:59:59Z", Kind::kGap, "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "2026-03-29T03:00:00Z", Kind::kUnique, "2026-03-29T01:00:00Z"},
      {"Europe/Berlin", "2026-10-25T01:59:59Z", Kind::kUnique, "2026-10-24T23:59:59Z"},
      {"Europe/Berlin", "2026-10-25T02:00:00Z", Kind::kAmbiguous, "2026-10-25T00:00:00Z"},
      {"Europe/Berlin", "2026-10-25T02:30:00Z", Kind::kAmbiguous, "2026-10-25T00:30:00Z"},
      {"Europe/Berlin", "2026-10-25T03:00:00Z", Kind::kUnique, "2026-10-25T02:00:00Z"},
      {"Europe/Berlin", "2050-03-27T02:30:00Z", Kind::kGap, "2050-03-27T01:00:00Z"},
      {"Europe/Berlin", "2050-10-30T02:30:00Z", Kind::kAmbiguous, "2050-10-30T00:30:00Z"},
      {"America/New_York", "2026-03-08T02:30:00Z", Kind::kGap, "2026-03-08T07:00:00Z"},
      {"America/New_York", "2026-11-01T01:30:00Z", Kind::kAmbiguous, "2026-11-01T05:30:00Z"},
      {"America/New_York", "2026-11-01T02:30:00Z", Kind::kUnique, "2026-11-01T07:30:00Z"},
      {"Australia/Lord_Howe", "2026-10-04T02:15:00Z", Kind::kGap, "2026-10-03T15:30:00Z"},
      {"Australia/Lord_Howe", "2026-10-04T02:30:00Z", Kind::kUnique, "2026-10-03T15:30:00Z"},
      {"Australia/Lord_Howe", "2026-04-05T01:45:00Z", Kind::kAmbiguous, "2026-04-04T14:45:00Z"},
      {"Asia/Kolkata", "2026-03-29T02:30:00Z", Kind::kUnique, "2026-03-28T21:00:00Z"},
      {"UTC", "2026-03-29T02:30:00Z", Kind::kUnique, "2026-03-29T02:30:00Z"},
  };
  for (const Row& row : rows) {
    INFO(row.zone << " local " << row.local);
    const LocalResolution r = Zone(row.zone).ResolveLocal(At(row.local));
    CHECK(r.kind == row.kind);
    CHECK(FormatRfc3339Seconds(r.instant * 1000) == row.instant);
  }
}

TEST_CASE("POSIX TZ strings", "[tzif]") {
  using Kind = PosixRuleDate::Kind;
  SECTION("parsed into their parts") {
    auto tz = ParsePosixTz("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
    REQUIRE(tz.ok());
    CHECK(tz->standard == LocalTimeType{37800, false, "+1030"});
    CHECK(tz->daylight == LocalTimeType{39600, true, "+11"});
    CHECK(tz->dst_start == PosixRuleDate{Kind::kMonthWeekDay, 0, 10, 1, 0, 7200});
    CHECK(tz->dst_end == PosixRuleDate{Kind::kMonthWeekDay, 0, 4, 1, 0, 7200});

    tz = ParsePosixTz("CET-1CEST,M3.5.0,M10.5.0/3");
    REQUIRE(tz.ok());
    CHECK(tz->daylight == LocalTimeType{7200, true, "CEST"});  // an hour ahead when unsaid
    CHECK(tz->dst_end.time == 3 * 3600);

    tz = ParsePosixTz("<-02>2<-01>,M3.5.0/-1,M10.5.0/0");
    REQUIRE(tz.ok());
    CHECK(tz->standard.ut_offset == -7200);
    CHECK(tz->dst_start.time == -3600);

    tz = ParsePosixTz("EST5EDT,0/0,J365/25");
    REQUIRE(tz.ok());
    CHECK(tz->dst_start == PosixRuleDate{Kind::kJulianZero, 0, 0, 0, 0, 0});
    CHECK(tz->dst_end == PosixRuleDate{Kind::kJulianNoLeap, 365, 0, 0, 0, 25 * 3600});

    tz = ParsePosixTz("XXX+3:15:30YYY2,J60/167:59:59,300/-167");
    REQUIRE(tz.ok());
    CHECK(tz->standard.ut_offset == -(3 * 3600 + 15 * 60 + 30));
    CHECK(tz->daylight->ut_offset == -2 * 3600);
    CHECK(tz->dst_start.time == 167 * 3600 + 59 * 60 + 59);
    CHECK(tz->dst_end.time == -167 * 3600);

    tz = ParsePosixTz("IST-5:30");
    REQUIRE(tz.ok());
    CHECK_FALSE(tz->daylight.has_value());

    tz = ParsePosixTz("EST5EDT");  // no rules: the US ones
    REQUIRE(tz.ok());
    CHECK(tz->dst_start == PosixRuleDate{Kind::kMonthWeekDay, 0, 3, 2, 0, 7200});
    CHECK(tz->dst_end == PosixRuleDate{Kind::kMonthWeekDay, 0, 11, 1, 0, 7200});
  }
  SECTION("refused with what was expected") {
    struct Row {
      const char* text;
      const char* expected;
    };
    const std::vector<Row> rows = {
        {"", "expected a standard time name"},
        {"EST", "expected the standard time offset"},
        {"ES5", "expected a standard time name"},
        {"<+0>0", "expected a standard time name"},
        {"<+03-3", "expected a standard time name"},
        {"EST25", "expected the standard time offset"},
        {"EST5:60", "expected the standard time offset"},
        {"EST5E", "expected a daylight time name"},
        {"EST5EDT,M3.2.0", "expected \",\" before the end rule"},
        {"EST5EDT;M3.2.0,M11.1.0", "expected the daylight time offset"},
        {"EST5EDT,M13.2.0,M11.1.0", "expected a start rule"},
        {"EST5EDT,M3.6.0,M11.1.0", "expected a start rule"},
        {"EST5EDT,M3.2.7,M11.1.0", "expected a start rule"},
        {"EST5EDT,M3.2.0,J0", "expected an end rule"},
        {"EST5EDT,M3.2.0,366", "expected an end rule"},
        {"EST5EDT,M3.2.0/168,M11.1.0", "expected a start rule"},
        {"EST5EDT,M3.2.0,M11.1.0x", "expected the end of the string"},
        {"EST5 EDT", "expected a daylight time name"},
    };
    for (const Row& row : rows) {
      INFO("\"" << row.text << "\"");
      const auto tz = ParsePosixTz(row.text);
      REQUIRE_FALSE(tz.ok());
      CHECK(tz.error().IsInvalidInput());
      CHECK_THAT(tz.error().message(), Catch::Contains(row.expected));
    }
  }
}

TEST_CASE("POSIX rules: negative times, times past 24 h, Julian days", "[tzif]") {
  struct Row {
    const char* tz;
    const char* at;
    int32_t offset;
  };
  const std::vector<Row> rows = {
      // Greenland since 2023: DST from Saturday 23:00 local (-1 h on Sunday), as the EU's 01:00Z.
      {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2026-03-29T00:59:59Z", -7200},
      {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2026-03-29T01:00:00Z", -3600},
      {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2026-10-25T00:59:59Z", -3600},
      {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2026-10-25T01:00:00Z", -7200},
      // Daylight time all year: the end (Dec 31, 25:00 DST) meets the next start.
      {"EST5EDT,0/0,J365/25", "2026-01-01T04:59:59Z", -14400},
      {"EST5EDT,0/0,J365/25", "2026-01-01T05:00:00Z", -14400},
      {"EST5EDT,0/0,J365/25", "2026-07-01T00:00:00Z", -14400},
      {"EST5EDT,0/0,J365/25", "2027-12-31T23:00:00Z", -14400},
      // Jn never counts February 29: J60 is March 1 in every year.
      {"AAA0BBB,J60/0,J300/0", "2024-02-29T23:59:59Z", 0},
      {"AAA0BBB,J60/0,J300/0", "2024-03-01T00:00:00Z", 3600},
      {"AAA0BBB,J60/0,J300/0", "2025-03-01T00:00:00Z", 3600},
      // n counts it: day 59 is February 29 in a leap year, March 1 otherwise.
      {"AAA0BBB,59/0,300/0", "2024-02-28T23:59:59Z", 0},
      {"AAA0BBB,59/0,300/0", "2024-02-29T00:00:00Z", 3600},
      {"AAA0BBB,59/0,300/0", "2025-02-28T23:59:59Z", 0},
      {"AAA0BBB,59/0,300/0", "2025-03-01T00:00:00Z", 3600},
      // Southern hemisphere: DST across the new year.
      {"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "2026-12-31T12:00:00Z", 39600},
      {"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "2027-06-30T12:00:00Z", 37800},
      // Week 5 is the last such weekday: February 2026 has four Sundays.
      {"AAA0BBB,M2.5.0/0,M11.1.0/0", "2026-02-21T23:59:59Z", 0},
      {"AAA0BBB,M2.5.0/0,M11.1.0/0", "2026-02-22T00:00:00Z", 3600},
  };
  for (const Row& row : rows) {
    INFO(row.tz << " at " << row.at);
    const auto zone = TimeZoneFromPosix(row.tz);
    REQUIRE(zone.ok());
    CHECK(zone->UtOffsetAt(At(row.at)) == row.offset);
  }
}

TEST_CASE("UTC is built in", "[tzif]") {
  const TimeZone utc = Utc();
  for (const int64_t t : {int64_t{-5000000000}, int64_t{0}, At("2026-03-29T01:00:00Z"),
                          int64_t{1} << 62, -(int64_t{1} << 62)}) {
    CHECK(utc.UtOffsetAt(t) == 0);
    CHECK(utc.TypeAt(t).abbreviation == "UTC");
  }
  CHECK_FALSE(utc.NextTransitionAfter(0).has_value());
  CHECK(utc.ResolveLocal(123456).kind == LocalResolution::Kind::kUnique);
  CHECK(utc.ResolveLocal(123456).instant == 123456);
}

TEST_CASE("hand-built TZif files of each version", "[tzif]") {
  const int64_t before = 999999999;
  const int64_t after = 1000000000;
  const int64_t much_later = At("2050-01-01T00:00:00Z");
  SECTION("version 1: 32-bit times, the last type stays after the last transition") {
    const auto zone = ParseTzif(V1File(TwoTypes()));
    REQUIRE(zone.ok());
    CHECK(zone->footer().empty());
    CHECK(zone->TypeAt(before) == LocalTimeType{3600, false, "AAA"});
    CHECK(zone->TypeAt(after) == LocalTimeType{7200, true, "BBB"});
    CHECK(zone->UtOffsetAt(much_later) == 7200);
    CHECK(zone->UtOffsetAt(-(int64_t{1} << 40)) == 3600);  // type 0 before the first
    CHECK(zone->NextTransitionAfter(0) == after);
    CHECK_FALSE(zone->NextTransitionAfter(after).has_value());
  }
  SECTION("version 2 with an empty footer: the last type stays") {
    const auto zone = ParseTzif(V2File('2', TwoTypes(), ""));
    REQUIRE(zone.ok());
    CHECK(zone->footer().empty());
    CHECK(zone->UtOffsetAt(before) == 3600);
    CHECK(zone->UtOffsetAt(much_later) == 7200);
  }
  SECTION("versions 2, 3 and 4 with a footer, which rules after the last transition") {
    for (const char version : {'2', '3', '4'}) {
      INFO("version " << version);
      const auto zone = ParseTzif(V2File(version, TwoTypes(), "AAA-1BBB,M3.5.0,M10.5.0/3"));
      REQUIRE(zone.ok());
      CHECK(zone->UtOffsetAt(before) == 3600);
      CHECK(zone->UtOffsetAt(At("2050-01-15T00:00:00Z")) == 3600);
      CHECK(zone->UtOffsetAt(At("2050-07-15T00:00:00Z")) == 7200);
    }
  }
  SECTION("version 2 whose 64-bit times reach beyond 32 bits") {
    DataSpec d = TwoTypes();
    d.times = {-(int64_t{1} << 59), int64_t{1} << 33};
    d.indices = {0, 1};
    const auto zone = ParseTzif(V2File('2', d, ""));
    REQUIRE(zone.ok());
    CHECK(zone->UtOffsetAt(int64_t{1} << 32) == 3600);
    CHECK(zone->UtOffsetAt(int64_t{1} << 34) == 7200);
  }
  SECTION("no transitions and a footer: the footer rules everywhere") {
    const auto zone =
        ParseTzif(V2File('2', {{}, {}, {{0, false, 0}}, std::string("UTC\0", 4)}, "UTC0"));
    REQUIRE(zone.ok());
    CHECK(zone->UtOffsetAt(0) == 0);
    CHECK(zone->TypeAt(0).abbreviation == "UTC");
  }
}

TEST_CASE("corrupt TZif bytes are refused with what is wrong", "[tzif]") {
  const std::string good = V2File('2', TwoTypes(), "AAA-1BBB,M3.5.0,M10.5.0/3");
  REQUIRE(ParseTzif(good).ok());
  const size_t v2_header = V1File(TwoTypes()).size();
  struct Row {
    const char* what;
    std::string bytes;
    const char* message;
  };
  auto patched = [&](size_t at, std::string_view with) {
    std::string out = good;
    out.replace(at, with.size(), with);
    return out;
  };
  DataSpec descending = TwoTypes();
  descending.times = {2000, 1000};
  descending.indices = {0, 1};
  DataSpec bad_index = TwoTypes();
  bad_index.indices = {2};
  DataSpec bad_offset = TwoTypes();
  bad_offset.types[1].offset = 93600;
  DataSpec bad_abbreviation = TwoTypes();
  bad_abbreviation.types[1].abbreviation_index = 8;
  DataSpec unterminated = TwoTypes();
  unterminated.chars = "AAA";
  unterminated.types[1].abbreviation_index = 0;
  DataSpec no_types = TwoTypes();
  no_types.types.clear();
  no_types.times.clear();
  no_types.indices.clear();
  const std::vector<Row> rows = {
      {"empty", "", "TZif: truncated: the first header needs 44 bytes, 0 remain"},
      {"bad magic", "TZip" + good.substr(4), "TZif: bad magic in the first header"},
      {"bad second magic", patched(v2_header, "TZix"), "TZif: bad magic in the second header"},
      {"version 5", patched(4, "5"), "TZif: unsupported version 5 (1 to 4 are read)"},
      {"version mismatch", patched(v2_header + 4, "3"),
       "TZif: the headers disagree on the version (2 and 3)"},
      {"a huge timecnt", patched(v2_header + 32, "\xff\xff\xff\xff"),
       "TZif: truncated: the data block needs"},
      {"a huge v1 charcnt", patched(40, "\x7f\xff\xff\xff"),
       "TZif: truncated: the version 1 data block needs"},
      {"typecnt 0", V1File(no_types), "TZif: typecnt is 0"},
      {"isutcnt neither 0 nor typecnt", patched(v2_header + 20, std::string("\0\0\0\1", 4)),
       "TZif: isutcnt 1 is neither 0 nor typecnt"},
      {"leap seconds", patched(v2_header + 28, std::string("\0\0\0\1", 4)),
       "TZif: leap-second records are not supported"},
      {"descending transitions", V1File(descending),
       "time zone: transition 1 is not later than the one before it"},
      {"a type index out of range", V1File(bad_index),
       "time zone: transition 0 names local time type 2 of 2"},
      {"an offset out of range", V1File(bad_offset),
       "time zone: UT offset 93600 s is outside [-89999, 93599]"},
      {"an abbreviation outside the designations", V1File(bad_abbreviation),
       "TZif: the abbreviation of type 1 is outside the designations or not NUL-terminated"},
      {"an abbreviation without its NUL", V1File(unterminated),
       "TZif: the abbreviation of type 0 is outside the designations or not NUL-terminated"},
      {"no footer", good.substr(0, good.rfind('\n', good.size() - 2)),
       "TZif: the footer does not start with a newline"},
      {"a footer cut", good.substr(0, good.size() - 1),
       "TZif: the footer does not end with a newline"},
      {"bytes after the footer", good + "x", "TZif: 1 stray bytes after the footer"},
      {"bytes after version 1 data", V1File(TwoTypes()) + "xy",
       "TZif: 2 stray bytes after the data"},
      {"a bad footer", V2File('2', TwoTypes(), "AAA-1BBB,M3.5.0"),
       "time zone footer: TZ string \"AAA-1BBB,M3.5.0\": expected \",\" before the end rule"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const auto zone = ParseTzif(row.bytes);
    REQUIRE_FALSE(zone.ok());
    CHECK(zone.error().IsInvalidInput());
    CHECK_THAT(zone.error().message(), Catch::StartsWith(row.message));
  }
}

TEST_CASE("no cut or damaged TZif file crashes the parser", "[tzif]") {
  const std::string berlin = ZoneBytes("Europe/Berlin");
  REQUIRE(ParseTzif(berlin).ok());
  // Every proper prefix is refused.
  for (size_t n = 0; n < berlin.size(); ++n) {
    const auto zone = ParseTzif(std::string_view(berlin).substr(0, n));
    INFO("prefix of " << n << " bytes");
    CHECK_FALSE(zone.ok());
  }
  // Random damage: parsed or refused, and a zone that parses answers its queries.
  std::mt19937 random(20260329);
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = berlin;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) {
      bytes[random() % bytes.size()] = static_cast<char>(random() % 256);
    }
    const auto zone = ParseTzif(bytes);
    if (!zone.ok()) continue;
    const auto t = static_cast<int64_t>(random()) * 997 - (int64_t{1} << 40);
    (void)zone->UtOffsetAt(t);
    (void)zone->ResolveLocal(t);
    (void)zone->NextTransitionAfter(t);
  }
}

TEST_CASE("civil date arithmetic", "[tzif]") {
  struct Row {
    int64_t year;
    int month;
    int day;
    int64_t days;
    int weekday;
  };
  const std::vector<Row> rows = {
      {1970, 1, 1, 0, 4},       {1969, 12, 31, -1, 3},      {2000, 2, 29, 11016, 2},
      {2026, 3, 29, 20541, 0},  {2100, 3, 1, 47541, 1},     {1600, 1, 1, -135140, 6},
      {-1, 12, 31, -719529, 5}, {9999, 12, 31, 2932896, 5},
  };
  for (const Row& row : rows) {
    INFO(row.year << "-" << row.month << "-" << row.day);
    CHECK(DaysFromCivil(row.year, row.month, row.day) == row.days);
    const CivilDate date = CivilFromDays(row.days);
    CHECK(date.year == row.year);
    CHECK(date.month == row.month);
    CHECK(date.day == row.day);
    CHECK(WeekdayFromDays(row.days) == row.weekday);
  }
  CHECK(DaysInMonth(2024, 2) == 29);
  CHECK(DaysInMonth(2100, 2) == 28);
  CHECK(DaysInMonth(2000, 2) == 29);
  CHECK(DaysInMonth(2026, 4) == 30);
  for (int64_t d = -800000; d < 800000; d += 13) {
    const CivilDate date = CivilFromDays(d);
    REQUIRE(DaysFromCivil(date.year, date.month, date.day) == d);
  }
}

}  // namespace
}  // namespace rg::core
