// status/<name>.yaml: round trips, determinism, tolerance of unknown keys, errors as values,
// and agreement with schema/status.schema.json.

#include "reconciler/spec/status_codec.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "reconciler/core/status_fields.h"
#include "reconciler/core/value.h"
#include "reconciler/spec/yaml_document.h"
#include "tests/support/test_files.h"

namespace rg {
namespace {

using core::Phase;
using core::RayJobStatus;

core::StatusRecord Full() {
  core::StatusRecord r;
  r.name = "ppo-qwen";
  r.instance = "team-b";
  r.ray_cluster = "prod: a100 (east)";
  r.spec_path = "jobs/ppo/qwen.yaml";
  r.spec_hash = "3f2a1c9b0e";
  r.spec_commit = "0123456789abcdef0123456789abcdef01234567";
  r.code.mutable_get() = {"src/trainer", "89abcdef0123456789abcdef0123456789abcdef",
                          "fedcba9876543210fedcba9876543210fedcba98"};
  r.phase = Phase::kRunning;
  r.on_remove = core::OnRemove::kKeep;
  r.submission_id = "ppo-qwen-3f2a1c9b0e-r1";
  r.attempt = 1;
  r.status = RayJobStatus::kRunning;
  r.message = "Job is currently running: \"quoted\" | piped\nsecond line";
  r.error_type = "JOB_ENTRYPOINT_COMMAND_ERROR";
  r.job_id = "02000000";
  r.start_time_ms = 1795000000123;
  r.end_time_ms = 1795000100456;
  r.driver_exit_code = -9;
  r.dashboard_url = "http://127.0.0.1:8265/#/jobs/ppo-qwen-3f2a1c9b0e-r1";
  r.errors = {"jobs/ppo/qwen.yaml:7:3: error: nnodes must be an integer >= 1 (got \"two\")"};
  core::AttemptRecord first;
  first.attempt = 0;
  first.submission_id = "ppo-qwen-3f2a1c9b0e";
  first.spec_hash = "3f2a1c9b0e";
  first.status = RayJobStatus::kFailed;
  first.phase = Phase::kFailed;
  first.start_time_ms = 1794990000000;
  first.end_time_ms = 1794999000000;
  first.message = "Job entrypoint command failed with exit code 1";
  first.stop_reason = core::StopReason::kNone;
  core::AttemptRecord second;
  second.attempt = 1;
  second.submission_id = r.submission_id;
  second.spec_hash = "3f2a1c9b0e";
  second.status = RayJobStatus::kStopped;
  second.phase = Phase::kSuspended;
  second.stop_reason = core::StopReason::kSuspend;
  second.stop_sent_ms = 1795000050789;  // written as stop_sent_at only when set
  r.attempts = {first, second};
  r.skipped_slots = {{1794960000000, "missed: not started within starting_deadline 1h"},
                     {1794963600000, "concurrency forbid: ppo-qwen-3f2a1c9b0e was still active"}};
  return r;
}

core::StatusRecord Minimal() {
  core::StatusRecord r;
  r.name = "broken";
  r.spec_path = "jobs/broken.yaml";
  r.phase = Phase::kInvalid;
  return r;
}

TEST_CASE("A full record survives encode and decode unchanged", "[status][codec]") {
  const auto record = Full();
  auto back = spec::DecodeStatusYaml(spec::EncodeStatusYaml(record), "status/ppo-qwen.yaml");
  REQUIRE(back.ok());
  CHECK(*back == record);
}

TEST_CASE("A minimal record survives encode and decode unchanged", "[status][codec]") {
  const auto record = Minimal();
  const std::string text = spec::EncodeStatusYaml(record);
  auto back = spec::DecodeStatusYaml(text, "status/broken.yaml");
  REQUIRE(back.ok());
  CHECK(*back == record);
  // Unknown values are written as explicit nulls.
  CHECK(text.find("spec_hash: null\n") != std::string::npos);
  CHECK(text.find("status: null\n") != std::string::npos);
  CHECK(text.find("attempts: []\n") != std::string::npos);
  CHECK(text.find("\ninstance: null\nray_cluster: null\n") != std::string::npos);
  // A job without code has no code key: status files of such jobs stay as they were.
  CHECK(text.find("\ncode:") == std::string::npos);
}

TEST_CASE("A file from before ledgers had owners reads with no instance and no cluster",
          "[status][codec]") {
  auto back = spec::DecodeStatusYaml("name: x\nspec_path: jobs/x.yaml\nphase: Succeeded\n",
                                     "status/x.yaml");
  REQUIRE(back.ok());
  CHECK(back->instance.empty());
  CHECK(back->ray_cluster.empty());
}

TEST_CASE("Encoding is deterministic and follows the schema's key order", "[status][codec]") {
  const std::string a = spec::EncodeStatusYaml(Full());
  const std::string b = spec::EncodeStatusYaml(Full());
  CHECK(a == b);
  CHECK(a.rfind("name: ppo-qwen\ninstance: team-b\nray_cluster: \"prod: a100 (east)\"\n"
                "spec_path: jobs/ppo/qwen.yaml\n",
                0) == 0);
  CHECK(a.find("phase: Running\non_remove: keep\n") != std::string::npos);
  CHECK(a.find("start_time: \"2026-11-18T11:06:40.123Z\"\n") != std::string::npos);
  CHECK(a.find("status: RUNNING\n") != std::string::npos);
  CHECK(a.find("stop_reason: suspend\n") != std::string::npos);
  CHECK((a.find("stop_sent_at: \"2026-11-18T11:07:30.789Z\"\n") != std::string::npos ||
         a.find("stop_sent_at: 2026-11-18T11:07:30.789Z\n") != std::string::npos));
  CHECK(a.find("name:") < a.find("attempts:"));
}

TEST_CASE("Decoding ignores keys it does not know", "[status][codec]") {
  const std::string text =
      spec::EncodeStatusYaml(Minimal()) + "added_by_a_newer_version: {nested: [1, 2]}\n";
  auto back = spec::DecodeStatusYaml(text, "status/broken.yaml");
  REQUIRE(back.ok());
  CHECK(*back == Minimal());
}

TEST_CASE("An unknown Ray status reads as unknown rather than failing", "[status][codec]") {
  auto back = spec::DecodeStatusYaml(
      "name: x\nspec_path: jobs/x.yaml\nphase: Running\n"
      "status: SOMETHING_NEW\n",
      "status/x.yaml");
  REQUIRE(back.ok());
  CHECK(back->status == RayJobStatus::kUnknown);
  CHECK(back->phase == Phase::kRunning);
}

TEST_CASE("A stop reason a newer version wrote is read as unknown and written back as it was",
          "[status][codec]") {
  const std::string text =
      "name: x\nspec_path: jobs/x.yaml\nphase: Stopped\nattempts:\n"
      "- submission_id: x-0123456789\n  attempt: 0\n  stop_reason: quota\n";
  auto back = spec::DecodeStatusYaml(text, "status/x.yaml");
  REQUIRE(back.ok());
  REQUIRE(back->attempts.size() == 1);
  CHECK(back->attempts[0].stop_reason == core::StopReason::kUnknown);
  CHECK(back->attempts[0].unknown_stop_reason == "quota");
  CHECK(spec::EncodeStatusYaml(*back).find("stop_reason: quota\n") != std::string::npos);
  auto known = spec::DecodeStatusYaml(
      "name: x\nspec_path: jobs/x.yaml\nphase: Stopped\nattempts:\n"
      "- submission_id: x-0123456789\n  stop_reason: removed\n",
      "status/x.yaml");
  REQUIRE(known.ok());
  CHECK(known->attempts[0].stop_reason == core::StopReason::kRemoval);
  CHECK(known->attempts[0].unknown_stop_reason.empty());
  // A stop for the run's deadline is a reason this version knows, and writes back as it read.
  auto deadline = spec::DecodeStatusYaml(
      "name: x\nspec_path: jobs/x.yaml\nphase: DeadlineExceeded\nattempts:\n"
      "- submission_id: x-0123456789\n  stop_reason: deadline\n",
      "status/x.yaml");
  REQUIRE(deadline.ok());
  CHECK(deadline->phase == core::Phase::kDeadlineExceeded);
  CHECK(deadline->attempts[0].stop_reason == core::StopReason::kDeadline);
  CHECK(spec::EncodeStatusYaml(*deadline).find("stop_reason: deadline\n") != std::string::npos);
}

TEST_CASE("Files that are not status records are errors naming the file", "[status][codec]") {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"- a\n- b\n", "must be a mapping"},
      {"just text\n", "must be a mapping"},
      {"name: [unclosed\n", "status/x.yaml"},
      {"spec_path: x\nphase: Running\n", "name"},
      {"name: x\nspec_path: x\n", "phase"},
      {"name: x\nspec_path: x\nphase: Sleeping\n", "phase"},
      {"name: x\nspec_path: x\nphase: Running\nattempt: one\n", "attempt"},
      {"name: x\nspec_path: x\nphase: Running\nstart_time: yesterday\n", "start_time"},
      {"name: x\nspec_path: x\nphase: Running\nattempts: {a: 1}\n", "attempts"},
      {"name: x\nspec_path: x\nphase: Running\nattempts: [3]\n", "attempts[0]"},
      {"name: x\nspec_path: x\nphase: Running\nerrors: [1]\n", "errors"},
      {"name: x\nspec_path: x\nphase: Running\non_remove: maybe\n", "on_remove"},
      {"name: x\nspec_path: x\nphase: Running\ninstance: [a]\n", "instance"},
      {"name: x\nspec_path: x\nphase: Running\nray_cluster: {a: 1}\n", "ray_cluster"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = spec::DecodeStatusYaml(c.text, "status/x.yaml");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind() == core::ErrorKind::kInvalidInput);
    CHECK(r.error().message().find(c.expect) != std::string::npos);
    CHECK(r.error().message().find("status/x.yaml") != std::string::npos);
  }
}

TEST_CASE("StatusFilePath puts one file per job under status/", "[status][codec]") {
  CHECK(spec::StatusFilePath("ppo-qwen") == "status/ppo-qwen.yaml");
}

TEST_CASE("A status file reads back as the document the JSON API serves", "[status][codec]") {
  core::StatusRecord unknown = Minimal();
  unknown.status = RayJobStatus::kUnknown;  // null in both, never "UNKNOWN" in one of them
  for (const core::StatusRecord& record : {Full(), Minimal(), unknown}) {
    INFO(record.name);
    const spec::YamlParse parse = spec::ParseYamlDocument(spec::EncodeStatusYaml(record), "s");
    REQUIRE(parse.root);
    const core::Value from_yaml = spec::ToValue(*parse.root);
    const core::Value from_fields = core::StatusRecordValue(record);
    CHECK(core::ToPrettyJson(from_yaml) == core::ToPrettyJson(from_fields));
  }
  const core::Value minimal = core::StatusRecordValue(Minimal());
  CHECK(minimal.Find("status")->is_null());
  CHECK(minimal.Find("message")->is_null());
  CHECK(minimal.Find("instance")->is_null());
  const core::Value full = core::StatusRecordValue(Full());
  CHECK(full.Find("attempts")->as_array()[1].Find("stop_sent_at")->as_string() ==
        "2026-11-18T11:07:30.789Z");
  CHECK(full.Find("attempts")->as_array()[0].Find("stop_sent_at") == nullptr);
}

TEST_CASE("Encoded status files validate against schema/status.schema.json", "[status][schema]") {
  const std::string python = RG_TEST_PYTHON;
  REQUIRE(std::filesystem::exists(python));
  const testing::TempDir tmp;
  const std::filesystem::path dir = tmp.dir();
  core::StatusRecord removed = Full();
  removed.phase = Phase::kRemoved;
  removed.attempts.back().stop_reason = core::StopReason::kRemoval;
  const std::pair<const char*, core::StatusRecord> records[] = {
      {"full.yaml", Full()}, {"minimal.yaml", Minimal()}, {"removed.yaml", removed}};
  for (const auto& [file, record] : records) {
    std::ofstream(dir / file) << spec::EncodeStatusYaml(record);
    // The JSON API's form of the same record (YAML is a superset of JSON).
    std::ofstream(dir / (std::string(file) + ".json.yaml"))
        << core::ToPrettyJson(core::StatusRecordValue(record));
  }
  // A file that breaks the schema proves the check can fail.
  std::ofstream(dir / "bad.yaml") << "name: x\nspec_path: y\nphase: Sleeping\n";

  const std::string script =
      "import sys, json, yaml, jsonschema, pathlib\n"
      "schema = json.load(open(sys.argv[1]))\n"
      "v = jsonschema.Draft202012Validator(schema)\n"
      "d = pathlib.Path(sys.argv[2])\n"
      "good = [p for p in d.glob('*.yaml') if p.name != 'bad.yaml']\n"
      "errs = [f'{p.name}: {e.message}' for p in good for e in "
      "v.iter_errors(yaml.safe_load(p.read_text()))]\n"
      "bad = list(v.iter_errors(yaml.safe_load((d / 'bad.yaml').read_text())))\n"
      "print('\\n'.join(errs))\n"
      "sys.exit(0 if not errs and bad and len(good) == 6 else 1)\n";
  std::ofstream(dir / "check.py") << script;
  const std::string command = "'" + python + "' '" + (dir / "check.py").string() + "' '" +
                              RG_TEST_STATUS_SCHEMA + "' '" + dir.string() + "'";
  CHECK(std::system(command.c_str()) == 0);
}

}  // namespace
}  // namespace rg
