#include "reconciler/server/status_page.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "reconciler/core/time_format.h"
#include "tests/browser/loop_scenarios.h"
#include "tests/unit/server/sample_snapshot.h"

using rg::server::DaemonStateText;
using rg::server::FindJob;
using rg::server::HtmlEscape;
using rg::server::RenderJobJson;
using rg::server::RenderJobPage;
using rg::server::RenderStatusJson;
using rg::server::RenderStatusPage;
using rg::server::testing::kHostileMessage;
using rg::server::testing::SampleSnapshot;

namespace {

size_t Occurrences(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("HtmlEscape escapes the five HTML-significant characters") {
  CHECK(HtmlEscape(R"(<a href="x">'&'</a>)") ==
        "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  CHECK(HtmlEscape("plain text") == "plain text");
}

TEST_CASE("daemon state reads ready, failing, blocked, starting, stale or stopping") {
  auto s = SampleSnapshot();
  CHECK(DaemonStateText(s) == "ready");
  s.blocked = true;
  s.blocked_reason = "would stop 3 of 5 jobs";
  CHECK(DaemonStateText(s) == "blocked: would stop 3 of 5 jobs");
  s.last_error = "jobs/a.yaml:3:1: error: unknown key";
  CHECK(DaemonStateText(s) == "blocked: would stop 3 of 5 jobs");  // invalid input: still ready
  s.blocked = false;
  s.ready = false;
  s.consecutive_failures = 2;
  s.last_error = "git fetch: timeout";
  CHECK(DaemonStateText(s) == "failing: git fetch: timeout");
  s.shutting_down = true;
  CHECK(DaemonStateText(s) == "stopping");
  rg::engine::DaemonSnapshot fresh;
  CHECK(DaemonStateText(fresh) == "starting");
  fresh.last_pass_end_ms = 1;
  CHECK(DaemonStateText(fresh) == "stale");
}

TEST_CASE("dashboard links join the base URL and the submission id") {
  CHECK(rg::server::DashboardJobLink("http://h:8265/", "a-1") == "http://h:8265/#/jobs/a-1");
  CHECK(rg::server::DashboardJobLink("http://h:8265", "a-1") == "http://h:8265/#/jobs/a-1");
  CHECK(rg::server::DashboardJobLink("", "a-1").empty());
  CHECK(rg::server::DashboardJobLink("http://h:8265", "").empty());
}

TEST_CASE("the status page escapes a hostile message and never emits it raw") {
  const std::string html = RenderStatusPage(SampleSnapshot(), 15);
  CHECK(html.find(kHostileMessage) == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find(HtmlEscape(kHostileMessage)) != std::string::npos);
}

TEST_CASE("the status page has one row per job with its phase and a dashboard link") {
  const auto s = SampleSnapshot();
  const std::string html = RenderStatusPage(s, 15);
  CHECK(Occurrences(html, "<tr class=\"job\"") == s.jobs.size());
  CHECK(html.find("data-name=\"ppo-qwen\" data-phase=\"Running\"") != std::string::npos);
  CHECK(html.find("<span class=\"phase phase-failed\">Failed</span>") != std::string::npos);
  CHECK(html.find("href=\"http://127.0.0.1:8265/#/jobs/ppo-qwen-3f2a1c9b0e\"") !=
        std::string::npos);
  // The invalid job was never submitted: no link, its validation error as the message.
  CHECK(Occurrences(html, "class=\"dashboard-link\"") == 4);
  CHECK(html.find("unknown key &quot;entrypint&quot;") != std::string::npos);
  CHECK(html.find("<meta http-equiv=\"refresh\" content=\"15\">") != std::string::npos);
  CHECK(html.find("3f2a1c9b0e4d5f60718293a4b5c6d7e8f9012345") != std::string::npos);
}

TEST_CASE("the status page counts jobs by phase") {
  const std::string html = RenderStatusPage(SampleSnapshot(), 0);
  CHECK(html.find("<li>Jobs<b>5</b></li>") != std::string::npos);
  CHECK(
      html.find(
          "<li data-phase=\"Running\"><span class=\"dot phase-running\"></span>Running<b>1</b>") !=
      std::string::npos);
  CHECK(html.find("http-equiv=\"refresh\"") == std::string::npos);
}

TEST_CASE("the status page is self-contained: no scripts, no external resources") {
  const std::string html = RenderStatusPage(SampleSnapshot(), 15);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("src=\"") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("<style>") != std::string::npos);
}

TEST_CASE("the status page shows the failing state with the error, escaped") {
  auto s = SampleSnapshot();
  s.ready = false;
  s.consecutive_failures = 2;
  s.last_error = "ray: <connection refused>";
  const std::string html = RenderStatusPage(s, 15);
  CHECK(html.find("class=\"state state-failing\">failing: ray: &lt;connection refused&gt;<") !=
        std::string::npos);
}

TEST_CASE("a dashboard URL that is not http(s) gives no link") {
  auto s = SampleSnapshot();
  s.dashboard_url = "javascript:alert(1)//";
  for (auto& j : s.jobs) j.dashboard_url.clear();
  const std::string html = RenderStatusPage(s, 15);
  CHECK(html.find("javascript:") == std::string::npos);
  CHECK(html.find("class=\"dashboard-link\"") == std::string::npos);
}

TEST_CASE("the status JSON carries the daemon fields and every job field") {
  const auto s = SampleSnapshot();
  const auto j = nlohmann::json::parse(RenderStatusJson(s));
  CHECK(j["instance"] == "lab-a");
  CHECK(j["branch"] == "main");
  CHECK(j["ready"] == true);
  CHECK(j["state"] == "ready");
  CHECK(j["last_error"].is_null());
  CHECK(j["last_success"] == rg::core::FormatRfc3339Millis(*s.last_success_ms));
  CHECK(j["spec_commit"] == s.spec_commit);
  CHECK(j["counts"]["Running"] == 1);
  CHECK(j["counts"]["Invalid"] == 1);
  REQUIRE(j["jobs"].size() == s.jobs.size());
  const auto& failed = j["jobs"][2];
  CHECK(failed["name"] == "grpo-llama");
  CHECK(failed["phase"] == "Failed");
  CHECK(failed["status"] == "FAILED");
  CHECK(failed["attempt"] == 2);
  CHECK(failed["message"] == kHostileMessage);
  CHECK(failed["driver_exit_code"] == 1);
  CHECK(failed["start_time"] == rg::core::FormatRfc3339Millis(*s.jobs[2].start_time_ms));
  CHECK(failed["end_time"] == rg::core::FormatRfc3339Millis(*s.jobs[2].end_time_ms));
  const auto& invalid = j["jobs"][0];
  CHECK(invalid["submission_id"].is_null());
  CHECK(invalid["attempt"].is_null());
  CHECK(invalid["start_time"].is_null());
  CHECK(invalid["errors"].size() == 1);
  for (const char* key : {"name",       "instance",         "ray_cluster",
                          "spec_path",  "spec_hash",        "spec_commit",
                          "phase",      "on_remove",        "submission_id",
                          "attempt",    "status",           "message",
                          "error_type", "job_id",           "start_time",
                          "end_time",   "driver_exit_code", "dashboard_url",
                          "errors",     "attempts"}) {
    INFO(key);
    CHECK(invalid.contains(key));
  }
}

TEST_CASE("the status JSON writes a job as its status file does: null for unknown and empty") {
  auto s = SampleSnapshot();
  auto& job = s.jobs[0];
  job.instance = "lab-a";
  job.status = rg::core::RayJobStatus::kUnknown;
  job.message.clear();
  rg::core::AttemptRecord stopped;
  stopped.submission_id = "x-1";
  stopped.stop_reason = rg::core::StopReason::kReplacement;
  stopped.stop_sent_ms = 1795000050789;
  job.attempts = {stopped};
  const auto j = nlohmann::json::parse(RenderStatusJson(s))["jobs"][0];
  CHECK(j["instance"] == "lab-a");
  CHECK(j["ray_cluster"].is_null());
  CHECK(j["status"].is_null());
  CHECK(j["message"].is_null());
  CHECK(j["attempts"][0]["status"].is_null());
  CHECK(j["attempts"][0]["message"].is_null());
  CHECK(j["attempts"][0]["stop_reason"] == "replaced");
  CHECK(j["attempts"][0]["stop_sent_at"] == rg::core::FormatRfc3339Millis(1795000050789));
}

TEST_CASE("the status JSON survives invalid UTF-8 in a message") {
  auto s = SampleSnapshot();
  s.jobs[0].message = std::string("bad \xff\xfe bytes");
  const auto j = nlohmann::json::parse(RenderStatusJson(s));
  CHECK(j["jobs"][0]["message"].get<std::string>().starts_with("bad "));
}

TEST_CASE("the status JSON lists the warnings and the unready reason") {
  auto s = SampleSnapshot();
  auto j = nlohmann::json::parse(RenderStatusJson(s));
  CHECK(j["warnings"] == nlohmann::json::array());
  CHECK(j["unready_reason"].is_null());
  s.warnings = {{"unreadable_status", "status/a.json: not JSON; job a is frozen"},
                {"foreign_jobs", "2 jobs carry another instance's label"}};
  s.ready = false;
  s.unready_reason = "Ray unreachable since 09:10:00";
  j = nlohmann::json::parse(RenderStatusJson(s));
  REQUIRE(j["warnings"].size() == 2);
  CHECK(j["warnings"][0]["kind"] == "unreadable_status");
  CHECK(j["warnings"][0]["message"] == "status/a.json: not JSON; job a is frozen");
  CHECK(j["warnings"][1]["kind"] == "foreign_jobs");
  CHECK(j["unready_reason"] == "Ray unreachable since 09:10:00");
}

TEST_CASE("the status page shows each warning in a box, escaped") {
  auto s = SampleSnapshot();
  CHECK(RenderStatusPage(s, 15).find("id=\"warnings\"") == std::string::npos);
  s.warnings = {{"invalid_cluster", kHostileMessage}, {"invalid_spec", "jobs/x.yaml: bad"}};
  const std::string html = RenderStatusPage(s, 15);
  CHECK(html.find("id=\"warnings\"") != std::string::npos);
  CHECK(html.find("<li data-kind=\"invalid_cluster\">") != std::string::npos);
  CHECK(html.find(HtmlEscape(kHostileMessage)) != std::string::npos);
  CHECK(html.find(kHostileMessage) == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("jobs/x.yaml: bad") != std::string::npos);
}

TEST_CASE("while unreachable the page keeps the last known jobs and says since when") {
  auto s = SampleSnapshot();
  s.ready = false;
  s.last_error = "ray: GET /api/jobs/: connection refused";
  s.consecutive_failures = 4;
  s.last_success_ms = s.now_ms - 300000;
  const std::string html = RenderStatusPage(s, 15);
  CHECK(html.find("id=\"unready\"") != std::string::npos);
  CHECK(html.find("Not ready: last pass failed: ray: GET /api/jobs/: connection refused") !=
        std::string::npos);
  CHECK(html.find("No pass has succeeded since 2026-11-18 11:01:40Z (5 min ago); 4 failed in a "
                  "row. The jobs below are as last known, from the pass of 2026-11-18 "
                  "11:06:31Z.") != std::string::npos);
  CHECK(Occurrences(html, "<tr class=\"job\"") == s.jobs.size());

  s.unready_reason = "Git unreachable: fetch timed out";
  s.last_success_ms.reset();
  const std::string never = RenderStatusPage(s, 15);
  CHECK(never.find("Not ready: Git unreachable: fetch timed out") != std::string::npos);
  CHECK(never.find("No pass has succeeded since the daemon started") != std::string::npos);
  CHECK(RenderStatusPage(SampleSnapshot(), 15).find("id=\"unready\"") == std::string::npos);
}

TEST_CASE("each row shows its own job's spec commit, not the pass's") {
  const auto s = SampleSnapshot();
  const std::string html = RenderStatusPage(s, 0);
  const auto row = html.find("data-name=\"sft-mistral\"");
  REQUIRE(row != std::string::npos);
  const std::string line = html.substr(row, html.find("</tr>", row) - row);
  CHECK(line.find(">001122334455<") != std::string::npos);
  CHECK(line.find(s.spec_commit.substr(0, 12)) == std::string::npos);
}

TEST_CASE("one invalid spec is a warning on a ready page and an error on its row") {
  rg::server::testing::LoopScenario loop;
  rg::server::testing::RunInvalidSpec(loop);
  const auto s = loop.Snapshot();
  CHECK(s.ready);
  CHECK(DaemonStateText(s) == "ready");
  const std::string html = RenderStatusPage(s, 0);
  CHECK(html.find("class=\"state state-ready\"") != std::string::npos);
  CHECK(html.find("id=\"unready\"") == std::string::npos);
  CHECK(html.find("<li data-kind=\"invalid_spec\">") != std::string::npos);
  const auto row = html.find("data-name=\"broken-spec\" data-phase=\"Invalid\"");
  REQUIRE(row != std::string::npos);
  CHECK(html.find("unknown key &quot;entrypint&quot;", row) < html.find("</tr>", row));
  CHECK(nlohmann::json::parse(RenderStatusJson(s))["state"] == "ready");
}

TEST_CASE("while Ray is unreachable the page lists the last known jobs and says since when") {
  rg::server::testing::LoopScenario loop;
  rg::server::testing::RunRayUnreachable(loop);
  const auto s = loop.Snapshot();
  CHECK_FALSE(s.ready);
  REQUIRE(s.unreachable_since_ms);
  CHECK(s.unreachable == "Ray");
  CHECK(s.jobs.size() == 5);
  const std::string html = RenderStatusPage(s, 0);
  CHECK(html.find("No jobs") == std::string::npos);
  CHECK(Occurrences(html, "<tr class=\"job\"") == 5);
  const std::string since = rg::core::FormatRfc3339Millis(*s.unreachable_since_ms);
  CHECK(html.find("Cannot reach Ray since " + since.substr(0, 10) + " " + since.substr(11, 8)) !=
        std::string::npos);
  CHECK(html.find("class=\"state state-failing\"") != std::string::npos);
  const auto j = nlohmann::json::parse(RenderStatusJson(s));
  CHECK(j["unreachable"] == "Ray");
  CHECK(j["unreachable_since"] == since);
  CHECK(j["jobs"].size() == 5);

  // Since the first pass in a row that could not reach Ray; gone once one does.
  REQUIRE(s.last_pass_start_ms);
  CHECK(*s.unreachable_since_ms < *s.last_pass_start_ms);
  loop.Pass(rg::server::testing::PlannedPass());
  const auto back = loop.Snapshot();
  CHECK(back.unreachable.empty());
  CHECK_FALSE(back.unreachable_since_ms);
  CHECK(RenderStatusPage(back, 0).find("id=\"unready\"") == std::string::npos);
}

TEST_CASE("the ledger's jobs are shown when Ray was never reached") {
  rg::server::testing::LoopScenario loop;
  auto failed = rg::server::testing::RayUnreachablePass();
  failed.ledger_records = SampleSnapshot().jobs;
  loop.Pass(failed);
  const auto s = loop.Snapshot();
  CHECK(s.jobs.size() == 5);
  CHECK(s.jobs_from_ledger);
  CHECK(RenderStatusPage(s, 0).find("from the status branch") != std::string::npos);
  rg::server::testing::LoopScenario never;
  never.Pass(rg::server::testing::RayUnreachablePass());
  CHECK(RenderStatusPage(never.Snapshot(), 0).find("No jobs known yet.") != std::string::npos);
}

TEST_CASE("each job name links to its own page") {
  const std::string html = RenderStatusPage(SampleSnapshot(), 0);
  CHECK(html.find("<a class=\"job-link\" href=\"jobs/ppo-qwen\">ppo-qwen</a>") !=
        std::string::npos);
}

TEST_CASE("FindJob finds known jobs by valid names only") {
  const auto s = SampleSnapshot();
  REQUIRE(FindJob(s, "ppo-qwen") != nullptr);
  CHECK(FindJob(s, "ppo-qwen")->name == "ppo-qwen");
  CHECK(FindJob(s, "no-such-job") == nullptr);
  CHECK(FindJob(s, "<script>") == nullptr);
  CHECK(FindJob(s, "../etc") == nullptr);
  CHECK(FindJob(s, "") == nullptr);
}

TEST_CASE("the job page shows every attempt, the links and escapes hostile text") {
  const auto s = SampleSnapshot();
  const auto* job = FindJob(s, "grpo-llama");
  REQUIRE(job != nullptr);
  const std::string html = RenderJobPage(s, *job, 15);
  CHECK(html.find(kHostileMessage) == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(Occurrences(html, "<tr class=\"attempt\"") == 2);
  CHECK(html.find("data-submission-id=\"grpo-llama-77aa01bc2d\"") != std::string::npos);
  CHECK(html.find("href=\"http://127.0.0.1:8265/#/jobs/grpo-llama-77aa01bc2d-2\"") !=
        std::string::npos);
  CHECK(html.find("href=\"https://git.example.com/ml/training-jobs/blob/" + job->spec_commit +
                  "/jobs/grpo-llama.yaml\"") != std::string::npos);
  CHECK(html.find("<span id=\"job-name\">grpo-llama</span>") != std::string::npos);
  CHECK(html.find("href=\"../\"") != std::string::npos);

  const auto* bad = FindJob(s, "broken-spec");
  REQUIRE(bad != nullptr);
  const std::string invalid = RenderJobPage(s, *bad, 0);
  CHECK(invalid.find("id=\"job-errors\"") != std::string::npos);
  CHECK(invalid.find("unknown key &quot;entrypint&quot;") != std::string::npos);
  CHECK(invalid.find("No attempts yet.") != std::string::npos);
}

TEST_CASE("the job page shows the code of the latest run: its folder at its commit, and its tree") {
  auto s = SampleSnapshot();
  const std::string tree(40, 'a');
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  for (auto& job : s.jobs) {
    if (job.name == "grpo-llama") job.code.set({"src/<trainer> v2", tree, commit});
  }
  const auto* job = FindJob(s, "grpo-llama");
  REQUIRE(job != nullptr);
  const std::string html = RenderJobPage(s, *job, 0);
  CHECK(html.find("id=\"job-code\"") != std::string::npos);
  CHECK(html.find("href=\"https://git.example.com/ml/training-jobs/tree/" + commit +
                  "/src/%3Ctrainer%3E%20v2\"") != std::string::npos);
  CHECK(html.find(">src/&lt;trainer&gt; v2</a>") != std::string::npos);
  CHECK(html.find("title=\"" + tree + "\">tree aaaaaaaaaaaa</span>") != std::string::npos);
  CHECK(html.find("title=\"" + commit + "\">at 0123456789ab</span>") != std::string::npos);
  const auto j = nlohmann::json::parse(RenderJobJson(s, *job));
  CHECK(j["links"]["code"] ==
        "https://git.example.com/ml/training-jobs/tree/" + commit + "/src/%3Ctrainer%3E%20v2");

  // A job without code has no such row; a local repository has no web link, only the folder.
  const auto* other = FindJob(s, "broken-spec");
  REQUIRE(other != nullptr);
  CHECK(RenderJobPage(s, *other, 0).find("job-code") == std::string::npos);
  CHECK(nlohmann::json::parse(RenderJobJson(s, *other))["links"]["code"].is_null());
  s.repo_url = "/srv/git/training-jobs.git";
  const std::string local = RenderJobPage(s, *FindJob(s, "grpo-llama"), 0);
  CHECK(local.find("id=\"job-code\">src/&lt;trainer&gt; v2 <span") != std::string::npos);
  CHECK(local.find("/tree/") == std::string::npos);
}

TEST_CASE("the job JSON carries the record, its attempts and its links") {
  const auto s = SampleSnapshot();
  const auto j = nlohmann::json::parse(RenderJobJson(s, *FindJob(s, "grpo-llama")));
  CHECK(j["job"]["name"] == "grpo-llama");
  CHECK(j["job"]["phase"] == "Failed");
  CHECK(j["job"]["message"] == kHostileMessage);
  REQUIRE(j["job"]["attempts"].size() == 2);
  CHECK(j["job"]["attempts"][0]["submission_id"] == "grpo-llama-77aa01bc2d");
  CHECK(j["links"]["dashboard"] == "http://127.0.0.1:8265/#/jobs/grpo-llama-77aa01bc2d-2");
  CHECK(j["links"]["spec_file"].get<std::string>().starts_with(
      "https://git.example.com/ml/training-jobs/blob/"));
  CHECK(j["state"] == "ready");
  CHECK(j["unreachable"].is_null());
}

TEST_CASE("no control character, bidi control or line break of a value reaches the pages raw") {
  const std::string hostile =
      "x\n## forged\r\x1b[31mred \xC2\x9B \xE2\x80\xAE"
      "rtl </td><b>";
  auto s = SampleSnapshot();
  for (auto& j : s.jobs) {
    j.message = hostile;
    j.errors = {hostile};
    j.spec_path = "jobs/" + hostile + ".yaml";
    for (auto& a : j.attempts) a.message = hostile;
  }
  s.instance = hostile;
  s.last_error = hostile;
  for (const std::string& html : {RenderStatusPage(s, 15), RenderJobPage(s, s.jobs[2], 15)}) {
    CHECK(html.find('\x1b') == std::string::npos);
    CHECK(html.find('\r') == std::string::npos);
    CHECK(html.find("\xC2\x9B") == std::string::npos);
    CHECK(html.find("\xE2\x80\xAE") == std::string::npos);
    CHECK(html.find("</td><b>") == std::string::npos);
    CHECK(html.find("x\\n## forged\\r\\x1b[31mred \\u009b \\u202ertl &lt;/td&gt;&lt;b&gt;") !=
          std::string::npos);
  }
}

TEST_CASE("the job page names how the latest attempt failed, whose failure it was, and the retry") {
  auto s = SampleSnapshot();
  for (auto& job : s.jobs) {
    if (job.name != "grpo-llama") continue;
    auto& latest = job.attempts.back();
    latest.status = rg::core::RayJobStatus::kFailed;
    latest.phase = rg::core::Phase::kFailed;
    latest.failure_class = rg::core::FailureClass::kInfra;
    latest.ending.mutable_get().error_type = "JOB_SUPERVISOR_ACTOR_DIED";
    job.submission_id = latest.submission_id;
    job.phase = rg::core::Phase::kPending;
    job.message = "retrying after JOB_SUPERVISOR_ACTOR_DIED, 1 of 3: attempt 3 waits 30s after " +
                  latest.submission_id + " ended";
  }
  const auto* job = FindJob(s, "grpo-llama");
  REQUIRE(job != nullptr);
  const std::string html = RenderJobPage(s, *job, 0);
  CHECK(html.find("<dd id=\"job-failure\">JOB_SUPERVISOR_ACTOR_DIED (infra)</dd>") !=
        std::string::npos);
  CHECK(html.find("<td class=\"failure\">JOB_SUPERVISOR_ACTOR_DIED (infra)</td>") !=
        std::string::npos);
  CHECK(html.find(">retrying after JOB_SUPERVISOR_ACTOR_DIED, 1 of 3: attempt 3 waits 30s after ") !=
        std::string::npos);
  const auto j = nlohmann::json::parse(RenderJobJson(s, *job));
  CHECK(j["job"]["attempts"].back()["failure_class"] == "infra");
  CHECK(j["job"]["attempts"].back()["error_type"] == "JOB_SUPERVISOR_ACTOR_DIED");
}
