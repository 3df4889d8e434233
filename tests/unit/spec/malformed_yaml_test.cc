// What the loaders make of a document that is not well-formed YAML: one syntax error, never a
// value read out of the lines a lenient parser would have guessed at.

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/result.h"
#include "reconciler/core/status_model.h"
#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/status_codec.h"
#include "tests/unit/spec/diagnostic_messages.h"

namespace rg::spec {
namespace {

TEST_CASE("an unterminated quote makes the spec invalid instead of swallowing later keys") {
  const Parsed<core::JobSpec> parsed =
      LoadJobSpec("workload: custom\nentrypoint: \"python train.py\nretries: 3\nsuspend: true\"\n",
                  "jobs/t.yaml");
  CHECK_FALSE(parsed.ok());
  CHECK(Messages(parsed.diagnostics) ==
        std::vector<std::string>{"jobs/t.yaml:2:13: error: wrongly indented double-quoted scalar"});
}

TEST_CASE("a line without a colon is a syntax error, not a key with a null value") {
  const Parsed<core::JobSpec> parsed =
      LoadJobSpec("workload: custom\nentrypoint: echo\nsuspend\n", "jobs/t.yaml");
  CHECK_FALSE(parsed.ok());
  CHECK(Messages(parsed.diagnostics) ==
        std::vector<std::string>{"jobs/t.yaml:3:1: error: invalid value after mapping"});
}

TEST_CASE("escapes that yaml-cpp turns into Latin-1 bytes are an error, not unreadable text") {
  // "\_" is U+00A0; yaml-cpp 0.7 gives the single byte 0xA0, which no reader takes as UTF-8.
  for (const char* escape : {"\\_", "\\N"}) {
    DYNAMIC_SECTION(escape) {
      const Parsed<core::JobSpec> parsed = LoadJobSpec(
          std::string("workload: custom\nentrypoint: \"echo a") + escape + "b\"\n", "jobs/t.yaml");
      CHECK_FALSE(parsed.ok());
      REQUIRE(parsed.diagnostics.size() == 1);
      CHECK(parsed.diagnostics[0].ToString().starts_with(
          "jobs/t.yaml:2:13: error: an escape sequence in this string does not make UTF-8 text"));
    }
  }
  // The \u form is UTF-8 and fine.
  const Parsed<core::JobSpec> ok =
      LoadJobSpec("workload: custom\nentrypoint: \"echo a\\u00A0b\"\n", "jobs/t.yaml");
  REQUIRE(ok.ok());
  CHECK(*ok.value->entrypoint ==
        "echo a\xc2\xa0"
        "b");
  // A status file with such an escape is unreadable with its position, never half-read.
  const auto status =
      DecodeStatusYaml("name: a\nphase: Pending\nmessage: \"x\\_y\"\n", "status/a.yaml");
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().message().starts_with("status/a.yaml:3:10: "));
}

TEST_CASE("a malformed cluster file is invalid with its syntax error") {
  const Parsed<core::RayConfig> parsed =
      LoadRayConfig("address: \"http://127.0.0.1:8265\nshared_root: /private\"\n", "cluster.yaml");
  CHECK_FALSE(parsed.ok());
  CHECK(
      Messages(parsed.diagnostics) ==
      std::vector<std::string>{"cluster.yaml:1:10: error: wrongly indented double-quoted scalar"});
}

TEST_CASE("a malformed spec is frozen like any invalid spec, under its path's name") {
  const core::DesiredState state = LoadDesiredState(
      SourceFile{"cluster.yaml", "address: http://127.0.0.1:8265\n"},
      {{"jobs/ok.yaml", "workload: custom\nentrypoint: echo ok\n"},
       {"jobs/team/run.yaml", "name: pinned\nworkload: custom\nentrypoint: 'echo\nretries: 1'\n"}});
  CHECK(state.ClusterValid());
  REQUIRE(state.jobs.size() == 1);
  CHECK(state.jobs[0].path == "jobs/ok.yaml");
  REQUIRE(state.invalid.size() == 1);
  CHECK(state.invalid[0].path == "jobs/team/run.yaml");
  // Nothing of a malformed document is read, its name included.
  CHECK(state.invalid[0].name == "team-run");
  CHECK(Messages(state.invalid[0].diagnostics) ==
        std::vector<std::string>{
            "jobs/team/run.yaml:3:13: error: wrongly indented single-quoted scalar"});
}

TEST_CASE("the existing checks keep their messages ahead of the syntax check") {
  SECTION("bytes that are not UTF-8 are reported as such") {
    CHECK(Messages(LoadJobSpec("workload: \"ab\xff\n", "jobs/t.yaml").diagnostics) ==
          std::vector<std::string>{"jobs/t.yaml:1:14: error: invalid UTF-8 (byte 0xFF)"});
  }
  SECTION("several well-formed documents are one error") {
    CHECK(
        Messages(
            LoadJobSpec("workload: custom\n...\nentrypoint: echo\n", "jobs/t.yaml").diagnostics) ==
        std::vector<std::string>{
            "jobs/t.yaml:3:1: error: a file must hold one YAML document (found 2)"});
  }
  SECTION("duplicate keys are reported by the document builder") {
    CHECK(Messages(LoadJobSpec("workload: custom\nentrypoint: a\nentrypoint: b\n", "jobs/t.yaml")
                       .diagnostics) ==
          std::vector<std::string>{
              "jobs/t.yaml:3:1: error: duplicate key \"entrypoint\" (first written at line 2)"});
  }
}

core::StatusRecord Record() {
  core::StatusRecord r;
  r.name = "ppo-qwen";
  r.spec_path = "jobs/ppo/qwen.yaml";
  r.phase = core::Phase::kRunning;
  r.submission_id = "ppo-qwen-3f2a1c9b0e";
  r.attempt = 0;
  r.message = "Job is currently running";
  return r;
}

TEST_CASE("a status file the encoder wrote is well-formed and reads back") {
  const std::string text = EncodeStatusYaml(Record());
  core::Result<core::StatusRecord> back = DecodeStatusYaml(text, "status/ppo-qwen.yaml");
  REQUIRE(back.ok());
  CHECK(back->phase == core::Phase::kRunning);
  CHECK(back->message == "Job is currently running");
}

TEST_CASE("a malformed status file is unreadable as a whole, never half-read") {
  // The message lost its closing quote: a lenient reader would take the next lines into it,
  // phase included, and still return a record.
  const std::string text =
      "name: ppo-qwen\nspec_path: jobs/ppo/qwen.yaml\nmessage: \"Job is running\n"
      "phase: Running\nsubmission_id: ppo-qwen-3f2a1c9b0e\"\n";
  core::Result<core::StatusRecord> back = DecodeStatusYaml(text, "status/ppo-qwen.yaml");
  REQUIRE_FALSE(back.ok());
  CHECK(back.error().kind() == core::ErrorKind::kInvalidInput);
  CHECK(back.error().message() ==
        "status/ppo-qwen.yaml:3:10: error: wrongly indented double-quoted scalar");
}

TEST_CASE("a status file with a key line cut short is unreadable") {
  std::string text = EncodeStatusYaml(Record());
  const std::string phase = "phase: Running\n";
  const size_t at = text.find(phase);
  REQUIRE(at != std::string::npos);
  text.replace(at, phase.size(), "phase Running\n");
  core::Result<core::StatusRecord> back = DecodeStatusYaml(text, "status/ppo-qwen.yaml");
  REQUIRE_FALSE(back.ok());
  CHECK(back.error().kind() == core::ErrorKind::kInvalidInput);
  const auto line =
      std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n') + 1;
  CHECK(back.error().message().starts_with("status/ppo-qwen.yaml:" + std::to_string(line) +
                                           ":1: error: "));
}

}  // namespace
}  // namespace rg::spec
