// The parse cache's binary codec: every field of every encoded struct survives a round trip,
// and input that was not written by the encoder (cut short, garbled, hostile counts, deep
// nesting) is rejected without a crash.

#include "reconciler/spec/parse_cache_codec.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "reconciler/core/cron.h"
#include "reconciler/core/tzif.h"

namespace rg::spec {
namespace {

core::Value FullValue() {
  core::Value::Object object;
  object["null"] = nullptr;
  object["yes"] = true;
  object["no"] = false;
  object["int"] = int64_t{-1234567890123};
  object["double"] = 2.5e-300;
  object["negative zero"] = -0.0;
  object["string"] = "héllo\n\0x";
  object["array"] = core::Value::Array{1, "two", core::Value::Array{}, core::Value::Object{}};
  object["nested"] = core::Value::Object{{"a", core::Value::Object{{"b", 3.25}}}};
  return object;
}

core::JobSpec FullJobSpec() {
  core::JobSpec s;
  s.path = "jobs/ppo/qwen.yaml";
  s.workload = core::Workload::kGrpo;
  s.name = "ppo-qwen";
  s.submission_id = "pinned-id";
  s.mutable_trainer().code_path = "${shared_root}/code";
  s.mutable_trainer().model_id = "Qwen/Qwen2.5-0.5B";
  s.mutable_trainer().train_file = "train.parquet";
  s.mutable_trainer().val_file = "val.parquet";
  s.mutable_trainer().nnodes = 2;
  s.mutable_trainer().n_gpus_per_node = 8;
  s.mutable_trainer().total_training_steps = 100;
  s.mutable_trainer().save_freq = 10;
  s.mutable_trainer().test_freq = 5;
  s.mutable_trainer().overrides = {"a=1", "b=2"};
  s.entrypoint = "python train.py";
  s.runtime_env = FullValue();
  s.env_vars = {{"A", "1"}, {"B", ""}};
  s.entrypoint_num_cpus = 1.5;
  s.entrypoint_num_gpus = 0.25;
  s.entrypoint_memory = int64_t{1} << 40;
  s.entrypoint_resources = core::ResourceMap{{"TPU", 4.0}, {"custom", 0.5}};
  s.retries = 3;
  s.infra_retries = 7;
  s.suspend = true;
  s.on_remove = core::OnRemove::kKeep;
  s.annotations = {{"owner", "ml-team"}};
  core::LifecycleFields& lifecycle = s.mutable_lifecycle();
  lifecycle.deadline_ms = 5'400'000;
  core::ScheduleFields& schedule = lifecycle.schedule.emplace();
  schedule.cron_text = "30 2 * * MON-FRI";
  schedule.cron = *core::ParseCron(schedule.cron_text);
  schedule.timezone = "Europe/Berlin";
  schedule.timezone_pos = {9, 11};
  schedule.concurrency = core::Concurrency::kReplace;
  schedule.starting_deadline_ms = 600'000;
  core::SecretFields& secrets = s.mutable_secret_fields();
  secrets.references = {{"HF_TOKEN", "hf-read"}, {"WANDB_API_KEY", "wandb-key"}};
  secrets.name_pos = {{"HF_TOKEN", {12, 3}}, {"WANDB_API_KEY", {13, 3}}};
  s.document = FullValue();
  s.spec_hash = "0123456789";
  s.legacy_spec_hashes = {"abcdefabcd", "9876543210"};
  s.positions = {{"name", {3, 7}}, {"workload", {1, 11}}};
  return s;
}

LoadedJobSpec FullLoadedJobSpec() {
  LoadedJobSpec l;
  l.parsed.value = FullJobSpec();
  l.parsed.diagnostics = {{"jobs/x.yaml", 4, 2, "unknown key \"nnode\""},
                          {"jobs/x.yaml", 0, 0, ""}};
  l.name = "ppo-qwen";
  l.name_is_explicit = true;
  l.name_pos = {2, 3};
  l.pinned_id = "pinned-id";
  l.pinned_id_pos = {5, 6};
  l.root_uses.mutable_get().shared_root = {{7, 8}, {9, 10}};
  l.invalid_after.set({{"sft", "prep"}, {{11, 12}, {11, 19}}});
  return l;
}

Parsed<core::RayConfig> FullRayConfig() {
  core::RayConfig c;
  c.path = "clusters/main.yaml";
  c.name = "main";
  c.address = "http://127.0.0.1:8265";
  c.shared_root = "/mnt/shared";
  c.entrypoint_num_cpus = 1.0;
  c.entrypoint_num_gpus = 2.0;
  c.entrypoint_memory = 1024;
  c.entrypoint_resources = core::ResourceMap{{"x", 1.0}};
  c.runtime_env = FullValue();
  c.user_code_path = "/code";
  c.secrets = {{"WANDB_API_KEY", "wandb-key"}};
  c.secret_delivery = core::SecretDelivery::kNode;
  c.allow_secrets_without_ray_auth = true;
  c.positions = {{"address", {2, 10}}, {"secrets.WANDB_API_KEY", {5, 3}}};
  Parsed<core::RayConfig> p;
  p.value = c;
  p.diagnostics = {{"cluster.yaml", 1, 1, "a warning kept with a value"}};
  return p;
}

core::AttemptRecord FullAttempt(int n) {
  core::AttemptRecord a;
  a.attempt = n;
  a.submission_id = "job-" + std::to_string(n);
  a.spec_hash = "0123456789";
  a.status = core::RayJobStatus::kFailed;
  a.phase = core::Phase::kStopping;
  a.start_time_ms = 1700000000000;
  a.end_time_ms = 1700000001000;
  a.message = "exit 1";
  a.stop_reason = core::StopReason::kUnknown;
  a.unknown_stop_reason = "evicted";
  a.stop_sent_ms = 1700000000500;
  a.commit = "c0ffee" + std::to_string(n);
  a.failure_class = core::FailureClass::kInfra;
  a.ending.set({"JOB_SUPERVISOR_ACTOR_DIED", "beef", 1700000002000});
  return a;
}

core::StatusRecord FullStatusRecord() {
  core::StatusRecord s;
  s.name = "ppo-qwen";
  s.instance = "team-a";
  s.ray_cluster = "main";
  s.spec_path = "jobs/ppo/qwen.yaml";
  s.spec_hash = "0123456789";
  s.spec_commit = "c0ffee";
  s.phase = core::Phase::kLost;
  s.on_remove = core::OnRemove::kKeep;
  s.submission_id = "job-1";
  s.attempt = 1;
  s.status = core::RayJobStatus::kRunning;
  s.message = "running";
  s.error_type = "JOB_SUPERVISOR_ACTOR_START_FAILURE";
  s.job_id = "02000000";
  s.start_time_ms = 1700000000000;
  s.end_time_ms = 1700000009000;
  s.driver_exit_code = -9;
  s.dashboard_url = "http://127.0.0.1:8265/#/jobs/job-1";
  s.run_dir = "/shared/jobs/job-0";
  s.errors = {"jobs/x.yaml:1:1: error: bad"};
  s.attempts = {FullAttempt(0), FullAttempt(1)};
  s.skipped_slots = {{1'795'917'600'000, "missed: not started within starting_deadline 1h"}};
  return s;
}

// Every proper prefix and the input with a byte added must fail to decode.
template <typename Decode>
void RequireCutsRejected(const std::string& bytes, Decode decode) {
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("cut at " << n << " of " << bytes.size());
    REQUIRE_FALSE(decode(bytes.substr(0, n)).ok());
  }
  REQUIRE_FALSE(decode(bytes + '\0').ok());
}

// Every byte inverted in turn: decoding must not crash, and what does decode must encode again
// without trouble (the sanitizer builds check the memory side).
template <typename Decode, typename Encode>
void RequireGarbledSurvived(const std::string& bytes, Decode decode, Encode encode) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string garbled = bytes;
    garbled[i] = static_cast<char>(~garbled[i]);
    auto decoded = decode(garbled);
    if (decoded.ok()) REQUIRE(decode(encode(*decoded)).ok());
  }
}

TEST_CASE("a LoadedJobSpec with every field set round-trips exactly") {
  const LoadedJobSpec full = FullLoadedJobSpec();
  const std::string bytes = EncodeLoadedJobSpec(full);
  auto decoded = DecodeLoadedJobSpec(bytes);
  REQUIRE(decoded.ok());
  REQUIRE(*decoded == full);
  REQUIRE(EncodeLoadedJobSpec(*decoded) == bytes);
  const core::Value* zero = decoded->parsed.value->document.Find("negative zero");
  REQUIRE(zero != nullptr);
  REQUIRE(std::signbit(zero->as_double()));
}

TEST_CASE("a schedule round-trips without its zone, which is looked up again by name") {
  LoadedJobSpec full = FullLoadedJobSpec();
  full.parsed.value->mutable_lifecycle().schedule->zone =
      std::make_shared<const core::TimeZone>(core::Utc());
  auto decoded = DecodeLoadedJobSpec(EncodeLoadedJobSpec(full));
  REQUIRE(decoded.ok());
  const std::optional<core::ScheduleFields>& schedule = decoded->parsed.value->lifecycle().schedule;
  REQUIRE(schedule.has_value());
  CHECK(schedule->zone == nullptr);
  CHECK(schedule->cron == *core::ParseCron("30 2 * * MON-FRI"));
  CHECK(schedule->timezone_pos == core::SourcePos{9, 11});
  CHECK(*decoded == full);  // equality leaves the zone out
}

TEST_CASE(
    "a custom job's spec decodes without a box for the trainer fields, a trainer's with one") {
  LoadedJobSpec custom = FullLoadedJobSpec();
  custom.parsed.value->workload = core::Workload::kCustom;
  custom.parsed.value->trainer_fields.set({});
  auto decoded = DecodeLoadedJobSpec(EncodeLoadedJobSpec(custom));
  REQUIRE(decoded.ok());
  REQUIRE(*decoded == custom);
  CHECK(decoded->parsed.value->trainer_fields.empty());  // what a pass holds 50,000 of

  LoadedJobSpec only_code = custom;
  only_code.parsed.value->mutable_trainer().code_path = "/code";
  decoded = DecodeLoadedJobSpec(EncodeLoadedJobSpec(only_code));
  REQUIRE(decoded.ok());
  CHECK(decoded->parsed.value->trainer().code_path == "/code");
  CHECK_FALSE(decoded->parsed.value->trainer_fields.empty());
}

TEST_CASE("a default LoadedJobSpec and an invalid one without a value round-trip") {
  LoadedJobSpec invalid;
  invalid.parsed.diagnostics = {{"jobs/a.yaml", 1, 2, "not a mapping"}};
  for (const LoadedJobSpec& v : {LoadedJobSpec{}, invalid}) {
    auto decoded = DecodeLoadedJobSpec(EncodeLoadedJobSpec(v));
    REQUIRE(decoded.ok());
    REQUIRE(*decoded == v);
  }
}

TEST_CASE("an invalid spec keeps its after through the cache, a valid one has it in its value") {
  const LoadedJobSpec invalid =
      LoadJobSpecForDesiredState("workload: custom\nafter: [prep, sft]\n", "jobs/a.yaml", "jobs");
  REQUIRE_FALSE(invalid.parsed.value);
  CHECK(invalid.invalid_after.get().after == std::vector<std::string>{"prep", "sft"});
  CHECK(invalid.invalid_after.get().after_pos == std::vector<core::SourcePos>{{2, 9}, {2, 15}});
  auto decoded = DecodeLoadedJobSpec(EncodeLoadedJobSpec(invalid));
  REQUIRE(decoded.ok());
  CHECK(*decoded == invalid);
  const LoadedJobSpec valid = LoadJobSpecForDesiredState(
      "workload: custom\nentrypoint: echo\nafter: [prep]\n", "jobs/a.yaml", "jobs");
  REQUIRE(valid.parsed.value);
  CHECK(valid.parsed.value->pipeline().after == std::vector<std::string>{"prep"});
  CHECK(valid.invalid_after.empty());
}

TEST_CASE("a spec that sets none of the rare fields keeps no box, parsed or decoded") {
  // What most of 50,000 specs leave empty stays unallocated: a box made for every spec was
  // 9 MB at that scale (docs/performance.md).
  const LoadedJobSpec plain = LoadJobSpecForDesiredState(
      "workload: custom\nentrypoint: echo ${shared_root}\n", "jobs/a.yaml", "jobs");
  REQUIRE(plain.parsed.value);
  CHECK(plain.parsed.value->extras.empty());
  CHECK(plain.parsed.value->trainer_fields.empty());
  CHECK(plain.root_uses.get().shared_root.size() == 1);
  auto decoded = DecodeLoadedJobSpec(EncodeLoadedJobSpec(plain));
  REQUIRE(decoded.ok());
  CHECK(decoded->parsed.value->extras.empty());
  CHECK(*decoded == plain);
  const LoadedJobSpec none =
      LoadJobSpecForDesiredState("workload: custom\nentrypoint: echo\n", "jobs/a.yaml", "jobs");
  CHECK(none.root_uses.empty());
  const LoadedJobSpec broken =
      LoadJobSpecForDesiredState("workload: custom\n", "jobs/a.yaml", "jobs");
  CHECK(broken.invalid_after.empty());
  // A spec with a deadline has its box, and keeps it through the cache.
  const LoadedJobSpec bounded = LoadJobSpecForDesiredState(
      "workload: custom\nentrypoint: echo\ndeadline: 5s\n", "jobs/a.yaml", "jobs");
  REQUIRE(bounded.parsed.value);
  CHECK(bounded.parsed.value->lifecycle().deadline_ms == 5000);
  auto kept = DecodeLoadedJobSpec(EncodeLoadedJobSpec(bounded));
  REQUIRE(kept.ok());
  CHECK(kept->parsed.value->lifecycle().deadline_ms == 5000);
}

TEST_CASE("a parsed cluster file with every field set round-trips exactly") {
  const Parsed<core::RayConfig> full = FullRayConfig();
  const std::string bytes = EncodeParsedRayConfig(full);
  auto decoded = DecodeParsedRayConfig(bytes);
  REQUIRE(decoded.ok());
  REQUIRE(*decoded == full);
  REQUIRE(EncodeParsedRayConfig(*decoded) == bytes);
}

TEST_CASE("a status record with every field set round-trips exactly") {
  const core::StatusRecord full = FullStatusRecord();
  const std::string bytes = EncodeStatusRecord(full);
  auto decoded = DecodeStatusRecord(bytes);
  REQUIRE(decoded.ok());
  REQUIRE(*decoded == full);
  REQUIRE(EncodeStatusRecord(*decoded) == bytes);
}

TEST_CASE("doubles keep their exact bits: NaN, infinities, negative zero, subnormals") {
  core::JobSpec spec;
  spec.document = core::Value::Array{
      std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity(), -0.0, std::numeric_limits<double>::denorm_min()};
  LoadedJobSpec loaded;
  loaded.parsed.value = spec;
  const std::string bytes = EncodeLoadedJobSpec(loaded);
  auto decoded = DecodeLoadedJobSpec(bytes);
  REQUIRE(decoded.ok());
  REQUIRE(EncodeLoadedJobSpec(*decoded) == bytes);
  REQUIRE(std::isnan(decoded->parsed.value->document.as_array()[0].as_double()));
}

TEST_CASE("every truncation of an encoded value is rejected") {
  RequireCutsRejected(EncodeLoadedJobSpec(FullLoadedJobSpec()),
                      [](std::string_view b) { return DecodeLoadedJobSpec(b); });
  RequireCutsRejected(EncodeParsedRayConfig(FullRayConfig()),
                      [](std::string_view b) { return DecodeParsedRayConfig(b); });
  RequireCutsRejected(EncodeStatusRecord(FullStatusRecord()),
                      [](std::string_view b) { return DecodeStatusRecord(b); });
}

TEST_CASE("every byte of an encoded value garbled in turn decodes safely or not at all") {
  RequireGarbledSurvived(
      EncodeLoadedJobSpec(FullLoadedJobSpec()),
      [](std::string_view b) { return DecodeLoadedJobSpec(b); },
      [](const LoadedJobSpec& v) { return EncodeLoadedJobSpec(v); });
  RequireGarbledSurvived(
      EncodeParsedRayConfig(FullRayConfig()),
      [](std::string_view b) { return DecodeParsedRayConfig(b); },
      [](const Parsed<core::RayConfig>& v) { return EncodeParsedRayConfig(v); });
  RequireGarbledSurvived(
      EncodeStatusRecord(FullStatusRecord()),
      [](std::string_view b) { return DecodeStatusRecord(b); },
      [](const core::StatusRecord& v) { return EncodeStatusRecord(v); });
}

TEST_CASE("a count larger than the bytes left is rejected before anything is allocated") {
  core::StatusRecord record = FullStatusRecord();
  record.errors.clear();
  record.attempts.clear();
  record.skipped_slots.clear();
  std::string bytes = EncodeStatusRecord(record);
  // The last 12 bytes are the three counts (errors, attempts, skipped slots), all 0: claim 4
  // billion errors.
  for (size_t i = bytes.size() - 12; i < bytes.size() - 8; ++i) bytes[i] = '\xff';
  REQUIRE_FALSE(DecodeStatusRecord(bytes).ok());
}

TEST_CASE("map keys out of order are rejected") {
  core::JobSpec spec;
  spec.env_vars = {{"A", "1"}, {"B", "2"}};
  LoadedJobSpec loaded;
  loaded.parsed.value = spec;
  std::string bytes = EncodeLoadedJobSpec(loaded);
  const size_t a = bytes.find(std::string("\x01\0\0\0A", 5));
  const size_t b = bytes.find(std::string("\x01\0\0\0B", 5));
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  std::swap(bytes[a + 4], bytes[b + 4]);
  REQUIRE_FALSE(DecodeLoadedJobSpec(bytes).ok());
}

TEST_CASE("values nested deeper than a YAML document can be are rejected without a crash") {
  core::Value deep = nullptr;
  for (int i = 0; i < 900; ++i) deep = core::Value::Array{deep};
  LoadedJobSpec loaded;
  loaded.parsed.value = core::JobSpec{};
  loaded.parsed.value->document = deep;
  REQUIRE(DecodeLoadedJobSpec(EncodeLoadedJobSpec(loaded)).ok());

  // A document a million arrays deep, spliced in where a marker string was encoded.
  loaded.parsed.value->document = "MARKER";
  std::string bytes = EncodeLoadedJobSpec(loaded);
  const std::string marker("\x05\x06\0\0\0MARKER", 11);
  const size_t at = bytes.find(marker);
  REQUIRE(at != std::string::npos);
  std::string nested;
  for (int i = 0; i < 1000000; ++i) nested += std::string("\x06\x01\0\0\0", 5);
  nested += '\0';
  bytes.replace(at, marker.size(), nested);
  REQUIRE_FALSE(DecodeLoadedJobSpec(bytes).ok());
}

TEST_CASE("Hash64 is XXH64 with seed 0") {
  REQUIRE(Hash64("") == 0xEF46DB3751D8E999ULL);
  REQUIRE(Hash64("abc") == 0x44BC2CF5AD770999ULL);
  REQUIRE(Hash64("Nobody inspects the spammish repetition") == 0xFBCEA83C8A378BF1ULL);
}

TEST_CASE("Hasher64 over pieces is Hash64 of the whole, wherever the pieces are cut") {
  std::string text;
  for (int i = 0; text.size() < 300; ++i) text += "entry " + std::to_string(i * 7919) + ";";
  for (size_t size : {size_t{0}, size_t{3}, size_t{31}, size_t{32}, size_t{33}, size_t{64},
                      size_t{100}, text.size()}) {
    const std::string_view whole = std::string_view(text).substr(0, size);
    for (size_t piece : {size_t{1}, size_t{5}, size_t{31}, size_t{32}, size_t{33}, size_t{97}}) {
      Hasher64 hasher;
      for (size_t at = 0; at < whole.size(); at += piece) hasher.Update(whole.substr(at, piece));
      INFO("size " << size << ", pieces of " << piece);
      CHECK(hasher.Final() == Hash64(whole));
    }
  }
  Hasher64 nothing;
  CHECK(nothing.Final() == Hash64(""));
}

}  // namespace
}  // namespace rg::spec
