// The table of fields of each document kind against its JSON Schema: a key the loader takes is
// a property the schema describes, and back (docs/architecture.md, "Adding a JobSpec field").

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "reconciler/spec/spec_loader.h"

namespace {

std::set<std::string> SchemaProperties(const std::string& file) {
  std::ifstream in(std::string(RG_SOURCE_DIR) + "/schema/" + file);
  REQUIRE(in.good());
  const nlohmann::json schema = nlohmann::json::parse(in);
  REQUIRE(schema.contains("properties"));
  std::set<std::string> keys;
  for (const auto& [key, value] : schema["properties"].items()) keys.insert(key);
  return keys;
}

std::set<std::string> TableKeys(const std::vector<std::string_view>& keys) {
  std::set<std::string> out;
  for (std::string_view key : keys) {
    INFO("key " << key);
    CHECK(out.insert(std::string(key)).second);  // each key is one row
  }
  return out;
}

}  // namespace

TEST_CASE("every cluster.yaml field of the loader is in the cluster schema, and back",
          "[spec][schema]") {
  CHECK(TableKeys(rg::spec::RayConfigKeys()) == SchemaProperties("cluster.schema.json"));
}

TEST_CASE("every JobSpec field of the loader is in the jobspec schema, and back",
          "[spec][schema]") {
  CHECK(TableKeys(rg::spec::JobSpecKeys()) == SchemaProperties("jobspec.schema.json"));
}

TEST_CASE("a key missing from the table is refused as unknown, with the nearest table key",
          "[spec][schema]") {
  // The table drives the unknown-key check: every schema property loads without that error,
  // and a misspelt one is pointed at its row.
  for (const std::string& key : SchemaProperties("jobspec.schema.json")) {
    const std::string text = "workload: custom\nentrypoint: x\n" +
                             (key == "workload" || key == "entrypoint" ? "" : key + ": 1\n");
    const auto parsed = rg::spec::LoadJobSpec(text, "jobs/a.yaml");
    for (const auto& d : parsed.diagnostics) {
      INFO(d.ToString());
      CHECK(d.message.find("unknown key") == std::string::npos);
    }
  }
  const auto typo =
      rg::spec::LoadJobSpec("workload: custom\nentrypoint: x\nretires: 1\n", "jobs/a.yaml");
  REQUIRE(typo.diagnostics.size() == 1);
  CHECK(typo.diagnostics[0].message == "unknown key \"retires\" (did you mean \"retries\"?)");
}
