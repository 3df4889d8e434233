#include "reconciler/core/status_fields.h"

#include <optional>
#include <string>
#include <utility>

#include "reconciler/core/time_format.h"

namespace rg::core {
Value TimeOrNull(const std::optional<int64_t>& ms) {
  return ms ? Value(FormatRfc3339Millis(*ms)) : Value();
}

Value StringOrNull(const std::string& s) { return s.empty() ? Value() : Value(s); }

namespace {

template <typename T>
Value OptionalOrNull(const std::optional<T>& v) {
  return v ? Value(*v) : Value();
}

StatusField Time(std::string_view key, const std::optional<int64_t>& ms) {
  return {key, TimeOrNull(ms), true};
}

Value StatusOrNull(RayJobStatus s) {
  return s == RayJobStatus::kUnknown ? Value() : Value(std::string(RayJobStatusName(s)));
}

Value Object(const std::vector<StatusField>& fields) {
  Value::Object out;
  for (const StatusField& f : fields) out.emplace(std::string(f.key), f.value);
  return out;
}

}  // namespace

std::vector<StatusField> RecordFields(const StatusRecord& r) {
  Value::Array errors;
  for (const auto& e : r.errors) errors.emplace_back(e);
  std::vector<StatusField> fields = {
      {"name", r.name},
      {"instance", StringOrNull(r.instance)},
      {"ray_cluster", StringOrNull(r.ray_cluster)},
      {"spec_path", r.spec_path},
      {"spec_hash", StringOrNull(r.spec_hash)},
      {"spec_commit", StringOrNull(r.spec_commit)},
      {"phase", std::string(PhaseName(r.phase))},
      {"on_remove", std::string(OnRemoveName(r.on_remove))},
      {"submission_id", StringOrNull(r.submission_id)},
      {"attempt", OptionalOrNull(r.attempt)},
      {"status", StatusOrNull(r.status)},
      {"message", StringOrNull(r.message)},
      {"error_type", OptionalOrNull(r.error_type)},
      {"job_id", OptionalOrNull(r.job_id)},
      Time("start_time", r.start_time_ms),
      Time("end_time", r.end_time_ms),
      {"driver_exit_code", OptionalOrNull(r.driver_exit_code)},
      {"dashboard_url", StringOrNull(r.dashboard_url)},
      {"run_dir", StringOrNull(r.run_dir)},
      {"errors", Value(std::move(errors))},
  };
  // Only a run of a spec with `code` has it (status files of other specs stay as they were).
  if (const RunCode& run_code = r.code.get(); !run_code.tree.empty()) {
    Value::Object code;
    code.emplace("folder", StringOrNull(run_code.folder));
    code.emplace("tree", run_code.tree);
    code.emplace("commit", StringOrNull(run_code.commit));
    fields.insert(fields.begin() + 6, {"code", Value(std::move(code))});
  }
  return fields;
}

std::vector<StatusField> AttemptFields(const AttemptRecord& a) {
  std::vector<StatusField> fields = {
      {"submission_id", a.submission_id},
      {"attempt", a.attempt},
      {"spec_hash", StringOrNull(a.spec_hash)},
      {"commit", StringOrNull(a.commit)},
      {"status", StatusOrNull(a.status)},
      {"phase", std::string(PhaseName(a.phase))},
      Time("start_time", a.start_time_ms),
      Time("end_time", a.end_time_ms),
      {"message", StringOrNull(a.message)},
      {"error_type", StringOrNull(a.ending.get().error_type)},
      {"failure_class", StringOrNull(std::string(FailureClassName(a.failure_class)))},
      {"stop_reason", StringOrNull(StopReasonText(a))},
  };
  if (a.stop_sent_ms) fields.push_back(Time("stop_sent_at", a.stop_sent_ms));
  if (!a.ending.get().stop_commit.empty()) {
    fields.push_back({"stop_commit", a.ending.get().stop_commit});
  }
  if (a.ending.get().lost_ms) fields.push_back(Time("lost_at", a.ending.get().lost_ms));
  return fields;
}

std::vector<StatusField> SkippedSlotFields(const SkippedSlot& slot) {
  return {{"slot", TimeOrNull(slot.slot_ms), true}, {"reason", StringOrNull(slot.reason)}};
}

Value StatusRecordValue(const StatusRecord& r) {
  Value out = Object(RecordFields(r));
  Value::Array attempts;
  for (const AttemptRecord& a : r.attempts) attempts.push_back(Object(AttemptFields(a)));
  out["attempts"] = Value(std::move(attempts));
  if (!r.skipped_slots.empty()) {
    Value::Array skipped;
    for (const SkippedSlot& s : r.skipped_slots) skipped.push_back(Object(SkippedSlotFields(s)));
    out["skipped_slots"] = Value(std::move(skipped));
  }
  return out;
}

}  // namespace rg::core
