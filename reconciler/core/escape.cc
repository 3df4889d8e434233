#include "reconciler/core/escape.h"

#include <cstdint>

namespace rg::core {
namespace {

constexpr std::string_view kLowerHex = "0123456789abcdef";

// One UTF-8 sequence at the start of `s`: its code point and length; length 0 when the first
// byte does not start a valid sequence (a stray continuation byte, a cut or overlong sequence,
// a surrogate, beyond U+10FFFF).
struct Utf8Char {
  uint32_t code_point = 0;
  size_t length = 0;
};

Utf8Char DecodeUtf8(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return {lead, 1};
  size_t length = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if ((lead & 0xE0U) == 0xC0U) {
    length = 2;
    cp = lead & 0x1FU;
    min = 0x80;
  } else if ((lead & 0xF0U) == 0xE0U) {
    length = 3;
    cp = lead & 0x0FU;
    min = 0x800;
  } else if ((lead & 0xF8U) == 0xF0U) {
    length = 4;
    cp = lead & 0x07U;
    min = 0x10000;
  } else {
    return {};
  }
  if (s.size() < length) return {};
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0U) != 0x80U) return {};
    cp = (cp << 6U) | (byte(i) & 0x3FU);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {};
  return {cp, length};
}

// The characters that reorder or break what is displayed after them (Trojan Source), and the
// C1 controls (U+009B is CSI on terminals that read 8-bit controls).
bool IsLayoutControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         cp == 0x2028 || cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

void AppendByteEscape(std::string& out, uint8_t b) {
  switch (b) {
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      out += "\\x";
      out += kLowerHex[b >> 4U];
      out += kLowerHex[b & 0xFU];
  }
}

void AppendCodePointEscape(std::string& out, uint32_t cp) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) {
    out += kLowerHex[(cp >> static_cast<unsigned>(shift)) & 0xFU];
  }
}

bool IsPlainAscii(uint8_t b) { return b >= 0x20 && b < 0x7F; }

}  // namespace

TextChar NextTextChar(std::string_view s) {
  const Utf8Char c = DecodeUtf8(s);
  if (c.length == 0) return {static_cast<uint8_t>(s[0]), 0, true};
  const bool escaped = c.code_point < 0x20 || c.code_point == 0x7F || IsLayoutControl(c.code_point);
  return {c.code_point, c.length, escaped};
}

bool NeedsTextEscape(std::string_view value) {
  for (size_t i = 0; i < value.size();) {
    if (IsPlainAscii(static_cast<uint8_t>(value[i]))) {
      ++i;
      continue;
    }
    const Utf8Char c = DecodeUtf8(value.substr(i));
    if (c.length == 0 || c.code_point < 0x20 || c.code_point == 0x7F ||
        IsLayoutControl(c.code_point)) {
      return true;
    }
    i += c.length;
  }
  return false;
}

std::string EscapeText(std::string_view value) {
  if (!NeedsTextEscape(value)) return std::string(value);
  std::string out;
  out.reserve(value.size() + 8);
  for (size_t i = 0; i < value.size();) {
    const auto b = static_cast<uint8_t>(value[i]);
    if (IsPlainAscii(b)) {
      out += value[i++];
      continue;
    }
    const Utf8Char c = DecodeUtf8(value.substr(i));
    if (c.length == 0 || c.code_point < 0x20 || c.code_point == 0x7F) {
      AppendByteEscape(out, b);
      ++i;
    } else if (IsLayoutControl(c.code_point)) {
      AppendCodePointEscape(out, c.code_point);
      i += c.length;
    } else {
      out.append(value.substr(i, c.length));
      i += c.length;
    }
  }
  return out;
}

std::string EscapedLine(std::string_view text, std::string_view indent) {
  std::string out(indent);
  out += EscapeText(text);
  out += '\n';
  return out;
}

std::string EscapeHtml(std::string_view value) {
  const std::string text = EscapeText(value);
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace rg::core
