#pragma once
// The commands' log: spdlog on stderr, as text or one JSON object per line, every line
// redacted with the secrets the process has learnt.

#include <map>
#include <string>
#include <string_view>

#include "reconciler/cli/global_options.h"
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

}  // namespace rg::cli
