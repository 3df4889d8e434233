// Soak benchmark: the daemon's reconcile pass, as `ray-gitops run` wires it (the clone in a cache
// dir, the instrumented Git and Ray ports, the loop and its metrics), run N times (2,000 by
// default) against a real bare repository made in a temp dir and the fake Ray head. Prints the
// resident set size every 100 passes and the growth after warm-up (the first 10% of the
// passes), and exits 1 when that growth exceeds --max-growth-kb (when given).
//
// Every pass fetches; the inputs change as they do for a daemon in use, so that fetches
// download and the status branch gets commits and pushes:
// - every 10th pass, a person pushes a commit that changes a file outside jobs/;
// - every 50th pass, one spec's entrypoint changes (the old run is stopped, a new one submitted);
// - every 25th pass, one run ends in Ray (SUCCEEDED), which the status branch records.
// A push that finds the world at rest is a narrow pass, as in the daemon (engine/narrow_pass.h).
//
// Usage: daemon_soak [--passes N] [--max-growth-kb K] [--no-narrow]

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "reconciler/adapters/system_clock.h"
#include "reconciler/cli/pass_runner.h"
#include "reconciler/cli/repo_options.h"
#include "reconciler/core/metrics.h"
#include "reconciler/engine/instrumented_ports.h"
#include "reconciler/engine/narrow_pass.h"
#include "reconciler/engine/reconcile_loop.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

constexpr int kJobs = 4;

// A line of /proc/self/status in KB: VmRSS (all), RssAnon (heap, stacks) or RssFile (mapped
// files, such as the clone's packs).
long StatusKb(const std::string& name = "VmRSS:") {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == name) {
      long kb = 0;
      status >> kb;
      return kb;
    }
    status.ignore(4096, '\n');
  }
  return -1;
}

std::string Spec(int job, int version) {
  return "workload: custom\nentrypoint: sleep " + std::to_string(600 + version) +
         "\nentrypoint_num_cpus: 0\n# job " + std::to_string(job) + "\n";
}

struct Args {
  int passes = 2000;
  long max_growth_kb = -1;
  bool narrow = true;  // --no-narrow: every pass a full one
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--no-narrow") {
      args.narrow = false;
      continue;
    }
    if (i + 1 >= argc) break;
    if (flag == "--passes") args.passes = std::atoi(argv[i + 1]);
    if (flag == "--max-growth-kb") args.max_growth_kb = std::atol(argv[i + 1]);
    ++i;
  }
  if (args.passes < 10) args.passes = 10;
  return args;
}

// The person who edits the desired-state repository between passes, and the Ray head.
struct World {
  std::string dir;
  std::string remote = dir + "/remote.git";
  testing::FakeRayServer ray;
  std::unique_ptr<testing::GitTestClone> person;
  std::map<int, int> versions;  // job -> entrypoint version

  explicit World(std::string in) : dir(std::move(in)) {
    testing::InitBareRepository(remote);
    person = std::make_unique<testing::GitTestClone>(remote, dir + "/person.git");
    person->Write("cluster.yaml", "address: " + ray.address() + "\n");
    for (int j = 0; j < kJobs; ++j) person->Write(SpecPath(j), Spec(j, versions[j]));
    person->Write("notes.txt", "0\n");
    person->CommitAndPush("main", "initial");
  }

  static std::string SpecPath(int job) { return "jobs/job" + std::to_string(job) + ".yaml"; }

  // The changes before pass `n` (1-based).
  void Change(int n) {
    if (n % 25 == 0) EndOneRun();
    if (n % 50 == 0) {
      const int job = (n / 50) % kJobs;
      person->Write(SpecPath(job), Spec(job, ++versions[job]));
      person->CommitAndPush("main",
                            "job " + std::to_string(job) + " v" + std::to_string(versions[job]));
    } else if (n % 10 == 0) {
      person->Write("notes.txt", std::to_string(n) + "\n");
      person->CommitAndPush("main", "notes " + std::to_string(n));
    }
  }

  // The oldest run still RUNNING ends.
  void EndOneRun() {
    ray.Tick();
    for (const std::string& body : ray.SubmitBodies()) {
      const size_t at = body.find("\"submission_id\":\"");
      if (at == std::string::npos) continue;
      const size_t start = at + 17;
      const std::string id = body.substr(start, body.find('"', start) - start);
      if (ray.StatusOf(id) == core::RayJobStatus::kRunning) {
        ray.SetStatus(id, core::RayJobStatus::kSucceeded);
        return;
      }
    }
  }
};

// The world runs in a child process, so that the figures are the daemon's alone: the person's
// clone and the fake head keep their own memory. The parent writes the number of the pass
// about to run; the child makes that pass's changes and answers with one byte. The first line
// the child writes is the fake head's address.
struct WorldProcess {
  pid_t pid = -1;
  int to_child = -1;
  int from_child = -1;
  std::string ray_address;

  static WorldProcess Start(const std::string& dir) {
    int down[2];
    int up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) std::abort();
    WorldProcess w;
    w.pid = ::fork();
    if (w.pid == 0) {
      ::close(down[1]);
      ::close(up[0]);
      Serve(dir, down[0], up[1]);
      std::_Exit(0);
    }
    ::close(down[0]);
    ::close(up[1]);
    w.to_child = down[1];
    w.from_child = up[0];
    char c = 0;
    while (::read(w.from_child, &c, 1) == 1 && c != '\n') w.ray_address += c;
    return w;
  }

  static void Serve(const std::string& dir, int in, int out) {
    World world(dir);
    const std::string line = world.ray.address() + "\n";
    if (::write(out, line.data(), line.size()) < 0) return;
    int n = 0;
    while (::read(in, &n, sizeof(n)) == sizeof(n) && n > 0) {
      world.Change(n);
      const char ack = 'k';
      if (::write(out, &ack, 1) != 1) return;
    }
  }

  void Change(int n) const {
    char ack = 0;
    if (::write(to_child, &n, sizeof(n)) != sizeof(n) || ::read(from_child, &ack, 1) != 1) {
      std::fprintf(stderr, "the world process is gone\n");
      std::exit(2);
    }
  }

  void Stop() const {
    const int zero = 0;
    if (::write(to_child, &zero, sizeof(zero)) < 0) return;
    ::waitpid(pid, nullptr, 0);
  }
};

int Run(const Args& args) {
  testing::TempDir tmp;
  const WorldProcess world = WorldProcess::Start(tmp.path());
  cli::GlobalOptions global;
  global.ray_address = world.ray_address;
  cli::RepoOptions repo;
  repo.repo = tmp.Sub("remote.git");
  repo.cache_dir = tmp.Sub("cache");
  repo.instance = "soak";
  repo.no_artifacts = true;
  repo.ref = "main";
  core::Result<cli::RepoHandles> handles = cli::OpenRepo(repo);
  if (!handles.ok()) {
    std::fprintf(stderr, "cannot open the repository: %s\n", handles.error().ToString().c_str());
    return 2;
  }
  adapters::SystemClock clock;
  core::MetricsRegistry metrics;
  engine::InstrumentedDesiredStateSource source(*handles->source, metrics, clock);
  engine::InstrumentedStatusStore store(*handles->store, metrics, clock);
  auto decorate = [&metrics, &clock](std::unique_ptr<ports::JobServer> inner) {
    return std::unique_ptr<ports::JobServer>(
        std::make_unique<engine::InstrumentedJobServer>(std::move(inner), metrics, clock));
  };
  cli::PassWiring wiring;  // as the daemon wires its passes
  wiring.decorate = decorate;
  wiring.ray_call_attempts = 1;
  int failed = 0;
  int narrow = 0;
  engine::PassIndex index;  // as the daemon keeps it: a push after a pass at rest is narrow
  auto pass = [&](const engine::ReconcileOptions& loop_options) {
    engine::ReconcileOptions options = loop_options;
    options.digest_key = core::SipHasher::Key{3, 5};
    core::Result<std::optional<cli::PassRun>> narrowed =
        cli::RunNarrowPassOnRepo(global, repo, source, &store, options, wiring, index);
    index.memo.valid = false;
    core::Result<cli::PassRun> run = core::Error::NotFound("no pass yet");
    if (narrowed.ok() && narrowed->has_value()) {
      ++narrow;
      run = std::move(**narrowed);
    } else {
      run = cli::RunPassOnRepo(global, repo, source, &store, options, wiring);
      if (run.ok() && args.narrow) index = engine::IndexPass(run->result, &store);
    }
    malloc_trim(0);  // as the daemon does after every pass
    engine::PassResult result;
    if (run.ok()) result = std::move(run->result);
    if (!run.ok() || result.exit_status != engine::kExitApplied) {
      ++failed;
      if (failed <= 3) {
        std::fprintf(stderr, "a pass failed: %s\n",
                     run.ok() ? (result.errors.empty() ? "(see diagnostics)"
                                                       : result.errors[0].ToString().c_str())
                              : run.error().ToString().c_str());
      }
    }
    return result;
  };
  engine::LoopOptions options;
  options.initial_backoff_ms = 1;
  options.max_backoff_ms = 1;
  options.jitter = 0;
  options.pass.ref = "main";
  engine::ReconcileLoop loop(options, pass, clock, &metrics);

  const int warm_up = args.passes / 10;
  long warm_kb = 0;
  std::printf("%8s %10s %10s %10s %10s %8s %11s\n", "pass", "rss_kb", "anon_kb", "file_kb",
              "heap_kb", "fetches", "compactions");
  for (int n = 1; n <= args.passes; ++n) {
    world.Change(n);
    loop.Trigger("bench");
    // A trigger makes the pass due at once, unless a failed pass started a backoff: then wait
    // for exactly the time the loop says the next pass is due.
    while (!loop.Step()) {
      const int64_t wait_us = loop.NextDueUs() - clock.MonotonicUs();
      if (wait_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(wait_us));
    }
    if (n == warm_up) warm_kb = StatusKb();
    if (n % 100 == 0 || n == args.passes) {
      std::printf("%8d %10ld %10ld %10ld %10zu %8d %11d\n", n, StatusKb(), StatusKb("RssAnon:"),
                  StatusKb("RssFile:"), mallinfo2().uordblks / 1024, handles->workspace->fetches(),
                  handles->workspace->compactions());
      std::fflush(stdout);
    }
  }
  const long growth = StatusKb() - warm_kb;
  world.Stop();
  std::printf("growth after warm-up (pass %d to %d): %ld KB; failed passes: %d; narrow: %d\n",
              warm_up, args.passes, growth, failed, narrow);
  if (failed > 0) return 1;
  return (args.max_growth_kb >= 0 && growth > args.max_growth_kb) ? 1 : 0;
}

}  // namespace
}  // namespace rg

int main(int argc, char** argv) { return rg::Run(rg::ParseArgs(argc, argv)); }
