#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>

#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/yaml_document.h"

namespace rg::spec {
namespace {

using core::Value;

// Reads ToYaml's output back with the loader's own YAML reader (yaml-cpp underneath).
Value ReadBack(const std::string& yaml) {
  YamlParse parse = ParseYamlDocument(yaml, "out.yaml");
  INFO(yaml);
  REQUIRE(parse.diagnostics.empty());
  REQUIRE(parse.root.has_value());
  return ToValue(*parse.root);
}

TEST_CASE("ToYaml writes block style with sorted keys") {
  const Value value = Value::Object{
      {"name", "ppo-qwen"},
      {"attempt", 2},
      {"ratio", 0.5},
      {"whole", 3.0},
      {"suspended", false},
      {"end_time", nullptr},
      {"errors", Value::Array{}},
      {"labels", Value::Object{}},
      {"attempts", Value::Array{Value::Object{{"id", "a-r1"}, {"status", "FAILED"}}, "x"}},
      {"nested", Value::Object{{"list", Value::Array{1, Value::Array{"a", "b"}}}}},
  };
  CHECK(ToYaml(value) ==
        "attempt: 2\n"
        "attempts:\n"
        "  -\n"
        "    id: a-r1\n"
        "    status: FAILED\n"
        "  - x\n"
        "end_time: null\n"
        "errors: []\n"
        "labels: {}\n"
        "name: ppo-qwen\n"
        "nested:\n"
        "  list:\n"
        "    - 1\n"
        "    -\n"
        "      - a\n"
        "      - b\n"
        "ratio: 0.5\n"
        "suspended: false\n"
        "whole: 3.0\n");
  CHECK(ReadBack(ToYaml(value)) == value);
}

TEST_CASE("strings that would read back as something else are quoted") {
  CHECK(ToYaml(Value::Object{{"a", "true"}}) == "a: \"true\"\n");
  CHECK(ToYaml(Value::Object{{"a", "1"}}) == "a: \"1\"\n");
  CHECK(ToYaml(Value::Object{{"a", "null"}}) == "a: \"null\"\n");
  CHECK(ToYaml(Value::Object{{"a", ""}}) == "a: \"\"\n");
  CHECK(ToYaml(Value::Object{{"a", "x: y"}}) == "a: \"x: y\"\n");
  CHECK(ToYaml(Value::Object{{"a", "plain/path-1.0"}}) == "a: plain/path-1.0\n");
}

TEST_CASE("strings a YAML 1.1 reader would take for something else are quoted too") {
  CHECK(ToYaml(Value::Object{{"a", "yes"}}) == "a: \"yes\"\n");
  CHECK(ToYaml(Value::Object{{"a", "off"}}) == "a: \"off\"\n");
  CHECK(ToYaml(Value::Object{{"a", "2026-01-02T03:04:05.678Z"}}) ==
        "a: \"2026-01-02T03:04:05.678Z\"\n");
  CHECK(ToYaml(Value::Object{{"a", "1:20"}}) == "a: \"1:20\"\n");
  CHECK(ToYaml(Value::Object{{"a", "1_000"}}) == "a: \"1_000\"\n");
  CHECK(ToYaml(Value::Object{{"a", "-.5x"}}) == "a: \"-.5x\"\n");
  CHECK(ToYaml(Value::Object{{"<<", "x"}}) == "\"<<\": x\n");
  CHECK(ToYaml(Value::Object{{"a", "v1.0"}}) == "a: v1.0\n");
  CHECK(ToYaml(Value::Object{{"a", "yesterday"}}) == "a: yesterday\n");
  CHECK(ToYaml(Value::Object{{"a", "${shared_root}/x"}}) == "a: ${shared_root}/x\n");
}

TEST_CASE("multi-line strings are written as literal blocks") {
  CHECK(ToYaml(Value::Object{{"msg", "line one\nline two\n"}}) ==
        "msg: |\n  line one\n  line two\n");
  CHECK(ToYaml(Value::Object{{"msg", "a\n\nb"}}) == "msg: |-\n  a\n\n  b\n");
}

TEST_CASE("every tricky string and number survives a round trip through YAML") {
  const std::vector<std::string> strings = {"true",
                                            "True",
                                            "FALSE",
                                            "yes",
                                            "no",
                                            "on",
                                            "1",
                                            "-1",
                                            "+1",
                                            "0x1F",
                                            "0o17",
                                            "1e3",
                                            ".5",
                                            "1.",
                                            ".inf",
                                            "-.inf",
                                            ".nan",
                                            "null",
                                            "Null",
                                            "~",
                                            "",
                                            " ",
                                            " lead",
                                            "trail ",
                                            "a: b",
                                            "a:",
                                            "#x",
                                            "x #y",
                                            "x#y",
                                            "- x",
                                            "-",
                                            "-x",
                                            "?",
                                            "? x",
                                            ":",
                                            "::",
                                            "@x",
                                            "`x",
                                            "%x",
                                            "!x",
                                            "&x",
                                            "*x",
                                            "|x",
                                            ">x",
                                            "'x",
                                            "\"x",
                                            "[x]",
                                            "{x}",
                                            "x,y",
                                            "---",
                                            "...",
                                            "--- x",
                                            "multi\nline",
                                            "multi\nline\n",
                                            "trail\n\n",
                                            "\nlead",
                                            " indented\nx",
                                            "a\n  \nb",
                                            "tab\tx",
                                            "\t",
                                            "cr\r\nlf",
                                            "quote\"s",
                                            "back\\slash",
                                            "bell\x07",
                                            "del\x7f",
                                            "caf\xc3\xa9",
                                            "\xe2\x80\xa8",
                                            "\xc2\x85",
                                            "\xef\xbb\xbf"
                                            "bom",
                                            "\xf0\x9f\x9a\x80",
                                            "echo 'hi' && ls",
                                            std::string(600, 'x')};
  Value::Object object;
  Value::Array array;
  for (size_t i = 0; i < strings.size(); ++i) {
    object.emplace(strings[i], strings[i]);
    array.push_back(strings[i]);
  }
  CHECK(ReadBack(ToYaml(object)) == Value(object));
  CHECK(ReadBack(ToYaml(array)) == Value(array));
  for (const auto& s : strings) {
    INFO(s);
    CHECK(ReadBack(ToYaml(Value(s))) == Value(s));
  }

  const Value::Array numbers = {0,
                                -0.5,
                                1.0,
                                1e300,
                                1.5e-300,
                                0.1,
                                Value(std::numeric_limits<int64_t>::min()),
                                Value(std::numeric_limits<int64_t>::max()),
                                true,
                                false,
                                nullptr};
  CHECK(ReadBack(ToYaml(numbers)) == Value(numbers));
}

TEST_CASE("ToYaml is deterministic") {
  const Value value = Value::Object{{"b", Value::Array{1, 2}}, {"a", Value::Object{{"c", "d"}}}};
  CHECK(ToYaml(value) == ToYaml(value));
  CHECK(ToYaml(value) == "a:\n  c: d\nb:\n  - 1\n  - 2\n");
}

}  // namespace
}  // namespace rg::spec
