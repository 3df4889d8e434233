#include "reconciler/cli/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "reconciler/core/escape.h"
#include "reconciler/core/time_format.h"

namespace rg::cli {
namespace {

bool g_json_logs = false;

// The secrets every log line is redacted with; grows as passes learn the desired state's.
std::mutex g_log_secrets_mu;
core::Redactor g_log_secrets;

// Each line of `text` as EscapeText shows it: a message of ours keeps its line breaks, and no
// value in it reaches the terminal raw.
std::string EscapeLines(std::string_view text) {
  std::string out;
  for (size_t from = 0; from <= text.size();) {
    const size_t eol = text.find('\n', from);
    out += core::EscapeText(text.substr(from, eol == std::string_view::npos ? eol : eol - from));
    if (eol == std::string_view::npos) break;
    out += '\n';
    from = eol + 1;
  }
  return out;
}

}  // namespace

void AddLogSecrets(const core::Redactor& secrets) {
  std::lock_guard lock(g_log_secrets_mu);
  g_log_secrets.Merge(secrets);
}

std::string RedactForOutput(std::string_view text) {
  std::lock_guard lock(g_log_secrets_mu);
  return g_log_secrets.Apply(text);
}

void ConfigureLogging(const GlobalOptions& global) {
  g_json_logs = global.log_format == "json";
  // Configured again in one process (commands run in process by tests), the logger is replaced.
  spdlog::drop("ray-gitops");
  auto logger = spdlog::stderr_logger_mt("ray-gitops");
  logger->set_level(spdlog::level::from_str(global.log_level));
  if (g_json_logs) {
    logger->set_pattern("%v");
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  }
  spdlog::set_default_logger(logger);
}

void LogEvent(std::string_view level, std::string_view message,
              const std::map<std::string, std::string>& fields) {
  const spdlog::level::level_enum lvl = spdlog::level::from_str(std::string(level));
  if (!spdlog::default_logger()->should_log(lvl)) return;
  // Redacted before it is formatted, so a secret escaped as JSON is still found.
  const std::string safe_message = RedactForOutput(message);
  std::map<std::string, std::string> safe_fields;
  for (const auto& [k, v] : fields) safe_fields[k] = RedactForOutput(v);
  std::string line;
  if (g_json_logs) {
    nlohmann::json j;
    const auto now = std::chrono::system_clock::now();
    j["time"] = core::FormatRfc3339Seconds(now);
    j["level"] = std::string(level);
    j["msg"] = safe_message;
    for (const auto& [k, v] : safe_fields) j[k] = v;
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    // A log line is one line: a value in it cannot start another or reach the terminal raw.
    line = core::EscapeText(safe_message);
    for (const auto& [k, v] : safe_fields) {
      line += " " + k + "=";
      line += core::EscapeText(
          v.find_first_of(" \t\"") == std::string::npos
              ? v
              : nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  spdlog::log(lvl, "{}", line);
}

void Report(std::string_view message) {
  std::cerr << "ray-gitops: " << EscapeLines(RedactForOutput(message)) << "\n";
}

int Fail(std::string_view message) {
  Report(message);
  return 1;
}

void ReportDiagnostics(const std::vector<core::Diagnostic>& diagnostics) {
  for (const core::Diagnostic& d : diagnostics) std::cerr << RedactForOutput(d.ToString()) << "\n";
}

}  // namespace rg::cli
