#pragma once
// Renders what the daemon knows as JSON (/api/v1/status) and as one self-contained HTML page
// (/): inline CSS, no scripts, no external assets. Every value from specs, Ray or Git is
// escaped. Pure functions of the snapshot.

#include <string>
#include <string_view>

#include "reconciler/engine/daemon_snapshot.h"

namespace rg::server {

// A value in an element or a quoted attribute: core::EscapeHtml (control characters and bidi
// controls as escapes, & < > " ' as entities).
std::string HtmlEscape(std::string_view text);

// "ready", "starting", "failing: <error>", "blocked: <reason>", "stale", "stopping".
std::string DaemonStateText(const engine::DaemonSnapshot& snapshot);

// `<dashboard_url>/#/jobs/<submission_id>`; empty when either is empty.
std::string DashboardJobLink(std::string_view dashboard_url, std::string_view submission_id);

// The /api/v1/status document; times as RFC 3339 UTC strings, absent values as null.
std::string RenderStatusJson(const engine::DaemonSnapshot& snapshot);

// The status page; `refresh_seconds` > 0 adds a meta refresh.
std::string RenderStatusPage(const engine::DaemonSnapshot& snapshot, int refresh_seconds);

// The job of that name in the snapshot; null when there is none or `name` is not a valid job
// name (the per-job endpoints answer 404 then).
const core::StatusRecord* FindJob(const engine::DaemonSnapshot& snapshot, std::string_view name);

// The spec file on the repository's web site at the job's spec commit (else the watched
// branch): <web>/blob/<commit>/<spec path>; empty for a local repository or an unknown path.
std::string SpecFileLink(const engine::DaemonSnapshot& snapshot, const core::StatusRecord& job);

// The code folder of the job's latest run on the repository's web site, at the commit its tree
// was taken from: <web>/tree/<commit>/<folder>; empty for a job without code or a local
// repository.
std::string CodeFolderLink(const engine::DaemonSnapshot& snapshot, const core::StatusRecord& job);

// The latest run in the Ray dashboard (--dashboard-url, else the record's dashboard_url);
// empty unless it is an http(s) address.
std::string JobDashboardLink(const engine::DaemonSnapshot& snapshot, const core::StatusRecord& job);

// /api/v1/jobs/<name>: {"job": the record as /api/v1/status lists it, "links": {"dashboard",
// "spec_file"}, "jobs_as_of", "jobs_from_ledger", "unreachable", "unreachable_since"}.
std::string RenderJobJson(const engine::DaemonSnapshot& snapshot, const core::StatusRecord& job);

// /jobs/<name>: the job's phase, message, spec, links, validation errors and every attempt.
std::string RenderJobPage(const engine::DaemonSnapshot& snapshot, const core::StatusRecord& job,
                          int refresh_seconds);

}  // namespace rg::server
