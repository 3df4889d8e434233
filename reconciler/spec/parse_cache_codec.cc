#include "reconciler/spec/parse_cache_codec.h"

#include <array>
#include <bit>
#include <bitset>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <vector>

#include "reconciler/spec/yaml_document.h"

namespace rg::spec {

// A new member of an encoded struct changes its size: encode and decode it below, set it in the
// round-trip test, and bump kParseCacheFormatVersion. The sizes hold for x86-64 libstdc++ only;
// elsewhere the round-trip test is the guard.
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(core::SourcePos) == 8, "update the parse cache codec");
static_assert(sizeof(core::Diagnostic) == 72, "update the parse cache codec");
static_assert(sizeof(core::Value) == 56, "update the parse cache codec");
static_assert(sizeof(core::RayConfig) == 456, "update the parse cache codec");
static_assert(sizeof(core::TrainerFields) == 264, "update the parse cache codec");
static_assert(sizeof(core::LifecycleFields) == 176, "update the parse cache codec");
static_assert(sizeof(core::ScheduleFields) == 152, "update the parse cache codec");
static_assert(sizeof(core::CodeFields) == 168, "update the parse cache codec");
static_assert(sizeof(core::SecretFields) == 88, "update the parse cache codec");
static_assert(sizeof(core::JobSpec) == 592, "update the parse cache codec");
static_assert(sizeof(LoadedJobSpec) == 736, "update the parse cache codec");
static_assert(sizeof(Parsed<core::JobSpec>) == 624, "update the parse cache codec");
static_assert(sizeof(Parsed<core::RayConfig>) == 488, "update the parse cache codec");
static_assert(sizeof(core::AttemptRecord) == 248, "update the parse cache codec");
static_assert(sizeof(core::StatusRecord) == 552, "update the parse cache codec");
// Past these, what a pass holds one of per job moves up one of jemalloc's size classes, a
// sixth more memory at 50,000 jobs (docs/performance.md): a ledger's map node (the record, its
// key and the node's links) and a parsed spec with its shared_ptr's count. Box what most jobs
// leave empty (core::Boxed) rather than grow them.
static_assert(sizeof(core::StatusRecord) + 64 <= 640, "a ledger's node outgrows 640 bytes");
static_assert(sizeof(LoadedJobSpec) + 16 <= 768, "a parsed spec outgrows 768 bytes");
#endif

namespace {

uint64_t LoadLE64(const char* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

uint32_t LoadLE32(const char* p) {
  uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

// Values are never nested deeper than a YAML document may be (kMaxYamlDepth), plus the
// levels of the document itself.
constexpr int kMaxValueDepth = kMaxYamlDepth + 8;

// The smallest encoded size of a few item kinds, for ByteReader::Count.
constexpr size_t kMinString = 4;
constexpr size_t kMinValue = 1;
constexpr size_t kMinPos = 8;

// ---- scalars and containers --------------------------------------------------------------

// Declared ahead of the templates that call them: the unnamed namespace is not searched by
// argument-dependent lookup.
void Put(ByteWriter& w, const core::Value& v);
void Get(ByteReader& r, core::Value& v);
void Put(ByteWriter& w, const core::Diagnostic& d);
void Get(ByteReader& r, core::Diagnostic& d);
void Put(ByteWriter& w, const core::RayConfig& c);
void Get(ByteReader& r, core::RayConfig& c);
void Put(ByteWriter& w, const core::JobSpec& s);
void Get(ByteReader& r, core::JobSpec& s);
void Put(ByteWriter& w, const core::AttemptRecord& a);
void Get(ByteReader& r, core::AttemptRecord& a);
void Put(ByteWriter& w, const core::ScheduleFields& s);
void Get(ByteReader& r, core::ScheduleFields& s);
template <typename T>
void Put(ByteWriter& w, const std::vector<T>& v);
template <typename T>
void Put(ByteWriter& w, const std::map<std::string, T, std::less<>>& m);

void Put(ByteWriter& w, const std::string& v) { w.String(v); }
void Put(ByteWriter& w, int64_t v) { w.I64(v); }
void Put(ByteWriter& w, double v) { w.F64(v); }
void Put(ByteWriter& w, const core::SourcePos& v) {
  w.U32(static_cast<uint32_t>(v.line));
  w.U32(static_cast<uint32_t>(v.column));
}

void Get(ByteReader& r, std::string& v) { v = r.String(); }
void Get(ByteReader& r, int64_t& v) { v = r.I64(); }
void Get(ByteReader& r, double& v) { v = r.F64(); }
void Get(ByteReader& r, core::SourcePos& v) {
  v.line = static_cast<int>(r.U32());
  v.column = static_cast<int>(r.U32());
}

template <typename T>
void Put(ByteWriter& w, const std::optional<T>& v) {
  w.Bool(v.has_value());
  if (v) Put(w, *v);
}

template <typename T>
void Get(ByteReader& r, std::optional<T>& v) {
  v.reset();
  if (r.Bool()) Get(r, v.emplace());
}

template <typename T>
void Put(ByteWriter& w, const std::vector<T>& v) {
  w.U32(static_cast<uint32_t>(v.size()));
  for (const T& item : v) Put(w, item);
}

template <typename T>
void Get(ByteReader& r, std::vector<T>& v, size_t min_item_bytes) {
  const uint32_t n = r.Count(min_item_bytes);
  v.clear();
  v.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) Get(r, v.emplace_back());
}

template <typename T>
void Put(ByteWriter& w, const std::map<std::string, T, std::less<>>& m) {
  w.U32(static_cast<uint32_t>(m.size()));
  for (const auto& [key, value] : m) {
    w.String(key);
    Put(w, value);
  }
}

// Keys must come strictly in order, as they were written: anything else was not written by
// EncodeTo, and a duplicate would be dropped silently.
template <typename T>
void Get(ByteReader& r, std::map<std::string, T, std::less<>>& m, size_t min_value_bytes) {
  const uint32_t n = r.Count(kMinString + min_value_bytes);
  m.clear();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    std::string key = r.String();
    if (!m.empty() && !(std::prev(m.end())->first < key)) return r.Fail();
    auto it = m.emplace_hint(m.end(), std::move(key), T{});
    Get(r, it->second);
  }
}

// A StringMap is written as a std::map of strings is: the encoding did not change with the type.
void Put(ByteWriter& w, const core::StringMap& m) {
  w.U32(static_cast<uint32_t>(m.size()));
  for (const auto& [key, value] : m) {
    w.String(key);
    w.String(value);
  }
}

void Get(ByteReader& r, core::StringMap& m, size_t min_value_bytes) {
  const uint32_t n = r.Count(kMinString + min_value_bytes);
  m.clear();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    const std::string_view key = r.StringView();
    const std::string_view value = r.StringView();
    if (r.ok() && !m.Append(key, value)) return r.Fail();  // out of order, or a duplicate
  }
  m.ShrinkToFit();
}

template <typename E>
void PutEnum(ByteWriter& w, E v) {
  w.U8(static_cast<uint8_t>(v));
}

template <typename E>
void GetEnum(ByteReader& r, E& v, E last) {
  const uint8_t raw = r.U8();
  if (raw > static_cast<uint8_t>(last)) return r.Fail();
  v = static_cast<E>(raw);
}

// ---- Value --------------------------------------------------------------------------------

enum class ValueTag : uint8_t { kNull, kFalse, kTrue, kInt, kDouble, kString, kArray, kObject };

void Put(ByteWriter& w, const core::Value& v) {
  if (v.is_null()) {
    w.U8(static_cast<uint8_t>(ValueTag::kNull));
  } else if (v.is_bool()) {
    w.U8(static_cast<uint8_t>(v.as_bool() ? ValueTag::kTrue : ValueTag::kFalse));
  } else if (v.is_int()) {
    w.U8(static_cast<uint8_t>(ValueTag::kInt));
    w.I64(v.as_int());
  } else if (v.is_double()) {
    w.U8(static_cast<uint8_t>(ValueTag::kDouble));
    w.F64(v.as_double());
  } else if (v.is_string()) {
    w.U8(static_cast<uint8_t>(ValueTag::kString));
    w.String(v.as_string());
  } else if (v.is_array()) {
    w.U8(static_cast<uint8_t>(ValueTag::kArray));
    Put(w, v.as_array());
  } else {
    w.U8(static_cast<uint8_t>(ValueTag::kObject));
    Put(w, v.as_object());
  }
}

void GetValue(ByteReader& r, core::Value& v, int depth);

void GetArray(ByteReader& r, core::Value& v, int depth) {
  const uint32_t n = r.Count(kMinValue);
  core::Value::Array items;
  items.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) GetValue(r, items.emplace_back(), depth + 1);
  v = std::move(items);
}

void GetObject(ByteReader& r, core::Value& v, int depth) {
  const uint32_t n = r.Count(kMinString + kMinValue);
  core::Value::Object members;
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    std::string key = r.String();
    if (!members.empty() && !(std::prev(members.end())->first < key)) return r.Fail();
    auto it = members.emplace_hint(members.end(), std::move(key), core::Value());
    GetValue(r, it->second, depth + 1);
  }
  v = std::move(members);
}

void GetValue(ByteReader& r, core::Value& v, int depth) {
  if (depth > kMaxValueDepth) return r.Fail();
  switch (static_cast<ValueTag>(r.U8())) {
    case ValueTag::kNull:
      v = nullptr;
      return;
    case ValueTag::kFalse:
      v = false;
      return;
    case ValueTag::kTrue:
      v = true;
      return;
    case ValueTag::kInt:
      v = r.I64();
      return;
    case ValueTag::kDouble:
      v = r.F64();
      return;
    case ValueTag::kString:
      v = r.String();
      return;
    case ValueTag::kArray:
      return GetArray(r, v, depth);
    case ValueTag::kObject:
      return GetObject(r, v, depth);
  }
  r.Fail();
}

void Get(ByteReader& r, core::Value& v) { GetValue(r, v, 0); }

// ---- the structs --------------------------------------------------------------------------

void Put(ByteWriter& w, const core::Diagnostic& d) {
  w.String(d.path);
  w.U32(static_cast<uint32_t>(d.line));
  w.U32(static_cast<uint32_t>(d.column));
  w.String(d.message);
}

void Get(ByteReader& r, core::Diagnostic& d) {
  d.path = r.String();
  d.line = static_cast<int>(r.U32());
  d.column = static_cast<int>(r.U32());
  d.message = r.String();
}

void Put(ByteWriter& w, const core::RayConfig& c) {
  Put(w, c.path);
  Put(w, c.name);
  Put(w, c.address);
  Put(w, c.shared_root);
  Put(w, c.entrypoint_num_cpus);
  Put(w, c.entrypoint_num_gpus);
  Put(w, c.entrypoint_memory);
  Put(w, c.entrypoint_resources);
  Put(w, c.runtime_env);
  Put(w, c.user_code_path);
  Put(w, c.code_max_bytes);
  Put(w, c.secrets);
  PutEnum(w, c.secret_delivery);
  w.Bool(c.allow_secrets_without_ray_auth);
  Put(w, c.positions);
}

void Get(ByteReader& r, core::RayConfig& c) {
  Get(r, c.path);
  Get(r, c.name);
  Get(r, c.address);
  Get(r, c.shared_root);
  Get(r, c.entrypoint_num_cpus);
  Get(r, c.entrypoint_num_gpus);
  Get(r, c.entrypoint_memory);
  c.entrypoint_resources.reset();
  if (r.Bool()) Get(r, c.entrypoint_resources.emplace(), sizeof(double));
  Get(r, c.runtime_env);
  Get(r, c.user_code_path);
  Get(r, c.code_max_bytes);
  Get(r, c.secrets, kMinString);
  GetEnum(r, c.secret_delivery, core::SecretDelivery::kNode);
  c.allow_secrets_without_ray_auth = r.Bool();
  Get(r, c.positions, kMinPos);
}

// A cron expression's sets as bit masks (each fits 64 bits), then its two flags.
template <size_t N>
void PutBits(ByteWriter& w, const std::bitset<N>& bits) {
  static_assert(N <= 64);
  w.U64(bits.to_ullong());
}

template <size_t N>
void GetBits(ByteReader& r, std::bitset<N>& bits) {
  static_assert(N <= 64);
  const uint64_t v = r.U64();
  if constexpr (N < 64) {
    if ((v >> N) != 0) r.Fail();
  }
  bits = std::bitset<N>(v);
}

// The zone itself is not encoded: it is looked up again by name after the read.
void Put(ByteWriter& w, const core::ScheduleFields& s) {
  Put(w, s.cron_text);
  PutBits(w, s.cron.minutes);
  PutBits(w, s.cron.hours);
  PutBits(w, s.cron.days_of_month);
  PutBits(w, s.cron.months);
  PutBits(w, s.cron.days_of_week);
  w.Bool(s.cron.day_of_month_restricted);
  w.Bool(s.cron.day_of_week_restricted);
  Put(w, s.timezone);
  Put(w, s.timezone_pos);
  PutEnum(w, s.concurrency);
  w.I64(s.starting_deadline_ms);
}

void Get(ByteReader& r, core::ScheduleFields& s) {
  Get(r, s.cron_text);
  GetBits(r, s.cron.minutes);
  GetBits(r, s.cron.hours);
  GetBits(r, s.cron.days_of_month);
  GetBits(r, s.cron.months);
  GetBits(r, s.cron.days_of_week);
  s.cron.day_of_month_restricted = r.Bool();
  s.cron.day_of_week_restricted = r.Bool();
  Get(r, s.timezone);
  Get(r, s.timezone_pos);
  GetEnum(r, s.concurrency, core::Concurrency::kAllow);
  s.starting_deadline_ms = r.I64();
  s.zone.reset();
}

void PutJobFields(ByteWriter& w, const core::JobSpec& s) {
  Put(w, s.path);
  PutEnum(w, s.workload);
  Put(w, s.name);
  Put(w, s.submission_id);
  const core::TrainerFields& t = s.trainer();
  Put(w, t.code_path);
  Put(w, t.model_id);
  Put(w, t.train_file);
  Put(w, t.val_file);
  Put(w, t.nnodes);
  Put(w, t.n_gpus_per_node);
  Put(w, t.total_training_steps);
  Put(w, t.save_freq);
  Put(w, t.test_freq);
  Put(w, t.overrides);
  Put(w, s.entrypoint);
  Put(w, s.runtime_env);
  Put(w, s.env_vars);
  Put(w, s.entrypoint_num_cpus);
  Put(w, s.entrypoint_num_gpus);
  Put(w, s.entrypoint_memory);
  Put(w, s.entrypoint_resources);
  w.I64(s.retries);
  w.I64(s.infra_retries);
  w.Bool(s.suspend);
  PutEnum(w, s.on_remove);
  Put(w, s.annotations);
  Put(w, s.lifecycle().deadline_ms);
  Put(w, s.lifecycle().schedule);
  Put(w, s.pipeline().after);
  Put(w, s.pipeline().after_pos);
  // What a commit says; the tree id and the rest are resolved again after a read.
  Put(w, s.code().folder);
  Put(w, s.code().folder_pos);
  Put(w, s.code().ref);
  Put(w, s.code().ref_pos);
  Put(w, s.secret_fields().references);
  Put(w, s.secret_fields().name_pos);
}

void Put(ByteWriter& w, const core::JobSpec& s) {
  PutJobFields(w, s);
  Put(w, s.document);
  Put(w, s.spec_hash);
  Put(w, s.legacy_spec_hashes);
  Put(w, s.positions);
}

void GetJobFields(ByteReader& r, core::JobSpec& s) {
  Get(r, s.path);
  GetEnum(r, s.workload, core::Workload::kCustom);
  Get(r, s.name);
  Get(r, s.submission_id);
  core::TrainerFields t;
  Get(r, t.code_path);
  Get(r, t.model_id);
  Get(r, t.train_file);
  Get(r, t.val_file);
  Get(r, t.nnodes);
  Get(r, t.n_gpus_per_node);
  Get(r, t.total_training_steps);
  Get(r, t.save_freq);
  Get(r, t.test_freq);
  Get(r, t.overrides, kMinString);
  s.trainer_fields.set(std::move(t));  // a custom job's spec keeps no box
  Get(r, s.entrypoint);
  Get(r, s.runtime_env);
  Get(r, s.env_vars, kMinString);
  Get(r, s.entrypoint_num_cpus);
  Get(r, s.entrypoint_num_gpus);
  Get(r, s.entrypoint_memory);
  s.entrypoint_resources.reset();
  if (r.Bool()) Get(r, s.entrypoint_resources.emplace(), sizeof(double));
  s.retries = r.I64();
  s.infra_retries = r.I64();
  s.suspend = r.Bool();
  GetEnum(r, s.on_remove, core::OnRemove::kKeep);
  Get(r, s.annotations, kMinString);
  core::SpecExtras extras;
  Get(r, extras.lifecycle.deadline_ms);
  Get(r, extras.lifecycle.schedule);
  Get(r, extras.pipeline.after, kMinString);
  Get(r, extras.pipeline.after_pos, kMinPos);
  if (extras.pipeline.after.size() != extras.pipeline.after_pos.size()) r.Fail();
  Get(r, extras.code.folder);
  Get(r, extras.code.folder_pos);
  Get(r, extras.code.ref);
  Get(r, extras.code.ref_pos);
  Get(r, extras.secrets.references, kMinString);
  Get(r, extras.secrets.name_pos, kMinPos);
  if (extras.secrets.references.size() != extras.secrets.name_pos.size()) r.Fail();
  s.extras.set(std::move(extras));  // most specs keep no box
}

void Get(ByteReader& r, core::JobSpec& s) {
  GetJobFields(r, s);
  Get(r, s.document);
  Get(r, s.spec_hash);
  Get(r, s.legacy_spec_hashes, kMinString);
  Get(r, s.positions, kMinPos);
}

template <typename T>
void PutParsed(ByteWriter& w, const Parsed<T>& p) {
  Put(w, p.value);
  Put(w, p.diagnostics);
}

template <typename T>
void GetParsed(ByteReader& r, Parsed<T>& p) {
  Get(r, p.value);
  Get(r, p.diagnostics, 2 * kMinString + 8);
}

void Put(ByteWriter& w, const core::AttemptRecord& a) {
  w.U32(static_cast<uint32_t>(a.attempt));
  w.String(a.submission_id);
  w.String(a.spec_hash);
  PutEnum(w, a.status);
  PutEnum(w, a.phase);
  Put(w, a.start_time_ms);
  Put(w, a.end_time_ms);
  w.String(a.message);
  PutEnum(w, a.stop_reason);
  w.String(a.unknown_stop_reason);
  Put(w, a.stop_sent_ms);
  w.String(a.commit);
  PutEnum(w, a.failure_class);
  w.String(a.ending.get().error_type);
  w.String(a.ending.get().stop_commit);
  Put(w, a.ending.get().lost_ms);
}

void Get(ByteReader& r, core::AttemptRecord& a) {
  a.attempt = static_cast<int>(r.U32());
  a.submission_id = r.String();
  a.spec_hash = r.String();
  GetEnum(r, a.status, core::RayJobStatus::kUnknown);
  GetEnum(r, a.phase, core::Phase::kWaiting);
  Get(r, a.start_time_ms);
  Get(r, a.end_time_ms);
  a.message = r.String();
  GetEnum(r, a.stop_reason, core::StopReason::kUnknown);
  a.unknown_stop_reason = r.String();
  Get(r, a.stop_sent_ms);
  a.commit = r.String();
  GetEnum(r, a.failure_class, core::FailureClass::kOwn);
  core::AttemptEnding ending;
  ending.error_type = r.String();
  ending.stop_commit = r.String();
  Get(r, ending.lost_ms);
  a.ending.set(std::move(ending));  // most attempts keep no box
}

void PutOptionalInt(ByteWriter& w, const std::optional<int>& v) {
  w.Bool(v.has_value());
  if (v) w.U32(static_cast<uint32_t>(*v));
}

void GetOptionalInt(ByteReader& r, std::optional<int>& v) {
  v.reset();
  if (r.Bool()) v = static_cast<int>(r.U32());
}

void PutRecordHead(ByteWriter& w, const core::StatusRecord& s) {
  w.String(s.name);
  w.String(s.instance);
  w.String(s.ray_cluster);
  w.String(s.spec_path);
  w.String(s.spec_hash);
  w.String(s.spec_commit);
  w.String(s.code.get().folder);
  w.String(s.code.get().tree);
  w.String(s.code.get().commit);
  PutEnum(w, s.phase);
  PutEnum(w, s.on_remove);
  w.String(s.submission_id);
  PutOptionalInt(w, s.attempt);
  PutEnum(w, s.status);
  w.String(s.message);
}

void GetRecordHead(ByteReader& r, core::StatusRecord& s) {
  s.name = r.String();
  s.instance = r.String();
  s.ray_cluster = r.String();
  s.spec_path = r.String();
  s.spec_hash = r.String();
  s.spec_commit = r.String();
  core::RunCode code;
  code.folder = r.String();
  code.tree = r.String();
  code.commit = r.String();
  s.code.set(std::move(code));  // most records keep no box
  GetEnum(r, s.phase, core::Phase::kWaiting);
  GetEnum(r, s.on_remove, core::OnRemove::kKeep);
  s.submission_id = r.String();
  GetOptionalInt(r, s.attempt);
  GetEnum(r, s.status, core::RayJobStatus::kUnknown);
  s.message = r.String();
}

// Checks that `r` read exactly one value: an error naming where it went wrong otherwise.
core::Status Finished(const ByteReader& r, std::string_view what) {
  if (r.ok() && r.at_end()) return core::OkStatus();
  return core::Error::InvalidInput("malformed " + std::string(what) + " in the parse cache (" +
                                   (r.ok() ? "bytes left over" : "cut short or out of range") +
                                   " at byte " + std::to_string(r.position()) + ")");
}

template <typename T>
core::Result<T> DecodeWhole(std::string_view bytes, std::string_view what) {
  ByteReader r(bytes);
  T out;
  DecodeFrom(r, out);
  if (core::Status done = Finished(r, what); !done) return done.error();
  return out;
}

template <typename T>
std::string EncodeWhole(const T& v) {
  ByteWriter w;
  EncodeTo(w, v);
  // At its size: grown by doubling, an encoding just over a power of two (a status record of
  // 520 bytes) kept twice its size, and a pass holds up to 4 MB of them before it spills.
  std::string out = w.Take();
  out.shrink_to_fit();
  return out;
}

// ---- XXH64 ----------------------------------------------------------------------------------

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

uint64_t Round(uint64_t acc, uint64_t input) {
  acc += input * kPrime2;
  acc = std::rotl(acc, 31);
  return acc * kPrime1;
}

uint64_t MergeRound(uint64_t acc, uint64_t val) {
  acc ^= Round(0, val);
  return acc * kPrime1 + kPrime4;
}

}  // namespace

// ---- ByteWriter / ByteReader ----------------------------------------------------------------

void ByteWriter::U32(uint32_t v) {
  std::array<char, 4> buf{};
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  out_.append(buf.data(), buf.size());
}

void ByteWriter::U64(uint64_t v) {
  std::array<char, 8> buf{};
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  out_.append(buf.data(), buf.size());
}

void ByteWriter::F64(double v) { U64(std::bit_cast<uint64_t>(v)); }

void ByteWriter::String(std::string_view s) {
  U32(static_cast<uint32_t>(s.size()));
  out_.append(s);
}

const char* ByteReader::Take(size_t n) {
  if (failed_ || n > bytes_.size() - pos_) {
    failed_ = true;
    return nullptr;
  }
  const char* p = bytes_.data() + pos_;
  pos_ += n;
  return p;
}

uint8_t ByteReader::U8() {
  const char* p = Take(1);
  return p == nullptr ? 0 : static_cast<uint8_t>(*p);
}

uint32_t ByteReader::U32() {
  const char* p = Take(4);
  return p == nullptr ? 0 : LoadLE32(p);
}

uint64_t ByteReader::U64() {
  const char* p = Take(8);
  return p == nullptr ? 0 : LoadLE64(p);
}

double ByteReader::F64() { return std::bit_cast<double>(U64()); }

bool ByteReader::Bool() {
  const uint8_t v = U8();
  if (v > 1) Fail();
  return v == 1;
}

std::string_view ByteReader::StringView() { return Bytes(U32()); }

std::string_view ByteReader::Bytes(size_t n) {
  const char* p = Take(n);
  return p == nullptr ? std::string_view() : std::string_view(p, n);
}

uint32_t ByteReader::Count(size_t min_item_bytes) {
  const uint32_t n = U32();
  if (failed_ || (min_item_bytes > 0 && n > remaining() / min_item_bytes)) {
    failed_ = true;
    return 0;
  }
  return n;
}

// ---- entry points ---------------------------------------------------------------------------

void EncodeTo(ByteWriter& w, const LoadedJobSpec& v) {
  PutParsed(w, v.parsed);
  Put(w, v.name);
  w.Bool(v.name_is_explicit);
  Put(w, v.name_pos);
  Put(w, v.pinned_id);
  Put(w, v.pinned_id_pos);
  Put(w, v.root_uses.get().shared_root);
  Put(w, v.root_uses.get().run_dirs);
  Put(w, v.invalid_after.get().after);
  Put(w, v.invalid_after.get().after_pos);
}

void DecodeFrom(ByteReader& r, LoadedJobSpec& out) {
  GetParsed(r, out.parsed);
  Get(r, out.name);
  out.name_is_explicit = r.Bool();
  Get(r, out.name_pos);
  Get(r, out.pinned_id);
  Get(r, out.pinned_id_pos);
  SharedRootUses uses;
  Get(r, uses.shared_root, kMinPos);
  Get(r, uses.run_dirs, kMinPos);
  out.root_uses.set(std::move(uses));  // most specs keep no box
  core::PipelineFields after;
  Get(r, after.after, kMinString);
  Get(r, after.after_pos, kMinPos);
  if (after.after.size() != after.after_pos.size()) r.Fail();
  out.invalid_after.set(std::move(after));
}

void EncodeTo(ByteWriter& w, const Parsed<core::RayConfig>& v) { PutParsed(w, v); }
void DecodeFrom(ByteReader& r, Parsed<core::RayConfig>& out) { GetParsed(r, out); }

void EncodeTo(ByteWriter& w, const core::StatusRecord& v) {
  PutRecordHead(w, v);
  Put(w, v.error_type);
  Put(w, v.job_id);
  Put(w, v.start_time_ms);
  Put(w, v.end_time_ms);
  Put(w, v.driver_exit_code);
  w.String(v.dashboard_url);
  w.String(v.run_dir);
  Put(w, v.errors);
  Put(w, v.attempts);
  w.U32(static_cast<uint32_t>(v.skipped_slots.size()));
  for (const core::SkippedSlot& s : v.skipped_slots) {
    w.I64(s.slot_ms);
    w.String(s.reason);
  }
}

void DecodeFrom(ByteReader& r, core::StatusRecord& out) {
  GetRecordHead(r, out);
  Get(r, out.error_type);
  Get(r, out.job_id);
  Get(r, out.start_time_ms);
  Get(r, out.end_time_ms);
  Get(r, out.driver_exit_code);
  out.dashboard_url = r.String();
  out.run_dir = r.String();
  Get(r, out.errors, kMinString);
  // An attempt is at least its fixed-width fields and seven empty strings.
  Get(r, out.attempts, 4 + 7 * kMinString + 4 + 4);
  const uint32_t skipped = r.Count(8 + kMinString);
  out.skipped_slots.clear();
  for (uint32_t i = 0; i < skipped && r.ok(); ++i) {
    core::SkippedSlot& s = out.skipped_slots.emplace_back();
    s.slot_ms = r.I64();
    s.reason = r.String();
  }
}

std::string EncodeLoadedJobSpec(const LoadedJobSpec& v) { return EncodeWhole(v); }
std::string EncodeParsedRayConfig(const Parsed<core::RayConfig>& v) { return EncodeWhole(v); }
std::string EncodeStatusRecord(const core::StatusRecord& v) { return EncodeWhole(v); }

core::Result<LoadedJobSpec> DecodeLoadedJobSpec(std::string_view bytes) {
  return DecodeWhole<LoadedJobSpec>(bytes, "JobSpec");
}

core::Result<Parsed<core::RayConfig>> DecodeParsedRayConfig(std::string_view bytes) {
  return DecodeWhole<Parsed<core::RayConfig>>(bytes, "cluster file");
}

core::Result<core::StatusRecord> DecodeStatusRecord(std::string_view bytes) {
  return DecodeWhole<core::StatusRecord>(bytes, "status record");
}

Hasher64::Hasher64() : lanes_{kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1} {}

void Hasher64::Stripe(const char* p) {
  for (size_t i = 0; i < lanes_.size(); ++i) lanes_[i] = Round(lanes_[i], LoadLE64(p + 8 * i));
}

void Hasher64::Update(std::string_view bytes) {
  total_ += bytes.size();
  if (pending_size_ > 0) {
    const size_t take = std::min(pending_.size() - pending_size_, bytes.size());
    std::memcpy(pending_.data() + pending_size_, bytes.data(), take);
    pending_size_ += take;
    bytes.remove_prefix(take);
    if (pending_size_ < pending_.size()) return;
    Stripe(pending_.data());
    pending_size_ = 0;
  }
  for (; bytes.size() >= pending_.size(); bytes.remove_prefix(pending_.size())) {
    Stripe(bytes.data());
  }
  std::memcpy(pending_.data(), bytes.data(), bytes.size());
  pending_size_ = bytes.size();
}

uint64_t Hasher64::Final() const {
  uint64_t h = kPrime5;
  if (total_ >= pending_.size()) {
    h = std::rotl(lanes_[0], 1) + std::rotl(lanes_[1], 7) + std::rotl(lanes_[2], 12) +
        std::rotl(lanes_[3], 18);
    for (uint64_t v : lanes_) h = MergeRound(h, v);
  }
  h += total_;
  const char* p = pending_.data();
  const char* const end = p + pending_size_;
  for (; end - p >= 8; p += 8) h = std::rotl(h ^ Round(0, LoadLE64(p)), 27) * kPrime1 + kPrime4;
  if (end - p >= 4) {
    h = std::rotl(h ^ (static_cast<uint64_t>(LoadLE32(p)) * kPrime1), 23) * kPrime2 + kPrime3;
    p += 4;
  }
  for (; p < end; ++p) h = std::rotl(h ^ (static_cast<uint8_t>(*p) * kPrime5), 11) * kPrime1;
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

uint64_t Hash64(std::string_view bytes) {
  Hasher64 hasher;
  hasher.Update(bytes);
  return hasher.Final();
}

}  // namespace rg::spec
