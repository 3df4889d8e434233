#include "reconciler/core/duration.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <string>

namespace rg::core {
namespace {

struct DurationUnit {
  std::string_view name;
  int64_t ms;
};

// Largest first: the order a sum must be written in, and the order it is formatted in.
constexpr std::array<DurationUnit, 5> kDurationUnits = {{
    {"d", int64_t{86'400'000}},
    {"h", int64_t{3'600'000}},
    {"m", int64_t{60'000}},
    {"s", int64_t{1'000}},
    {"ms", int64_t{1}},
}};

constexpr int64_t kMaxDurationMs = int64_t{100} * 366 * 86'400'000;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<int64_t> ParseDurationMs(std::string_view text, BareNumber bare) {
  if (text.empty()) return std::nullopt;
  if (bare == BareNumber::kSeconds && std::ranges::all_of(text, IsDigit)) {
    return ParseDurationMs(std::string(text) + "s", BareNumber::kRefused);
  }
  int64_t total = 0;
  size_t next_unit = 0;  // units must come largest first, each at most once
  while (!text.empty()) {
    if (!IsDigit(text.front())) return std::nullopt;
    int64_t n = 0;
    auto [rest, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc()) return std::nullopt;
    text.remove_prefix(static_cast<size_t>(rest - text.data()));
    size_t letters = 0;
    while (letters < text.size() && !IsDigit(text[letters])) ++letters;
    const std::string_view unit = text.substr(0, letters);
    text.remove_prefix(letters);
    size_t u = next_unit;
    while (u < kDurationUnits.size() && kDurationUnits[u].name != unit) ++u;
    if (u == kDurationUnits.size()) return std::nullopt;
    next_unit = u + 1;
    if (n > kMaxDurationMs / kDurationUnits[u].ms) return std::nullopt;
    total += n * kDurationUnits[u].ms;
    if (total > kMaxDurationMs) return std::nullopt;
  }
  if (total <= 0) return std::nullopt;
  return total;
}

std::string FormatDurationMs(int64_t ms) {
  std::string out;
  for (const DurationUnit& unit : kDurationUnits) {
    if (ms >= unit.ms) {
      out += std::to_string(ms / unit.ms);
      out += unit.name;
      ms %= unit.ms;
    }
  }
  return out.empty() ? std::string("0s") : out;
}

}  // namespace rg::core
