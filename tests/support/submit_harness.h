#pragma once
// What the submit tests (engine_submit_test.cc, one_off_submit_test.cc) share: files loaded or
// the test fails, and the fake head behind the real HTTP client with an artifact writer in a
// temporary directory.

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "reconciler/adapters/artifact_writer.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/test_files.h"

namespace rg::testing {

inline core::RayConfig LoadClusterOrFail(const std::string& text) {
  auto parsed = spec::LoadRayConfig(text, "cluster.yaml");
  REQUIRE(parsed.ok());
  return *parsed.value;
}

inline core::JobSpec LoadSpecOrFail(const std::string& text, const std::string& path) {
  auto parsed = spec::LoadJobSpec(text, path);
  REQUIRE(parsed.ok());
  return *parsed.value;
}

struct SubmitHarness {
  FakeRayServer fake;
  std::unique_ptr<adapters::RayHttpJobServer> server;
  TempDir root;
  adapters::ArtifactWriter writer{root.dir()};

  SubmitHarness() {
    adapters::RayClientOptions options;
    options.address = fake.address();
    options.max_attempts = 1;
    server = std::make_unique<adapters::RayHttpJobServer>(options);
  }
};

}  // namespace rg::testing
