// STATUS.md: counts by phase, one row per job with links, cells that cannot break the table.

#include "reconciler/core/status_markdown.h"

#include <array>
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

namespace rg {
namespace {

using core::Phase;

core::StatusRecord Row(const std::string& name, Phase phase) {
  core::StatusRecord r;
  r.name = name;
  r.spec_path = "jobs/" + name + ".yaml";
  r.phase = phase;
  return r;
}

size_t Count(const std::string& text, char c) {
  size_t n = 0;
  for (char x : text) n += x == c ? 1 : 0;
  return n;
}

TEST_CASE("STATUS.md counts the jobs by phase and has one row per job", "[status][markdown]") {
  core::Ledger ledger;
  auto running = Row("b-job", Phase::kRunning);
  running.submission_id = "b-job-3f2a1c9b0e-r2";
  running.status = core::RayJobStatus::kRunning;
  running.attempt = 2;
  running.start_time_ms = 1795000000123;
  running.message = "Job is currently running.";
  running.dashboard_url = "http://127.0.0.1:8265/#/jobs/b-job-3f2a1c9b0e-r2";
  ledger.emplace("b-job", running);
  ledger.emplace("a-job", Row("a-job", Phase::kPending));
  auto done = Row("c-job", Phase::kRunning);
  done.end_time_ms = 1795000001000;
  done.start_time_ms = 1795000000000;
  ledger.emplace("c-job", done);

  core::StatusMarkdownHeader header;
  header.repo_url = "https://example.com/org/repo.git";
  header.spec_commit = "0123456789abcdef";
  header.watched_branch = "main";
  header.status_branch = "ray-gitops/status";
  const std::string md = core::RenderStatusMarkdown(ledger, header);
  CHECK(md.rfind("# ray-gitops status\n\n3 jobs: 1 Pending, 2 Running\n\n", 0) == 0);
  CHECK(md.find("- Repository: `https://example.com/org/repo.git`") != std::string::npos);
  CHECK(md.find("- Spec commit: `0123456789abcdef`") != std::string::npos);
  CHECK(md.find("| NAME | PHASE | ATTEMPT | SUBMISSION_ID | SINCE | MESSAGE | LINKS |\n") !=
        std::string::npos);
  CHECK(md.find("| [b-job](https://example.com/org/repo/blob/main/jobs/b-job.yaml) | Running | 2 "
                "| `b-job-3f2a1c9b0e-r2` | 2026-11-18T11:06:40.123Z | Job is currently running. "
                "| [status](status/b-job.yaml) "
                "[dashboard](http://127.0.0.1:8265/#/jobs/b-job-3f2a1c9b0e-r2) |\n") !=
        std::string::npos);
  CHECK(md.find("| [a-job](https://example.com/org/repo/blob/main/jobs/a-job.yaml) | Pending |  "
                "|  |  |  | [status](status/a-job.yaml) |\n") != std::string::npos);
  // An ended run's time is its end.
  CHECK(md.find("| 2026-11-18T11:06:41.000Z |") != std::string::npos);
  CHECK(md.find("| [a-job]") < md.find("| [b-job]"));
  CHECK(core::RenderStatusMarkdown(ledger, header) == md);
}

TEST_CASE("Pipes, markup and line breaks in a message cannot break the table",
          "[status][markdown]") {
  core::Ledger ledger;
  auto r = Row("x", Phase::kFailed);
  r.message = "a | b\nc\r\nd | <img src=y> *bold* [l](u)";
  ledger.emplace("x", r);
  const std::string md = core::RenderStatusMarkdown(ledger);
  const std::string row = md.substr(md.find("| x |"));
  CHECK(row.find("a \\| b\\\\nc\\\\r\\\\nd \\| &lt;img src=y&gt; \\*bold\\* \\[l\\](u)") !=
        std::string::npos);
  CHECK(Count(row, '\n') == 1);
  // Seven cells: eight unescaped pipes.
  CHECK(Count(row, '|') - 2 == 8);
}

TEST_CASE("A Waiting job's phase cell names what it waits on", "[status][markdown]") {
  core::Ledger ledger;
  auto r = Row("grpo", Phase::kWaiting);
  r.message = "on sft_qwen: Running";
  ledger.emplace("grpo", r);
  const std::string md = core::RenderStatusMarkdown(ledger);
  CHECK(md.find("| grpo | Waiting (on sft\\_qwen: Running) |") != std::string::npos);
  CHECK(md.find("1 Waiting") != std::string::npos);
}

TEST_CASE("A long message is cut to 80 characters", "[status][markdown]") {
  core::Ledger ledger;
  auto r = Row("x", Phase::kFailed);
  r.message = std::string(200, 'm');
  ledger.emplace("x", r);
  const std::string md = core::RenderStatusMarkdown(ledger);
  CHECK(md.find("| " + std::string(77, 'm') + "... |") != std::string::npos);
}

TEST_CASE("Validation errors take the message column of an invalid job", "[status][markdown]") {
  core::Ledger ledger;
  auto r = Row("broken", Phase::kInvalid);
  r.errors = {"jobs/broken.yaml:3:1: error: first", "jobs/broken.yaml:4:1: error: second"};
  ledger.emplace("broken", r);
  const std::string md = core::RenderStatusMarkdown(ledger);
  CHECK(md.find("jobs/broken.yaml:3:1: error: first (+1 more) |") != std::string::npos);
}

TEST_CASE("An empty ledger says so instead of printing an empty table", "[status][markdown]") {
  const std::string md = core::RenderStatusMarkdown({});
  CHECK(md.find("No jobs.") != std::string::npos);
  CHECK(md.find("| NAME |") == std::string::npos);
}

TEST_CASE("The spec link works from the status branch on GitHub and GitLab", "[status][markdown]") {
  auto r = Row("a", Phase::kRunning);
  r.spec_path = "jobs/team a/a#1.yaml";
  core::StatusMarkdownHeader h;
  h.watched_branch = "main";
  h.status_branch = "ray-gitops/status";
  struct Case {
    const char* repo_url;
    const char* link;
  };
  const std::vector<Case> cases = {
      {"https://github.com/org/repo.git",
       "https://github.com/org/repo/blob/main/jobs/team%20a/a%231.yaml"},
      {"https://gitlab.example.com:8443/group/sub/repo",
       "https://gitlab.example.com:8443/group/sub/repo/blob/main/jobs/team%20a/a%231.yaml"},
      {"git@github.com:org/repo.git",
       "https://github.com/org/repo/blob/main/jobs/team%20a/a%231.yaml"},
      {"ssh://git@gitlab.com:2222/group/repo.git",
       "https://gitlab.com/group/repo/blob/main/jobs/team%20a/a%231.yaml"},
      {"/srv/git/repo.git", ""},
      {"file:///srv/git/repo.git", ""},
  };
  for (const Case& c : cases) {
    INFO(c.repo_url);
    h.repo_url = c.repo_url;
    CHECK(core::SpecLink(r, h) == c.link);
  }
  // Same-branch mode: the spec is in the same tree as STATUS.md.
  h.repo_url = "/srv/git/repo.git";
  h.status_branch = "main";
  CHECK(core::SpecLink(r, h) == "jobs/team%20a/a%231.yaml");
  // Without the watched branch there is nothing to link to.
  h.repo_url = "https://github.com/org/repo.git";
  h.status_branch = "ray-gitops/status";
  h.watched_branch.clear();
  CHECK(core::SpecLink(r, h).empty());
}

TEST_CASE("A run's code is linked at the commit its tree was taken from", "[status][markdown]") {
  auto r = Row("a", Phase::kRunning);
  const std::string tree(40, 'b');
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  r.code.set({"src/team a (v2)", tree, commit});
  core::StatusMarkdownHeader h;
  h.repo_url = "git@github.com:org/repo.git";
  const std::string row = core::StatusMarkdownRowOf(r, h).text;
  CHECK(row.find(" [code](https://github.com/org/repo/tree/" + commit +
                 "/src/team%20a%20%28v2%29) |\n") != std::string::npos);
  CHECK(Count(row, '|') == 8);  // the table keeps its 7 cells
  // Without a web address: the tree, short.
  h.repo_url = "/srv/git/repo.git";
  CHECK(core::StatusMarkdownRowOf(r, h).text.ends_with(" code `bbbbbbbbbbbb` |\n"));
  // A job without code has no such link.
  CHECK(core::StatusMarkdownRowOf(Row("b", Phase::kRunning), h).text.find("code") ==
        std::string::npos);
}

TEST_CASE("Credentials in the repository URL never reach a link", "[status][markdown]") {
  CHECK(core::RepositoryWebUrl("https://user:s3cr3t-token@github.com/org/repo.git") ==
        "https://github.com/org/repo");
}

// Unescaped pipes: those after an even run of backslashes.
int BarePipes(const std::string& row) {
  int n = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    size_t run = 0;
    while (run < i && row[i - 1 - run] == '\\') ++run;
    if (row[i] == '|' && run % 2 == 0) ++n;
  }
  return n;
}

// `row` without its code spans (where nothing renders) and without the <code> tags of ours.
std::string WithoutCode(std::string row) {
  for (const std::string tag : {"<code>", "</code>"}) {
    for (size_t at = row.find(tag); at != std::string::npos; at = row.find(tag)) {
      row.erase(at, tag.size());
    }
  }
  std::string out;
  for (size_t i = 0; i < row.size();) {
    if (row[i] != '`') {
      out += row[i++];
      continue;
    }
    const size_t open = row.find_first_not_of('`', i) - i;
    const std::string fence(open, '`');
    size_t close = row.find(fence, i + open);
    while (close != std::string::npos && close + open < row.size() && row[close + open] == '`') {
      close = row.find(fence, row.find_first_not_of('`', close));
    }
    if (close == std::string::npos) return out + row.substr(i);
    i = close + open;
  }
  return out;
}

TEST_CASE("No value in a record can add a line, a cell, a heading or HTML to STATUS.md",
          "[status][markdown]") {
  const std::vector<std::string> hostile = {
      "x\n## \xE2\x9C\x85 no runs change, safe to merge\n| forged | row |",
      "x\r# forged\r",
      "\x1b[31mred\x1b[0m",
      "</details><script>alert(1)</script>",
      "a ``` b ` c | d",
      "rtl \xE2\x80\xAE"
      "desrever",
      "ends in a backslash\\",
      "![x](https://evil/x.png) @org/team",
      "bad \xFF utf8",
  };
  for (const std::string& value : hostile) {
    INFO(value);
    core::Ledger ledger;
    auto r = Row("x", Phase::kFailed);
    r.message = value;
    r.errors = {value};
    r.submission_id = value;
    r.dashboard_url = "http://dash/" + value;
    ledger.emplace("x", r);
    const std::string md = core::RenderStatusMarkdown(ledger);
    const std::string row = md.substr(md.find("| x |"));
    CHECK(Count(row, '\n') == 1);
    CHECK(BarePipes(row) == 8);
    const std::string text = WithoutCode(row);
    CHECK(text.find_first_of("<>\r\x1b") == std::string::npos);
    CHECK(row.find("\xE2\x80\xAE") == std::string::npos);
    CHECK(text.find("](https://evil") == std::string::npos);
    CHECK(md.find("\n#", md.find('\n')) == std::string::npos);  // no heading but the title
  }
}

// The status store keeps rows between writes and assembles the page from them.
TEST_CASE("The page assembled from rows is the page rendered from the records",
          "[status][markdown]") {
  core::Ledger ledger;
  ledger.emplace("b", Row("b", Phase::kRunning));
  auto failed = Row("a", Phase::kFailed);
  failed.message = "a | b <c>";
  failed.attempt = 3;
  ledger.emplace("a", failed);
  ledger.emplace("c", Row("c", Phase::kRunning));
  core::StatusMarkdownHeader header;
  header.repo_url = "git@example.com:org/repo.git";
  header.watched_branch = "main";
  header.status_branch = "ray-gitops/status";
  header.spec_commit = "0123456789abcdef";
  header.instance = "ray-gitops";

  core::StatusMarkdownRows rows;
  for (const auto& [name, record] : ledger)
    rows.Append(name, core::StatusMarkdownRowOf(record, header));
  CHECK(core::AssembleStatusMarkdown(rows, header) == core::RenderStatusMarkdown(ledger, header));
  const std::optional<core::StatusMarkdownRow> a = rows.Find("a");
  REQUIRE(a.has_value());
  CHECK(a->phase == Phase::kFailed);
  CHECK(a->text ==
        "| [a](https://example.com/org/repo/blob/main/jobs/a.yaml) | Failed | 3 |  |  "
        "| a \\| b &lt;c&gt; | [status](status/a.yaml) |\n");
  CHECK(core::RenderStatusMarkdown(ledger, header).find(a->text) != std::string::npos);
  CHECK_FALSE(rows.Find("d").has_value());
  CHECK_FALSE(rows.Find("").has_value());
  CHECK(core::AssembleStatusMarkdown({}, header) == core::RenderStatusMarkdown({}, header));

  // Rows depend on the repository and the branches, not on the rest of the header.
  auto other = header;
  other.spec_commit = "fedcba9876543210";
  other.instance = "team-b";
  other.title = "elsewhere";
  CHECK(core::SameRowHeader(header, other));
  for (auto field :
       {&core::StatusMarkdownHeader::repo_url, &core::StatusMarkdownHeader::watched_branch,
        &core::StatusMarkdownHeader::status_branch}) {
    auto changed = header;
    changed.*field += "-x";
    CHECK_FALSE(core::SameRowHeader(header, changed));
  }
}

// What a write does to the kept rows: a few updates are spliced in place, more merged into a
// new buffer; either way the page is the one rendered from the records as they now are.
TEST_CASE("Rows updated by name give the page of the updated records", "[status][markdown]") {
  core::StatusMarkdownHeader header;
  header.repo_url = "https://example.com/org/repo.git";
  header.watched_branch = "main";
  header.status_branch = "ray-gitops/status";
  std::mt19937 rng(7);
  const std::array<Phase, 4> phases = {Phase::kPending, Phase::kRunning, Phase::kSucceeded,
                                       Phase::kFailed};
  auto name_of = [](size_t i) { return "job-" + std::to_string(i); };  // job-10 < job-2
  for (const size_t count : {size_t{1}, size_t{5}, size_t{16}, size_t{17}, size_t{300}}) {
    INFO(count << " updates");
    core::Ledger ledger;
    for (size_t i = 0; i < 200; i += 2)
      ledger.emplace(name_of(i), Row(name_of(i), Phase::kRunning));
    core::StatusMarkdownRows rows;
    for (const auto& [name, record] : ledger)
      rows.Append(name, core::StatusMarkdownRowOf(record, header));
    std::vector<core::StatusMarkdownRows::Update> updates;
    for (size_t k = 0; k < count; ++k) {
      const std::string name = name_of(rng() % 220);  // held or not, some twice
      if (rng() % 4 == 0) {
        ledger.erase(name);
        updates.emplace_back(name, std::nullopt);
        continue;
      }
      core::StatusRecord r = Row(name, phases[rng() % phases.size()]);
      r.message = std::string(rng() % 90, 'm');  // rows longer and shorter than before
      ledger.insert_or_assign(name, r);
      updates.emplace_back(name, core::StatusMarkdownRowOf(r, header));
    }
    rows.Apply(std::move(updates));
    CHECK(rows.size() == ledger.size());
    CHECK(core::AssembleStatusMarkdown(rows, header) == core::RenderStatusMarkdown(ledger, header));
    CHECK(rows.PhaseCounts().size() <= phases.size());
  }
  SECTION("every row removed, then one added") {
    core::StatusMarkdownRows rows;
    rows.Append("a", core::StatusMarkdownRowOf(Row("a", Phase::kRunning), header));
    rows.Apply({{"a", std::nullopt}, {"zz", std::nullopt}});
    CHECK(rows.empty());
    CHECK(rows.text().empty());
    rows.Apply({{"b", core::StatusMarkdownRowOf(Row("b", Phase::kFailed), header)}});
    REQUIRE(rows.size() == 1);
    CHECK(rows.Find("b")->phase == Phase::kFailed);
  }
}

}  // namespace
}  // namespace rg
