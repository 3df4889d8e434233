#include "reconciler/adapters/ray_http_job_server.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "reconciler/adapters/log_tail_stream.h"
#include "reconciler/adapters/ray_http_rules.h"
#include "reconciler/core/adoption.h"
#include "reconciler/core/render.h"
#include "reconciler/core/time_format.h"

namespace rg::adapters {
namespace {

using nlohmann::json;
using ray_http::ClassifyHttpError;
using ray_http::EncodePathSegment;

constexpr const char* kJsonType = "application/json";
constexpr const char* kZipType = "application/octet-stream";
constexpr size_t kPutChunkBytes = size_t{1} << 20;  // a PUT body is written 1 MiB at a time
constexpr std::string_view kPackagesPath = "/api/packages/gcs/";

using SteadyClock = std::chrono::steady_clock;

// One HTTP answer, or why there was none.
struct Exchange {
  int status = 0;  // 0: no answer (refused, timed out, dropped)
  std::string body;
  httplib::Error transport = httplib::Error::Success;
  std::string cut;  // why the call was cut off by us (its deadline, abandoned), if it was
};

// The Ray calls in flight in the process, each with the time its whole exchange must end by:
// cpp-httplib's timeouts bound each wait for a byte, not the exchange. A watchdog stops the
// calls past their deadline; AbandonRayCalls stops them all. Never destroyed: the watchdog
// thread waits on it until the process ends.
class CallRegistry {
 public:
  static CallRegistry& Get() {
    static auto* const registry = new CallRegistry();
    return *registry;
  }

  // False (and nothing registered) once calls are abandoned.
  bool Enter(httplib::Client* client, SteadyClock::time_point deadline) {
    std::lock_guard<std::mutex> lock(mu_);
    if (abandoned_) return false;
    const bool was_idle = calls_.empty();
    calls_[client] = Call{deadline, false};
    if (!watchdog_started_) {
      watchdog_started_ = true;
      std::thread([this] { Watch(); }).detach();
    }
    // With calls in flight the watchdog looks every 100 ms anyway: only an idle one, asleep
    // for a minute, is woken (not once per request: 1,000 submits were 1,000 wake-ups).
    if (was_idle) cv_.notify_all();
    return true;
  }

  // Why the call was cut off, or empty.
  std::string Leave(httplib::Client* client, std::chrono::milliseconds budget) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = calls_.find(client);
    const bool expired = it != calls_.end() && it->second.expired;
    if (it != calls_.end()) calls_.erase(it);
    if (abandoned_) return "abandoned (shutting down)";
    if (expired) return "no complete answer within " + std::to_string(budget.count()) + " ms";
    return "";
  }

  void AbandonAll() {
    std::lock_guard<std::mutex> lock(mu_);
    abandoned_ = true;
    for (auto& [client, call] : calls_) client->stop();
  }

  bool abandoned() {
    std::lock_guard<std::mutex> lock(mu_);
    return abandoned_;
  }

  int Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(calls_.size());
  }

 private:
  struct Call {
    SteadyClock::time_point deadline;
    bool expired = false;
  };

  [[noreturn]] void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait_for(lock,
                   calls_.empty() ? std::chrono::seconds(60) : std::chrono::milliseconds(100));
      const auto now = SteadyClock::now();
      for (auto& [client, call] : calls_) {
        // stop() again on later rounds too: a call still connecting has no socket to shut yet.
        if (now < call.deadline && !abandoned_) continue;
        call.expired = true;
        client->stop();
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<httplib::Client*, Call> calls_;
  bool abandoned_ = false;
  bool watchdog_started_ = false;
};

// scheme://host:port and the path prefix of an address such as https://proxy/ray.
struct SplitAddress {
  std::string origin;
  std::string prefix;
};

SplitAddress Split(const std::string& address) {
  size_t scheme_end = address.find("://");
  size_t path_start =
      scheme_end == std::string::npos ? std::string::npos : address.find('/', scheme_end + 3);
  if (path_start == std::string::npos) return {address, ""};
  return {address.substr(0, path_start), address.substr(path_start)};
}

core::Error TransportError(std::string_view method, std::string_view path, const Exchange& ex) {
  const httplib::Error err = ex.transport;
  std::string message = std::string(method) + " " + std::string(path) + ": " +
                        (ex.cut.empty() ? httplib::to_string(err) : ex.cut);
  if (!ex.cut.empty()) return core::Error::Transient(message);
  switch (err) {
    case httplib::Error::SSLLoadingCerts:
      return core::Error::InvalidInput(message + " (check --ray-ca-file)");
    case httplib::Error::SSLServerVerification:
      return core::Error::Fatal(message + " (use --ray-ca-file, or --ray-insecure to skip)");
    default:
      return core::Error::Transient(message);
  }
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Reserves `body` for the Content-Length `head` announces, up to kMaxReservedBody: a larger
// or missing one leaves the body to grow as it arrives.
constexpr size_t kMaxReservedBody = size_t{256} << 20;
void ReserveForBody(const httplib::Response& head, std::string& body) {
  const std::string length = head.get_header_value("Content-Length");
  size_t bytes = 0;
  const auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), bytes);
  if (ec == std::errc() && end == length.data() + length.size() && bytes <= kMaxReservedBody) {
    body.reserve(bytes);
  }
}

}  // namespace

class RayHttpJobServer::Impl {
 public:
  Impl(RayClientOptions options, RayHttpTransport transport)
      : options_(std::move(options)),
        split_(Split(options_.address)),
        transport_(std::move(transport)),
        rng_(std::random_device{}()) {}

  core::Result<core::RayVersion> Version() {
    auto ex = Retrying("GET", "/api/version", "", options_.read_timeout);
    if (!ex) return ex.error();
    auto version = ray_http::ParseVersion(ex->body);
    if (version) ray_version_ = version->ray_version;
    return version;
  }

  // True when `job` is what `body` submits: the same id, entrypoint, runtime_env and labels.
  static bool IsBodySent(const core::RayJob& job, const core::Value& body) {
    if (!core::RenderMismatch(job, body).empty()) return false;
    const core::Value* metadata = body.Find("metadata");
    if (metadata == nullptr || !metadata->is_object()) return job.metadata.empty();
    if (job.metadata.size() != metadata->as_object().size()) return false;
    return std::ranges::all_of(job.metadata, [metadata](const auto& label) {
      const core::Value* v = metadata->Find(label.first);
      return v != nullptr && v->is_string() && v->as_string() == label.second;
    });
  }

  core::Result<std::string> Submit(const core::Value& body) {
    if (!ray_version_) {
      auto v = Version();
      if (!v) return v.error();
    }
    core::Value gated = ray_http::GateSubmitBody(body, *ray_version_);
    std::string payload = core::ToCanonicalJson(gated);
    std::string submission_id;
    if (const core::Value* sid = gated.Find("submission_id"); sid != nullptr && sid->is_string()) {
      submission_id = sid->as_string();
    }

    const std::string path = "/api/jobs/";
    Exchange ex = Send("POST", path, payload, options_.submit_timeout);
    if (ex.status >= 200 && ex.status < 300) {
      json answer = json::parse(ex.body, nullptr, /*allow_exceptions=*/false);
      if (answer.is_object() && answer.contains("submission_id") &&
          answer["submission_id"].is_string()) {
        return answer["submission_id"].get<std::string>();
      }
      if (!submission_id.empty()) return submission_id;
      return core::Error::Fatal("POST /api/jobs/: answer holds no submission_id: " +
                                ray_http::TrimBodyForMessage(ex.body));
    }
    core::Error failure = ex.status == 0 ? TransportError("POST", path, ex)
                                         : ClassifyHttpError("POST", path, ex.status, ex.body);
    // The job may exist although the answer was lost or was an error from a proxy: learn what
    // happened from the id, never by sending it again.
    if (!failure.IsTransient() || submission_id.empty()) return failure;
    auto existing = Get(submission_id);
    if (existing && IsBodySent(*existing, gated)) return submission_id;
    if (existing) {
      // Someone else's job under the id (planted, or another daemon's): the caller reads it
      // back and decides, as for Ray's own duplicate-id answer.
      return core::Error::Conflict(failure.message() + "; job " + submission_id +
                                   " already exists, and it is not what this request sent");
    }
    if (existing.error().IsNotFound()) {
      return core::Error::Transient(failure.message() + "; job " + submission_id +
                                    " does not exist, submit again on the next pass");
    }
    return core::Error::Transient(failure.message() +
                                  "; and its outcome is unknown: " + existing.error().message());
  }

  core::Result<core::RayJob> Get(std::string_view id) {
    auto ex = Retrying("GET", "/api/jobs/" + EncodePathSegment(id), "", options_.read_timeout);
    if (!ex) return ex.error();
    return ray_http::ParseJobDetails(ex->body);
  }

  // The list is decoded, and digested, as it arrives: a 50 MB answer is never held whole.
  core::Result<std::vector<core::RayJob>> List(const ports::JobServer::JobFilter& keep = {}) {
    ray_http::JobListStream stream(keep, digest_key_);
    auto ex = Retrying("GET", "/api/jobs/", "", options_.read_timeout, &stream);
    if (!ex) return ex.error();
    core::Result<std::vector<core::RayJob>> jobs = stream.Finish();
    if (digest_key_ && jobs.ok()) last_digest_ = std::make_pair(*digest_key_, stream.Digest());
    return jobs;
  }

  void DigestListsWith(const core::SipHasher::Key& key) {
    digest_key_ = key;
    last_digest_.reset();
  }

  // The answer digested as it arrives, never decoded nor held: the early check never decodes
  // 10,000 jobs to learn that nothing changed.
  core::Result<uint64_t> ListDigest(const core::SipHasher::Key& key) {
    ray_http::JobListStream stream({}, key, /*decode=*/false);
    auto ex = Retrying("GET", "/api/jobs/", "", options_.read_timeout, &stream);
    if (!ex) return ex.error();
    return stream.Digest();
  }

  uint64_t ListedDigest(const std::vector<core::RayJob>& jobs, const core::SipHasher::Key& key) {
    if (last_digest_ && last_digest_->first == key) return last_digest_->second;
    return core::DigestJobs(jobs, key);  // never equal to a body's digest: a full pass next
  }

  std::optional<int64_t> HeadClockOffsetMs() const {
    if (!head_date_) return std::nullopt;
    return head_date_->date_ms - head_date_->received_wall_ms;
  }

  std::optional<int64_t> HeadNowMs() const {
    if (!head_date_) return std::nullopt;
    return head_date_->date_ms + (MonotonicUs() - head_date_->received_us) / 1000;
  }

  core::Result<bool> JobsReadableWithoutCredentials() {
    if (options_.address.empty()) return core::Error::InvalidInput("no Ray address to probe");
    const int status = ProbeStatus(split_.prefix + "/api/jobs/");
    if (status == 0 || status >= 500) {
      return core::Error::Transient(
          "cannot tell whether the Jobs API at " + core::StripUrlCredentials(options_.address) +
          " can be read without credentials: " +
          (status == 0 ? std::string("no answer") : "HTTP " + std::to_string(status)));
    }
    return IsSuccess(status);
  }

  core::Result<bool> Stop(std::string_view id) {
    auto ex =
        Retrying("POST", "/api/jobs/" + EncodePathSegment(id) + "/stop", "", options_.read_timeout);
    if (!ex) return ex.error();
    return BoolField(ex->body, "stopped", "stop");
  }

  core::Result<bool> Delete(std::string_view id) {
    auto ex = Retrying("DELETE", "/api/jobs/" + EncodePathSegment(id), "", options_.read_timeout);
    if (!ex) return ex.error();
    return BoolField(ex->body, "deleted", "delete");
  }

  core::Result<std::string> Logs(std::string_view id) {
    auto ex =
        Retrying("GET", "/api/jobs/" + EncodePathSegment(id) + "/logs", "", options_.read_timeout);
    if (!ex) return ex.error();
    json answer = json::parse(ex->body, nullptr, /*allow_exceptions=*/false);
    if (!answer.is_object()) return core::Error::Fatal("logs: answer is not a JSON object");
    auto it = answer.find("logs");
    if (it == answer.end() || it->is_null()) return std::string();
    if (!it->is_string()) return core::Error::Fatal("logs: 'logs' is not a string");
    return it->get<std::string>();
  }

  // The answer streamed through a LogTailStream: a log of any length costs at most twice
  // `max_bytes` here.
  core::Result<ports::LogTail> TailLogs(std::string_view id, size_t max_bytes) {
    ray_http::LogTailStream stream(max_bytes);
    auto ex = Retrying("GET", "/api/jobs/" + EncodePathSegment(id) + "/logs", "",
                       options_.read_timeout, &stream);
    if (!ex) return ex.error();
    ports::LogTail out;
    core::Result<std::string> tail = stream.Finish(&out.total_bytes);
    if (!tail.ok()) return tail.error();
    out.tail = std::move(*tail);
    return out;
  }

  core::Result<bool> HasPackage(std::string_view name) {
    if (auto bad = CheckPackageName(name); !bad.ok()) return bad.error();
    auto ex =
        Retrying("GET", std::string(kPackagesPath) + std::string(name), "", options_.read_timeout);
    if (ex) return true;
    if (ex.error().IsNotFound()) return false;
    return ex.error();
  }

  core::Status UploadPackage(std::string_view name, std::string_view zip) {
    if (auto bad = CheckPackageName(name); !bad.ok()) return bad;
    if (zip.size() > ray_http::kMaxRequestBodyBytes) {
      // Nothing is sent: the head would refuse it only after receiving 100 MiB of it.
      return core::Error::InvalidInput(
          "package " + std::string(name) + " is " + std::to_string(zip.size()) +
          " bytes: too large to upload, Ray's dashboard takes request bodies up to 100 MiB (" +
          std::to_string(ray_http::kMaxRequestBodyBytes) + " bytes)");
    }
    auto ex = Retrying("PUT", std::string(kPackagesPath) + std::string(name), zip,
                       options_.upload_timeout);
    if (!ex) return ex.error();
    return core::OkStatus();
  }

  core::Result<std::string> ClusterStatus() {
    auto ex = Retrying("GET", "/api/cluster_status?format=1", "", options_.read_timeout);
    if (!ex) return ex.error();
    json answer = json::parse(ex->body, nullptr, /*allow_exceptions=*/false);
    if (!answer.is_object()) return core::Error::Fatal("cluster_status: not a JSON object");
    // Shortly after a head starts, data or clusterStatus may be missing or null.
    auto data = answer.find("data");
    if (data == answer.end() || !data->is_object()) return std::string();
    auto text = data->find("clusterStatus");
    if (text == data->end() || text->is_null()) return std::string();
    if (text->is_string()) return text->get<std::string>();
    return text->dump(2);
  }

  core::Result<core::ClusterResources> Resources() {
    auto ex = Retrying("GET", "/api/cluster_status", "", options_.read_timeout);
    if (!ex) return ex.error();
    return ParseClusterResources(ex->body);
  }

 private:
  // Every request's headers: the extra ones, then the client's identity and credentials.
  httplib::Headers RequestHeaders() const {
    httplib::Headers headers;
    for (const auto& [name, value] : options_.headers) {
      // The client's own identity and body type are not for extra headers to change.
      if (EqualsIgnoreCase(name, "User-Agent") || EqualsIgnoreCase(name, "Content-Type")) continue;
      headers.emplace(name, value);
    }
    // Ray's dashboard answers a browser-looking POST with 405.
    headers.emplace("User-Agent", std::string("ray-gitops/") + RG_VERSION);
    headers.emplace("Accept", kJsonType);
    if (options_.token) {
      headers.emplace("Authorization", "Bearer " + *options_.token);
      headers.emplace("X-Ray-Authorization", "Bearer " + *options_.token);
    }
    return headers;
  }

  // The status of a GET of `full_path` with none of the client's credentials or extra headers;
  // 0 when no answer came. The body is not read: the connection is closed after the head.
  int ProbeStatus(const std::string& full_path) {
    httplib::Headers bare;
    bare.emplace("User-Agent", std::string("ray-gitops/") + RG_VERSION);
    bare.emplace("Accept", kJsonType);
    if (transport_) {
      RayHttpRequest request{"GET", full_path, "", {}};
      for (const auto& [name, value] : bare) request.headers[name] = value;
      return transport_(request).status;
    }
    httplib::Client client(split_.origin);
    if (!client.is_valid()) return 0;
    Configure(client, options_.read_timeout);
    const std::chrono::milliseconds budget = options_.connect_timeout + options_.read_timeout;
    CallRegistry& calls = CallRegistry::Get();
    if (!calls.Enter(&client, SteadyClock::now() + budget)) return 0;
    int status = 0;
    (void)client.Get(
        full_path, bare,
        [&status](const httplib::Response& head) {
          status = head.status;
          return false;  // the head is all the probe needs
        },
        [](const char*, size_t) { return false; });
    (void)calls.Leave(&client, budget);
    return status;
  }

  Exchange SendThroughTransport(const std::string& method, const std::string& path,
                                std::string_view body, ray_http::BodyStream* stream) {
    RayHttpRequest request{method, split_.prefix + path, std::string(body), {}};
    if (method == "POST") {
      request.headers["Content-Type"] = kJsonType;
      if (request.body.empty()) request.body = "{}";
    } else if (method == "PUT") {
      request.headers["Content-Type"] = kZipType;
    }
    for (const auto& [name, value] : RequestHeaders()) request.headers[name] = value;
    RayHttpAnswer answer = transport_(request);
    if (IsSuccess(answer.status)) {
      for (const auto& [name, value] : answer.headers) {
        if (EqualsIgnoreCase(name, "Date")) NoteDate(value);
      }
    }
    Exchange ex;
    ex.status = answer.status;
    ex.body = std::move(answer.body);
    if (ex.status == 0) {
      ex.transport = httplib::Error::Read;
      ex.cut = answer.failure.empty() ? "no answer" : answer.failure;
    }
    if (stream != nullptr && IsSuccess(ex.status)) {
      stream->Begin();
      stream->Write(ex.body);
      ex.body.clear();
    }
    return ex;
  }

  static bool IsSuccess(int status) { return status >= 200 && status < 300; }

  // The head's clock from an answer's Date header (ports::JobServer::HeadClockOffsetMs): read
  // now, as the answer's head has just arrived, so that the offset is a lower bound.
  void NoteDate(std::string_view value) {
    const size_t begin = value.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return;
    value = value.substr(begin, value.find_last_not_of(" \t") + 1 - begin);
    const std::optional<int64_t> date_ms = core::ParseHttpDate(value);
    if (!date_ms) return;
    const int64_t wall_ms = options_.clock != nullptr
                                ? options_.clock->NowMs()
                                : std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count();
    head_date_ = HeadDate{*date_ms, wall_ms, MonotonicUs()};
  }

  int64_t MonotonicUs() const {
    if (options_.clock != nullptr) return options_.clock->MonotonicUs();
    return std::chrono::duration_cast<std::chrono::microseconds>(
               SteadyClock::now().time_since_epoch())
        .count();
  }

  // A GET whose 2xx body goes to `stream` as it arrives, when there is one. Any other body is
  // gathered here, reserved at its announced length: grown by doubling, a body of 50 MB took
  // 64 MB, and was copied on every doubling.
  httplib::Result GetBody(httplib::Client& client, const std::string& full_path,
                          const httplib::Headers& headers, ray_http::BodyStream* stream) {
    std::string received;
    bool streaming = false;
    httplib::Result res = client.Get(
        full_path, headers,
        [&](const httplib::Response& head) {
          if (IsSuccess(head.status)) NoteDate(head.get_header_value("Date"));
          streaming = stream != nullptr && IsSuccess(head.status);
          if (streaming) {
            stream->Begin();
          } else {
            ReserveForBody(head, received);
          }
          return true;
        },
        [&](const char* data, size_t length) {
          if (streaming) {
            stream->Write(std::string_view(data, length));
          } else {
            received.append(data, length);
          }
          return true;
        });
    if (res) res->body = std::move(received);
    return res;
  }

  void Configure(httplib::Client& client, std::chrono::milliseconds read_timeout) const {
    client.set_connection_timeout(options_.connect_timeout);
    client.set_read_timeout(read_timeout);
    client.set_write_timeout(read_timeout);
    client.set_keep_alive(false);
    // The token and headers go only to the address the operator chose: a redirect to another
    // host would carry them there, so none is followed (a 3xx is an error like any other).
    client.set_follow_location(false);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (!options_.ca_file.empty()) client.set_ca_cert_path(options_.ca_file);
    if (options_.insecure) client.enable_server_certificate_verification(false);
#endif
  }

  httplib::Result Dispatch(httplib::Client& client, const std::string& method,
                           const std::string& full_path, const httplib::Headers& headers,
                           std::string_view body, ray_http::BodyStream* stream) {
    if (method == "GET") return GetBody(client, full_path, headers, stream);
    if (method == "DELETE") return client.Delete(full_path, headers);
    if (method == "PUT") {
      // Sent from `body` as it is: given as a pointer, httplib would copy it into the request
      // first (a code package: up to 100 MiB).
      return client.Put(
          full_path, headers, body.size(),
          [body](size_t offset, size_t length, httplib::DataSink& sink) {
            return sink.write(body.data() + offset, std::min(length, kPutChunkBytes));
          },
          kZipType);
    }
    const std::string_view json_body = body.empty() ? std::string_view("{}") : body;
    return client.Post(full_path, headers, json_body.data(), json_body.size(), kJsonType);
  }

  // One request, no retry. With a stream, the body of a GET's 2xx answer goes to it as it
  // arrives (Begin, then Write), not into the exchange.
  Exchange Send(const std::string& method, const std::string& path, std::string_view body,
                std::chrono::milliseconds read_timeout, ray_http::BodyStream* stream = nullptr) {
    Exchange ex;
    if (options_.address.empty()) {
      ex.transport = httplib::Error::Connection;
      return ex;
    }
    if (transport_) return SendThroughTransport(method, path, body, stream);
    httplib::Client client(split_.origin);
    if (!client.is_valid()) {
      ex.transport = httplib::Error::Connection;
      return ex;
    }
    Configure(client, read_timeout);
    const httplib::Headers headers = RequestHeaders();
    const std::string full_path = split_.prefix + path;
    const std::chrono::milliseconds budget = options_.connect_timeout + read_timeout;
    CallRegistry& calls = CallRegistry::Get();
    if (!calls.Enter(&client, SteadyClock::now() + budget)) {
      ex.transport = httplib::Error::Canceled;
      ex.cut = "abandoned (shutting down)";
      return ex;
    }
    httplib::Result res = Dispatch(client, method, full_path, headers, body, stream);
    std::string cut = calls.Leave(&client, budget);
    if (!res) {
      ex.transport = res.error();
      ex.cut = std::move(cut);
      return ex;
    }
    // A GET's Date was read as its head arrived (GetBody).
    if (method != "GET" && IsSuccess(res->status)) NoteDate(res->get_header_value("Date"));
    ex.status = res->status;
    ex.body = std::move(res->body);
    return ex;
  }

  // An idempotent request with retries on transient failures. Returns the 2xx answer.
  core::Result<Exchange> Retrying(const std::string& method, const std::string& path,
                                  std::string_view body, std::chrono::milliseconds read_timeout,
                                  ray_http::BodyStream* stream = nullptr) {
    if (options_.address.empty()) {
      return core::Error::InvalidInput(
          "no Ray address: pass --ray-address or set RAY_API_SERVER_ADDRESS or RAY_ADDRESS");
    }
    const int attempts = std::max(1, options_.max_attempts);
    for (int attempt = 0;; ++attempt) {
      Exchange ex = Send(method, path, body, read_timeout, stream);
      if (IsSuccess(ex.status)) return ex;
      core::Error err = ex.status == 0 ? TransportError(method, path, ex)
                                       : ClassifyHttpError(method, path, ex.status, ex.body);
      if (!ex.cut.empty() && CallRegistry::Get().abandoned()) return err;
      if (!err.IsTransient() || attempt + 1 >= attempts) {
        if (err.IsTransient() && attempts > 1) {
          return core::Error::Transient(err.message() + " (after " + std::to_string(attempts) +
                                        " attempts)");
        }
        return err;
      }
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      std::this_thread::sleep_for(ray_http::BackoffDelay(attempt, options_.initial_backoff,
                                                         options_.max_backoff, unit(rng_)));
    }
  }

  static core::Status CheckPackageName(std::string_view name) {
    if (ray_http::IsPackageName(name)) return core::OkStatus();
    return core::Error::InvalidInput("package name '" + std::string(name) +
                                     "' is not of the form _ray_pkg_<[0-9a-z]+>.zip");
  }

  static core::Result<bool> BoolField(const std::string& body, const char* key, const char* what) {
    json answer = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (answer.is_object()) {
      auto it = answer.find(key);
      if (it != answer.end() && it->is_boolean()) return it->get<bool>();
    }
    return core::Error::Fatal(std::string(what) + ": expected {\"" + key + "\": bool}, got " +
                              ray_http::TrimBodyForMessage(body));
  }

  RayClientOptions options_;
  SplitAddress split_;
  RayHttpTransport transport_;              // empty: the network
  std::optional<std::string> ray_version_;  // learnt once, for gating submit fields
  std::mt19937_64 rng_;
  std::optional<core::SipHasher::Key> digest_key_;  // DigestListsWith
  // The key and digest of the last List's body.
  std::optional<std::pair<core::SipHasher::Key, uint64_t>> last_digest_;
  // The last Date read, and when it arrived on the caller's wall and monotonic clocks.
  struct HeadDate {
    int64_t date_ms = 0;
    int64_t received_wall_ms = 0;
    int64_t received_us = 0;
  };
  std::optional<HeadDate> head_date_;
};

void AbandonRayCalls() { CallRegistry::Get().AbandonAll(); }

int RayCallsInFlight() { return CallRegistry::Get().Count(); }

RayHttpJobServer::RayHttpJobServer(RayClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(options), RayHttpTransport())) {}

RayHttpJobServer::RayHttpJobServer(RayClientOptions options, RayHttpTransport transport)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(transport))) {}

RayHttpJobServer::~RayHttpJobServer() = default;

core::Result<core::RayVersion> RayHttpJobServer::Version() { return impl_->Version(); }
core::Result<std::string> RayHttpJobServer::Submit(const core::Value& body) {
  return impl_->Submit(body);
}
core::Result<core::RayJob> RayHttpJobServer::Get(std::string_view id) { return impl_->Get(id); }
core::Result<std::vector<core::RayJob>> RayHttpJobServer::List() { return impl_->List(); }

core::Result<std::vector<core::RayJob>> RayHttpJobServer::ListWhere(const JobFilter& keep) {
  return impl_->List(keep);
}
void RayHttpJobServer::DigestListsWith(const core::SipHasher::Key& key) {
  impl_->DigestListsWith(key);
}
core::Result<uint64_t> RayHttpJobServer::ListDigest(const core::SipHasher::Key& key) {
  return impl_->ListDigest(key);
}
uint64_t RayHttpJobServer::ListedDigest(const std::vector<core::RayJob>& jobs,
                                        const core::SipHasher::Key& key) {
  return impl_->ListedDigest(jobs, key);
}
std::optional<int64_t> RayHttpJobServer::HeadClockOffsetMs() { return impl_->HeadClockOffsetMs(); }
std::optional<int64_t> RayHttpJobServer::HeadNowMs() { return impl_->HeadNowMs(); }
core::Result<bool> RayHttpJobServer::JobsReadableWithoutCredentials() {
  return impl_->JobsReadableWithoutCredentials();
}
core::Result<bool> RayHttpJobServer::Stop(std::string_view id) { return impl_->Stop(id); }
core::Result<bool> RayHttpJobServer::Delete(std::string_view id) { return impl_->Delete(id); }
core::Result<std::string> RayHttpJobServer::Logs(std::string_view id) { return impl_->Logs(id); }
core::Result<ports::LogTail> RayHttpJobServer::TailLogs(std::string_view id, size_t max_bytes) {
  return impl_->TailLogs(id, max_bytes);
}
core::Result<bool> RayHttpJobServer::HasPackage(std::string_view name) {
  return impl_->HasPackage(name);
}
core::Status RayHttpJobServer::UploadPackage(std::string_view name, std::string_view zip) {
  return impl_->UploadPackage(name, zip);
}
core::Result<std::string> RayHttpJobServer::ClusterStatus() { return impl_->ClusterStatus(); }
core::Result<core::ClusterResources> RayHttpJobServer::Resources() { return impl_->Resources(); }

core::Result<core::ClusterResources> ParseClusterResources(std::string_view body) {
  const json answer = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object()) return core::Error::Fatal("cluster_status: not a JSON object");
  const json* status = nullptr;
  if (auto data = answer.find("data"); data != answer.end() && data->is_object()) {
    if (auto it = data->find("clusterStatus"); it != data->end()) status = &*it;
  }
  if (status == nullptr || status->is_null()) {
    return core::Error::Transient("cluster_status: Ray has no cluster status yet");
  }
  const json* usage = nullptr;
  if (auto report = status->find("loadMetricsReport");
      status->is_object() && report != status->end() && report->is_object()) {
    if (auto it = report->find("usage"); it != report->end() && it->is_object()) usage = &*it;
  }
  if (usage == nullptr) {
    return core::Error::Fatal("cluster_status: no clusterStatus.loadMetricsReport.usage");
  }
  core::ClusterResources out;
  for (const auto& [name, pair] : usage->items()) {
    // [used, total]; anything else is skipped rather than guessed at.
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_number()) {
      continue;
    }
    const auto used = pair[0].get<double>();
    const auto total = pair[1].get<double>();
    out.total[name] = total;
    out.available[name] = std::max(0.0, total - used);
  }
  return out;
}

}  // namespace rg::adapters
