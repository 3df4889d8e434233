#include "reconciler/core/status_model.h"

#include <catch2/catch.hpp>

namespace rg::core {
namespace {

TEST_CASE("RFC 3339 formatting of epoch milliseconds round-trips") {
  CHECK(FormatRfc3339Millis(0) == "1970-01-01T00:00:00.000Z");
  CHECK(FormatRfc3339Millis(1795338691123) == "2026-11-22T09:11:31.123Z");
  CHECK(ParseRfc3339Millis("2026-11-22T09:11:31.123Z") == 1795338691123);
  CHECK(ParseRfc3339Millis("2026-11-22T09:11:31Z") == 1795338691000);
  CHECK_FALSE(ParseRfc3339Millis("2026-13-22T09:11:31Z").has_value());
  CHECK_FALSE(ParseRfc3339Millis("yesterday").has_value());
}

TEST_CASE("phase names round-trip") {
  for (Phase p : {Phase::kPending, Phase::kRunning, Phase::kSucceeded, Phase::kFailed,
                  Phase::kStopped, Phase::kSuspended, Phase::kLost, Phase::kInvalid,
                  Phase::kBlocked, Phase::kConflict, Phase::kRemoved}) {
    CHECK(ParsePhase(PhaseName(p)) == p);
  }
  CHECK_FALSE(ParsePhase("running").has_value());
}

TEST_CASE("only changes a person cares about count as meaningful") {
  StatusRecord a;
  a.name = "x";
  a.phase = Phase::kRunning;
  StatusRecord b = a;
  b.spec_commit = "0123456789abcdef";
  b.dashboard_url = "http://127.0.0.1:8265/#/jobs/x";
  CHECK_FALSE(MeaningfulChange(a, b));
  b.phase = Phase::kSucceeded;
  CHECK(MeaningfulChange(a, b));
}

TEST_CASE("transitions are described for commit messages") {
  StatusRecord before;
  before.name = "ppo-qwen";
  before.phase = Phase::kPending;
  StatusRecord after = before;
  after.phase = Phase::kRunning;
  after.submission_id = "ppo-qwen-3f2a1c9b0e";
  after.status = RayJobStatus::kRunning;
  CHECK(DescribeTransition(&before, &after) ==
        "ppo-qwen: Pending -> Running (ppo-qwen-3f2a1c9b0e, RUNNING)");
  CHECK(DescribeTransition(nullptr, &after) ==
        "ppo-qwen: new -> Running (ppo-qwen-3f2a1c9b0e, RUNNING)");
  CHECK(DescribeTransition(&after, nullptr) == "ppo-qwen: Running -> deleted");
}

}  // namespace
}  // namespace rg::core
