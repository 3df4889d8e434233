// adapters::ArtifactWriter on a real filesystem: layout, atomic replacement, adoption, and
// that no secret reaches a file.

#include "reconciler/adapters/artifact_writer.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_files.h"

namespace {

namespace fs = std::filesystem;
using rg::adapters::ArtifactWriter;
using rg::core::Value;

using rg::testing::ReadFileText;
using rg::testing::TempDir;

rg::ports::SubmissionRecord SampleRecord() {
  rg::ports::SubmissionRecord r;
  r.submission_id = "ppo-a-0123456789";
  r.ray_config_text = "address: http://127.0.0.1:8265\n";
  r.jobspec_text = "workload: custom\nentrypoint: echo hi\n";
  Value::Object env{{"PYTHONPATH", Value("/code:${PYTHONPATH}")},
                    {"WANDB_API_KEY", Value("wandb-secret")}};
  r.submit_payload = Value(Value::Object{{"entrypoint", Value("echo hi")},
                                         {"runtime_env", Value(Value::Object{{"env_vars", env}})},
                                         {"submission_id", Value("ppo-a-0123456789")}});
  r.ray_address = "http://user:pw@127.0.0.1:8265";
  r.commit = "abc123";
  r.ray_answer = "accepted: submission_id ppo-a-0123456789";
  r.cluster_status_pre = "Resources\n 0.0/4.0 CPU";
  r.job_list_post = "ppo-a-0123456789 PENDING SUBMISSION managed-by=ray-gitops echo hi\n";
  return r;
}

ArtifactWriter::NowFunction FixedClock(int64_t seconds) {
  return [seconds] { return std::chrono::system_clock::time_point(std::chrono::seconds(seconds)); };
}

TEST_CASE("ArtifactWriter lays out the six files of a submission") {
  TempDir tmp;
  ArtifactWriter writer(tmp.dir(), rg::core::Redactor{}, FixedClock(1700000000));
  REQUIRE(writer.WriteSubmission(SampleRecord()).ok());
  const fs::path dir = tmp.dir() / "jobs" / "ppo-a-0123456789";
  CHECK(writer.JobDir("ppo-a-0123456789") == dir);
  CHECK(ReadFileText(dir / "config" / "ray_config.yaml") == "address: http://127.0.0.1:8265\n");
  CHECK(ReadFileText(dir / "config" / "jobspec.yaml") == "workload: custom\nentrypoint: echo hi\n");
  CHECK(ReadFileText(dir / "debug" / "ray_status_pre.txt") == "Resources\n 0.0/4.0 CPU\n");
  CHECK(ReadFileText(dir / "debug" / "ray_job_list_post.txt") ==
        "ppo-a-0123456789 PENDING SUBMISSION managed-by=ray-gitops echo hi\n");
  CHECK(ReadFileText(dir / "logs" / "submit.out") ==
        "time: 2023-11-14T22:13:20Z\n"
        "submission_id: ppo-a-0123456789\n"
        "outcome: submitted\n"
        "commit: abc123\n"
        "ray_address: http://127.0.0.1:8265\n"
        "ray_answer:\n"
        "  accepted: submission_id ppo-a-0123456789\n");
  const std::string payload = ReadFileText(dir / "config" / "submit_payload.json");
  CHECK(payload.find("\"WANDB_API_KEY\": \"<redacted>\"") != std::string::npos);
  CHECK(payload.find("wandb-secret") == std::string::npos);
  CHECK(payload.find("\"PYTHONPATH\": \"/code:${PYTHONPATH}\"") != std::string::npos);
}

TEST_CASE("ArtifactWriter scrubs its secrets from every file, whatever field holds them") {
  TempDir tmp;
  const std::string token = "tok-5d41402abc4b2a76b9719d911017c592";
  ArtifactWriter writer(tmp.dir(), {token, ""});
  auto record = SampleRecord();
  record.ray_answer = "HTTP 403: bad token " + token;
  record.cluster_status_pre = "auth " + token;
  record.job_list_post = "x RUNNING SUBMISSION managed-by=- echo " + token + "\n";
  record.ray_config_text = "# token " + token + "\n";
  record.jobspec_text = "# pasted by mistake: " + token + "\n";
  record.submit_payload[std::string("entrypoint")] = Value("curl -H 'Bearer " + token + "'");
  REQUIRE(writer.WriteSubmission(record).ok());
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(tmp.dir())) {
    if (!entry.is_regular_file()) continue;
    ++files;
    const std::string text = ReadFileText(entry.path());
    INFO(entry.path().string());
    CHECK(text.find(token) == std::string::npos);
    CHECK(text.find("<redacted>") != std::string::npos);
  }
  CHECK(files == 6);
}

TEST_CASE("ArtifactWriter on adoption keeps the creation files and appends to submit.out") {
  TempDir tmp;
  ArtifactWriter writer(tmp.dir(), rg::core::Redactor{}, FixedClock(0));
  REQUIRE(writer.WriteSubmission(SampleRecord()).ok());

  auto again = SampleRecord();
  again.adopted = true;
  again.jobspec_text = "# edited comment\nworkload: custom\nentrypoint: echo hi\n";
  again.cluster_status_pre = "later status";
  again.job_list_post = "ppo-a-0123456789 RUNNING SUBMISSION managed-by=ray-gitops echo hi\n";
  again.ray_answer = "duplicate submission id\nadopted";
  REQUIRE(writer.WriteSubmission(again).ok());

  const fs::path dir = tmp.dir() / "jobs" / "ppo-a-0123456789";
  CHECK(ReadFileText(dir / "config" / "jobspec.yaml") == "workload: custom\nentrypoint: echo hi\n");
  CHECK(ReadFileText(dir / "debug" / "ray_status_pre.txt") == "Resources\n 0.0/4.0 CPU\n");
  CHECK(ReadFileText(dir / "debug" / "ray_job_list_post.txt").find("RUNNING") != std::string::npos);
  const std::string log = ReadFileText(dir / "logs" / "submit.out");
  CHECK(log.find("outcome: submitted\n") < log.find("\n\ntime: 1970-01-01T00:00:00Z\n"));
  CHECK(log.find("outcome: adopted\n") != std::string::npos);
  CHECK(log.find("ray_answer:\n  duplicate submission id\n  adopted\n") != std::string::npos);

  // A missing creation file is filled in on adoption.
  fs::remove(dir / "config" / "ray_config.yaml");
  REQUIRE(writer.WriteSubmission(again).ok());
  CHECK(ReadFileText(dir / "config" / "ray_config.yaml") == "address: http://127.0.0.1:8265\n");
}

TEST_CASE("ArtifactWriter leaves no temporary files behind") {
  TempDir tmp;
  ArtifactWriter writer(tmp.dir());
  REQUIRE(writer.WriteSubmission(SampleRecord()).ok());
  REQUIRE(writer.WriteSubmission(SampleRecord()).ok());
  for (const auto& entry : fs::recursive_directory_iterator(tmp.dir())) {
    CHECK(entry.path().filename().string().find(".tmp.") == std::string::npos);
  }
}

TEST_CASE("ArtifactWriter refuses ids that would leave the jobs directory") {
  TempDir tmp;
  ArtifactWriter writer(tmp.dir() / "root");
  for (const char* id : {"", ".", "..", "../escape", "a/b", "a\\b"}) {
    auto record = SampleRecord();
    record.submission_id = id;
    auto status = writer.WriteSubmission(record);
    INFO(id);
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().kind() == rg::core::ErrorKind::kInvalidInput);
  }
  CHECK_FALSE(fs::exists(tmp.dir() / "escape"));
  CHECK_FALSE(fs::exists(tmp.dir() / "root"));
}

TEST_CASE("WriteFileAtomically replaces content and reports an unwritable place") {
  TempDir tmp;
  const fs::path file = tmp.dir() / "a" / "b.txt";
  REQUIRE(rg::adapters::WriteFileAtomically(file, "one").ok());
  REQUIRE(rg::adapters::WriteFileAtomically(file, "two").ok());
  CHECK(ReadFileText(file) == "two");

  std::ofstream(tmp.dir() / "plain") << "x";  // a file where a directory is needed
  auto status = rg::adapters::WriteFileAtomically(tmp.dir() / "plain" / "c.txt", "three");
  REQUIRE_FALSE(status.ok());
  CHECK_THAT(status.error().message(), Catch::Contains("plain"));
}

// Sets the process umask for one scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t old_;
};

fs::perms ModeOf(const fs::path& p) { return fs::status(p).permissions() & fs::perms::all; }

TEST_CASE("the folders of a submission are 0755 whatever the umask, and checkpoints/ is not made") {
  TempDir tmp;
  const fs::path root = tmp.dir() / "shared";
  fs::create_directories(root);
  fs::permissions(root, fs::perms::owner_all);  // a folder that exists is left as it is
  constexpr auto kFolder = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec;
  for (mode_t mask : {mode_t{077}, mode_t{022}, mode_t{0}}) {
    INFO("umask " << mask);
    ScopedUmask umask(mask);
    auto record = SampleRecord();
    record.submission_id = "ppo-a-0123456789-u" + std::to_string(mask);
    ArtifactWriter writer(root, rg::core::Redactor{}, FixedClock(1700000000));
    REQUIRE(writer.WriteSubmission(record).ok());
    const fs::path dir = writer.JobDir(record.submission_id);
    CHECK(ModeOf(root / "jobs") == kFolder);
    CHECK(ModeOf(dir) == kFolder);
    for (const char* sub : {"config", "logs", "debug"}) CHECK(ModeOf(dir / sub) == kFolder);
    CHECK_FALSE(fs::exists(dir / "checkpoints"));
    REQUIRE(writer.WriteDriverLog(record.submission_id + "-r1", "line\n", 0).ok());
    CHECK(ModeOf(writer.JobDir(record.submission_id + "-r1")) == kFolder);
  }
  CHECK(ModeOf(root) == fs::perms::owner_all);
}

}  // namespace

TEST_CASE("ArtifactWriter keeps a driver log whole and redacted, and replaces it whole") {
  TempDir tmp;
  rg::core::Redactor secrets;
  secrets.Add("hf_s3cr3t");
  ArtifactWriter writer(tmp.dir(), secrets, FixedClock(1700000000));
  const fs::path log = tmp.dir() / "jobs" / "sft-a-0123456789" / "logs" / "driver.log";
  REQUIRE(writer.WriteDriverLog("sft-a-0123456789", "step 1\nHF_TOKEN=hf_s3cr3t\ndone\n", 0).ok());
  CHECK(ReadFileText(log) == "step 1\nHF_TOKEN=<redacted>\ndone\n");
  REQUIRE(writer.WriteDriverLog("sft-a-0123456789", "", 0).ok());
  CHECK(ReadFileText(log).empty());
  CHECK_FALSE(writer.WriteDriverLog("../escape", "x", 0).ok());
  CHECK_FALSE(fs::exists(tmp.dir() / "jobs" / "escape"));
}

TEST_CASE("A driver log over the cap keeps its last lines after a line saying what was cut") {
  // Lines of 10 bytes; the cut falls inside a line and moves on to the next one.
  std::string log;
  for (int i = 0; i < 1000; ++i) log += "line " + std::to_string(10'000 + i).substr(1) + "\n";
  REQUIRE(log.size() == 10'000);
  const std::string kept = rg::adapters::LastOfDriverLog(log, 95);
  CHECK(kept ==
        "[ray-gitops: the first 9910 bytes of this driver log are left out; logs/driver.log "
        "keeps at most 95]\n"
        "line 0991\nline 0992\nline 0993\nline 0994\nline 0995\nline 0996\nline 0997\n"
        "line 0998\nline 0999\n");
  CHECK(rg::adapters::LastOfDriverLog(log, 10'000) == log);
  // The end of a longer log, read after 5,000 bytes not read: those count as left out too,
  // and the text starts at a line.
  CHECK(rg::adapters::LastOfDriverLog(log.substr(5'003), 10'000, 5'003) ==
        "[ray-gitops: the first 5010 bytes of this driver log are left out; logs/driver.log "
        "keeps at most 10000]\n" +
            log.substr(5'010));
  // No line starts near the cut: the last bytes as they are.
  const std::string one_line(100, 'x');
  CHECK(rg::adapters::LastOfDriverLog(one_line, 10).ends_with("]\nxxxxxxxxxx"));

  TempDir tmp;
  ArtifactWriter writer(tmp.dir(), rg::core::Redactor{}, FixedClock(1700000000));
  const std::string big(rg::ports::kDriverLogMaxBytes + 100, 'y');
  REQUIRE(writer.WriteDriverLog("big-0123456789", big, 0).ok());
  const std::string written =
      ReadFileText(tmp.dir() / "jobs" / "big-0123456789" / "logs" / "driver.log");
  CHECK(written.ends_with(std::string(rg::ports::kDriverLogMaxBytes, 'y')));
  CHECK(written.size() < rg::ports::kDriverLogMaxBytes + 200);
}
