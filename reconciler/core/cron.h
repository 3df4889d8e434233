#pragma once
// Cron expressions as Vixie cron reads them (DESIGN §3.4, "Schedules"): five fields, minute
// hour day-of-month month day-of-week, each parsed into the set of values it allows. Pure.

#include <bitset>
#include <string_view>

#include "reconciler/core/result.h"

namespace rg::core {

struct CronExpression {
  std::bitset<60> minutes;        // 0-59
  std::bitset<24> hours;          // 0-23
  std::bitset<32> days_of_month;  // 1-31; bit 0 is never set
  std::bitset<13> months;         // 1-12; bit 0 is never set
  std::bitset<7> days_of_week;    // 0 = Sunday ... 6 = Saturday (a 7 in the text is Sunday)
  // False when the field's text starts with "*" ("*", "*/2"), as Vixie's DOM_STAR and
  // DOW_STAR flags: such a field does not take part in the OR of MatchesDay.
  bool day_of_month_restricted = false;
  bool day_of_week_restricted = false;

  // Whether a calendar day passes the two day fields (the month is checked apart). Vixie's
  // rule: when both day fields are restricted, a day matches if either does; otherwise both
  // sets must match, so a bare "*" leaves the decision to the other field.
  bool MatchesDay(int day_of_month, int weekday) const;

  friend bool operator==(const CronExpression&, const CronExpression&) = default;
};

// Parses a 5-field expression: fields separated by spaces or tabs; each field a list
// ("a,b") of "*", "n", "a-b", "*/n", "a-b/n" or "a/n" (= "a-<max>/n"); month names JAN-DEC
// and day names SUN-SAT in any case, alone or in ranges; day-of-week 0-7, 7 being Sunday.
// A step runs from 1 to the number of values of the field. Also takes, as the whole
// expression, the macros @yearly @annually @monthly @weekly @daily @midnight @hourly (in
// any case); @reboot has no time and is rejected.
//
// Errors are InvalidInput, with a message of the form
//   <field>: "<token>" at column <c> <what is wrong> (allowed <range>)
// where <c> is the 1-based column, in `text`, of the bad token, so that a caller can point
// into the file the expression came from; the same column is stored in *error_column when
// that is not null. An expression that can never fire (day-of-month only on days its months
// do not have, as "0 0 30 2 *") is rejected the same way, at the day-of-month field. Feb 29
// counts as a day February has.
Result<CronExpression> ParseCron(std::string_view text, int* error_column = nullptr);

}  // namespace rg::core
