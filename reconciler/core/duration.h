#pragma once
// Durations as people write them, in specs (`deadline: 90m`) and on the command line
// (`--interval 15s`): a number and a unit, or a sum of them ("1h30m").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rg::core {

// Whether a bare number, without a unit, is read as seconds (the command line's flags) or
// refused (a spec, where `deadline: 300` would leave its reader guessing).
enum class BareNumber { kSeconds, kRefused };

// "500ms", "15s", "2m", "1h", "3d", or a sum of such terms, largest unit first ("1h30m",
// "2d12h"). Positive, at most 100 years. nullopt for anything else: a unit out of order or
// given twice, a zero or negative total, a sign, a space, a fraction.
std::optional<int64_t> ParseDurationMs(std::string_view text,
                                       BareNumber bare = BareNumber::kSeconds);

// The shortest sum of whole units that ParseDurationMs reads back as `ms`: "1h30m", "5s",
// "250ms", "2d". REQUIRES: ms > 0.
std::string FormatDurationMs(int64_t ms);

}  // namespace rg::core
