// STATUS.md: one row per job, cells that cannot break the table.

#include "reconciler/core/status_markdown.h"

#include <catch2/catch.hpp>
#include <string>

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

TEST_CASE("STATUS.md has one row per job with its phase, id, Ray status and times",
          "[status][markdown]") {
  core::Ledger ledger;
  auto running = Row("b-job", Phase::kRunning);
  running.submission_id = "b-job-3f2a1c9b0e-r2";
  running.status = core::RayJobStatus::kRunning;
  running.attempt = 2;
  running.start_time_ms = 1795000000123;
  ledger.emplace("b-job", running);
  ledger.emplace("a-job", Row("a-job", Phase::kPending));

  core::StatusMarkdownHeader header;
  header.repo_url = "https://example.com/org/repo.git";
  header.spec_commit = "0123456789abcdef";
  const std::string md = core::RenderStatusMarkdown(ledger, header);
  CHECK(md.rfind("# ray-gitops status\n", 0) == 0);
  CHECK(md.find("- Repository: `https://example.com/org/repo.git`") != std::string::npos);
  CHECK(md.find("- Spec commit: `0123456789abcdef`") != std::string::npos);
  CHECK(md.find("| b-job | Running | `b-job-3f2a1c9b0e-r2` | RUNNING | 2 | "
                "2026-11-18T11:06:40.123Z |  | `jobs/b-job.yaml` |  |\n") != std::string::npos);
  CHECK(md.find("| a-job | Pending |  |  |  |  |  | `jobs/a-job.yaml` |  |\n") !=
        std::string::npos);
  CHECK(md.find("| a-job") < md.find("| b-job"));
  CHECK(core::RenderStatusMarkdown(ledger, header) == md);
}

TEST_CASE("Pipes and line breaks in a message cannot break the table", "[status][markdown]") {
  core::Ledger ledger;
  auto r = Row("x", Phase::kFailed);
  r.message = "a | b\nc\r\nd |";
  ledger.emplace("x", r);
  const std::string md = core::RenderStatusMarkdown(ledger);
  const std::string row = md.substr(md.find("| x |"));
  CHECK(row.find("a \\| b c d \\|") != std::string::npos);
  CHECK(Count(row, '\n') == 1);
  // Nine cells: ten unescaped pipes.
  CHECK(Count(row, '|') - 2 == 10);
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
  CHECK(md.find("| name |") == std::string::npos);
}

TEST_CASE("EscapeMarkdownCell escapes pipes, folds line breaks and trims", "[status][markdown]") {
  CHECK(core::EscapeMarkdownCell("  a|b  ") == "a\\|b");
  CHECK(core::EscapeMarkdownCell("one\n\ntwo") == "one two");
  CHECK(core::EscapeMarkdownCell("\nlead") == "lead");
  CHECK(core::EscapeMarkdownCell("") == "");
}

}  // namespace
}  // namespace rg
