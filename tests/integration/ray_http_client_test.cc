// RayHttpJobServer against the fake head, where faults can be injected: what goes on the wire,
// what is retried and what is not, and how a submit whose answer was lost is resolved.

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/adapters/ray_http_rules.h"
#include "reconciler/core/siphash.h"
#include "reconciler/core/time_format.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"
#include "tests/support/zip_bytes.h"

namespace {

using rg::adapters::RayClientOptions;
using rg::adapters::RayHttpJobServer;
using rg::core::ErrorKind;
using rg::core::RayJobStatus;
using rg::core::Value;
using rg::testing::FakeRayOptions;
using rg::testing::FakeRayServer;
namespace route = rg::testing;
using namespace std::chrono_literals;

// Three attempts: the retry tests fail the first two.
RayClientOptions FastOptions(const FakeRayServer& fake) {
  return rg::testing::FastClientOptions(fake.address(), 3);
}

Value Body(const std::string& id, const std::string& entrypoint = "echo hi") {
  Value body = Value::Object{};
  body["entrypoint"] = entrypoint;
  body["submission_id"] = id;
  return body;
}

nlohmann::json LastSubmitted(const FakeRayServer& fake) {
  auto bodies = fake.SubmitBodies();
  REQUIRE_FALSE(bodies.empty());
  return nlohmann::json::parse(bodies.back());
}

TEST_CASE("client identifies itself, authenticates twice over and sends JSON bodies", "[client]") {
  FakeRayOptions fo;
  fo.token = "s3cret";
  FakeRayServer fake(fo);
  RayClientOptions o = FastOptions(fake);
  o.token = "s3cret";
  o.headers = {{"X-Team", "rl"}, {"User-Agent", "Mozilla/5.0"}};
  RayHttpJobServer client(o);
  REQUIRE(client.Submit(Body("wire-1")).ok());

  auto h = fake.LastHeaders(route::kRouteSubmit);
  CHECK(h["user-agent"] == std::string("ray-gitops/") + RG_VERSION);
  CHECK(h["authorization"] == "Bearer s3cret");
  CHECK(h["x-ray-authorization"] == "Bearer s3cret");
  CHECK(h["x-team"] == "rl");
  CHECK(h["content-type"] == "application/json");
  CHECK(fake.LastHeaders(route::kRouteVersion)["user-agent"].rfind("ray-gitops/", 0) == 0);
}

TEST_CASE("the credentials probe sends neither the token nor the extra headers", "[client]") {
  FakeRayOptions fo;
  fo.token = "s3cret-probe";
  FakeRayServer fake(fo);
  RayClientOptions o = FastOptions(fake);
  o.token = "s3cret-probe";
  o.headers = {{"X-Proxy-Key", "proxy-secret"}};
  RayHttpJobServer client(o);
  auto closed = client.JobsReadableWithoutCredentials();
  REQUIRE(closed.ok());
  CHECK_FALSE(*closed);
  auto h = fake.LastHeaders(route::kRouteList);
  CHECK_FALSE(h.contains("authorization"));
  CHECK_FALSE(h.contains("x-ray-authorization"));
  CHECK_FALSE(h.contains("x-proxy-key"));
  CHECK(h["user-agent"].rfind("ray-gitops/", 0) == 0);

  fake.SetToken(std::nullopt);
  auto open = client.JobsReadableWithoutCredentials();
  REQUIRE(open.ok());
  CHECK(*open);
  // A proxy's redirect to its login page, or any other refusal: not readable. A failing head:
  // unknown, and not retried.
  for (int status : {302, 401, 403, 404}) {
    fake.FailNext(route::kRouteList, 1, status);
    auto refused = client.JobsReadableWithoutCredentials();
    INFO(status);
    REQUIRE(refused.ok());
    CHECK_FALSE(*refused);
  }
  fake.ResetCounters();
  fake.FailNext(route::kRouteList, 1, 503);
  auto failed = client.JobsReadableWithoutCredentials();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().IsTransient());
  CHECK(failed.error().message().find("HTTP 503") != std::string::npos);
  CHECK(fake.RequestCount(route::kRouteList) == 1);
}

TEST_CASE("an extra User-Agent header cannot make the client look like a browser", "[client]") {
  FakeRayServer fake;
  RayClientOptions o = FastOptions(fake);
  o.headers = {{"user-agent", "Mozilla/5.0"}};
  RayHttpJobServer client(o);
  REQUIRE(client.Submit(Body("ua-1")).ok());
  CHECK(fake.LastHeaders(route::kRouteSubmit)["user-agent"].rfind("ray-gitops/", 0) == 0);
}

TEST_CASE("the fake refuses a browser-looking POST with 405 and needs the trailing slash",
          "[fake]") {
  FakeRayServer fake;
  httplib::Client raw(fake.address());
  httplib::Headers browser = {{"User-Agent", "Mozilla/5.0 (X11; Linux x86_64)"}};
  auto post = raw.Post("/api/jobs/", browser, R"({"entrypoint":"true"})", "application/json");
  REQUIRE(post);
  CHECK(post->status == 405);
  CHECK(post->body == "'POST' method not allowed for browser traffic.");
  auto get = raw.Get("/api/jobs/", browser);
  REQUIRE(get);
  CHECK(get->status == 200);
  auto no_slash = raw.Get("/api/jobs");
  REQUIRE(no_slash);
  CHECK(no_slash->status == 404);
  CHECK(fake.JobCount() == 0);
}

TEST_CASE("idempotent calls are retried on 5xx and succeed when the server recovers", "[client]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  REQUIRE(client.Submit(Body("retry-1")).ok());
  fake.FailNext(route::kRouteGet, 2, 503, "upstream unavailable");
  auto job = client.Get("retry-1");
  REQUIRE(job.ok());
  CHECK(job->submission_id == "retry-1");
  CHECK(fake.RequestCount(route::kRouteGet) == 3);
}

TEST_CASE("retries stop after max_attempts and report a transient error with the body",
          "[client]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  fake.FailNext(route::kRouteList, 10, 503, "upstream unavailable");
  auto jobs = client.List();
  REQUIRE_FALSE(jobs.ok());
  CHECK(jobs.error().kind() == ErrorKind::kTransient);
  CHECK(jobs.error().message().find("503") != std::string::npos);
  CHECK(jobs.error().message().find("upstream unavailable") != std::string::npos);
  CHECK(fake.RequestCount(route::kRouteList) == 3);
}

TEST_CASE("client errors are not retried", "[client]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  auto job = client.Get("nobody");
  REQUIRE_FALSE(job.ok());
  CHECK(job.error().kind() == ErrorKind::kNotFound);
  CHECK(fake.RequestCount(route::kRouteGet) == 1);
}

TEST_CASE("stop and delete are retried as idempotent calls", "[client]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  REQUIRE(client.Submit(Body("idem-1", "sleep 60")).ok());
  fake.FailNext(route::kRouteStop, 1, 502, "bad gateway");
  auto stop = client.Stop("idem-1");
  REQUIRE(stop.ok());
  CHECK(*stop);
  CHECK(fake.RequestCount(route::kRouteStop) == 2);
  fake.Tick();
  fake.FailNext(route::kRouteDelete, 1, 503, "busy");
  auto del = client.Delete("idem-1");
  REQUIRE(del.ok());
  CHECK(fake.RequestCount(route::kRouteDelete) == 2);
}

TEST_CASE("a submit whose answer is lost after the job was accepted succeeds without resending",
          "[client][submit]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  fake.DropNext(route::kRouteSubmit, 1, /*after_handling=*/true);
  auto id = client.Submit(Body("lost-answer"));
  REQUIRE(id.ok());
  CHECK(*id == "lost-answer");
  CHECK(fake.RequestCount(route::kRouteSubmit) == 1);
  CHECK(fake.RequestCount(route::kRouteGet) == 1);
  CHECK(fake.JobCount() == 1);
}

TEST_CASE("a submit lost before the job was accepted is transient and is not resent",
          "[client][submit]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  fake.DropNext(route::kRouteSubmit, 1, /*after_handling=*/false);
  auto id = client.Submit(Body("lost-request"));
  REQUIRE_FALSE(id.ok());
  CHECK(id.error().kind() == ErrorKind::kTransient);
  CHECK(id.error().message().find("lost-request") != std::string::npos);
  CHECK(fake.RequestCount(route::kRouteSubmit) == 1);
  CHECK(fake.JobCount() == 0);
}

TEST_CASE("a lost submit whose id holds someone else's job is a conflict, not a success",
          "[client][submit]") {
  // The job under the id is not what this request sent: the caller checks it before adopting.
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  REQUIRE(client.Submit(Body("planted", "echo PWNED")).ok());
  fake.DropNext(route::kRouteSubmit, 1, /*after_handling=*/false);
  auto id = client.Submit(Body("planted"));
  REQUIRE_FALSE(id.ok());
  CHECK(id.error().kind() == ErrorKind::kConflict);
  CHECK_THAT(id.error().message(), Catch::Contains("not what this request sent"));
  CHECK(fake.JobCount() == 1);
}

TEST_CASE("a 5xx answer to a submit is resolved by reading the id", "[client][submit]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  fake.FailNext(route::kRouteSubmit, 1, 500,
                "No available agent to submit job, please try again later.");
  auto id = client.Submit(Body("no-agent"));
  REQUIRE_FALSE(id.ok());
  CHECK(id.error().kind() == ErrorKind::kTransient);
  CHECK(id.error().message().find("No available agent") != std::string::npos);
  CHECK(fake.RequestCount(route::kRouteSubmit) == 1);
}

TEST_CASE("a duplicate submit is a conflict and is not retried", "[client][submit]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  REQUIRE(client.Submit(Body("dup-1")).ok());
  auto again = client.Submit(Body("dup-1"));
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().kind() == ErrorKind::kConflict);
  // The message keeps Ray's sentence, not the start of its traceback.
  CHECK(again.error().message().find("Please use a different submission_id") != std::string::npos);
  CHECK(fake.RequestCount(route::kRouteSubmit) == 2);
}

TEST_CASE("submit drops null fields and fields the server's Ray version cannot take",
          "[client][submit]") {
  auto body_with_everything = [](const std::string& id) {
    Value body = Body(id);
    body["entrypoint_num_cpus"] = 1;
    body["entrypoint_num_gpus"] = 0;
    body["entrypoint_memory"] = int64_t{1} << 30;
    body["entrypoint_resources"]["worker_node"] = 1;
    body["runtime_env"] = nullptr;
    return body;
  };
  SECTION("Ray 2.1 takes the submission id but no entrypoint resources") {
    FakeRayOptions fo;
    fo.ray_version = "2.1.0";
    FakeRayServer fake(fo);
    RayHttpJobServer client(FastOptions(fake));
    REQUIRE(client.Submit(body_with_everything("old-1")).ok());
    auto sent = LastSubmitted(fake);
    CHECK(sent["submission_id"] == "old-1");
    CHECK_FALSE(sent.contains("entrypoint_num_cpus"));
    CHECK_FALSE(sent.contains("entrypoint_resources"));
    CHECK_FALSE(sent.contains("entrypoint_memory"));
    CHECK_FALSE(sent.contains("runtime_env"));
  }
  SECTION("Ray 2.60 takes them all, and the version is asked once per client") {
    FakeRayServer fake;
    RayHttpJobServer client(FastOptions(fake));
    REQUIRE(client.Submit(body_with_everything("new-1")).ok());
    REQUIRE(client.Submit(body_with_everything("new-2")).ok());
    auto sent = LastSubmitted(fake);
    CHECK(sent["entrypoint_num_cpus"] == 1);
    CHECK(sent["entrypoint_memory"] == (int64_t{1} << 30));
    CHECK(sent["entrypoint_resources"]["worker_node"] == 1);
    CHECK_FALSE(sent.contains("runtime_env"));
    CHECK(fake.RequestCount(route::kRouteVersion) == 1);
  }
}

TEST_CASE("a head restart forgets jobs and changes the session name", "[client][fake]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  auto before = client.Version();
  REQUIRE(before.ok());
  REQUIRE(client.Submit(Body("before-restart")).ok());
  fake.Restart();
  auto after = client.Version();
  REQUIRE(after.ok());
  CHECK(after->session_name != before->session_name);
  CHECK(client.Get("before-restart").error().kind() == ErrorKind::kNotFound);
}

TEST_CASE("a refused connection and a slow server are transient", "[client]") {
  RayClientOptions o;
  {
    FakeRayServer fake;
    o = FastOptions(fake);
  }
  o.max_attempts = 2;
  auto refused = RayHttpJobServer(o).List();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind() == ErrorKind::kTransient);

  FakeRayServer slow;
  RayClientOptions so = FastOptions(slow);
  so.read_timeout = 200ms;
  so.max_attempts = 1;
  slow.SetLatency(1000ms);
  auto timed_out = RayHttpJobServer(so).List();
  REQUIRE_FALSE(timed_out.ok());
  CHECK(timed_out.error().kind() == ErrorKind::kTransient);
  // The client gave up reading (its read timeout), rather than waiting for the late answer,
  // which would have been a success.
  CHECK(timed_out.error().message() == "GET /api/jobs/: Read");
}

// A job list is decoded as it arrives from the socket: the same whether the head announces
// its length or sends it in chunks without one, and read again from its start, each job once,
// when the connection is cut mid-answer.
TEST_CASE("a job list reads the same announced, in chunks, or cut off and read again", "[client]") {
  nlohmann::json list = nlohmann::json::array();
  for (int i = 0; i < 3000; ++i) {
    list.push_back({{"type", "SUBMISSION"},
                    {"submission_id", "job-" + std::to_string(i)},
                    {"status", "RUNNING"},
                    {"entrypoint", "sleep infinity"},
                    {"message", "Job is currently running."},
                    {"metadata", {{"gitops.name", "job-" + std::to_string(i)}, {"k", "v"}}}});
  }
  const std::string body = list.dump();  // about 500 KB: many reads of the socket
  REQUIRE(body.size() > 2 * rg::adapters::ray_http::JobListStream::kBlockBytes);
  std::atomic<bool> chunked = false;  // read by the server's thread
  std::atomic<int> cuts = 0;          // answers still to cut off after 300 KB
  httplib::Server head;
  head.Get("/api/jobs/", [&](const httplib::Request&, httplib::Response& res) {
    if (!chunked) {
      res.set_content(body, "application/json");
      return;
    }
    const bool cut = cuts > 0;
    if (cut) --cuts;
    res.set_chunked_content_provider(
        "application/json", [&body, cut](size_t offset, httplib::DataSink& sink) {
          if (cut && offset > 300000) return false;  // the connection closes mid-answer
          const size_t n = std::min<size_t>(4096, body.size() - offset);
          sink.write(body.data() + offset, n);
          if (offset + n == body.size()) sink.done();
          return true;
        });
  });
  const int port = head.bind_to_any_port("127.0.0.1");
  REQUIRE(port > 0);
  std::thread serving([&head]() { head.listen_after_bind(); });  // the socket already listens
  RayHttpJobServer client(
      rg::testing::FastClientOptions("http://127.0.0.1:" + std::to_string(port)));

  const rg::core::SipHasher::Key key = {0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  client.DigestListsWith(key);
  auto announced = client.List();
  REQUIRE(announced.ok());
  CHECK(client.ListedDigest(*announced, key) == rg::core::SipHash24(key, body));
  chunked = true;
  auto in_chunks = client.List();
  // An answer cut off mid-list is read again from its start: each job once, the digest that
  // of the whole answer.
  cuts = 1;
  auto after_cuts = client.List();
  CHECK(cuts == 0);
  REQUIRE(after_cuts.ok());
  CHECK(client.ListedDigest(*after_cuts, key) == rg::core::SipHash24(key, body));
  cuts = 1;
  auto digest = client.ListDigest(key);
  CHECK(cuts == 0);
  REQUIRE(digest.ok());
  CHECK(*digest == rg::core::SipHash24(key, body));
  head.stop();
  serving.join();

  REQUIRE(announced.ok());
  REQUIRE(in_chunks.ok());
  REQUIRE(announced->size() == 3000);
  REQUIRE(in_chunks->size() == 3000);
  for (size_t i = 0; i < 3000; ++i) {
    CHECK((*in_chunks)[i].submission_id == "job-" + std::to_string(i));
    CHECK((*in_chunks)[i].submission_id == (*announced)[i].submission_id);
    CHECK((*in_chunks)[i].metadata == (*announced)[i].metadata);
    CHECK((*in_chunks)[i].LabelView("gitops.name") == "job-" + std::to_string(i));
  }
  REQUIRE(after_cuts->size() == 3000);
  for (size_t i = 0; i < 3000; ++i) {
    CHECK((*after_cuts)[i].submission_id == "job-" + std::to_string(i));
  }
}

TEST_CASE("an empty address is invalid input, not a network error", "[client]") {
  RayHttpJobServer client(RayClientOptions{});
  auto v = client.Version();
  REQUIRE_FALSE(v.ok());
  CHECK(v.error().kind() == ErrorKind::kInvalidInput);
}

TEST_CASE("DRIVER jobs appear in the list without a submission id", "[client][fake]") {
  FakeRayServer fake;
  fake.AddDriverJob("02000000", "python train.py");
  RayHttpJobServer client(FastOptions(fake));
  auto jobs = client.List();
  REQUIRE(jobs.ok());
  REQUIRE(jobs->size() == 1);
  CHECK(jobs->front().type == "DRIVER");
  CHECK(jobs->front().submission_id.empty());
  CHECK(jobs->front().job_id == "02000000");
  auto stop = client.Stop("02000000");
  REQUIRE_FALSE(stop.ok());
  CHECK(stop.error().kind() == ErrorKind::kInvalidInput);
}

TEST_CASE("tests can drive a job's status explicitly", "[client][fake]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  REQUIRE(client.Submit(Body("driven", "sleep 60")).ok());
  REQUIRE(fake.SetStatus("driven", RayJobStatus::kFailed, "node died", 137));
  auto job = client.Get("driven");
  REQUIRE(job.ok());
  CHECK(job->status == RayJobStatus::kFailed);
  CHECK(job->message == "node died");
  CHECK(job->driver_exit_code == 137);
  CHECK(job->end_time_ms.has_value());
}

TEST_CASE("a stopped job turns STOPPED only later, or at once on Tick", "[client][fake]") {
  FakeRayOptions fo;
  fo.stop_delay = 10s;
  fo.start_delay = 0ms;
  FakeRayServer fake(fo);
  RayHttpJobServer client(FastOptions(fake));
  REQUIRE(client.Submit(Body("slow-stop", "sleep 60")).ok());
  REQUIRE(client.Stop("slow-stop").ok());
  CHECK(client.Get("slow-stop")->status == RayJobStatus::kRunning);
  fake.Tick();
  CHECK(client.Get("slow-stop")->status == RayJobStatus::kStopped);
}

TEST_CASE("the end of a driver log is read over HTTP as the whole log gives it", "[client][fake]") {
  FakeRayOptions fo;
  fo.start_delay = 0ms;  // RUNNING when next asked: Ray answers "" for a PENDING job's log
  FakeRayServer fake(fo);
  RayHttpJobServer client(FastOptions(fake));
  REQUIRE(client.Submit(Body("chatty", "sleep 60")).ok());
  REQUIRE(client.Get("chatty")->status == RayJobStatus::kRunning);
  std::string text;
  for (int i = 0; i < 20'000; ++i) text += "step " + std::to_string(i) + " \"loss\"\t\u00e9\n";
  REQUIRE(fake.AppendLogs("chatty", text));
  auto whole = client.Logs("chatty");
  REQUIRE(whole.ok());
  REQUIRE(whole->size() > 100'000);
  auto tail = client.TailLogs("chatty", 1'000);
  REQUIRE(tail.ok());
  CHECK(tail->total_bytes == whole->size());
  CHECK(tail->tail == whole->substr(whole->size() - 1'000));
  auto all = client.TailLogs("chatty", 10'000'000);
  REQUIRE(all.ok());
  CHECK(all->tail == *whole);
  CHECK(client.TailLogs("nobody", 10).error().IsNotFound());
}

// --- Ray's package store ---

constexpr const char* kPackage = "_ray_pkg_0123456789abcdef.zip";

TEST_CASE("a package is looked up and uploaded with the client's headers", "[client][package]") {
  FakeRayOptions fo;
  fo.token = "s3cret";
  FakeRayServer fake(fo);
  RayClientOptions o = FastOptions(fake);
  o.token = "s3cret";
  o.headers = {{"X-Team", "rl"}, {"Content-Type", "text/plain"}};
  RayHttpJobServer client(o);
  const std::string zip = rg::testing::ZipBytes({{"marker.txt", "hello"}});

  auto missing = client.HasPackage(kPackage);
  REQUIRE(missing.ok());
  CHECK_FALSE(*missing);
  REQUIRE(client.UploadPackage(kPackage, zip).ok());
  auto present = client.HasPackage(kPackage);
  REQUIRE(present.ok());
  CHECK(*present);
  CHECK(fake.PackageBytes(kPackage) == zip);
  CHECK(fake.PackageNames() == std::vector<std::string>{kPackage});

  for (std::string_view r : {route::kRoutePackageGet, route::kRoutePackagePut}) {
    INFO(r);
    auto h = fake.LastHeaders(r);
    CHECK(h["user-agent"] == std::string("ray-gitops/") + RG_VERSION);
    CHECK(h["authorization"] == "Bearer s3cret");
    CHECK(h["x-ray-authorization"] == "Bearer s3cret");
    CHECK(h["x-team"] == "rl");
  }
  CHECK(fake.LastHeaders(route::kRoutePackagePut)["content-type"] == "application/octet-stream");
  CHECK(fake.RequestCount(route::kRoutePackageGet) == 2);
  CHECK(fake.RequestCount(route::kRoutePackagePut) == 1);
}

TEST_CASE("a package name that is not _ray_pkg_<[0-9a-z]+>.zip is refused before any request",
          "[client][package]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  for (const char* bad : {"", "_ray_pkg_.zip", "_ray_pkg_ABC.zip", "../_ray_pkg_ab.zip",
                          "_ray_pkg_ab.zip?x=1", "pkg.zip"}) {
    INFO(bad);
    auto has = client.HasPackage(bad);
    REQUIRE_FALSE(has.ok());
    CHECK(has.error().kind() == ErrorKind::kInvalidInput);
    auto put = client.UploadPackage(bad, "PK");
    REQUIRE_FALSE(put.ok());
    CHECK(put.error().kind() == ErrorKind::kInvalidInput);
    CHECK(put.error().message().find("_ray_pkg_") != std::string::npos);
  }
  CHECK(fake.RequestCount(route::kRoutePackageGet) == 0);
  CHECK(fake.RequestCount(route::kRoutePackagePut) == 0);
  CHECK(fake.RequestCount("GET other") == 0);
  CHECK(fake.RequestCount("PUT other") == 0);
}

TEST_CASE("an upload refused for its size is invalid input naming the 100 MiB limit",
          "[client][package]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  SECTION("413, as aiohttp answers") {
    fake.FailNext(route::kRoutePackagePut, 1, 413, "Maximum request body size 104857600 exceeded.");
  }
  SECTION("a 500 whose traceback names HTTPRequestEntityTooLarge") {
    fake.FailNext(route::kRoutePackagePut, 1, 500,
                  "Traceback (most recent call last):\n  File \"job_head.py\", in upload_package\n"
                  "aiohttp.web_exceptions.HTTPRequestEntityTooLarge: Request Entity Too Large\n");
  }
  auto put = client.UploadPackage(kPackage, "PK");
  REQUIRE_FALSE(put.ok());
  CHECK(put.error().kind() == ErrorKind::kInvalidInput);
  CHECK(put.error().message().find("up to 100 MiB") != std::string::npos);
  CHECK(fake.RequestCount(route::kRoutePackagePut) == 1);  // not retried
  CHECK(fake.PackageNames().empty());
}

TEST_CASE("a zip over 100 MiB is refused unsent, and one of exactly 100 MiB is sent",
          "[client][package]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  std::string body(rg::adapters::ray_http::kMaxRequestBodyBytes + 1, 'x');
  auto put = client.UploadPackage(kPackage, body);
  REQUIRE_FALSE(put.ok());
  CHECK(put.error().kind() == ErrorKind::kInvalidInput);
  CHECK(put.error().message().find("up to 100 MiB") != std::string::npos);
  CHECK(fake.RequestCount(route::kRoutePackagePut) == 0);
  body.pop_back();
  RayClientOptions o = FastOptions(fake);
  o.upload_timeout = 60s;  // 100 MiB through a debug build
  REQUIRE(RayHttpJobServer(o).UploadPackage(kPackage, body).ok());
  CHECK(fake.PackageBytes(kPackage)->size() == body.size());
}

TEST_CASE("package calls map 404, 5xx and lost answers like the other calls", "[client][package]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  SECTION("a 404 to the upload is fatal, never not-found") {
    fake.FailNext(route::kRoutePackagePut, 1, 404, "404: Not Found");
    auto put = client.UploadPackage(kPackage, "PK");
    REQUIRE_FALSE(put.ok());
    CHECK(put.error().kind() == ErrorKind::kFatal);
  }
  SECTION("5xx and dropped answers are retried, then transient") {
    fake.FailNext(route::kRoutePackageGet, 2, 503, "unavailable");
    auto has = client.HasPackage(kPackage);
    REQUIRE(has.ok());
    CHECK_FALSE(*has);
    CHECK(fake.RequestCount(route::kRoutePackageGet) == 3);
    fake.DropNext(route::kRoutePackagePut, 3, /*after_handling=*/false);
    auto put = client.UploadPackage(kPackage, "PK");
    REQUIRE_FALSE(put.ok());
    CHECK(put.error().kind() == ErrorKind::kTransient);
    CHECK(fake.RequestCount(route::kRoutePackagePut) == 3);
    fake.FailNext(route::kRoutePackagePut, 1, 500, "Traceback\nRuntimeError: GCS down");
    REQUIRE(client.UploadPackage(kPackage, "PK").ok());
    CHECK(fake.PackageBytes(kPackage) == "PK");
  }
  SECTION("401 is unauthorized") {
    fake.SetToken("t");
    CHECK(client.HasPackage(kPackage).error().kind() == ErrorKind::kUnauthorized);
    CHECK(client.UploadPackage(kPackage, "PK").error().kind() == ErrorKind::kUnauthorized);
  }
}

TEST_CASE("the fake refuses a body over 100 MiB with 413 and forgets packages on restart",
          "[fake][package]") {
  FakeRayServer fake;
  httplib::Client raw(fake.address());
  const std::string path = std::string("/api/packages/gcs/") + kPackage;
  std::string body(rg::adapters::ray_http::kMaxRequestBodyBytes + 1, 'x');
  auto refused = raw.Put(path, body, "application/octet-stream");
  REQUIRE(refused);
  CHECK(refused->status == 413);
  CHECK(refused->body == "Maximum request body size 104857600 exceeded.");
  CHECK(fake.PackageNames().empty());
  body.resize(10);
  auto stored = raw.Put(path, body, "application/octet-stream");
  REQUIRE(stored);
  CHECK(stored->status == 200);
  auto missing = raw.Get("/api/packages/gcs/_ray_pkg_ff.zip");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  CHECK(missing->body == "Package gcs://_ray_pkg_ff.zip does not exist");
  fake.Restart();
  CHECK(fake.PackageNames().empty());
  CHECK_FALSE(fake.PackageBytes(kPackage).has_value());
}

TEST_CASE("the fake runs a job in its package: cat reads the zip, a bad zip fails the set-up",
          "[fake][package]") {
  FakeRayServer fake;
  RayHttpJobServer client(FastOptions(fake));
  REQUIRE(client
              .UploadPackage(kPackage,
                             rg::testing::ZipBytes({{"a.txt", "alpha\n"}, {"src/b.txt", "beta"}}))
              .ok());
  REQUIRE(client.UploadPackage("_ray_pkg_0bad.zip", "not a zip").ok());
  auto submit = [&](const std::string& id, const std::string& entrypoint,
                    const std::string& package) {
    Value body = Body(id, entrypoint);
    if (!package.empty()) body["runtime_env"]["working_dir"] = "gcs://" + package;
    REQUIRE(client.Submit(body).ok());
  };
  submit("cat-a", "cat a.txt", kPackage);
  submit("cat-b", "cat ./src/b.txt", kPackage);
  submit("cat-missing", "cat c.txt", kPackage);
  submit("cat-no-package", "cat a.txt", "");
  submit("bad-zip", "cat a.txt", "_ray_pkg_0bad.zip");
  std::this_thread::sleep_for(400ms);
  fake.Tick();

  CHECK(fake.StatusOf("cat-a") == RayJobStatus::kSucceeded);
  CHECK(client.Logs("cat-a")->find("alpha\n") != std::string::npos);
  CHECK(fake.StatusOf("cat-b") == RayJobStatus::kSucceeded);
  CHECK(client.Logs("cat-b")->find("beta") != std::string::npos);
  for (const char* id : {"cat-missing", "cat-no-package"}) {
    INFO(id);
    auto job = client.Get(id);
    REQUIRE(job.ok());
    CHECK(job->status == RayJobStatus::kFailed);
    CHECK(job->driver_exit_code == 1);
    CHECK(job->error_type == "JOB_ENTRYPOINT_COMMAND_ERROR");
    CHECK(job->message.find("No such file or directory") != std::string::npos);
  }
  auto bad = client.Get("bad-zip");
  REQUIRE(bad.ok());
  CHECK(bad->status == RayJobStatus::kFailed);
  CHECK(bad->error_type == "RUNTIME_ENV_SETUP_FAILURE");
  CHECK_FALSE(bad->driver_exit_code.has_value());
}

TEST_CASE("an https address speaks TLS: a plain-HTTP server is a transient error", "[client]") {
  FakeRayServer fake;
  RayClientOptions o;
  o.address = "https://127.0.0.1:" + std::to_string(fake.port());
  o.insecure = true;
  o.max_attempts = 1;
  o.read_timeout = 1000ms;
  auto v = RayHttpJobServer(o).Version();
  REQUIRE_FALSE(v.ok());
  CHECK(v.error().kind() == ErrorKind::kTransient);
  CHECK(v.error().message().find("SSL") != std::string::npos);
}

// The token and headers go only to the address the operator chose: a head (or whatever answers
// at its address) that redirects elsewhere is not followed, for any call, so the credentials
// never reach the other host.
TEST_CASE("a redirect is never followed: the credentials stay with the address given", "[client]") {
  FakeRayServer elsewhere;
  httplib::Server redirecting;
  const std::string target = elsewhere.address();
  const auto redirect = [&target](const httplib::Request& req, httplib::Response& res) {
    res.status = req.method == "GET" ? 302 : 307;
    res.set_header("Location", target + req.path);
  };
  redirecting.Get(".*", redirect);
  redirecting.Post(".*", redirect);
  redirecting.Put(".*", redirect);
  redirecting.Delete(".*", redirect);
  const int port = redirecting.bind_to_any_port("127.0.0.1");
  REQUIRE(port > 0);
  std::thread serving([&redirecting]() { redirecting.listen_after_bind(); });
  RayClientOptions o =
      rg::testing::FastClientOptions("http://127.0.0.1:" + std::to_string(port), 1);
  o.token = "tok-redirected-0123";
  o.headers = {{"X-Api-Key", "hdr-redirected-4567"}};
  RayHttpJobServer client(o);

  CHECK_FALSE(client.Version().ok());
  CHECK_FALSE(client.List().ok());
  CHECK_FALSE(client.Get("a-1").ok());
  CHECK_FALSE(client.Stop("a-1").ok());
  CHECK_FALSE(client.Submit(Body("a-1")).ok());
  CHECK_FALSE(client.HasPackage("_ray_pkg_0123456789abcdef.zip").ok());
  CHECK_FALSE(client.UploadPackage("_ray_pkg_0123456789abcdef.zip", "PK").ok());
  redirecting.stop();
  serving.join();
  for (std::string_view route :
       {route::kRouteVersion, route::kRouteList, route::kRouteGet, route::kRouteStop,
        route::kRouteSubmit, route::kRoutePackageGet, route::kRoutePackagePut}) {
    INFO(route);
    CHECK(elsewhere.RequestCount(route) == 0);
  }
}

// The head's clock from the Date header of its answers (ports::JobServer::HeadClockOffsetMs):
// the head's time cut to the second, less the client's clock once the answer has arrived.
TEST_CASE("the head's clock is read from the Date header of its answers over HTTP", "[client]") {
  rg::testing::FakeClock clock;
  FakeRayOptions fo;
  fo.clock = &clock;
  fo.clock_offset = -2h;  // the head 2 h behind the daemon
  FakeRayServer fake(fo);
  RayClientOptions o = FastOptions(fake);
  o.clock = &clock;
  RayHttpJobServer client(o);
  CHECK_FALSE(client.HeadClockOffsetMs().has_value());  // nothing asked yet
  clock.AdvanceMs(1'500);
  REQUIRE(client.List().ok());
  // The head shows 00:00:01.500 less 2 h, and its Date says 00:00:01: a lower bound, 500 ms off.
  CHECK(client.HeadClockOffsetMs() == -7'200'500);
  const int64_t date_ms = rg::testing::FakeClock::kStartWallMs + 1'000 - 7'200'000;
  CHECK(client.HeadNowMs() == date_ms);
  // The head's time moves on with the client's monotonic clock, whatever its wall clock does.
  clock.AdvanceMs(10'000);
  CHECK(client.HeadNowMs() == date_ms + 10'000);
  CHECK(client.HeadClockOffsetMs() == -7'200'500);

  SECTION("every 2xx answer updates it, a GET, a POST and a DELETE alike") {
    fake.SetClockOffset(3h);
    REQUIRE(client.Version().ok());
    CHECK(client.HeadClockOffsetMs() == 10'799'500);
    fake.SetClockOffset(1h);
    REQUIRE(client.Submit(Body("dated")).ok());
    CHECK(client.HeadClockOffsetMs() == 3'599'500);
    REQUIRE(fake.SetStatus("dated", RayJobStatus::kSucceeded));
    fake.SetClockOffset(-1h);
    REQUIRE(client.Delete("dated").ok());
    CHECK(client.HeadClockOffsetMs() == -3'600'500);
  }
  SECTION("an error answer leaves it as it was: a proxy's answer is dated by the proxy") {
    fake.SetClockOffset(5h);
    fake.FailNext(route::kRouteList, 3, 502, "Bad Gateway");
    REQUIRE_FALSE(client.List().ok());
    CHECK(client.HeadClockOffsetMs() == -7'200'500);
    CHECK(client.Get("nope").error().kind() == ErrorKind::kNotFound);
    CHECK(client.HeadClockOffsetMs() == -7'200'500);
  }
}

TEST_CASE("an answer without a readable Date header leaves the head's clock as it was",
          "[client]") {
  rg::testing::FakeClock clock;
  std::map<std::string, std::string> headers;
  rg::adapters::RayHttpTransport transport = [&headers](const rg::adapters::RayHttpRequest&) {
    rg::adapters::RayHttpAnswer answer;
    answer.status = 200;
    answer.body = "[]";
    answer.headers = headers;
    return answer;
  };
  RayClientOptions o = rg::testing::FastClientOptions("http://head:8265");
  o.clock = &clock;
  RayHttpJobServer client(o, transport);
  REQUIRE(client.List().ok());
  CHECK_FALSE(client.HeadClockOffsetMs().has_value());  // none yet: the caller's clock stands in
  CHECK_FALSE(client.HeadNowMs().has_value());

  // Header names in any case, the value with the blanks HTTP allows around it.
  headers = {{"date", "  " + rg::core::FormatHttpDate(clock.NowMs() + 90'000) + "\t"}};
  REQUIRE(client.List().ok());
  CHECK(client.HeadClockOffsetMs() == 90'000);
  CHECK(client.HeadNowMs() == clock.NowMs() + 90'000);
  for (const std::map<std::string, std::string>& other :
       std::vector<std::map<std::string, std::string>>{
           {},
           {{"Date", ""}},
           {{"Date", "yesterday"}},
           {{"Date", "2026-01-01T00:00:00Z"}},
           {{"Date", "Mon, 01 Jan 2026 00:00:00 GMT"}},  // a Thursday
       }) {
    headers = other;
    REQUIRE(client.List().ok());
    CHECK(client.HeadClockOffsetMs() == 90'000);
  }
  headers = {{"DATE", "Thursday, 01-Jan-26 00:00:00 GMT"}};  // RFC 850, read too
  REQUIRE(client.List().ok());
  CHECK(client.HeadClockOffsetMs() == 0);
}

}  // namespace
