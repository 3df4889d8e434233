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
  std::vector<bool> failed(state.jobs.size(), false);
  for (size_t i = 0; i < state.jobs.size(); ++i) {
    core::JobSpec& spec = state.jobs[i];
    if (!spec.lifecycle().schedule.has_value()) continue;
    core::ScheduleFields& schedule = *spec.mutable_lifecycle().schedule;
    core::Result<std::shared_ptr<const core::TimeZone>> zone = zones.Get(schedule.timezone);
    if (zone.ok()) {
      schedule.zone = std::move(*zone);
      continue;
    }
    std::string why = zone.error().message();
    if (why.find(zones.dir()) == std::string::npos) {
      why += " (zoneinfo directory " + zones.dir() + ")";
    }
    core::InvalidSpec bad;
    bad.path = spec.path;
    bad.name = spec.name;
    bad.diagnostics.push_back(
        {spec.path, schedule.timezone_pos.line, schedule.timezone_pos.column, "timezone: " + why});
    moved.push_back(std::move(bad));
    failed[i] = true;
  }
  core::MoveToInvalid(state, failed, std::move(moved));
}

}  // namespace rg::adapters
