#include "reconciler/core/string_map.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace rg::core {
namespace {

using Model = std::map<std::string, std::string, std::less<>>;

std::vector<std::pair<std::string, std::string>> Entries(const StringMap& map) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : map) out.emplace_back(key, value);
  return out;
}

std::vector<std::pair<std::string, std::string>> Entries(const Model& model) {
  return {model.begin(), model.end()};
}

void CheckSame(const StringMap& map, const Model& model) {
  REQUIRE(Entries(map) == Entries(model));
  CHECK(map.size() == model.size());
  CHECK(map.empty() == model.empty());
  for (const auto& [key, value] : model) {
    REQUIRE(map.contains(key));
    CHECK(map.at(key) == value);
    CHECK(map.find(key)->first == key);
    CHECK(map.find(key)->second == value);
  }
  CHECK(map == StringMap(model));
}

TEST_CASE("a StringMap keeps its entries sorted by key, each key once, as a std::map does") {
  StringMap map;
  Model model;
  CheckSame(map, model);
  CHECK(map.begin() == map.end());

  map["b"] = "2";
  model["b"] = "2";
  map.insert_or_assign("a", "1");
  model.insert_or_assign("a", "1");
  map["c"] = "3";
  model["c"] = "3";
  CheckSame(map, model);

  map["b"] = "a much longer value than before, which moves the entries after it";
  model["b"] = "a much longer value than before, which moves the entries after it";
  CheckSame(map, model);

  CHECK_FALSE(map.emplace("a", "other"));  // an emplace keeps what is there
  CHECK(map.emplace("", "the empty key"));
  model.emplace("", "the empty key");
  CheckSame(map, model);

  CHECK(map.erase("b") == 1);
  CHECK(map.erase("b") == 0);
  CHECK(map.erase("zz") == 0);
  model.erase("b");
  CheckSame(map, model);

  CHECK(map.find("nothing") == map.end());
  CHECK_THROWS_AS(map.at("nothing"), std::out_of_range);

  map.clear();
  CheckSame(map, {});
}

TEST_CASE("a StringMap orders bytes as unsigned and keeps NULs and empty values") {
  const std::string nul_key("a\0b", 3);
  const std::string high_key = "\xc3\xa4";  // "ä": after every ASCII key
  StringMap map{{high_key, "umlaut"}, {"z", ""}, {nul_key, std::string("v\0w", 3)}, {"a", "x"}};
  const Model model{{high_key, "umlaut"}, {"z", ""}, {nul_key, std::string("v\0w", 3)}, {"a", "x"}};
  CheckSame(map, model);
  CHECK(Entries(map).back().first == high_key);
  CHECK(map.at(nul_key).size() == 3);
}

TEST_CASE("a StringMap built from a list keeps the first of two entries with one key") {
  const StringMap map{{"k", "first"}, {"k", "second"}};
  CHECK(map.size() == 1);
  CHECK(map.at("k") == "first");
}

TEST_CASE("Append adds only keys after the last one, and copies views into the map itself") {
  StringMap map;
  CHECK(map.Append("b", "1"));
  CHECK(map.Append("c", "2"));
  CHECK_FALSE(map.Append("c", "again"));
  CHECK_FALSE(map.Append("a", "before"));
  CHECK(map.size() == 2);

  // A value that is a view into the map's own buffer, appended while the buffer grows.
  for (int i = 0; i < 40; ++i) {
    const std::string_view own = map.at("b");
    REQUIRE(map.Append("d" + std::to_string(100 + i), own));
  }
  for (const auto& [key, value] : map) {
    if (key.starts_with("d")) CHECK(value == "1");
  }
  // A key taken from the map itself, set again.
  const std::string_view key = map.begin()->first;
  map.insert_or_assign(key, "changed");
  CHECK(map.at("b") == "changed");
  map.ShrinkToFit();
  CHECK(map.size() == 42);
}

TEST_CASE("a StringMap agrees with a std::map over random changes") {
  std::mt19937 rng(20261127);
  StringMap map;
  Model model;
  auto random_text = [&rng](int max_len) {
    std::uniform_int_distribution<int> len(0, max_len);
    std::uniform_int_distribution<int> byte(0, 255);
    std::string out;
    const int n = len(rng);
    for (int i = 0; i < n; ++i) out += static_cast<char>(byte(rng) % 4 == 0 ? 'a' : byte(rng));
    return out;
  };
  for (int step = 0; step < 3000; ++step) {
    const std::string key = random_text(3);
    const std::string value = random_text(40);
    switch (step % 5) {
      case 0:
      case 1:
        map.insert_or_assign(key, value);
        model.insert_or_assign(key, value);
        break;
      case 2:
        CHECK(map.emplace(key, value) == model.emplace(key, value).second);
        break;
      case 3:
        CHECK(map.erase(key) == model.erase(key));
        break;
      default:
        if (model.empty() || model.rbegin()->first < key) {
          CHECK(map.Append(key, value));
          model.emplace(key, value);
        } else {
          CHECK_FALSE(map.Append(key, value));
        }
        break;
    }
    if (step % 100 == 0) CheckSame(map, model);
  }
  CheckSame(map, model);
}

}  // namespace
}  // namespace rg::core
