#pragma once
// An in-process fake of a Ray head's Jobs REST API (docs/ray-jobs-api.md),
// faithful to the quirks that ray-gitops relies on, so that the contract suite gives the same
// answers against it as against a real Ray 2.60 head.
//
// Lifecycle: by default a job's fate follows its entrypoint, as a real head's would:
//   `sleep N...`             RUNNING until stopped or until N seconds have passed (then SUCCEEDED)
//   `false`, `exit K` (K>0)  FAILED with driver_exit_code K (1 for `false`)
//   `cat FILE`               logs FILE's content as read from the job's code package (below);
//                            FAILED with exit code 1 and `cat: FILE: No such file or directory`
//                            when the package has no such file, or the job has no package
//   anything else            SUCCEEDED with driver_exit_code 0; `echo WORDS` logs WORDS
// A job whose entrypoint resources the fake cluster cannot satisfy stays PENDING. Progress is
// computed from the monotonic clock whenever the server is asked, so no timer thread exists;
// with FakeRayOptions::clock that is the test's clock, and a test moves jobs on by advancing
// it instead of sleeping.
//
// Code packages: GET/PUT /api/packages/gcs/<name> keep zips in memory as Ray's package store
// (GCS) does: GET answers 200 with an empty body when the package is held, else 404 `Package
// gcs://<name> does not exist`; PUT stores the body as sent, and refuses one over 100 MiB with
// 413 `Maximum request body size 104857600 exceeded.` as the dashboard does. Names are not
// checked (Ray stores any). Restart forgets every package. A job whose runtime_env.working_dir
// is `gcs://<name>` sets its runtime env up when it would start: if the package is not held
// (or is not a zip) it ends FAILED with error_type RUNTIME_ENV_SETUP_FAILURE, a message shaped
// as Ray 2.51.1 and 2.60.0 word it (`runtime_env setup failed: ... OSError: Failed to download
// runtime_env file package gcs://<name> ...`), no driver (null exit code and node) and empty
// logs; otherwise it runs in the package's files as they were at that moment (`cat FILE`).
// Tests can take over a job with SetStatus, after which it no longer moves by itself.
//
// Thread-safe: the HTTP threads and the test thread share one lock.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/ray_job.h"
#include "reconciler/ports/clock.h"

namespace rg::testing {

// Route names for fault injection and counters: the method and the path pattern.
inline constexpr std::string_view kRouteVersion = "GET /api/version";
inline constexpr std::string_view kRouteAuthMode = "GET /api/authentication_mode";
inline constexpr std::string_view kRouteHealthz = "GET /api/gcs_healthz";
inline constexpr std::string_view kRouteClusterStatus = "GET /api/cluster_status";
inline constexpr std::string_view kRouteSubmit = "POST /api/jobs/";
inline constexpr std::string_view kRouteList = "GET /api/jobs/";
inline constexpr std::string_view kRouteGet = "GET /api/jobs/{id}";
inline constexpr std::string_view kRouteStop = "POST /api/jobs/{id}/stop";
inline constexpr std::string_view kRouteDelete = "DELETE /api/jobs/{id}";
inline constexpr std::string_view kRouteLogs = "GET /api/jobs/{id}/logs";
inline constexpr std::string_view kRoutePackageGet = "GET /api/packages/gcs/{name}";
inline constexpr std::string_view kRoutePackagePut = "PUT /api/packages/gcs/{name}";

struct FakeRayOptions {
  std::string ray_version = "2.60.0";
  // Every resource's total (GET /api/cluster_status), and how much of it is in use. A job is
  // schedulable when its entrypoint resources fit the totals; the amounts in use only show in
  // the cluster status (a test holds a job PENDING on a busy cluster with SetStatus).
  std::map<std::string, double> cluster_resources = {{"CPU", 4}, {"worker_node", 2}};
  std::map<std::string, double> cluster_used;
  // When set, the server behaves as a head started with RAY_AUTH_MODE=token.
  std::optional<std::string> token;
  std::chrono::milliseconds start_delay{50};  // PENDING -> RUNNING
  std::chrono::milliseconds run_time{100};    // RUNNING -> end, for entrypoints that are not sleep
  std::chrono::milliseconds stop_delay{150};  // stop request -> STOPPED (Ray stops asynchronously)
  // The clock jobs move on and their times come from (MonotonicUs, NowMs); null: the
  // process's steady and system clocks. Not owned; must outlive the server.
  ports::Clock* clock = nullptr;
  // The head's wall clock minus `clock`'s (or the system's): its jobs' start and end times and
  // the Date header of every answer (sent as a real head's aiohttp sends it: IMF-fixdate, the
  // second its clock shows) are read on it. Negative: the head is behind the daemon.
  std::chrono::milliseconds clock_offset{0};
  // False: no socket, no thread; only Respond reaches the head (address() then names port 0).
  bool listen = true;
  // When set, every request received is appended to this file as "<METHOD> <path>" on a line,
  // as it arrives (a script checks that nothing reached the head).
  std::string request_log;
};

// A head whose jobs move only on `clock`: with a FakeClock the test never advances, a
// submitted job stays PENDING (or in whatever state SetStatus puts it) however long the test
// takes.
inline FakeRayOptions FrozenHeadOptions(ports::Clock* clock) {
  FakeRayOptions options;
  options.clock = clock;
  return options;
}

// One request to the head in process, and its answer; `lost` when the answer never came
// (DropNext), and then status and body are meaningless.
struct FakeRayRequest {
  std::string method;
  std::string path;  // may carry a query
  std::string body;
  std::map<std::string, std::string> headers;
};
struct FakeRayAnswer {
  int status = 0;
  std::string body;
  bool lost = false;
  std::map<std::string, std::string> headers;  // Date and Content-Type, as over HTTP
};

class FakeRayServer {
 public:
  // Binds 127.0.0.1 on a free port and serves from a background thread.
  explicit FakeRayServer(FakeRayOptions options = {});
  ~FakeRayServer();
  FakeRayServer(const FakeRayServer&) = delete;
  FakeRayServer& operator=(const FakeRayServer&) = delete;

  int port() const;
  std::string address() const;  // http://127.0.0.1:<port>

  // The request handled as if it came over HTTP: counted, subject to the faults, holds and
  // latency below, answered with the same status and body.
  FakeRayAnswer Respond(const FakeRayRequest& request);

  // --- driving jobs ---
  // Takes the job over: it keeps `status` until the next SetStatus, whatever its entrypoint.
  // Terminal statuses set end_time; FAILED sets driver_exit_code to `exit_code` (default 1)
  // and error_type to JOB_ENTRYPOINT_COMMAND_ERROR, unless `error_type` names another (Ray's
  // JobErrorType, e.g. JOB_SUPERVISOR_ACTOR_DIED: then the exit code is `exit_code` as given,
  // null by default, as a head whose supervisor died gives none). Returns false when no such
  // job exists.
  bool SetStatus(std::string_view submission_id, core::RayJobStatus status,
                 std::string message = "", std::optional<int64_t> exit_code = std::nullopt,
                 std::optional<std::string> error_type = std::nullopt);
  bool AppendLogs(std::string_view submission_id, std::string_view text);
  // Finishes every requested stop now and advances every job to the present.
  void Tick();
  // A head restart without GCS fault tolerance: every job and every package is forgotten,
  // session_name changes.
  void Restart();
  // A job started with ray.init() outside the Jobs API (type DRIVER, no submission id).
  void AddDriverJob(std::string job_id, std::string entrypoint);
  void SetToken(std::optional<std::string> token);
  void SetClusterResources(std::map<std::string, double> resources,
                           std::map<std::string, double> used = {});
  // FakeRayOptions::clock_offset from now on: the head's clock is set (a step, as NTP may).
  void SetClockOffset(std::chrono::milliseconds offset);
  // FakeRayOptions::clock: the clock the head's is offset from (null: the system's).
  ports::Clock* clock() const;

  // --- observing ---
  std::optional<core::RayJobStatus> StatusOf(std::string_view submission_id);
  size_t JobCount() const;
  // Every POST /api/jobs/ body received, in order, as sent.
  std::vector<std::string> SubmitBodies() const;
  std::string SessionName() const;
  // The names of the packages held (PUT /api/packages/gcs/<name>), sorted.
  std::vector<std::string> PackageNames() const;
  // The bytes of a package as uploaded; nullopt when it is not held.
  std::optional<std::string> PackageBytes(std::string_view name) const;
  // Requests seen per route (see the kRoute* names; unknown paths count as "<METHOD> other").
  int RequestCount(std::string_view route) const;
  // The headers of the last request to `route` (names lowercased); empty if none.
  std::map<std::string, std::string> LastHeaders(std::string_view route) const;
  void ResetCounters();

  // --- fault injection ---
  // The next `count` requests to `route` get `status` with a text/plain `body`, untouched.
  void FailNext(std::string_view route, int count, int status,
                std::string body = "injected failure");
  // The next `count` requests to `route` lose their answer: the connection is closed before a
  // complete response is sent. With `after_handling`, the request takes effect first (e.g. the
  // job is accepted), which is what a client sees when a proxy or the network drops a reply.
  void DropNext(std::string_view route, int count, bool after_handling);
  // Every request waits this long before it is handled.
  void SetLatency(std::chrono::milliseconds latency);
  // The next `count` requests to `route` take effect at once (e.g. the job is accepted), but
  // their answer is held back for `delay`: the window in which a client that crashes has
  // changed the cluster without learning so.
  void HoldAnswerNext(std::string_view route, int count, std::chrono::milliseconds delay);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rg::testing
