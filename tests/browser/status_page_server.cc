// Serves the daemon's HTTP endpoints on a free loopback port, for the headless-browser test:
// prints "port <n>" once listening, stops when stdin closes. The argument picks the snapshot:
// "sample" (canned, the default), "invalid-spec" or "ray-unreachable" (made by the reconcile
// loop on a fake clock, tests/browser/loop_scenarios.h).

#include <cstdio>
#include <iostream>
#include <string>

#include "reconciler/core/metrics.h"
#include "reconciler/server/http_server.h"
#include "tests/browser/loop_scenarios.h"
#include "tests/unit/server/sample_snapshot.h"

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "sample";
  rg::server::testing::LoopScenario loop;
  rg::server::SnapshotCallback snapshot = [] { return rg::server::testing::SampleSnapshot(); };
  if (scenario == "invalid-spec") {
    rg::server::testing::RunInvalidSpec(loop);
  } else if (scenario == "ray-unreachable") {
    rg::server::testing::RunRayUnreachable(loop);
  } else if (scenario != "sample") {
    std::cerr << "status_page_server: unknown scenario " << scenario << "\n";
    return 2;
  }
  if (scenario != "sample") snapshot = [&loop] { return loop.Snapshot(); };
  rg::core::MetricsRegistry metrics;
  rg::server::HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  options.branch = "main";
  rg::server::HttpServer server(
      options, metrics, [](const std::string&) {}, snapshot);
  if (const auto started = server.Start(); !started.ok()) {
    std::cerr << "status_page_server: " << started.error().ToString() << "\n";
    return 1;
  }
  std::cout << "port " << server.port() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  server.Stop();
  return 0;
}
