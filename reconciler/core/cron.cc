#include "reconciler/core/cron.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace rg::core {

bool CronExpression::MatchesDay(int day_of_month, int weekday) const {
  const bool dom = days_of_month.test(static_cast<size_t>(day_of_month));
  const bool dow = days_of_week.test(static_cast<size_t>(weekday));
  if (day_of_month_restricted && day_of_week_restricted) return dom || dow;
  return dom && dow;
}

namespace {

constexpr std::array<std::string_view, 12> kMonthNames = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                          "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> kDayNames = {"SUN", "MON", "TUE", "WED",
                                                       "THU", "FRI", "SAT"};

struct CronField {
  std::string_view name;
  int low;
  int high;
  std::string_view allowed;                 // the range as messages show it
  std::span<const std::string_view> names;  // names of the values from `low` on, if any
  std::string_view name_kind;               // "month" or "day", for messages
};

constexpr std::array<CronField, 5> kCronFields = {{
    {"minute", 0, 59, "0-59", {}, ""},
    {"hour", 0, 23, "0-23", {}, ""},
    {"day-of-month", 1, 31, "1-31", {}, ""},
    {"month", 1, 12, "1-12 or JAN-DEC", kMonthNames, "month"},
    {"day-of-week", 0, 7, "0-7 or SUN-SAT", kDayNames, "day"},
}};

constexpr int kDayOfMonthField = 2;
constexpr int kMonthField = 3;
constexpr int kDayOfWeekField = 4;

// The most days each month can have (February in a leap year).
constexpr std::array<int, 13> kMaxDaysInMonth = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

struct CronToken {
  std::string_view text;
  int column;  // 1-based, in the whole expression
};

struct CronFailure {
  int column;
  std::string message;
};

CronFailure CronFail(std::string_view what, std::string_view token, int column,
                     std::string_view problem, std::string_view allowed) {
  std::string message;
  if (!what.empty()) message.append(what).append(": ");
  message.append("\"").append(token).append("\" at column ").append(std::to_string(column));
  message.append(" ").append(problem);
  if (!allowed.empty()) message.append(" (allowed ").append(allowed).append(")");
  return {column, std::move(message)};
}

CronFailure CronFail(const CronField& field, std::string_view token, int column,
                     std::string_view problem) {
  return CronFail(field.name, token, column, problem, field.allowed);
}

bool EqualsIgnoreCase(std::string_view text, std::string_view upper) {
  if (text.size() != upper.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c != upper[i]) return false;
  }
  return true;
}

bool IsAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Reads one number or name of `element` from `pos` into `value`. A step is a plain number
// from 1 to the count of the field's values.
std::optional<CronFailure> ReadValue(const CronField& field, std::string_view element, int column,
                                     size_t& pos, int& value, bool is_step) {
  const size_t start = pos;
  while (pos < element.size() && IsAlnum(element[pos])) ++pos;
  const std::string_view word = element.substr(start, pos - start);
  const int word_column = column + static_cast<int>(start);
  if (word.empty()) {
    return CronFail(field, element, column,
                    start == 0 ? "does not start with a value" : "is missing a value");
  }
  const bool digits = word.find_first_not_of("0123456789") == std::string_view::npos;
  if (is_step) {
    const int count = field.high - field.low + 1;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (!digits || ec != std::errc{} || value < 1 || value > count) {
      return CronFail(field.name, word, word_column, "is not a valid step",
                      "1-" + std::to_string(count));
    }
    return std::nullopt;
  }
  if (digits) {
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (ec != std::errc{} || value < field.low || value > field.high) {
      return CronFail(field, word, word_column, "is out of range");
    }
    return std::nullopt;
  }
  for (size_t i = 0; i < field.names.size(); ++i) {
    if (EqualsIgnoreCase(word, field.names[i])) {
      value = field.low + static_cast<int>(i);
      return std::nullopt;
    }
  }
  if (field.names.empty()) return CronFail(field, word, word_column, "is not a number");
  return CronFail(field, word, word_column,
                  "is not a number or a " + std::string(field.name_kind) + " name");
}

// One list element: "*", "n", "a-b", "*/n", "a-b/n" or "a/n" (= "a-<max>/n"), added to
// `bits` (bit v for value v).
std::optional<CronFailure> ParseElement(const CronField& field, std::string_view element,
                                        int column, uint64_t& bits) {
  int low = field.low;
  int high = field.high;
  size_t pos = 0;
  bool single = false;
  if (element[0] == '*') {
    pos = 1;
  } else {
    if (auto failure = ReadValue(field, element, column, pos, low, false)) return failure;
    if (pos < element.size() && element[pos] == '-') {
      ++pos;
      if (auto failure = ReadValue(field, element, column, pos, high, false)) return failure;
      if (high < low) return CronFail(field, element, column, "is a range that runs backwards");
    } else {
      high = low;
      single = true;
    }
  }
  int step = 1;
  if (pos < element.size() && element[pos] == '/') {
    ++pos;
    if (auto failure = ReadValue(field, element, column, pos, step, true)) return failure;
    if (single) high = field.high;  // "a/n": from a to the end of the field, as Vixie reads it
  }
  if (pos != element.size()) {
    return CronFail(field, element.substr(pos), column + static_cast<int>(pos),
                    "is unexpected here");
  }
  for (int v = low; v <= high; v += step) bits |= uint64_t{1} << v;
  return std::nullopt;
}

// A whole field: a comma-separated list of elements.
std::optional<CronFailure> ParseCronField(const CronField& field, const CronToken& token,
                                          uint64_t& bits) {
  size_t start = 0;
  while (true) {
    const size_t comma = token.text.find(',', start);
    const size_t end = comma == std::string_view::npos ? token.text.size() : comma;
    const int column = token.column + static_cast<int>(start);
    if (end == start) return CronFail(field, token.text, column, "has an empty list element");
    const std::string_view element = token.text.substr(start, end - start);
    if (auto failure = ParseElement(field, element, column, bits)) return failure;
    if (comma == std::string_view::npos) return std::nullopt;
    start = comma + 1;
  }
}

std::vector<CronToken> SplitFields(std::string_view text) {
  std::vector<CronToken> tokens;
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ' || text[pos] == '\t') {
      ++pos;
      continue;
    }
    const size_t start = pos;
    while (pos < text.size() && text[pos] != ' ' && text[pos] != '\t') ++pos;
    tokens.push_back({text.substr(start, pos - start), static_cast<int>(start) + 1});
  }
  return tokens;
}

template <size_t N>
std::bitset<N> ToBits(uint64_t bits) {
  return std::bitset<N>(bits & ((uint64_t{1} << N) - 1));
}

// Rejects day-of-month values that no month of the month field has, when day-of-week does not
// open other days (Vixie's OR applies only when both day fields are restricted).
std::optional<CronFailure> CheckCanFire(const CronExpression& cron, const CronToken& day_of_month,
                                        const CronToken& month) {
  if (cron.day_of_week_restricted) return std::nullopt;
  for (size_t m = 1; m <= 12; ++m) {
    if (!cron.months.test(m)) continue;
    for (size_t d = 1; d <= static_cast<size_t>(kMaxDaysInMonth[m]); ++d) {
      if (cron.days_of_month.test(d)) return std::nullopt;
    }
  }
  return CronFail(
      kCronFields[kDayOfMonthField].name, day_of_month.text, day_of_month.column,
      "never falls in month \"" + std::string(month.text) + "\", so the schedule would never fire",
      "");
}

std::variant<CronExpression, CronFailure> ParseCronFields(const std::vector<CronToken>& tokens) {
  std::array<uint64_t, 5> bits{};
  for (size_t i = 0; i < kCronFields.size(); ++i) {
    auto failure = ParseCronField(kCronFields[i], tokens[i], bits[i]);
    if (failure) return *std::move(failure);
  }
  // Day-of-week 7 is Sunday, as 0.
  if ((bits[kDayOfWeekField] & (uint64_t{1} << 7)) != 0) bits[kDayOfWeekField] |= 1;
  CronExpression cron;
  cron.minutes = ToBits<60>(bits[0]);
  cron.hours = ToBits<24>(bits[1]);
  cron.days_of_month = ToBits<32>(bits[kDayOfMonthField]);
  cron.months = ToBits<13>(bits[kMonthField]);
  cron.days_of_week = ToBits<7>(bits[kDayOfWeekField]);
  cron.day_of_month_restricted = tokens[kDayOfMonthField].text[0] != '*';
  cron.day_of_week_restricted = tokens[kDayOfWeekField].text[0] != '*';
  if (auto failure = CheckCanFire(cron, tokens[kDayOfMonthField], tokens[kMonthField])) {
    return *std::move(failure);
  }
  return cron;
}

constexpr std::string_view kMacroNames =
    "@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly";

// "@daily" and friends, as the five fields they stand for.
std::variant<CronExpression, CronFailure> ParseMacro(const std::vector<CronToken>& tokens) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kMacros = {{
      {"@YEARLY", "0 0 1 1 *"},
      {"@ANNUALLY", "0 0 1 1 *"},
      {"@MONTHLY", "0 0 1 * *"},
      {"@WEEKLY", "0 0 * * 0"},
      {"@DAILY", "0 0 * * *"},
      {"@MIDNIGHT", "0 0 * * *"},
      {"@HOURLY", "0 * * * *"},
  }};
  const CronToken& macro = tokens[0];
  if (tokens.size() > 1) {
    return CronFail("", tokens[1].text, tokens[1].column,
                    "follows \"" + std::string(macro.text) + "\", which stands alone", "");
  }
  for (const auto& [name, fields] : kMacros) {
    if (EqualsIgnoreCase(macro.text, name)) return ParseCronFields(SplitFields(fields));
  }
  if (EqualsIgnoreCase(macro.text, "@REBOOT")) {
    return CronFail("", macro.text, macro.column, "is not supported: a schedule needs a time",
                    kMacroNames);
  }
  return CronFail("", macro.text, macro.column, "is not a known macro", kMacroNames);
}

std::variant<CronExpression, CronFailure> ParseCronText(std::string_view text) {
  const std::vector<CronToken> tokens = SplitFields(text);
  if (tokens.empty()) return CronFailure{1, "the cron expression is empty"};
  if (tokens[0].text[0] == '@') return ParseMacro(tokens);
  if (tokens.size() != kCronFields.size()) {
    std::string message = "expected 5 fields (minute hour day-of-month month day-of-week), found " +
                          std::to_string(tokens.size());
    if (tokens.size() < kCronFields.size()) {
      const int column = static_cast<int>(text.size()) + 1;
      return CronFailure{
          column, message + " (the expression ends at column " + std::to_string(column) + ")"};
    }
    const CronToken& extra = tokens[kCronFields.size()];
    return CronFailure{extra.column, message + ": \"" + std::string(extra.text) + "\" at column " +
                                         std::to_string(extra.column) + " is one too many"};
  }
  return ParseCronFields(tokens);
}

}  // namespace

Result<CronExpression> ParseCron(std::string_view text, int* error_column) {
  auto parsed = ParseCronText(text);
  if (auto* failure = std::get_if<CronFailure>(&parsed)) {
    if (error_column != nullptr) *error_column = failure->column;
    return Error::InvalidInput(std::move(failure->message));
  }
  return std::get<CronExpression>(std::move(parsed));
}

}  // namespace rg::core
