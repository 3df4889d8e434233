#include "reconciler/core/cron.h"

#include <bitset>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace rg::core {
namespace {

template <size_t N>
std::vector<int> Values(const std::bitset<N>& bits) {
  std::vector<int> out;
  for (size_t i = 0; i < N; ++i) {
    if (bits.test(i)) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<int> FieldValues(const CronExpression& cron, const std::string& field) {
  if (field == "minute") return Values(cron.minutes);
  if (field == "hour") return Values(cron.hours);
  if (field == "day-of-month") return Values(cron.days_of_month);
  if (field == "month") return Values(cron.months);
  return Values(cron.days_of_week);
}

std::vector<int> Range(int low, int high, int step = 1) {
  std::vector<int> out;
  for (int v = low; v <= high; v += step) out.push_back(v);
  return out;
}

TEST_CASE("cron fields parse into the values they allow", "[cron]") {
  struct Row {
    const char* expression;
    const char* field;
    std::vector<int> want;
  };
  const std::vector<Row> rows = {
      {"* * * * *", "minute", Range(0, 59)},
      {"* * * * *", "hour", Range(0, 23)},
      {"* * * * *", "day-of-month", Range(1, 31)},
      {"* * * * *", "month", Range(1, 12)},
      {"* * * * *", "day-of-week", Range(0, 6)},
      {"5 * * * *", "minute", {5}},
      {"0,15,30,45 * * * *", "minute", {0, 15, 30, 45}},
      {"* 9-17 * * *", "hour", Range(9, 17)},
      {"*/15 * * * *", "minute", {0, 15, 30, 45}},
      {"*/7 * * * *", "minute", Range(0, 59, 7)},
      {"* 8-18/4 * * *", "hour", {8, 12, 16}},
      {"10/20 * * * *", "minute", {10, 30, 50}},  // a/n is a-max/n, as Vixie reads it
      {"* * 1/10 * *", "day-of-month", {1, 11, 21, 31}},
      {"*/60 * * * *", "minute", {0}},
      {"1-3,10,20-22/2 * * * *", "minute", {1, 2, 3, 10, 20, 22}},
      {"3,1,2,1 * * * *", "minute", {1, 2, 3}},
      {"* * * JAN *", "month", {1}},
      {"* * * jan,Jul,DEC *", "month", {1, 7, 12}},
      {"* * * mar-may *", "month", {3, 4, 5}},
      {"* * * FEB-NOV/3 *", "month", {2, 5, 8, 11}},
      {"* * * */2 *", "month", {1, 3, 5, 7, 9, 11}},
      {"* * * * MON-FRI", "day-of-week", {1, 2, 3, 4, 5}},
      {"* * * * sun", "day-of-week", {0}},
      {"* * * * 7", "day-of-week", {0}},  // 7 is Sunday
      {"* * * * 5-7", "day-of-week", {0, 5, 6}},
      {"* * * * 0,7", "day-of-week", {0}},
      {"* * * * */2", "day-of-week", {0, 2, 4, 6}},
      {"* * * * */3", "day-of-week", {0, 3, 6}},  // 0, 3, 6 and 7 (= 0)
      {"* * * * Sat,sun", "day-of-week", {0, 6}},
      {"  0\t12  *  *  *  ", "hour", {12}},
      {"59 23 31 12 6", "minute", {59}},
      {"59 23 31 12 6", "hour", {23}},
      {"59 23 31 12 6", "day-of-month", {31}},
      {"59 23 31 12 6", "month", {12}},
      {"59 23 31 12 6", "day-of-week", {6}},
      {"00 07 01 01 00", "hour", {7}},
  };
  for (const Row& row : rows) {
    INFO(row.expression << " / " << row.field);
    const auto cron = ParseCron(row.expression);
    REQUIRE(cron.ok());
    CHECK(FieldValues(*cron, row.field) == row.want);
  }
}

TEST_CASE("cron day fields are restricted unless they start with a star", "[cron]") {
  struct Row {
    const char* expression;
    bool day_of_month_restricted;
    bool day_of_week_restricted;
  };
  const std::vector<Row> rows = {
      {"0 0 * * *", false, false},  {"0 0 13 * *", true, false},    {"0 0 * * FRI", false, true},
      {"0 0 13 * FRI", true, true}, {"0 0 */2 * FRI", false, true}, {"0 0 1-31 * 0-7", true, true},
      {"0 0 *,5 * 1", false, true},
  };
  for (const Row& row : rows) {
    INFO(row.expression);
    const auto cron = ParseCron(row.expression);
    REQUIRE(cron.ok());
    CHECK(cron->day_of_month_restricted == row.day_of_month_restricted);
    CHECK(cron->day_of_week_restricted == row.day_of_week_restricted);
  }
}

TEST_CASE("a day matches either restricted day field, or both when one is a star", "[cron]") {
  struct Row {
    const char* expression;
    int day_of_month;
    int weekday;
    bool want;
  };
  const std::vector<Row> rows = {
      // Both restricted: Friday OR the 13th.
      {"0 0 13 * 5", 13, 1, true},
      {"0 0 13 * 5", 14, 5, true},
      {"0 0 13 * 5", 13, 5, true},
      {"0 0 13 * 5", 14, 1, false},
      // One a bare star: only the other counts.
      {"0 0 13 * *", 13, 1, true},
      {"0 0 13 * *", 14, 5, false},
      {"0 0 * * 5", 14, 5, true},
      {"0 0 * * 5", 13, 1, false},
      {"0 0 * * *", 2, 3, true},
      // A stepped star is not restricted, so Vixie ANDs it: odd days that are Fridays.
      {"0 0 */2 * 5", 3, 5, true},
      {"0 0 */2 * 5", 2, 5, false},
      {"0 0 */2 * 5", 3, 4, false},
      {"0 0 13 * */2", 13, 2, true},
      {"0 0 13 * */2", 13, 1, false},
  };
  for (const Row& row : rows) {
    INFO(row.expression << " on day " << row.day_of_month << ", weekday " << row.weekday);
    const auto cron = ParseCron(row.expression);
    REQUIRE(cron.ok());
    CHECK(cron->MatchesDay(row.day_of_month, row.weekday) == row.want);
  }
}

TEST_CASE("cron macros stand for their five fields, and @reboot is refused", "[cron]") {
  struct Row {
    const char* macro;
    const char* fields;
  };
  const std::vector<Row> rows = {
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
      {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"}, {" @HOURLY ", "0 * * * *"}, {"@Daily", "0 0 * * *"},
  };
  for (const Row& row : rows) {
    INFO(row.macro);
    const auto macro = ParseCron(row.macro);
    const auto fields = ParseCron(row.fields);
    REQUIRE(macro.ok());
    REQUIRE(fields.ok());
    CHECK(macro->minutes == fields->minutes);
    CHECK(macro->hours == fields->hours);
    CHECK(macro->days_of_month == fields->days_of_month);
    CHECK(macro->months == fields->months);
    CHECK(macro->days_of_week == fields->days_of_week);
    CHECK(macro->day_of_month_restricted == fields->day_of_month_restricted);
    CHECK(macro->day_of_week_restricted == fields->day_of_week_restricted);
  }
}

TEST_CASE("bad cron expressions name the field, the token, the range and the column", "[cron]") {
  struct Row {
    const char* expression;
    int column;
    const char* message;
  };
  const std::vector<Row> rows = {
      {"", 1, "the cron expression is empty"},
      {"   ", 1, "the cron expression is empty"},
      {"0 0 * *", 8,
       "expected 5 fields (minute hour day-of-month month day-of-week), found 4 (the "
       "expression ends at column 8)"},
      {"0 0 * * * x", 11,
       "expected 5 fields (minute hour day-of-month month day-of-week), found 6: \"x\" at "
       "column 11 is one too many"},
      {"60 * * * *", 1, "minute: \"60\" at column 1 is out of range (allowed 0-59)"},
      {"0 24 * * *", 3, "hour: \"24\" at column 3 is out of range (allowed 0-23)"},
      {"0 0 32 * *", 5, "day-of-month: \"32\" at column 5 is out of range (allowed 1-31)"},
      {"0 0 0 * *", 5, "day-of-month: \"0\" at column 5 is out of range (allowed 1-31)"},
      {"0 0 * 13 *", 7, "month: \"13\" at column 7 is out of range (allowed 1-12 or JAN-DEC)"},
      {"0 0 * * 8", 9, "day-of-week: \"8\" at column 9 is out of range (allowed 0-7 or SUN-SAT)"},
      {"0 0 1-40 * *", 7, "day-of-month: \"40\" at column 7 is out of range (allowed 1-31)"},
      {"0 99999999999 * * *", 3,
       "hour: \"99999999999\" at column 3 is out of range (allowed 0-23)"},
      {"0 0 * FOO *", 7,
       "month: \"FOO\" at column 7 is not a number or a month name (allowed 1-12 or JAN-DEC)"},
      {"0 0 * JANUARY *", 7,
       "month: \"JANUARY\" at column 7 is not a number or a month name (allowed 1-12 or "
       "JAN-DEC)"},
      {"0 0 * * MON-FRIDAY", 13,
       "day-of-week: \"FRIDAY\" at column 13 is not a number or a day name (allowed 0-7 or "
       "SUN-SAT)"},
      {"0 MON * * *", 3, "hour: \"MON\" at column 3 is not a number (allowed 0-23)"},
      {"0 0 * * 1a", 9,
       "day-of-week: \"1a\" at column 9 is not a number or a day name (allowed 0-7 or SUN-SAT)"},
      {"0 5-3 * * *", 3, "hour: \"5-3\" at column 3 is a range that runs backwards (allowed 0-23)"},
      {"0 0 * * FRI-MON", 9,
       "day-of-week: \"FRI-MON\" at column 9 is a range that runs backwards (allowed 0-7 or "
       "SUN-SAT)"},
      {"*/0 * * * *", 3, "minute: \"0\" at column 3 is not a valid step (allowed 1-60)"},
      {"0 */25 * * *", 5, "hour: \"25\" at column 5 is not a valid step (allowed 1-24)"},
      {"0 0 * * */JAN", 11, "day-of-week: \"JAN\" at column 11 is not a valid step (allowed 1-8)"},
      {"0 0 * */x *", 9, "month: \"x\" at column 9 is not a valid step (allowed 1-12)"},
      {"1,,2 * * * *", 3, "minute: \"1,,2\" at column 3 has an empty list element (allowed 0-59)"},
      {"1, * * * *", 3, "minute: \"1,\" at column 3 has an empty list element (allowed 0-59)"},
      {"0 ,1 * * *", 3, "hour: \",1\" at column 3 has an empty list element (allowed 0-23)"},
      {"0 3- * * *", 3, "hour: \"3-\" at column 3 is missing a value (allowed 0-23)"},
      {"0 -3 * * *", 3, "hour: \"-3\" at column 3 does not start with a value (allowed 0-23)"},
      {"0 0 * * 1#2", 10,
       "day-of-week: \"#2\" at column 10 is unexpected here (allowed 0-7 or SUN-SAT)"},
      {"0 0 L * *", 5, "day-of-month: \"L\" at column 5 is not a number (allowed 1-31)"},
      {"0 0 ? * *", 5,
       "day-of-month: \"?\" at column 5 does not start with a value (allowed 1-31)"},
      {"*5 * * * *", 2, "minute: \"5\" at column 2 is unexpected here (allowed 0-59)"},
      {"0 0 1-5/2/3 * *", 10,
       "day-of-month: \"/3\" at column 10 is unexpected here (allowed 1-31)"},
      {"@reboot", 1,
       "\"@reboot\" at column 1 is not supported: a schedule needs a time (allowed @yearly, "
       "@annually, @monthly, @weekly, @daily, @midnight, @hourly)"},
      {"@fortnightly", 1,
       "\"@fortnightly\" at column 1 is not a known macro (allowed @yearly, @annually, "
       "@monthly, @weekly, @daily, @midnight, @hourly)"},
      {"@daily 0", 8, "\"0\" at column 8 follows \"@daily\", which stands alone"},
  };
  for (const Row& row : rows) {
    INFO("\"" << row.expression << "\"");
    int column = -1;
    const auto cron = ParseCron(row.expression, &column);
    REQUIRE_FALSE(cron.ok());
    CHECK(cron.error().IsInvalidInput());
    CHECK(cron.error().message() == row.message);
    CHECK(column == row.column);
  }
}

TEST_CASE("cron expressions that can never fire are refused", "[cron]") {
  struct Row {
    const char* expression;
    int column;
    const char* message;
  };
  const std::vector<Row> rows = {
      {"0 0 30 2 *", 5,
       "day-of-month: \"30\" at column 5 never falls in month \"2\", so the schedule would "
       "never fire"},
      {"0 0 31 4,6,9,11 *", 5,
       "day-of-month: \"31\" at column 5 never falls in month \"4,6,9,11\", so the schedule "
       "would never fire"},
      {"0 0 31 4 */2", 5,
       "day-of-month: \"31\" at column 5 never falls in month \"4\", so the schedule would "
       "never fire"},  // a stepped star is ANDed, so the weekdays open no other day
      {"0 0 30,31 FEB *", 5,
       "day-of-month: \"30,31\" at column 5 never falls in month \"FEB\", so the schedule "
       "would never fire"},
  };
  for (const Row& row : rows) {
    INFO(row.expression);
    int column = -1;
    const auto cron = ParseCron(row.expression, &column);
    REQUIRE_FALSE(cron.ok());
    CHECK(cron.error().IsInvalidInput());
    CHECK(cron.error().message() == row.message);
    CHECK(column == row.column);
  }
  // What can fire in some year, or on a weekday, is accepted.
  for (const char* fine :
       {"0 0 29 2 *", "0 0 31 1-3 *", "0 0 30 2 MON", "0 0 31 4 2", "0 0 30,1 2 *", "0 0 31 * *"}) {
    INFO(fine);
    CHECK(ParseCron(fine).ok());
  }
}

}  // namespace
}  // namespace rg::core
