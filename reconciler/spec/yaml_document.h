#pragma once
// Internal to rg_spec: a YAML document turned into a small tree that keeps where every node
// was written, with scalars resolved by the YAML 1.2 core schema. Building the tree is where
// hostile input is stopped (size, UTF-8, syntax, alias bombs, nesting, duplicate keys). The
// text is read once, by libfyaml's strict parser (yaml_syntax_check.h): the tree is built from
// its events, and nothing of a stream it refuses is used.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/diagnostic.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/core/value.h"

namespace rg::spec {

// Alias expansion can turn a few hundred bytes into billions of nodes; the tree refuses to
// grow past these bounds instead.
inline constexpr int kMaxYamlNodes = 100000;
inline constexpr int kMaxYamlDepth = 1000;

struct YamlEntry;

struct YamlNode {
  enum class Kind { kScalar, kSequence, kMapping };

  Kind kind = Kind::kScalar;
  core::SourcePos pos;
  // Scalars: the value it resolves to (quoted scalars are always strings) and its text as
  // written (after unescaping), e.g. "1e9" for a value of 1e9.
  core::Value scalar;
  std::string text;
  std::vector<YamlNode> items;     // kSequence
  std::vector<YamlEntry> entries;  // kMapping, in the order written, duplicates left out

  bool is_scalar() const { return kind == Kind::kScalar; }
  bool is_mapping() const { return kind == Kind::kMapping; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_string() const { return is_scalar() && scalar.is_string(); }
  bool is_null() const { return is_scalar() && scalar.is_null(); }
};

struct YamlEntry {
  std::string key;
  core::SourcePos key_pos;
  YamlNode value;
};

struct YamlParse {
  // Set when the text is one well-formed YAML document; `diagnostics` may still hold problems
  // found inside it (duplicate or non-string keys, unsupported tags).
  std::optional<YamlNode> root;
  core::Diagnostics diagnostics;
};

// Checks, in this order, each stopping at its first problem: size, UTF-8 and the characters
// YAML allows, well-formedness of the whole stream (libfyaml), aliases to unknown anchors and
// nesting past 500 levels as written, one document, then builds the tree (alias budget, depth,
// keys, tags). A malformed text leaves `root` unset: nothing is half-read.
// Never throws. Diagnostics carry `path` and 1-based positions.
YamlParse ParseYamlDocument(std::string_view text, const std::string& path);

// The character checks ParseYamlDocument makes before it parses: UTF-8 per RFC 3629 and only
// the characters YAML allows. The first problem, with its 1-based position, or nullopt.
std::optional<core::Diagnostic> FindUnreadableYamlText(std::string_view text,
                                                       const std::string& path);

// True when `text` is UTF-8 per RFC 3629, whatever characters it holds.
bool IsUtf8(std::string_view text);

// How the core schema reads a plain (unquoted) scalar: null, bool, int, float or string.
// `.inf` and `.nan` stay strings because JSON (and so the spec hash) cannot hold them.
core::Value ResolvePlainScalar(std::string_view text);

// The tree as a JSON-shaped value.
core::Value ToValue(const YamlNode& node);

// For messages: a string as "text" (quoted), other scalars as written, "a mapping", "a list".
std::string Describe(const YamlNode& node);

}  // namespace rg::spec
