#pragma once
// Internal to rg_spec: libfyaml's strict YAML 1.2 parser, as a well-formedness check and as the
// events a document is built from. Lenient parsers (yaml-cpp among them) accept many malformed
// streams and read them as something else (an unterminated quote swallowing the lines after
// it, a line without a colon becoming a key with a null value); this parser refuses them. See
// docs/architecture.md, "Strict YAML".

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/core/diagnostic.h"

struct fy_diag;
struct fy_event;
struct fy_parser;

namespace rg::spec {

// The first syntax error of the YAML stream `text`, as a diagnostic against `path` with a
// 1-based line and column, or nullopt when the stream is well-formed. A stream of several
// documents is well-formed here; the caller decides how many it wants. Only syntax is checked:
// duplicate keys, unknown anchors, tags and depth are left to the document builder.
// Never throws and prints nothing. REQUIRES: `text` is valid UTF-8 (the caller checks first,
// to keep its own message for bad bytes).
std::optional<core::Diagnostic> FindYamlSyntaxError(std::string_view text, const std::string& path);

// The events of the YAML stream `text` as that strict parser reads them, for a caller that
// builds something from the stream in the same pass that checks it. Never throws and prints
// nothing. REQUIRES: as for FindYamlSyntaxError; `text` outlives the reader.
class YamlEventReader {
 public:
  struct EventDeleter {
    fy_parser* parser = nullptr;
    void operator()(fy_event* event) const;
  };
  using Event = std::unique_ptr<fy_event, EventDeleter>;

  YamlEventReader(std::string_view text, const std::string& path);
  ~YamlEventReader();
  YamlEventReader(const YamlEventReader&) = delete;
  YamlEventReader& operator=(const YamlEventReader&) = delete;

  // The next event, or null at the end of the stream or at its first syntax error.
  Event Next();
  // Once Next() has returned null: the syntax error (or the reader could not be set up), or
  // nullopt when the stream ended well-formed.
  std::optional<core::Diagnostic> Error() const;

 private:
  const std::string& path_;
  fy_diag* diag_ = nullptr;
  fy_parser* parser_ = nullptr;
};

}  // namespace rg::spec
