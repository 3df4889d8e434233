#pragma once
// The time zones of scheduled specs (DESIGN §3.4, "Schedules"), looked up after loading: core
// stays pure and the spec loader reads no files, so a desired state is produced with every
// scheduled spec's zone unset and completed here.

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/result.h"
#include "reconciler/core/tzif.h"

namespace rg::adapters {

// Zones loaded by name, kept across passes (a desired-state source holds one): a zone file is
// read once per process, whatever the number of specs and passes naming it. A name that
// fails to load is not remembered, so a zone installed later is found.
class ZoneCache {
 public:
  // "": DefaultZoneinfoDir() ($TZDIR, else /usr/share/zoneinfo), read at construction.
  explicit ZoneCache(std::string zoneinfo_dir = "");

  core::Result<std::shared_ptr<const core::TimeZone>> Get(std::string_view name);
  const std::string& dir() const { return dir_; }
  // Zone files read so far (for tests).
  int loads() const { return loads_; }

 private:
  std::string dir_;
  std::map<std::string, std::shared_ptr<const core::TimeZone>, std::less<>> zones_;
  int loads_ = 0;
};

// Attaches to every scheduled spec of `state` the zone its `timezone` names, each distinct
// zone loaded once (through `zones`). A spec whose zone is unknown or cannot be read moves to
// state.invalid with the diagnostic "<path>:<line>:<col>: error: timezone: <why>", at the
// place `timezone` (else `schedule`) was written, naming the zone and the zoneinfo directory.
void ResolveScheduleZones(core::DesiredState& state, ZoneCache& zones);

}  // namespace rg::adapters
