#include "reconciler/spec/yaml_document.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <map>
#include <new>
#include <sstream>
#include <utility>

#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/yaml_syntax_check.h"

namespace rg::spec {
namespace {

core::SourcePos PosOf(const YAML::Mark& mark) {
  if (mark.line < 0 || mark.column < 0) return {1, 1};
  return {mark.line + 1, mark.column + 1};
}

core::Diagnostic At(const std::string& path, core::SourcePos pos, std::string message) {
  return {path, pos.line, pos.column, std::move(message)};
}

struct TextError {
  core::SourcePos pos;
  std::string message;
};

std::string Hex(uint32_t value, int digits) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xF];
  return out;
}

// YAML 1.2 allows only printable characters in a stream (tab, line breaks and U+0085 aside,
// no C0 or C1 controls, no DEL, no U+FFFE/U+FFFF).
bool IsYamlPrintable(uint32_t code) {
  if (code == '\t' || code == '\n' || code == '\r' || code == 0x85) return true;
  if (code < 0x20 || code == 0x7F || (code >= 0x80 && code <= 0x9F)) return false;
  return code != 0xFFFE && code != 0xFFFF;
}

// UTF-8 per RFC 3629 (no overlong forms, no surrogates, nothing above U+10FFFF), and only
// characters YAML allows.
// With `check_printable` false only the encoding is checked (for text a parser produced).
std::optional<TextError> FindUnreadableText(std::string_view text, bool check_printable = true) {
  int line = 1;
  size_t line_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t length = 0;
    uint32_t min = 0;
    uint32_t code = 0;
    const core::SourcePos pos{line, static_cast<int>(i - line_start) + 1};
    if (c < 0x80) {
      if (check_printable && !IsYamlPrintable(c)) {
        return TextError{pos, "character U+" + Hex(c, 4) + " is not allowed in YAML"};
      }
      if (c == '\n') {
        ++line;
        line_start = i + 1;
      }
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      length = 2, min = 0x80, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, min = 0x800, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, min = 0x10000, code = c & 0x07;
    }
    bool valid = length != 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      const auto cont = static_cast<unsigned char>(text[i + k]);
      valid = (cont & 0xC0) == 0x80;
      code = (code << 6) | (cont & 0x3F);
    }
    valid = valid && code >= min && code <= 0x10FFFF && !(code >= 0xD800 && code <= 0xDFFF);
    if (!valid) return TextError{pos, "invalid UTF-8 (byte 0x" + Hex(c, 2) + ")"};
    if (check_printable && !IsYamlPrintable(code)) {
      return TextError{pos, "character U+" + Hex(code, 4) + " is not allowed in YAML"};
    }
    i += length;
  }
  return std::nullopt;
}

bool IsDigits(std::string_view s, bool hex = false, bool octal = false) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
    if (octal) return c >= '0' && c <= '7';
    return (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
  });
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsCoreFloat(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++int_digits;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (!IsDigits(s.substr(i))) return false;
    i = s.size();
  }
  return i == s.size();
}

std::optional<double> ParseDouble(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double out = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return out;
}

class TreeBuilder {
 public:
  explicit TreeBuilder(const std::string& path) : path_(path) {}

  // Builds `node` into `out` (a default YamlNode). False when the document is over the node
  // or depth budget (reported once); `out` is then partial and must be dropped.
  bool Build(const YAML::Node& node, core::SourcePos pos, int depth, YamlNode& out) {
    if (++visited_ > kMaxYamlNodes) {
      Stop(pos, "document too large after alias expansion (more than " +
                    std::to_string(kMaxYamlNodes) + " nodes)");
      return false;
    }
    if (depth > kMaxYamlDepth) {
      Stop(pos,
           "document nested too deeply (more than " + std::to_string(kMaxYamlDepth) + " levels)");
      return false;
    }
    out.pos = pos;
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out.scalar = nullptr;
        out.text = "null";
        return true;
      case YAML::NodeType::Scalar:
        out.text = node.Scalar();
        out.scalar = ResolveTagged(node, pos);
        // An escape ("\0", "\x00") can still make one; no command or path may hold it.
        if (out.text.find('\0') != std::string::npos) {
          diagnostics_.push_back(At(path_, pos, "a string must not contain a NUL character"));
        }
        // yaml-cpp 0.7 turns the escapes "\_" and "\N" into single Latin-1 bytes, not
        // UTF-8: such a string would be written back as text nothing can read.
        if (FindUnreadableText(out.text, /*check_printable=*/false)) {
          diagnostics_.push_back(At(path_, pos,
                                    "an escape sequence in this string does not make UTF-8 text "
                                    "(write the character itself, or \\u00A0 style escapes)"));
        }
        return true;
      case YAML::NodeType::Sequence:
        out.kind = YamlNode::Kind::kSequence;
        out.items.reserve(node.size());
        for (const YAML::Node& item : node) {
          if (!Build(item, PosOf(item.Mark()), depth + 1, out.items.emplace_back())) return false;
        }
        return true;
      case YAML::NodeType::Map:
        out.kind = YamlNode::Kind::kMapping;
        return BuildEntries(node, depth, out);
    }
    return true;
  }

  core::Diagnostics TakeDiagnostics() { return std::move(diagnostics_); }

 private:
  bool BuildEntries(const YAML::Node& node, int depth, YamlNode& out) {
    std::map<std::string, core::SourcePos, std::less<>> seen;
    out.entries.reserve(node.size());
    for (auto it = node.begin(); it != node.end(); ++it) {
      const core::SourcePos key_pos = PosOf(it->first.Mark());
      YamlNode key;
      if (!Build(it->first, key_pos, depth + 1, key)) return false;
      // An empty value's mark points past it (often at the next line); the key is where it is.
      const bool empty_value = it->second.Type() == YAML::NodeType::Null;
      YamlEntry& entry = out.entries.emplace_back();
      if (!Build(it->second, empty_value ? key_pos : PosOf(it->second.Mark()), depth + 1,
                 entry.value)) {
        return false;
      }
      if (!key.is_string()) {
        diagnostics_.push_back(
            At(path_, key_pos, "keys must be strings (got " + Describe(key) + ")"));
        out.entries.pop_back();
        continue;
      }
      auto [first, inserted] = seen.emplace(key.scalar.as_string(), key_pos);
      if (!inserted) {
        diagnostics_.push_back(At(path_, key_pos,
                                  "duplicate key \"" + key.scalar.as_string() +
                                      "\" (first written at line " +
                                      std::to_string(first->second.line) + ")"));
        out.entries.pop_back();
        continue;
      }
      entry.key = key.scalar.as_string();
      entry.key_pos = key_pos;
    }
    return true;
  }

  core::Value ResolveTagged(const YAML::Node& node, core::SourcePos pos) {
    const std::string& tag = node.Tag();
    if (tag == "?") return ResolvePlainScalar(node.Scalar());
    // "!" marks a quoted or block scalar: always a string.
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return node.Scalar();
    diagnostics_.push_back(At(path_, pos, "unsupported tag \"" + tag + "\" (only !!str is)"));
    return node.Scalar();
  }

  void Stop(core::SourcePos pos, std::string message) {
    if (!stopped_) diagnostics_.push_back(At(path_, pos, std::move(message)));
    stopped_ = true;
  }

  const std::string& path_;
  core::Diagnostics diagnostics_;
  int visited_ = 0;
  bool stopped_ = false;
};

// Counts the documents of a stream and notes where the second one's root node is, without
// building them. yaml-cpp 0.7's LoadAll never returns on some streams libfyaml accepts (a tag
// holding a comma, yaml-cpp issue 1040): its parser hands back the same empty document again
// and again without reading on. A document that starts where the previous one did is that
// loop, not a document, and ends the count.
class DocumentCounter final : public YAML::EventHandler {
 public:
  int documents() const { return documents_; }
  bool stuck() const { return stuck_; }
  // Where the parser stopped reading on, once stuck().
  const YAML::Mark& last_start() const { return last_start_; }
  const YAML::Mark& second_root() const { return second_root_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (documents_ > 0 && mark.pos == last_start_.pos) {
      stuck_ = true;
      return;
    }
    last_start_ = mark;
    ++documents_;
    root_seen_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t /*anchor*/) override { Node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t /*anchor*/) override { Node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t /*anchor*/,
                const std::string& /*value*/) override {
    Node(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/,
                       YAML::anchor_t /*anchor*/, YAML::EmitterStyle::value /*style*/) override {
    Node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t /*anchor*/,
                  YAML::EmitterStyle::value /*style*/) override {
    Node(mark);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& mark) {
    if (stuck_ || root_seen_) return;
    root_seen_ = true;
    if (documents_ == 2) second_root_ = mark;
  }

  int documents_ = 0;
  YAML::Mark last_start_ = YAML::Mark::null_mark();
  bool root_seen_ = false;
  bool stuck_ = false;
  YAML::Mark second_root_ = YAML::Mark::null_mark();
};

}  // namespace

core::Value ResolvePlainScalar(std::string_view text) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  std::string_view body = text;
  const bool signed_number = body.front() == '-' || body.front() == '+';
  if (signed_number) body.remove_prefix(1);
  if (IsDigits(body)) {
    int64_t out = 0;
    std::string_view digits = text.front() == '+' ? text.substr(1) : text;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    if (ec == std::errc() && ptr == digits.data() + digits.size()) return out;
    if (auto d = ParseDouble(text)) return *d;  // out of int64 range
    return std::string(text);
  }
  if (!signed_number && text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'o')) {
    const bool hex = text[1] == 'x';
    std::string_view digits = text.substr(2);
    if (IsDigits(digits, hex, !hex)) {
      int64_t out = 0;
      auto [ptr, ec] =
          std::from_chars(digits.data(), digits.data() + digits.size(), out, hex ? 16 : 8);
      if (ec == std::errc() && ptr == digits.data() + digits.size()) return out;
    }
    return std::string(text);
  }
  if (IsCoreFloat(text)) {
    if (auto d = ParseDouble(text)) return *d;
  }
  return std::string(text);
}

YamlParse ParseYamlDocument(std::string_view text, const std::string& path) {
  YamlParse out;
  if (text.size() > kMaxSpecFileBytes) {
    out.diagnostics.push_back(
        {path, 0, 0, "file is too large (over " + std::to_string(kMaxSpecFileBytes) + " bytes)"});
    return out;
  }
  if (auto bad = FindUnreadableText(text)) {
    out.diagnostics.push_back(At(path, bad->pos, bad->message));
    return out;
  }
  // yaml-cpp reads many malformed streams as something else; only a stream libfyaml's strict
  // parser accepts reaches it.
  if (auto syntax_error = FindYamlSyntaxError(text, path)) {
    out.diagnostics.push_back(std::move(*syntax_error));
    return out;
  }
  try {
    std::istringstream stream{std::string(text)};
    YAML::Parser parser(stream);
    DocumentCounter counter;
    while (!counter.stuck() && parser.HandleNextDocument(counter)) {
    }
    if (counter.stuck()) {
      out.diagnostics.push_back(
          At(path, PosOf(counter.last_start()), "cannot read the YAML from here on"));
      return out;
    }
    if (counter.documents() == 0) {
      out.diagnostics.push_back({path, 0, 0, "the file is empty (expected a mapping of fields)"});
      return out;
    }
    if (counter.documents() > 1) {
      out.diagnostics.push_back(At(path, PosOf(counter.second_root()),
                                   "a file must hold one YAML document (found " +
                                       std::to_string(counter.documents()) + ")"));
      return out;
    }
    // One document: YAML::Load reads only the first, so it cannot loop like LoadAll.
    const YAML::Node doc = YAML::Load(std::string(text));
    TreeBuilder builder(path);
    YamlNode root;
    const bool complete = builder.Build(doc, PosOf(doc.Mark()), 0, root);
    out.diagnostics = builder.TakeDiagnostics();
    if (complete) out.root = std::move(root);
  } catch (const YAML::DeepRecursion& e) {
    out.diagnostics.push_back(At(path, PosOf(e.mark), "the document is nested too deeply"));
  } catch (const YAML::ParserException& e) {
    out.diagnostics.push_back(At(path, PosOf(e.mark), e.msg));
  } catch (const std::bad_alloc&) {
    out.diagnostics.push_back({path, 0, 0, "out of memory while reading the document"});
  } catch (const std::exception& e) {
    out.diagnostics.push_back({path, 0, 0, std::string("cannot read YAML: ") + e.what()});
  }
  return out;
}

core::Value ToValue(const YamlNode& node) {
  switch (node.kind) {
    case YamlNode::Kind::kScalar:
      return node.scalar;
    case YamlNode::Kind::kSequence: {
      core::Value::Array items;
      items.reserve(node.items.size());
      for (const auto& item : node.items) items.push_back(ToValue(item));
      return items;
    }
    case YamlNode::Kind::kMapping: {
      core::Value::Object object;
      for (const auto& entry : node.entries) object.emplace(entry.key, ToValue(entry.value));
      return object;
    }
  }
  return nullptr;
}

std::string Describe(const YamlNode& node) {
  if (node.is_mapping()) return "a mapping";
  if (node.is_sequence()) return "a list";
  if (!node.scalar.is_string()) return node.text.empty() ? "null" : node.text;
  constexpr size_t kMaxShown = 60;
  std::string out = "\"";
  const std::string& text = node.text;
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const char c = text[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += '?';
    } else {
      out += c;
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += '"';
  return out;
}

}  // namespace rg::spec
