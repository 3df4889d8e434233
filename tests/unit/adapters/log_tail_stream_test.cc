// ray_http::LogTailStream: the end of GET /api/jobs/{id}/logs's answer read as it arrives,
// in any chunking, against nlohmann_json's reading of the whole answer.

#include "reconciler/adapters/log_tail_stream.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace rg::adapters::ray_http {
namespace {

struct Read {
  bool ok = false;
  std::string tail;
  size_t total = 0;
  std::string error;
};

// `answer` written in chunks of `chunk` bytes (0: whole).
Read ReadAnswer(const std::string& answer, size_t max_bytes, size_t chunk = 0) {
  LogTailStream stream(max_bytes);
  stream.Begin();
  if (chunk == 0) chunk = answer.size() + 1;
  for (size_t at = 0; at < answer.size(); at += chunk) stream.Write(answer.substr(at, chunk));
  Read out;
  core::Result<std::string> tail = stream.Finish(&out.total);
  out.ok = tail.ok();
  if (tail.ok()) {
    out.tail = *tail;
  } else {
    out.error = tail.error().message();
  }
  return out;
}

TEST_CASE("a log answer is decoded whole, its escapes included") {
  const Read r = ReadAnswer(R"({"logs": "a\nb\t\"q\" \\ \/ \u00e9 \ud83d\ude00 \b\f\r"})", 1'000);
  REQUIRE(r.ok);
  CHECK(r.tail == "a\nb\t\"q\" \\ / \xc3\xa9 \xf0\x9f\x98\x80 \b\f\r");
  CHECK(r.total == r.tail.size());
}

TEST_CASE("only the last bytes of the log are kept, and its whole length counted") {
  std::string log;
  for (int i = 0; i < 5'000; ++i) log += "line " + std::to_string(i) + "\n";
  const std::string answer = nlohmann::json{{"logs", log}}.dump();
  for (const size_t chunk : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}}) {
    const Read r = ReadAnswer(answer, 100, chunk);
    REQUIRE(r.ok);
    CHECK(r.total == log.size());
    CHECK(r.tail == log.substr(log.size() - 100));
  }
  const Read none = ReadAnswer(answer, 0);
  REQUIRE(none.ok);
  CHECK(none.tail.empty());
  CHECK(none.total == log.size());
}

TEST_CASE("other keys are read past, a null or missing log is empty") {
  const Read r =
      ReadAnswer(R"( { "x": "y\"z", "n": -1.5e3, "t": true, "logs": "abc", "z": null } )", 10);
  REQUIRE(r.ok);
  CHECK(r.tail == "abc");
  CHECK(ReadAnswer(R"({"logs": null})", 10).tail.empty());
  CHECK(ReadAnswer(R"({})", 10).ok);
  CHECK(ReadAnswer(R"({"l\"ogs": "no"})", 10).tail.empty());  // an escaped key is not "logs"
}

TEST_CASE("an answer that is not a flat object with a string log is an error") {
  const std::vector<std::string> bad = {
      "",
      "[1]",
      R"("logs")",
      R"({"logs": {"a": 1}})",
      R"({"logs": ["a"]})",
      R"({"logs": "abc)",
      R"({"logs": "a\qb"})",
      R"({"logs": "a\u12"})",
      "{\"logs\": \"a\x01b\"}",
      R"({"logs": "a"} x)",
      R"({"logs" "a"})",
      R"({"logs": "a" "b"})",
  };
  for (const std::string& text : bad) {
    INFO(text);
    const Read r = ReadAnswer(text, 10);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, Catch::StartsWith("logs: "));
  }
}

TEST_CASE("lone surrogates read as U+FFFD") {
  CHECK(ReadAnswer(R"({"logs": "\ud83dx"})", 100).tail == "\xef\xbf\xbdx");
  CHECK(ReadAnswer(R"({"logs": "\ude00"})", 100).tail == "\xef\xbf\xbd");
  CHECK(ReadAnswer(R"({"logs": "\ud83d"})", 100).tail == "\xef\xbf\xbd");
}

TEST_CASE("Begin starts over: a retry after a cut answer reads only the new one") {
  LogTailStream stream(100);
  stream.Begin();
  stream.Write(R"({"logs": "first attempt, cut)");
  stream.Begin();
  stream.Write(R"({"logs": "second"})");
  size_t total = 0;
  core::Result<std::string> tail = stream.Finish(&total);
  REQUIRE(tail.ok());
  CHECK(*tail == "second");
  CHECK(total == 6);
}

TEST_CASE("random logs in random chunks read as nlohmann_json reads them whole") {
  std::mt19937 rng(20261128);
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_int_distribution<uint32_t> bmp(0x20, 0xD7FF);
  std::uniform_int_distribution<uint32_t> astral(0x10000, 0x10FFFF);
  for (int round = 0; round < 200; ++round) {
    nlohmann::json::string_t log;
    const int length = std::uniform_int_distribution<int>(0, 300)(rng);
    for (int i = 0; i < length; ++i) {
      const int k = kind(rng);
      uint32_t cp = 0;
      if (k < 5) {
        cp = std::uniform_int_distribution<uint32_t>(0x20, 0x7E)(rng);
      } else if (k < 7) {
        cp = std::uniform_int_distribution<uint32_t>(0, 0x1F)(rng);  // escaped by dump
      } else if (k < 9) {
        cp = bmp(rng);
      } else {
        cp = astral(rng);
      }
      // UTF-8 of cp, as nlohmann_json's string holds it.
      if (cp < 0x80) {
        log += static_cast<char>(cp);
      } else if (cp < 0x800) {
        log += static_cast<char>(0xC0 | (cp >> 6));
        log += static_cast<char>(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        log += static_cast<char>(0xE0 | (cp >> 12));
        log += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        log += static_cast<char>(0x80 | (cp & 0x3F));
      } else {
        log += static_cast<char>(0xF0 | (cp >> 18));
        log += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        log += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        log += static_cast<char>(0x80 | (cp & 0x3F));
      }
    }
    // ensure_ascii: every non-ASCII character as \u escapes, astral ones as surrogate pairs.
    const bool ascii = round % 2 == 0;
    const std::string answer = nlohmann::json{{"logs", log}}.dump(-1, ' ', ascii);
    const std::string expected = nlohmann::json::parse(answer).at("logs").get<std::string>();
    const size_t max = std::uniform_int_distribution<size_t>(0, 400)(rng);
    const size_t chunk = std::uniform_int_distribution<size_t>(1, 64)(rng);
    INFO("round " << round << ", max " << max << ", chunk " << chunk);
    const Read r = ReadAnswer(answer, max, chunk);
    REQUIRE(r.ok);
    CHECK(r.total == expected.size());
    CHECK(r.tail == (expected.size() > max ? expected.substr(expected.size() - max) : expected));
  }
}

}  // namespace
}  // namespace rg::adapters::ray_http
