#pragma once
// The few facts about an HTTP/1.1 request head that the connection gate needs before a
// handler thread sees the request: where the head ends, the method and path, and how the body
// is framed. Full parsing is left to the HTTP library; this only has to be right about
// framing, so it refuses anything ambiguous (RFC 9112 6.3: conflicting lengths, a
// Transfer-Encoding other than chunked, both framings at once). Pure functions.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/core/result.h"

namespace rg::server {

// The size of the head including its closing empty line, or nullopt while it is incomplete.
std::optional<size_t> FindRequestHeadEnd(std::string_view bytes);

struct RequestHead {
  std::string method;
  std::string path;  // the target without its query
  std::optional<uint64_t> content_length;
  bool chunked = false;  // Transfer-Encoding: chunked
};

// Parses a complete head (as bounded by FindRequestHeadEnd). InvalidInput when the request
// line is malformed or the body framing is invalid or ambiguous.
core::Result<RequestHead> ParseRequestHead(std::string_view head);

}  // namespace rg::server
