#include "reconciler/adapters/schedule_zones.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "reconciler/adapters/zoneinfo.h"

namespace rg::adapters {

ZoneCache::ZoneCache(std::string zoneinfo_dir)
    : dir_(zoneinfo_dir.empty() ? DefaultZoneinfoDir() : std::move(zoneinfo_dir)) {}

core::Result<std::shared_ptr<const core::TimeZone>> ZoneCache::Get(std::string_view name) {
  if (auto it = zones_.find(name); it != zones_.end()) return it->second;
  ++loads_;
  core::Result<core::TimeZone> zone = LoadTimeZone(name, dir_);
  if (!zone.ok()) return zone.error();
  auto shared = std::make_shared<const core::TimeZone>(std::move(*zone));
  zones_.emplace(std::string(name), shared);
  return shared;
}

void ResolveScheduleZones(core::DesiredState& state, ZoneCache& zones) {
  std::vector<core::InvalidSpec> moved;
  std::erase_if(state.jobs, [&](core::JobSpec& spec) {
    if (!spec.lifecycle().schedule.has_value()) return false;
    core::ScheduleFields& schedule = *spec.mutable_lifecycle().schedule;
    core::Result<std::shared_ptr<const core::TimeZone>> zone = zones.Get(schedule.timezone);
    if (zone.ok()) {
      schedule.zone = std::move(*zone);
      return false;
    }
    std::string why = zone.error().message();
    if (why.find(zones.dir()) == std::string::npos)
      why += " (zoneinfo directory " + zones.dir() + ")";
    core::InvalidSpec bad;
    bad.path = spec.path;
    bad.name = spec.name;
    bad.diagnostics.push_back(
        {spec.path, schedule.timezone_pos.line, schedule.timezone_pos.column, "timezone: " + why});
    moved.push_back(std::move(bad));
    return true;
  });
  if (moved.empty()) return;
  for (core::InvalidSpec& bad : moved) state.invalid.push_back(std::move(bad));
  std::stable_sort(
      state.invalid.begin(), state.invalid.end(),
      [](const core::InvalidSpec& a, const core::InvalidSpec& b) { return a.path < b.path; });
}

}  // namespace rg::adapters
