// The Ray HTTP client's reading of what a head answers, on arbitrary bytes: job details, the
// job list, the version, an error body, a version string, and an id as a path segment.
// Properties: nothing crashes or trips a sanitizer; parse failures are kFatal; a job read on
// its own reads the same inside a list; the streamed job list reads exactly as the JSON-tree
// reference does (the same jobs, or the same error message); a time of 0 is never reported
// as set; an error body in a message is bounded; a percent-encoded path segment decodes
// back to the id; and the streamed end of a log answer is the same whatever the chunking,
// its last bytes those of the whole log it holds.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/adapters/log_tail_stream.h"
#include "reconciler/adapters/ray_http_rules.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace ray_http = rg::adapters::ray_http;
using rg::core::RayJob;

bool SameJob(const RayJob& a, const RayJob& b) {
  return a.type == b.type && a.job_id == b.job_id && a.submission_id == b.submission_id &&
         a.status == b.status && a.entrypoint == b.entrypoint && a.message == b.message &&
         a.error_type == b.error_type && a.start_time_ms == b.start_time_ms &&
         a.end_time_ms == b.end_time_ms && a.metadata == b.metadata &&
         a.driver_exit_code == b.driver_exit_code && a.driver_node_id == b.driver_node_id;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Undoes EncodePathSegment; nullopt on anything it would not have written.
std::optional<std::string> DecodePathSegment(std::string_view encoded) {
  std::string out;
  for (size_t i = 0; i < encoded.size(); ++i) {
    const char c = encoded[i];
    if (c != '%') {
      const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                              c == '~';
      if (!unreserved) return std::nullopt;
      out += c;
      continue;
    }
    if (i + 2 >= encoded.size()) return std::nullopt;
    const int hi = HexDigit(encoded[i + 1]);
    const int lo = HexDigit(encoded[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// ParseJobList and its reference ParseJobListDom give the same result for `text`.
void CheckSameList(std::string_view text) {
  const auto streamed = ray_http::ParseJobList(text);
  const auto tree = ray_http::ParseJobListDom(text);
  RG_FUZZ_CHECK(streamed.ok() == tree.ok());
  if (!tree.ok()) {
    RG_FUZZ_CHECK(streamed.error().kind() == tree.error().kind());
    RG_FUZZ_CHECK(streamed.error().message() == tree.error().message());
    return;
  }
  RG_FUZZ_CHECK(streamed->size() == tree->size());
  for (size_t i = 0; i < tree->size(); ++i) RG_FUZZ_CHECK(SameJob((*streamed)[i], (*tree)[i]));
}

// The log answer's end read with `max` kept, in chunks of `chunk` bytes.
rg::core::Result<std::string> TailOf(std::string_view text, size_t max, size_t chunk,
                                     size_t* total) {
  ray_http::LogTailStream stream(max);
  stream.Begin();
  for (size_t at = 0; at < text.size(); at += chunk) stream.Write(text.substr(at, chunk));
  return stream.Finish(total);
}

// Read whole and in chunks of 1 and 3 bytes, with 0 and 5 bytes kept: the same answer, and
// what is kept is the end of the whole log.
void CheckLogTail(std::string_view text) {
  size_t total = 0;
  const auto whole = TailOf(text, text.size() + 1, text.size() + 1, &total);
  for (const size_t max : {size_t{0}, size_t{5}}) {
    for (const size_t chunk : {size_t{1}, size_t{3}}) {
      size_t n = 0;
      const auto tail = TailOf(text, max, chunk, &n);
      RG_FUZZ_CHECK(tail.ok() == whole.ok());
      if (!whole.ok()) {
        RG_FUZZ_CHECK(tail.error().message() == whole.error().message());
        continue;
      }
      RG_FUZZ_CHECK(n == total && whole->size() == total);
      RG_FUZZ_CHECK(*tail == whole->substr(total > max ? total - max : 0));
    }
  }
}

void CheckJob(const RayJob& job) {
  RG_FUZZ_CHECK(job.start_time_ms != 0);
  RG_FUZZ_CHECK(job.end_time_ms != 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  const auto job = ray_http::ParseJobDetails(text);
  if (job.ok()) {
    CheckJob(*job);
    // The JSON reader skips a byte order mark only at the very start.
    std::string_view value = text;
    if (value.starts_with("\xEF\xBB\xBF")) value.remove_prefix(3);
    const std::string wrapped = "[" + std::string(value) + "]";
    const auto list = ray_http::ParseJobList(wrapped);
    RG_FUZZ_CHECK(list.ok() && list->size() == 1);
    RG_FUZZ_CHECK(SameJob(list->front(), *job));
    CheckSameList(wrapped);
  } else {
    RG_FUZZ_CHECK(job.error().kind() == rg::core::ErrorKind::kFatal);
  }

  CheckSameList(text);
  // The same bytes as the one element of a list: the streamed reader's path through a job.
  CheckSameList("[" + std::string(text) + "]");
  const auto list = ray_http::ParseJobList(text);
  if (list.ok()) {
    for (const RayJob& j : *list) CheckJob(j);
  } else {
    RG_FUZZ_CHECK(list.error().kind() == rg::core::ErrorKind::kFatal);
  }

  const auto version = ray_http::ParseVersion(text);
  if (version.ok()) {
    RG_FUZZ_CHECK(!version->ray_version.empty());
  } else {
    RG_FUZZ_CHECK(version.error().kind() == rg::core::ErrorKind::kFatal);
  }

  const std::string trimmed = ray_http::TrimBodyForMessage(text);
  RG_FUZZ_CHECK(trimmed.size() <= ray_http::kMaxBodyInMessage + 3);
  for (const int status : {400, 404, 409, 429, 500, 503}) {
    for (const char* method : {"GET", "POST", "DELETE"}) {
      const rg::core::Error e = ray_http::ClassifyHttpError(method, "/api/jobs/x", status, text);
      RG_FUZZ_CHECK(e.message().size() <= 64 + ray_http::kMaxBodyInMessage + 3);
    }
  }

  CheckLogTail(text);
  (void)ray_http::ParseVersionTriple(text);
  const rg::core::Value gated = ray_http::GateSubmitBody(
      rg::core::Value::Object{{"submission_id", rg::core::Value(std::string("x"))},
                              {"entrypoint_memory", rg::core::Value(int64_t{1})}},
      text);
  RG_FUZZ_CHECK(gated.is_object());

  const std::string segment = ray_http::EncodePathSegment(text);
  RG_FUZZ_CHECK(segment.find('/') == std::string::npos);
  RG_FUZZ_CHECK(segment != "." && segment != "..");
  RG_FUZZ_CHECK(DecodePathSegment(segment) == std::string(text));
  return 0;
}
