#include "reconciler/core/time_format.h"

#include <array>
#include <charconv>
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

}  // namespace

std::string FormatRfc3339Millis(int64_t epoch_ms) { return Format(epoch_ms, true); }

std::string FormatRfc3339Seconds(int64_t epoch_ms) { return Format(epoch_ms, false); }

std::string FormatRfc3339Seconds(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  return Format(duration_cast<milliseconds>(t.time_since_epoch()).count(), false);
}

std::optional<int64_t> ParseRfc3339Millis(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.mmm]Z
  auto num = [&](size_t pos, size_t len) -> std::optional<int> {
    if (pos + len > text.size()) return std::nullopt;
    int v = 0;
    auto [p, ec] = std::from_chars(text.data() + pos, text.data() + pos + len, v);
    if (ec != std::errc{} || p != text.data() + pos + len) return std::nullopt;
    return v;
  };
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

}  // namespace rg::core
