#pragma once
// Reads the answer of GET /api/jobs/{id}/logs, {"logs": "<the whole driver log>"}, while it
// arrives, keeping only the last `max_bytes` of the log's text (the JSON string decoded): a
// driver log of gigabytes passes through less than twice `max_bytes` of memory, where
// decoding the answer whole held the body, its tree and the string (docs/artifacts.md,
// "Driver logs"). Other keys of the object are read and ignored when their values are
// strings, numbers, booleans or null; anything else (a nested value, text that is not JSON,
// a raw control character in a string) is an error.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "reconciler/adapters/ray_http_rules.h"
#include "reconciler/core/result.h"

namespace rg::adapters::ray_http {

class LogTailStream : public BodyStream {
 public:
  explicit LogTailStream(size_t max_bytes);
  ~LogTailStream() override;
  LogTailStream(const LogTailStream&) = delete;
  LogTailStream& operator=(const LogTailStream&) = delete;
  LogTailStream(LogTailStream&&) = delete;
  LogTailStream& operator=(LogTailStream&&) = delete;

  void Begin() override;
  void Write(std::string_view bytes) override;
  // The log's last max_bytes (cut anywhere, even inside a UTF-8 character) and, in
  // *total_bytes, its whole length; an empty log when the answer has no "logs" or it is null.
  // kFatal when the answer written since Begin is not such an object.
  core::Result<std::string> Finish(size_t* total_bytes);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rg::adapters::ray_http
