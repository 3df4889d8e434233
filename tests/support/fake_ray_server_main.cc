// fake-ray-server: the in-process fake of tests/support as a process, for scripts and
// benchmarks. Prints the port on the first line of stdout, then serves until SIGINT/SIGTERM.
//   fake-ray-server [--token TOKEN] [--ray-version X.Y.Z] [--hold-submit-ms N]
//                   [--record-submits FILE] [--start-now] [--latency-ms N]
//                   [--clock-offset-ms N] [--record-requests FILE]
//
// --record-requests FILE: every request is appended to FILE as "<METHOD> <path>" as it arrives.
//
// --clock-offset-ms N: the head's clock is N ms ahead of the system's (behind when negative):
// its jobs' times and the Date header of its answers, as a head whose clock is off.
//
// --latency-ms N: every request waits N ms before it is handled, in as many requests at once
// as the server has threads: a head whose every call takes time, as a real one's does (a
// benchmark compares clients against it, not only against answers in a tenth of a millisecond).
//
// --start-now: a submitted job is RUNNING from the first time anyone asks (no 50 ms PENDING),
// so a benchmark can read a steady state right after its submits instead of waiting for one.
//
// --record-submits FILE: on SIGINT/SIGTERM, before exiting, every POST /api/jobs/ body received
// is written to FILE in the order received, each as its length in bytes on a line of its own,
// then the body, then a newline (so a benchmark can send the very same bodies elsewhere).
//
// Control by signal, for scripts that test what a client does when the head misbehaves. Each
// signal is acknowledged by one line on stdout once it has taken effect, so a script can read
// that line instead of sleeping:
//   SIGUSR1  the head restarts: every job is forgotten, session_name changes   -> "restarted"
//   SIGUSR2  the next POST /api/jobs/ is accepted at once but answered only after
//            --hold-submit-ms (default 10000)                                    -> "holding"
// --hold-submit-ms alone does not hold anything; SIGUSR2 arms one held answer.

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "tests/support/fake_ray_server.h"

namespace {

constexpr char kUsage[] =
    "usage: fake-ray-server [--token TOKEN] [--ray-version X.Y.Z] [--hold-submit-ms N] "
    "[--record-submits FILE] [--start-now] [--latency-ms N] [--clock-offset-ms N] "
    "[--record-requests FILE]\n";

// A flag's value as milliseconds (a whole number, 0 or more); nullopt when it is not one.
std::optional<std::chrono::milliseconds> Milliseconds(const std::string& value) {
  size_t used = 0;
  long long ms = -1;
  try {
    ms = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || ms < 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

// Every submit body received, length-prefixed (see the top of the file). False when the file
// cannot be written.
bool WriteSubmitBodies(const rg::testing::FakeRayServer& server, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const std::string& body : server.SubmitBodies()) {
    out << body.size() << "\n" << body << "\n";
  }
  out.close();
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  rg::testing::FakeRayOptions options;
  std::chrono::milliseconds hold_submit{10000};
  std::chrono::milliseconds latency{0};
  std::string record_submits;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--token" && i + 1 < argc) {
      options.token = argv[++i];
    } else if (arg == "--ray-version" && i + 1 < argc) {
      options.ray_version = argv[++i];
    } else if (arg == "--clock-offset-ms" && i + 1 < argc) {
      const std::string value = argv[++i];
      const bool behind = value.starts_with('-');
      const std::optional<std::chrono::milliseconds> ms =
          Milliseconds(behind ? value.substr(1) : value);
      if (!ms) {
        std::cerr << "fake-ray-server: " << arg << " wants milliseconds, got " << value << "\n";
        return 2;
      }
      options.clock_offset = behind ? -*ms : *ms;
    } else if (arg == "--start-now") {
      options.start_delay = std::chrono::milliseconds(0);
    } else if (arg == "--record-requests" && i + 1 < argc) {
      options.request_log = argv[++i];
    } else if (arg == "--record-submits" && i + 1 < argc) {
      record_submits = argv[++i];
    } else if ((arg == "--hold-submit-ms" || arg == "--latency-ms") && i + 1 < argc) {
      const std::string value = argv[++i];
      const std::optional<std::chrono::milliseconds> ms = Milliseconds(value);
      if (!ms) {
        std::cerr << "fake-ray-server: " << arg << " wants milliseconds, got " << value << "\n";
        return 2;
      }
      (arg == "--latency-ms" ? latency : hold_submit) = *ms;
    } else {
      std::cerr << kUsage;
      return 2;
    }
  }
  // Block the signals before the server's threads start, so that only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  rg::testing::FakeRayServer server(options);
  server.SetLatency(latency);
  std::cout << server.port() << std::endl;
  while (true) {
    int received = 0;
    if (sigwait(&signals, &received) != 0) return 1;
    if (received == SIGUSR1) {
      server.Restart();
      std::cout << "restarted" << std::endl;
    } else if (received == SIGUSR2) {
      server.HoldAnswerNext(rg::testing::kRouteSubmit, 1, hold_submit);
      std::cout << "holding" << std::endl;
    } else {
      if (!record_submits.empty() && !WriteSubmitBodies(server, record_submits)) {
        std::cerr << "fake-ray-server: cannot write " << record_submits << "\n";
        return 1;
      }
      return 0;
    }
  }
}
