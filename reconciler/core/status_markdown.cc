#include "reconciler/core/status_markdown.h"

#include "reconciler/core/time_format.h"

namespace rg::core {

std::string EscapeMarkdownCell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) {
      if (out.back() != ' ') out += ' ';
      pending_space = false;
    }
    if (c == '|') out += '\\';
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  size_t start = out.find_first_not_of(' ');
  return start == std::string::npos ? std::string() : out.substr(start);
}

namespace {

std::string Code(std::string_view text) {
  if (text.empty()) return "";
  return "`" + EscapeMarkdownCell(text) + "`";
}

std::string TimeCell(const std::optional<int64_t>& ms) {
  return ms ? FormatRfc3339Millis(*ms) : "";
}

}  // namespace

std::string RenderStatusMarkdown(const Ledger& ledger, const StatusMarkdownHeader& header) {
  std::string out = "# " + EscapeMarkdownCell(header.title) + "\n\n";
  out += "Written by ray-gitops on every change; do not edit by hand. ";
  out += "The per-job files are under `status/`.\n\n";
  if (!header.repo_url.empty()) out += "- Repository: " + Code(header.repo_url) + "\n";
  if (!header.spec_commit.empty()) out += "- Spec commit: " + Code(header.spec_commit) + "\n";
  if (!header.instance.empty()) out += "- Instance: " + Code(header.instance) + "\n";
  if (!header.repo_url.empty() || !header.spec_commit.empty() || !header.instance.empty()) {
    out += "\n";
  }
  if (ledger.empty()) {
    out += "No jobs.\n";
    return out;
  }
  out += "| name | phase | submission id | Ray status | attempt | start | end | spec | message |\n";
  out += "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [name, r] : ledger) {
    std::string message = r.message;
    if (!r.errors.empty()) {
      message = r.errors.front();
      if (r.errors.size() > 1) message += " (+" + std::to_string(r.errors.size() - 1) + " more)";
    }
    out += "| " + EscapeMarkdownCell(name);
    out += " | " + std::string(PhaseName(r.phase));
    out += " | " + Code(r.submission_id);
    out += " | ";
    if (r.status != RayJobStatus::kUnknown) out += RayJobStatusName(r.status);
    out += " | " + (r.attempt ? std::to_string(*r.attempt) : std::string());
    out += " | " + TimeCell(r.start_time_ms);
    out += " | " + TimeCell(r.end_time_ms);
    out += " | " + Code(r.spec_path);
    out += " | " + EscapeMarkdownCell(message);
    out += " |\n";
  }
  return out;
}

}  // namespace rg::core
