#include "reconciler/engine/pass_memo.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "reconciler/engine/head_clock.h"
#include "tests/support/in_memory_ports.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using namespace std::chrono_literals;

std::string CommitId(int n) { return std::string(39, '0') + static_cast<char>('a' + n % 6); }

constexpr core::SipHasher::Key kKey = {11, 22};

// One repository on the harness's head; passes digest Ray's list as the daemon's do.
class World : public testing::PassHarness {
 public:
  World() : source_(NewRepo(CommitId(0))) {}

  PassResult Pass() {
    ReconcileOptions options;
    options.digest_key = kKey;
    return PassHarness::Pass(*source_, options);
  }
  // Full passes until one is a fixpoint (at most five); its memo.
  PassMemo Settle() {
    for (int i = 0; i < 5; ++i) {
      PassResult r = Pass();
      if (IsFixpoint(r)) return RememberPass(r, &store());
      Advance(200ms);
    }
    FAIL("no fixpoint after five passes");
    return {};
  }
  std::optional<PassResult> Check(const PassMemo& memo) {
    return UnchangedPass(memo, *source_, &store(), client(), "HEAD", kKey, clock().NowMs());
  }
  testing::InMemoryDesiredStateSource& source() { return *source_; }

 private:
  std::unique_ptr<testing::InMemoryDesiredStateSource> source_;
};

TEST_CASE("a pass at rest is remembered and the next one stops early without loading") {
  World w;
  w.source().SetFile("jobs/a.yaml", "workload: custom\nentrypoint: sleep infinity\n", CommitId(1));
  w.source().SetFile("jobs/b.yaml", "workload: custom\nentrypoint: echo done\n", CommitId(1));
  PassResult first = w.Pass();
  CHECK_FALSE(IsFixpoint(first));  // it submitted
  CHECK_FALSE(RememberPass(first, &w.store()).valid);

  PassMemo memo = w.Settle();
  REQUIRE(memo.valid);
  CHECK(memo.spec_commit == CommitId(1));
  CHECK(memo.ledger_tip == w.store().KnownTip());
  const int loads = w.source().loads();
  const size_t commits = w.store().commits().size();
  std::optional<PassResult> same = w.Check(memo);
  REQUIRE(same);
  CHECK(same->unchanged);
  CHECK_FALSE(same->planned);
  CHECK(same->spec_commit == CommitId(1));
  CHECK(w.source().loads() == loads);
  CHECK(w.store().commits().size() == commits);
  CHECK(w.Check(memo));  // as often as nothing moves
}

TEST_CASE("a pass at rest with a run's deadline ahead holds only until the deadline falls due") {
  World w;
  w.source().SetFile("jobs/a.yaml", "workload: custom\nentrypoint: sleep 600\ndeadline: 1m\n",
                     CommitId(1));
  // Passes on the head's clock, as the daemon's are on its own.
  auto pass = [&w]() {
    ReconcileOptions options;
    options.digest_key = kKey;
    options.now_ms = w.clock().NowMs();
    return w.PassHarness::Pass(w.source(), options);
  };
  PassResult first = pass();
  REQUIRE(first.outcomes.size() == 1);
  PassMemo memo;
  for (int i = 0; i < 5 && !memo.valid; ++i) {  // until the run is RUNNING and recorded so
    w.Advance(200ms);
    memo = RememberPass(pass(), &w.store());
  }
  REQUIRE(memo.valid);
  REQUIRE(memo.valid_until_ms);
  const int64_t due = *memo.valid_until_ms;
  CHECK(w.Check(memo));  // nothing moved and the deadline is ahead
  CHECK(MemoHolds(memo, due - 1));
  CHECK_FALSE(MemoHolds(memo, due));
  w.Advance(std::chrono::milliseconds(due - w.clock().NowMs()));
  CHECK_FALSE(w.Check(memo));  // the same inputs now plan a stop: a full pass must run
  PassResult stop = pass();
  REQUIRE(stop.outcomes.size() == 1);
  CHECK(stop.outcomes[0].action.stop_reason == core::StopReason::kDeadline);
}

TEST_CASE("any moved input makes the early check give way to a full pass") {
  World w;
  w.source().SetFile("jobs/a.yaml", "workload: custom\nentrypoint: sleep infinity\n", CommitId(1));
  PassMemo memo = w.Settle();
  REQUIRE(memo.valid);

  SECTION("a new commit of the watched ref") {
    w.source().SetFile("jobs/b.yaml", "workload: custom\nentrypoint: sleep infinity\n",
                       CommitId(2));
    CHECK_FALSE(w.Check(memo));
  }
  SECTION("a commit on the status branch by another writer") {
    core::StatusRecord other;
    other.name = "zz";
    ports::StatusChanges changes;
    changes["zz"] = other;
    REQUIRE(w.store().Write(changes, {}).ok());
    CHECK_FALSE(w.Check(memo));
  }
  SECTION("a run that changed in Ray") {
    const std::string id = w.Record("a").submission_id;
    REQUIRE(w.ray().SetStatus(id, core::RayJobStatus::kFailed));
    CHECK_FALSE(w.Check(memo));
    // The full pass records the failure: not at rest; the one after is.
    CHECK_FALSE(IsFixpoint(w.Pass()));
    PassMemo again = w.Settle();
    REQUIRE(again.valid);
    CHECK(again.ray_digest != memo.ray_digest);
    CHECK(w.Check(again));
  }
  SECTION("the repository cannot be read") {
    w.source().FailWith(core::Error::Transient("remote hung up"));
    CHECK_FALSE(w.Check(memo));
  }
  SECTION("an invalid memo") { CHECK_FALSE(w.Check(PassMemo{})); }
  SECTION("a clock stepped: the memo's due time was reckoned with the old skew") {
    REQUIRE(memo.head_clock_offset_ms.has_value());
    w.ray().SetClockOffset(std::chrono::milliseconds(kClockSkewStepMs));
    CHECK(w.Check(memo));  // within what two estimates of one skew may differ by
    w.ray().SetClockOffset(std::chrono::milliseconds(kClockSkewStepMs + 1'000));
    CHECK_FALSE(w.Check(memo));
    w.ray().SetClockOffset(-1h);
    CHECK_FALSE(w.Check(memo));
  }
}

TEST_CASE("a PENDING run keeps every pass a full one") {
  World w;
  // No node of the fake has a GPU: the run stays PENDING, and its message follows the cluster.
  w.source().SetFile("jobs/gpu.yaml",
                     "workload: custom\nentrypoint: sleep infinity\nentrypoint_num_gpus: 1\n",
                     CommitId(1));
  for (int i = 0; i < 4; ++i) {
    PassResult r = w.Pass();
    CHECK_FALSE(IsFixpoint(r));
    CHECK_FALSE(RememberPass(r, &w.store()).valid);
    w.Advance(200ms);
  }
}

TEST_CASE("the job-list digest covers every field and the key") {
  core::RayJob job;
  job.type = "SUBMISSION";
  job.submission_id = "a-1";
  job.status = core::RayJobStatus::kRunning;
  job.metadata = {{"gitops.name", "a"}};
  const uint64_t base = core::DigestJobs({job}, kKey);
  CHECK(core::DigestJobs({job}, kKey) == base);
  CHECK(core::DigestJobs({job}, {1, 2}) != base);
  CHECK(core::DigestJobs({}, kKey) != base);
  auto changed = [&](auto edit) {
    core::RayJob other = job;
    edit(other);
    return core::DigestJobs({other}, kKey) != base;
  };
  CHECK(changed([](core::RayJob& j) { j.status = core::RayJobStatus::kSucceeded; }));
  CHECK(changed([](core::RayJob& j) { j.message = "x"; }));
  CHECK(changed([](core::RayJob& j) { j.job_id = ""; }));
  CHECK(changed([](core::RayJob& j) { j.end_time_ms = 0; }));
  CHECK(changed([](core::RayJob& j) { j.metadata["gitops.name"] = "b"; }));
  CHECK(changed([](core::RayJob& j) { j.driver_exit_code = 0; }));
  CHECK(changed([](core::RayJob& j) { j.error_type = ""; }));
  CHECK(changed([](core::RayJob& j) { j.entrypoint = "true"; }));
}

TEST_CASE("the HTTP client digests the answer as received, the same way in both calls") {
  World w;
  w.source().SetFile("jobs/a.yaml", "workload: custom\nentrypoint: sleep infinity\n", CommitId(1));
  w.Pass();
  ports::JobServer& client = w.client();
  client.DigestListsWith(kKey);
  core::Result<std::vector<core::RayJob>> jobs = client.List();
  REQUIRE(jobs.ok());
  const uint64_t listed = client.ListedDigest(*jobs, kKey);
  core::Result<uint64_t> checked = client.ListDigest(kKey);
  REQUIRE(checked.ok());
  CHECK(*checked == listed);
  CHECK(*client.ListDigest({5, 6}) != listed);  // another key
  REQUIRE(w.ray().SetStatus(jobs->front().submission_id, core::RayJobStatus::kSucceeded));
  CHECK(*client.ListDigest(kKey) != listed);
  // A digest asked for with another key than the lists were made with falls back to the
  // decoded jobs, which never equals a body's digest: the next pass is a full one.
  CHECK(client.ListedDigest(*jobs, {7, 8}) == core::DigestJobs(*jobs, {7, 8}));
}

}  // namespace
}  // namespace rg::engine
