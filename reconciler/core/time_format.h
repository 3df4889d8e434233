// The one way times are written: RFC 3339 in UTC with a "Z". Status files, the status page
// and its JSON, plan messages and `history` use milliseconds; artifacts, one-off runs and the
// daemon's log lines use whole seconds. HTTP's own dates (the Date header of Ray's answers,
// RFC 7231 section 7.1.1.1) are read here too.
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

// An HTTP date, as RFC 7231 (section 7.1.1.1) has recipients read it: the IMF-fixdate that
// servers send ("Sun, 06 Nov 1994 08:49:37 GMT"), and the obsolete RFC 850 ("Sunday,
// 06-Nov-94 08:49:37 GMT", its two-digit year read as 1970 to 2069) and asctime ("Sun Nov  6
// 08:49:37 1994") forms. Names are case-sensitive; the day name must be the date's. Returns
// ms since the epoch (a whole second); nullopt on anything else.
std::optional<int64_t> ParseHttpDate(std::string_view text);
// The IMF-fixdate of the second `epoch_ms` falls in (the milliseconds are dropped).
std::string FormatHttpDate(int64_t epoch_ms);

}  // namespace rg::core
