#include "tests/support/fake_ray_server.h"

#include <httplib.h>
#include <zip.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "reconciler/core/pending_reason.h"
#include "reconciler/core/time_format.h"

namespace rg::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using core::RayJobStatus;

constexpr char kDriverNodeId[] = "fa4e0000000000000000000000000000000000000000000000000000";
constexpr char kAgentAddress[] = "http://127.0.0.1:52365";
constexpr std::string_view kPackagesPath = "/api/packages/gcs/";
// The dashboard's client_max_size: a larger request body is refused with 413.
constexpr size_t kMaxRequestBody = size_t{100} << 20;

int64_t SystemEpochMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string TrimSpace(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// What a shell would do with the entrypoint, as far as the fake cares.
struct Fate {
  enum Kind { kSucceed, kFail, kSleep } kind = kSucceed;
  int64_t exit_code = 0;
  std::optional<double> sleep_seconds;
  std::string output;
  std::optional<std::string> cat_file;  // `cat FILE`: output and fate known once the job starts
};

Fate FateOf(const std::string& entrypoint) {
  Fate fate;
  std::string cmd = TrimSpace(entrypoint);
  auto starts = [&](std::string_view word) {
    return cmd.rfind(word, 0) == 0 && (cmd.size() == word.size() ||
                                       std::isspace(static_cast<unsigned char>(cmd[word.size()])));
  };
  if (starts("sleep")) {
    fate.kind = Fate::kSleep;
    std::istringstream in(cmd.substr(5));
    double seconds = 0;
    if (in >> seconds) fate.sleep_seconds = seconds;
  } else if (cmd == "false") {
    fate.kind = Fate::kFail;
    fate.exit_code = 1;
  } else if (starts("exit")) {
    std::istringstream in(cmd.substr(4));
    int64_t code = 0;
    in >> code;
    if (code != 0) {
      fate.kind = Fate::kFail;
      fate.exit_code = code;
    }
  } else if (starts("echo")) {
    std::string words = TrimSpace(cmd.substr(4));
    words.erase(std::remove(words.begin(), words.end(), '\''), words.end());
    words.erase(std::remove(words.begin(), words.end(), '"'), words.end());
    fate.output = words + "\n";
  } else if (starts("cat")) {
    std::string file = TrimSpace(cmd.substr(3));
    file.erase(std::remove(file.begin(), file.end(), '\''), file.end());
    file.erase(std::remove(file.begin(), file.end(), '"'), file.end());
    fate.cat_file = std::move(file);
  }
  return fate;
}

// The package of a runtime_env whose working_dir is `gcs://<name>`: its name, else empty.
std::string WorkingDirPackage(const json& runtime_env) {
  if (!runtime_env.is_object()) return "";
  auto it = runtime_env.find("working_dir");
  if (it == runtime_env.end() || !it->is_string()) return "";
  const std::string uri = it->get<std::string>();
  constexpr std::string_view kScheme = "gcs://";
  return uri.rfind(kScheme, 0) == 0 ? uri.substr(kScheme.size()) : "";
}

// The files of a zip as its entries name them. nullopt when `bytes` is not a zip.
std::optional<std::map<std::string, std::string>> ZipFiles(const std::string& bytes) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (source == nullptr) {
    zip_error_fini(&error);
    return std::nullopt;
  }
  zip_t* archive = zip_open_from_source(source, ZIP_RDONLY, &error);
  zip_error_fini(&error);
  if (archive == nullptr) {
    zip_source_free(source);  // still ours: zip_open_from_source failed
    return std::nullopt;
  }
  std::map<std::string, std::string> files;
  bool readable = true;
  const zip_int64_t entries = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < entries && readable; ++i) {
    const auto index = static_cast<zip_uint64_t>(i);
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(archive, index, 0, &stat) != 0 || (stat.valid & ZIP_STAT_NAME) == 0 ||
        (stat.valid & ZIP_STAT_SIZE) == 0) {
      readable = false;
      break;
    }
    std::string name = stat.name;
    if (!name.empty() && name.back() == '/') continue;  // a directory
    zip_file_t* file = zip_fopen_index(archive, index, 0);
    if (file == nullptr) {
      readable = false;
      break;
    }
    std::string content(stat.size, '\0');
    const zip_int64_t read = zip_fread(file, content.data(), stat.size);
    zip_fclose(file);
    if (read < 0 || static_cast<zip_uint64_t>(read) != stat.size) {
      readable = false;
      break;
    }
    files.emplace(std::move(name), std::move(content));
  }
  zip_discard(archive);  // read only: nothing to write back; frees the source too
  if (!readable) return std::nullopt;
  return files;
}

// The message of a job whose working_dir package the store does not hold, as Ray 2.51.1 and
// 2.60.0 word it (their tracebacks' frames differ, the rest does not).
std::string MissingPackageMessage(const std::string& name) {
  return "runtime_env setup failed: Failed to set up runtime environment.\n"
         "Could not create the actor because its associated runtime env failed to be created.\n"
         "[Node 127.0.0.1] Traceback (most recent call last):\n"
         "  File \"fake_ray_server\", in download_and_unpack_package\n"
         "OSError: Failed to download runtime_env file package gcs://" +
         name +
         " from the GCS to the Ray worker node. The package may have prematurely been deleted "
         "from the GCS due to a long upload time or a problem with Ray. Try setting the "
         "environment variable RAY_RUNTIME_ENV_TEMPORARY_REFERENCE_EXPIRATION_S  to a value "
         "larger than the upload time in seconds (the default is 600). If this fails, try "
         "re-running after making any change to a file in the file package.\n";
}

std::string BadZipMessage(const std::string& name) {
  return "runtime_env setup failed: Failed to set up runtime environment.\n"
         "Could not create the actor because its associated runtime env failed to be created.\n"
         "[Node 127.0.0.1] Traceback (most recent call last):\n"
         "  File \"fake_ray_server\", in unzip_package\n"
         "zipfile.BadZipFile: File is not a zip file (package gcs://" +
         name + ")\n";
}

struct FakeJob {
  std::string type = "SUBMISSION";
  std::optional<std::string> job_id;
  std::string submission_id;
  std::string entrypoint;
  RayJobStatus status = RayJobStatus::kPending;
  std::string message = "Job has not started yet.";
  std::optional<std::string> error_type;
  int64_t start_time_ms = 0;
  std::optional<int64_t> end_time_ms;
  json metadata;     // null or object
  json runtime_env;  // null or object
  std::optional<int64_t> driver_exit_code;
  std::string logs;
  bool schedulable = true;
  bool manual = false;  // driven by SetStatus only
  Fate fate;
  Clock::time_point submitted;
  std::optional<Clock::time_point> running_since;
  std::optional<Clock::time_point> stop_due;
  bool driver_started = false;
};

struct Hold {
  int count = 0;
  std::chrono::milliseconds delay{0};
};

struct Fault {
  int count = 0;
  int status = 0;  // 0: drop the connection
  bool after_handling = false;
  std::string body;
};

std::string RandomSuffix(std::mt19937_64& rng, size_t n) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string out;
  for (size_t i = 0; i < n; ++i) out.push_back(kAlphabet[pick(rng)]);
  return out;
}

std::string Traceback(std::string_view where, std::string_view last_line) {
  std::string out = "Traceback (most recent call last):\n  File \"fake_ray_server\", in ";
  out.append(where).append("\n").append(last_line).append("\n");
  return out;
}

bool IsBrowserRequest(const httplib::Request& req) {
  if (req.get_header_value("User-Agent").rfind("Mozilla", 0) == 0) return true;
  for (const char* h :
       {"Referer", "Origin", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-Site", "Sec-Fetch-User",
        "Access-Control-Request-Method", "Access-Control-Request-Headers"}) {
    if (req.has_header(h)) return true;
  }
  return false;
}

}  // namespace

class FakeRayServer::Impl {
 public:
  // The server's clocks: the test's when FakeRayOptions::clock is set.
  Clock::time_point Now() const {
    if (options_.clock == nullptr) return Clock::now();
    return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
        std::chrono::microseconds(options_.clock->MonotonicUs())));
  }
  int64_t EpochMs() const {
    return (options_.clock != nullptr ? options_.clock->NowMs() : SystemEpochMs()) +
           clock_offset_ms_.load();
  }

  void SetClockOffset(std::chrono::milliseconds offset) { clock_offset_ms_ = offset.count(); }
  ports::Clock* clock() const { return options_.clock; }

  explicit Impl(FakeRayOptions options)
      : options_(std::move(options)),
        clock_offset_ms_(options_.clock_offset.count()),
        rng_(std::random_device{}()) {
    session_name_ = NewSessionName();
    server_.Get(".*",
                [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); });
    server_.Post(".*",
                 [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); });
    server_.Delete(
        ".*", [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); });
    server_.Put(".*",
                [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); });
    if (!options_.listen) return;
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // The socket already listens, so clients may connect at once; wait only so that stop()
    // in the destructor cannot race the start of the accept loop.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  ~Impl() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    hold_cv_.notify_all();
    if (thread_.joinable()) {
      server_.stop();
      thread_.join();
    }
  }

  int port() const { return port_; }

  // --- test controls ---

  bool SetStatus(std::string_view id, RayJobStatus status, std::string message,
                 std::optional<int64_t> exit_code, std::optional<std::string> error_type) {
    std::lock_guard lock(mu_);
    FakeJob* job = Find(id);
    if (job == nullptr) return false;
    job->manual = true;
    job->status = status;
    job->stop_due.reset();
    if (status == RayJobStatus::kRunning) job->driver_started = true;
    if (core::IsTerminal(status)) {
      job->end_time_ms = EpochMs();
      job->driver_started = true;
      if (status == RayJobStatus::kFailed && error_type) {
        job->driver_exit_code = exit_code;
        job->error_type = std::move(error_type);
      } else if (status == RayJobStatus::kFailed) {
        job->driver_exit_code = exit_code.value_or(1);
        job->error_type = "JOB_ENTRYPOINT_COMMAND_ERROR";
      } else if (status == RayJobStatus::kSucceeded) {
        job->driver_exit_code = exit_code.value_or(0);
      } else {
        job->driver_exit_code = exit_code;
      }
    } else {
      job->end_time_ms.reset();
    }
    job->message = message.empty() ? DefaultMessage(*job) : std::move(message);
    return true;
  }

  bool AppendLogs(std::string_view id, std::string_view text) {
    std::lock_guard lock(mu_);
    FakeJob* job = Find(id);
    if (job == nullptr) return false;
    job->logs.append(text);
    return true;
  }

  void Tick() {
    std::lock_guard lock(mu_);
    auto now = Now();
    for (auto& [id, job] : jobs_) {
      if (job.stop_due) job.stop_due = std::min(*job.stop_due, now);
      Advance(job, now);
    }
  }

  void Restart() {
    std::lock_guard lock(mu_);
    jobs_.clear();
    order_.clear();
    packages_.clear();
    session_name_ = NewSessionName();
  }

  void AddDriverJob(std::string job_id, std::string entrypoint) {
    std::lock_guard lock(mu_);
    FakeJob job;
    job.type = "DRIVER";
    job.job_id = job_id;
    job.entrypoint = std::move(entrypoint);
    job.status = RayJobStatus::kRunning;
    job.message.clear();
    job.manual = true;
    job.driver_started = true;
    job.start_time_ms = EpochMs();
    std::string key = "driver:" + job_id;
    order_.push_back(key);
    jobs_.emplace(key, std::move(job));
  }

  void SetToken(std::optional<std::string> token) {
    std::lock_guard lock(mu_);
    options_.token = std::move(token);
  }

  void SetClusterResources(std::map<std::string, double> resources,
                           std::map<std::string, double> used) {
    std::lock_guard lock(mu_);
    options_.cluster_resources = std::move(resources);
    options_.cluster_used = std::move(used);
  }

  std::optional<RayJobStatus> StatusOf(std::string_view id) {
    std::lock_guard lock(mu_);
    FakeJob* job = Find(id);
    if (job == nullptr) return std::nullopt;
    Advance(*job, Now());
    return job->status;
  }

  size_t JobCount() const {
    std::lock_guard lock(mu_);
    return jobs_.size();
  }

  std::vector<std::string> SubmitBodies() const {
    std::lock_guard lock(mu_);
    return submit_bodies_;
  }

  std::string SessionName() const {
    std::lock_guard lock(mu_);
    return session_name_;
  }

  std::vector<std::string> PackageNames() const {
    std::lock_guard lock(mu_);
    std::vector<std::string> names;
    names.reserve(packages_.size());
    for (const auto& [name, bytes] : packages_) names.push_back(name);
    return names;
  }

  std::optional<std::string> PackageBytes(std::string_view name) const {
    std::lock_guard lock(mu_);
    auto it = packages_.find(name);
    if (it == packages_.end()) return std::nullopt;
    return it->second;
  }

  int RequestCount(std::string_view route) const {
    std::lock_guard lock(mu_);
    auto it = counts_.find(std::string(route));
    return it == counts_.end() ? 0 : it->second;
  }

  std::map<std::string, std::string> LastHeaders(std::string_view route) const {
    std::lock_guard lock(mu_);
    auto it = last_headers_.find(std::string(route));
    return it == last_headers_.end() ? std::map<std::string, std::string>{} : it->second;
  }

  void ResetCounters() {
    std::lock_guard lock(mu_);
    counts_.clear();
    last_headers_.clear();
  }

  void FailNext(std::string_view route, int count, int status, std::string body) {
    std::lock_guard lock(mu_);
    faults_[std::string(route)] = Fault{count, status, false, std::move(body)};
  }

  void DropNext(std::string_view route, int count, bool after_handling) {
    std::lock_guard lock(mu_);
    faults_[std::string(route)] = Fault{count, 0, after_handling, ""};
  }

  void SetLatency(std::chrono::milliseconds latency) {
    std::lock_guard lock(mu_);
    latency_ = latency;
  }

  void HoldAnswerNext(std::string_view route, int count, std::chrono::milliseconds delay) {
    std::lock_guard lock(mu_);
    holds_[std::string(route)] = Hold{count, delay};
  }

 private:
  // --- request handling ---

  static std::string RouteOf(const std::string& method, const std::string& path, std::string* id,
                             std::string* tail) {
    static const std::string kJobs = "/api/jobs/";
    if (path == "/api/version" || path == "/api/authentication_mode" ||
        path == "/api/gcs_healthz" || path == "/api/cluster_status" || path == kJobs) {
      return method + " " + path;
    }
    if (path.rfind(kJobs, 0) == 0) {
      std::string rest = path.substr(kJobs.size());
      size_t slash = rest.find('/');
      *id = rest.substr(0, slash);
      if (id->empty()) return method + " other";
      if (slash == std::string::npos) return method + " /api/jobs/{id}";
      *tail = rest.substr(slash);
      if (*tail == "/stop" || *tail == "/logs") return method + " /api/jobs/{id}" + *tail;
    }
    if (path.rfind(kPackagesPath, 0) == 0) {
      const std::string name = path.substr(kPackagesPath.size());
      if (!name.empty() && name.find('/') == std::string::npos) {
        *id = name;
        return method + " /api/packages/gcs/{name}";
      }
    }
    return method + " other";
  }

  void Serve(const httplib::Request& req, httplib::Response& res) {
    if (Process(req, res)) Drop(res);
  }

 public:
  FakeRayAnswer Respond(const FakeRayRequest& request) {
    httplib::Request req;
    req.method = request.method;
    const size_t query = request.path.find('?');
    req.path = request.path.substr(0, query);
    if (query != std::string::npos) {
      httplib::detail::parse_query_text(request.path.substr(query + 1), req.params);
    }
    req.body = request.body;
    for (const auto& [name, value] : request.headers) req.headers.emplace(name, value);
    httplib::Response res;
    FakeRayAnswer answer;
    answer.lost = Process(req, res);
    answer.status = res.status;
    answer.body = res.body;
    for (const auto& [name, value] : res.headers) answer.headers[name] = value;
    return answer;
  }

 private:
  // Handles one request into `res`; true when its answer is to be lost instead.
  bool Process(const httplib::Request& req, httplib::Response& res) {
    std::chrono::milliseconds latency;
    std::chrono::milliseconds hold{0};
    std::optional<Fault> fault;
    std::string id, tail;
    const std::string route = RouteOf(req.method, req.path, &id, &tail);
    {
      std::lock_guard lock(mu_);
      latency = latency_;
      ++counts_[route];
      if (!options_.request_log.empty()) {
        std::ofstream(options_.request_log, std::ios::app) << req.method << " " << req.path << "\n";
      }
      auto& headers = last_headers_[route];
      headers.clear();
      for (const auto& [name, value] : req.headers) headers[Lower(name)] = value;
      auto it = faults_.find(route);
      if (it != faults_.end() && it->second.count > 0) {
        fault = it->second;
        if (--it->second.count == 0) faults_.erase(it);
      }
      auto held = holds_.find(route);
      if (held != holds_.end() && held->second.count > 0) {
        hold = held->second.delay;
        if (--held->second.count == 0) holds_.erase(held);
      }
    }
    if (latency.count() > 0) std::this_thread::sleep_for(latency);
    // aiohttp dates every answer, errors included, as it starts to send it.
    res.set_header("Date", core::FormatHttpDate(EpochMs()));
    if (fault && fault->status != 0) {
      res.status = fault->status;
      res.set_content(fault->body, "text/plain; charset=utf-8");
      return false;
    }
    if (fault && !fault->after_handling) return true;
    Handle(req, res, route, id);
    if (fault) return true;
    if (hold.count() > 0) {
      // Cut short by shutdown, so a held answer never delays the end of a test.
      std::unique_lock lock(mu_);
      hold_cv_.wait_for(lock, hold, [this] { return stopping_; });
    }
    return false;
  }

  // Sends a status line and headers promising a body that never comes, then closes: to the
  // client the answer is lost.
  static void Drop(httplib::Response& res) {
    res.status = 200;
    res.body.clear();
    res.set_content_provider(
        64, "application/json",
        [](size_t /*offset*/, size_t /*length*/, httplib::DataSink& /*sink*/) { return false; });
  }

  static void Text(httplib::Response& res, int status, std::string text) {
    res.status = status;
    res.set_content(std::move(text), "text/plain; charset=utf-8");
  }

  static void Json(httplib::Response& res, const json& body) {
    res.status = 200;
    res.set_content(body.dump(), "application/json; charset=utf-8");
  }

  void Handle(const httplib::Request& req, httplib::Response& res, const std::string& route,
              const std::string& id) {
    std::lock_guard lock(mu_);
    const bool is_public = req.path == "/api/authentication_mode" || req.path == "/api/healthz" ||
                           req.path == "/api/gcs_healthz" ||
                           req.path == "/api/local_raylet_healthz" || req.path == "/";
    if (options_.token && !is_public) {
      std::string auth = req.get_header_value("Authorization");
      if (auth.empty()) auth = req.get_header_value("X-Ray-Authorization");
      if (auth.empty()) return Text(res, 401, "Unauthorized: Missing authentication token");
      if (auth != "Bearer " + *options_.token) {
        return Text(res, 403, "Forbidden: Invalid authentication token");
      }
    }
    if (IsBrowserRequest(req) && req.method != "GET" && req.method != "HEAD" &&
        req.method != "OPTIONS") {
      return Text(res, 405, "'" + req.method + "' method not allowed for browser traffic.");
    }

    if (route == kRouteVersion) {
      return Json(res, {{"version", "4"},
                        {"ray_version", options_.ray_version},
                        {"ray_commit", "fake0000000000000000000000000000000000000"},
                        {"session_name", session_name_}});
    }
    if (route == kRouteAuthMode) {
      return Json(res, {{"authentication_mode", options_.token ? "token" : "disabled"}});
    }
    if (route == kRouteHealthz) {
      res.status = 200;
      res.set_content("success", "application/text; charset=utf-8");
      return;
    }
    if (route == kRouteClusterStatus) {
      return Json(res,
                  req.get_param_value("format") == "1" ? ClusterStatusText() : ClusterStatusJson());
    }
    if (route == kRouteSubmit) return Submit(req, res);
    if (route == kRoutePackageGet) {
      if (packages_.count(id) == 0)
        return Text(res, 404, "Package gcs://" + id + " does not exist");
      res.status = 200;  // Ray's bare Response(): no body
      return;
    }
    if (route == kRoutePackagePut) {
      if (req.body.size() > kMaxRequestBody) {
        return Text(res, 413,
                    "Maximum request body size " + std::to_string(kMaxRequestBody) + " exceeded.");
      }
      packages_[id] = req.body;
      res.status = 200;
      return;
    }
    if (route == kRouteList) {
      json list = json::array();
      auto now = Now();
      for (const std::string& key : order_) {
        FakeJob& job = jobs_.at(key);
        Advance(job, now);
        list.push_back(Details(job));
      }
      return Json(res, list);
    }
    if (route == kRouteGet || route == kRouteStop || route == kRouteDelete || route == kRouteLogs) {
      FakeJob* job = Find(id);
      if (job == nullptr) return Text(res, 404, "Job " + id + " does not exist");
      Advance(*job, Now());
      if (route == kRouteGet) return Json(res, Details(*job));
      if (route == kRouteStop) return Stop(*job, res);
      if (route == kRouteDelete) return Delete(*job, res);
      if (job->type != "SUBMISSION") {
        return Text(res, 400, "Can only get logs of submission type jobs");
      }
      return Json(res, {{"logs", job->status == RayJobStatus::kPending ? "" : job->logs}});
    }
    Text(res, 404, "404: Not Found");
  }

  void Submit(const httplib::Request& req, httplib::Response& res) {
    submit_bodies_.push_back(req.body);
    json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object()) {
      return Text(res, 500, Traceback("submit_job", "json.decoder.JSONDecodeError: invalid body"));
    }
    // Ray drops null-valued keys before validating, so newer clients work with older heads.
    for (auto it = body.begin(); it != body.end();) {
      it = it->is_null() ? body.erase(it) : std::next(it);
    }
    static const char* const kKnown[] = {"entrypoint",
                                         "submission_id",
                                         "job_id",
                                         "runtime_env",
                                         "metadata",
                                         "entrypoint_num_cpus",
                                         "entrypoint_num_gpus",
                                         "entrypoint_memory",
                                         "entrypoint_resources",
                                         "entrypoint_label_selector"};
    for (const auto& [key, value] : body.items()) {
      if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
        return Text(res, 400,
                    Traceback("submit_job",
                              "TypeError: JobSubmitRequest.__init__() got an "
                              "unexpected keyword argument '" +
                                  key + "'"));
      }
    }
    if (std::string problem = ValidateSubmit(body); !problem.empty()) {
      return Text(res, 400, Traceback("submit_job", "TypeError: " + problem));
    }
    std::string sid;
    if (body.contains("submission_id")) {
      sid = body["submission_id"].get<std::string>();
    } else if (body.contains("job_id")) {
      sid = body["job_id"].get<std::string>();
    } else {
      sid = "raysubmit_" + RandomSuffix(rng_, 16);
    }
    if (jobs_.count(sid) != 0) {
      return Text(res, 500,
                  Traceback("submit_job",
                            "RuntimeError: Request failed with status code 400: Traceback (most "
                            "recent call last):\nValueError: Job with submission_id " +
                                sid + " already exists. Please use a different submission_id.\n."));
    }
    FakeJob job;
    job.submission_id = sid;
    job.entrypoint = body["entrypoint"].get<std::string>();
    if (body.contains("metadata")) job.metadata = body["metadata"];
    if (body.contains("runtime_env")) job.runtime_env = body["runtime_env"];
    job.start_time_ms = EpochMs();
    job.submitted = Now();
    job.fate = FateOf(job.entrypoint);
    job.schedulable = Schedulable(body);
    job.message = job.schedulable
                      ? "Job has not started yet."
                      : "Job has not started yet. It may be waiting for resources (CPUs, GPUs, "
                        "memory, custom resources) to become available.";
    order_.push_back(sid);
    jobs_.emplace(sid, std::move(job));
    Json(res, {{"job_id", sid}, {"submission_id", sid}});
  }

  // The checks of Ray's JobSubmitRequest.__post_init__; empty when the body is acceptable.
  static std::string ValidateSubmit(const json& body) {
    auto type_name = [](const json& v) -> std::string {
      if (v.is_string()) return "<class 'str'>";
      if (v.is_boolean()) return "<class 'bool'>";
      if (v.is_number_integer()) return "<class 'int'>";
      if (v.is_number_float()) return "<class 'float'>";
      if (v.is_array()) return "<class 'list'>";
      return "<class 'dict'>";
    };
    if (!body.contains("entrypoint")) {
      return "JobSubmitRequest.__init__() missing 1 required positional argument: 'entrypoint'";
    }
    for (const char* key : {"entrypoint", "submission_id", "job_id"}) {
      if (body.contains(key) && !body[key].is_string()) {
        return std::string(key) + " must be a string, got " + type_name(body[key]);
      }
    }
    if (body.contains("runtime_env") && !body["runtime_env"].is_object()) {
      return "runtime_env must be a dict, got " + type_name(body["runtime_env"]);
    }
    for (const char* key : {"metadata", "entrypoint_label_selector"}) {
      if (!body.contains(key)) continue;
      if (!body[key].is_object()) return std::string(key) + " must be a dict";
      for (const auto& [k, v] : body[key].items()) {
        if (!v.is_string()) {
          return std::string(key) + " values must be strings, got " + type_name(v);
        }
      }
    }
    for (const char* key : {"entrypoint_num_cpus", "entrypoint_num_gpus"}) {
      if (body.contains(key) && (!body[key].is_number() || body[key].is_boolean())) {
        return std::string(key) + " must be a number, got " + type_name(body[key]);
      }
    }
    if (body.contains("entrypoint_memory") && !body["entrypoint_memory"].is_number_integer()) {
      return "entrypoint_memory must be an integer, got " + type_name(body["entrypoint_memory"]);
    }
    if (body.contains("entrypoint_resources")) {
      const json& r = body["entrypoint_resources"];
      if (!r.is_object()) return "entrypoint_resources must be a dict, got " + type_name(r);
      for (const auto& [k, v] : r.items()) {
        if (!v.is_number()) {
          return "entrypoint_resources values must be numbers, got " + type_name(v);
        }
      }
    }
    return "";
  }

  // Whether the fake cluster could ever place the driver. Running jobs do not use up
  // resources here: the fake answers "could it fit", not "does it fit now".
  bool Schedulable(const json& body) const {
    auto have = [&](const std::string& name) {
      auto it = options_.cluster_resources.find(name);
      return it == options_.cluster_resources.end() ? 0.0 : it->second;
    };
    if (body.contains("entrypoint_num_cpus") &&
        body["entrypoint_num_cpus"].get<double>() > have("CPU")) {
      return false;
    }
    if (body.contains("entrypoint_num_gpus") &&
        body["entrypoint_num_gpus"].get<double>() > have("GPU")) {
      return false;
    }
    if (body.contains("entrypoint_resources")) {
      for (const auto& [k, v] : body["entrypoint_resources"].items()) {
        if (v.get<double>() > have(k)) return false;
      }
    }
    return true;
  }

  void Stop(FakeJob& job, httplib::Response& res) {
    if (job.type != "SUBMISSION") return Text(res, 400, "Can only stop submission type jobs");
    if (core::IsTerminal(job.status)) return Json(res, {{"stopped", false}});
    // Ray only signals the supervisor actor; one that was never scheduled never gets the
    // message, so an unschedulable job stays PENDING although the answer is true.
    if ((job.manual || job.schedulable) && !job.stop_due) {
      job.stop_due = Now() + options_.stop_delay;
    }
    Json(res, {{"stopped", true}});
  }

  void Delete(FakeJob& job, httplib::Response& res) {
    if (job.type != "SUBMISSION") return Text(res, 400, "Can only delete submission type jobs");
    if (!core::IsTerminal(job.status)) {
      return Text(res, 500,
                  Traceback("delete_job",
                            "RuntimeError: Request failed with status code 500: "
                            "RuntimeError: Attempted to delete job '" +
                                job.submission_id + "', but it is in a non-terminal state " +
                                std::string(core::RayJobStatusName(job.status)) + ".\n."));
    }
    std::string key = job.submission_id;
    jobs_.erase(key);
    order_.erase(std::remove(order_.begin(), order_.end(), key), order_.end());
    Json(res, {{"deleted", true}});
  }

  double Used(const std::string& name) const {
    auto it = options_.cluster_used.find(name);
    return it == options_.cluster_used.end() ? 0.0 : it->second;
  }

  // GET /api/cluster_status?format=1: the text of `ray status`.
  json ClusterStatusText() const {
    std::ostringstream text;
    text << "======== Autoscaler status: fake ========\nNode status\n"
         << "---------------------------------------------------------------\nActive:\n"
         << " 1 node_" << kDriverNodeId << "\nPending:\n (no pending nodes)\n"
         << "Recent failures:\n (no failures)\n\nResources\n"
         << "---------------------------------------------------------------\nTotal Usage:\n";
    for (const auto& [name, amount] : options_.cluster_resources) {
      text << " " << Used(name) << "/" << amount << " " << name << "\n";
    }
    text << "\nDemands:\n (no resource demands)\n";
    return {{"result", true},
            {"msg", "Got formatted cluster status."},
            {"data", {{"clusterStatus", text.str()}}}};
  }

  // GET /api/cluster_status: the autoscaler's report as Ray 2.51 and 2.60 shape it. The
  // dashboard turns every key of an object into camelCase (worker_node: workerNode), those of
  // usage included; the resource maps inside lists (nodeTypes) keep their names.
  json ClusterStatusJson() const {
    std::map<std::string, double> all = options_.cluster_resources;
    all.emplace("node:127.0.0.1", 1.0);
    all.emplace("node:__internal_head__", 1.0);
    json usage = json::object();
    json node_type = json::object();
    for (const auto& [name, amount] : all) {
      usage[core::RayDashboardKey(name)] = json::array({Used(name), amount});
      node_type[name] = amount;
    }
    const std::string node = std::string(kDriverNodeId);
    json report = {{"usage", usage},
                   {"resourceDemand", json::array()},
                   {"pgDemand", json::array()},
                   {"requestDemand", json::array()},
                   {"nodeTypes", json::array({json::array({node_type, 1})})},
                   {"headIp", nullptr},
                   {"usageByNode", {{node, usage}}},
                   {"nodeTypeMapping", nullptr},
                   {"idleTimeMap", nullptr}};
    json status = {{"time", static_cast<double>(EpochMs()) / 1000.0},
                   {"autoscalerReport",
                    {{"activeNodes", {{"node" + node, 1}}},
                     {"pendingNodes", json::array()},
                     {"failedNodes", json::array()},
                     {"legacy", true}}},
                   {"loadMetricsReport", report}};
    return {{"result", true},
            {"msg", "Got cluster status."},
            {"data",
             {{"autoscalingStatus", "Cluster status: 0 nodes"},
              {"autoscalingError", nullptr},
              {"clusterStatus", status}}}};
  }

  // --- lifecycle ---

  FakeJob* Find(std::string_view id) {
    // Ray resolves an id as a driver JobID first, then as a submission id.
    for (auto& [key, job] : jobs_) {
      if (job.job_id && *job.job_id == id) return &job;
    }
    auto it = jobs_.find(std::string(id));
    return it == jobs_.end() ? nullptr : &it->second;
  }

  static std::string DefaultMessage(const FakeJob& job) {
    switch (job.status) {
      case RayJobStatus::kPending:
        return "Job has not started yet.";
      case RayJobStatus::kRunning:
        return "Job is currently running.";
      case RayJobStatus::kStopped:
        return "Job was intentionally stopped.";
      case RayJobStatus::kSucceeded:
        return "Job finished successfully.";
      case RayJobStatus::kFailed:
        if (job.error_type == "JOB_SUPERVISOR_ACTOR_DIED") {
          return "Job supervisor actor died: The actor died unexpectedly before finishing this "
                 "task.";
        }
        if (job.error_type && *job.error_type != "JOB_ENTRYPOINT_COMMAND_ERROR") {
          return "Job failed: " + *job.error_type + ".";
        }
        return "Job entrypoint command failed with exit code " +
               std::to_string(job.driver_exit_code.value_or(1)) +
               ", last available logs (truncated to 20,000 chars):\n" + job.logs;
      case RayJobStatus::kUnknown:
        break;
    }
    return "";
  }

  // What the runtime env agent does before the driver starts: fetch the working_dir package
  // and resolve `cat FILE` against its files. False when the set-up failed (the job has ended).
  bool SetUpRuntimeEnv(FakeJob& job) {
    const std::string package = WorkingDirPackage(job.runtime_env);
    std::optional<std::map<std::string, std::string>> files;
    if (!package.empty()) {
      auto held = packages_.find(package);
      if (held != packages_.end()) files = ZipFiles(held->second);
      if (!files) {
        job.status = RayJobStatus::kFailed;
        job.end_time_ms = EpochMs();
        job.driver_exit_code.reset();
        job.stop_due.reset();
        job.error_type = "RUNTIME_ENV_SETUP_FAILURE";
        job.message =
            held == packages_.end() ? MissingPackageMessage(package) : BadZipMessage(package);
        return false;
      }
    }
    if (job.fate.cat_file) {
      std::string file = *job.fate.cat_file;
      if (file.rfind("./", 0) == 0) file.erase(0, 2);
      std::optional<std::string> content;
      if (files) {
        if (auto found = files->find(file); found != files->end()) content = found->second;
      }
      if (content) {
        job.fate.output = std::move(*content);
      } else {
        job.fate.kind = Fate::kFail;
        job.fate.exit_code = 1;
        job.fate.output = "cat: " + *job.fate.cat_file + ": No such file or directory\n";
      }
    }
    return true;
  }

  void StartDriver(FakeJob& job) {
    job.driver_started = true;
    job.logs += "Running entrypoint for job " + job.submission_id + ": " + job.entrypoint + "\n";
  }

  void Finish(FakeJob& job, RayJobStatus status, std::optional<int64_t> exit_code) {
    job.status = status;
    job.end_time_ms = EpochMs();
    job.driver_exit_code = exit_code;
    job.stop_due.reset();
    if (status == RayJobStatus::kFailed) job.error_type = "JOB_ENTRYPOINT_COMMAND_ERROR";
    job.message = DefaultMessage(job);
  }

  // Moves a job along its fate up to `now`.
  void Advance(FakeJob& job, Clock::time_point now) {
    if (core::IsTerminal(job.status)) return;
    if (job.stop_due && now >= *job.stop_due) {
      return Finish(job, RayJobStatus::kStopped, std::nullopt);
    }
    if (job.manual) return;
    if (job.status == RayJobStatus::kPending) {
      if (!job.schedulable || now < job.submitted + options_.start_delay) return;
      if (!SetUpRuntimeEnv(job)) return;
      job.status = RayJobStatus::kRunning;
      job.running_since = job.submitted + options_.start_delay;
      job.message = DefaultMessage(job);
      StartDriver(job);
      job.logs += job.fate.output;
    }
    if (job.status != RayJobStatus::kRunning) return;
    Clock::duration runs_for = options_.run_time;
    if (job.fate.kind == Fate::kSleep) {
      if (!job.fate.sleep_seconds) return;
      runs_for = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(*job.fate.sleep_seconds));
    }
    if (now < *job.running_since + runs_for) return;
    if (job.fate.kind == Fate::kFail) return Finish(job, RayJobStatus::kFailed, job.fate.exit_code);
    Finish(job, RayJobStatus::kSucceeded, 0);
  }

  json Details(const FakeJob& job) const {
    auto opt = [](const auto& v) -> json { return v ? json(*v) : json(nullptr); };
    const bool on_node = job.driver_started;
    json driver_info = nullptr;
    if (job.type == "DRIVER") {
      driver_info = {{"id", *job.job_id}, {"node_ip_address", "127.0.0.1"}, {"pid", "4242"}};
    }
    return {
        {"type", job.type},
        {"job_id", opt(job.job_id)},
        {"submission_id", job.type == "SUBMISSION" ? json(job.submission_id) : json(nullptr)},
        {"driver_info", driver_info},
        {"status", core::RayJobStatusName(job.status)},
        {"entrypoint", job.entrypoint},
        {"message", job.message},
        {"error_type", opt(job.error_type)},
        {"start_time", job.start_time_ms},
        {"end_time", opt(job.end_time_ms)},
        {"metadata", job.metadata},
        {"runtime_env", job.runtime_env},
        {"driver_agent_http_address", on_node ? json(kAgentAddress) : json(nullptr)},
        {"driver_node_id", on_node ? json(kDriverNodeId) : json(nullptr)},
        {"driver_exit_code", opt(job.driver_exit_code)},
    };
  }

  std::string NewSessionName() {
    std::ostringstream out;
    out << "session_fake_" << EpochMs() << "_" << RandomSuffix(rng_, 6);
    return out.str();
  }

  FakeRayOptions options_;
  std::atomic<int64_t> clock_offset_ms_;  // SetClockOffset, read without the lock
  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  std::string session_name_;
  std::map<std::string, FakeJob, std::less<>> jobs_;
  std::map<std::string, std::string, std::less<>> packages_;  // name -> the zip's bytes
  std::vector<std::string> order_;  // submission order, as the list answers
  std::vector<std::string> submit_bodies_;
  std::map<std::string, int> counts_;
  std::map<std::string, std::map<std::string, std::string>> last_headers_;
  std::map<std::string, Fault> faults_;
  std::map<std::string, Hold> holds_;
  std::condition_variable hold_cv_;
  bool stopping_ = false;
  std::chrono::milliseconds latency_{0};
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

FakeRayServer::FakeRayServer(FakeRayOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
FakeRayServer::~FakeRayServer() = default;

int FakeRayServer::port() const { return impl_->port(); }
FakeRayAnswer FakeRayServer::Respond(const FakeRayRequest& request) {
  return impl_->Respond(request);
}
std::string FakeRayServer::address() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port());
}
bool FakeRayServer::SetStatus(std::string_view id, core::RayJobStatus status, std::string message,
                              std::optional<int64_t> exit_code,
                              std::optional<std::string> error_type) {
  return impl_->SetStatus(id, status, std::move(message), exit_code, std::move(error_type));
}
bool FakeRayServer::AppendLogs(std::string_view id, std::string_view text) {
  return impl_->AppendLogs(id, text);
}
void FakeRayServer::Tick() { impl_->Tick(); }
void FakeRayServer::Restart() { impl_->Restart(); }
void FakeRayServer::AddDriverJob(std::string job_id, std::string entrypoint) {
  impl_->AddDriverJob(std::move(job_id), std::move(entrypoint));
}
void FakeRayServer::SetToken(std::optional<std::string> token) {
  impl_->SetToken(std::move(token));
}
void FakeRayServer::SetClusterResources(std::map<std::string, double> resources,
                                        std::map<std::string, double> used) {
  impl_->SetClusterResources(std::move(resources), std::move(used));
}
void FakeRayServer::SetClockOffset(std::chrono::milliseconds offset) {
  impl_->SetClockOffset(offset);
}
ports::Clock* FakeRayServer::clock() const { return impl_->clock(); }
std::optional<core::RayJobStatus> FakeRayServer::StatusOf(std::string_view id) {
  return impl_->StatusOf(id);
}
size_t FakeRayServer::JobCount() const { return impl_->JobCount(); }
std::vector<std::string> FakeRayServer::SubmitBodies() const { return impl_->SubmitBodies(); }
std::string FakeRayServer::SessionName() const { return impl_->SessionName(); }
std::vector<std::string> FakeRayServer::PackageNames() const { return impl_->PackageNames(); }
std::optional<std::string> FakeRayServer::PackageBytes(std::string_view name) const {
  return impl_->PackageBytes(name);
}
int FakeRayServer::RequestCount(std::string_view route) const { return impl_->RequestCount(route); }
std::map<std::string, std::string> FakeRayServer::LastHeaders(std::string_view route) const {
  return impl_->LastHeaders(route);
}
void FakeRayServer::ResetCounters() { impl_->ResetCounters(); }
void FakeRayServer::FailNext(std::string_view route, int count, int status, std::string body) {
  impl_->FailNext(route, count, status, std::move(body));
}
void FakeRayServer::DropNext(std::string_view route, int count, bool after_handling) {
  impl_->DropNext(route, count, after_handling);
}
void FakeRayServer::SetLatency(std::chrono::milliseconds latency) { impl_->SetLatency(latency); }
void FakeRayServer::HoldAnswerNext(std::string_view route, int count,
                                   std::chrono::milliseconds delay) {
  impl_->HoldAnswerNext(route, count, delay);
}

}  // namespace rg::testing
