// Runs that ended (engine/finished_runs.h): each one's driver log kept once, in the pass that
// first sees its end; with --gc-finished-after, deleted from Ray once an earlier pass
// committed its end, and never run again.

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/engine/warning.h"
#include "reconciler/ports/artifact_sink.h"
#include "tests/support/in_memory_ports.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using namespace std::chrono_literals;
using core::Phase;
using core::RayJobStatus;

std::string CommitId(int n) { return std::string(39, '0') + static_cast<char>('a' + n % 6); }

// Keeps what it is given; fails every write while `broken`.
class MemorySink : public ports::ArtifactSink {
 public:
  core::Status WriteSubmission(const ports::SubmissionRecord& /*record*/) override {
    return core::OkStatus();
  }
  core::Status WriteDriverLog(std::string_view id, std::string_view log,
                              size_t skipped_bytes) override {
    if (broken) return core::Error::Fatal("disk full");
    ++writes;
    logs[std::string(id)] = std::string(log);
    skipped[std::string(id)] = skipped_bytes;
    return core::OkStatus();
  }
  std::map<std::string, std::string> logs;
  std::map<std::string, size_t> skipped;
  int writes = 0;
  bool broken = false;
};

// One repository; passes on the head's clock (Ray's end times are read on it).
class World : public testing::PassHarness {
 public:
  explicit World(testing::FakeRayOptions options = {})
      : PassHarness(std::move(options)), source_(NewRepo(CommitId(0))) {
    artifacts = &sink;
  }
  PassResult Pass(ReconcileOptions options = {}) {
    options.now_ms = clock().NowMs();
    return PassHarness::Pass(*source_, std::move(options));
  }
  std::string IdOf(const std::string& path) {
    return path.substr(5, path.size() - 10) + "-" + HashOf(*source_, path);
  }
  testing::InMemoryDesiredStateSource& source() { return *source_; }
  MemorySink sink;

 private:
  std::unique_ptr<testing::InMemoryDesiredStateSource> source_;
};

TEST_CASE("a run's driver log is kept once, in the pass that first sees it ended", "[engine]") {
  World w;
  w.source().SetFile("jobs/ok.yaml", "workload: custom\nentrypoint: echo trained-to-the-end\n",
                     CommitId(1));
  w.source().SetFile("jobs/bad.yaml", "workload: custom\nentrypoint: exit 3\n", CommitId(1));
  w.source().SetFile("jobs/long.yaml", "workload: custom\nentrypoint: sleep 600\n", CommitId(1));
  const std::string ok = w.IdOf("jobs/ok.yaml");
  const std::string bad = w.IdOf("jobs/bad.yaml");
  REQUIRE(w.Pass().outcomes.size() == 3);
  CHECK(w.sink.logs.empty());  // nothing ended yet

  w.Advance(1s);
  PassResult ended = w.Pass();
  CHECK(ended.driver_logs_kept == std::vector<std::string>{bad, ok});
  REQUIRE(w.sink.logs.contains(ok));
  CHECK_THAT(w.sink.logs.at(ok), Catch::Contains("trained-to-the-end"));
  CHECK(w.sink.logs.contains(bad));
  CHECK(w.sink.logs.size() == 2);  // the sleeping run is still running

  // Its end is in the ledger now: later passes fetch nothing again.
  w.Advance(1s);
  CHECK(w.Pass().driver_logs_kept.empty());
  CHECK(w.sink.writes == 2);
}

TEST_CASE("a run that ended by the listing after its submit has its log kept by that pass",
          "[engine]") {
  // A driver that fails at once: ended before the pass lists Ray again.
  testing::FakeRayOptions instant;
  instant.start_delay = std::chrono::milliseconds(0);
  instant.run_time = std::chrono::milliseconds(0);
  World w(instant);
  w.source().SetFile("jobs/bad.yaml", "workload: custom\nentrypoint: exit 3\n", CommitId(1));
  const std::string bad = w.IdOf("jobs/bad.yaml");
  PassResult first = w.Pass();
  REQUIRE(first.outcomes.size() == 1);
  REQUIRE(w.Record("bad").status == RayJobStatus::kFailed);  // its end is committed at once
  CHECK(first.driver_logs_kept == std::vector<std::string>{bad});
  CHECK(w.sink.logs.contains(bad));
}

TEST_CASE("a kept driver log is redacted with the pass's secrets, none of it skipped", "[engine]") {
  World w;
  w.source().SetFile("jobs/leaky.yaml", "workload: custom\nentrypoint: echo token=k8Zq2xW1\n",
                     CommitId(1));
  const std::string leaky = w.IdOf("jobs/leaky.yaml");
  ReconcileOptions options;
  options.secrets.Add("k8Zq2xW1");  // shorter than "<redacted>"
  REQUIRE(w.Pass(options).outcomes.size() == 1);
  w.Advance(1s);
  REQUIRE(w.Pass(options).driver_logs_kept == std::vector<std::string>{leaky});
  CHECK_THAT(w.sink.logs.at(leaky), Catch::Contains("token=<redacted>"));
  CHECK_THAT(w.sink.logs.at(leaky), !Catch::Contains("k8Zq2xW1"));
  CHECK(w.sink.skipped.at(leaky) == 0);  // counted before the redaction lengthened it
}

TEST_CASE("a driver log that cannot be kept is a warning naming the run", "[engine]") {
  World w;
  w.source().SetFile("jobs/ok.yaml", "workload: custom\nentrypoint: echo hi\n", CommitId(1));
  const std::string ok = w.IdOf("jobs/ok.yaml");
  REQUIRE(w.Pass().outcomes.size() == 1);
  w.Advance(1s);
  w.sink.broken = true;
  PassResult r = w.Pass();
  CHECK(r.driver_logs_kept.empty());
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].kind == kWarnDriverLog);
  CHECK_THAT(r.warnings[0].message, Catch::Contains("cannot keep the driver log of " + ok) &&
                                        Catch::Contains("disk full"));
  CHECK(r.errors.empty());
  CHECK(w.Record("ok").phase == Phase::kSucceeded);  // the pass still records the end
}

TEST_CASE("finished runs are deleted from Ray after their end is committed, never re-run",
          "[engine]") {
  World w;
  w.source().SetFile("jobs/ok.yaml", "workload: custom\nentrypoint: echo hi\n", CommitId(1));
  w.source().SetFile("jobs/long.yaml", "workload: custom\nentrypoint: sleep 600\n", CommitId(1));
  const std::string ok = w.IdOf("jobs/ok.yaml");
  ReconcileOptions gc;
  gc.gc_finished_after_ms = 2'000;
  REQUIRE(w.Pass(gc).outcomes.size() == 2);
  w.Advance(1s);
  // This pass sees the end first and commits it: it deletes nothing.
  PassResult ended = w.Pass(gc);
  CHECK(ended.deleted.empty());
  REQUIRE(w.Record("ok").phase == Phase::kSucceeded);
  REQUIRE(w.ray().StatusOf(ok) == RayJobStatus::kSucceeded);

  // Committed, but not 2 s old yet: kept, and the plan names when it will be due.
  PassResult young = w.Pass(gc);
  CHECK(young.deleted.empty());
  REQUIRE(young.plan.recheck_at_ms);
  const int64_t due = *young.plan.recheck_at_ms;
  CHECK(due > w.clock().NowMs());
  CHECK(due - w.clock().NowMs() <= 2'000);

  w.Advance(std::chrono::milliseconds(due - w.clock().NowMs()));
  PassResult old = w.Pass(gc);
  CHECK(old.deleted == std::vector<std::string>{ok});
  CHECK(old.warnings.empty());
  CHECK(w.ray().JobCount() == 1);  // the running one stays

  for (int i = 0; i < 3; ++i) {
    w.Advance(1s);
    PassResult later = w.Pass(gc);
    CHECK(later.plan.actions.empty());
    CHECK(later.deleted.empty());
    CHECK(w.Record("ok").phase == Phase::kSucceeded);
  }
  CHECK(w.ray().JobCount() == 1);
}

TEST_CASE("without the option, without a status branch or on a dry run nothing is deleted",
          "[engine]") {
  World w;
  w.source().SetFile("jobs/ok.yaml", "workload: custom\nentrypoint: echo hi\n", CommitId(1));
  REQUIRE(w.Pass().outcomes.size() == 1);
  w.Advance(1s);
  REQUIRE(w.Pass().plan.actions.empty());  // its end committed
  w.Advance(10s);
  CHECK(w.Pass().deleted.empty());
  ReconcileOptions unrecorded;
  unrecorded.gc_finished_after_ms = 1'000;
  unrecorded.record_status = false;
  CHECK(w.Pass(unrecorded).deleted.empty());
  ReconcileOptions dry = unrecorded;
  dry.record_status = true;
  dry.dry_run = true;
  dry.build_records = true;
  CHECK(w.Pass(dry).deleted.empty());
  CHECK(w.ray().JobCount() == 1);
}

// Ray's end_time is on the head's clock: so is --gc-finished-after (docs/reconcile.md, "The
// head's clock"), whatever the daemon's clock says.
TEST_CASE("a daemon ahead of the head deletes no run before it is old enough on the head",
          "[engine]") {
  testing::FakeRayOptions head;
  head.clock_offset = -2h;  // the daemon 2 h ahead
  World w(head);
  w.source().SetFile("jobs/ok.yaml", "workload: custom\nentrypoint: echo hi\n", CommitId(1));
  const std::string ok = w.IdOf("jobs/ok.yaml");
  ReconcileOptions gc;
  gc.gc_finished_after_ms = 3'600'000;  // 1h
  REQUIRE(w.Pass(gc).outcomes.size() == 1);
  w.Advance(1s);
  REQUIRE(w.Pass(gc).deleted.empty());  // its end committed
  REQUIRE(w.Record("ok").phase == Phase::kSucceeded);
  const int64_t ended_ms = *w.Record("ok").end_time_ms;  // on the head's clock

  // 10 s after its end on the head, 2 h and 10 s by the daemon's clock: kept.
  w.Advance(10s);
  PassResult young = w.Pass(gc);
  CHECK(young.deleted.empty());
  CHECK(w.ray().StatusOf(ok) == RayJobStatus::kSucceeded);
  REQUIRE(young.plan.recheck_at_ms);
  // Due when the head's clock shows its end plus 1 h: that many ms from the daemon's now.
  CHECK(*young.plan.recheck_at_ms - w.clock().NowMs() ==
        ended_ms + 3'600'000 - (w.clock().NowMs() - 7'200'000));
  REQUIRE(young.warnings.size() == 1);
  CHECK(young.warnings[0].kind == kWarnClockSkew);

  w.Advance(std::chrono::milliseconds(*young.plan.recheck_at_ms - w.clock().NowMs()));
  PassResult old = w.Pass(gc);
  CHECK(old.deleted == std::vector<std::string>{ok});
  CHECK(w.ray().JobCount() == 0);
}

TEST_CASE("a daemon behind the head deletes a run once it is old enough on the head", "[engine]") {
  testing::FakeRayOptions head;
  head.clock_offset = 2h;  // the daemon 2 h behind: the run ends "in the future" by its clock
  World w(head);
  w.source().SetFile("jobs/ok.yaml", "workload: custom\nentrypoint: echo hi\n", CommitId(1));
  const std::string ok = w.IdOf("jobs/ok.yaml");
  ReconcileOptions gc;
  gc.gc_finished_after_ms = 3'600'000;  // 1h
  REQUIRE(w.Pass(gc).outcomes.size() == 1);
  w.Advance(1s);
  REQUIRE(w.Pass(gc).deleted.empty());  // its end committed
  w.Advance(1h);
  PassResult old = w.Pass(gc);
  CHECK(old.deleted == std::vector<std::string>{ok});
  REQUIRE(old.warnings.size() == 1);
  CHECK_THAT(old.warnings[0].message, Catch::StartsWith("the daemon's clock is 2h behind"));
}

}  // namespace
}  // namespace rg::engine
