#include "reconciler/core/value.h"

#include <catch2/catch.hpp>

using rg::core::Value;

TEST_CASE("canonical JSON sorts keys and has no whitespace") {
  Value v;
  v["b"] = 1;
  v["a"] = Value::Array{true, nullptr, "x"};
  CHECK(rg::core::ToCanonicalJson(v) == R"({"a":[true,null,"x"],"b":1})");
}

TEST_CASE("canonical JSON escapes quotes, backslashes and control characters") {
  Value v = std::string("q\"b\\n\n\x01");
  CHECK(rg::core::ToCanonicalJson(v) == R"("q\"b\\n\n\u0001")");
}

TEST_CASE("doubles are written in their shortest round-trip form") {
  CHECK(rg::core::ToCanonicalJson(Value(0.5)) == "0.5");
  CHECK(rg::core::ToCanonicalJson(Value(1e21)) == "1e+21");
  CHECK(rg::core::ToCanonicalJson(Value(int64_t{-3})) == "-3");
}

TEST_CASE("pretty JSON indents by two spaces") {
  Value v;
  v["k"] = Value::Array{1, 2};
  CHECK(rg::core::ToPrettyJson(v) == "{\n  \"k\": [\n    1,\n    2\n  ]\n}");
}

TEST_CASE(
    "pretty JSON escapes controls and bidi controls and replaces invalid UTF-8 but canonical JSON "
    "keeps bytes") {
  const std::string raw = "a\x1b\x7f \xC2\x9B \xE2\x80\xAE \xFF \xC3\xA9";
  CHECK(rg::core::ToPrettyJson(Value(raw)) ==
        "\"a\\u001b\\u007f \\u009b \\u202e \\ufffd \xC3\xA9\"");
  CHECK(rg::core::ToCanonicalJson(Value(raw)) ==
        "\"a\\u001b\x7f \xC2\x9B \xE2\x80\xAE \xFF \xC3\xA9\"");
}
