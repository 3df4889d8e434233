#pragma once
// Something a person should look at that does not make the daemon unready (docs/daemon.md,
// "Readiness"): an invalid cluster file or spec, an unreadable status file, foreign jobs. A pass
// returns its warnings; the daemon shows them in /readyz's body, on the status page and as the
// metric rg_warnings{kind=...} that the documented alerts use (docs/operations.md).

#include <string>
#include <string_view>

namespace rg::engine {

inline constexpr std::string_view kWarnInvalidCluster = "invalid_cluster";
inline constexpr std::string_view kWarnInvalidSpec = "invalid_spec";
inline constexpr std::string_view kWarnUnreadableStatus = "unreadable_status";
inline constexpr std::string_view kWarnForeignJobs = "foreign_jobs";

struct Warning {
  std::string kind;     // one of kWarn*
  std::string message;  // one line for people, redacted; names the file or job and the fix

  friend bool operator==(const Warning&, const Warning&) = default;
};

}  // namespace rg::engine
