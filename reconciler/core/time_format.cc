#include "reconciler/core/time_format.h"

#include <array>
#include <cstdio>

namespace rg::core {

namespace {

// "YYYY-MM-DDTHH:MM:SS", then ".mmm" when asked, then "Z".
std::string Format(int64_t epoch_ms, bool millis) {
  using namespace std::chrono;
  const sys_time<milliseconds> tp{milliseconds{epoch_ms}};
  const auto day = floor<days>(tp);
  const year_month_day ymd{day};
  const hh_mm_ss hms{tp - day};
  std::array<char, 40> buf{};
  int n = std::snprintf(buf.data(), buf.size(), "%04d-%02u-%02uT%02d:%02d:%02d",
                        static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                        static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                        static_cast<int>(hms.minutes().count()),
                        static_cast<int>(hms.seconds().count()));
  if (millis) {
    n += std::snprintf(buf.data() + n, buf.size() - n, ".%03d",
                       static_cast<int>(hms.subseconds().count()));
  }
  std::snprintf(buf.data() + n, buf.size() - n, "Z");
  return buf.data();
}

// RFC 7231's names, Sunday first (std::chrono::weekday's c_encoding).
constexpr std::array<std::string_view, 7> kHttpDayNames = {"Sun", "Mon", "Tue", "Wed",
                                                           "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 7> kLongDayNames = {
    "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
constexpr std::array<std::string_view, 12> kHttpMonthNames = {
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

template <size_t N>
std::optional<unsigned> IndexOf(const std::array<std::string_view, N>& names,
                                std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<unsigned>(i);
  }
  return std::nullopt;
}

// Exactly `len` decimal digits at `pos`.
std::optional<int> Digits(std::string_view text, size_t pos, size_t len) {
  if (pos + len > text.size()) return std::nullopt;
  int v = 0;
  for (size_t i = pos; i < pos + len; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

// What an HTTP date names, before it is checked.
struct HttpDateFields {
  std::optional<unsigned> weekday;  // 0 = Sunday
  std::optional<unsigned> month;    // 0 = January
  std::optional<int> year, day, hour, minute, second;
};

// "HH:MM:SS" at `pos`.
bool ReadTimeOfDay(std::string_view text, size_t pos, HttpDateFields& f) {
  if (pos + 8 > text.size() || text[pos + 2] != ':' || text[pos + 5] != ':') return false;
  f.hour = Digits(text, pos, 2);
  f.minute = Digits(text, pos + 3, 2);
  f.second = Digits(text, pos + 6, 2);
  return true;
}

std::optional<int64_t> EpochMsOf(const HttpDateFields& f) {
  if (!f.weekday || !f.month || !f.year || !f.day || !f.hour || !f.minute || !f.second) {
    return std::nullopt;
  }
  using namespace std::chrono;
  const year_month_day ymd{year{*f.year}, month{*f.month + 1}, day{static_cast<unsigned>(*f.day)}};
  if (!ymd.ok() || weekday{sys_days{ymd}}.c_encoding() != *f.weekday || *f.hour > 23 ||
      *f.minute > 59 || *f.second > 60) {
    return std::nullopt;
  }
  const auto tp = sys_days{ymd} + hours{*f.hour} + minutes{*f.minute} + seconds{*f.second};
  return duration_cast<milliseconds>(tp.time_since_epoch()).count();
}

// "Sun, 06 Nov 1994 08:49:37 GMT"
std::optional<int64_t> ParseImfFixdate(std::string_view t) {
  if (t.size() != 29 || t.substr(3, 2) != ", " || t[7] != ' ' || t[11] != ' ' || t[16] != ' ' ||
      t.substr(25) != " GMT") {
    return std::nullopt;
  }
  HttpDateFields f;
  f.weekday = IndexOf(kHttpDayNames, t.substr(0, 3));
  f.day = Digits(t, 5, 2);
  f.month = IndexOf(kHttpMonthNames, t.substr(8, 3));
  f.year = Digits(t, 12, 4);
  if (!ReadTimeOfDay(t, 17, f)) return std::nullopt;
  return EpochMsOf(f);
}

// "Sunday, 06-Nov-94 08:49:37 GMT"
std::optional<int64_t> ParseRfc850Date(std::string_view t) {
  const size_t comma = t.find(", ");
  if (comma == std::string_view::npos) return std::nullopt;
  const std::string_view rest = t.substr(comma + 2);
  if (rest.size() != 22 || rest[2] != '-' || rest[6] != '-' || rest[9] != ' ' ||
      rest.substr(18) != " GMT") {
    return std::nullopt;
  }
  HttpDateFields f;
  f.weekday = IndexOf(kLongDayNames, t.substr(0, comma));
  f.day = Digits(rest, 0, 2);
  f.month = IndexOf(kHttpMonthNames, rest.substr(3, 3));
  if (std::optional<int> yy = Digits(rest, 7, 2)) f.year = *yy < 70 ? 2000 + *yy : 1900 + *yy;
  if (!ReadTimeOfDay(rest, 10, f)) return std::nullopt;
  return EpochMsOf(f);
}

// "Sun Nov  6 08:49:37 1994" (a one-digit day after a space)
std::optional<int64_t> ParseAsctimeDate(std::string_view t) {
  if (t.size() != 24 || t[3] != ' ' || t[7] != ' ' || t[10] != ' ' || t[19] != ' ') {
    return std::nullopt;
  }
  HttpDateFields f;
  f.weekday = IndexOf(kHttpDayNames, t.substr(0, 3));
  f.month = IndexOf(kHttpMonthNames, t.substr(4, 3));
  f.day = t[8] == ' ' ? Digits(t, 9, 1) : Digits(t, 8, 2);
  f.year = Digits(t, 20, 4);
  if (!ReadTimeOfDay(t, 11, f)) return std::nullopt;
  return EpochMsOf(f);
}

}  // namespace

std::string FormatRfc3339Millis(int64_t epoch_ms) { return Format(epoch_ms, true); }

std::string FormatRfc3339Seconds(int64_t epoch_ms) { return Format(epoch_ms, false); }

std::string FormatRfc3339Seconds(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  return Format(duration_cast<milliseconds>(t.time_since_epoch()).count(), false);
}

std::optional<int64_t> ParseRfc3339Millis(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.mmm]Z
  auto num = [&](size_t pos, size_t len) { return Digits(text, pos, len); };
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  const auto y = num(0, 4);
  const auto mo = num(5, 2);
  const auto d = num(8, 2);
  const auto h = num(11, 2);
  const auto mi = num(14, 2);
  const auto s = num(17, 2);
  if (!y || !mo || !d || !h || !mi || !s) return std::nullopt;
  int ms = 0;
  size_t pos = 19;
  if (text[pos] == '.') {
    auto frac = num(pos + 1, 3);
    if (!frac) return std::nullopt;
    ms = *frac;
    pos += 4;
  }
  if (pos + 1 != text.size() || text[pos] != 'Z') return std::nullopt;
  using namespace std::chrono;
  const year_month_day ymd{year{*y}, month{static_cast<unsigned>(*mo)},
                           day{static_cast<unsigned>(*d)}};
  if (!ymd.ok() || *h > 23 || *mi > 59 || *s > 60) return std::nullopt;
  const auto tp = sys_days{ymd} + hours{*h} + minutes{*mi} + seconds{*s} + milliseconds{ms};
  return duration_cast<milliseconds>(tp.time_since_epoch()).count();
}

std::optional<int64_t> ParseHttpDate(std::string_view text) {
  if (std::optional<int64_t> ms = ParseImfFixdate(text)) return ms;
  if (std::optional<int64_t> ms = ParseRfc850Date(text)) return ms;
  return ParseAsctimeDate(text);
}

std::string FormatHttpDate(int64_t epoch_ms) {
  using namespace std::chrono;
  const sys_time<milliseconds> tp{milliseconds{epoch_ms}};
  const auto day = floor<days>(tp);
  const year_month_day ymd{day};
  const hh_mm_ss hms{floor<seconds>(tp) - day};
  std::array<char, 40> buf{};
  std::snprintf(buf.data(), buf.size(), "%.3s, %02u %.3s %04d %02d:%02d:%02d GMT",
                kHttpDayNames[weekday{day}.c_encoding()].data(), static_cast<unsigned>(ymd.day()),
                kHttpMonthNames[static_cast<unsigned>(ymd.month()) - 1].data(),
                static_cast<int>(ymd.year()), static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()));
  return buf.data();
}

}  // namespace rg::core
