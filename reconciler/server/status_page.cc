#include "reconciler/server/status_page.h"

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "reconciler/core/escape.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/status_fields.h"
#include "reconciler/core/status_markdown.h"
#include "reconciler/core/status_model.h"
#include "reconciler/core/time_format.h"

namespace rg::server {

namespace {

using core::Phase;

// A core::Value as JSON; the status records' one encoder (core/status_fields) decides the keys.
// The document is written by nlohmann's writer rather than core::ToPrettyJson because a Ray
// message may hold invalid UTF-8, which this writer replaces instead of passing it through.
nlohmann::json ToJson(const core::Value& v) {
  if (v.is_bool()) return v.as_bool();
  if (v.is_int()) return v.as_int();
  if (v.is_double()) return v.as_double();
  if (v.is_string()) return v.as_string();
  if (v.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const core::Value& item : v.as_array()) out.push_back(ToJson(item));
    return out;
  }
  if (v.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, item] : v.as_object()) out[key] = ToJson(item);
    return out;
  }
  return nullptr;
}

nlohmann::json JobJson(const core::StatusRecord& r) { return ToJson(core::StatusRecordValue(r)); }

nlohmann::json WarningsJson(const engine::DaemonSnapshot& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : s.warnings) out.push_back({{"kind", w.kind}, {"message", w.message}});
  return out;
}

std::map<Phase, int> CountByPhase(const engine::DaemonSnapshot& s) {
  std::map<Phase, int> counts;
  for (const auto& job : s.jobs) ++counts[job.phase];
  return counts;
}

// "2026-11-22 09:11:31Z": RFC 3339 without the milliseconds, easier to read in a table.
std::string HumanTime(const std::optional<int64_t>& ms) {
  if (!ms) return "";
  std::string t = core::FormatRfc3339Millis(*ms);
  if (t.size() > 10 && t[10] == 'T') t[10] = ' ';
  if (const auto dot = t.find('.'); dot != std::string::npos) {
    t.erase(dot, t.size() - dot - 1);
  }
  return t;
}

std::string Ago(const engine::DaemonSnapshot& s, const std::optional<int64_t>& ms) {
  if (!ms || s.now_ms <= 0) return "";
  const int64_t sec = (s.now_ms - *ms) / 1000;
  if (sec < 0) return "in " + std::to_string(-sec) + " s";
  if (sec < 120) return std::to_string(sec) + " s ago";
  if (sec < 7200) return std::to_string(sec / 60) + " min ago";
  return std::to_string(sec / 3600) + " h ago";
}

// Where the jobs shown come from, for the notices.
std::string JobsAsOfText(const engine::DaemonSnapshot& s) {
  if (!s.jobs_as_of_ms) return "No jobs are known yet.";
  std::string from = s.jobs_from_ledger ? "the status branch, read at " : "the pass of ";
  return "The jobs below are as last known, from " + from + HumanTime(s.jobs_as_of_ms) + ".";
}

std::string StateClass(const engine::DaemonSnapshot& s) {
  const std::string text = DaemonStateText(s);
  return text.substr(0, text.find(':'));
}

std::string PhaseClass(Phase p) {
  std::string name(core::PhaseName(p));
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return "phase-" + name;
}

// Percent-encodes everything but unreserved characters (and '/' when `keep_slash`).
std::string PercentEncode(std::string_view text, bool keep_slash = false) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::string ShortCommit(std::string_view commit) { return std::string(commit.substr(0, 12)); }

constexpr std::string_view kStyle = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1f2328; background: #f6f8fa; }
header { background: #24292f; color: #f6f8fa; padding: 16px 24px; }
header h1 { margin: 0 0 8px 0; font-size: 20px; font-weight: 600; }
header h1 .instance { color: #8c959f; font-weight: 400; }
main { padding: 16px 24px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 8px 0 0;
          font-size: 14px; }
dl.meta dt { color: #8c959f; }
dl.meta dd { margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.state { display: inline-block; padding: 4px 10px; border-radius: 12px; font-weight: 600;
         font-size: 14px; }
.state-ready { background: #1a7f37; color: #fff; }
.state-failing { background: #cf222e; color: #fff; }
.state-blocked { background: #bc4c00; color: #fff; }
.state-starting, .state-stale, .state-stopping { background: #6e7781; color: #fff; }
.counts { display: flex; flex-wrap: wrap; gap: 8px; margin: 0 0 16px; padding: 0;
          list-style: none; }
.counts li { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: 6px 12px;
             font-size: 14px; }
.counts b { font-size: 16px; margin-left: 6px; }
.dot { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 6px; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 14px; }
th, td { border: 1px solid #d0d7de; padding: 6px 8px; text-align: left; vertical-align: top; }
th { background: #eaeef2; }
td.name, td.nowrap { white-space: nowrap; }
td.name { font-weight: 600; }
td.mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
td.message { max-width: 36em; white-space: pre-wrap; word-break: break-word; }
.phase { display: inline-block; padding: 2px 8px; border-radius: 10px; color: #fff;
         font-weight: 600; font-size: 12px; }
.phase-pending { background: #9a6700; }
.phase-running { background: #0969da; }
.phase-succeeded { background: #1a7f37; }
.phase-failed { background: #cf222e; }
.phase-stopped { background: #6e7781; }
.phase-suspended { background: #8250df; }
.phase-lost { background: #bc4c00; }
.phase-invalid { background: #a40e26; }
.phase-blocked { background: #953800; }
.phase-conflict { background: #bf3989; }
.phase-removed { background: #57606a; }
.phase-deadlineexceeded { background: #a40e26; }
.phase-waiting { background: #4d2d00; }
.empty { color: #6e7781; font-style: italic; }
.notice { border: 1px solid; border-radius: 6px; padding: 8px 12px; margin: 0 0 16px;
          font-size: 14px; }
.notice h2 { font-size: 15px; margin: 0 0 6px; }
.notice ul { margin: 0; padding-left: 20px; }
.notice.unreachable { background: #ffebe9; border-color: #ff8182; }
.notice.warnings { background: #fff8c5; border-color: #d4a72c; }
.notice .kind { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-weight: 600; }
footer { padding: 8px 24px 24px; color: #6e7781; font-size: 12px; }
header h1 a.home { color: inherit; text-decoration: none; }
td.name a { color: #0969da; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 6px 16px; margin: 0 0 16px;
           background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: 12px 16px;
           font-size: 14px; }
dl.facts dt { color: #57606a; }
dl.facts dd { margin: 0; white-space: pre-wrap; word-break: break-word; }
main h2 { font-size: 16px; }
)css";

// While Git or Ray cannot be reached the jobs shown are the last known ones: say so, and since
// when. Also any other reason the daemon is not ready.
std::string UnreadyNotice(const engine::DaemonSnapshot& s) {
  const bool unready =
      !s.ready && !s.shutting_down && (!s.unready_reason.empty() || !s.last_error.empty());
  if (s.unreachable.empty() && !unready) return "";
  std::string title;
  if (!s.unreachable.empty()) {
    title = "Cannot reach " + s.unreachable;
    if (s.unreachable_since_ms) {
      title += " since " + HumanTime(s.unreachable_since_ms) + " (" +
               Ago(s, s.unreachable_since_ms) + ")";
    }
  } else {
    title = "Not ready: " +
            (s.unready_reason.empty() ? "last pass failed: " + s.last_error : s.unready_reason);
  }
  std::string body;
  if (!s.unreachable.empty() && !s.last_error.empty()) body = "Last error: " + s.last_error + ". ";
  body += s.last_success_ms ? "No pass has succeeded since " + HumanTime(s.last_success_ms) + " (" +
                                  Ago(s, s.last_success_ms) + ")"
                            : std::string("No pass has succeeded since the daemon started");
  if (s.consecutive_failures > 0) {
    body += "; " + std::to_string(s.consecutive_failures) + " failed in a row";
  }
  body += ". " + JobsAsOfText(s);
  return R"(<section class="notice unreachable" id="unready"><h2>)" + HtmlEscape(title) +
         "</h2><p>" + HtmlEscape(body) + "</p></section>\n";
}

std::string WarningsBox(const engine::DaemonSnapshot& s) {
  if (s.warnings.empty()) return "";
  std::string h = "<section class=\"notice warnings\" id=\"warnings\"><h2>Warnings</h2><ul>\n";
  for (const auto& w : s.warnings) {
    h += R"(<li data-kind=")" + HtmlEscape(w.kind) + R"("><span class="kind">)" +
         HtmlEscape(w.kind) + "</span>: " + HtmlEscape(w.message) + "</li>\n";
  }
  return h + "</ul></section>\n";
}

}  // namespace

std::string HtmlEscape(std::string_view text) { return core::EscapeHtml(text); }

std::string DaemonStateText(const engine::DaemonSnapshot& s) {
  if (s.shutting_down) return "stopping";
  if (s.ready) return s.blocked ? "blocked: " + s.blocked_reason : std::string("ready");
  // Not ready. Only an environment failure (Git or Ray unreachable, the ledger of another
  // cluster) is "failing": an invalid spec or cluster file is a warning of a ready daemon.
  if (s.consecutive_failures > 0 && !s.last_error.empty()) return "failing: " + s.last_error;
  if (!s.last_pass_end_ms && !s.last_success_ms) return "starting";
  return "stale";
}

std::string DashboardJobLink(std::string_view dashboard_url, std::string_view submission_id) {
  if (dashboard_url.empty() || submission_id.empty()) return "";
  while (!dashboard_url.empty() && dashboard_url.back() == '/') dashboard_url.remove_suffix(1);
  return std::string(dashboard_url) + "/#/jobs/" + std::string(submission_id);
}

std::string RenderStatusJson(const engine::DaemonSnapshot& s) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& job : s.jobs) jobs.push_back(JobJson(job));
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& [phase, n] : CountByPhase(s)) counts[std::string(core::PhaseName(phase))] = n;
  const nlohmann::json doc = {
      {"now", s.now_ms > 0 ? nlohmann::json(core::FormatRfc3339Millis(s.now_ms)) : nullptr},
      {"instance", s.instance},
      {"repo_url", s.repo_url},
      {"branch", s.branch},
      {"status_branch", s.status_branch},
      {"ray_address", s.ray_address},
      {"dashboard_url", s.dashboard_url},
      {"state", DaemonStateText(s)},
      {"ready", s.ready},
      {"last_pass_start", ToJson(core::TimeOrNull(s.last_pass_start_ms))},
      {"last_pass_end", ToJson(core::TimeOrNull(s.last_pass_end_ms))},
      {"last_success", ToJson(core::TimeOrNull(s.last_success_ms))},
      {"last_error", ToJson(core::StringOrNull(s.last_error))},
      {"consecutive_failures", s.consecutive_failures},
      {"next_pass", ToJson(core::TimeOrNull(s.next_pass_ms))},
      {"pass_in_flight", s.pass_in_flight},
      {"shutting_down", s.shutting_down},
      {"spec_commit", ToJson(core::StringOrNull(s.spec_commit))},
      {"status_commit", ToJson(core::StringOrNull(s.status_commit))},
      {"blocked", s.blocked},
      {"blocked_reason", ToJson(core::StringOrNull(s.blocked_reason))},
      {"unready_reason", ToJson(core::StringOrNull(s.unready_reason))},
      {"unreachable", ToJson(core::StringOrNull(s.unreachable))},
      {"unreachable_since", ToJson(core::TimeOrNull(s.unreachable_since_ms))},
      {"jobs_as_of", ToJson(core::TimeOrNull(s.jobs_as_of_ms))},
      {"jobs_from_ledger", s.jobs_from_ledger},
      {"warnings", WarningsJson(s)},
      {"counts", std::move(counts)},
      {"jobs", std::move(jobs)},
  };
  // Invalid UTF-8 in a message (Ray passes driver output through) must not fail the endpoint.
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

// <head>, and the header's title with the daemon's state.
std::string PageTop(const engine::DaemonSnapshot& s, int refresh_seconds) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  if (refresh_seconds > 0) {
    h += R"(<meta http-equiv="refresh" content=")" + std::to_string(refresh_seconds) + "\">\n";
  }
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<title>ray-gitops";
  if (!s.instance.empty()) h += " \xE2\x80\x94 " + HtmlEscape(s.instance);
  h += "</title>\n<style>";
  h += kStyle;
  h += "</style>\n</head>\n<body>\n<header>\n<h1>ray-gitops";
  if (!s.instance.empty()) h += R"( <span class="instance">)" + HtmlEscape(s.instance) + "</span>";
  h += "</h1>\n";
  h += R"(<div id="state" class="state state-)" + HtmlEscape(StateClass(s)) + R"(">)" +
       HtmlEscape(DaemonStateText(s)) + "</div>\n";
  return h;
}

// The header's list: repository, branches, commits, passes, Ray.
std::string MetaList(const engine::DaemonSnapshot& s) {
  std::string h = "<dl class=\"meta\">\n";
  const auto row = [&](std::string_view label, std::string_view id, const std::string& value) {
    h += "<dt>" + HtmlEscape(label) + R"(</dt><dd id=")" + HtmlEscape(id) + R"(">)" +
         HtmlEscape(value) + "</dd>\n";
  };
  row("Repository", "repo", s.repo_url);
  row("Branch", "branch", s.branch);
  row("Status branch", "status-branch", s.status_branch);
  row("Desired-state commit", "spec-commit", s.spec_commit);
  row("Status commit", "status-commit", s.status_commit);
  std::string last_pass = HumanTime(s.last_pass_end_ms);
  if (!last_pass.empty()) last_pass += " (" + Ago(s, s.last_pass_end_ms) + ")";
  if (s.pass_in_flight) last_pass += last_pass.empty() ? "one running now" : "; one running now";
  row("Last pass", "last-pass", last_pass.empty() ? "none yet" : last_pass);
  row("Last success", "last-success",
      s.last_success_ms ? HumanTime(s.last_success_ms) + " (" + Ago(s, s.last_success_ms) + ")"
                        : "none yet");
  if (s.consecutive_failures > 0) {
    row("Failures in a row", "failures", std::to_string(s.consecutive_failures));
  }
  if (s.next_pass_ms) row("Next pass", "next-pass", HumanTime(s.next_pass_ms));
  row("Ray", "ray", s.ray_address);
  if (s.dashboard_url != s.ray_address &&
      (s.dashboard_url.starts_with("http://") || s.dashboard_url.starts_with("https://"))) {
    row("Dashboard", "dashboard", s.dashboard_url);
  }
  return h + "</dl>\n";
}

std::string PhaseCounts(const engine::DaemonSnapshot& s) {
  std::string h = "<ul class=\"counts\" id=\"counts\">\n";
  h += "<li>Jobs<b>" + std::to_string(s.jobs.size()) + "</b></li>\n";
  const auto counts = CountByPhase(s);
  for (const Phase p : core::kAllPhases) {
    const auto it = counts.find(p);
    if (it == counts.end()) continue;
    h += R"(<li data-phase=")" + HtmlEscape(core::PhaseName(p)) + R"("><span class="dot )" +
         PhaseClass(p) + R"("></span>)" + HtmlEscape(core::PhaseName(p)) + "<b>" +
         std::to_string(it->second) + "</b></li>\n";
  }
  return h + "</ul>\n";
}

// The submission id, linked to the Ray dashboard when there is a web address for it.
std::string SubmissionCell(const engine::DaemonSnapshot& s, const core::StatusRecord& job) {
  const std::string link = JobDashboardLink(s, job);
  std::string h = R"(<td class="mono nowrap">)";
  if (!job.submission_id.empty() && !link.empty()) {
    h += R"(<a class="dashboard-link" href=")" + HtmlEscape(link) + R"(">)" +
         HtmlEscape(job.submission_id) + "</a>";
  } else {
    h += HtmlEscape(job.submission_id);
  }
  return h + "</td>";
}

std::string JobRow(const engine::DaemonSnapshot& s, const core::StatusRecord& job) {
  const auto e = [](std::string_view v) { return HtmlEscape(v); };
  const std::string phase(core::PhaseName(job.phase));
  std::string h =
      R"(<tr class="job" data-name=")" + e(job.name) + R"(" data-phase=")" + e(phase) + R"(">)";
  h += R"(<td class="name" title=")" + e(job.spec_path) + R"("><a class="job-link" href="jobs/)" +
       e(PercentEncode(job.name)) + R"(">)" + e(job.name) + "</a></td>";
  h += R"(<td><span class="phase )" + PhaseClass(job.phase) + R"(">)" +
       e(core::PhaseLabel(job.phase, job.message)) + "</span></td>";
  h += SubmissionCell(s, job);
  h += "<td>" + (job.attempt ? std::to_string(*job.attempt) : std::string()) + "</td>";
  h += "<td>" +
       (job.submission_id.empty() ? std::string() : e(core::RayJobStatusName(job.status))) +
       "</td>";
  h += R"(<td class="mono" title=")" + e(job.spec_commit) + R"(">)" +
       e(ShortCommit(job.spec_commit)) + "</td>";
  h += "<td>" + e(HumanTime(job.start_time_ms)) + "</td>";
  h += "<td>" + e(HumanTime(job.end_time_ms)) + "</td>";
  std::string message = job.message;
  for (const auto& err : job.errors) {
    if (!message.empty()) message += "\n";
    message += err;
  }
  h += R"(<td class="message">)" + e(message) + "</td>";
  return h + "</tr>\n";
}

std::string JobsTable(const engine::DaemonSnapshot& s) {
  if (s.jobs.empty() && !s.jobs_as_of_ms) return "<p class=\"empty\">No jobs known yet.</p>\n";
  if (s.jobs.empty()) return "<p class=\"empty\">No jobs in the desired state.</p>\n";
  std::string h =
      "<table id=\"jobs\">\n<thead><tr><th>Job</th><th>Phase</th><th>Submission</th>"
      "<th>Attempt</th><th>Ray status</th><th>Spec commit</th><th>Started</th>"
      "<th>Ended</th><th>Message</th></tr></thead>\n<tbody>\n";
  for (const auto& job : s.jobs) h += JobRow(s, job);
  return h + "</tbody>\n</table>\n";
}

}  // namespace

std::string RenderStatusPage(const engine::DaemonSnapshot& s, int refresh_seconds) {
  std::string h;
  h.reserve(8192 + s.jobs.size() * 1024);
  h += PageTop(s, refresh_seconds);
  h += MetaList(s);
  h += "</header>\n<main>\n";
  h += UnreadyNotice(s);
  h += WarningsBox(s);
  h += PhaseCounts(s);
  h += JobsTable(s);
  h += "</main>\n<footer>";
  if (s.now_ms > 0) h += "Generated " + HtmlEscape(HumanTime(s.now_ms)) + ". ";
  h += R"(JSON at <a href="api/v1/status">/api/v1/status</a>, metrics at )"
       "<a href=\"metrics\">/metrics</a>.</footer>\n</body>\n</html>\n";
  return h;
}

const core::StatusRecord* FindJob(const engine::DaemonSnapshot& s, std::string_view name) {
  if (!core::IsValidJobName(name)) return nullptr;
  for (const auto& job : s.jobs) {
    if (job.name == name) return &job;
  }
  return nullptr;
}

std::string SpecFileLink(const engine::DaemonSnapshot& s, const core::StatusRecord& job) {
  const std::string web = core::RepositoryWebUrl(s.repo_url);
  const std::string& ref = job.spec_commit.empty() ? s.branch : job.spec_commit;
  if (web.empty() || ref.empty() || job.spec_path.empty()) return "";
  return web + "/blob/" + PercentEncode(ref) + "/" + PercentEncode(job.spec_path, true);
}

std::string CodeFolderLink(const engine::DaemonSnapshot& s, const core::StatusRecord& job) {
  const std::string web = core::RepositoryWebUrl(s.repo_url);
  const core::RunCode& code = job.code.get();
  if (web.empty() || code.commit.empty() || code.folder.empty()) return "";
  return web + "/tree/" + PercentEncode(code.commit) + "/" + PercentEncode(code.folder, true);
}

std::string JobDashboardLink(const engine::DaemonSnapshot& s, const core::StatusRecord& job) {
  std::string link = DashboardJobLink(s.dashboard_url, job.submission_id);
  if (link.empty()) link = job.dashboard_url;
  if (link.starts_with("http://") || link.starts_with("https://")) return link;
  return "";
}

std::string RenderJobJson(const engine::DaemonSnapshot& s, const core::StatusRecord& job) {
  const auto or_null = [](const std::string& v) { return ToJson(core::StringOrNull(v)); };
  const nlohmann::json doc = {
      {"now", s.now_ms > 0 ? nlohmann::json(core::FormatRfc3339Millis(s.now_ms)) : nullptr},
      {"instance", s.instance},
      {"state", DaemonStateText(s)},
      {"ready", s.ready},
      {"unreachable", or_null(s.unreachable)},
      {"unreachable_since", ToJson(core::TimeOrNull(s.unreachable_since_ms))},
      {"jobs_as_of", ToJson(core::TimeOrNull(s.jobs_as_of_ms))},
      {"jobs_from_ledger", s.jobs_from_ledger},
      {"links",
       {{"dashboard", or_null(JobDashboardLink(s, job))},
        {"spec_file", or_null(SpecFileLink(s, job))},
        {"code", or_null(CodeFolderLink(s, job))}}},
      {"job", JobJson(job)},
  };
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

// "JOB_SUPERVISOR_ACTOR_DIED (infra)": how an attempt failed or was lost, and whose failure it
// was (DESIGN §3.1); empty for none.
std::string FailureText(const core::AttemptRecord* a) {
  if (a == nullptr) return "";
  std::string out = a->ending.get().error_type;
  if (a->failure_class != core::FailureClass::kNone) {
    if (!out.empty()) out += " ";
    out += "(" + std::string(core::FailureClassName(a->failure_class)) + ")";
  }
  return out;
}

// The job's facts as a definition list; links only to http(s) addresses.
std::string JobFacts(const engine::DaemonSnapshot& s, const core::StatusRecord& job) {
  const auto e = [](std::string_view v) { return HtmlEscape(v); };
  std::string h = "<dl class=\"facts\" id=\"job-facts\">\n";
  const auto row = [&](std::string_view label, std::string_view id, const std::string& html) {
    h += "<dt>" + e(label) + R"(</dt><dd id=")" + e(id) + R"(">)" + html + "</dd>\n";
  };
  const auto link = [&](const std::string& href, const std::string& text, std::string_view cls) {
    if (href.empty()) return e(text);
    return R"(<a class=")" + e(cls) + R"(" href=")" + e(href) + R"(">)" + e(text) + "</a>";
  };
  const std::string phase(core::PhaseName(job.phase));
  row("Phase", "job-phase",
      R"(<span class="phase )" + PhaseClass(job.phase) + R"(">)" +
          e(core::PhaseLabel(job.phase, job.message)) + "</span>");
  row("Message", "job-message", e(job.message));
  row("Spec", "job-spec", link(SpecFileLink(s, job), job.spec_path, "spec-link"));
  row("Spec commit", "job-spec-commit", e(job.spec_commit));
  if (!job.code.empty()) {
    // The code the latest run got: its folder (a link to it at that commit), tree and commit.
    const core::RunCode& code = job.code.get();
    row("Code", "job-code",
        link(CodeFolderLink(s, job), code.folder, "code-link") + R"( <span class="mono" title=")" +
            e(code.tree) + R"(">tree )" + e(ShortCommit(code.tree)) +
            R"(</span> <span class="mono" title=")" + e(code.commit) + R"(">at )" +
            e(ShortCommit(code.commit)) + "</span>");
  }
  row("Submission", "job-submission",
      link(JobDashboardLink(s, job), job.submission_id, "dashboard-link"));
  row("Attempt", "job-attempt", job.attempt ? std::to_string(*job.attempt) : std::string());
  row("Failure", "job-failure", e(FailureText(job.FindAttempt(job.submission_id))));
  row("Ray status", "job-ray-status",
      job.submission_id.empty() ? std::string() : e(core::RayJobStatusName(job.status)));
  row("Started", "job-start", e(HumanTime(job.start_time_ms)));
  row("Ended", "job-end", e(HumanTime(job.end_time_ms)));
  return h + "</dl>\n";
}

std::string JobErrors(const core::StatusRecord& job) {
  if (job.errors.empty()) return "";
  std::string h =
      "<section class=\"notice warnings\" id=\"job-errors\"><h2>Validation "
      "errors</h2><ul>\n";
  for (const auto& err : job.errors) h += "<li>" + HtmlEscape(err) + "</li>\n";
  return h + "</ul></section>\n";
}

std::string AttemptsTable(const core::StatusRecord& job) {
  const auto e = [](std::string_view v) { return HtmlEscape(v); };
  if (job.attempts.empty()) return "<p class=\"empty\" id=\"attempts\">No attempts yet.</p>\n";
  std::string h =
      "<table id=\"attempts\">\n<thead><tr><th>Attempt</th><th>Submission</th><th>Phase</th>"
      "<th>Ray status</th><th>Failure</th><th>Started</th><th>Ended</th><th>Stop reason</th>"
      "<th>Message</th>"
      "</tr></thead>\n<tbody>\n";
  for (const core::AttemptRecord& a : job.attempts) {
    const std::string phase(core::PhaseName(a.phase));
    h += R"(<tr class="attempt" data-submission-id=")" + e(a.submission_id) + R"(">)";
    h += "<td>" + std::to_string(a.attempt) + "</td>";
    h += R"(<td class="mono nowrap">)" + e(a.submission_id) + "</td>";
    h += R"(<td><span class="phase )" + PhaseClass(a.phase) + R"(">)" + e(phase) + "</span></td>";
    h += "<td>" + e(core::RayJobStatusName(a.status)) + "</td>";
    h += R"(<td class="failure">)" + e(FailureText(&a)) + "</td>";
    h += "<td>" + e(HumanTime(a.start_time_ms)) + "</td>";
    h += "<td>" + e(HumanTime(a.end_time_ms)) + "</td>";
    h += "<td>" + e(core::StopReasonText(a)) + "</td>";
    h += R"(<td class="message">)" + e(a.message) + "</td></tr>\n";
  }
  return h + "</tbody>\n</table>\n";
}

}  // namespace

std::string RenderJobPage(const engine::DaemonSnapshot& s, const core::StatusRecord& job,
                          int refresh_seconds) {
  const std::string name = HtmlEscape(job.name);
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  if (refresh_seconds > 0) {
    h += R"(<meta http-equiv="refresh" content=")" + std::to_string(refresh_seconds) + "\">\n";
  }
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<title>" + name + " \xE2\x80\x94 ray-gitops</title>\n<style>";
  h += kStyle;
  h += "</style>\n</head>\n<body>\n<header>\n<h1><a class=\"home\" href=\"../\">ray-gitops";
  if (!s.instance.empty()) h += R"( <span class="instance">)" + HtmlEscape(s.instance) + "</span>";
  h += "</a> / <span id=\"job-name\">" + name + "</span></h1>\n";
  h += R"(<div id="state" class="state state-)" + HtmlEscape(StateClass(s)) + R"(">)" +
       HtmlEscape(DaemonStateText(s)) + "</div>\n</header>\n<main>\n";
  h += UnreadyNotice(s);
  h += JobFacts(s, job);
  h += JobErrors(job);
  h += "<h2>Attempts</h2>\n" + AttemptsTable(job);
  h += "</main>\n<footer>";
  if (s.now_ms > 0) h += "Generated " + HtmlEscape(HumanTime(s.now_ms)) + ". ";
  h += R"(JSON at <a href="../api/v1/jobs/)" + HtmlEscape(PercentEncode(job.name)) +
       R"(">/api/v1/jobs/)" + name + "</a>.</footer>\n</body>\n</html>\n";
  return h;
}

}  // namespace rg::server
