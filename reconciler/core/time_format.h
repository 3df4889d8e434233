// The one way times are written: RFC 3339 in UTC with a "Z". Status files, the status page
// and its JSON, plan messages and `history` use milliseconds; artifacts, one-off runs and the
// daemon's log lines use whole seconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rg::core {

// "2026-11-22T09:11:31.123Z".
std::string FormatRfc3339Millis(int64_t epoch_ms);
// "2026-11-22T09:11:31Z" (the milliseconds are dropped, not rounded).
std::string FormatRfc3339Seconds(int64_t epoch_ms);
std::string FormatRfc3339Seconds(std::chrono::system_clock::time_point t);
// Parses what the two formatters write. nullopt on bad input.
std::optional<int64_t> ParseRfc3339Millis(std::string_view text);

}  // namespace rg::core
