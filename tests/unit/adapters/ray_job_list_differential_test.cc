// ParseJobList reads Ray's job list as the text streams by; ParseJobListDom reads it through a
// JSON tree and is the reference. Both must give the same jobs, or the same error kind and
// message, for every input: the recorded answers, the fake head's answers, generated lists
// with every value type in every field, and every prefix of a real answer.
//
// The timing cases are hidden; run them on an optimized build with
//   unit_ray_job_list_tests "[.bench]"

#include <httplib.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/adapters/ray_http_rules.h"
#include "reconciler/core/siphash.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/sanitizer.h"
#include "tests/support/test_files.h"

// Every byte operator new hands out, to report how much a decoder allocates at its peak.
namespace {
std::atomic<int64_t> g_heap_bytes{0};
std::atomic<int64_t> g_heap_peak{0};

[[maybe_unused]] void* CountedAlloc(size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  const int64_t now = g_heap_bytes.fetch_add(static_cast<int64_t>(malloc_usable_size(p))) +
                      static_cast<int64_t>(malloc_usable_size(p));
  int64_t peak = g_heap_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_heap_peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}

[[maybe_unused]] void CountedFree(void* p) noexcept {
  if (p == nullptr) return;
  g_heap_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
  std::free(p);
}
}  // namespace

// Not under AddressSanitizer, which has its own operator new and reports any allocation it
// made that this free() releases: there the counts stay 0 (the timing cases that print them
// are for optimized builds anyway).
#if !defined(RG_UNDER_ASAN)
void* operator new(size_t size) { return CountedAlloc(size); }
void* operator new[](size_t size) { return CountedAlloc(size); }
void operator delete(void* p) noexcept { CountedFree(p); }
void operator delete[](void* p) noexcept { CountedFree(p); }
void operator delete(void* p, size_t /*size*/) noexcept { CountedFree(p); }
void operator delete[](void* p, size_t /*size*/) noexcept { CountedFree(p); }
#endif

namespace rg::adapters::ray_http {
namespace {

namespace fs = std::filesystem;
using core::RayJob;
using JobList = core::Result<std::vector<RayJob>>;

bool SameJob(const RayJob& a, const RayJob& b) {
  return a.type == b.type && a.job_id == b.job_id && a.submission_id == b.submission_id &&
         a.status == b.status && a.entrypoint == b.entrypoint && a.message == b.message &&
         a.error_type == b.error_type && a.start_time_ms == b.start_time_ms &&
         a.end_time_ms == b.end_time_ms && a.metadata == b.metadata &&
         a.driver_exit_code == b.driver_exit_code && a.driver_node_id == b.driver_node_id;
}

// An empty string when both decoders agree, else what differs.
std::string Difference(std::string_view text) {
  const JobList streamed = ParseJobList(text);
  const JobList tree = ParseJobListDom(text);
  if (streamed.ok() != tree.ok()) {
    return std::string("streamed ") + (streamed.ok() ? "ok" : streamed.error().ToString()) +
           ", tree " + (tree.ok() ? "ok" : tree.error().ToString());
  }
  if (!tree.ok()) {
    if (streamed.error().kind() == tree.error().kind() &&
        streamed.error().message() == tree.error().message()) {
      return "";
    }
    return "streamed " + streamed.error().ToString() + ", tree " + tree.error().ToString();
  }
  if (streamed->size() != tree->size()) {
    return "streamed " + std::to_string(streamed->size()) + " jobs, tree " +
           std::to_string(tree->size());
  }
  for (size_t i = 0; i < tree->size(); ++i) {
    if (!SameJob((*streamed)[i], (*tree)[i])) return "job " + std::to_string(i) + " differs";
  }
  return "";
}

#define CHECK_SAME_RESULT(text)               \
  do {                                        \
    const std::string input_ = (text);        \
    INFO("input: " << input_.substr(0, 300)); \
    CHECK(Difference(input_) == "");          \
  } while (false)

std::vector<std::string> RecordedAnswers() {
  std::vector<std::string> answers;
  const fs::path seeds = fs::path(RG_SOURCE_DIR) / "tests/fuzz/seeds/ray_json";
  for (const auto& entry : fs::directory_iterator(seeds)) {
    answers.push_back(testing::ReadFileText(entry.path()));
  }
  REQUIRE(answers.size() >= 6);
  return answers;
}

// Submits `count` jobs to `head` and puts them in every state, and adds a driver job.
void FillFakeHead(testing::FakeRayServer& head, int count) {
  const char* const statuses[] = {"RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "PENDING"};
  for (int i = 0; i < count; ++i) {
    const std::string id = "ppo-qwen-" + std::to_string(i) + "-3f2a1c9b0e";
    const std::string body = R"({"entrypoint": "python3 -m verl.trainer.main_ppo --n )" +
                             std::to_string(i) + R"(", "submission_id": ")" + id +
                             R"(", "metadata": {"gitops.managed-by": "ray-gitops", )"
                             R"("gitops.name": "ppo-qwen-)" +
                             std::to_string(i) +
                             R"(", "gitops.attempt": "0"}, "runtime_env": )"
                             R"({"env_vars": {"HF_HOME": "/shared/hf"}}})";
    const testing::FakeRayAnswer submitted = head.Respond({"POST", "/api/jobs/", body, {}});
    REQUIRE(submitted.status == 200);
    const std::string_view status = statuses[i % 5];
    if (status != "PENDING") {
      head.SetStatus(id, core::ParseRayJobStatus(status), "Job " + std::string(status), i % 3);
    }
  }
  head.AddDriverJob("02000000", "python train.py");
}

// The fake head's GET /api/jobs/ after FillFakeHead(count).
std::string FakeHeadList(int count) {
  testing::FakeRayOptions options;
  options.listen = false;
  testing::FakeRayServer head(options);
  FillFakeHead(head, count);
  const testing::FakeRayAnswer list = head.Respond({"GET", "/api/jobs/", "", {}});
  REQUIRE(list.status == 200);
  return list.body;
}

TEST_CASE("the streamed job list reads every recorded answer as the tree does",
          "[ray_http][differential]") {
  for (const std::string& answer : RecordedAnswers()) {
    CHECK_SAME_RESULT(answer);
    CHECK_SAME_RESULT("[" + answer + "]");
    CHECK_SAME_RESULT("[" + answer + ", " + answer + "]");
  }
  const std::string fake = FakeHeadList(20);
  CHECK_SAME_RESULT(fake);
  REQUIRE(ParseJobList(fake).ok());
  CHECK(ParseJobList(fake)->size() == 21);
  CHECK(ParseJobList(fake)->back().type == "DRIVER");
}

TEST_CASE("a filtered job list keeps exactly the jobs the filter accepts, in order",
          "[ray_http][differential]") {
  const std::string fake = FakeHeadList(20);
  const core::Result<std::vector<core::RayJob>> all = ParseJobList(fake);
  REQUIRE(all.ok());
  auto odd = [](const core::RayJob& job) {
    return !job.submission_id.empty() && (job.submission_id.back() - '0') % 2 == 1;
  };
  const core::Result<std::vector<core::RayJob>> kept = ParseJobList(fake, odd);
  REQUIRE(kept.ok());
  auto ids = [](const std::vector<core::RayJob>& jobs) {
    std::vector<std::string> out;
    for (const core::RayJob& job : jobs) out.push_back(job.submission_id + " " + job.entrypoint);
    return out;
  };
  std::vector<core::RayJob> expected;
  for (const core::RayJob& job : *all) {
    if (odd(job)) expected.push_back(job);
  }
  REQUIRE_FALSE(expected.empty());
  CHECK(ids(*kept) == ids(expected));
  // An empty filter keeps every job; a filter does not hide a broken answer.
  CHECK(ids(*ParseJobList(fake, {})) == ids(*all));
  CHECK_FALSE(ParseJobList(fake.substr(0, fake.size() / 2), odd).ok());
}

TEST_CASE("the streamed job list agrees with the tree on the cases JobFromJson decides",
          "[ray_http][differential]") {
  const char* const cases[] = {
      // Not an array, or not JSON at all.
      "",
      " ",
      "null",
      "{}",
      R"({"jobs": []})",
      "\"[]\"",
      "3",
      "[",
      "]",
      "[]",
      " [ ] ",
      "[] []",
      "[]x",
      "{} x",
      "[{}",
      "[{},]",
      "[{}]]",
      "\xEF\xBB\xBF[]",
      "[]\xEF\xBB\xBF",
      "[\"\xC3\"]",
      "[1e400]",
      "[{\"x\": 1e400}]",
      "[{\"submission_id\": \"a\"}, 1e400]",
      "[{\"status\": 3}, {]",
      // The key the list is reserved by, also inside values and as a bare string.
      R"([{"submission_id": "a", "message": "\"submission_id\" twice"}, "submission_id"])",
      R"([{"submission_id": "a", "metadata": {"\"submission_id\"": "x"}}, {}])",
      // Elements that are not objects, and where they sit.
      "[1]",
      "[null]",
      "[true]",
      "[\"job\"]",
      "[[]]",
      "[[{}]]",
      "[{}, []]",
      "[{}, 2, {\"status\": 3}]",
      "[{\"status\": 3}, 2]",
      // Types per field, nulls, and missing keys.
      "[{}]",
      R"([{"type": null, "job_id": null, "submission_id": null, "entrypoint": null,
           "message": null, "error_type": null, "start_time": null, "end_time": null,
           "driver_exit_code": null, "driver_node_id": null, "status": null, "metadata": null}])",
      R"([{"type": 1}])",
      R"([{"job_id": true}])",
      R"([{"submission_id": {}}])",
      R"([{"entrypoint": []}])",
      R"([{"message": 1.5}])",
      R"([{"error_type": 0}])",
      R"([{"driver_node_id": false}])",
      R"([{"status": 3}])",
      R"([{"status": "RESURRECTED"}])",
      R"([{"status": ""}])",
      R"([{"start_time": "yesterday"}])",
      R"([{"end_time": true}])",
      R"([{"driver_exit_code": {}}])",
      R"([{"start_time": []}])",
      R"([{"metadata": []}])",
      R"([{"metadata": "a=b"}])",
      R"([{"metadata": 0}])",
      R"([{"metadata": false}])",
      // Which error comes first follows JobFromJson's order, not the text's.
      R"([{"metadata": 1, "status": 2, "start_time": "x", "type": 3}])",
      R"([{"metadata": 1, "status": 2}])",
      R"([{"metadata": 1, "driver_node_id": 2, "start_time": "x"}])",
      // Numbers: integers, unsigned past int64, floats rounded, zero times dropped.
      R"([{"start_time": 0, "end_time": 0, "driver_exit_code": 0}])",
      R"([{"start_time": -0, "end_time": -0.0, "driver_exit_code": -0.0}])",
      R"([{"start_time": 0.4, "end_time": -0.4, "driver_exit_code": 0.5}])",
      R"([{"start_time": 2.5, "end_time": -2.5, "driver_exit_code": 1e2}])",
      R"([{"start_time": 9223372036854775807, "end_time": -9223372036854775808}])",
      R"([{"start_time": 9223372036854775808, "end_time": 18446744073709551615}])",
      R"([{"start_time": 18446744073709551616, "end_time": -9223372036854775809}])",
      R"([{"start_time": 1e18, "end_time": 1.7953391648415e12, "driver_exit_code": 137}])",
      R"([{"start_time": 5e-324, "end_time": 1E-2, "driver_exit_code": -1}])",
      R"([{"start_time": 1795339164841, "end_time": 1795339164841.6}])",
      // A key given twice counts with its last value.
      R"([{"status": "RUNNING", "status": "FAILED"}])",
      R"([{"status": 3, "status": "FAILED"}])",
      R"([{"status": "FAILED", "status": 3}])",
      R"([{"status": "FAILED", "status": null}])",
      R"([{"status": "FAILED", "status": {"a": "RUNNING"}}])",
      R"([{"start_time": 5, "start_time": null}])",
      R"([{"start_time": 5, "start_time": "x"}])",
      R"([{"start_time": "x", "start_time": 5}])",
      R"([{"job_id": "a", "job_id": null}])",
      R"([{"metadata": {"a": "1"}, "metadata": {"b": "2"}}])",
      R"([{"metadata": {"a": "1"}, "metadata": null}])",
      R"([{"metadata": {"a": "1"}, "metadata": 5}])",
      R"([{"metadata": 5, "metadata": {"a": "1"}}])",
      R"([{"metadata": {"a": "1", "a": "2"}}])",
      R"([{"metadata": {"a": "1", "a": 2}}])",
      R"([{"metadata": {"a": "1", "a": null}}])",
      R"([{"metadata": {"a": "1", "a": {"b": "c"}}}])",
      R"([{"metadata": {"a": {"b": "c"}, "a": "1"}}])",
      R"([{"metadata": {"a": "1", "a": ["2"]}, "b": "3"}])",
      // Metadata values that are not strings, and nesting that must be skipped.
      R"([{"metadata": {"n": 1, "f": 1.5, "t": true, "z": null, "o": {"status": "x"},
                        "l": ["status"], "s": "kept", "": "empty key"}}])",
      R"([{"runtime_env": {"status": 3, "metadata": 4, "type": [1, {"type": 2}]},
           "status": "RUNNING"}])",
      R"([{"driver_info": {"id": "02", "metadata": "x"}, "type": "DRIVER"}])",
      R"([{"a": [[[[{"status": 1}]]]], "status": "PENDING"}])",
      R"([{"a": {"b": {"c": {"d": {}}}}, "status": "PENDING", "e": []}])",
      // Keys that look like ours but are not.
      R"([{"Status": 3, "status ": 3, "statu": 3, "statuss": 3, "": 3, "metadata\u0000": 3}])",
      R"([{"st\u0061tus": "RUNNING", "meta\u0064ata": {"\u0061": "\u00e9"}}])",
      // Strings: escapes, unicode, and text that is not UTF-8.
      R"([{"message": "a\"b\\c\/d\b\f\n\r\t\u0001\u00e9\u4e2d\ud83d\ude00"}])",
      "[{\"message\": \"\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80\"}]",
      "[{\"message\": \"\xC3\"}]",
      "[{\"message\": \"\xFF\"}]",
      R"([{"message": "\ud83d"}])",
      R"([{"message": "\x"}])",
      "[{\"message\": \"a\nb\"}]",
      // Trailing text, and a NUL.
      "[{\"status\": 3}] x",
      "[{\"status\": \"RUNNING\"}]\n",
  };
  for (const char* text : cases) CHECK_SAME_RESULT(text);
  using namespace std::string_literals;
  CHECK_SAME_RESULT("[]\0"s);
  CHECK_SAME_RESULT("[{\"status\": 3}]\0"s);
  CHECK_SAME_RESULT("[{\"message\": \"\\u0000\"}]"s);
}

// Writes random job objects: every key of JobFromJson and some it ignores, each missing, null
// or of any type, sometimes twice, with escapes, unicode and numbers at the edges. With
// `well_typed` every present value has a type JobFromJson accepts, so whole lists read.
class JobTextGenerator {
 public:
  explicit JobTextGenerator(uint64_t seed) : rng_(seed) {}

  std::string List(int jobs, bool well_typed) {
    std::string out = "[";
    for (int i = 0; i < jobs; ++i) {
      if (i > 0) out += Pick({",", ", ", ",\n ", " ,"});
      out += Job(well_typed);
    }
    return out + Pick({"]", "]", " ]\n", "]\r\n"});
  }

  std::string Job(bool well_typed) {
    static const char* const kStringKeys[] = {"type",           "job_id",  "submission_id",
                                              "entrypoint",     "message", "error_type",
                                              "driver_node_id", "status"};
    static const char* const kNumberKeys[] = {"start_time", "end_time", "driver_exit_code"};
    static const char* const kOtherKeys[] = {"driver_info", "runtime_env",
                                             "driver_agent_http_address", "a_future_key"};
    std::vector<std::string> members;
    for (const char* key : kStringKeys) {
      AddMember(members, key, [&] { return well_typed ? StringOrNull() : AnyValue(2); });
    }
    for (const char* key : kNumberKeys) {
      AddMember(members, key, [&] { return well_typed ? NumberOrNull() : AnyValue(2); });
    }
    AddMember(members, "metadata", [&] { return well_typed ? Metadata() : AnyValue(3); });
    for (const char* key : kOtherKeys) AddMember(members, key, [&] { return AnyValue(3); });
    std::shuffle(members.begin(), members.end(), rng_);
    std::string out = "{";
    for (size_t i = 0; i < members.size(); ++i) {
      if (i > 0) out += Pick({",", ", ", " ,\n  "});
      out += members[i];
    }
    return out + "}";
  }

 private:
  template <typename MakeValue>
  void AddMember(std::vector<std::string>& members, const std::string& key, MakeValue value) {
    const int times = Chance(25) ? 0 : (Chance(8) ? 2 : 1);
    for (int i = 0; i < times; ++i)
      members.push_back(Quote(key) + Pick({":", ": ", " : "}) + value());
  }

  bool Chance(int percent) { return std::uniform_int_distribution<int>(0, 99)(rng_) < percent; }

  std::string Pick(std::initializer_list<const char*> choices) {
    const size_t i = std::uniform_int_distribution<size_t>(0, choices.size() - 1)(rng_);
    return *(choices.begin() + static_cast<std::ptrdiff_t>(i));
  }

  std::string Quote(const std::string& raw) { return "\"" + raw + "\""; }

  std::string Text() {
    std::string out;
    const int parts = std::uniform_int_distribution<int>(0, 6)(rng_);
    for (int i = 0; i < parts; ++i) {
      out += Pick({"a",
                   "ppo-qwen-3f2a1c9b0e",
                   "RUNNING",
                   "FAILED",
                   "SUCCEEDED",
                   "PENDING",
                   "STOPPED",
                   "SUBMISSION",
                   "DRIVER",
                   " ",
                   "\\\"",
                   "\\\\",
                   "\\/",
                   "\\n",
                   "\\t",
                   "\\u0041",
                   "\\u00e9",
                   "\\u4e2d",
                   "\\ud83d\\ude00",
                   "\xC3\xA9",
                   "\xE4\xB8\xAD",
                   "\xF0\x9F\x98\x80",
                   "gitops.name",
                   "status",
                   "{",
                   "[",
                   ":"});
    }
    return Quote(out);
  }

  std::string Number() {
    if (Chance(40))
      return std::to_string(
          std::uniform_int_distribution<int64_t>(1795000000000, 1796000000000)(rng_));
    return Pick({"0",
                 "-0",
                 "1",
                 "-1",
                 "137",
                 "0.0",
                 "-0.0",
                 "0.5",
                 "1.5",
                 "2.5",
                 "-2.5",
                 "1e3",
                 "1E+3",
                 "2e-3",
                 "1795339164841.6",
                 "9223372036854775807",
                 "-9223372036854775808",
                 "9223372036854775808",
                 "18446744073709551615",
                 "18446744073709551616",
                 "-9223372036854775809",
                 "1e19",
                 "1e300",
                 "-1e300",
                 "5e-324",
                 "123456789012345678901234567890"});
  }

  std::string StringOrNull() { return Chance(15) ? "null" : Text(); }
  std::string NumberOrNull() { return Chance(15) ? "null" : Number(); }

  std::string Metadata() {
    if (Chance(15)) return "null";
    std::string out = "{";
    const int entries = std::uniform_int_distribution<int>(0, 5)(rng_);
    for (int i = 0; i < entries; ++i) {
      if (i > 0) out += ", ";
      out += Pick({"\"gitops.name\"", "\"gitops.attempt\"", "\"n\"", "\"\"", "\"\\u00e9\""});
      out += ": " + (Chance(70) ? Text() : AnyValue(2));
    }
    return out + "}";
  }

  std::string AnyValue(int depth) {
    const int kind = std::uniform_int_distribution<int>(0, depth > 0 ? 7 : 5)(rng_);
    switch (kind) {
      case 0:
        return "null";
      case 1:
        return Pick({"true", "false"});
      case 2:
      case 3:
        return Text();
      case 4:
      case 5:
        return Number();
      case 6: {
        std::string out = "[";
        const int n = std::uniform_int_distribution<int>(0, 3)(rng_);
        for (int i = 0; i < n; ++i) out += (i > 0 ? ", " : "") + AnyValue(depth - 1);
        return out + "]";
      }
      default: {
        std::string out = "{";
        const int n = std::uniform_int_distribution<int>(0, 3)(rng_);
        for (int i = 0; i < n; ++i) {
          out += (i > 0 ? ", " : "") + Pick({"\"status\"", "\"metadata\"", "\"x\"", "\"type\""}) +
                 ": " + AnyValue(depth - 1);
        }
        return out + "}";
      }
    }
  }

  std::mt19937_64 rng_;
};

// Under ASan a parse costs about ten times as much. The debug suite reads every generated list
// and every prefix; the ASan suite a fifth of them, still every shape (docs/testing.md, "The
// ASan+UBSan stage").
#if defined(RG_UNDER_ASAN)
constexpr int kSampleStride = 5;
#else
constexpr int kSampleStride = 1;
#endif

TEST_CASE("the streamed job list reads generated lists as the tree does",
          "[ray_http][differential]") {
  JobTextGenerator generator(20261125);
  // One long list that reads: thousands of jobs with every accepted type in every field.
  const std::string long_list = generator.List(3000, /*well_typed=*/true);
  CHECK_SAME_RESULT(long_list);
  REQUIRE(ParseJobListDom(long_list).ok());
  CHECK(ParseJobListDom(long_list)->size() == 3000);
  // Most of these fail, at some element, for some key: each must fail the same way.
  // 3,000 lists (600 under ASan): every combination of length and typing, many times over.
  const int lists = 3000 / kSampleStride;
  int read = 0;
  for (int i = 0; i < lists; ++i) {
    const bool well_typed = i % 4 == 0;
    const std::string list = generator.List(i % 5, well_typed);
    CHECK_SAME_RESULT(list);
    read += ParseJobListDom(list).ok() ? 1 : 0;
  }
  // Both outcomes were exercised.
  CHECK(read > lists / 10);
  CHECK(read < lists * 9 / 10);
}

TEST_CASE("every prefix of a real answer fails in both decoders alike",
          "[ray_http][differential]") {
  std::vector<std::string> answers = {FakeHeadList(3)};
  for (const std::string& recorded : RecordedAnswers()) {
    if (recorded.starts_with("[")) answers.push_back(recorded);
    if (recorded.starts_with("{")) answers.push_back("[" + recorded + "]");
  }
  for (const std::string& answer : answers) {
    const size_t closing = answer.rfind(']');
    REQUIRE(closing != std::string::npos);
    for (size_t cut = 0; cut <= answer.size(); cut += kSampleStride) {
      const std::string prefix = answer.substr(0, cut);
      CHECK_SAME_RESULT(prefix);
      if (cut <= closing) {
        INFO("cut at " << cut);
        CHECK_FALSE(ParseJobList(prefix).ok());
        CHECK(ParseJobList(prefix).error().kind() == core::ErrorKind::kFatal);
      }
    }
  }
}

// `text` written to a JobListStream in pieces of random sizes up to `largest` bytes (at least
// one), then read; the digest of what was written is checked against the whole text's.
JobList ReadInPieces(std::string_view text, std::mt19937_64& rng, size_t largest) {
  const core::SipHasher::Key key = {rng(), rng()};
  JobListStream stream({}, key);
  stream.Begin();
  std::uniform_int_distribution<size_t> piece(1, std::max<size_t>(1, largest));
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(piece(rng), text.size() - at);
    stream.Write(text.substr(at, n));
    at += n;
  }
  JobList read = stream.Finish();
  CHECK(stream.Digest() == core::SipHash24(key, text));
  return read;
}

// An empty string when reading `text` in pieces gives `tree` (what the tree gives for it), else
// what differs.
std::string PiecesDifference(std::string_view text, const JobList& tree, std::mt19937_64& rng,
                             size_t largest) {
  const JobList pieces = ReadInPieces(text, rng, largest);
  if (pieces.ok() != tree.ok()) {
    return std::string("pieces ") + (pieces.ok() ? "ok" : pieces.error().ToString()) + ", tree " +
           (tree.ok() ? "ok" : tree.error().ToString());
  }
  if (!tree.ok()) {
    return pieces.error().message() == tree.error().message() ? "" : pieces.error().ToString();
  }
  if (pieces->size() != tree->size()) return std::to_string(pieces->size()) + " jobs";
  for (size_t i = 0; i < tree->size(); ++i) {
    if (!SameJob((*pieces)[i], (*tree)[i])) return "job " + std::to_string(i) + " differs";
  }
  return "";
}

TEST_CASE("a job list written in pieces as it arrives reads as the whole text",
          "[ray_http][differential]") {
  std::mt19937_64 rng(20261127);
  constexpr size_t kBlock = JobListStream::kBlockBytes;
  JobTextGenerator generator(20261127);
  // Several blocks long, so that the writer waits for the decoder, and blocks end anywhere.
  const std::string long_list = generator.List(3500, /*well_typed=*/true);
  std::vector<std::string> texts = {long_list, FakeHeadList(20)};
  REQUIRE(long_list.size() > 3 * kBlock);
  for (const std::string& answer : RecordedAnswers()) texts.push_back("[" + answer + "]");
  for (int i = 0; i < 40; ++i) texts.push_back(generator.List(i % 5, i % 4 == 0));
  std::vector<JobList> trees;
  for (const std::string& text : texts) trees.push_back(ParseJobListDom(text));
  REQUIRE(trees.front().ok());
  CHECK(trees.front()->size() == 3500);
  for (const size_t largest : {size_t{1}, size_t{7}, size_t{4096}, kBlock + 1, 3 * kBlock}) {
    INFO("pieces of up to " << largest << " bytes");
    // Byte by byte only for the short texts.
    for (size_t i = largest == 1 ? 1 : 0; i < texts.size(); ++i) {
      INFO("input: " << texts[i].substr(0, 300));
      CHECK(PiecesDifference(texts[i], trees[i], rng, largest).empty());
    }
  }

  // Text that is not JSON at its first byte, or in its last block, or that holds a NUL
  // anywhere: the decoder stops, the writer goes on to the end without waiting for it, and
  // the message quotes the start of the text.
  for (const std::string& broken :
       {"x" + long_list, long_list + "]",
        long_list.substr(0, 9000) + std::string(1, '\0') + long_list.substr(9000)}) {
    const JobList result = ReadInPieces(broken, rng, 4096);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind() == core::ErrorKind::kFatal);
    CHECK(result.error().message() ==
          "job list: not valid JSON: " + TrimBodyForMessage(broken.substr(0, 1000)));
  }
}

TEST_CASE("a job list stream begun again reads only the new answer", "[ray_http]") {
  JobTextGenerator generator(7);
  const std::string first = generator.List(3000, /*well_typed=*/true);
  const std::string second = FakeHeadList(20);
  const core::SipHasher::Key key = {1, 2};
  JobListStream stream({}, key);
  // An attempt cut off after three blocks, then one cut off early, then a whole answer.
  stream.Begin();
  stream.Write(std::string_view(first).substr(0, 3 * JobListStream::kBlockBytes + 5));
  stream.Begin();
  stream.Write(std::string_view(second).substr(0, 10));
  stream.Begin();
  stream.Write(second);
  const JobList read = stream.Finish();
  REQUIRE(read.ok());
  CHECK(read->size() == 21);
  CHECK(stream.Digest() == core::SipHash24(key, second));
  // The same stream reads the next answer once begun again.
  stream.Begin();
  stream.Write(first);
  const JobList next = stream.Finish();
  REQUIRE(next.ok());
  CHECK(next->size() == 3000);

  // A stream given up in the middle of an answer lets its decoder go.
  {
    JobListStream abandoned;
    abandoned.Begin();
    abandoned.Write(std::string_view(first).substr(0, 4 * JobListStream::kBlockBytes));
  }
  // A digest-only stream digests and decodes nothing.
  JobListStream digest_only({}, key, /*decode=*/false);
  digest_only.Begin();
  digest_only.Write(first);
  CHECK(digest_only.Digest() == core::SipHash24(key, first));
  CHECK_FALSE(digest_only.Finish().ok());
}

TEST_CASE("decoding a 10,000-job list from the fake head", "[.bench]") {
  const std::string text = FakeHeadList(10000);
  constexpr int kRounds = 5;
  auto measure = [&](const char* what, JobList (*decode)(std::string_view)) {
    double best_ms = 1e9;
    int64_t peak_bytes = 0;
    size_t jobs = 0;
    for (int i = 0; i < kRounds; ++i) {
      const int64_t before = g_heap_bytes.load();
      g_heap_peak.store(before);
      const auto start = std::chrono::steady_clock::now();
      JobList list = decode(text);
      const std::chrono::duration<double, std::milli> elapsed =
          std::chrono::steady_clock::now() - start;
      const int64_t kept = g_heap_bytes.load() - before;
      peak_bytes = g_heap_peak.load() - before;
      REQUIRE(list.ok());
      jobs = list->size();
      best_ms = std::min(best_ms, elapsed.count());
      if (i + 1 == kRounds) {
        std::printf("%-22s %8.1f ms  peak heap %6.1f MB  result %5.1f MB  (%zu jobs, %.1f MB)\n",
                    what, best_ms, static_cast<double>(peak_bytes) / 1e6,
                    static_cast<double>(kept) / 1e6, jobs, static_cast<double>(text.size()) / 1e6);
      }
    }
  };
  measure("tree (ParseJobListDom)", ParseJobListDom);
  measure("streamed (ParseJobList)", ParseJobList);
  CHECK(Difference(text).empty());
}

TEST_CASE("listing 10,000 jobs of the fake head over HTTP against the raw GET", "[.bench]") {
  testing::FakeRayServer head;
  FillFakeHead(head, 10000);
  RayClientOptions options;
  options.address = head.address();
  RayHttpJobServer server(options);
  constexpr int kRounds = 7;
  std::vector<double> raw_ms;
  std::vector<double> list_ms;
  for (int i = 0; i < kRounds; ++i) {
    // A new connection per request, as the client makes.
    httplib::Client raw("127.0.0.1", head.port());
    auto start = std::chrono::steady_clock::now();
    const httplib::Result res = raw.Get("/api/jobs/");
    raw_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    REQUIRE(res);
    REQUIRE(res->status == 200);
    start = std::chrono::steady_clock::now();
    const JobList listed = server.List();
    list_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    REQUIRE(listed.ok());
    REQUIRE(listed->size() == 10001);
  }
  std::sort(raw_ms.begin(), raw_ms.end());
  std::sort(list_ms.begin(), list_ms.end());
  std::printf("raw GET /api/jobs/     %8.1f ms (median of %d)\n", raw_ms[kRounds / 2], kRounds);
  std::printf("RayHttpJobServer::List %8.1f ms (median of %d), %.2fx the raw GET\n",
              list_ms[kRounds / 2], kRounds, list_ms[kRounds / 2] / raw_ms[kRounds / 2]);
}

}  // namespace
}  // namespace rg::adapters::ray_http
