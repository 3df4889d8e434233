// The timing decorators forward every call unchanged and observe one duration per call.

#include "reconciler/engine/instrumented_ports.h"

#include <catch2/catch.hpp>

#include "tests/support/fake_clock.h"

namespace rg::engine {
namespace {

using testing::FakeClock;

// Every call takes `cost_us` of fake time; List fails while `fail_list` is set.
class SlowJobServer : public ports::JobServer {
 public:
  SlowJobServer(FakeClock& clock, int64_t cost_us) : clock_(clock), cost_us_(cost_us) {}
  bool fail_list = false;

  core::Result<core::RayVersion> Version() override {
    Spend();
    return core::Error::Fatal("not used");
  }
  core::Result<std::string> Submit(const core::Value&) override {
    Spend();
    return std::string("job-0123456789");
  }
  core::Result<core::RayJob> Get(std::string_view id) override {
    Spend();
    core::RayJob job;
    job.submission_id = std::string(id);
    return job;
  }
  core::Result<std::vector<core::RayJob>> List() override {
    Spend();
    if (fail_list) return core::Error::Transient("connection refused");
    return std::vector<core::RayJob>(2);
  }
  core::Result<bool> Stop(std::string_view) override {
    Spend();
    return true;
  }
  core::Result<bool> Delete(std::string_view) override {
    Spend();
    return false;
  }
  core::Result<std::string> Logs(std::string_view) override {
    Spend();
    return std::string("hello\n");
  }
  core::Result<std::string> ClusterStatus() override {
    Spend();
    return std::string();
  }
  core::Result<core::ClusterResources> Resources() override {
    Spend();
    return core::ClusterResources{};
  }
  core::Result<bool> HasPackage(std::string_view) override {
    Spend();
    return false;
  }
  core::Status UploadPackage(std::string_view, std::string_view) override {
    Spend();
    return core::Error::InvalidInput("too large");
  }

 private:
  void Spend() { clock_.AdvanceUs(cost_us_); }
  FakeClock& clock_;
  int64_t cost_us_;
};

class CountingSource : public ports::DesiredStateSource {
 public:
  core::Result<ports::DesiredSnapshot> Load(const std::string& ref) override {
    ports::DesiredSnapshot s;
    s.ref = ref;
    s.commit = "abc";
    return s;
  }
  // "newer" is a descendant of every pass commit; everything else is in the view.
  ports::CommitRelation Relate(const std::string& commit, const std::string&) override {
    return commit == "newer" ? ports::CommitRelation::kDescendant
                             : ports::CommitRelation::kAncestorOrSame;
  }
};

class FailingStore : public ports::StatusStore {
 public:
  core::Result<core::Ledger> ReadLedger(const ports::LedgerScope&) override {
    return core::Ledger{};
  }
  std::vector<ports::SkippedStatusFile> SkippedFiles() const override { return {}; }
  core::Result<std::string> Write(const ports::StatusChanges&,
                                  const ports::StatusCommit&) override {
    return core::Error::Conflict("push rejected");
  }
  core::Result<std::vector<ports::StatusHistoryEntry>> History(const std::string&) override {
    return std::vector<ports::StatusHistoryEntry>(3);
  }
};

TEST_CASE("the Ray decorator forwards results and errors and times each call by name",
          "[loop][metrics]") {
  FakeClock clock;
  core::MetricsRegistry metrics;
  auto inner = std::make_unique<SlowJobServer>(clock, 250'000);
  SlowJobServer* raw = inner.get();
  InstrumentedJobServer server(std::move(inner), metrics, clock);

  core::Result<std::string> id = server.Submit(core::Value());
  REQUIRE(id.ok());
  CHECK(*id == "job-0123456789");
  core::Result<std::vector<core::RayJob>> listed = server.List();
  REQUIRE(listed.ok());
  CHECK(listed->size() == 2);
  raw->fail_list = true;
  listed = server.List();
  REQUIRE_FALSE(listed.ok());
  CHECK(listed.error().IsTransient());
  CHECK(server.Get("x")->submission_id == "x");
  CHECK(*server.Stop("x"));
  CHECK_FALSE(*server.Delete("x"));
  CHECK(*server.Logs("x") == "hello\n");
  CHECK(server.ClusterStatus().ok());
  CHECK(server.Resources().ok());
  CHECK_FALSE(server.Version().ok());
  CHECK_FALSE(*server.HasPackage("_ray_pkg_0a.zip"));
  core::Status uploaded = server.UploadPackage("_ray_pkg_0a.zip", "PK");
  REQUIRE_FALSE(uploaded.ok());
  CHECK(uploaded.error().kind() == core::ErrorKind::kInvalidInput);

  CHECK(metrics.Count("rg_ray_request_seconds", {{"call", "submit"}}) == 1);
  CHECK(metrics.Count("rg_ray_request_seconds", {{"call", "list"}}) == 2);
  for (const char* call :
       {"get", "stop", "delete", "logs", "version", "package_get", "package_put"}) {
    CHECK(metrics.Count("rg_ray_request_seconds", {{"call", call}}) == 1);
  }
  // Both reads of GET /api/cluster_status (the text and the resources) count as one call.
  CHECK(metrics.Count("rg_ray_request_seconds", {{"call", "cluster_status"}}) == 2);
  const std::string text = metrics.RenderPrometheusText();
  // 0.25 s per call: inside the 0.25 bucket, outside the 0.1 one.
  CHECK(text.find("rg_ray_request_seconds_bucket{call=\"submit\",le=\"0.25\"} 1") !=
        std::string::npos);
  CHECK(text.find("rg_ray_request_seconds_bucket{call=\"submit\",le=\"0.1\"} 0") !=
        std::string::npos);
}

TEST_CASE("the Git decorators time loads and status operations and forward errors",
          "[loop][metrics]") {
  FakeClock clock;
  core::MetricsRegistry metrics;
  CountingSource source_inner;
  FailingStore store_inner;
  InstrumentedDesiredStateSource source(source_inner, metrics, clock);
  InstrumentedStatusStore store(store_inner, metrics, clock);

  core::Result<ports::DesiredSnapshot> loaded = source.Load("refs/heads/main");
  REQUIRE(loaded.ok());
  CHECK(loaded->ref == "refs/heads/main");
  CHECK(store.ReadLedger({}).ok());
  core::Result<std::string> written = store.Write({}, {});
  REQUIRE_FALSE(written.ok());
  CHECK(written.error().IsConflict());
  CHECK(store.History("a")->size() == 3);

  CHECK(metrics.Count("rg_git_request_seconds", {{"call", "load"}}) == 1);
  CHECK(metrics.Count("rg_git_request_seconds", {{"call", "read_ledger"}}) == 1);
  CHECK(metrics.Count("rg_git_request_seconds", {{"call", "write_status"}}) == 1);
  CHECK(metrics.Count("rg_git_request_seconds", {{"call", "history"}}) == 1);
  CHECK(metrics.Count("rg_ray_request_seconds", {{"call", "load"}}) == 0);
}

TEST_CASE("the source decorator passes commit relations through, so stale views stay visible",
          "[loop]") {
  // The port's default answers "in the view" for every commit: a decorator that did not
  // forward would hide a stale view from every pass of the daemon.
  FakeClock clock;
  core::MetricsRegistry metrics;
  CountingSource inner;
  InstrumentedDesiredStateSource source(inner, metrics, clock);
  CHECK(source.Relate("newer", "abc") == ports::CommitRelation::kDescendant);
  CHECK(source.Relate("older", "abc") == ports::CommitRelation::kAncestorOrSame);
}

}  // namespace
}  // namespace rg::engine
