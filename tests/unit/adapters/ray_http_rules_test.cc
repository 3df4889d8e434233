#include "reconciler/adapters/ray_http_rules.h"

#include <catch2/catch.hpp>
#include <string>

namespace {

using namespace rg::adapters::ray_http;
using rg::core::ErrorKind;
using rg::core::RayJobStatus;
using rg::core::Value;
using std::chrono::milliseconds;

TEST_CASE("HTTP answers map to error kinds", "[ray_http]") {
  struct Row {
    const char* method;
    int status;
    const char* body;
    ErrorKind kind;
  };
  const Row rows[] = {
      {"POST", 400, "TypeError: unexpected keyword argument 'x'", ErrorKind::kInvalidInput},
      {"GET", 401, "Unauthorized: Missing authentication token", ErrorKind::kUnauthorized},
      {"GET", 403, "Forbidden: Invalid authentication token", ErrorKind::kUnauthorized},
      {"GET", 404, "Job x does not exist", ErrorKind::kNotFound},
      {"POST", 500,
       "Traceback...\nValueError: Job with submission_id a already exists. Please use a "
       "different submission_id.\n.",
       ErrorKind::kConflict},
      {"POST", 500, "Please use a different submission_id", ErrorKind::kConflict},
      {"POST", 500, "No available agent to submit job, please try again later.",
       ErrorKind::kTransient},
      {"DELETE", 500,
       "RuntimeError: Attempted to delete job 'a', but it is in a non-terminal state RUNNING.",
       ErrorKind::kConflict},
      {"DELETE", 500, "Traceback: KeyError", ErrorKind::kTransient},
      {"GET", 500, "already exists", ErrorKind::kTransient},  // only a submit can duplicate
      {"GET", 502, "bad gateway", ErrorKind::kTransient},
      {"GET", 503, "", ErrorKind::kTransient},
      {"GET", 429, "slow down", ErrorKind::kTransient},
      {"POST", 405, "'POST' method not allowed for browser traffic.", ErrorKind::kFatal},
  };
  for (const Row& row : rows) {
    INFO(row.method << " " << row.status << " " << row.body);
    rg::core::Error e = ClassifyHttpError(row.method, "/api/jobs/x", row.status, row.body);
    CHECK(e.kind() == row.kind);
    CHECK(e.message().find(std::to_string(row.status)) != std::string::npos);
    CHECK(e.message().find("/api/jobs/x") != std::string::npos);
  }
}

TEST_CASE("a body refused for its size is invalid input that names Ray's limit", "[ray_http]") {
  struct Row {
    const char* method;
    int status;
    const char* body;
  };
  // 413: aiohttp's own answer (seen on Ray 2.51.1 and 2.60.0); a 500 naming the exception:
  // a handler that reads the body inside its own try block.
  const Row rows[] = {
      {"PUT", 413, "Maximum request body size 104857600 exceeded."},
      {"PUT", 500,
       "Traceback (most recent call last):\n  File \"job_head.py\", in upload_package\n"
       "aiohttp.web_exceptions.HTTPRequestEntityTooLarge: Request Entity Too Large\n"},
      {"PUT", 500, "Request Entity Too Large"},
      {"POST", 413, ""},
  };
  for (const Row& row : rows) {
    INFO(row.method << " " << row.status << " " << row.body);
    rg::core::Error e =
        ClassifyHttpError(row.method, "/api/packages/gcs/_ray_pkg_0a.zip", row.status, row.body);
    CHECK(e.kind() == ErrorKind::kInvalidInput);
    CHECK(e.message().find("up to 100 MiB") != std::string::npos);
    CHECK(e.message().find(std::to_string(row.status)) != std::string::npos);
  }
  // Any other 500 to an upload stays transient.
  CHECK(ClassifyHttpError("PUT", "/p", 500, "Traceback\nRuntimeError: GCS unavailable").kind() ==
        ErrorKind::kTransient);
  CHECK(ClassifyHttpError("PUT", "/p", 503, "").kind() == ErrorKind::kTransient);
}

TEST_CASE("a 404 to an upload is fatal, never not-found", "[ray_http]") {
  CHECK(ClassifyHttpError("PUT", "/p", 404, "404: Not Found").kind() == ErrorKind::kFatal);
  CHECK(ClassifyHttpError("GET", "/p", 404, "Package gcs://x does not exist").kind() ==
        ErrorKind::kNotFound);
  CHECK(ClassifyHttpError("PUT", "/p", 401, "").kind() == ErrorKind::kUnauthorized);
}

TEST_CASE("package names are _ray_pkg_, lowercase letters and digits, .zip", "[ray_http]") {
  CHECK(IsPackageName("_ray_pkg_0123456789abcdef.zip"));
  CHECK(IsPackageName("_ray_pkg_z.zip"));
  for (const char* bad : {"", "_ray_pkg_.zip", "_ray_pkg_ABC.zip", "_ray_pkg_a-b.zip",
                          "_ray_pkg_ab.tar", "ray_pkg_ab.zip", "_ray_pkg_ab.zip/..",
                          "_ray_pkg_a/b.zip", "x_ray_pkg_ab.zip", "_ray_pkg_ab.ZIP"}) {
    INFO(bad);
    CHECK_FALSE(IsPackageName(bad));
  }
  CHECK(kMaxRequestBodyBytes == 104857600);
}

TEST_CASE("error messages keep a short body and the exception line of a traceback", "[ray_http]") {
  CHECK(TrimBodyForMessage("  Job x does not exist\n") == "Job x does not exist");
  CHECK(TrimBodyForMessage("") == "");
  std::string long_body(5000, 'a');
  std::string trimmed = TrimBodyForMessage(long_body);
  CHECK(trimmed.size() == kMaxBodyInMessage + 3);
  CHECK(trimmed.substr(trimmed.size() - 3) == "...");

  std::string traceback =
      "Traceback (most recent call last):\n  File \"job_head.py\", line 419, in submit_job\n"
      "    resp = await x()\n" +
      std::string(600, '^') +
      "\nRuntimeError: Request failed with status code 400: Traceback (most recent call "
      "last):\n  File \"job_manager.py\"\nValueError: Job with submission_id a already "
      "exists. Please use a different submission_id.\n.\n";
  std::string kept = TrimBodyForMessage(traceback);
  CHECK(kept.rfind("ValueError: Job with submission_id a already exists", 0) == 0);
}

TEST_CASE("job details are read with every optional key null", "[ray_http]") {
  auto job = ParseJobDetails(R"({"type": "SUBMISSION", "job_id": null, "submission_id": "a-1",
      "driver_info": null, "status": "PENDING", "entrypoint": "sleep 60",
      "message": "Job has not started yet.", "error_type": null, "start_time": 1795339164841,
      "end_time": null, "metadata": null, "runtime_env": null,
      "driver_agent_http_address": null, "driver_node_id": null, "driver_exit_code": null})");
  REQUIRE(job.ok());
  CHECK(job->type == "SUBMISSION");
  CHECK(job->submission_id == "a-1");
  CHECK(job->status == RayJobStatus::kPending);
  CHECK_FALSE(job->job_id.has_value());
  CHECK_FALSE(job->error_type.has_value());
  CHECK(job->start_time_ms == 1795339164841);
  CHECK_FALSE(job->end_time_ms.has_value());
  CHECK(job->metadata.empty());
  CHECK_FALSE(job->driver_exit_code.has_value());
  CHECK_FALSE(job->driver_node_id.has_value());
}

TEST_CASE("job details of a finished driver job are read in full", "[ray_http]") {
  auto job = ParseJobDetails(R"({"type": "DRIVER", "job_id": "02000000", "submission_id": null,
      "driver_info": {"id": "02000000", "node_ip_address": "10.0.0.1", "pid": "4242"},
      "status": "FAILED", "entrypoint": "python x.py", "message": "boom",
      "error_type": "JOB_ENTRYPOINT_COMMAND_ERROR", "start_time": 10, "end_time": 20,
      "metadata": {"gitops.name": "x", "n": 1}, "driver_node_id": "abc",
      "driver_exit_code": 137, "a_future_key": [1, 2]})");
  REQUIRE(job.ok());
  CHECK(job->type == "DRIVER");
  CHECK(job->submission_id.empty());
  CHECK(job->job_id == "02000000");
  CHECK(job->status == RayJobStatus::kFailed);
  CHECK(job->error_type == "JOB_ENTRYPOINT_COMMAND_ERROR");
  CHECK(job->end_time_ms == 20);
  CHECK(job->driver_exit_code == 137);
  CHECK(job->driver_node_id == "abc");
  CHECK(job->metadata.size() == 1);
  CHECK(job->metadata.at("gitops.name") == "x");
}

TEST_CASE("job details keep the runtime_env Ray echoes, a list leaves it out", "[ray_http]") {
  const std::string details = R"({"type": "SUBMISSION", "submission_id": "a-1",
      "status": "RUNNING", "entrypoint": "true", "metadata": {},
      "runtime_env": {"env_vars": {"A": "1"}, "config": {"setup_timeout_seconds": 600},
                      "pip": ["x"], "big": 18446744073709551615, "f": 1.5, "t": true}})";
  auto job = ParseJobDetails(details);
  REQUIRE(job.ok());
  const rg::core::Value& env = job->runtime_env.get();
  REQUIRE(env.is_object());
  CHECK(env.Find("env_vars")->Find("A")->as_string() == "1");
  CHECK(env.Find("config")->Find("setup_timeout_seconds")->as_int() == 600);
  CHECK(env.Find("pip")->as_array().at(0).as_string() == "x");
  CHECK(env.Find("big")->is_double());
  CHECK(env.Find("f")->as_double() == 1.5);
  CHECK(env.Find("t")->as_bool());
  CHECK(ParseJobDetails(R"({"status": "RUNNING", "runtime_env": null})")->runtime_env.empty());
  auto list = ParseJobList("[" + details + "]");
  REQUIRE(list.ok());
  CHECK(list->at(0).runtime_env.empty());
}

TEST_CASE("malformed job details are errors, not crashes", "[ray_http]") {
  CHECK(ParseJobDetails("not json").error().kind() == ErrorKind::kFatal);
  CHECK(ParseJobDetails("[]").error().kind() == ErrorKind::kFatal);
  CHECK_FALSE(ParseJobDetails(R"({"status": 3})").ok());
  CHECK_FALSE(ParseJobDetails(R"({"start_time": "yesterday"})").ok());
  CHECK(ParseJobDetails(R"({"status": "RESURRECTED"})")->status == RayJobStatus::kUnknown);
  CHECK(ParseJobList(R"({"jobs": []})").error().kind() == ErrorKind::kFatal);
  auto list = ParseJobList(R"([{"submission_id": "a", "status": "RUNNING"},
                               {"submission_id": "b", "status": "STOPPED"}])");
  REQUIRE(list.ok());
  REQUIRE(list->size() == 2);
  CHECK((*list)[1].status == RayJobStatus::kStopped);
}

TEST_CASE("an answer with a NUL byte is not JSON, even after a complete object", "[ray_http]") {
  using namespace std::string_literals;
  const std::string details = R"({"submission_id": "a", "status": "RUNNING"})"s + "\r\0\ngarbage"s;
  CHECK(ParseJobDetails(details).error().kind() == ErrorKind::kFatal);
  CHECK(ParseJobList("[]\0"s).error().kind() == ErrorKind::kFatal);
  CHECK_FALSE(ParseVersion(R"({"ray_version": "2.60.0"})"s + "\0"s).ok());
  CHECK(ParseVersion(R"({"ray_version": "2.60.0"})").ok());
}

TEST_CASE("the version answer is read and needs a ray_version", "[ray_http]") {
  auto v = ParseVersion(R"({"version": "4", "ray_version": "2.60.0", "ray_commit": "b7f4",
                            "session_name": "session_2026"})");
  REQUIRE(v.ok());
  CHECK(v->version == "4");
  CHECK(v->ray_version == "2.60.0");
  CHECK(v->session_name == "session_2026");
  CHECK_FALSE(ParseVersion(R"({"version": "4"})").ok());
}

TEST_CASE("Ray versions compare numerically", "[ray_http]") {
  CHECK(ParseVersionTriple("2.60.0") == VersionTriple{2, 60, 0});
  CHECK(ParseVersionTriple("2.9") == VersionTriple{2, 9, 0});
  CHECK(ParseVersionTriple("3.0.0.dev0") == VersionTriple{3, 0, 0});
  CHECK_FALSE(ParseVersionTriple("nightly").has_value());
  CHECK(*ParseVersionTriple("2.10.0") > *ParseVersionTriple("2.9.3"));
}

TEST_CASE("submit bodies are gated on the server's Ray version", "[ray_http]") {
  Value body = Value::Object{};
  body["entrypoint"] = "true";
  body["submission_id"] = "a";
  body["entrypoint_num_cpus"] = 1;
  body["entrypoint_num_gpus"] = 0;
  body["entrypoint_resources"]["worker_node"] = 1;
  body["entrypoint_memory"] = int64_t{1000};
  body["entrypoint_label_selector"]["zone"] = "a";
  body["metadata"] = nullptr;

  auto keys = [](const Value& v) {
    std::string out;
    for (const auto& [k, unused] : v.as_object()) out += k + ",";
    return out;
  };
  CHECK(keys(GateSubmitBody(body, "1.13.0")) == "entrypoint,");
  CHECK(keys(GateSubmitBody(body, "2.0.1")) == "entrypoint,submission_id,");
  CHECK(keys(GateSubmitBody(body, "2.7.0")) ==
        "entrypoint,entrypoint_num_cpus,entrypoint_num_gpus,entrypoint_resources,submission_id,");
  CHECK(keys(GateSubmitBody(body, "2.8.0")) ==
        "entrypoint,entrypoint_memory,entrypoint_num_cpus,entrypoint_num_gpus,"
        "entrypoint_resources,submission_id,");
  // entrypoint_label_selector: from Ray 2.54.0 (a 2.51.1 head answers 400 to it).
  for (const char* before : {"2.49.0", "2.51.1", "2.53.0"}) {
    INFO(before);
    CHECK(keys(GateSubmitBody(body, before)) ==
          "entrypoint,entrypoint_memory,entrypoint_num_cpus,entrypoint_num_gpus,"
          "entrypoint_resources,submission_id,");
  }
  for (const char* since : {"2.54.0", "2.60.0"}) {
    INFO(since);
    CHECK(keys(GateSubmitBody(body, since)) ==
          "entrypoint,entrypoint_label_selector,entrypoint_memory,entrypoint_num_cpus,"
          "entrypoint_num_gpus,entrypoint_resources,submission_id,");
  }
  // A development build cannot be compared: assume it is recent.
  CHECK(GateSubmitBody(body, "nightly").Find("entrypoint_memory") != nullptr);
  // Unknown keys are not ours to drop: the server rejects them and says so.
  Value odd = body;
  odd["surprise"] = 1;
  CHECK(GateSubmitBody(odd, "2.60.0").Find("surprise") != nullptr);
  CHECK(GateSubmitBody(body, "2.60.0").Find("metadata") == nullptr);
}

TEST_CASE("backoff is full jitter below a doubling, capped ceiling", "[ray_http]") {
  const milliseconds initial{200}, cap{5000};
  CHECK(BackoffDelay(0, initial, cap, 0.0) == milliseconds(0));
  CHECK(BackoffDelay(0, initial, cap, 0.5) == milliseconds(100));
  CHECK(BackoffDelay(0, initial, cap, 0.999999) <= milliseconds(200));
  CHECK(BackoffDelay(1, initial, cap, 0.5) == milliseconds(200));
  CHECK(BackoffDelay(3, initial, cap, 0.5) == milliseconds(800));
  CHECK(BackoffDelay(10, initial, cap, 0.999999) <= cap);
  CHECK(BackoffDelay(10, initial, cap, 0.5) == milliseconds(2500));
  CHECK(BackoffDelay(1000, initial, cap, 1.0) == cap);  // no overflow for huge retries
  CHECK(BackoffDelay(2, initial, cap, -3.0) == milliseconds(0));
  for (int retry = 0; retry < 20; ++retry) {
    for (double u : {0.0, 0.25, 0.75, 0.9999}) {
      auto d = BackoffDelay(retry, initial, cap, u);
      CHECK(d >= milliseconds(0));
      CHECK(d <= cap);
    }
  }
}

TEST_CASE("ids are percent-encoded as one path segment", "[ray_http]") {
  CHECK(EncodePathSegment("ppo-qwen-3f2a1c9b0e.r1_x~") == "ppo-qwen-3f2a1c9b0e.r1_x~");
  CHECK(EncodePathSegment("a/b c?") == "a%2Fb%20c%3F");
  CHECK(EncodePathSegment("..") == "%2E%2E");
  CHECK(EncodePathSegment("") == "");
}

}  // namespace
