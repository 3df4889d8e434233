#pragma once
// STATUS.md at the root of the status branch: the ledger as a Markdown table for people
// browsing the repository on GitHub or GitLab. Pure: the caller supplies every value.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reconciler/core/status_model.h"

namespace rg::core {

struct StatusMarkdownHeader {
  std::string title = "ray-gitops status";
  std::string repo_url;     // the desired-state repository (credentials stripped); optional
  std::string spec_commit;  // the commit the last pass read; optional
  std::string instance;     // the --instance name; optional
  // The branch the specs are read from ("main"; not "HEAD") and the branch STATUS.md is on.
  // Both are needed for the links to the spec files; either may be empty.
  std::string watched_branch;
  std::string status_branch;
};

// The page: the title, a count of the jobs by phase ("3 jobs: 1 Running, 1 Succeeded, 1
// Failed"), a short header, and one row per record, sorted by name: NAME (a link to the spec
// file, SpecLink), PHASE, ATTEMPT, SUBMISSION_ID, SINCE (the latest run's end time, else its
// start time), MESSAGE (the first validation error, else Ray's message, cut to 80
// characters) and LINKS (the status file, status/<name>.yaml, relative: it is on the same
// branch; and the run in the Ray dashboard, the record's dashboard_url). Cell text is
// escaped (EscapeMarkdownText, MarkdownCodeCell: markdown.h) and URLs percent-encoded, so
// nothing in a record can break the table or add markup. The output depends only on the
// arguments.
// It is AssembleStatusMarkdown of the ledger's rows (StatusMarkdownRowOf).
std::string RenderStatusMarkdown(const Ledger& ledger, const StatusMarkdownHeader& header = {});

// One record's line of the table, with what the counts line needs of it.
struct StatusMarkdownRow {
  Phase phase = Phase::kPending;
  std::string text;  // "| name | phase | ... |\n"
};

// The rows of a page by job name, in name order (std::less, as a Ledger's), in one buffer: a
// daemon keeps every row of its status folder between writes, and 50,000 rows take about
// 14 MB so, against 20 MB as a map of strings.
class StatusMarkdownRows {
 public:
  // A row to set, or (nullopt) to remove, by name.
  using Update = std::pair<std::string, std::optional<StatusMarkdownRow>>;

  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  // Adds a row after the last one: `name` sorts after every name held.
  void Append(std::string_view name, const StatusMarkdownRow& row);
  // Sets or removes the rows of `updates` (of two updates of one name, the later); every other
  // row stays. A few are spliced in place, more make the buffer afresh.
  void Apply(std::vector<Update> updates);
  // The row of `name`, if there is one.
  std::optional<StatusMarkdownRow> Find(std::string_view name) const;
  // Every row's text, in order: the table's body.
  std::string_view text() const { return text_; }
  // How many rows are in each phase.
  std::map<Phase, int> PhaseCounts() const;

 private:
  // Where row i ends in text_ and names_ (it starts where row i - 1 ends), and its phase.
  struct End {
    uint32_t text = 0;
    uint32_t name = 0;
    Phase phase = Phase::kPending;
  };
  size_t TextStart(size_t i) const { return i == 0 ? 0 : ends_[i - 1].text; }
  size_t NameStart(size_t i) const { return i == 0 ? 0 : ends_[i - 1].name; }
  std::string_view NameAt(size_t i) const;
  std::string_view TextAt(size_t i) const;
  void AppendText(std::string_view name, std::string_view text, Phase phase);
  // The first row whose name is not less than `name`.
  size_t LowerBound(std::string_view name) const;
  // Replaces rows [i, i + remove) with `row` (when set) in place: the rows after it move.
  void Splice(size_t i, size_t remove, std::string_view name, const StatusMarkdownRow* row);

  std::string text_;
  std::string names_;
  std::vector<End> ends_;
};

// The row of `record`. Of the header it depends only on repo_url, watched_branch and
// status_branch (the NAME link: SpecLink); see SameRowHeader.
StatusMarkdownRow StatusMarkdownRowOf(const StatusRecord& record,
                                      const StatusMarkdownHeader& header);

// Whether rows rendered with `a` are the rows rendered with `b`.
bool SameRowHeader(const StatusMarkdownHeader& a, const StatusMarkdownHeader& b);

// The page around `rows` (rendered with `header`, or one that is SameRowHeader): what
// RenderStatusMarkdown gives for the records they were rendered from.
std::string AssembleStatusMarkdown(const StatusMarkdownRows& rows,
                                   const StatusMarkdownHeader& header = {});

// Where NAME links to, or "" for no link:
// - the status branch is the watched branch: the spec path itself, relative (the page is at
//   the root of the same tree);
// - else, when the repository URL is a network URL (https://, http://, ssh://, git://,
//   user@host:path) and the watched branch is known:
//   https://<host>/<path>/blob/<watched branch>/<spec path> (http:// kept for an http URL),
//   without credentials, port of SSH or ".git". GitHub serves that address and GitLab
//   redirects it to its /-/blob/ form. A relative "../" link cannot reach another branch:
//   GitLab resolves "../" inside the tree of the current branch;
// - else (a local path, file://): no link.
std::string SpecLink(const StatusRecord& record, const StatusMarkdownHeader& header);

// The web address of a repository from its clone URL (see SpecLink), or "" for a local one.
std::string RepositoryWebUrl(std::string_view repo_url);

}  // namespace rg::core
