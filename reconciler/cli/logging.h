#pragma once
// What the commands say on stderr, in three shapes and no others: the log (spdlog, as text or
// one JSON object per line), a command's own message ("ray-gitops: ..."), and problems in
// input files as diagnostics ("path:line:col: error: ..."). All of it is redacted with the
// secrets the process has learnt.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/cli/global_options.h"
#include "reconciler/core/diagnostic.h"
#include "reconciler/core/redaction.h"

namespace rg::cli {

// Adds secrets that every later log line is redacted with (thread-safe; never removed).
void AddLogSecrets(const core::Redactor& secrets);
// `text` with every secret known to the log redactor replaced.
std::string RedactForOutput(std::string_view text);

// spdlog on stderr at --log-level; with --log-format json one JSON object per line.
void ConfigureLogging(const GlobalOptions& global);

// One log line: the message and key=value fields (text), or {"time","level","msg",fields...}
// (json). `level` is "debug", "info", "warn" or "error".
void LogEvent(std::string_view level, std::string_view message,
              const std::map<std::string, std::string>& fields = {});

// "ray-gitops: <message>" on stderr: what a command says about itself (a failure, a note).
void Report(std::string_view message);
// Report(message), then the exit status 1, for `return Fail(...)`.
int Fail(std::string_view message);
// One "path:line:col: error: ..." line per diagnostic on stderr, in the order given.
void ReportDiagnostics(const std::vector<core::Diagnostic>& diagnostics);

}  // namespace rg::cli
