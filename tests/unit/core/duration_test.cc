#include "reconciler/core/duration.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rg::core {
namespace {

struct DurationCase {
  std::string text;
  std::optional<int64_t> ms;
};

TEST_CASE("durations are a number and a unit, or a sum of them largest unit first") {
  const std::vector<DurationCase> cases = {
      {"250ms", 250},
      {"5s", 5'000},
      {"90m", 5'400'000},
      {"72h", 259'200'000},
      {"2d", 172'800'000},
      {"1h30m", 5'400'000},
      {"2d12h", 216'000'000},
      {"1m30s500ms", 90'500},
      {"0h5m", 300'000},  // a zero term is allowed while the sum is positive
      {"", std::nullopt},
      {"s", std::nullopt},
      {"0s", std::nullopt},
      {"-5s", std::nullopt},
      {"+5s", std::nullopt},
      {"1.5h", std::nullopt},
      {"5 s", std::nullopt},
      {" 5s", std::nullopt},
      {"5sec", std::nullopt},
      {"5S", std::nullopt},
      {"30m1h", std::nullopt},   // out of order
      {"1h1h", std::nullopt},    // a unit twice
      {"5s5", std::nullopt},     // a number without its unit
      {"36601d", std::nullopt},  // over 100 years
      {"99999999999999999999s", std::nullopt},
  };
  for (const DurationCase& c : cases) {
    INFO(c.text);
    CHECK(ParseDurationMs(c.text, BareNumber::kRefused) == c.ms);
  }
}

TEST_CASE("a bare number is seconds on the command line and refused in a spec") {
  CHECK(ParseDurationMs("15") == int64_t{15'000});
  CHECK(ParseDurationMs("15", BareNumber::kRefused) == std::nullopt);
  CHECK(ParseDurationMs("0") == std::nullopt);
  CHECK(ParseDurationMs("15s") == int64_t{15'000});
}

TEST_CASE("a duration is formatted as the shortest sum that reads back the same") {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {5'000, "5s"},      {5'400'000, "1h30m"},   {250, "250ms"},
      {86'400'000, "1d"}, {90'500, "1m30s500ms"}, {259'200'000, "3d"},
  };
  for (const auto& [ms, text] : cases) {
    CHECK(FormatDurationMs(ms) == text);
    CHECK(ParseDurationMs(text, BareNumber::kRefused) == ms);
  }
}

}  // namespace
}  // namespace rg::core
