// status, logs, stop and list as the command line runs them, against the fake Ray head over
// HTTP: a job's name means its latest run, a PENDING job's logs say so, list and status print
// JSON with names, and what they print is redacted.

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/core/value.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/in_process_ray.h"

namespace rg {
namespace {

using core::RayJobStatus;
using nlohmann::json;

// A secret the process knows (a --ray-header value): no output may show it.
constexpr std::string_view kHeaderSecret = "hdr-secret-5f1e2d3c";

struct CommandRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Swaps std::cout and std::cerr for strings while alive.
class CapturedOutput {
 public:
  CapturedOutput()
      : old_out_(std::cout.rdbuf(out_.rdbuf())), old_err_(std::cerr.rdbuf(err_.rdbuf())) {}
  ~CapturedOutput() {
    std::cout.rdbuf(old_out_);
    std::cerr.rdbuf(old_err_);
  }
  CapturedOutput(const CapturedOutput&) = delete;
  CapturedOutput& operator=(const CapturedOutput&) = delete;
  std::string out() const { return out_.str(); }
  std::string err() const { return err_.str(); }

 private:
  std::ostringstream out_;
  std::ostringstream err_;
  std::streambuf* old_out_;
  std::streambuf* old_err_;
};

// The fake head on a clock of the test's own, so that jobs stay where SetStatus puts them and
// each submission gets its own start time.
struct Head {
  static testing::FakeRayOptions OnClock(ports::Clock* clock) {
    testing::FakeRayOptions options;
    options.clock = clock;
    return options;
  }

  // Submits a run of `name` labelled as a daemon's run of `instance` (or, with an empty
  // instance, as a one-off run of submit), one second after the previous submission.
  void Submit(const std::string& id, const std::string& name, int attempt,
              const std::string& instance = "ray-gitops") {
    clock.AdvanceMs(1000);
    core::Value::Object metadata;
    metadata["gitops.name"] = name;
    metadata["gitops.attempt"] = std::to_string(attempt);
    if (instance.empty()) {
      metadata["gitops.submitted-by"] = "cli";
    } else {
      metadata["gitops.managed-by"] = instance;
      metadata["gitops.repo"] = "https://git.example.com/team/jobs";
    }
    core::Value::Object body;
    body["submission_id"] = id;
    body["entrypoint"] = "sleep 86400";  // runs until stopped, or until SetStatus
    body["metadata"] = std::move(metadata);
    const bool submitted = client->Submit(core::Value(std::move(body))).ok();
    REQUIRE(submitted);
  }

  // One command as `ray-gitops --ray-address <fake> --ray-header X-Team=<secret> ARGS...`.
  CommandRun Run(const std::vector<std::string>& args) const {
    CLI::App app;
    app.require_subcommand(1);
    cli::GlobalOptions global;
    global.ray_address = ray.address();
    global.ray_headers = {"X-Team=" + std::string(kHeaderSecret)};
    CommandRun run;
    cli::AddJobCommands(app, global, &run.exit_code);
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 reads from the back
    CapturedOutput captured;
    app.parse(reversed);
    run.out = captured.out();
    run.err = captured.err();
    return run;
  }

  testing::FakeClock clock;
  testing::FakeRayServer ray{OnClock(&clock)};
  std::unique_ptr<adapters::RayHttpJobServer> client = testing::InProcessClient(ray);
};

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The blank-separated cells of the table line that starts with `first`; none when no line does.
std::vector<std::string> Cells(const std::string& table, const std::string& first) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> cells;
    for (std::string word; words >> word;) cells.push_back(word);
    if (!cells.empty() && cells[0] == first) return cells;
  }
  return {};
}

TEST_CASE("status NAME shows the latest run of the name, as text and as JSON") {
  Head head;
  head.Submit("ppo-aaaaaaaaaa", "ppo", 0);
  head.Submit("ppo-aaaaaaaaaa-r1", "ppo", 1);
  head.Submit("ppo-bbbbbbbbbb", "ppo-other", 0);
  REQUIRE(head.ray.SetStatus("ppo-aaaaaaaaaa", RayJobStatus::kFailed, "exit 1"));
  REQUIRE(head.ray.SetStatus("ppo-aaaaaaaaaa-r1", RayJobStatus::kRunning,
                             "running with " + std::string(kHeaderSecret)));

  CommandRun text = head.Run({"status", "ppo"});
  CHECK(text.exit_code == 0);
  CHECK(Has(text.out, "name: ppo\n"));
  CHECK(Has(text.out, "submission_id: ppo-aaaaaaaaaa-r1\n"));
  CHECK(Has(text.out, "attempt: 1\n"));
  CHECK(Has(text.out, "status: RUNNING\n"));
  CHECK(Has(text.out, "message: running with <redacted>\n"));

  for (const char* flag : {"--format", "-o"}) {
    CommandRun run = head.Run({"status", "ppo", flag, "json"});
    REQUIRE(run.exit_code == 0);
    const json job = json::parse(run.out);
    CHECK(job["name"] == "ppo");
    CHECK(job["submission_id"] == "ppo-aaaaaaaaaa-r1");
    CHECK(job["attempt"] == 1);
    CHECK(job["status"] == "RUNNING");
    CHECK(job["managed_by"] == "ray-gitops");
    CHECK(job["start_time"] == "2026-01-01T00:00:02Z");
    CHECK(job["message"] == "running with <redacted>");
    CHECK_FALSE(Has(run.out, std::string(kHeaderSecret)));
  }

  // An id is still an id: the older run, as it is.
  CommandRun by_id = head.Run({"status", "ppo-aaaaaaaaaa", "-o", "json"});
  REQUIRE(by_id.exit_code == 0);
  CHECK(json::parse(by_id.out)["status"] == "FAILED");
}

TEST_CASE("status of a name or id Ray does not know says where it looked") {
  Head head;
  head.Submit("ppo-aaaaaaaaaa", "ppo", 0);
  CommandRun run = head.Run({"status", "custom-fails"});
  CHECK(run.exit_code == 1);
  CHECK(run.out.empty());
  CHECK(run.err == "ray-gitops: no job named custom-fails or with id custom-fails in Ray at " +
                       head.ray.address() + "\n");
}

TEST_CASE("a name several instances use means the default instance's run unless --instance") {
  Head head;
  head.Submit("eval-aaaaaaaaaa", "eval", 0);
  head.Submit("eval-bbbbbbbbbb", "eval", 0, "team-b");
  CHECK(Has(head.Run({"status", "eval"}).out, "submission_id: eval-aaaaaaaaaa\n"));
  CHECK(Has(head.Run({"status", "eval", "--instance", "team-b"}).out,
            "submission_id: eval-bbbbbbbbbb\n"));

  Head two;
  two.Submit("eval-bbbbbbbbbb", "eval", 0, "team-b");
  two.Submit("eval-cccccccccc", "eval", 0, "team-c");
  REQUIRE(two.ray.SetStatus("eval-bbbbbbbbbb", RayJobStatus::kRunning));
  REQUIRE(two.ray.SetStatus("eval-cccccccccc", RayJobStatus::kPending));
  CommandRun run = two.Run({"logs", "eval"});
  CHECK(run.exit_code == 1);
  CHECK(Has(run.err, "several jobs are named eval"));
  CHECK(Has(run.err, "\n  eval-bbbbbbbbbb (RUNNING): instance team-b"));
  CHECK(Has(run.err, "\n  eval-cccccccccc (PENDING): instance team-c"));
  CHECK(two.ray.RequestCount(testing::kRouteLogs) == 0);
}

TEST_CASE("logs NAME prints the driver log of the name's latest run") {
  Head head;
  head.Submit("train-aaaaaaaaaa", "train", 0);
  head.Submit("train-aaaaaaaaaa-r1", "train", 1);
  REQUIRE(head.ray.SetStatus("train-aaaaaaaaaa", RayJobStatus::kFailed, "exit 1"));
  REQUIRE(head.ray.SetStatus("train-aaaaaaaaaa-r1", RayJobStatus::kRunning));
  REQUIRE(head.ray.AppendLogs("train-aaaaaaaaaa", "first attempt\n"));
  REQUIRE(head.ray.AppendLogs("train-aaaaaaaaaa-r1", "second attempt\nlast line\n"));

  CommandRun run = head.Run({"logs", "train"});
  CHECK(run.exit_code == 0);
  CHECK(Has(run.out, "second attempt"));
  CHECK_FALSE(Has(run.out, "first attempt"));
  CHECK(run.err == "ray-gitops: logs of train-aaaaaaaaaa-r1, the latest run of train\n");

  CommandRun tail = head.Run({"logs", "train", "--tail", "1"});
  CHECK(tail.out == "last line\n");
}

TEST_CASE("logs of a PENDING job says it is pending and exits 0") {
  Head head;
  head.Submit("ppo-qwen-3f2a1c9b0e", "ppo-qwen", 0);
  REQUIRE(head.ray.SetStatus("ppo-qwen-3f2a1c9b0e", RayJobStatus::kPending,
                             "Job has not started yet. It may be waiting for resources."));
  for (const char* arg : {"ppo-qwen", "ppo-qwen-3f2a1c9b0e"}) {
    CommandRun run = head.Run({"logs", arg});
    CHECK(run.exit_code == 0);
    CHECK(run.out.empty());
    CHECK(Has(run.err,
              "ray-gitops: ppo-qwen (ppo-qwen-3f2a1c9b0e) is PENDING: no driver log yet; Ray "
              "says: Job has not started yet. It may be waiting for resources.\n"));
  }
}

TEST_CASE("stop NAME stops the latest run and names the older runs still active") {
  Head head;
  head.Submit("sweep-aaaaaaaaaa", "sweep", 0);
  head.Submit("sweep-bbbbbbbbbb", "sweep", 0);
  REQUIRE(head.ray.SetStatus("sweep-aaaaaaaaaa", RayJobStatus::kRunning));
  REQUIRE(head.ray.SetStatus("sweep-bbbbbbbbbb", RayJobStatus::kRunning));

  CommandRun run = head.Run({"stop", "sweep"});
  CHECK(run.exit_code == 0);
  CHECK(run.out ==
        "stop sent to sweep-bbbbbbbbbb, the latest run of sweep (Ray stops it asynchronously)\n");
  CHECK(Has(run.err, "other runs of sweep are still active: sweep-aaaaaaaaaa"));
  head.clock.AdvanceMs(1000);  // past the head's stop delay
  head.ray.Tick();
  CHECK(head.ray.StatusOf("sweep-bbbbbbbbbb") == RayJobStatus::kStopped);
  CHECK(head.ray.StatusOf("sweep-aaaaaaaaaa") == RayJobStatus::kRunning);

  CommandRun again = head.Run({"stop", "sweep"});
  CHECK(again.exit_code == 0);
  CHECK(again.out ==
        "sweep-bbbbbbbbbb, the latest run of sweep, had already ended; no stop sent\n");
}

TEST_CASE("list has a NAME column and --format json, -o json, an array of jobs with names") {
  Head head;
  head.Submit("ppo-aaaaaaaaaa", "ppo", 0);
  head.Submit("eval-aaaaaaaaaa-cli", "eval", 0, "");
  head.clock.AdvanceMs(1000);
  core::Value::Object by_hand;
  by_hand["submission_id"] = "raysubmit_byhand";
  by_hand["entrypoint"] = "echo " + std::string(kHeaderSecret);
  const bool submitted = head.client->Submit(core::Value(std::move(by_hand))).ok();
  REQUIRE(submitted);

  CommandRun table = head.Run({"list"});
  CHECK(table.exit_code == 0);
  CHECK(Cells(table.out, "SUBMISSION_ID").at(1) == "NAME");
  CHECK(Cells(table.out, "ppo-aaaaaaaaaa").at(1) == "ppo");
  CHECK(Cells(table.out, "eval-aaaaaaaaaa-cli").at(1) == "eval");
  CHECK(Cells(table.out, "raysubmit_byhand").at(1) == "-");
  CHECK_FALSE(Has(table.out, std::string(kHeaderSecret)));

  for (const char* flag : {"--format", "-o"}) {
    CommandRun run = head.Run({"list", flag, "json"});
    REQUIRE(run.exit_code == 0);
    CHECK_FALSE(Has(run.out, std::string(kHeaderSecret)));
    const json jobs = json::parse(run.out);
    REQUIRE(jobs.is_array());
    REQUIRE(jobs.size() == 3);
    CHECK(jobs[0]["name"] == "ppo");
    CHECK(jobs[0]["submission_id"] == "ppo-aaaaaaaaaa");
    CHECK(jobs[0]["attempt"] == 0);
    CHECK(jobs[0]["managed_by"] == "ray-gitops");
    CHECK(jobs[1]["name"] == "eval");
    CHECK(jobs[1]["submitted_by"] == "cli");
    CHECK(jobs[2]["name"].is_null());
    CHECK(jobs[2]["attempt"].is_null());
    CHECK(jobs[2]["entrypoint"] == "echo <redacted>");
  }
}

}  // namespace
}  // namespace rg
