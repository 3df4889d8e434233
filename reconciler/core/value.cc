#include "reconciler/core/value.h"

#include <array>
#include <charconv>
#include <cmath>

#include "reconciler/core/escape.h"

namespace rg::core {

Value& Value::operator[](const std::string& key) {
  if (is_null()) data_ = Object{};
  return std::get<Object>(data_)[key];
}

const Value* Value::Find(std::string_view key) const {
  if (!is_object()) return nullptr;
  const auto& obj = as_object();
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &it->second;
}

namespace {

constexpr std::string_view kJsonHex = "0123456789abcdef";

void AppendUnicodeEscape(std::string& out, uint32_t code_point) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) {
    out += kJsonHex[(code_point >> static_cast<unsigned>(shift)) & 0xFU];
  }
}

// Output JSON (ToPrettyJson) is read on terminals too: DEL, the C1 controls and the bidi and
// line controls that EscapeText escapes are \u escapes (the same string to a JSON reader), and
// a byte that is not valid UTF-8 is U+FFFD (JSON holds only Unicode). The canonical form, which
// spec hashes are made of, keeps every byte as it is.
void AppendOutputChars(std::string& out, std::string_view s, size_t& i) {
  const TextChar c = NextTextChar(s.substr(i));
  if (c.length == 0) {
    out += "\\ufffd";
    ++i;
  } else if (c.escaped) {
    AppendUnicodeEscape(out, c.code_point);
    i += c.length;
  } else {
    out.append(s.substr(i, c.length));
    i += c.length;
  }
}

void AppendEscaped(std::string& out, const std::string& s, bool for_output) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (for_output && static_cast<unsigned char>(c) >= 0x7F) {
      AppendOutputChars(out, s, i);
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          AppendUnicodeEscape(out, static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void AppendDouble(std::string& out, double d) {
  if (!std::isfinite(d)) {  // JSON has no NaN or infinity.
    out += "null";
    return;
  }
  std::array<char, 64> buf{};
  auto res = std::to_chars(buf.data(), buf.data() + buf.size(), d);
  out.append(buf.data(), res.ptr);
}

void Write(std::string& out, const Value& v, int indent, int depth) {
  const bool pretty = indent > 0;
  auto newline = [&](int d) {
    if (!pretty) return;
    out += '\n';
    out.append(static_cast<size_t>(d) * static_cast<size_t>(indent), ' ');
  };
  if (v.is_null()) {
    out += "null";
  } else if (v.is_bool()) {
    out += v.as_bool() ? "true" : "false";
  } else if (v.is_int()) {
    out += std::to_string(v.as_int());
  } else if (v.is_double()) {
    AppendDouble(out, v.as_double());
  } else if (v.is_string()) {
    AppendEscaped(out, v.as_string(), pretty);
  } else if (v.is_array()) {
    const auto& arr = v.as_array();
    out += '[';
    for (size_t i = 0; i < arr.size(); ++i) {
      if (i > 0) out += ',';
      newline(depth + 1);
      Write(out, arr[i], indent, depth + 1);
    }
    if (!arr.empty()) newline(depth);
    out += ']';
  } else {
    const auto& obj = v.as_object();
    out += '{';
    bool first = true;
    for (const auto& [key, child] : obj) {
      if (!first) out += ',';
      first = false;
      newline(depth + 1);
      AppendEscaped(out, key, pretty);
      out += pretty ? ": " : ":";
      Write(out, child, indent, depth + 1);
    }
    if (!obj.empty()) newline(depth);
    out += '}';
  }
}

}  // namespace

std::string ToCanonicalJson(const Value& value) {
  std::string out;
  Write(out, value, 0, 0);
  return out;
}

std::string ToPrettyJson(const Value& value) {
  std::string out;
  Write(out, value, 2, 0);
  return out;
}

}  // namespace rg::core
