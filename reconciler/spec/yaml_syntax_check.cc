#include "reconciler/spec/yaml_syntax_check.h"

#include <libfyaml.h>

#include <memory>
#include <utility>

namespace rg::spec {
namespace {

struct DiagDeleter {
  void operator()(fy_diag* diag) const { fy_diag_destroy(diag); }
};
struct ParserDeleter {
  void operator()(fy_parser* parser) const { fy_parser_destroy(parser); }
};

// libfyaml writes its diagnostics to stderr unless given somewhere else to put them; errors are
// collected instead, and whatever else it has to say (warnings, notices) goes nowhere.
void Discard(fy_diag* /*diag*/, void* /*user*/, const char* /*buf*/, size_t /*len*/) {}

std::unique_ptr<fy_diag, DiagDeleter> MakeCollectingDiag() {
  fy_diag_cfg cfg{};
  fy_diag_cfg_default(&cfg);
  cfg.fp = nullptr;
  cfg.output_fn = Discard;
  cfg.user = nullptr;
  cfg.level = FYET_ERROR;
  cfg.colorize = false;
  std::unique_ptr<fy_diag, DiagDeleter> diag(fy_diag_create(&cfg));
  if (diag) fy_diag_set_collect_errors(diag.get(), true);
  return diag;
}

std::string TrimmedMessage(const char* msg) {
  std::string out = msg != nullptr ? msg : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

std::optional<core::Diagnostic> FindYamlSyntaxError(std::string_view text,
                                                    const std::string& path) {
  std::unique_ptr<fy_diag, DiagDeleter> diag = MakeCollectingDiag();
  if (!diag) return core::Diagnostic{path, 0, 0, "out of memory while reading the document"};

  fy_parse_cfg cfg{};
  // YAML 1.2 whatever the file says, never JSON mode, and nothing printed.
  cfg.flags = static_cast<fy_parse_cfg_flags>(FYPCF_QUIET | FYPCF_COLLECT_DIAG |
                                              FYPCF_DEFAULT_VERSION_1_2 | FYPCF_JSON_NONE);
  cfg.diag = diag.get();
  std::unique_ptr<fy_parser, ParserDeleter> parser(fy_parser_create(&cfg));
  // An empty string is still a stream; libfyaml only needs a non-null pointer for it.
  if (!parser ||
      fy_parser_set_string(parser.get(), text.empty() ? "" : text.data(), text.size()) != 0) {
    return core::Diagnostic{path, 0, 0, "out of memory while reading the document"};
  }

  // The parser stops at its first error: read events until the end of the stream or that error.
  while (fy_event* event = fy_parser_parse(parser.get())) {
    fy_parser_event_free(parser.get(), event);
  }
  if (!fy_parser_get_stream_error(parser.get())) return std::nullopt;

  void* iterator = nullptr;
  while (const fy_diag_error* error = fy_diag_errors_iterate(diag.get(), &iterator)) {
    if (error->type < FYET_ERROR) continue;
    // libfyaml reports positions 1-based already; anything else means "unknown".
    const bool located = error->line > 0 && error->column > 0;
    std::string message = TrimmedMessage(error->msg);
    if (message.empty()) message = "not well-formed YAML";
    return core::Diagnostic{path, located ? error->line : 0, located ? error->column : 0,
                            std::move(message)};
  }
  return core::Diagnostic{path, 0, 0, "not well-formed YAML"};
}

}  // namespace rg::spec
