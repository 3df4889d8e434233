#include "reconciler/core/status_markdown.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <utility>

#include "reconciler/core/markdown.h"
#include "reconciler/core/ownership.h"
#include "reconciler/core/time_format.h"

namespace rg::core {

namespace {

constexpr size_t kMessageCells = 80;

// Percent-encodes what would end a Markdown link or a table cell, and, in a path part, what
// a URL would read as its query or fragment.
std::string EncodeUrl(std::string_view text, bool path_part) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool plain = byte > 0x20 && byte < 0x7f &&
                       std::string_view("()<>|\"`[]\\{}^ ").find(c) == std::string_view::npos &&
                       !(path_part && (c == '#' || c == '?' || c == '%'));
    if (plain) {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4U];
      out += kHex[byte & 0xFU];
    }
  }
  return out;
}

std::string Link(std::string_view text, const std::string& url) {
  return "[" + std::string(text) + "](" + url + ")";
}

bool StartsWithScheme(std::string_view url, std::string_view scheme) {
  if (url.size() < scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i]) return false;
  }
  return true;
}

// user@host:path, the scp-like SSH form: a ':' before any '/', not a one-letter drive.
bool IsScpLike(std::string_view url) {
  if (url.find("://") != std::string_view::npos) return false;
  const size_t colon = url.find(':');
  const size_t slash = url.find('/');
  return colon != std::string_view::npos && colon > 1 &&
         (slash == std::string_view::npos || colon < slash);
}

// "host:port/path" without the port.
std::string WithoutPort(const std::string& identity) {
  const size_t slash = identity.find('/');
  const std::string host = identity.substr(0, slash);
  const std::string rest = slash == std::string::npos ? "" : identity.substr(slash);
  const size_t bracket = host.rfind(']');
  const size_t colon = host.rfind(':');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) {
    return identity;
  }
  return host.substr(0, colon) + rest;
}

std::string CountsLine(const StatusMarkdownRows& rows) {
  const std::map<Phase, int> counts = rows.PhaseCounts();
  std::string out = std::to_string(rows.size()) + (rows.size() == 1 ? " job" : " jobs");
  const char* sep = ": ";
  for (Phase p : kAllPhases) {
    if (auto it = counts.find(p); it != counts.end()) {
      out += sep + std::to_string(it->second) + " " + std::string(PhaseName(p));
      sep = ", ";
    }
  }
  return out;
}

// The first validation error (and how many more), else Ray's message; at most kMessageCells
// bytes, cut on a UTF-8 character boundary.
std::string ShortMessage(const StatusRecord& r) {
  std::string message = r.message;
  if (!r.errors.empty()) {
    message = r.errors.front();
    if (r.errors.size() > 1) message += " (+" + std::to_string(r.errors.size() - 1) + " more)";
  }
  if (message.size() <= kMessageCells) return EscapeMarkdownText(message);
  size_t cut = kMessageCells - 3;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0U) == 0x80U) --cut;
  return EscapeMarkdownText(message.substr(0, cut)) + "...";
}

std::string SinceCell(const StatusRecord& r) {
  if (r.end_time_ms) return FormatRfc3339Millis(*r.end_time_ms);
  if (r.start_time_ms) return FormatRfc3339Millis(*r.start_time_ms);
  return "";
}

// The code of a record's latest run (a spec with `code`): its folder on the repository's web
// site at the commit its tree was taken from; for a repository without one, the tree id, short.
std::string CodeLink(const StatusRecord& r, const StatusMarkdownHeader& header) {
  if (r.code.empty()) return "";
  const RunCode& code = r.code.get();
  const std::string web = RepositoryWebUrl(header.repo_url);
  if (web.empty() || code.commit.empty() || code.folder.empty()) {
    return code.tree.empty() ? "" : "code " + MarkdownCodeCell(code.tree.substr(0, 12));
  }
  return Link("code",
              web + "/tree/" + EncodeUrl(code.commit, true) + "/" + EncodeUrl(code.folder, true));
}

std::string LinksCell(const StatusRecord& r, const StatusMarkdownHeader& header) {
  std::string out = Link("status", EncodeUrl("status/" + r.name + ".yaml", true));
  if (!r.dashboard_url.empty()) out += " " + Link("dashboard", EncodeUrl(r.dashboard_url, false));
  if (std::string code = CodeLink(r, header); !code.empty()) out += " " + code;
  return out;
}

std::string HeaderLines(const StatusMarkdownHeader& header) {
  std::string out = "Written by ray-gitops on every change; do not edit by hand. ";
  out += "The per-job files are under `status/`.\n\n";
  std::string facts;
  if (!header.repo_url.empty()) facts += "- Repository: " + MarkdownCode(header.repo_url) + "\n";
  if (!header.watched_branch.empty()) {
    facts += "- Branch: " + MarkdownCode(header.watched_branch) + "\n";
  }
  if (!header.spec_commit.empty()) {
    facts += "- Spec commit: " + MarkdownCode(header.spec_commit) + "\n";
  }
  if (!header.instance.empty()) facts += "- Instance: " + MarkdownCode(header.instance) + "\n";
  return facts.empty() ? out : out + facts + "\n";
}

}  // namespace

std::string RepositoryWebUrl(std::string_view repo_url) {
  const std::string identity = RepoIdentity(repo_url);
  if (identity.empty()) return "";
  if (StartsWithScheme(repo_url, "https://")) return "https://" + identity;
  if (StartsWithScheme(repo_url, "http://")) return "http://" + identity;
  if (StartsWithScheme(repo_url, "ssh://") || StartsWithScheme(repo_url, "git://") ||
      StartsWithScheme(repo_url, "git+ssh://") || IsScpLike(repo_url)) {
    return "https://" + WithoutPort(identity);
  }
  return "";
}

std::string SpecLink(const StatusRecord& record, const StatusMarkdownHeader& header) {
  if (record.spec_path.empty()) return "";
  if (!header.status_branch.empty() && header.status_branch == header.watched_branch) {
    return EncodeUrl(record.spec_path, true);
  }
  const std::string web = RepositoryWebUrl(header.repo_url);
  if (web.empty() || header.watched_branch.empty()) return "";
  return web + "/blob/" + EncodeUrl(header.watched_branch, true) + "/" +
         EncodeUrl(record.spec_path, true);
}

StatusMarkdownRow StatusMarkdownRowOf(const StatusRecord& r, const StatusMarkdownHeader& header) {
  const std::string name = EscapeMarkdownText(r.name);
  const std::string spec = SpecLink(r, header);
  std::string out = "| " + (spec.empty() ? name : Link(name, spec));
  out += " | " + EscapeMarkdownText(PhaseLabel(r.phase, r.message));
  out += " | " + (r.attempt ? std::to_string(*r.attempt) : std::string());
  out += " | " + MarkdownCodeCell(r.submission_id);
  out += " | " + SinceCell(r);
  out += " | " + ShortMessage(r);
  out += " | " + LinksCell(r, header);
  out += " |\n";
  // A row is kept for later writes (50,000 of them at once): not with the spare capacity that
  // growing it left, up to half its size again.
  out.shrink_to_fit();
  return {r.phase, std::move(out)};
}

bool SameRowHeader(const StatusMarkdownHeader& a, const StatusMarkdownHeader& b) {
  return a.repo_url == b.repo_url && a.watched_branch == b.watched_branch &&
         a.status_branch == b.status_branch;
}

std::string AssembleStatusMarkdown(const StatusMarkdownRows& rows,
                                   const StatusMarkdownHeader& header) {
  std::string out = "# " + EscapeMarkdownText(header.title) + "\n\n";
  if (rows.empty()) return out + HeaderLines(header) + "No jobs.\n";
  out += CountsLine(rows) + "\n\n";
  out += HeaderLines(header);
  out += "| NAME | PHASE | ATTEMPT | SUBMISSION_ID | SINCE | MESSAGE | LINKS |\n";
  out += "|---|---|---|---|---|---|---|\n";
  out.reserve(out.size() + rows.text().size());
  out += rows.text();
  return out;
}

std::string RenderStatusMarkdown(const Ledger& ledger, const StatusMarkdownHeader& header) {
  StatusMarkdownRows rows;
  for (const auto& [name, record] : ledger) rows.Append(name, StatusMarkdownRowOf(record, header));
  return AssembleStatusMarkdown(rows, header);
}

namespace {

// Up to this many updates are spliced into the rows where they are (each moves the rows after
// it); more make the buffer afresh in one merge.
constexpr size_t kSplicedUpdates = 16;

uint32_t Offset(size_t at) { return static_cast<uint32_t>(at); }

// `updates` by name, the later of two of one name only.
void SortLastOfEachName(std::vector<StatusMarkdownRows::Update>& updates) {
  std::stable_sort(updates.begin(), updates.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t kept = 0;
  for (size_t i = 0; i < updates.size(); ++i) {
    if (i + 1 < updates.size() && updates[i + 1].first == updates[i].first) continue;
    if (kept != i) updates[kept] = std::move(updates[i]);
    ++kept;
  }
  updates.resize(kept);
}

}  // namespace

std::string_view StatusMarkdownRows::NameAt(size_t i) const {
  return std::string_view(names_).substr(NameStart(i), ends_[i].name - NameStart(i));
}

std::string_view StatusMarkdownRows::TextAt(size_t i) const {
  return std::string_view(text_).substr(TextStart(i), ends_[i].text - TextStart(i));
}

size_t StatusMarkdownRows::LowerBound(std::string_view name) const {
  size_t lo = 0;
  size_t hi = size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (NameAt(mid) < name) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

void StatusMarkdownRows::Append(std::string_view name, const StatusMarkdownRow& row) {
  AppendText(name, row.text, row.phase);
}

void StatusMarkdownRows::AppendText(std::string_view name, std::string_view text, Phase phase) {
  text_ += text;
  names_ += name;
  ends_.push_back({Offset(text_.size()), Offset(names_.size()), phase});
}

std::optional<StatusMarkdownRow> StatusMarkdownRows::Find(std::string_view name) const {
  const size_t i = LowerBound(name);
  if (i == size() || NameAt(i) != name) return std::nullopt;
  return StatusMarkdownRow{ends_[i].phase, std::string(TextAt(i))};
}

std::map<Phase, int> StatusMarkdownRows::PhaseCounts() const {
  std::map<Phase, int> counts;
  for (const End& e : ends_) ++counts[e.phase];
  return counts;
}

void StatusMarkdownRows::Splice(size_t i, size_t remove, std::string_view name,
                                const StatusMarkdownRow* row) {
  const size_t text_at = TextStart(i);
  const size_t name_at = NameStart(i);
  const size_t old_text = remove != 0 ? ends_[i].text - text_at : 0;
  const size_t old_name = remove != 0 ? ends_[i].name - name_at : 0;
  const std::string_view new_text = row != nullptr ? std::string_view(row->text) : "";
  const std::string_view new_name = row != nullptr ? name : "";
  text_.replace(text_at, old_text, new_text);
  names_.replace(name_at, old_name, new_name);
  // Unsigned arithmetic wraps: adding the difference moves an offset either way.
  const auto text_moved = Offset(new_text.size() - old_text);
  const auto name_moved = Offset(new_name.size() - old_name);
  for (size_t k = i + remove; k < ends_.size(); ++k) {
    ends_[k].text += text_moved;
    ends_[k].name += name_moved;
  }
  const auto at = ends_.begin() + static_cast<std::ptrdiff_t>(i);
  if (row == nullptr) {
    if (remove != 0) ends_.erase(at);
    return;
  }
  const End end{Offset(text_at + new_text.size()), Offset(name_at + new_name.size()), row->phase};
  if (remove != 0) {
    *at = end;
  } else {
    ends_.insert(at, end);
  }
}

void StatusMarkdownRows::Apply(std::vector<Update> updates) {
  SortLastOfEachName(updates);
  if (updates.size() <= kSplicedUpdates) {
    for (const Update& u : updates) {
      const size_t i = LowerBound(u.first);
      const size_t held = i < size() && NameAt(i) == u.first ? 1 : 0;
      if (held != 0 || u.second) Splice(i, held, u.first, u.second ? &*u.second : nullptr);
    }
    return;
  }
  StatusMarkdownRows out;
  size_t text_bytes = text_.size();
  size_t name_bytes = names_.size();
  for (const Update& u : updates) {
    if (u.second) {
      text_bytes += u.second->text.size();
      name_bytes += u.first.size();
    }
  }
  out.text_.reserve(text_bytes);
  out.names_.reserve(name_bytes);
  out.ends_.reserve(size() + updates.size());
  auto keep = [&](size_t i) { out.AppendText(NameAt(i), TextAt(i), ends_[i].phase); };
  size_t i = 0;
  for (const Update& u : updates) {
    for (; i < size() && NameAt(i) < u.first; ++i) keep(i);
    if (i < size() && NameAt(i) == u.first) ++i;
    if (u.second) out.Append(u.first, *u.second);
  }
  for (; i < size(); ++i) keep(i);
  *this = std::move(out);
}

}  // namespace rg::core
