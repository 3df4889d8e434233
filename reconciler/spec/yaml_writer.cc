#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>

#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/yaml_document.h"

namespace rg::spec {
namespace {

using core::Value;

// Words and shapes a YAML 1.1 reader (PyYAML, older tools) resolves to something other than
// a string: booleans, merge and value keys, and anything that starts like a number, a date
// or a sexagesimal time.
bool LooksSpecialToYaml11(std::string_view s) {
  constexpr std::array<std::string_view, 18> kWords = {"y",  "Y",   "yes", "Yes", "YES", "n",
                                                       "N",  "no",  "No",  "NO",  "on",  "On",
                                                       "ON", "off", "Off", "OFF", "=",   "<<"};
  if (std::find(kWords.begin(), kWords.end(), s) != kWords.end()) return true;
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = (s.front() == '-' || s.front() == '+') ? 1 : 0;
  if (i < s.size() && s[i] == '.') ++i;
  return i < s.size() && is_digit(s[i]);
}

// Plain only when the text reads back as this same string, in YAML 1.2 and 1.1 alike; ASCII
// only, so that no Unicode line separator or invisible character hides in an unquoted scalar.
bool CanBePlain(std::string_view s) {
  if (s.empty() || s.size() > 512) return false;
  if (!ResolvePlainScalar(s).is_string() || LooksSpecialToYaml11(s)) return false;
  if (s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
  if (s.starts_with("---") || s.starts_with("...")) return false;
  constexpr std::string_view kIndicators = "?:,[]{}#&*!|>'\"%@`";
  if (kIndicators.find(s.front()) != std::string_view::npos) return false;
  if (s.front() == '-' && (s.size() == 1 || s[1] == ' ')) return false;
  for (char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7F) return false;
  }
  return s.find(": ") == std::string_view::npos && s.find(" #") == std::string_view::npos;
}

void AppendHexEscape(std::string& out, char letter, uint32_t code, int digits) {
  constexpr std::string_view kHex = "0123456789abcdef";
  out += '\\';
  out += letter;
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += kHex[(code >> shift) & 0xF];
}

std::string DoubleQuoted(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const auto byte = static_cast<unsigned char>(s[i]);
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += s[i];
    } else if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7F) {
      AppendHexEscape(out, 'x', byte, 2);
    } else if (byte == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      // C1 controls, U+0085 (a YAML line break) among them.
      AppendHexEscape(out, 'x', static_cast<unsigned char>(s[i + 1]), 2);
      ++i;
    } else if (byte == 0xE2 && s.substr(i, 3) == "\xE2\x80\xA8") {
      out += "\\L";
      i += 2;
    } else if (byte == 0xE2 && s.substr(i, 3) == "\xE2\x80\xA9") {
      out += "\\P";
      i += 2;
    } else if (byte == 0xEF && s.substr(i, 3) == "\xEF\xBB\xBF") {
      AppendHexEscape(out, 'u', 0xFEFF, 4);
      i += 2;
    } else {
      out += s[i];
    }
  }
  out += '"';
  return out;
}

// A literal block keeps multi-line text readable. It is used only when it reads back exactly:
// no leading space on the first line, no blank-but-for-spaces lines, at most one final newline.
bool CanBeLiteralBlock(std::string_view s) {
  if (s.find('\n') == std::string_view::npos || s.front() == ' ' || s.front() == '\n') {
    return false;
  }
  if (s.ends_with("\n\n")) return false;
  size_t line_start = 0;
  while (line_start < s.size()) {
    const size_t end = std::min(s.find('\n', line_start), s.size());
    const std::string_view line = s.substr(line_start, end - line_start);
    if (!line.empty() && line.find_first_not_of(' ') == std::string_view::npos) return false;
    line_start = end + 1;
  }
  return std::ranges::none_of(s, [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7F || byte >= 0x80;
  });
}

std::string ScalarText(std::string_view s) {
  return CanBePlain(s) ? std::string(s) : DoubleQuoted(s);
}

std::string NumberText(double d) {
  if (std::isnan(d)) return ".nan";
  if (std::isinf(d)) return d < 0 ? "-.inf" : ".inf";
  std::array<char, 64> buffer{};
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), d);
  std::string out(buffer.data(), ec == std::errc() ? end : buffer.data());
  // Keep it a float when read back.
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

bool IsBlockContainer(const Value& v) {
  return (v.is_object() && !v.as_object().empty()) || (v.is_array() && !v.as_array().empty());
}

std::string InlineText(const Value& v) {
  if (v.is_null()) return "null";
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_int()) return std::to_string(v.as_int());
  if (v.is_double()) return NumberText(v.as_double());
  if (v.is_string()) return ScalarText(v.as_string());
  return v.is_array() ? "[]" : "{}";
}

void AppendLiteralBlock(std::string_view s, int indent, std::string& out) {
  out += s.ends_with('\n') ? "|\n" : "|-\n";
  if (s.ends_with('\n')) s.remove_suffix(1);
  size_t line_start = 0;
  while (line_start <= s.size()) {
    const size_t end = std::min(s.find('\n', line_start), s.size());
    const std::string_view line = s.substr(line_start, end - line_start);
    if (!line.empty()) out.append(indent, ' ').append(line);
    out += '\n';
    line_start = end + 1;
  }
}

void AppendBlock(const Value& v, int indent, std::string& out);

// What follows "key:" or "-": a space and an inline value, a literal block, or a nested block.
void AppendAfterIndicator(const Value& v, int indent, std::string& out) {
  if (v.is_string() && !CanBePlain(v.as_string()) && CanBeLiteralBlock(v.as_string())) {
    out += ' ';
    AppendLiteralBlock(v.as_string(), indent + 2, out);
  } else if (IsBlockContainer(v)) {
    out += '\n';
    AppendBlock(v, indent + 2, out);
  } else {
    out += ' ';
    out += InlineText(v);
    out += '\n';
  }
}

void AppendBlock(const Value& v, int indent, std::string& out) {
  if (v.is_object()) {
    for (const auto& [key, child] : v.as_object()) {
      out.append(indent, ' ');
      out += ScalarText(key);
      out += ':';
      AppendAfterIndicator(child, indent, out);
    }
  } else if (v.is_array()) {
    for (const auto& item : v.as_array()) {
      out.append(indent, ' ');
      out += '-';
      AppendAfterIndicator(item, indent, out);
    }
  }
}

}  // namespace

std::string ToYaml(const core::Value& value) {
  std::string out;
  if (IsBlockContainer(value)) {
    AppendBlock(value, 0, out);
  } else if (value.is_string() && !CanBePlain(value.as_string()) &&
             CanBeLiteralBlock(value.as_string())) {
    AppendLiteralBlock(value.as_string(), 2, out);
  } else {
    out = InlineText(value) + "\n";
  }
  return out;
}

}  // namespace rg::spec
