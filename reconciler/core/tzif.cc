#include "reconciler/core/tzif.h"

#include <algorithm>
#include <array>

namespace rg::core {

namespace {

constexpr int64_t kDay = 86400;
// RFC 8536 §3.2: a UT offset lies in [-89999, 93599], under 26 hours either way.
constexpr int32_t kMinUtOffset = -89999;
constexpr int32_t kMaxUtOffset = 93599;
// Instants beyond ±2^60 s (36 billion years) are taken as at that bound: the calendar
// arithmetic of the footer's rule then never overflows.
constexpr int64_t kInstantLimit = int64_t{1} << 60;

int64_t FloorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0);
}

int64_t ClampInstant(int64_t t) { return std::clamp(t, -kInstantLimit, kInstantLimit); }

}  // namespace

int64_t DaysFromCivil(int64_t year, int month, int day) {
  const int64_t y = year - (month <= 2 ? 1 : 0);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t year_of_era = y - era * 400;
  const int64_t shifted_month = (month + 9) % 12;  // March = 0
  const int64_t day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

CivilDate CivilFromDays(int64_t days) {
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t day_of_era = z - era * 146097;
  const int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const int64_t day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const int64_t shifted_month = (5 * day_of_year + 2) / 153;  // March = 0
  const int day = static_cast<int>(day_of_year - (153 * shifted_month + 2) / 5 + 1);
  const int month = static_cast<int>(shifted_month < 10 ? shifted_month + 3 : shifted_month - 9);
  return {year_of_era + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

int WeekdayFromDays(int64_t days) {
  return static_cast<int>(days >= -4 ? (days + 4) % 7 : (days + 5) % 7 + 6);
}

bool IsLeapYear(int64_t year) { return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0); }

int DaysInMonth(int64_t year, int month) {
  static constexpr std::array<int, 13> kDays = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month == 2 && IsLeapYear(year)) return 29;
  return kDays[static_cast<size_t>(month)];
}

// ---------------------------------------------------------------------------------------------
// POSIX TZ strings

namespace {

class PosixParser {
 public:
  explicit PosixParser(std::string_view text) : text_(text) {}
  Result<PosixTimeZone> Parse();

 private:
  bool AtEnd() const { return pos_ == text_.size(); }
  bool Consume(char c) {
    if (AtEnd() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  std::optional<int> Number(int max_digits, int low, int high);
  std::optional<std::string> Name();
  std::optional<int32_t> Time(int max_hour_digits, int max_hours);
  std::optional<PosixRuleDate> RuleDate();
  Error Fail(std::string_view expected) const {
    return Error::InvalidInput("TZ string \"" + std::string(text_) + "\": expected " +
                               std::string(expected) + " at offset " + std::to_string(pos_));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::optional<int> PosixParser::Number(int max_digits, int low, int high) {
  int value = 0;
  int digits = 0;
  while (!AtEnd() && digits < max_digits && text_[pos_] >= '0' && text_[pos_] <= '9') {
    value = value * 10 + (text_[pos_] - '0');
    ++pos_;
    ++digits;
  }
  if (digits == 0 || value < low || value > high) return std::nullopt;
  return value;
}

// "CET" (three or more letters) or "<+0330>" (three or more of [A-Za-z0-9+-] in brackets).
std::optional<std::string> PosixParser::Name() {
  const bool quoted = Consume('<');
  const size_t start = pos_;
  auto is_name_char = [quoted](char c) {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return alpha || (quoted && ((c >= '0' && c <= '9') || c == '+' || c == '-'));
  };
  while (!AtEnd() && is_name_char(text_[pos_])) ++pos_;
  std::string name(text_.substr(start, pos_ - start));
  if (name.size() < 3 || (quoted && !Consume('>'))) return std::nullopt;
  return name;
}

// [+-]h[h][:mm[:ss]], in seconds; hours up to `max_hours`.
std::optional<int32_t> PosixParser::Time(int max_hour_digits, int max_hours) {
  int sign = 1;
  if (Consume('-')) {
    sign = -1;
  } else {
    Consume('+');
  }
  const auto hours = Number(max_hour_digits, 0, max_hours);
  if (!hours) return std::nullopt;
  int seconds = *hours * 3600;
  if (Consume(':')) {
    const auto minutes = Number(2, 0, 59);
    if (!minutes) return std::nullopt;
    seconds += *minutes * 60;
    if (Consume(':')) {
      const auto secs = Number(2, 0, 59);
      if (!secs) return std::nullopt;
      seconds += *secs;
    }
  }
  return sign * seconds;
}

// "Jn", "n" or "Mm.w.d", then "/time" or not.
std::optional<PosixRuleDate> PosixParser::RuleDate() {
  PosixRuleDate rule;
  std::optional<int> day;
  if (Consume('M')) {
    const auto month = Number(2, 1, 12);
    const auto week = month && Consume('.') ? Number(1, 1, 5) : std::nullopt;
    day = week && Consume('.') ? Number(1, 0, 6) : std::nullopt;
    if (!day) return std::nullopt;
    rule.kind = PosixRuleDate::Kind::kMonthWeekDay;
    rule.month = *month;
    rule.week = *week;
    rule.weekday = *day;
  } else if (Consume('J')) {
    day = Number(3, 1, 365);
    rule.kind = PosixRuleDate::Kind::kJulianNoLeap;
  } else {
    day = Number(3, 0, 365);
    rule.kind = PosixRuleDate::Kind::kJulianZero;
  }
  if (!day) return std::nullopt;
  if (rule.kind != PosixRuleDate::Kind::kMonthWeekDay) rule.day = *day;
  if (Consume('/')) {
    const auto time = Time(3, 167);
    if (!time) return std::nullopt;
    rule.time = *time;
  }
  return rule;
}

Result<PosixTimeZone> PosixParser::Parse() {
  PosixTimeZone tz;
  auto name = Name();
  if (!name) return Fail("a standard time name (3 or more letters, or <...>)");
  const auto offset = Time(2, 24);
  if (!offset) return Fail("the standard time offset ([+-]hh[:mm[:ss]], hh up to 24)");
  tz.standard = {-*offset, false, std::move(*name)};
  if (AtEnd()) return tz;
  name = Name();
  if (!name) return Fail("a daylight time name (3 or more letters, or <...>)");
  tz.daylight = LocalTimeType{tz.standard.ut_offset + 3600, true, std::move(*name)};
  if (!AtEnd() && text_[pos_] != ',') {
    const auto dst_offset = Time(2, 24);
    if (!dst_offset) return Fail("the daylight time offset ([+-]hh[:mm[:ss]], hh up to 24)");
    tz.daylight->ut_offset = -*dst_offset;
  }
  if (AtEnd()) {  // no rules: the reference implementation's default, the US rules
    tz.dst_start = {.kind = PosixRuleDate::Kind::kMonthWeekDay, .month = 3, .week = 2};
    tz.dst_end = {.kind = PosixRuleDate::Kind::kMonthWeekDay, .month = 11, .week = 1};
    return tz;
  }
  if (!Consume(',')) return Fail("\",\" before the start rule");
  const auto start = RuleDate();
  if (!start) return Fail("a start rule (Jn, n or Mm.w.d, then /time or not)");
  if (!Consume(',')) return Fail("\",\" before the end rule");
  const auto end = RuleDate();
  if (!end) return Fail("an end rule (Jn, n or Mm.w.d, then /time or not)");
  if (!AtEnd()) return Fail("the end of the string");
  tz.dst_start = *start;
  tz.dst_end = *end;
  return tz;
}

// The day (since 1970-01-01) a rule names in `year`.
int64_t RuleDay(const PosixRuleDate& rule, int64_t year) {
  const int64_t jan1 = DaysFromCivil(year, 1, 1);
  switch (rule.kind) {
    case PosixRuleDate::Kind::kJulianNoLeap:
      return jan1 + rule.day - 1 + (IsLeapYear(year) && rule.day >= 60 ? 1 : 0);
    case PosixRuleDate::Kind::kJulianZero:
      return jan1 + rule.day;
    case PosixRuleDate::Kind::kMonthWeekDay:
      break;
  }
  const int64_t first = DaysFromCivil(year, rule.month, 1);
  const int64_t end = first + DaysInMonth(year, rule.month);
  int64_t day =
      first + (rule.weekday - WeekdayFromDays(first) + 7) % 7 + int64_t{rule.week - 1} * 7;
  while (day >= end) day -= 7;  // week 5 is the last such weekday, which may be the 4th
  return day;
}

struct RuleEvent {
  int64_t at;  // UTC seconds
  bool to_dst;
};

// The changes of the rule in the years around `t`, in time order. At equal times the change
// to standard time comes first, so that a rule for daylight time all year ("0/0,J365/25")
// stays on daylight time. REQUIRES: tz.daylight
std::array<RuleEvent, 10> EventsAround(const PosixTimeZone& tz, int64_t t) {
  const int64_t year = CivilFromDays(FloorDiv(ClampInstant(t), kDay)).year;
  std::array<RuleEvent, 10> events{};
  for (int64_t i = 0; i < 5; ++i) {
    const int64_t y = year - 2 + i;
    const auto slot = static_cast<size_t>(i * 2);
    events[slot] = {RuleDay(tz.dst_start, y) * kDay + tz.dst_start.time - tz.standard.ut_offset,
                    true};
    events[slot + 1] = {RuleDay(tz.dst_end, y) * kDay + tz.dst_end.time - tz.daylight->ut_offset,
                        false};
  }
  std::sort(events.begin(), events.end(), [](const RuleEvent& a, const RuleEvent& b) {
    return a.at != b.at ? a.at < b.at : (!a.to_dst && b.to_dst);
  });
  return events;
}

bool RuleIsDst(const PosixTimeZone& tz, int64_t t) {
  if (!tz.daylight) return false;
  t = ClampInstant(t);
  bool dst = false;
  for (const RuleEvent& event : EventsAround(tz, t)) {
    if (event.at <= t) dst = event.to_dst;
  }
  return dst;
}

std::optional<int64_t> NextRuleEvent(const PosixTimeZone& tz, int64_t t) {
  if (!tz.daylight || t >= kInstantLimit) return std::nullopt;
  t = ClampInstant(t);
  for (const RuleEvent& event : EventsAround(tz, t)) {
    if (event.at > t) return event.at;
  }
  return std::nullopt;
}

}  // namespace

Result<PosixTimeZone> ParsePosixTz(std::string_view text) { return PosixParser(text).Parse(); }

// ---------------------------------------------------------------------------------------------
// TimeZone

Result<TimeZone> TimeZone::FromParts(Parts parts) {
  if (parts.types.empty()) return Error::InvalidInput("time zone: no local time types");
  if (parts.types.size() > 256) {
    return Error::InvalidInput("time zone: more than 256 local time types");
  }
  if (parts.transitions.size() != parts.transition_types.size()) {
    return Error::InvalidInput("time zone: transitions and their types differ in number");
  }
  for (size_t i = 0; i < parts.transitions.size(); ++i) {
    if (i > 0 && parts.transitions[i] <= parts.transitions[i - 1]) {
      return Error::InvalidInput("time zone: transition " + std::to_string(i) +
                                 " is not later than the one before it");
    }
    if (parts.transition_types[i] >= parts.types.size()) {
      return Error::InvalidInput(
          "time zone: transition " + std::to_string(i) + " names local time type " +
          std::to_string(parts.transition_types[i]) + " of " + std::to_string(parts.types.size()));
    }
  }
  for (const LocalTimeType& type : parts.types) {
    if (type.ut_offset < kMinUtOffset || type.ut_offset > kMaxUtOffset) {
      return Error::InvalidInput("time zone: UT offset " + std::to_string(type.ut_offset) +
                                 " s is outside [-89999, 93599]");
    }
  }
  std::optional<PosixTimeZone> rule;
  if (!parts.footer.empty()) {
    auto parsed = ParsePosixTz(parts.footer);
    if (!parsed) return Error::InvalidInput("time zone footer: " + parsed.error().message());
    rule = std::move(*parsed);
  }
  return TimeZone(std::move(parts), std::move(rule));
}

bool TimeZone::UsesRule(int64_t utc_seconds) const {
  return rule_.has_value() &&
         (parts_.transitions.empty() || utc_seconds >= parts_.transitions.back());
}

int32_t TimeZone::UtOffsetAt(int64_t utc_seconds) const { return TypeAt(utc_seconds).ut_offset; }

const LocalTimeType& TimeZone::TypeAt(int64_t utc_seconds) const {
  if (UsesRule(utc_seconds)) {
    return RuleIsDst(*rule_, utc_seconds) ? *rule_->daylight : rule_->standard;
  }
  const auto& times = parts_.transitions;
  const auto it = std::upper_bound(times.begin(), times.end(), utc_seconds);
  if (it == times.begin()) return parts_.types[0];
  return parts_.types[parts_.transition_types[static_cast<size_t>(it - times.begin() - 1)]];
}

std::optional<int64_t> TimeZone::NextTransitionAfter(int64_t utc_seconds) const {
  const auto& times = parts_.transitions;
  const auto it = std::upper_bound(times.begin(), times.end(), utc_seconds);
  if (it != times.end()) return *it;
  if (!rule_) return std::nullopt;
  return NextRuleEvent(*rule_, utc_seconds);
}

LocalResolution TimeZone::ResolveLocal(int64_t local_seconds) const {
  // Offsets lie within ±26 h, so every instant showing `local` and every transition that
  // makes a gap around it lie within two days of it. The window is cut into segments of one
  // offset each; `local` occurs in a segment when local - offset falls inside it.
  const int64_t local = std::clamp(local_seconds, -kInstantLimit, kInstantLimit);
  const int64_t to = local + 2 * kDay;
  int64_t start = local - 2 * kDay;
  int32_t offset = UtOffsetAt(start);
  std::optional<int64_t> first;
  std::optional<int64_t> gap_end;
  bool twice = false;
  while (true) {
    const std::optional<int64_t> next = NextTransitionAfter(start);
    const int64_t candidate = local - offset;
    if (candidate >= start && (!next || candidate < *next)) {
      twice = first.has_value();
      if (!first) first = candidate;
    }
    if (!next || *next > to) break;
    const int32_t after = UtOffsetAt(*next);
    // The clock jumps from next + offset to next + after: `local` is skipped when it lies
    // in between.
    if (!gap_end && candidate >= *next && local - after < *next) gap_end = *next;
    start = *next;
    offset = after;
  }
  if (first) {
    return {twice ? LocalResolution::Kind::kAmbiguous : LocalResolution::Kind::kUnique, *first};
  }
  return {LocalResolution::Kind::kGap, gap_end.value_or(local - offset)};
}

// ---------------------------------------------------------------------------------------------
// TZif

namespace {

constexpr size_t kHeaderSize = 44;

Error TzifError(std::string_view what) { return Error::InvalidInput("TZif: " + std::string(what)); }

// Big-endian reads from a span whose length the caller has checked.
class TzifReader {
 public:
  explicit TzifReader(std::string_view bytes) : bytes_(bytes) {}
  size_t remaining() const { return bytes_.size() - pos_; }
  std::string_view Take(size_t n) {
    const std::string_view out = bytes_.substr(pos_, n);
    pos_ += out.size();
    return out;
  }
  uint8_t U8() { return static_cast<uint8_t>(Take(1)[0]); }
  uint32_t U32() {
    uint32_t v = 0;
    for (const char c : Take(4)) v = (v << 8) | static_cast<uint8_t>(c);
    return v;
  }
  int64_t I64() {
    uint64_t v = 0;
    for (const char c : Take(8)) v = (v << 8) | static_cast<uint8_t>(c);
    return static_cast<int64_t>(v);
  }
  int32_t I32() { return static_cast<int32_t>(U32()); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

struct TzifHeader {
  char version = 0;
  uint32_t isutcnt = 0;
  uint32_t isstdcnt = 0;
  uint32_t leapcnt = 0;
  uint32_t timecnt = 0;
  uint32_t typecnt = 0;
  uint32_t charcnt = 0;
};

std::string VersionName(char version) {
  if (version == '\0') return "1";
  if (version >= 0x21 && version <= 0x7e) return {version};
  return "byte " + std::to_string(static_cast<uint8_t>(version));
}

Result<TzifHeader> ReadHeader(TzifReader& in, std::string_view which) {
  if (in.remaining() < kHeaderSize) {
    return TzifError("truncated: the " + std::string(which) + " header needs 44 bytes, " +
                     std::to_string(in.remaining()) + " remain");
  }
  if (in.Take(4) != "TZif") {
    return TzifError("bad magic in the " + std::string(which) + " header (not a TZif file)");
  }
  TzifHeader h;
  h.version = static_cast<char>(in.U8());
  if (h.version != '\0' && (h.version < '2' || h.version > '4')) {
    return TzifError("unsupported version " + VersionName(h.version) + " (1 to 4 are read)");
  }
  (void)in.Take(15);
  h.isutcnt = in.U32();
  h.isstdcnt = in.U32();
  h.leapcnt = in.U32();
  h.timecnt = in.U32();
  h.typecnt = in.U32();
  h.charcnt = in.U32();
  return h;
}

// The bytes of the data block a header announces (counts are 32-bit: no overflow in 64).
uint64_t BlockSize(const TzifHeader& h, uint64_t time_size) {
  return uint64_t{h.timecnt} * (time_size + 1) + uint64_t{h.typecnt} * 6 + h.charcnt +
         uint64_t{h.leapcnt} * (time_size + 4) + h.isstdcnt + h.isutcnt;
}

Status CheckCounts(const TzifHeader& h, TzifReader& in, uint64_t time_size) {
  if (h.typecnt == 0) return TzifError("typecnt is 0 (a zone needs a local time type)");
  if (h.typecnt > 256) return TzifError("typecnt " + std::to_string(h.typecnt) + " is over 256");
  if (h.charcnt == 0) return TzifError("charcnt is 0 (a zone needs its abbreviations)");
  if (h.isutcnt != 0 && h.isutcnt != h.typecnt) {
    return TzifError("isutcnt " + std::to_string(h.isutcnt) + " is neither 0 nor typecnt");
  }
  if (h.isstdcnt != 0 && h.isstdcnt != h.typecnt) {
    return TzifError("isstdcnt " + std::to_string(h.isstdcnt) + " is neither 0 nor typecnt");
  }
  if (h.leapcnt != 0) {
    return TzifError("leap-second records are not supported (a \"right/\" zone?)");
  }
  const uint64_t size = BlockSize(h, time_size);
  if (size > in.remaining()) {
    return TzifError("truncated: the data block needs " + std::to_string(size) + " bytes, " +
                     std::to_string(in.remaining()) + " remain");
  }
  return OkStatus();
}

// The local time type records, their abbreviations and indicators.
Status ReadTypes(TzifReader& in, const TzifHeader& h, std::vector<LocalTimeType>& types) {
  std::vector<uint8_t> abbreviation_indices;
  for (uint32_t i = 0; i < h.typecnt; ++i) {
    const int32_t offset = in.I32();
    const uint8_t is_dst = in.U8();
    abbreviation_indices.push_back(in.U8());
    if (is_dst > 1) return TzifError("isdst of type " + std::to_string(i) + " is not 0 or 1");
    types.push_back({offset, is_dst == 1, ""});
  }
  const std::string_view chars = in.Take(h.charcnt);
  for (size_t i = 0; i < types.size(); ++i) {
    const size_t index = abbreviation_indices[i];
    const size_t end = index < chars.size() ? chars.find('\0', index) : std::string_view::npos;
    if (end == std::string_view::npos) {
      return TzifError("the abbreviation of type " + std::to_string(i) +
                       " is outside the designations or not NUL-terminated");
    }
    types[i].abbreviation = std::string(chars.substr(index, end - index));
  }
  for (const char c : in.Take(uint64_t{h.isstdcnt} + h.isutcnt)) {
    if (c != 0 && c != 1) return TzifError("a standard/wall or UT/local indicator is not 0 or 1");
  }
  return OkStatus();
}

Result<TimeZone::Parts> ReadBlock(TzifReader& in, const TzifHeader& h, uint64_t time_size) {
  if (Status counts = CheckCounts(h, in, time_size); !counts) return counts.error();
  TimeZone::Parts parts;
  parts.transitions.reserve(h.timecnt);
  for (uint32_t i = 0; i < h.timecnt; ++i) {
    parts.transitions.push_back(time_size == 8 ? in.I64() : in.I32());
  }
  const std::string_view indices = in.Take(h.timecnt);
  parts.transition_types.assign(indices.begin(), indices.end());
  if (Status types = ReadTypes(in, h, parts.types); !types) return types.error();
  return parts;
}

// "\n<TZ string>\n", the last bytes of a version 2+ file.
Result<std::string> ReadFooter(TzifReader& in) {
  const std::string_view rest = in.Take(in.remaining());
  if (rest.empty() || rest[0] != '\n') return TzifError("the footer does not start with a newline");
  const size_t end = rest.find('\n', 1);
  if (end == std::string_view::npos) return TzifError("the footer does not end with a newline");
  if (end + 1 != rest.size()) {
    return TzifError(std::to_string(rest.size() - end - 1) + " stray bytes after the footer");
  }
  return std::string(rest.substr(1, end - 1));
}

}  // namespace

Result<TimeZone> ParseTzif(std::string_view bytes) {
  TzifReader in(bytes);
  auto first = ReadHeader(in, "first");
  if (!first) return first.error();
  if (first->version == '\0') {
    auto parts = ReadBlock(in, *first, 4);
    if (!parts) return parts.error();
    if (in.remaining() != 0) {
      return TzifError(std::to_string(in.remaining()) + " stray bytes after the data");
    }
    return TimeZone::FromParts(std::move(*parts));
  }
  // Version 2 and up repeat the data with 64-bit times after the 32-bit block, which only
  // version 1 readers need.
  const uint64_t v1_size = BlockSize(*first, 4);
  if (v1_size > in.remaining()) {
    return TzifError("truncated: the version 1 data block needs " + std::to_string(v1_size) +
                     " bytes, " + std::to_string(in.remaining()) + " remain");
  }
  (void)in.Take(v1_size);
  auto second = ReadHeader(in, "second");
  if (!second) return second.error();
  if (second->version != first->version) {
    return TzifError("the headers disagree on the version (" + VersionName(first->version) +
                     " and " + VersionName(second->version) + ")");
  }
  auto parts = ReadBlock(in, *second, 8);
  if (!parts) return parts.error();
  auto footer = ReadFooter(in);
  if (!footer) return footer.error();
  parts->footer = std::move(*footer);
  return TimeZone::FromParts(std::move(*parts));
}

Result<TimeZone> TimeZoneFromPosix(std::string_view tz) {
  auto rule = ParsePosixTz(tz);
  if (!rule) return rule.error();
  TimeZone::Parts parts;
  parts.types.push_back(rule->standard);
  parts.footer = std::string(tz);
  return TimeZone::FromParts(std::move(parts));
}

TimeZone Utc() { return TimeZoneFromPosix("UTC0").value(); }

}  // namespace rg::core
