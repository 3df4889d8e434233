// The zones of scheduled specs attached after loading (adapters/schedule_zones.h): each zone
// read once, an unknown one making its spec invalid at the place `timezone` was written.

#include "reconciler/adapters/schedule_zones.h"

#include <catch2/catch.hpp>
#include <string>

#include "tests/support/test_files.h"

namespace rg::adapters {
namespace {

core::JobSpec ScheduledSpec(const std::string& name, const std::string& zone,
                            core::SourcePos pos = {5, 11}) {
  core::JobSpec spec;
  spec.name = name;
  spec.path = "jobs/" + name + ".yaml";
  core::ScheduleFields& schedule = spec.mutable_lifecycle().schedule.emplace();
  schedule.timezone = zone;
  schedule.timezone_pos = pos;
  return spec;
}

TEST_CASE("each distinct zone is loaded once, across passes, and attached to its specs",
          "[schedule_zones]") {
  ZoneCache zones("/usr/share/zoneinfo");
  core::DesiredState state;
  core::JobSpec plain;
  plain.name = "plain";
  plain.path = "jobs/plain.yaml";
  state.jobs = {ScheduledSpec("a", "Europe/Berlin"), ScheduledSpec("b", "Europe/Berlin"), plain,
                ScheduledSpec("c", "UTC")};
  ResolveScheduleZones(state, zones);
  REQUIRE(state.jobs.size() == 4);
  CHECK(state.invalid.empty());
  REQUIRE(state.jobs[0].lifecycle().schedule->zone != nullptr);
  CHECK(state.jobs[0].lifecycle().schedule->zone == state.jobs[1].lifecycle().schedule->zone);
  CHECK(state.jobs[0].lifecycle().schedule->zone->UtOffsetAt(1767225600) == 3600);
  CHECK_FALSE(state.jobs[2].lifecycle().schedule.has_value());
  CHECK(state.jobs[3].lifecycle().schedule->zone != nullptr);
  CHECK(zones.loads() == 2);
  // The next pass reads no file.
  core::DesiredState again;
  again.jobs = {ScheduledSpec("a", "Europe/Berlin")};
  ResolveScheduleZones(again, zones);
  CHECK(again.jobs[0].lifecycle().schedule->zone != nullptr);
  CHECK(zones.loads() == 2);
}

TEST_CASE(
    "an unknown zone moves its spec to the invalid ones, at the line and column of "
    "timezone, naming the zone and the directory",
    "[schedule_zones]") {
  const testing::TempDir dir;
  ZoneCache zones(dir.dir().string());
  core::DesiredState state;
  state.jobs = {ScheduledSpec("a", "Europe/Berlin", {4, 11}), ScheduledSpec("b", "UTC")};
  core::InvalidSpec other;
  other.path = "jobs/z.yaml";
  other.name = "z";
  state.invalid = {other};
  ResolveScheduleZones(state, zones);
  REQUIRE(state.jobs.size() == 1);
  CHECK(state.jobs[0].name == "b");
  REQUIRE(state.invalid.size() == 2);
  CHECK(state.invalid[0].path == "jobs/a.yaml");  // sorted by path
  REQUIRE(state.invalid[0].diagnostics.size() == 1);
  CHECK(state.invalid[0].diagnostics[0].ToString() ==
        "jobs/a.yaml:4:11: error: timezone: unknown time zone \"Europe/Berlin\": no file in " +
            dir.dir().string());
}

}  // namespace
}  // namespace rg::adapters
