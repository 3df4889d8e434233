#include "reconciler/core/markdown.h"

#include <algorithm>
#include <cctype>

#include "reconciler/core/escape.h"

namespace rg::core {
namespace {

constexpr std::string_view kZeroWidthSpace = "&#8203;";

bool StartsWithNoCase(std::string_view text, size_t at, std::string_view prefix) {
  if (text.size() - at < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[at + i])) != prefix[i]) return false;
  }
  return true;
}

std::string_view TrimSpaces(std::string_view text) {
  const size_t start = text.find_first_not_of(' ');
  if (start == std::string_view::npos) return {};
  return text.substr(start, text.find_last_not_of(' ') - start + 1);
}

size_t LongestBacktickRun(std::string_view content) {
  size_t longest = 0;
  size_t run = 0;
  for (char c : content) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

}  // namespace

std::string CodeFence(std::string_view content) {
  std::string fence(std::max<size_t>(3, LongestBacktickRun(content) + 1), '`');
  return fence;
}

std::string CodeBlock(std::string_view content, std::string_view language) {
  const std::string fence = CodeFence(content);
  std::string out = fence + std::string(language) + "\n" + std::string(content);
  if (!content.empty() && content.back() != '\n') out += "\n";
  return out + fence + "\n";
}

std::string EscapeMarkdownText(std::string_view value) {
  const std::string text = EscapeText(value);
  const std::string_view in = TrimSpaces(text);
  constexpr std::string_view kBackslashed = "\\`*_[]~|$!";
  std::string out;
  out.reserve(in.size() + in.size() / 8);
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (kBackslashed.find(c) != std::string_view::npos) {
      out += '\\';
      out += c;
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '@') {
      out += '@';
      out += kZeroWidthSpace;
    } else if (c == ':' && in.substr(i + 1).starts_with("//")) {
      out += kZeroWidthSpace;
      out += ':';
    } else if (StartsWithNoCase(in, i, "www.")) {
      out.append(in.substr(i, 3));
      out += kZeroWidthSpace;
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string MarkdownCode(std::string_view value) {
  const std::string text = EscapeText(value);
  if (text.empty()) return "";
  const std::string fence(LongestBacktickRun(text) + 1, '`');
  const bool pad =
      text.front() == '`' || text.back() == '`' || (text.front() == ' ' && text.back() == ' ');
  const std::string_view space = pad ? " " : "";
  std::string out = fence;
  out.append(space).append(text).append(space).append(fence);
  return out;
}

std::string MarkdownCodeCell(std::string_view value) {
  if (EscapeText(value).find_first_of("|\\") == std::string::npos) return MarkdownCode(value);
  return "<code>" + EscapeMarkdownText(value) + "</code>";
}

}  // namespace rg::core
