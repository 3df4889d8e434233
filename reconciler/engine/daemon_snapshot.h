#pragma once
// What the daemon knows about itself and its jobs at one moment: the reconcile loop fills it,
// the HTTP server (/readyz, /api/v1/status, the status page) reads it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/status_model.h"
#include "reconciler/engine/warning.h"

namespace rg::engine {

struct DaemonSnapshot {
  int64_t now_ms = 0;
  std::string instance;  // --instance
  std::string repo_url;  // credentials stripped
  std::string branch;    // the watched branch
  std::string status_branch;
  std::string ray_address;    // credentials stripped
  std::string dashboard_url;  // base URL of the Ray dashboard (links on the status page)
  std::optional<int64_t> last_pass_start_ms;
  std::optional<int64_t> last_pass_end_ms;
  std::optional<int64_t> last_success_ms;  // end of the last pass that did not fail
  std::string last_error;                  // empty after a successful pass
  int consecutive_failures = 0;
  std::optional<int64_t> next_pass_ms;  // when the timer (or backoff) fires next
  bool pass_in_flight = false;
  bool shutting_down = false;
  // A pass succeeded within the readiness window (three intervals plus the pass deadline),
  // no pass has been running past its deadline, and no stop was requested.
  bool ready = false;
  // Why the daemon is not ready, for people (empty when ready): shutting down, a pass running
  // past its deadline, no successful pass within the window (with the last error).
  std::string unready_reason;
  // The last completed pass's warnings (they do not make the daemon unready); a pass that
  // failed before it learnt anything (Git or Ray unreachable) keeps the earlier ones.
  std::vector<Warning> warnings;
  std::string spec_commit;    // commit of the desired state last read
  std::string status_commit;  // last status commit made by this process
  bool blocked = false;       // the last pass was held back by a guard
  std::string blocked_reason;
  // The jobs as last known, by name: the records of the last pass that got as far as a plan;
  // until one did, the ledger's records read by a pass that could not list Ray.
  std::vector<core::StatusRecord> jobs;
  std::optional<int64_t> jobs_as_of_ms;  // end of the pass that read them; nullopt: none yet
  bool jobs_from_ledger = false;         // `jobs` are the ledger's, not a pass's records
  // What the last pass could not reach ("Ray" or "Git"; empty when it reached both), and the
  // start of the first pass in a row that could not reach it.
  std::string unreachable;
  std::optional<int64_t> unreachable_since_ms;
};

}  // namespace rg::engine
