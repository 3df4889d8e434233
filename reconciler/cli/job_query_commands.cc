// status, stop, logs and list against a Ray head (docs/operations.md). status, stop and logs take a
// submission id or Ray job id, or the name of a job ray-gitops submitted, which means that
// name's latest run (core::FindJob). Output for people goes to stdout; notes and what went
// wrong go to stderr prefixed "ray-gitops: ". Everything printed is redacted. Exit status 0 on
// success, 1 on any error.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/cli/job_commands.h"
#include "reconciler/cli/logging.h"
#include "reconciler/cli/pass_runner.h"
#include "reconciler/cli/ray_client_flags.h"
#include "reconciler/core/escape.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/job_lookup.h"
#include "reconciler/core/ray_job.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/render.h"
#include "reconciler/core/text_table.h"
#include "reconciler/core/time_format.h"
#include "reconciler/core/value.h"
#include "reconciler/engine/submit_attempt.h"
#include "reconciler/ports/job_server.h"

namespace rg::cli {
namespace {

// The flags of status, stop, logs and list.
struct QueryFlags {
  std::string job;       // the positional: an id or a name
  std::string config;    // a cluster file whose address is the last fallback
  std::string instance;  // --instance: a name means a run of this instance
  std::string format;    // --format / -o
  bool follow = false;
  int tail = -1;
};

struct Connection {
  std::unique_ptr<adapters::RayHttpJobServer> server;
  std::string where;  // "Ray at <address without credentials>", for messages
};

core::Result<Connection> Connect(const GlobalOptions& global, const std::string& config_path) {
  core::Result<std::string> fallback = AddressFromConfig(config_path);
  if (!fallback.ok()) return fallback.error();
  core::Result<adapters::RayClientOptions> options = ResolveRayFromGlobal(
      global, *fallback, "pass --config with a cluster file that has an address",
      AddressTrust::kOperator);
  if (!options.ok()) return options.error();
  // What these commands print goes through the one redaction step (RedactForOutput).
  AddLogSecrets(ProcessSecrets(*options, nullptr));
  Connection connection;
  connection.where = "Ray at " + core::StripUrlCredentials(options->address);
  connection.server = std::make_unique<adapters::RayHttpJobServer>(std::move(*options));
  return connection;
}

// The job the positional names. An id is asked for directly, so that it costs no job list;
// only a name lists every job.
core::Result<core::FoundJob> LookUp(ports::JobServer& server, const QueryFlags& flags,
                                    const std::string& where) {
  core::Result<core::RayJob> direct = server.Get(flags.job);
  if (direct.ok()) {
    core::FoundJob found;
    found.job = std::move(*direct);
    return found;
  }
  if (!direct.error().IsNotFound()) return direct.error();
  core::Result<std::vector<core::RayJob>> jobs = server.List();
  if (!jobs.ok()) return jobs.error();
  core::JobQuery query;
  query.arg = flags.job;
  query.instance = flags.instance;
  query.where = where;
  return core::FindJob(*jobs, query);
}

// A failed look-up: the message alone when it is ours (not found, ambiguous), else the kind too.
int FailLookUp(const core::Error& error) {
  if (error.IsNotFound() || error.IsInvalidInput()) return Fail(error.message());
  return Fail(error.ToString());
}

// Ray's message as every command shows it: redacted, then cut to its first line.
std::string ShownMessage(const std::string& ray_message) {
  return core::FirstLineOfMessage(RedactForOutput(ray_message));
}

std::string FormatTime(const std::optional<int64_t>& ms) {
  if (!ms) return "-";
  return core::FormatRfc3339Seconds(*ms);
}

std::string JobKey(const core::RayJob& job) {
  if (!job.submission_id.empty()) return job.submission_id;
  return job.job_id.value_or("-");
}

// "ppo-qwen (ppo-qwen-3f2a1c9b0e)", or the id alone for a job without a name.
std::string JobTitle(const core::RayJob& job) {
  const std::string name = job.Label(core::kMetaName);
  return name.empty() ? JobKey(job) : name + " (" + JobKey(job) + ")";
}

// ", the latest run of ppo-qwen" when the job was named by its name, else "".
std::string LatestRunNote(const core::FoundJob& found) {
  if (!found.by_name) return "";
  return ", the latest run of " + found.job.Label(core::kMetaName);
}

// A note on stderr when a name's older runs are still active: the command acted on the latest.
void ReportOtherActive(const core::FoundJob& found) {
  if (found.other_active.empty()) return;
  std::string ids;
  for (const std::string& id : found.other_active) ids += (ids.empty() ? "" : ", ") + id;
  Report("note: other runs of " + found.job.Label(core::kMetaName) + " are still active: " + ids +
         " (name them by id)");
}

core::Value OrNull(const std::optional<std::string>& v) {
  return v ? core::Value(*v) : core::Value();
}
core::Value OrNull(const std::optional<int64_t>& v) { return v ? core::Value(*v) : core::Value(); }

core::Value LabelOrNull(const core::RayJob& job, std::string_view key) {
  auto it = job.metadata.find(key);
  return it == job.metadata.end() ? core::Value() : core::Value(RedactForOutput(it->second));
}

// One job as `list --format json` prints each element and `status --format json` prints it.
// Keys are only ever added.
core::Value JobToJson(const core::RayJob& job) {
  core::Value::Object metadata;
  for (const auto& [k, v] : job.metadata) {
    metadata.insert_or_assign(std::string(k), RedactForOutput(v));
  }
  const std::optional<int> attempt = core::AttemptLabel(job);
  core::Value::Object o;
  o["name"] = LabelOrNull(job, core::kMetaName);
  o["submission_id"] = job.submission_id.empty() ? core::Value() : core::Value(job.submission_id);
  o["job_id"] = OrNull(job.job_id);
  o["attempt"] = attempt ? core::Value(static_cast<int64_t>(*attempt)) : core::Value();
  o["type"] = job.type;
  o["status"] = std::string(core::RayJobStatusName(job.status));
  o["message"] = ShownMessage(job.message);
  o["error_type"] = OrNull(job.error_type);
  o["entrypoint"] = RedactForOutput(job.entrypoint);
  o["start_time"] = job.start_time_ms ? core::Value(FormatTime(job.start_time_ms)) : core::Value();
  o["end_time"] = job.end_time_ms ? core::Value(FormatTime(job.end_time_ms)) : core::Value();
  o["driver_exit_code"] = OrNull(job.driver_exit_code);
  // The labels as they are: an instance, or null for a one-off run, which has submitted_by.
  o["managed_by"] = LabelOrNull(job, core::kMetaManagedBy);
  o["submitted_by"] = LabelOrNull(job, core::kMetaSubmittedBy);
  o["metadata"] = std::move(metadata);
  return o;
}

// --- status ---

std::string StatusText(const core::RayJob& job) {
  const std::optional<int> attempt = core::AttemptLabel(job);
  std::ostringstream out;
  // Values from Ray, one line each (core::EscapeText).
  out << "name: " << core::EscapeText(job.Label(core::kMetaName, "-")) << "\n"
      << "submission_id: " << core::EscapeText(JobKey(job)) << "\n"
      << "attempt: " << (attempt ? std::to_string(*attempt) : "-") << "\n"
      << "status: " << core::RayJobStatusName(job.status) << "\n"
      << "message: " << core::EscapeText(ShownMessage(job.message)) << "\n"
      << "error_type: " << core::EscapeText(job.error_type.value_or("-")) << "\n"
      << "start_time: " << FormatTime(job.start_time_ms) << "\n"
      << "end_time: " << FormatTime(job.end_time_ms) << "\n"
      << "driver_exit_code: "
      << (job.driver_exit_code ? std::to_string(*job.driver_exit_code) : "-") << "\n"
      << "managed_by: " << engine::OwnerOf(job) << "\n";
  return RedactForOutput(out.str());
}

int RunStatus(const GlobalOptions& global, const QueryFlags& flags) {
  core::Result<Connection> ray = Connect(global, flags.config);
  if (!ray.ok()) return Fail(ray.error().message());
  core::Result<core::FoundJob> found = LookUp(*ray->server, flags, ray->where);
  if (!found.ok()) return FailLookUp(found.error());
  if (flags.format == "json") {
    std::cout << core::ToPrettyJson(JobToJson(found->job)) << "\n";
  } else {
    std::cout << StatusText(found->job);
  }
  return 0;
}

// --- stop ---

int RunStop(const GlobalOptions& global, const QueryFlags& flags) {
  core::Result<Connection> ray = Connect(global, flags.config);
  if (!ray.ok()) return Fail(ray.error().message());
  core::Result<core::FoundJob> found = LookUp(*ray->server, flags, ray->where);
  if (!found.ok()) return FailLookUp(found.error());
  const std::string id = JobKey(found->job);
  core::Result<bool> stopped = ray->server->Stop(id);
  if (!stopped.ok()) return Fail(stopped.error().ToString());
  if (*stopped) {
    std::cout << RedactForOutput("stop sent to " + id + LatestRunNote(*found) +
                                 " (Ray stops it asynchronously)\n");
  } else {
    const std::string note = found->by_name ? LatestRunNote(*found) + "," : "";
    std::cout << RedactForOutput(id + note + " had already ended; no stop sent\n");
  }
  ReportOtherActive(*found);
  return 0;
}

// --- logs ---

// The last `n` lines of `text` (a final line without '\n' counts as a line).
std::string_view LastLines(std::string_view text, int n) {
  if (n < 0) return text;
  if (n == 0) return {};
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  int seen = 0;
  while (end > 0) {
    const size_t nl = text.rfind('\n', end - 1);
    if (nl == std::string_view::npos) return text;
    if (++seen == n) return text.substr(nl + 1);
    end = nl;
  }
  return text;
}

// Why there is nothing to print: "<title> is PENDING: no driver log yet; Ray says: ...".
std::string NoLogNote(const core::RayJob& job, std::string_view why) {
  std::string note = JobTitle(job) + " is " + std::string(core::RayJobStatusName(job.status)) +
                     ": " + std::string(why);
  if (std::string message = ShownMessage(job.message); !message.empty()) {
    note += "; Ray says: " + message;
  }
  return note;
}

// Polls GET /logs once a second and prints the bytes past the first `printed`, until the job is
// terminal (then one last fetch). Polling, not the /logs/tail WebSocket: it needs nothing
// beyond the calls every other command makes, survives a dropped connection, and a second of
// delay does not matter for training logs.
int FollowLogs(ports::JobServer& server, const std::string& id, size_t printed) {
  while (true) {
    core::Result<core::RayJob> job = server.Get(id);
    if (!job.ok()) return Fail(job.error().ToString());
    const bool terminal = core::IsTerminal(job->status);
    core::Result<std::string> now = server.Logs(id);
    if (!now.ok()) return Fail(now.error().ToString());
    if (now->size() < printed) printed = 0;  // the log was replaced: print it anew
    std::cout << std::string_view(*now).substr(printed) << std::flush;
    printed = now->size();
    if (terminal) return 0;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

// A PENDING job has no driver log yet (Ray answers ""): that is said, not printed as nothing.
int RunLogs(const GlobalOptions& global, const QueryFlags& flags) {
  core::Result<Connection> ray = Connect(global, flags.config);
  if (!ray.ok()) return Fail(ray.error().message());
  core::Result<core::FoundJob> found = LookUp(*ray->server, flags, ray->where);
  if (!found.ok()) return FailLookUp(found.error());
  const core::RayJob& job = found->job;
  const std::string id = JobKey(job);
  if (found->by_name) Report("logs of " + id + LatestRunNote(*found));
  ReportOtherActive(*found);
  if (job.status == core::RayJobStatus::kPending) {
    Report(NoLogNote(
        job, flags.follow ? "no driver log yet; waiting for it to start" : "no driver log yet"));
    return flags.follow ? FollowLogs(*ray->server, id, 0) : 0;
  }
  core::Result<std::string> logs = ray->server->Logs(id);
  if (!logs.ok()) return Fail(logs.error().ToString());
  std::cout << LastLines(*logs, flags.tail) << std::flush;
  if (logs->empty() && core::IsTerminal(job.status)) Report(NoLogNote(job, "no driver log"));
  return flags.follow ? FollowLogs(*ray->server, id, logs->size()) : 0;
}

// --- list ---

std::string ListTable(const std::vector<core::RayJob>& jobs) {
  std::vector<core::TextRow> rows = {
      {"SUBMISSION_ID", "NAME", "STATUS", "TYPE", "MANAGED_BY", "START_TIME", "ENTRYPOINT"}};
  for (const core::RayJob& job : jobs) {
    std::string entrypoint = RedactForOutput(job.entrypoint);
    std::replace(entrypoint.begin(), entrypoint.end(), '\n', ' ');
    if (entrypoint.size() > 60) entrypoint = entrypoint.substr(0, 57) + "...";
    rows.push_back({JobKey(job), RedactForOutput(job.Label(core::kMetaName, "-")),
                    std::string(core::RayJobStatusName(job.status)),
                    job.type.empty() ? "-" : job.type, engine::OwnerOf(job),
                    FormatTime(job.start_time_ms), entrypoint});
  }
  return core::FormatTextTable(rows);
}

int RunList(const GlobalOptions& global, const QueryFlags& flags) {
  core::Result<Connection> ray = Connect(global, flags.config);
  if (!ray.ok()) return Fail(ray.error().message());
  core::Result<std::vector<core::RayJob>> jobs = ray->server->List();
  if (!jobs.ok()) return Fail(jobs.error().ToString());
  std::vector<core::RayJob> sorted = std::move(*jobs);
  // Oldest first, like `ray job list`; jobs not started yet last.
  std::stable_sort(sorted.begin(), sorted.end(), [](const core::RayJob& a, const core::RayJob& b) {
    return a.start_time_ms.value_or(INT64_MAX) < b.start_time_ms.value_or(INT64_MAX);
  });
  if (flags.format == "json") {
    core::Value::Array array;
    for (const core::RayJob& job : sorted) array.push_back(JobToJson(job));
    std::cout << core::ToPrettyJson(core::Value(std::move(array))) << "\n";
  } else {
    std::cout << ListTable(sorted);
  }
  return 0;
}

// --- the command line ---

constexpr std::string_view kJobHelp =
    "a submission id or Ray job id, or the name of a job ray-gitops submitted (gitops.name): "
    "then its latest run";
constexpr std::string_view kNameFooter =
    "An id of a job in Ray is used as it is. Otherwise the argument is a name: the runs of "
    "that name that an instance or `submit` made, and of them the latest (the latest start "
    "time; on a tie the higher attempt). When instances or repositories other than the default "
    "instance's also have runs of that name, the default instance's run is meant; when "
    "several groups remain, nothing is done and the candidates are listed: give the id, or "
    "--instance.";

CLI::App* AddJobCommand(CLI::App& app, const std::string& name, const std::string& help,
                        QueryFlags& flags) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->footer(std::string(kNameFooter));
  cmd->add_option("job", flags.job, std::string(kJobHelp))->required();
  cmd->add_option("--instance", flags.instance,
                  "a name means a run of this instance (an id is used whatever its instance)");
  cmd->add_option("--config", flags.config,
                  "a cluster file whose address is used when no other is given");
  return cmd;
}

void AddStatusCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto flags = std::make_shared<QueryFlags>();
  flags->format = "text";
  CLI::App* status =
      AddJobCommand(app, "status", "print a job's status, message, times and exit code", *flags);
  status->add_option("--format,-o", flags->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  status->callback([&global, exit_code, flags] { *exit_code = RunStatus(global, *flags); });
}

void AddLogsCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto flags = std::make_shared<QueryFlags>();
  CLI::App* logs = AddJobCommand(
      app, "logs", "print a job's driver log (a PENDING job has none yet: that is said)", *flags);
  logs->add_flag("--follow,-f", flags->follow,
                 "keep printing new output (polled every second) until the job ends");
  logs->add_option("--tail", flags->tail, "print only the last N lines first")
      ->check(CLI::NonNegativeNumber);
  logs->callback([&global, exit_code, flags] { *exit_code = RunLogs(global, *flags); });
}

void AddListCommand(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  auto flags = std::make_shared<QueryFlags>();
  flags->format = "table";
  CLI::App* list = app.add_subcommand(
      "list",
      "list every job Ray knows, managed or not; NAME is gitops.name (- for none), MANAGED_BY "
      "the instance, cli for a one-off run of `submit`, - for neither");
  list->add_option("--format,-o", flags->format, "table or json (an array of jobs)")
      ->check(CLI::IsMember({"table", "json"}));
  list->add_option("--config", flags->config,
                   "a cluster file whose address is used when no other is given");
  list->callback([&global, exit_code, flags] { *exit_code = RunList(global, *flags); });
}

}  // namespace

void AddJobQueryCommands(CLI::App& app, const GlobalOptions& global, int* exit_code) {
  AddStatusCommand(app, global, exit_code);
  auto stop_flags = std::make_shared<QueryFlags>();
  AddJobCommand(app, "stop", "ask Ray to stop a job", *stop_flags)
      ->callback([&global, exit_code, stop_flags] { *exit_code = RunStop(global, *stop_flags); });
  AddLogsCommand(app, global, exit_code);
  AddListCommand(app, global, exit_code);
}

}  // namespace rg::cli
