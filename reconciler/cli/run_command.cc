// `ray-gitops run`: the daemon (docs/daemon.md). Reconcile passes on a timer and on triggers
// (webhook, POST /api/v1/sync), the HTTP endpoints, and a graceful shutdown: the first
// SIGTERM/SIGINT starts no new pass or action and cancels the Git transfer in flight at once;
// a Ray call in flight is awaited up to 10 s, then abandoned; the pass records status and the
// process exits 0, within 15 s in any case. A second signal exits at once (128 + the signal).

#include <pthread.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_transport.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/adapters/ssh_host_keys.h"
#include "reconciler/adapters/system_clock.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/cli/heap.h"
#include "reconciler/cli/logging.h"
#include "reconciler/cli/pass_runner.h"
#include "reconciler/cli/pass_thread.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/duration.h"
#include "reconciler/core/metrics.h"
#include "reconciler/core/render.h"
#include "reconciler/engine/instrumented_ports.h"
#include "reconciler/engine/pass_memo.h"
#include "reconciler/engine/reconcile_loop.h"
#include "reconciler/server/http_server.h"
#include "reconciler/server/webhook_verifier.h"

namespace rg::cli {
namespace {

struct RunFlags {
  RepoOptions repo;
  std::string branch;  // --branch: empty = the remote's default branch
  std::string interval = "15s";
  std::string max_backoff = "5m";
  std::string pass_deadline = "5m";
  std::string git_timeout = "60s";
  std::string listen = std::string(server::kDefaultListenAddress);
  bool listen_any = false;
  std::string webhook_secret_file;
  std::string webhook_kind = "auto";
  PassFlags pass;
};

std::string ShortCommit(const std::string& commit) { return commit.substr(0, 12); }

void LogPassReport(const engine::PassReport& report) {
  const engine::PassResult& r = *report.result;
  LogPass(r);
  int submits = 0;
  int stops = 0;
  int adoptions = 0;
  for (const engine::ActionOutcome& o : r.outcomes) {
    if (!o.ok) continue;
    if (o.action.kind == core::ActionKind::kStop) {
      stops += o.stop_sent ? 1 : 0;
    } else {
      (o.adopted ? adoptions : submits) += 1;
    }
  }
  std::map<std::string, std::string> fields = {
      {"result", std::string(engine::PassVerdictName(report.verdict))},
      {"trigger", report.trigger},
      {"duration_ms", std::to_string(report.duration_ms)},
      {"submits", std::to_string(submits)},
      {"stops", std::to_string(stops)},
      {"adoptions", std::to_string(adoptions)},
      {"errors", std::to_string(r.errors.size() + r.diagnostics.size())},
      {"next_pass_in_ms", std::to_string(report.next_pass_in_ms)},
  };
  if (!r.spec_commit.empty()) fields["commit"] = ShortCommit(r.spec_commit);
  if (r.narrow) fields["narrow"] = std::to_string(r.narrow_names.size());
  if (r.actions_not_started > 0) {
    fields["not_started"] = std::to_string(r.actions_not_started);
  }
  if (report.consecutive_failures > 0) {
    fields["consecutive_failures"] = std::to_string(report.consecutive_failures);
  }
  const char* level = report.verdict == engine::PassVerdict::kFailed ? "error"
                      : report.verdict == engine::PassVerdict::kOk   ? "info"
                                                                     : "warn";
  LogEvent(level, "pass", fields);
}

engine::PassResult FailedBeforePass(const core::Error& error) {
  engine::PassResult r;
  ++r.errors_by_kind[error.kind()];
  r.errors.emplace_back(error.kind(), RedactForOutput(error.message()));
  // The desired state could not be loaded: Git cannot be reached (network, credentials).
  if (error.IsTransient() || error.IsUnauthorized()) r.unreachable = "Git";
  r.exit_status = engine::kExitError;
  return r;
}

// The branch the remote's HEAD names, for the webhook's branch filter; empty when unknown.
std::string DefaultBranch(ports::DesiredStateSource& source) {
  core::Result<ports::DesiredSnapshot> head = source.Load("HEAD");
  constexpr std::string_view kHeads = "refs/heads/";
  if (!head.ok() || !head->ref.starts_with(kHeads)) return "";
  return head->ref.substr(kHeads.size());
}

// Shutdown timings (docs/daemon.md), counted from the first signal.
constexpr int64_t kRayGraceMs = 10'000;  // then the Ray calls in flight are abandoned
constexpr int64_t kExitByMs = 14'000;    // then the process exits 0 whatever still runs

// The daemon's signal thread (SIGTERM and SIGINT are blocked everywhere else). The first
// signal asks the loop to stop and cancels the Git transfers in flight; after kRayGraceMs it
// abandons the Ray calls (and cuts any Git transfer begun since, such as a stalled status
// push); at kExitByMs it ends the process with 0. A second signal ends it at once. Every tick
// it also refreshes the loop's live gauges and logs a pass that outlasts its deadline.
class ShutdownWatch {
 public:
  ShutdownWatch() {
    thread_ = std::thread([this]() { Watch(); });
  }
  ~ShutdownWatch() {
    done_ = true;
    thread_.join();
  }
  ShutdownWatch(const ShutdownWatch&) = delete;
  ShutdownWatch& operator=(const ShutdownWatch&) = delete;

  // REQUIRES: called before any other thread starts, so every thread inherits the mask.
  static void Block() {
    sigset_t set = Set();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }

  // From now on a signal stops `loop` (at once, when one came already); null detaches it.
  void Attach(engine::ReconcileLoop* loop) {
    std::lock_guard<std::mutex> lock(mu_);
    loop_ = loop;
    if (signalled_ && loop_ != nullptr) loop_->RequestStop();
  }
  bool signalled() {
    std::lock_guard<std::mutex> lock(mu_);
    return signalled_;
  }

 private:
  static sigset_t Set() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
  }

  void Watch() {
    const sigset_t set = Set();
    const timespec tick{0, 200'000'000};
    while (!done_) {
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig > 0) OnSignal(sig);
      OnTick();
    }
  }

  void OnSignal(int sig) {
    const std::string name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    std::lock_guard<std::mutex> lock(mu_);
    if (signalled_) {
      LogEvent("warn", "second signal: exiting at once", {{"signal", name}});
      std::_Exit(128 + sig);
    }
    signalled_ = true;
    since_ = std::chrono::steady_clock::now();
    LogEvent("info",
             "shutting down: no new pass or action; Git transfers in flight are cancelled, a "
             "Ray call in flight is awaited up to 10 s",
             {{"signal", name}});
    adapters::CancelGitTransfers();
    if (loop_ != nullptr) loop_->RequestStop();
  }

  void OnTick() {
    std::lock_guard<std::mutex> lock(mu_);
    if (loop_ != nullptr) {
      if (std::string late = loop_->PublishLiveMetrics(); !late.empty()) {
        LogEvent("warn", "not ready: " + late);
      }
    }
    if (!signalled_) return;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - since_)
                        .count();
    if (ms >= kRayGraceMs && !abandoned_) {
      abandoned_ = true;
      LogEvent("warn",
               "a call in flight did not end within 10 s of the signal: abandoned (a submitted "
               "run is adopted by its id at the next start)");
      adapters::AbandonRayCalls();
      adapters::CancelGitTransfers();
    }
    if (ms >= kExitByMs) {
      LogEvent("warn", "the pass in flight did not end within 14 s of the signal: exiting");
      std::_Exit(0);
    }
  }

  std::mutex mu_;
  engine::ReconcileLoop* loop_ = nullptr;  // guarded by mu_
  bool signalled_ = false;
  bool abandoned_ = false;
  std::chrono::steady_clock::time_point since_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

struct Timings {
  int64_t interval_ms = 0;
  int64_t max_backoff_ms = 0;
  int64_t pass_deadline_ms = 0;
  int64_t git_timeout_ms = 0;
};

std::optional<Timings> ParseTimings(const RunFlags& flags) {
  const auto interval = core::ParseDurationMs(flags.interval);
  const auto max_backoff = core::ParseDurationMs(flags.max_backoff);
  const auto pass_deadline = core::ParseDurationMs(flags.pass_deadline);
  const auto git_timeout = core::ParseDurationMs(flags.git_timeout);
  if (!interval || !max_backoff || !pass_deadline || !git_timeout) {
    LogEvent("error",
             "--interval, --max-backoff, --pass-deadline and --git-timeout take a positive "
             "duration such as 500ms, 15s, 2m or 1h");
    return std::nullopt;
  }
  return Timings{*interval, *max_backoff, *pass_deadline, *git_timeout};
}

// The HTTP server's options from the flags (the webhook secret read from its file); nullopt
// after logging why when a flag is wrong.
std::optional<server::HttpServerOptions> HttpOptionsFrom(const RunFlags& flags) {
  const std::optional<server::WebhookAuthMode> webhook_mode =
      server::ParseWebhookAuthMode(flags.webhook_kind);
  if (!webhook_mode) {
    LogEvent("error", "--webhook-kind takes auto, github, gitlab or bearer");
    return std::nullopt;
  }
  server::HttpServerOptions http;
  http.listen = flags.listen;
  http.allow_non_loopback = flags.listen_any;
  http.webhook.mode = *webhook_mode;
  if (!flags.webhook_secret_file.empty()) {
    core::Result<std::string> secret = server::ReadWebhookSecretFile(flags.webhook_secret_file);
    if (!secret.ok()) {
      LogEvent("error", secret.error().ToString());
      return std::nullopt;
    }
    http.webhook.secret = std::move(*secret);
  }
  return http;
}

// --branch, else the remote's default branch; empty (with a warning) when that is unknown.
std::string WatchedBranch(const RunFlags& flags, ports::DesiredStateSource& source) {
  if (!flags.branch.empty()) return flags.branch;
  std::string branch = DefaultBranch(source);
  if (branch.empty()) {
    LogEvent("warn",
             "the remote's default branch is unknown (unreachable?): every verified "
             "webhook push triggers a pass; give --branch to filter by branch");
  }
  return branch;
}

// The loop's timings, the pass's options and the identity its snapshots show.
engine::LoopOptions LoopOptionsFrom(const RunFlags& flags, const Timings& timings,
                                    const server::HttpServerOptions& http,
                                    const std::string& branch, const std::string& repo_url) {
  engine::LoopOptions options;
  options.interval_ms = timings.interval_ms;
  options.max_backoff_ms = timings.max_backoff_ms;
  options.initial_backoff_ms =
      std::min<int64_t>(options.initial_backoff_ms, timings.max_backoff_ms);
  options.pass_deadline_ms = timings.pass_deadline_ms;
  options.pass.ref = flags.repo.ref;
  ApplyPassFlags(flags.pass, &options.pass);
  if (http.webhook.secret) options.pass.secrets.Add(*http.webhook.secret);
  AddLogSecrets(options.pass.secrets);
  options.identity.instance = flags.repo.instance;
  options.identity.repo_url = core::StripUrlCredentials(repo_url);
  options.identity.branch = branch;
  options.identity.status_branch = flags.repo.status_branch;
  options.identity.dashboard_url = options.pass.dashboard_url;
  return options;
}

// Every Git call of the daemon is bounded by --git-timeout (docs/daemon.md, "Deadlines").
void ApplyGitTimeout(const Timings& timings) {
  adapters::GitTransportLimits git_limits = adapters::CurrentGitTransportLimits();
  git_limits.io_timeout = std::chrono::milliseconds(timings.git_timeout_ms);
  adapters::SetGitTransportLimits(git_limits);
}

// One pass of the daemon: on the repository through `source` and `store`, its Ray calls
// counted in `metrics`; the loop learns the Ray address each pass resolves.
// The loop a pass reports to; the pass function is built before the loop that runs it, so the
// loop is filled in once it exists (a pass never runs before that).
struct LoopSlot {
  engine::ReconcileLoop* loop = nullptr;
};

// What the daemon's passes keep from one to the next: the last full pass's inputs (to stop a
// pass early when none moved: engine/pass_memo.h), a client of the head it talked to, and the
// counters behind the own-time and parse metrics.
struct DaemonPassState {
  engine::PassMemo memo;
  // What a narrow pass needs of the last full pass, when that found the world at rest.
  engine::PassIndex index;
  // Set by a full pass that made an index: the loop's thread copies it and the status store's
  // rows out of the pass thread's arena (docs/daemon.md, "Memory").
  bool compact_due = false;
  core::SipHasher::Key digest_key = engine::RandomDigestKey();
  std::unique_ptr<ports::JobServer> checker;  // lists Ray for the early check
  std::string checker_address;
  std::atomic<int64_t> ray_us{0};  // time in Ray calls, all passes
  int spec_parses = 0;             // as last added to rg_spec_parses_total
  int status_parses = 0;           // as last added to rg_status_parses_total
  // Set by a pass that ran (full or stopped early): once what it returned is freed, the pass
  // thread's arena has pages to give back (LoopOptions::after_pass). A pass that failed before
  // it started leaves nothing behind.
  std::atomic<bool> trim_due{false};
  // The code packages this daemon uploaded or found in its ledger: ours, whatever pass asks.
  engine::KnownPackages known_packages;
  PassThread thread;  // where every pass runs (pass_thread.h)
};

void DeclareDaemonPassMetrics(core::MetricsRegistry& metrics) {
  metrics.DeclareHistogram(
      "rg_pass_own_seconds",
      "Time of a pass spent in ray-gitops itself: the pass minus its Ray requests (answers read "
      "included) and its Git network transfers (fetch, push).",
      {0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
  metrics.DeclareCounter("rg_spec_parses_total",
                         "JobSpec and cluster files parsed from YAML (a blob already parsed, in "
                         "memory or in the parse cache, is not parsed again).");
  metrics.DeclareCounter("rg_status_parses_total",
                         "Status files decoded from YAML (same caching as the specs).");
}

// Times one pass's own part (the pass minus its Ray requests and Git transfers) and counts the
// files it parsed, into the daemon's metrics.
class PassAccounting {
 public:
  PassAccounting(const RepoHandles& repo, core::MetricsRegistry& metrics,
                 adapters::SystemClock& clock, DaemonPassState& state)
      : repo_(repo),
        metrics_(metrics),
        clock_(clock),
        state_(state),
        start_us_(clock.MonotonicUs()),
        ray_before_(state.ray_us.load()),
        git_before_(repo.workspace->network_us()) {}

  void Record() {
    const int64_t outside =
        (state_.ray_us.load() - ray_before_) + (repo_.workspace->network_us() - git_before_);
    const int64_t own = std::max<int64_t>(0, clock_.MonotonicUs() - start_us_ - outside);
    metrics_.Observe("rg_pass_own_seconds", static_cast<double>(own) / 1e6);
    const int spec_parses = repo_.source->parses();
    metrics_.Add("rg_spec_parses_total", spec_parses - state_.spec_parses);
    state_.spec_parses = spec_parses;
    if (repo_.store) {
      const int status_parses = repo_.store->status_parses();
      metrics_.Add("rg_status_parses_total", status_parses - state_.status_parses);
      state_.status_parses = status_parses;
    }
  }

 private:
  const RepoHandles& repo_;
  core::MetricsRegistry& metrics_;
  adapters::SystemClock& clock_;
  DaemonPassState& state_;
  int64_t start_us_;
  int64_t ray_before_;
  int64_t git_before_;
};

// This process's resident set size, from /proc/self/statm; nullopt where it cannot be read.
std::optional<int64_t> ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0;
  int64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return std::nullopt;
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// After a full pass: the parse cache saved (only when the pass parsed something), and what
// was parsed let go. At rest the daemon holds its jobs' records, not every spec and status
// file it parsed: the next full pass reads them back from the parse cache (docs/daemon.md,
// "Memory"). The allocator keeps freed heap unless asked (cli/heap.h); the holes a pass leaves
// (pack building, parsing) would otherwise make the resident size creep up over weeks though
// nothing leaks (tests/bench/daemon_soak.cc shows both).
void ReleaseParsedFiles(const RepoHandles& repo) {
  SaveParseCache(repo.parse_cache.get());
  if (repo.parse_cache) {
    repo.source->ReleaseMemory();
    if (repo.store) repo.store->ReleaseMemory();
    repo.parse_cache->Release();
  }
  DropGitCaches(repo);
  ReturnFreeMemory();
}

// The state the daemon's passes share, and the loop's after_pass hook that reads it: the
// allocator keeps freed heap unless asked (cli/heap.h). After every pass, once its
// result is freed, the pass thread's arena goes back to the system and the daemon's resident
// set falls to what it keeps (its jobs' records); rg_resident_bytes_after_pass shows it.
std::shared_ptr<DaemonPassState> NewPassState(engine::LoopOptions& options,
                                              core::MetricsRegistry& metrics) {
  metrics.DeclareGauge("rg_resident_bytes_after_pass",
                       "The daemon's resident set size after the last pass ended and the memory "
                       "it used was given back: what the daemon holds at rest.");
  auto state = std::make_shared<DaemonPassState>();
  options.after_pass = [state, &metrics]() {
    if (!state->trim_due.exchange(false)) return;
    ReturnFreeMemory();
    if (const std::optional<int64_t> resident = ResidentBytes()) {
      metrics.Set("rg_resident_bytes_after_pass", static_cast<double>(*resident));
    }
  };
  return state;
}

// A narrow pass when the last full pass left an index and only spec files changed since
// (engine/narrow_pass.h); nullopt when a full pass must run. Either way the index is spent:
// after a narrow pass the world is no longer the one it describes.
std::optional<engine::PassResult> NarrowPass(const GlobalOptions& global, const RunFlags& flags,
                                             ports::DesiredStateSource& source,
                                             ports::StatusStore* store,
                                             const engine::ReconcileOptions& options,
                                             const PassWiring& wiring, DaemonPassState& state) {
  if (!state.index.valid()) return std::nullopt;
  std::string why_not;
  core::Result<std::optional<PassRun>> run = RunNarrowPassOnRepo(
      global, flags.repo, source, store, options, wiring, state.index, &why_not);
  // Spent. Its memory goes when the next full pass indexes the world again.
  state.index.memo.valid = false;
  if (!run.ok() || !run->has_value()) {
    if (!run.ok()) why_not = run.error().message();
    LogEvent("debug", "a full pass, not a narrow one", {{"reason", why_not}});
    return std::nullopt;
  }
  state.memo = {};
  (*run)->result.snapshot.reset();
  return std::move((*run)->result);
}

// After a full pass: what the next pass compares its inputs with, the client it checks Ray
// with, and the head's address for the status page.
void RememberFullPass(const PassRun& run, const ports::StatusStore* store,
                      const std::string& dashboard_url, const LoopSlot& slot,
                      DaemonPassState& state) {
  state.memo = engine::RememberPass(run.result, store);
  if (run.make_server && run.ray_address != state.checker_address) {
    state.checker = run.make_server();
    state.checker_address = run.ray_address;
  }
  if (!run.ray_address.empty()) {
    slot.loop->SetRayAddress(run.ray_address,
                             dashboard_url.empty() ? run.ray_address : dashboard_url);
  }
}

// Runs each pass on the daemon's pass thread. After a full pass that made an index, the
// loop's thread copies what the daemon keeps of it (the index, the status store's rows) out of
// the pass thread's arena, whose pages then go back whole (docs/daemon.md, "Memory").
engine::PassFunction OnPassThread(const std::shared_ptr<DaemonPassState>& state,
                                  const RepoHandles& repo, engine::PassFunction pass) {
  return [state, &repo, pass = std::move(pass)](const engine::ReconcileOptions& pass_options) {
    engine::PassResult result;
    state->thread.Run([&]() { result = pass(pass_options); });
    if (std::exchange(state->compact_due, false)) {
      state->index = engine::PassIndex(state->index);
      if (repo.store) repo.store->CompactMemory();
    }
    return result;
  };
}

engine::PassFunction DaemonPass(const GlobalOptions& global, const RunFlags& flags,
                                ports::DesiredStateSource& source, ports::StatusStore* store,
                                const RepoHandles& repo, core::MetricsRegistry& metrics,
                                adapters::SystemClock& clock, const LoopSlot& slot,
                                const std::shared_ptr<DaemonPassState>& state) {
  DeclareDaemonPassMetrics(metrics);
  auto decorate = [&metrics, &clock, state](std::unique_ptr<ports::JobServer> inner) {
    return std::unique_ptr<ports::JobServer>(std::make_unique<engine::InstrumentedJobServer>(
        std::move(inner), metrics, clock, &state->ray_us));
  };
  auto pass = [&global, &flags, &source, store, &repo, &metrics, &clock, decorate, state,
               &slot](const engine::ReconcileOptions& pass_options) {
    PassAccounting accounting(repo, metrics, clock, *state);
    if (state->checker) {
      std::optional<engine::PassResult> same =
          engine::UnchangedPass(state->memo, source, store, *state->checker, pass_options.ref,
                                state->digest_key, pass_options.now_ms);
      if (same) {
        accounting.Record();
        // Ray's job list as received (1 KB a job) was read into this thread's arena.
        state->trim_due = true;
        return std::move(*same);
      }
    }
    engine::ReconcileOptions options = pass_options;
    options.digest_key = state->digest_key;
    PassWiring wiring;
    wiring.artifacts = true;
    wiring.decorate = decorate;
    wiring.ray_call_attempts = 1;
    wiring.drop_git_caches = [&repo]() { DropGitCaches(repo); };
    wiring.known_packages = &state->known_packages;
    wiring.webhook_secret_file = flags.webhook_secret_file;
    if (std::optional<engine::PassResult> narrow =
            NarrowPass(global, flags, source, store, options, wiring, *state)) {
      accounting.Record();
      state->trim_due = true;
      return std::move(*narrow);
    }
    // A full pass reads and plans everything: what it frees goes back within 100 ms, as in
    // every one-shot command, and the default holds again once it is done (cli/heap.h).
    ReturnFreedPagesSoon();
    core::Result<PassRun> run = RunPassOnRepo(global, flags.repo, source, store, options, wiring);
    if (run.ok()) {
      state->index = engine::IndexPass(run->result, store);
      state->compact_due = state->index.valid();
    }
    ReleaseParsedFiles(repo);
    KeepFreedPagesLonger();
    if (!run.ok()) {
      state->memo = {};
      accounting.Record();
      return FailedBeforePass(run.error());
    }
    RememberFullPass(*run, store, pass_options.dashboard_url, slot, *state);
    accounting.Record();
    // Nobody downstream reads the desired state the pass planned from: let it go now.
    run->result.snapshot.reset();
    run->snapshot.reset();
    state->trim_due = true;
    return std::move(run->result);
  };
  return OnPassThread(state, repo, std::move(pass));
}

void LogStarted(const RunFlags& flags, const Timings& timings, const engine::LoopOptions& options,
                const server::HttpServerOptions& http, int port) {
  LogEvent("info", "started",
           {{"repo", options.identity.repo_url},
            {"branch", flags.repo.ref},
            {"status_branch", flags.repo.status_branch},
            {"instance", flags.repo.instance},
            {"interval_ms", std::to_string(timings.interval_ms)},
            {"pass_deadline_ms", std::to_string(timings.pass_deadline_ms)},
            {"listen", flags.listen},
            {"port", std::to_string(port)},
            {"webhook", http.webhook.secret ? flags.webhook_kind : "off"},
            {"allocator", std::string(AllocatorName())}});
}

// The repository, opened for the daemon's passes. An SSH remote whose host the known_hosts file
// does not name is refused here, before the first pass: every pass would be.
core::Result<RepoHandles> OpenDaemonRepo(const RepoOptions& repo) {
  core::Result<RepoHandles> handles = OpenRepo(repo);
  if (!handles.ok()) return handles;
  if (std::optional<core::Error> unknown =
          adapters::CheckKnownHostBeforeStart(handles->workspace->remote_url())) {
    return *unknown;
  }
  return handles;
}

int RunDaemon(const GlobalOptions& global, RunFlags flags) {
  ConfigureLogging(global);
  const std::optional<Timings> timings = ParseTimings(flags);
  if (!timings) return engine::kExitError;
  std::optional<server::HttpServerOptions> http_options = HttpOptionsFrom(flags);
  if (!http_options) return engine::kExitError;
  server::HttpServerOptions& http = *http_options;

  // Before any thread exists: the HTTP server's, the loop's submit workers and the signal
  // thread all inherit the blocked signals, which only the signal thread then waits for. The
  // signal thread starts before the first Git call, so a stalled remote at start-up is
  // cancelled by a signal too.
  ShutdownWatch::Block();
  ShutdownWatch watch;
  ApplyGitTimeout(*timings);

  core::Result<RepoHandles> handles = OpenDaemonRepo(flags.repo);
  if (!handles.ok()) {
    LogEvent("error", handles.error().ToString());
    return engine::kExitError;
  }
  adapters::SystemClock clock;
  core::MetricsRegistry metrics;
  engine::InstrumentedDesiredStateSource source(*handles->source, metrics, clock);
  engine::InstrumentedStatusStore store(*handles->store, metrics, clock);

  const std::string branch = WatchedBranch(flags, source);
  flags.repo.ref = branch.empty() ? "HEAD" : branch;
  if (watch.signalled()) {
    LogEvent("info", "stopped before the first pass");
    return 0;
  }

  engine::LoopOptions options =
      LoopOptionsFrom(flags, *timings, http, branch, handles->workspace->recorded_url());
  const std::shared_ptr<DaemonPassState> pass_state = NewPassState(options, metrics);
  LoopSlot slot;
  ports::StatusStore* store_ptr = flags.pass.no_status ? nullptr : &store;
  engine::ReconcileLoop loop(
      options,
      DaemonPass(global, flags, source, store_ptr, *handles, metrics, clock, slot, pass_state),
      clock, &metrics, LogPassReport);
  slot.loop = &loop;
  http.branch = branch;
  server::HttpServer http_server(
      http, metrics, [&loop](const std::string& trigger_source) { loop.Trigger(trigger_source); },
      [&loop]() { return loop.Snapshot(); });
  if (core::Status started = http_server.Start(); !started.ok()) {
    LogEvent("error", "cannot serve on " + flags.listen + ": " + started.error().ToString());
    return engine::kExitError;
  }
  LogStarted(flags, *timings, options, http, http_server.port());

  watch.Attach(&loop);
  loop.Run();
  watch.Attach(nullptr);
  http_server.Stop();
  LogEvent("info", "stopped");
  return 0;
}

}  // namespace

void AddRunCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run", "the daemon: reconcile on a timer and on webhooks until SIGTERM/SIGINT");
  AddRepoOptions(cmd, &flags->repo, /*with_ref=*/false, /*with_artifacts=*/true);
  AddPreviousRepoOption(cmd, &flags->repo);
  cmd->add_option("--branch", flags->branch, "branch to watch (default: the remote's HEAD)");
  cmd->add_option("--interval", flags->interval, "time between passes: 500ms, 15s, 2m (15s)");
  cmd->add_option("--max-backoff", flags->max_backoff,
                  "longest wait between failed passes (5m); backoff starts at 1s and doubles");
  cmd->add_option("--pass-deadline", flags->pass_deadline,
                  "a pass running longer makes the daemon not ready (/readyz 503) (5m)");
  cmd->add_option("--git-timeout", flags->git_timeout,
                  "a Git connection that moves no byte for this long fails (60s)");
  cmd->add_option("--listen", flags->listen, "HTTP address host:port (127.0.0.1:9190)");
  cmd->add_flag("--listen-any", flags->listen_any, "allow a non-loopback --listen host");
  cmd->add_option("--webhook-secret-file", flags->webhook_secret_file,
                  "shared secret of POST /webhook (without it the webhook is off)");
  cmd->add_option("--webhook-kind,--webhook-mode", flags->webhook_kind,
                  "webhook authentication: auto, github, gitlab or bearer")
      ->check(CLI::IsMember({"auto", "github", "gitlab", "bearer"}));
  CLI::Option* max_stops = AddPassFlags(cmd, &flags->pass, " per pass");
  cmd->callback([&global, flags, exit_code, max_stops]() {
    flags->pass.max_stops_given = max_stops->count() > 0;
    PrepareGitSsh(global, &flags->repo);
    *exit_code = RunDaemon(global, *flags);
  });
}

}  // namespace rg::cli
