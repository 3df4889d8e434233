// fake-ray-server: the in-process fake of tests/support as a process, for scripts and
// benchmarks. Prints the port on the first line of stdout, then serves until SIGINT/SIGTERM.
//   fake-ray-server [--token TOKEN] [--ray-version X.Y.Z]

#include <csignal>
#include <cstring>
#include <iostream>
#include <string>

#include "tests/support/fake_ray_server.h"

int main(int argc, char** argv) {
  rg::testing::FakeRayOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--token" && i + 1 < argc) {
      options.token = argv[++i];
    } else if (arg == "--ray-version" && i + 1 < argc) {
      options.ray_version = argv[++i];
    } else {
      std::cerr << "usage: fake-ray-server [--token TOKEN] [--ray-version X.Y.Z]\n";
      return 2;
    }
  }
  // Block the signals before the server's threads start, so that only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  rg::testing::FakeRayServer server(options);
  std::cout << server.port() << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  return 0;
}
