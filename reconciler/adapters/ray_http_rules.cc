#include "reconciler/adapters/ray_http_rules.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <istream>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <streambuf>
#include <thread>

namespace rg::adapters::ray_http {
namespace {

using nlohmann::json;

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string Describe(std::string_view method, std::string_view path, int status,
                     std::string_view body) {
  std::string out;
  out.append(method).append(" ").append(path).append(": HTTP ").append(std::to_string(status));
  std::string trimmed = TrimBodyForMessage(body);
  if (!trimmed.empty()) out.append(": ").append(trimmed);
  return out;
}

// Ray writes some optional fields as null and leaves others out; both mean "unset".
const json* Field(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

core::Status ReadString(const json& obj, const char* key, std::string& out) {
  const json* v = Field(obj, key);
  if (v == nullptr) return core::OkStatus();
  if (!v->is_string()) {
    return core::Error::Fatal(std::string("job details: '") + key + "' is not a string");
  }
  out = v->get<std::string>();
  return core::OkStatus();
}

core::Status ReadOptionalString(const json& obj, const char* key, std::optional<std::string>& out) {
  if (Field(obj, key) == nullptr) return core::OkStatus();
  std::string text;
  core::Status read = ReadString(obj, key, text);
  if (read.ok()) out = std::move(text);
  return read;
}

core::Status ReadOptionalInt(const json& obj, const char* key, std::optional<int64_t>& out) {
  const json* v = Field(obj, key);
  if (v == nullptr) return core::OkStatus();
  if (v->is_number_integer()) {
    out = v->get<int64_t>();
  } else if (v->is_number_float() && std::isfinite(v->get<double>())) {
    out = static_cast<int64_t>(std::llround(v->get<double>()));
  } else {
    return core::Error::Fatal(std::string("job details: '") + key + "' is not a number");
  }
  return core::OkStatus();
}

core::Result<core::RayJob> JobFromJson(const json& obj) {
  if (!obj.is_object()) return core::Error::Fatal("job details: not a JSON object");
  core::RayJob job;
  core::Status st = ReadString(obj, "type", job.type);
  if (st) st = ReadOptionalString(obj, "job_id", job.job_id);
  if (st) st = ReadString(obj, "submission_id", job.submission_id);
  if (st) st = ReadString(obj, "entrypoint", job.entrypoint);
  if (st) st = ReadString(obj, "message", job.message);
  if (st) st = ReadOptionalString(obj, "error_type", job.error_type);
  if (st) st = ReadOptionalInt(obj, "start_time", job.start_time_ms);
  if (st) st = ReadOptionalInt(obj, "end_time", job.end_time_ms);
  if (st) st = ReadOptionalInt(obj, "driver_exit_code", job.driver_exit_code);
  if (st) st = ReadOptionalString(obj, "driver_node_id", job.driver_node_id);
  if (!st) return st.error();
  std::string status;
  if (auto s = ReadString(obj, "status", status); !s) return s.error();
  job.status = core::ParseRayJobStatus(status);
  if (const json* md = Field(obj, "metadata")) {
    if (!md->is_object()) return core::Error::Fatal("job details: 'metadata' is not an object");
    for (const auto& [k, v] : md->items()) {
      // Ray validates metadata as string->string on submit; anything else is not ours.
      if (v.is_string()) job.metadata[k] = v.get<std::string>();
    }
  }
  // Older Rays leave time fields at 0 rather than null before the job starts or ends.
  if (job.start_time_ms == 0) job.start_time_ms.reset();
  if (job.end_time_ms == 0) job.end_time_ms.reset();
  return job;
}

// A JSON value as core::Value: integers that fit int64 as integers, other numbers as doubles.
core::Value ValueFromJson(const json& v) {
  switch (v.type()) {
    case json::value_t::boolean:
      return {v.get<bool>()};
    case json::value_t::number_integer:
      return {v.get<int64_t>()};
    case json::value_t::number_unsigned:
      if (v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return {static_cast<int64_t>(v.get<uint64_t>())};
      }
      return {static_cast<double>(v.get<uint64_t>())};
    case json::value_t::number_float:
      return {v.get<double>()};
    case json::value_t::string:
      return {v.get<std::string>()};
    case json::value_t::array: {
      core::Value::Array out;
      out.reserve(v.size());
      for (const json& item : v) out.push_back(ValueFromJson(item));
      return {std::move(out)};
    }
    case json::value_t::object: {
      core::Value::Object out;
      for (const auto& [key, item] : v.items()) out.insert_or_assign(key, ValueFromJson(item));
      return {std::move(out)};
    }
    default:
      return {};
  }
}

core::Result<json> ParseJson(std::string_view text, const char* what) {
  // The JSON reader stops at a NUL byte as if the text ended there; JSON has none outside
  // escapes, so a body holding one is not JSON, whatever precedes it.
  json parsed = text.find('\0') == std::string_view::npos
                    ? json::parse(text, nullptr, /*allow_exceptions=*/false)
                    : json(json::value_t::discarded);
  if (parsed.is_discarded()) {
    return core::Error::Fatal(std::string(what) + ": not valid JSON: " + TrimBodyForMessage(text));
  }
  return parsed;
}

// The keys of a job object JobFromJson reads, in the order it checks them.
enum class JobKey : uint8_t {
  kType,
  kJobId,
  kSubmissionId,
  kEntrypoint,
  kMessage,
  kErrorType,
  kStartTime,
  kEndTime,
  kDriverExitCode,
  kDriverNodeId,
  kStatus,
  kMetadata,
  kOther,  // any key JobFromJson ignores
};
constexpr std::array<std::string_view, 12> kJobKeyNames = {
    "type",       "job_id",   "submission_id",    "entrypoint",     "message", "error_type",
    "start_time", "end_time", "driver_exit_code", "driver_node_id", "status",  "metadata"};

std::string_view KeyName(JobKey key) { return kJobKeyNames.at(static_cast<size_t>(key)); }

JobKey LookUpJobKey(std::string_view key) {
  for (size_t i = 0; i < kJobKeyNames.size(); ++i) {
    if (key == kJobKeyNames[i]) return static_cast<JobKey>(i);
  }
  return JobKey::kOther;
}

// The last value one key of a job object had, reduced to what JobFromJson looks at. A key
// given twice counts with its last value, as in the tree, where the later one replaces the
// earlier.
struct FieldValue {
  enum class Kind : uint8_t { kUnset, kString, kNumber, kOther };  // kUnset: missing or null
  Kind kind = Kind::kUnset;
  std::string text;    // kString
  int64_t number = 0;  // kNumber, converted as ReadOptionalInt converts
};

// Fills RayJobs from the events of the JSON reader (nlohmann's SAX interface) as they arrive.
// Only the job being read is buffered, so that its checks run in JobFromJson's order once
// the object ends. After the first error the rest of the text is still read, because text
// that is not JSON is reported before any job's error, as the tree reports it.
class JobListReader {
 public:
  JobListReader() = default;
  explicit JobListReader(const std::function<bool(const core::RayJob&)>* keep) : keep_(keep) {}

  using NumberInteger = json::number_integer_t;
  using NumberUnsigned = json::number_unsigned_t;
  using NumberFloat = json::number_float_t;

  // Valid after a parse that succeeded.
  core::Result<std::vector<core::RayJob>> TakeResult() {
    if (!is_array_) return core::Error::Fatal("job list: not a JSON array");
    if (error_) return *error_;
    // The list's length is known only now: the jobs move from their blocks into one array of
    // exactly that length (the caller keeps it until the next pass), each block let go of as
    // soon as it is moved, so that the jobs are never all held twice over.
    size_t count = 0;
    for (const std::vector<core::RayJob>& block : blocks_) count += block.size();
    std::vector<core::RayJob> jobs;
    jobs.reserve(count);
    for (std::vector<core::RayJob>& block : blocks_) {
      std::move(block.begin(), block.end(), std::back_inserter(jobs));
      std::vector<core::RayJob>().swap(block);
    }
    blocks_.clear();
    return jobs;
  }

  bool null() { return Scalar(FieldValue::Kind::kUnset); }
  bool boolean(bool /*value*/) { return Scalar(FieldValue::Kind::kOther); }
  bool number_integer(NumberInteger value) { return Number(value); }
  bool number_unsigned(NumberUnsigned value) {
    // As the tree's get<int64_t>() converts an unsigned number.
    return Number(static_cast<int64_t>(value));
  }
  bool number_float(NumberFloat value, const std::string& /*text*/) {
    if (!std::isfinite(value)) return Scalar(FieldValue::Kind::kOther);
    return Number(static_cast<int64_t>(std::llround(value)));
  }
  bool string(std::string& value) {
    if (skip_depth_ > 0) return true;
    if (InScalarField()) {
      FieldValue& field = Field(key_);
      field.kind = FieldValue::Kind::kString;
      field.text.assign(value);
      return true;
    }
    if (where_ == Where::kMetadata) {
      metadata_.insert_or_assign(metadata_key_, value);
      return true;
    }
    return Scalar(FieldValue::Kind::kString);
  }
  bool binary(json::binary_t& /*value*/) { return Scalar(FieldValue::Kind::kOther); }

  bool start_object(size_t /*size*/) {
    if (skip_depth_ == 0 && where_ == Where::kList) {
      StartJob();
      return true;
    }
    if (skip_depth_ == 0 && where_ == Where::kJob && key_ == JobKey::kMetadata) {
      metadata_kind_ = MetadataKind::kObject;
      metadata_.clear();
      where_ = Where::kMetadata;
      return true;
    }
    return StartSkipped();
  }
  bool key(std::string& key) {
    if (skip_depth_ > 0) return true;
    if (where_ == Where::kJob) key_ = LookUpJobKey(key);
    if (where_ == Where::kMetadata) metadata_key_.assign(key);
    return true;
  }
  bool end_object() {
    if (skip_depth_ > 0) {
      --skip_depth_;
    } else if (where_ == Where::kMetadata) {
      where_ = Where::kJob;
    } else if (where_ == Where::kJob) {
      FinishJob();
      where_ = Where::kList;
    }
    return true;
  }
  bool start_array(size_t /*size*/) {
    if (skip_depth_ == 0 && where_ == Where::kTop) {
      is_array_ = true;
      where_ = Where::kList;
      return true;
    }
    return StartSkipped();
  }
  bool end_array() {
    if (skip_depth_ > 0) {
      --skip_depth_;
    } else if (where_ == Where::kList) {
      where_ = Where::kDone;
    }
    return true;
  }
  static bool parse_error(size_t /*position*/, const std::string& /*last_token*/,
                          const json::exception& /*error*/) {
    return false;
  }

 private:
  enum class Where : uint8_t {
    kTop,       // before the first value
    kList,      // in the array, between jobs
    kJob,       // in a job object
    kMetadata,  // in a job's metadata object
    kDone,      // after the first value
  };

  enum class MetadataKind : uint8_t { kUnset, kObject, kOther };  // kUnset: missing or null

  // REQUIRES: key < JobKey::kMetadata
  FieldValue& Field(JobKey key) { return fields_.at(static_cast<size_t>(key)); }

  // True when the next value is one of the job's string or number fields.
  bool InScalarField() const { return where_ == Where::kJob && key_ < JobKey::kMetadata; }

  void Fail(core::Error error) {
    if (!error_) error_ = std::move(error);
  }

  // A value that is not read into the job at hand: in a job it replaces that key's value, in
  // metadata it drops the key, in the list it is an element that is not an object.
  void Other(FieldValue::Kind kind) {
    switch (where_) {
      case Where::kTop:
        where_ = Where::kDone;
        break;
      case Where::kList:
        Fail(core::Error::Fatal("job details: not a JSON object"));
        break;
      case Where::kJob:
        if (key_ == JobKey::kMetadata) {
          metadata_kind_ =
              kind == FieldValue::Kind::kUnset ? MetadataKind::kUnset : MetadataKind::kOther;
        } else if (key_ < JobKey::kMetadata) {
          Field(key_).kind = kind;
        }
        break;
      case Where::kMetadata:
        // Ray validates metadata as string->string on submit; anything else is not ours.
        metadata_.erase(metadata_key_);
        break;
      case Where::kDone:
        break;
    }
  }

  bool Scalar(FieldValue::Kind kind) {
    if (skip_depth_ == 0) Other(kind);
    return true;
  }

  bool Number(int64_t value) {
    if (skip_depth_ > 0) return true;
    if (InScalarField()) {
      FieldValue& field = Field(key_);
      field.kind = FieldValue::Kind::kNumber;
      field.number = value;
      return true;
    }
    return Scalar(FieldValue::Kind::kNumber);
  }

  // An object or array nobody reads: what it replaces is decided, then its content skipped.
  bool StartSkipped() {
    if (skip_depth_ == 0) Other(FieldValue::Kind::kOther);
    ++skip_depth_;
    return true;
  }

  void StartJob() {
    for (FieldValue& field : fields_) field.kind = FieldValue::Kind::kUnset;
    metadata_kind_ = MetadataKind::kUnset;
    metadata_.clear();
    key_ = JobKey::kOther;
    where_ = Where::kJob;
  }

  core::Status TakeString(JobKey key, std::string& out) {
    FieldValue& field = Field(key);
    if (field.kind == FieldValue::Kind::kUnset) return core::OkStatus();
    if (field.kind != FieldValue::Kind::kString) {
      return core::Error::Fatal("job details: '" + std::string(KeyName(key)) + "' is not a string");
    }
    out = std::move(field.text);
    return core::OkStatus();
  }

  core::Status TakeOptionalString(JobKey key, std::optional<std::string>& out) {
    if (Field(key).kind == FieldValue::Kind::kUnset) return core::OkStatus();
    std::string text;
    core::Status read = TakeString(key, text);
    if (read.ok()) out = std::move(text);
    return read;
  }

  core::Status TakeOptionalInt(JobKey key, std::optional<int64_t>& out) {
    const FieldValue& field = Field(key);
    if (field.kind == FieldValue::Kind::kUnset) return core::OkStatus();
    if (field.kind != FieldValue::Kind::kNumber) {
      return core::Error::Fatal("job details: '" + std::string(KeyName(key)) + "' is not a number");
    }
    out = field.number;
    return core::OkStatus();
  }

  // JobFromJson's checks, in its order, on the buffered fields.
  void FinishJob() {
    if (error_) return;
    core::RayJob job;
    core::Status st = TakeString(JobKey::kType, job.type);
    if (st) st = TakeOptionalString(JobKey::kJobId, job.job_id);
    if (st) st = TakeString(JobKey::kSubmissionId, job.submission_id);
    if (st) st = TakeString(JobKey::kEntrypoint, job.entrypoint);
    if (st) st = TakeString(JobKey::kMessage, job.message);
    if (st) st = TakeOptionalString(JobKey::kErrorType, job.error_type);
    if (st) st = TakeOptionalInt(JobKey::kStartTime, job.start_time_ms);
    if (st) st = TakeOptionalInt(JobKey::kEndTime, job.end_time_ms);
    if (st) st = TakeOptionalInt(JobKey::kDriverExitCode, job.driver_exit_code);
    if (st) st = TakeOptionalString(JobKey::kDriverNodeId, job.driver_node_id);
    std::string status;
    if (st) st = TakeString(JobKey::kStatus, status);
    if (!st) return Fail(st.error());
    job.status = core::ParseRayJobStatus(status);
    if (metadata_kind_ == MetadataKind::kOther) {
      return Fail(core::Error::Fatal("job details: 'metadata' is not an object"));
    }
    if (metadata_kind_ == MetadataKind::kObject) job.metadata = core::StringMap(metadata_);
    // Older Rays leave time fields at 0 rather than null before the job starts or ends.
    if (job.start_time_ms == 0) job.start_time_ms.reset();
    if (job.end_time_ms == 0) job.end_time_ms.reset();
    if (keep_ != nullptr && *keep_ && !(*keep_)(job)) return;
    if (blocks_.empty() || blocks_.back().size() == kJobsPerBlock) {
      blocks_.emplace_back().reserve(kJobsPerBlock);
    }
    blocks_.back().push_back(std::move(job));
  }

  // The jobs are gathered in blocks of this many, never in one array grown by doubling, which
  // held the old and the new array at once and left up to half of the last one unused.
  static constexpr size_t kJobsPerBlock = 2048;

  const std::function<bool(const core::RayJob&)>* keep_ = nullptr;  // null: keep every job
  Where where_ = Where::kTop;
  int64_t skip_depth_ = 0;  // > 0 inside a value nobody reads
  bool is_array_ = false;
  JobKey key_ = JobKey::kOther;
  std::array<FieldValue, static_cast<size_t>(JobKey::kMetadata)> fields_;
  MetadataKind metadata_kind_ = MetadataKind::kUnset;
  std::string metadata_key_;
  // The string values of the last metadata object, as read (a key read twice keeps the last);
  // the job keeps them in one buffer.
  std::map<std::string, std::string, std::less<>> metadata_;
  std::optional<core::Error> error_;
  std::vector<std::vector<core::RayJob>> blocks_;
};

}  // namespace

std::string TrimBodyForMessage(std::string_view body) {
  constexpr std::string_view kSpace = " \t\r\n";
  size_t begin = body.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return "";
  size_t end = body.find_last_not_of(kSpace);
  body = body.substr(begin, end - begin + 1);
  // A Python traceback says what went wrong in its last exception line, not in its first.
  if (body.rfind("Traceback (most recent call last)", 0) == 0) {
    size_t line_start = body.size();
    while (line_start > 0) {
      size_t prev = body.rfind('\n', line_start - 1);
      size_t from = prev == std::string_view::npos ? 0 : prev + 1;
      std::string_view line = body.substr(from, line_start - from);
      if (!line.empty() && line.front() != ' ' &&
          (Contains(line, "Error: ") || Contains(line, "Exception: "))) {
        body = body.substr(from);
        break;
      }
      if (prev == std::string_view::npos) break;
      line_start = prev;
    }
  }
  if (body.size() <= kMaxBodyInMessage) return std::string(body);
  return std::string(body.substr(0, kMaxBodyInMessage)) + "...";
}

bool IsDuplicateSubmissionBody(std::string_view body) {
  return Contains(body, "already exists") || Contains(body, "Please use a different submission_id");
}

bool IsPackageName(std::string_view name) {
  constexpr std::string_view kPrefix = "_ray_pkg_";
  constexpr std::string_view kSuffix = ".zip";
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return false;
  }
  const std::string_view key =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'); });
}

core::Error ClassifyHttpError(std::string_view method, std::string_view path, int status,
                              std::string_view body) {
  std::string message = Describe(method, path, status, body);
  // Ray 2.51.1 and 2.60.0 answer a body over the limit with aiohttp's own 413. Their
  // upload_package reads the body inside a try block that makes any exception a 500 with its
  // traceback, so the same refusal raised there would come as a 500 naming the exception.
  if (status == 413 || (status == 500 && (Contains(body, "HTTPRequestEntityTooLarge") ||
                                          Contains(body, "Request Entity Too Large")))) {
    // Ray's text cut shorter, so that the explanation fits the bound of any error message.
    constexpr size_t kTooLargeBody = kMaxBodyInMessage / 2;
    return core::Error::InvalidInput(
        Describe(method, path, status, body.substr(0, kTooLargeBody)) +
        " (the request body is too large: Ray's dashboard takes request bodies up to 100 MiB)");
  }
  if (status == 404 && method == "PUT") {
    return core::Error::Fatal(message + " (the head has no such store to upload to)");
  }
  switch (status) {
    case 400:
      return core::Error::InvalidInput(std::move(message));
    case 401:
    case 403:
      return core::Error::Unauthorized(std::move(message));
    case 404:
      return core::Error::NotFound(std::move(message));
    default:
      break;
  }
  if (status == 500 && method == "POST" && IsDuplicateSubmissionBody(body)) {
    return core::Error::Conflict(std::move(message));
  }
  // Ray refuses to delete a job that has not ended with a 500 naming its state.
  if (status == 500 && method == "DELETE" && Contains(body, "non-terminal")) {
    return core::Error::Conflict(std::move(message));
  }
  if (status >= 400 && status < 500 && status != 408 && status != 429) {
    return core::Error::Fatal(std::move(message));
  }
  return core::Error::Transient(std::move(message));
}

core::Result<core::RayJob> ParseJobDetails(std::string_view text) {
  auto parsed = ParseJson(text, "job details");
  if (!parsed) return parsed.error();
  core::Result<core::RayJob> job = JobFromJson(*parsed);
  // One job read on its own: its runtime_env too, which a check before adoption compares
  // (core/adoption.h). A list leaves it out (ray_http_rules.h).
  if (job.ok()) {
    if (const json* env = Field(*parsed, "runtime_env")) job->runtime_env.set(ValueFromJson(*env));
  }
  return job;
}

core::Result<std::vector<core::RayJob>> ParseJobList(std::string_view text) {
  return ParseJobList(text, {});
}

core::Result<std::vector<core::RayJob>> ParseJobList(
    std::string_view text, const std::function<bool(const core::RayJob&)>& keep) {
  JobListStream stream(keep);
  stream.Begin();
  stream.Write(text);
  return stream.Finish();
}

// The bytes written are gathered into a block; a full block is handed to the decoder's
// queue, where the decoder's stream buffer takes it from. One mutex guards the queue and the
// flags; the block being filled belongs to the writer, the block being read to the decoder.
class JobListStream::Impl {
 public:
  struct Options {
    std::function<bool(const core::RayJob&)> keep;
    std::optional<core::SipHasher::Key> digest_key;
    bool decode = true;
  };
  explicit Impl(Options options) : options_(std::move(options)) {}
  ~Impl() { Abandon(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;

  void Begin() {
    Abandon();
    if (options_.digest_key) hasher_.emplace(*options_.digest_key);
    begun_ = true;
    if (!options_.decode) return;
    prefix_.clear();
    has_nul_ = false;
    filling_.clear();
    queue_.clear();
    closed_ = false;
    abandoned_ = false;
    decoder_done_ = false;
    parsed_ = false;
    reader_.emplace(&options_.keep);
    decoder_ = std::thread([this] { Decode(); });
  }

  void Write(std::string_view bytes) {
    if (!begun_) Begin();
    if (hasher_) hasher_->Update(bytes);
    if (!options_.decode) return;
    if (prefix_.size() < kMessagePrefix) {
      prefix_.append(bytes.substr(0, kMessagePrefix - prefix_.size()));
    }
    // The NUL check is ParseJson's, for the same reason.
    if (bytes.find('\0') != std::string_view::npos) has_nul_ = true;
    while (!bytes.empty()) {
      const size_t take = std::min(bytes.size(), kBlockBytes - filling_.size());
      filling_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (filling_.size() == kBlockBytes) Hand();
    }
  }

  core::Result<std::vector<core::RayJob>> Finish() {
    if (!options_.decode) {
      return core::Error::Fatal("job list: a digest-only stream decodes nothing");
    }
    if (!begun_) Begin();
    begun_ = false;
    Hand();
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
    decoder_.join();
    if (has_nul_ || !parsed_) {
      return core::Error::Fatal("job list: not valid JSON: " + TrimBodyForMessage(prefix_));
    }
    return reader_->TakeResult();
  }

  uint64_t Digest() const { return hasher_ ? hasher_->Finish() : 0; }

 private:
  // The decoder's view of the queue: each block taken in turn, the end of the text once the
  // writer has finished (or the stream is abandoned) and the queue is empty.
  class Blocks : public std::streambuf {
   public:
    explicit Blocks(Impl& owner) : owner_(owner) {}

   protected:
    int_type underflow() override {
      {
        std::unique_lock<std::mutex> lock(owner_.mutex_);
        owner_.changed_.wait(
            lock, [&] { return !owner_.queue_.empty() || owner_.closed_ || owner_.abandoned_; });
        if (owner_.abandoned_ || owner_.queue_.empty()) return traits_type::eof();
        block_ = std::move(owner_.queue_.front());
        owner_.queue_.pop_front();
      }
      owner_.changed_.notify_all();
      setg(block_.data(), block_.data(), block_.data() + block_.size());
      return traits_type::to_int_type(block_.front());
    }

   private:
    Impl& owner_;
    std::string block_;  // never empty once taken: empty blocks are not handed over
  };

  void Decode() {
    Blocks blocks(*this);
    std::istream text(&blocks);
    try {
      parsed_ = json::sax_parse(text, &*reader_);
    } catch (const std::exception&) {
      parsed_ = false;  // out of memory: reported as a text that could not be read
    }
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      decoder_done_ = true;
      queue_.clear();
    }
    changed_.notify_all();
  }

  // Hands the block being filled to the decoder, waiting while kBlocksAhead are queued. A
  // decoder that has stopped (at text that is not JSON) takes nothing more.
  void Hand() {
    if (filling_.empty()) return;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return queue_.size() < kBlocksAhead || decoder_done_; });
      if (!decoder_done_) queue_.push_back(std::move(filling_));
    }
    changed_.notify_all();
    filling_ = std::string();
  }

  // Stops a decoder still running (an attempt given up), and waits for it.
  void Abandon() {
    if (!decoder_.joinable()) return;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      abandoned_ = true;
    }
    changed_.notify_all();
    decoder_.join();
  }

  Options options_;
  bool begun_ = false;
  std::optional<core::SipHasher> hasher_;
  std::string prefix_;  // the first kMessagePrefix bytes, for the message of a text not JSON
  bool has_nul_ = false;
  std::string filling_;  // the writer's block

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;  // full blocks, oldest first
  bool closed_ = false;            // the writer has written everything
  bool abandoned_ = false;         // the attempt was given up
  bool decoder_done_ = false;      // the decoder has stopped reading

  // Written by the decoder, read after it is joined.
  std::optional<JobListReader> reader_;
  bool parsed_ = false;
  std::thread decoder_;
};

JobListStream::JobListStream(std::function<bool(const core::RayJob&)> keep,
                             std::optional<core::SipHasher::Key> digest_key, bool decode)
    : impl_(std::make_unique<Impl>(Impl::Options{std::move(keep), digest_key, decode})) {}
JobListStream::~JobListStream() = default;
void JobListStream::Begin() { impl_->Begin(); }
void JobListStream::Write(std::string_view bytes) { impl_->Write(bytes); }
core::Result<std::vector<core::RayJob>> JobListStream::Finish() { return impl_->Finish(); }
uint64_t JobListStream::Digest() const { return impl_->Digest(); }

core::Result<std::vector<core::RayJob>> ParseJobListDom(std::string_view text) {
  auto parsed = ParseJson(text, "job list");
  if (!parsed) return parsed.error();
  if (!parsed->is_array()) return core::Error::Fatal("job list: not a JSON array");
  std::vector<core::RayJob> jobs;
  jobs.reserve(parsed->size());
  for (const json& item : *parsed) {
    auto job = JobFromJson(item);
    if (!job) return job.error();
    jobs.push_back(std::move(*job));
  }
  return jobs;
}

core::Result<core::RayVersion> ParseVersion(std::string_view text) {
  auto parsed = ParseJson(text, "version");
  if (!parsed) return parsed.error();
  if (!parsed->is_object()) return core::Error::Fatal("version: not a JSON object");
  core::RayVersion v;
  core::Status st = ReadString(*parsed, "version", v.version);
  if (st) st = ReadString(*parsed, "ray_version", v.ray_version);
  if (st) st = ReadString(*parsed, "ray_commit", v.ray_commit);
  if (st) st = ReadString(*parsed, "session_name", v.session_name);
  if (!st) return st.error();
  if (v.ray_version.empty()) return core::Error::Fatal("version: no ray_version in the answer");
  return v;
}

std::optional<VersionTriple> ParseVersionTriple(std::string_view text) {
  std::array<int, 3> parts = {0, 0, 0};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    auto [next, ec] = std::from_chars(p, end, parts[i]);
    if (ec != std::errc()) {
      if (i == 0) return std::nullopt;
      break;
    }
    p = next;
    if (p == end || *p != '.') break;
    ++p;
  }
  return VersionTriple{parts[0], parts[1], parts[2]};
}

core::Value GateSubmitBody(const core::Value& body, std::string_view ray_version) {
  std::optional<VersionTriple> server = ParseVersionTriple(ray_version);
  auto takes = [&](const VersionTriple& since) { return !server || *server >= since; };
  core::Value out = core::Value::Object{};
  if (!body.is_object()) return out;
  for (const auto& [key, value] : body.as_object()) {
    if (value.is_null()) continue;
    if (key == "submission_id" && !takes(kSubmissionIdSince)) continue;
    if ((key == "entrypoint_num_cpus" || key == "entrypoint_num_gpus" ||
         key == "entrypoint_resources") &&
        !takes(kEntrypointResourcesSince)) {
      continue;
    }
    if (key == "entrypoint_memory" && !takes(kEntrypointMemorySince)) continue;
    if (key == "entrypoint_label_selector" && !takes(kEntrypointLabelSelectorSince)) continue;
    out.as_object().emplace(key, value);
  }
  return out;
}

std::chrono::milliseconds BackoffDelay(int retry, std::chrono::milliseconds initial,
                                       std::chrono::milliseconds max_backoff, double unit_random) {
  if (initial.count() <= 0 || max_backoff.count() <= 0) return std::chrono::milliseconds(0);
  int64_t ceiling = initial.count();
  for (int i = 0; i < retry && ceiling < max_backoff.count(); ++i) ceiling *= 2;
  ceiling = std::min<int64_t>(ceiling, max_backoff.count());
  double u = std::clamp(unit_random, 0.0, 1.0);
  auto delay = static_cast<int64_t>(u * static_cast<double>(ceiling));
  return std::chrono::milliseconds(std::min(delay, ceiling));
}

std::string EncodePathSegment(std::string_view segment) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  // "." and ".." would be read as path navigation, not as an id.
  if (segment.find_first_not_of('.') == std::string_view::npos) {
    for (size_t i = 0; i < segment.size(); ++i) out += "%2E";
    return out;
  }
  out.reserve(segment.size());
  for (unsigned char c : segment) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

}  // namespace rg::adapters::ray_http
