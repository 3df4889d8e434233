// Serves the daemon's HTTP endpoints over a canned snapshot on a free loopback port, for the
// headless-browser test: prints "port <n>" once listening, stops when stdin closes.

#include <cstdio>
#include <iostream>
#include <string>

#include "reconciler/core/metrics.h"
#include "reconciler/server/http_server.h"
#include "tests/unit/server/sample_snapshot.h"

int main() {
  rg::core::MetricsRegistry metrics;
  rg::server::HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  options.branch = "main";
  rg::server::HttpServer server(
      options, metrics, [](std::string) {}, [] { return rg::server::testing::SampleSnapshot(); });
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
