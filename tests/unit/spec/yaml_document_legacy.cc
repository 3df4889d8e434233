// The document builder ParseYamlDocument used before it read libfyaml's events itself: libfyaml
// checked the syntax, then yaml-cpp counted the documents and built a node tree that was
// converted into a YamlNode tree. Kept for the differential test only.
#include "tests/unit/spec/yaml_document_legacy.h"

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
        if (!IsUtf8(out.text)) {
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

YamlParse ParseYamlDocumentLegacy(std::string_view text, const std::string& path) {
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

}  // namespace rg::spec
