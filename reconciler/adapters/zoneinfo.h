#pragma once
// Time zones by IANA name ("Europe/Berlin") from the system's zoneinfo directory, for the
// schedules of DESIGN §3.4: the file is read here and parsed by core::ParseTzif.

#include <string>
#include <string_view>

#include "reconciler/core/result.h"
#include "reconciler/core/tzif.h"

namespace rg::adapters {

// Files larger than this are not zones (the largest of tzdata is under 4 KiB).
inline constexpr size_t kMaxZoneFileBytes = size_t{1} << 20;

// $TZDIR when it is set and not empty, else /usr/share/zoneinfo.
std::string DefaultZoneinfoDir();

// An IANA-style zone name that is safe to join to the zoneinfo directory: 1-255 characters,
// components of [A-Za-z0-9_+-] separated by single "/" (so never absolute, never "." or "..").
bool IsValidZoneName(std::string_view name);

// The zone `name` from the TZif file <zoneinfo_dir>/<name>. "UTC" and "Etc/UTC" are built in
// and need no file. Errors: InvalidInput for a bad name, a file that is not TZif or is over
// kMaxZoneFileBytes; NotFound (naming the zone and the directory) when there is no such
// regular file; Transient when the file exists but cannot be read.
core::Result<core::TimeZone> LoadTimeZone(std::string_view name, const std::string& zoneinfo_dir);
// The same from DefaultZoneinfoDir().
core::Result<core::TimeZone> LoadTimeZone(std::string_view name);

}  // namespace rg::adapters
