#pragma once
// What the engine's pass tests share: one fake Ray head in process (no socket) whose jobs move
// on the test's clock, one status branch in memory, and passes of any number of in-memory
// repositories against them. Time passes only through Advance.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/core/status_model.h"
#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/in_memory_ports.h"
#include "tests/support/in_process_ray.h"

namespace rg::testing {

class PassHarness {
 public:
  // A head with FakeRayOptions::token set is talked to with that token.
  explicit PassHarness(FakeRayOptions options = {})
      : token_(options.token),
        ray_(InProcess(std::move(options), &clock_)),
        client_(InProcessClient(ray_, token_)) {}

  // A repository holding a cluster file that points at the head, at `commit`.
  std::unique_ptr<InMemoryDesiredStateSource> NewRepo(const std::string& commit) const {
    auto source = std::make_unique<InMemoryDesiredStateSource>();
    source->SetFile("cluster.yaml", "address: " + ray_.address() + "\n", commit);
    return source;
  }

  // One pass of `source`: submits in parallel through clients of their own, one second of
  // wall time after the previous pass unless options.now_ms says when. Afterwards every stop
  // Ray was sent has taken effect.
  engine::PassResult Pass(InMemoryDesiredStateSource& source,
                          engine::ReconcileOptions options = {}) {
    engine::ReconcileDeps deps;
    deps.source = &source;
    deps.server = client_.get();
    deps.server_factory = [this]() -> std::unique_ptr<ports::JobServer> {
      return InProcessClient(ray_, token_);
    };
    deps.store = &store_;
    deps.artifacts = artifacts;
    deps.secrets = secrets;
    options.ray_address = ray_.address();
    if (options.now_ms == 0) options.now_ms = now_ms_ += 1000;
    engine::PassResult r = engine::RunReconcilePass(deps, options);
    ray_.Tick();
    return r;
  }

  // Time passes for the head's jobs; what is due by then has happened.
  void Advance(std::chrono::milliseconds by) {
    clock_.AdvanceMs(by.count());
    ray_.Tick();
  }

  // The spec hash the loader gives the file at `path`.
  static std::string HashOf(InMemoryDesiredStateSource& source, const std::string& path) {
    auto snap = source.Load("HEAD");
    if (!snap) return "";
    for (const auto& spec : snap->state.jobs) {
      if (spec.path == path) return spec.spec_hash;
    }
    return "";
  }

  const core::StatusRecord& Record(const std::string& name) { return store_.ledger().at(name); }
  FakeRayServer& ray() { return ray_; }
  // The head's clock: Ray's start and end times are read on it. A pass that compares them with
  // its own time (a deadline) sets options.now_ms from it.
  FakeClock& clock() { return clock_; }
  ports::JobServer& client() { return *client_; }
  InMemoryStatusStore& store() { return store_; }

  // Where passes keep artifacts (driver logs included); null: none.
  ports::ArtifactSink* artifacts = nullptr;
  // Where passes read job secrets' values; null: none.
  ports::SecretSource* secrets = nullptr;

 private:
  static FakeRayOptions InProcess(FakeRayOptions options, ports::Clock* clock) {
    options.clock = clock;
    options.listen = false;
    return options;
  }

  int64_t now_ms_ = 1'800'000'000'000;
  std::optional<std::string> token_;
  FakeClock clock_;
  FakeRayServer ray_;
  std::unique_ptr<adapters::RayHttpJobServer> client_;
  InMemoryStatusStore store_;
};

}  // namespace rg::testing
