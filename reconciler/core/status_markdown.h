#pragma once
// STATUS.md at the root of the status branch: the ledger as a Markdown table for people
// browsing the repository. Pure: the caller supplies every value, the clock included.

#include <string>

#include "reconciler/core/status_model.h"

namespace rg::core {

struct StatusMarkdownHeader {
  std::string title = "ray-gitops status";
  std::string repo_url;     // the desired-state repository (credentials stripped); optional
  std::string spec_commit;  // the commit the last pass read; optional
  std::string instance;     // the --instance name; optional
};

// One row per record, sorted by name: name, phase, submission id, Ray status, attempt,
// start, end, spec path, message. Cell text has '|' escaped and line breaks turned into
// spaces, so a message can never break the table. The output depends only on the arguments.
std::string RenderStatusMarkdown(const Ledger& ledger, const StatusMarkdownHeader& header = {});

// A table cell: '|' escaped as '\|', CR/LF as single spaces, surrounding spaces trimmed.
std::string EscapeMarkdownCell(std::string_view text);

}  // namespace rg::core
