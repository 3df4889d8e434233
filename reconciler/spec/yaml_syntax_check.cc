#include "reconciler/spec/yaml_syntax_check.h"

#include <libfyaml.h>

#include <utility>

namespace rg::spec {
namespace {

// libfyaml writes its diagnostics to stderr unless given somewhere else to put them; errors are
// collected instead, and whatever else it has to say (warnings, notices) goes nowhere.
void Discard(fy_diag* /*diag*/, void* /*user*/, const char* /*buf*/, size_t /*len*/) {}

fy_diag* MakeCollectingDiag() {
  fy_diag_cfg cfg{};
  fy_diag_cfg_default(&cfg);
  cfg.fp = nullptr;
  cfg.output_fn = Discard;
  cfg.user = nullptr;
  cfg.level = FYET_ERROR;
  cfg.colorize = false;
  fy_diag* diag = fy_diag_create(&cfg);
  if (diag != nullptr) fy_diag_set_collect_errors(diag, true);
  return diag;
}

std::string TrimmedMessage(const char* msg) {
  std::string out = msg != nullptr ? msg : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

void YamlEventReader::EventDeleter::operator()(fy_event* event) const {
  fy_parser_event_free(parser, event);
}

YamlEventReader::YamlEventReader(std::string_view text, const std::string& path)
    : path_(path), diag_(MakeCollectingDiag()) {
  if (diag_ == nullptr) return;
  fy_parse_cfg cfg{};
  // YAML 1.2 whatever the file says, never JSON mode, and nothing printed.
  cfg.flags = static_cast<fy_parse_cfg_flags>(FYPCF_QUIET | FYPCF_COLLECT_DIAG |
                                              FYPCF_DEFAULT_VERSION_1_2 | FYPCF_JSON_NONE);
  cfg.diag = diag_;
  parser_ = fy_parser_create(&cfg);
  // An empty string is still a stream; libfyaml only needs a non-null pointer for it.
  if (parser_ != nullptr &&
      fy_parser_set_string(parser_, text.empty() ? "" : text.data(), text.size()) != 0) {
    fy_parser_destroy(parser_);
    parser_ = nullptr;
  }
}

YamlEventReader::~YamlEventReader() {
  if (parser_ != nullptr) fy_parser_destroy(parser_);
  if (diag_ != nullptr) fy_diag_destroy(diag_);
}

YamlEventReader::Event YamlEventReader::Next() {
  if (parser_ == nullptr) return Event(nullptr, EventDeleter{});
  // The parser stops at its first error.
  return Event(fy_parser_parse(parser_), EventDeleter{parser_});
}

std::optional<core::Diagnostic> YamlEventReader::Error() const {
  if (parser_ == nullptr) {
    return core::Diagnostic{path_, 0, 0, "out of memory while reading the document"};
  }
  if (!fy_parser_get_stream_error(parser_)) return std::nullopt;
  void* iterator = nullptr;
  while (const fy_diag_error* error = fy_diag_errors_iterate(diag_, &iterator)) {
    if (error->type < FYET_ERROR) continue;
    // libfyaml reports positions 1-based already; anything else means "unknown".
    const bool located = error->line > 0 && error->column > 0;
    std::string message = TrimmedMessage(error->msg);
    if (message.empty()) message = "not well-formed YAML";
    return core::Diagnostic{path_, located ? error->line : 0, located ? error->column : 0,
                            std::move(message)};
  }
  return core::Diagnostic{path_, 0, 0, "not well-formed YAML"};
}

std::optional<core::Diagnostic> FindYamlSyntaxError(std::string_view text,
                                                    const std::string& path) {
  YamlEventReader reader(text, path);
  while (reader.Next()) {
  }
  return reader.Error();
}

}  // namespace rg::spec
