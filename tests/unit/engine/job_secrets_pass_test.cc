// Job secrets in a pass (engine/job_secrets.h) against the fake head in process: values reach
// the submission only, a job whose value cannot be had is frozen (no submit, no stop) while the
// others go on, the probe guards env delivery, a rotation restarts nothing, and nothing the pass
// returns or records holds a value.

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reconciler/core/redaction.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/engine/warning.h"
#include "tests/support/pass_harness.h"

namespace rg::engine {
namespace {

using core::Phase;
using core::RayJobStatus;

std::string CommitId(int n) { return std::string(39, '0') + static_cast<char>('a' + n % 6); }

constexpr const char* kValue = "wandb-value-0123456789";
constexpr const char* kDir = "/run/credentials/test";

// A secrets directory in memory: what it holds, and how many reads it served.
class MemorySecrets : public ports::SecretSource {
 public:
  core::Result<std::string> Read(std::string_view reference) override {
    ++reads;
    auto it = values.find(std::string(reference));
    if (it != values.end()) return it->second;
    std::string present;
    for (const auto& [name, value] : values) present += (present.empty() ? "" : ", ") + name;
    return core::Error::NotFound("secret reference '" + std::string(reference) +
                                 "' in the secrets directory " + kDir +
                                 " does not exist (references present: " + present + ")");
  }
  std::map<std::string, std::string> values;
  int reads = 0;
};

// Keeps every submission record.
class MemorySink : public ports::ArtifactSink {
 public:
  core::Status WriteSubmission(const ports::SubmissionRecord& record) override {
    payloads.push_back(core::ToPrettyJson(record.submit_payload));
    return core::OkStatus();
  }
  core::Status WriteDriverLog(std::string_view id, std::string_view log, size_t) override {
    logs[std::string(id)] = std::string(log);
    return core::OkStatus();
  }
  std::vector<std::string> payloads;
  std::map<std::string, std::string> logs;
};

testing::FakeRayOptions WithToken() {
  testing::FakeRayOptions options;
  options.token = "head-token-0123456789";
  options.run_time = std::chrono::hours(1);
  return options;
}

std::string SecretSpec(const std::string& extra = "") {
  return "workload: custom\nentrypoint: sleep 600\nsecrets:\n  WANDB_API_KEY: wandb-key\n" + extra;
}

// One repository on a head; passes with the secrets and sink above.
class World : public testing::PassHarness {
 public:
  explicit World(testing::FakeRayOptions options = WithToken(), std::string cluster_extra = "")
      : PassHarness(std::move(options)), source_(NewRepo(CommitId(0))) {
    secrets = &dir;
    artifacts = &sink;
    SetCluster(cluster_extra);
  }
  void SetCluster(const std::string& extra) {
    source_->SetFile("cluster.yaml", "address: " + ray().address() + "\n" + extra, Next());
  }
  void SetSpec(const std::string& path, const std::string& text) {
    source_->SetFile(path, text, Next());
  }
  PassResult Pass(ReconcileOptions options = {}) {
    return PassHarness::Pass(*source_, std::move(options));
  }
  // The env_vars of the last body Ray received.
  nlohmann::json LastEnv() {
    const auto bodies = ray().SubmitBodies();
    REQUIRE_FALSE(bodies.empty());
    return nlohmann::json::parse(bodies.back())["runtime_env"]["env_vars"];
  }
  MemorySecrets dir;
  MemorySink sink;

 private:
  std::string Next() { return CommitId(++commits_); }
  std::unique_ptr<testing::InMemoryDesiredStateSource> source_;
  int commits_ = 0;
};

bool Holds(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST_CASE("env delivery sends the value to Ray and nothing else shows it", "[job_secrets]") {
  World w;
  w.dir.values = {{"wandb-key", kValue}};
  w.SetSpec("jobs/train.yaml", SecretSpec());
  const PassResult r = w.Pass();
  INFO((r.errors.empty() ? "" : r.errors.front().message()));
  REQUIRE(r.errors.empty());
  CHECK(w.LastEnv()["WANDB_API_KEY"] == kValue);
  REQUIRE(w.sink.payloads.size() == 1);
  CHECK(Holds(w.sink.payloads[0], "<secret:wandb-key>"));
  CHECK_FALSE(Holds(w.sink.payloads[0], kValue));
  // Every form of the value is redacted from what the pass writes, e.g. a Ray message that
  // quotes it base64-encoded.
  const std::string id = r.records.at(0).submission_id;
  w.ray().SetStatus(
      id, RayJobStatus::kFailed,
      std::string("bad key ") + core::Base64(std::string("x") + kValue) + " " + kValue);
  const PassResult after = w.Pass();
  const core::StatusRecord& rec = w.Record("train");
  CHECK_FALSE(Holds(rec.message, kValue));
  CHECK(Holds(rec.message, "<redacted>"));
  CHECK_FALSE(Holds(rec.message, core::Base64(kValue).substr(4, 16)));
  CHECK(after.redactor.Apply(kValue) == "<redacted>");
}

TEST_CASE("a missing reference freezes its job only, and says what is there", "[job_secrets]") {
  World w;
  w.dir.values = {{"hf-read", "hf-value-0123456789"}};
  w.SetSpec("jobs/train.yaml", SecretSpec());
  w.SetSpec("jobs/plain.yaml", "workload: custom\nentrypoint: sleep 600\n");
  const PassResult r = w.Pass();
  CHECK(w.ray().SubmitBodies().size() == 1);  // plain only
  const core::StatusRecord& rec = w.Record("train");
  CHECK(rec.phase == Phase::kInvalid);
  REQUIRE(rec.errors.size() == 1);
  CHECK(Holds(rec.errors[0], "jobs/train.yaml"));
  CHECK(Holds(rec.errors[0], "WANDB_API_KEY: secret reference 'wandb-key'"));
  CHECK(Holds(rec.errors[0], kDir));
  CHECK(Holds(rec.errors[0], "references present: hf-read"));
  CHECK(Holds(rec.errors[0], "frozen (nothing submitted or stopped)"));
  CHECK(w.Record("plain").phase != Phase::kInvalid);
  bool warned = false;
  for (const Warning& warning : r.warnings) {
    warned = warned || (warning.kind == kWarnSecret && Holds(warning.message, "train"));
  }
  CHECK(warned);
  CHECK(r.exit_status == kExitError);

  // The file appears: the next pass submits.
  w.dir.values["wandb-key"] = kValue;
  w.Pass();
  CHECK(w.Record("train").phase == Phase::kPending);
  CHECK(w.ray().SubmitBodies().size() == 2);
}

TEST_CASE("a job frozen by its secrets keeps its running run, even when replaced",
          "[job_secrets]") {
  World w;
  w.dir.values = {{"wandb-key", kValue}};
  w.SetSpec("jobs/train.yaml", SecretSpec());
  w.Pass();
  const std::string running = w.Record("train").submission_id;
  w.ray().SetStatus(running, RayJobStatus::kRunning);
  w.dir.values.clear();
  w.SetSpec("jobs/train.yaml", SecretSpec("rerun: again\n"));  // a new run, which needs the value
  const PassResult r = w.Pass();
  CHECK(r.outcomes.empty());
  CHECK(w.ray().StatusOf(running) == RayJobStatus::kRunning);
  CHECK(w.Record("train").phase == Phase::kInvalid);
  CHECK(w.ray().SubmitBodies().size() == 1);
}

TEST_CASE("a rotated value restarts nothing, and plan and jobs without secrets read nothing",
          "[job_secrets]") {
  World w;
  w.SetSpec("jobs/plain.yaml", "workload: custom\nentrypoint: sleep 600\n");
  w.Pass();
  CHECK(w.dir.reads == 0);  // no spec has secrets: the directory is never read

  w.dir.values = {{"wandb-key", kValue}};
  w.SetSpec("jobs/train.yaml", SecretSpec());
  ReconcileOptions dry;
  dry.dry_run = true;
  const PassResult planned = w.Pass(dry);
  CHECK(w.dir.reads == 0);  // `plan` never reads a value
  CHECK(planned.plan.actions.size() == 1);
  w.Pass();
  const int reads = w.dir.reads;
  CHECK(reads == 1);  // one reference, read once in the pass
  const std::string id = w.Record("train").submission_id;
  w.ray().SetStatus(id, RayJobStatus::kRunning);

  w.dir.values["wandb-key"] = "rotated-value-0123456789";
  const PassResult rotated = w.Pass();
  CHECK(rotated.plan.actions.empty());
  CHECK(w.Record("train").submission_id == id);
  CHECK(w.dir.reads == reads + 1);  // read again (for redaction), never cached across passes
  CHECK(rotated.redactor.Apply("rotated-value-0123456789") == "<redacted>");
  CHECK(w.Pass(dry).plan.actions.empty());
}

TEST_CASE("env delivery to a Jobs API anyone can read is refused, with the ways out",
          "[job_secrets]") {
  testing::FakeRayOptions open;
  open.run_time = std::chrono::hours(1);
  World w(open);
  w.dir.values = {{"wandb-key", kValue}};
  w.SetSpec("jobs/train.yaml", SecretSpec());
  w.SetSpec("jobs/plain.yaml", "workload: custom\nentrypoint: sleep 600\n");
  w.Pass();
  CHECK(w.ray().SubmitBodies().size() == 1);
  const core::StatusRecord& rec = w.Record("train");
  CHECK(rec.phase == Phase::kInvalid);
  REQUIRE(rec.errors.size() == 1);
  for (const char* words :
       {"WANDB_API_KEY", "without credentials", "RAY_AUTH_MODE=token", "authenticating proxy",
        "secret_delivery: node", "allow_secrets_without_ray_auth: true"}) {
    INFO(words);
    CHECK(Holds(rec.errors[0], words));
  }
  CHECK_FALSE(Holds(rec.errors[0], kValue));

  w.SetCluster("allow_secrets_without_ray_auth: true\n");
  w.Pass();
  CHECK(w.ray().SubmitBodies().size() == 2);
  CHECK(w.LastEnv()["WANDB_API_KEY"] == kValue);
}

TEST_CASE("node delivery sends ${NAME} and needs neither a value nor the probe", "[job_secrets]") {
  testing::FakeRayOptions open;
  open.run_time = std::chrono::hours(1);
  World w(open, "secret_delivery: node\n");
  w.secrets = nullptr;  // no directory at all
  w.SetSpec("jobs/train.yaml", SecretSpec());
  const PassResult r = w.Pass();
  INFO((r.errors.empty() ? "" : r.errors.front().message()));
  CHECK(r.errors.empty());
  CHECK(w.LastEnv()["WANDB_API_KEY"] == "${WANDB_API_KEY}");
  CHECK(w.Record("train").phase == Phase::kPending);
}

TEST_CASE("a cluster's secrets are every job's, and a job's own win", "[job_secrets]") {
  World w(WithToken(), "secrets:\n  WANDB_API_KEY: cluster-key\n  HF_TOKEN: hf-read\n");
  w.dir.values = {{"wandb-key", kValue},
                  {"cluster-key", "cluster-value-0123"},
                  {"hf-read", "hf-value-0123456789"}};
  w.SetSpec("jobs/train.yaml", SecretSpec());
  w.Pass();
  CHECK(w.LastEnv()["WANDB_API_KEY"] == kValue);
  CHECK(w.LastEnv()["HF_TOKEN"] == "hf-value-0123456789");
}

}  // namespace
}  // namespace rg::engine
