#include "reconciler/server/request_head.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace rg::server {

namespace {

std::string_view TrimFieldValue(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

core::Status ParseRequestLine(std::string_view line, RequestHead& out) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == 0 || sp2 == std::string_view::npos || sp2 == sp1 + 1 ||
      !line.substr(sp2 + 1).starts_with("HTTP/1.")) {
    return core::Error::InvalidInput("malformed request line");
  }
  out.method = std::string(line.substr(0, sp1));
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  out.path = std::string(target.substr(0, target.find('?')));
  return core::OkStatus();
}

core::Status ApplyHeader(std::string_view name, std::string_view value, RequestHead& out) {
  if (EqualsIgnoreCase(name, "Content-Length")) {
    uint64_t n = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || ec != std::errc() || ptr != value.data() + value.size()) {
      return core::Error::InvalidInput("invalid Content-Length");
    }
    if (out.content_length && *out.content_length != n) {
      return core::Error::InvalidInput("conflicting Content-Length headers");
    }
    out.content_length = n;
  } else if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
    if (!EqualsIgnoreCase(value, "chunked") || out.chunked) {
      return core::Error::InvalidInput("unsupported Transfer-Encoding");
    }
    out.chunked = true;
  }
  return core::OkStatus();
}

}  // namespace

std::optional<size_t> FindRequestHeadEnd(std::string_view bytes) {
  const size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  return end + 4;
}

core::Result<RequestHead> ParseRequestHead(std::string_view head) {
  RequestHead out;
  size_t eol = head.find("\r\n");
  if (eol == std::string_view::npos) return core::Error::InvalidInput("incomplete request head");
  if (auto st = ParseRequestLine(head.substr(0, eol), out); !st.ok()) return st.error();
  for (size_t pos = eol + 2; pos < head.size(); pos = eol + 2) {
    eol = head.find("\r\n", pos);
    if (eol == std::string_view::npos || eol == pos) break;  // the closing empty line
    const std::string_view line = head.substr(pos, eol - pos);
    const size_t colon = line.find(':');
    // No colon, or a folded continuation line (obsolete, and a framing ambiguity).
    if (colon == std::string_view::npos || colon == 0 || line.front() == ' ' ||
        line.front() == '\t') {
      return core::Error::InvalidInput("malformed header line");
    }
    if (auto st = ApplyHeader(line.substr(0, colon), TrimFieldValue(line.substr(colon + 1)), out);
        !st.ok()) {
      return st.error();
    }
  }
  if (out.chunked && out.content_length) {
    return core::Error::InvalidInput("both Content-Length and Transfer-Encoding");
  }
  return out;
}

}  // namespace rg::server
