#pragma once
// Renders what the daemon knows as JSON (/api/v1/status) and as one self-contained HTML page
// (/): inline CSS, no scripts, no external assets. Every value from specs, Ray or Git is
// escaped. Pure functions of the snapshot.

#include <string>
#include <string_view>

#include "reconciler/engine/daemon_snapshot.h"

namespace rg::server {

// Escapes & < > " ' for text and attribute values.
std::string HtmlEscape(std::string_view text);

// "ready", "starting", "failing: <error>", "blocked: <reason>", "stale", "stopping".
std::string DaemonStateText(const engine::DaemonSnapshot& snapshot);

// `<dashboard_url>/#/jobs/<submission_id>`; empty when either is empty.
std::string DashboardJobLink(std::string_view dashboard_url, std::string_view submission_id);

// The /api/v1/status document; times as RFC 3339 UTC strings, absent values as null.
std::string RenderStatusJson(const engine::DaemonSnapshot& snapshot);

// The status page; `refresh_seconds` > 0 adds a meta refresh.
std::string RenderStatusPage(const engine::DaemonSnapshot& snapshot, int refresh_seconds);

}  // namespace rg::server
