#include "reconciler/spec/yaml_document.h"

#include <libfyaml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <map>
#include <new>
#include <unordered_map>
#include <utility>

#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/yaml_syntax_check.h"

namespace rg::spec {
namespace {

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

// Where a byte offset of the text is, counting lines at '\n' and columns in bytes, 1-based.
class LineTable {
 public:
  explicit LineTable(std::string_view text) {
    // A byte order mark is not counted in the first line's columns.
    starts_.push_back(text.starts_with("\xEF\xBB\xBF") ? 3 : 0);
    for (size_t i = text.find('\n'); i != std::string_view::npos; i = text.find('\n', i + 1)) {
      starts_.push_back(i + 1);
    }
  }

  core::SourcePos At(size_t offset) const {
    const auto next = std::upper_bound(starts_.begin(), starts_.end(), offset);
    const size_t line = std::max<size_t>(static_cast<size_t>(next - starts_.begin()), 1);
    const size_t start = std::min(starts_[line - 1], offset);
    return {static_cast<int>(line), static_cast<int>(offset - start) + 1};
  }

 private:
  std::vector<size_t> starts_;
};

// A node as the parser's events give it, before aliases are expanded: an alias is the index of
// the node its anchor names, so one node can have several parents (or be its own ancestor).
struct RawNode {
  enum class Type { kNull, kScalar, kSequence, kMapping };

  Type type = Type::kNull;
  // A double-quoted scalar written with the escape "\_" or "\N" (see TreeBuilder).
  bool latin1_escape = false;
  core::SourcePos pos;
  // Scalars: the tag as written and resolved, "?" for a plain scalar without one and "!" for
  // any other style without one.
  std::string tag;
  std::string text;
  std::vector<uint32_t> children;  // kSequence: items; kMapping: key, value, key, value, ...
};

// A node at this level of nesting as written (the root is level 1) is refused while reading,
// before any alias is expanded; yaml-cpp's parser had the same limit.
constexpr size_t kMaxWrittenYamlDepth = 500;

// A token's bytes in the text; both SIZE_MAX without a token (or a position).
struct Span {
  size_t begin = 0;
  size_t end = 0;
};

Span SpanOf(fy_token* token) {
  const fy_mark* start = token != nullptr ? fy_token_start_mark(token) : nullptr;
  const fy_mark* end = token != nullptr ? fy_token_end_mark(token) : nullptr;
  if (start == nullptr || end == nullptr) return {SIZE_MAX, SIZE_MAX};
  return {start->input_pos, end->input_pos};
}

bool HasSpan(Span span) { return span.begin != SIZE_MAX; }

// A token's text (a scalar's content, a resolved tag, an anchor's name); "" without a token.
std::string TextOf(fy_token* token) {
  size_t length = 0;
  const char* chars = token != nullptr ? fy_token_get_text(token, &length) : nullptr;
  if (chars == nullptr) return {};
  return {chars, length};
}

bool IsYamlSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Reads the stream's events into RawNodes, stopping at the problems a stream that is
// well-formed can still have: an alias without its anchor, nesting past kMaxWrittenYamlDepth,
// a tag shorthand holding a flow indicator. The whole stream is read even then, so that a syntax
// error further on is the one reported.
class DocumentReader {
 public:
  DocumentReader(std::string_view text, const std::string& path)
      : text_(text), path_(path), lines_(text) {}

  // The syntax error or the first problem, if any.
  std::optional<core::Diagnostic> Read() {
    YamlEventReader reader(text_, path_);
    while (YamlEventReader::Event event = reader.Next()) {
      if (!problem_) Take(*event);
    }
    if (auto syntax_error = reader.Error()) return syntax_error;
    return problem_;
  }

  int documents() const { return static_cast<int>(roots_.size()); }
  const std::vector<RawNode>& nodes() const { return nodes_; }
  // REQUIRES: documents() > k.
  uint32_t root(size_t k) const { return roots_[k]; }

 private:
  void Take(fy_event& event) {
    switch (event.type) {
      case FYET_DOCUMENT_START:
        anchors_.clear();
        open_.clear();
        MovePast(SpanOf(event.document_start.document_start));
        return;
      case FYET_SCALAR:
        Scalar(event.scalar);
        return;
      case FYET_ALIAS:
        Alias(event.alias.anchor);
        return;
      case FYET_SEQUENCE_START:
        Collection(RawNode::Type::kSequence, event.sequence_start.anchor, event.sequence_start.tag,
                   event.sequence_start.sequence_start);
        return;
      case FYET_MAPPING_START:
        Collection(RawNode::Type::kMapping, event.mapping_start.anchor, event.mapping_start.tag,
                   event.mapping_start.mapping_start);
        return;
      case FYET_SEQUENCE_END:
        if (!open_.empty()) open_.pop_back();
        MovePast(SpanOf(event.sequence_end.sequence_end));
        return;
      case FYET_MAPPING_END:
        if (!open_.empty()) open_.pop_back();
        MovePast(SpanOf(event.mapping_end.mapping_end));
        return;
      case FYET_DOCUMENT_END:
        MovePast(SpanOf(event.document_end.document_end));
        return;
      default:
        return;
    }
  }

  void Scalar(const fy_event_scalar_data& scalar) {
    const Span value = SpanOf(scalar.value);
    const fy_scalar_style style =
        scalar.value != nullptr ? fy_token_scalar_style(scalar.value) : FYSS_PLAIN;
    RawNode node;
    node.tag = scalar.tag != nullptr ? TextOf(scalar.tag) : style == FYSS_PLAIN ? "?" : "!";
    node.text = TextOf(scalar.value);
    // An empty plain scalar is libfyaml's empty node (nothing written, maybe properties).
    const bool empty_node = style == FYSS_PLAIN && node.text.empty();
    if (empty_node) {
      node.type = node.tag == "?" ? RawNode::Type::kNull : RawNode::Type::kScalar;
    } else if (style == FYSS_PLAIN && node.tag == "?" &&
               (node.text == "~" || node.text == "null" || node.text == "Null" ||
                node.text == "NULL")) {
      node.type = RawNode::Type::kNull;
    } else {
      node.type = RawNode::Type::kScalar;
      node.latin1_escape = style == FYSS_DOUBLE_QUOTED && HasLatin1Escape(value);
    }
    if (problem_) return;
    // libfyaml's token holds the content; the node starts at its quote or block indicator.
    Span written = empty_node ? Span{SIZE_MAX, SIZE_MAX} : value;
    if (HasSpan(written) && (style == FYSS_SINGLE_QUOTED || style == FYSS_DOUBLE_QUOTED)) {
      written.begin = written.begin > 0 ? written.begin - 1 : 0;
    } else if (HasSpan(written) && (style == FYSS_LITERAL || style == FYSS_FOLDED)) {
      size_t after = read_to_;
      for (fy_token* property : {scalar.anchor, scalar.tag}) {
        if (HasSpan(SpanOf(property))) after = std::max(after, SpanOf(property).end);
      }
      written.begin = std::min(written.begin, text_.find_first_of("|>", after));
    }
    Add(std::move(node), scalar.anchor, scalar.tag, written);
    if (!empty_node) MovePast(value);
  }

  void Alias(fy_token* anchor) {
    const Span span = SpanOf(anchor);
    const auto found = anchors_.find(TextOf(anchor));
    // The alias token starts after the '*'.
    const size_t begin = HasSpan(span) && span.begin > 0 ? span.begin - 1 : 0;
    if (found == anchors_.end()) {
      problem_ = core::Diagnostic{path_, lines_.At(begin).line, lines_.At(begin).column,
                                  "the referenced anchor is not defined"};
      return;
    }
    Attach(found->second, lines_.At(begin));
    MovePast(span);
  }

  void Collection(RawNode::Type type, fy_token* anchor, fy_token* tag, fy_token* start) {
    RawNode node;
    node.type = type;
    Add(std::move(node), anchor, tag, SpanOf(start));
    if (problem_) return;
    open_.push_back(static_cast<uint32_t>(nodes_.size() - 1));
    MovePast(SpanOf(start));
  }

  // Adds `node` where it was written: from its anchor, tag or content, whichever comes first;
  // an empty node without any is where the next thing written is.
  void Add(RawNode node, fy_token* anchor, fy_token* tag, Span content) {
    // An anchor's token starts after its '&'.
    Span anchor_written = SpanOf(anchor);
    if (HasSpan(anchor_written) && anchor_written.begin > 0) --anchor_written.begin;
    size_t begin = SIZE_MAX;
    for (Span span : {anchor_written, SpanOf(tag), content}) {
      if (HasSpan(span)) begin = std::min(begin, span.begin);
    }
    MovePast(SpanOf(anchor));
    MovePast(SpanOf(tag));
    if (begin == SIZE_MAX) begin = NextWritten();
    node.pos = lines_.At(begin);
    if (open_.size() + 1 >= kMaxWrittenYamlDepth) {
      problem_ = core::Diagnostic{path_, node.pos.line, node.pos.column,
                                  "the document is nested too deeply"};
      return;
    }
    if (tag != nullptr && !problem_) CheckTagText(SpanOf(tag));
    if (problem_) return;
    nodes_.push_back(std::move(node));
    const auto index = static_cast<uint32_t>(nodes_.size() - 1);
    if (anchor != nullptr) anchors_[TextOf(anchor)] = index;
    Attach(index, nodes_[index].pos);
  }

  void Attach(uint32_t index, core::SourcePos pos) {
    if (open_.empty()) {
      roots_.push_back(index);
      return;
    }
    RawNode& parent = nodes_[open_.back()];
    // A flow mapping of one pair inside a flow sequence ("[a: 1]") starts at its key.
    if (parent.type == RawNode::Type::kMapping && parent.children.empty() &&
        (pos.line < parent.pos.line ||
         (pos.line == parent.pos.line && pos.column < parent.pos.column))) {
      parent.pos = pos;
    }
    parent.children.push_back(index);
  }

  // Tag shorthands may not hold ',', '[', ']', '{' or '}' (YAML 1.2); libfyaml takes them
  // anyway, yaml-cpp could not read past them.
  void CheckTagText(Span span) {
    if (!HasSpan(span)) return;
    const std::string_view written = text_.substr(span.begin, span.end - span.begin);
    if (written.starts_with("!<")) return;
    const size_t bad = written.find_first_of(",[]{}");
    if (bad == std::string_view::npos) return;
    const core::SourcePos pos = lines_.At(span.begin + bad);
    problem_ = core::Diagnostic{path_, pos.line, pos.column, "cannot read the YAML from here on"};
  }

  // Whether the double-quoted scalar at `span` uses the escape "\_" or "\N".
  bool HasLatin1Escape(Span span) const {
    if (!HasSpan(span)) return false;
    const std::string_view written = text_.substr(span.begin, span.end - span.begin);
    for (size_t i = written.find('\\'); i != std::string_view::npos && i + 1 < written.size();
         i = written.find('\\', i + 2)) {
      if (written[i + 1] == '_' || written[i + 1] == 'N') return true;
    }
    return false;
  }

  void MovePast(Span span) {
    if (HasSpan(span)) read_to_ = std::max(read_to_, span.end);
  }

  // Where the next thing is written after what was read last: past blanks, comments and one
  // indicator ('-', '?' or ':'). An empty node is placed there, as yaml-cpp placed it.
  size_t NextWritten() {
    size_t i = read_to_;
    bool indicator_skipped = false;
    while (i < text_.size()) {
      const char c = text_[i];
      if (IsYamlSpace(c)) {
        ++i;
      } else if (c == '#' && (i == 0 || IsYamlSpace(text_[i - 1]))) {
        while (i < text_.size() && text_[i] != '\n') ++i;
      } else if (!indicator_skipped && (c == '-' || c == '?' || c == ':') &&
                 (i + 1 == text_.size() || IsYamlSpace(text_[i + 1]))) {
        indicator_skipped = true;
        ++i;
      } else {
        break;
      }
    }
    read_to_ = i;
    return i;
  }

  std::string_view text_;
  const std::string& path_;
  LineTable lines_;
  std::vector<RawNode> nodes_;
  std::vector<uint32_t> roots_;
  std::vector<uint32_t> open_;
  std::unordered_map<std::string, uint32_t> anchors_;
  std::optional<core::Diagnostic> problem_;
  size_t read_to_ = 0;
};

class TreeBuilder {
 public:
  TreeBuilder(const std::string& path, const std::vector<RawNode>& nodes)
      : path_(path), nodes_(nodes) {}

  // Builds `node` into `out` (a default YamlNode). False when the document is over the node
  // or depth budget (reported once); `out` is then partial and must be dropped.
  bool Build(const RawNode& node, core::SourcePos pos, int depth, YamlNode& out) {
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
    switch (node.type) {
      case RawNode::Type::kNull:
        out.scalar = nullptr;
        out.text = "null";
        return true;
      case RawNode::Type::kScalar:
        out.text = node.text;
        out.scalar = ResolveTagged(node, pos);
        // An escape ("\0", "\x00") can still make one; no command or path may hold it.
        if (out.text.find('\0') != std::string::npos) {
          diagnostics_.push_back(At(path_, pos, "a string must not contain a NUL character"));
        }
        // These escapes once made single Latin-1 bytes instead of UTF-8 (yaml-cpp 0.7), and
        // were refused for it; they still are, so that a file means the same as before.
        if (node.latin1_escape) {
          diagnostics_.push_back(At(path_, pos,
                                    "an escape sequence in this string does not make UTF-8 text "
                                    "(write the character itself, or \\u00A0 style escapes)"));
        }
        return true;
      case RawNode::Type::kSequence:
        out.kind = YamlNode::Kind::kSequence;
        out.items.reserve(node.children.size());
        for (const uint32_t index : node.children) {
          const RawNode& item = nodes_[index];
          if (!Build(item, item.pos, depth + 1, out.items.emplace_back())) return false;
        }
        return true;
      case RawNode::Type::kMapping:
        out.kind = YamlNode::Kind::kMapping;
        return BuildEntries(node, depth, out);
    }
    return true;
  }

  core::Diagnostics TakeDiagnostics() { return std::move(diagnostics_); }

 private:
  bool BuildEntries(const RawNode& node, int depth, YamlNode& out) {
    std::map<std::string, core::SourcePos, std::less<>> seen;
    out.entries.reserve(node.children.size() / 2);
    for (size_t i = 0; i + 1 < node.children.size(); i += 2) {
      const RawNode& key_node = nodes_[node.children[i]];
      const RawNode& value_node = nodes_[node.children[i + 1]];
      const core::SourcePos key_pos = key_node.pos;
      YamlNode key;
      if (!Build(key_node, key_pos, depth + 1, key)) return false;
      // An empty value is placed where its key is.
      const bool empty_value = value_node.type == RawNode::Type::kNull;
      YamlEntry& entry = out.entries.emplace_back();
      if (!Build(value_node, empty_value ? key_pos : value_node.pos, depth + 1, entry.value)) {
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

  core::Value ResolveTagged(const RawNode& node, core::SourcePos pos) {
    if (node.tag == "?") return ResolvePlainScalar(node.text);
    // "!" marks a quoted or block scalar: always a string.
    if (node.tag == "!" || node.tag == "tag:yaml.org,2002:str") return node.text;
    diagnostics_.push_back(At(path_, pos, "unsupported tag \"" + node.tag + "\" (only !!str is)"));
    return node.text;
  }

  void Stop(core::SourcePos pos, std::string message) {
    if (!stopped_) diagnostics_.push_back(At(path_, pos, std::move(message)));
    stopped_ = true;
  }

  const std::string& path_;
  const std::vector<RawNode>& nodes_;
  core::Diagnostics diagnostics_;
  int visited_ = 0;
  bool stopped_ = false;
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

std::optional<core::Diagnostic> FindUnreadableYamlText(std::string_view text,
                                                       const std::string& path) {
  if (auto bad = FindUnreadableText(text)) return At(path, bad->pos, bad->message);
  return std::nullopt;
}

bool IsUtf8(std::string_view text) {
  return !FindUnreadableText(text, /*check_printable=*/false).has_value();
}

YamlParse ParseYamlDocument(std::string_view text, const std::string& path) {
  YamlParse out;
  if (text.size() > kMaxSpecFileBytes) {
    out.diagnostics.push_back(
        {path, 0, 0, "file is too large (over " + std::to_string(kMaxSpecFileBytes) + " bytes)"});
    return out;
  }
  if (auto bad = FindUnreadableYamlText(text, path)) {
    out.diagnostics.push_back(std::move(*bad));
    return out;
  }
  try {
    DocumentReader reader(text, path);
    if (auto problem = reader.Read()) {
      out.diagnostics.push_back(std::move(*problem));
      return out;
    }
    if (reader.documents() == 0) {
      out.diagnostics.push_back({path, 0, 0, "the file is empty (expected a mapping of fields)"});
      return out;
    }
    if (reader.documents() > 1) {
      out.diagnostics.push_back(At(
          path, reader.nodes()[reader.root(1)].pos,
          "a file must hold one YAML document (found " + std::to_string(reader.documents()) + ")"));
      return out;
    }
    const RawNode& doc = reader.nodes()[reader.root(0)];
    TreeBuilder builder(path, reader.nodes());
    YamlNode root;
    const bool complete = builder.Build(doc, doc.pos, 0, root);
    out.diagnostics = builder.TakeDiagnostics();
    if (complete) out.root = std::move(root);
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
