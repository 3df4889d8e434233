#include "reconciler/adapters/zoneinfo.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/test_files.h"

namespace rg::adapters {
namespace {

constexpr int64_t k2026July = 1782864000;     // 2026-07-01T00:00:00Z
constexpr int64_t k2026January = 1767225600;  // 2026-01-01T00:00:00Z

void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST_CASE("zones load by IANA name from the zoneinfo directory", "[zoneinfo]") {
  auto berlin = LoadTimeZone("Europe/Berlin", "/usr/share/zoneinfo");
  INFO((berlin.ok() ? std::string() : berlin.error().message()));
  REQUIRE(berlin.ok());
  CHECK(berlin->UtOffsetAt(k2026January) == 3600);
  CHECK(berlin->UtOffsetAt(k2026July) == 7200);
  CHECK(berlin->footer() == "CET-1CEST,M3.5.0,M10.5.0/3");
  auto new_york = LoadTimeZone("America/New_York", "/usr/share/zoneinfo");
  REQUIRE(new_york.ok());
  CHECK(new_york->UtOffsetAt(k2026July) == -4 * 3600);
}

TEST_CASE("UTC needs no zoneinfo files", "[zoneinfo]") {
  const testing::TempDir empty;
  for (const std::string& dir : {empty.path(), empty.path() + "/missing"}) {
    for (const char* name : {"UTC", "Etc/UTC"}) {
      INFO(name << " in " << dir);
      const auto utc = LoadTimeZone(name, dir);
      REQUIRE(utc.ok());
      CHECK(utc->UtOffsetAt(k2026July) == 0);
      CHECK(utc->TypeAt(k2026July).abbreviation == "UTC");
    }
  }
}

TEST_CASE("zone names that could leave the directory are refused before any read", "[zoneinfo]") {
  for (const char* name : {"../etc/passwd", "/etc/passwd", "Europe/../UTC", "./UTC", "Europe/.",
                           "..", ".", "Europe//Berlin", "Europe/", "/", "", "Europe/Berlin\n",
                           "Europe\\Berlin", "Europe/Ber lin", "zone.tab"}) {
    INFO("\"" << name << "\"");
    CHECK_FALSE(IsValidZoneName(name));
    const auto zone = LoadTimeZone(name, "/usr/share/zoneinfo");
    REQUIRE_FALSE(zone.ok());
    CHECK(zone.error().IsInvalidInput());
    CHECK_THAT(zone.error().message(), Catch::StartsWith("bad time zone name"));
  }
  CHECK_FALSE(IsValidZoneName(std::string("Europe/Berlin\0x", 15)));
  CHECK_FALSE(IsValidZoneName(std::string(256, 'a')));
  CHECK(IsValidZoneName(std::string(255, 'a')));
  for (const char* name : {"UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+5",
                           "Etc/GMT-14", "EST5EDT"}) {
    INFO(name);
    CHECK(IsValidZoneName(name));
  }
}

TEST_CASE("unknown zones are NotFound, naming the zone and the directory", "[zoneinfo]") {
  const testing::TempDir dir;
  WriteFile(dir.dir() / "Europe" / "Berlin", "not used");
  struct Row {
    const char* name;
    const char* message;
  };
  const std::vector<Row> rows = {
      {"Mars/Olympus", "unknown time zone \"Mars/Olympus\": no file in "},
      {"Europe/Berlin/x", "unknown time zone \"Europe/Berlin/x\": no file in "},
      {"Europe", "unknown time zone \"Europe\": no zone file (not a regular file) in "},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const auto zone = LoadTimeZone(row.name, dir.path());
    REQUIRE_FALSE(zone.ok());
    CHECK(zone.error().IsNotFound());
    CHECK(zone.error().message() == row.message + dir.path());
  }
  const auto system = LoadTimeZone("Mars/Olympus", "/usr/share/zoneinfo");
  REQUIRE_FALSE(system.ok());
  CHECK(system.error().IsNotFound());
  CHECK(system.error().message() ==
        "unknown time zone \"Mars/Olympus\": no file in /usr/share/zoneinfo");
}

TEST_CASE("zone files that are not TZif, or too large, are InvalidInput", "[zoneinfo]") {
  const testing::TempDir dir;
  WriteFile(dir.dir() / "Bad" / "Text", "# not a zone\n");
  WriteFile(dir.dir() / "Bad" / "Huge", std::string(kMaxZoneFileBytes + 1, 'x'));
  const auto text = LoadTimeZone("Bad/Text", dir.path());
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().IsInvalidInput());
  CHECK(text.error().message() == "time zone \"Bad/Text\" (" + dir.path() +
                                      "/Bad/Text): TZif: truncated: the first header needs 44 "
                                      "bytes, 13 remain");
  const auto huge = LoadTimeZone("Bad/Huge", dir.path());
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().IsInvalidInput());
  CHECK_THAT(huge.error().message(), Catch::Contains("over the 1048576 a zone may have"));
  // A copy of a real zone in another directory is read from there.
  std::ifstream real("/usr/share/zoneinfo/Asia/Kolkata", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(real)), std::istreambuf_iterator<char>());
  WriteFile(dir.dir() / "Asia" / "Kolkata", bytes);
  const auto kolkata = LoadTimeZone("Asia/Kolkata", dir.path());
  REQUIRE(kolkata.ok());
  CHECK(kolkata->UtOffsetAt(k2026July) == 19800);
}

TEST_CASE("the default directory is $TZDIR or the system's", "[zoneinfo]") {
  const char* tzdir = std::getenv("TZDIR");
  if (tzdir != nullptr && *tzdir != '\0') {
    CHECK(DefaultZoneinfoDir() == tzdir);
  } else {
    CHECK(DefaultZoneinfoDir() == "/usr/share/zoneinfo");
  }
}

}  // namespace
}  // namespace rg::adapters
