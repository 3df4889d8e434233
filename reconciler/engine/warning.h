#pragma once
// Something a person should look at that does not make the daemon unready (docs/daemon.md,
// "Readiness"): an invalid cluster file or spec, an unreadable status file, foreign jobs. A pass
// returns its warnings; the daemon shows them in /readyz's body, on the status page and as the
// metric rg_warnings{kind=...} that the documented alerts use (docs/operations.md). A driver
// log not kept, a finished run not deleted and a clock off from the Ray head's are warnings
// too.

#include <string>
#include <string_view>

namespace rg::engine {

inline constexpr std::string_view kWarnInvalidCluster = "invalid_cluster";
inline constexpr std::string_view kWarnInvalidSpec = "invalid_spec";
inline constexpr std::string_view kWarnUnreadableStatus = "unreadable_status";
inline constexpr std::string_view kWarnForeignJobs = "foreign_jobs";
// A run ended and its driver log could not be read from Ray or written to its artifacts.
inline constexpr std::string_view kWarnDriverLog = "driver_log";
// A finished run due for deletion (--gc-finished-after) could not be deleted from Ray.
inline constexpr std::string_view kWarnGcFinished = "gc_finished";
// The daemon's clock and the Ray head's differ by more than a minute (engine/head_clock.h):
// deadlines and clean-up count on the head's, but people reading the two see different times.
inline constexpr std::string_view kWarnClockSkew = "clock_skew";
// A job is frozen because its submission cannot have its secrets (engine/job_secrets.h): a
// reference missing or refused, or env delivery to a Jobs API anyone can read.
inline constexpr std::string_view kWarnSecret = "secret";

struct Warning {
  std::string kind;     // one of kWarn*
  std::string message;  // one line for people, redacted; names the file or job and the fix

  friend bool operator==(const Warning&, const Warning&) = default;
};

}  // namespace rg::engine
