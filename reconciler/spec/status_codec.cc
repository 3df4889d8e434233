#include "reconciler/spec/status_codec.h"

#include <limits>
#include <utility>
#include <vector>

#include "reconciler/core/status_fields.h"
#include "reconciler/core/time_format.h"
#include "reconciler/core/value.h"
#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/yaml_document.h"

namespace rg::spec {
namespace {

using core::Value;

// "key: value" lines. Times are always double-quoted: YAML 1.1 readers (PyYAML among them)
// would otherwise turn them into timestamps, and the schema says they are strings.
// `first_prefix` starts the first line, `indent` every later one (for items of a list).
void AppendField(std::string& out, std::string_view first_prefix, std::string_view indent,
                 const std::string& key, const Value& value, bool is_time = false) {
  std::string text;
  if (is_time && value.is_string()) {
    text = key + ": \"" + value.as_string() + "\"\n";
  } else {
    Value::Object one;
    one.emplace(key, value);
    text = ToYaml(Value(std::move(one)));
  }
  size_t start = 0;
  bool first = true;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    out += first ? first_prefix : indent;
    out.append(text, start, end - start + 1);
    first = false;
    start = end + 1;
  }
}

void AppendFields(std::string& out, std::string_view first_prefix, std::string_view indent,
                  const std::vector<core::StatusField>& fields) {
  bool first = true;
  for (const core::StatusField& f : fields) {
    AppendField(out, first ? first_prefix : indent, indent, std::string(f.key), f.value, f.is_time);
    first = false;
  }
}

// Reads fields of one mapping, remembering the first problem; later reads become no-ops.
class StatusFieldReader {
 public:
  StatusFieldReader(const Value::Object& object, std::string where)
      : object_(object), where_(std::move(where)) {}

  const std::optional<std::string>& problem() const { return problem_; }

  // Absent and null both leave `out` untouched.
  void String(std::string_view key, std::string& out) {
    if (const Value* v = Get(key)) {
      if (v->is_string()) {
        out = v->as_string();
      } else {
        Fail(key, "a string");
      }
    }
  }
  void OptionalString(std::string_view key, std::optional<std::string>& out) {
    std::string s;
    if (Get(key) != nullptr) {
      String(key, s);
      if (!problem_) out = std::move(s);
    }
  }
  template <typename Int>
  void Integer(std::string_view key, std::optional<Int>& out) {
    if (const Value* v = Get(key)) {
      if (v->is_int() && v->as_int() >= std::numeric_limits<Int>::min() &&
          v->as_int() <= std::numeric_limits<Int>::max()) {
        out = static_cast<Int>(v->as_int());
      } else {
        Fail(key, "an integer");
      }
    }
  }
  void Time(std::string_view key, std::optional<int64_t>& out) {
    if (const Value* v = Get(key)) {
      std::optional<int64_t> ms;
      if (v->is_string()) ms = core::ParseRfc3339Millis(v->as_string());
      if (ms) {
        out = ms;
      } else {
        Fail(key, "an RFC 3339 UTC time");
      }
    }
  }
  void Status(std::string_view key, core::RayJobStatus& out) {
    std::string s;
    String(key, s);
    if (!s.empty()) out = core::ParseRayJobStatus(s);
  }
  void PhaseField(std::string_view key, core::Phase& out, bool required) {
    std::string s;
    String(key, s);
    if (problem_) return;
    if (s.empty()) {
      if (required) Fail(key, "a phase");
      return;
    }
    if (auto p = core::ParsePhase(s)) {
      out = *p;
    } else {
      Fail(key, "a phase");
    }
  }
  void Fail(std::string_view key, std::string_view expected) {
    if (!problem_) {
      problem_ = where_ + std::string(key) + " must be " + std::string(expected);
    }
  }

 private:
  // The value of `key` unless absent or null (or a problem was already found).
  const Value* Get(std::string_view key) const {
    if (problem_) return nullptr;
    auto it = object_.find(key);
    if (it == object_.end() || it->second.is_null()) return nullptr;
    return &it->second;
  }

  const Value::Object& object_;
  std::string where_;
  std::optional<std::string> problem_;
};

}  // namespace

std::string StatusFilePath(std::string_view name) {
  return std::string(kStatusDir) + "/" + std::string(name) + ".yaml";
}

std::string EncodeStatusYaml(const core::StatusRecord& r) {
  // The schema's order, for people reading the file.
  std::string out;
  AppendFields(out, "", "", core::RecordFields(r));
  if (r.attempts.empty()) {
    out += "attempts: []\n";
  } else {
    out += "attempts:\n";
    for (const auto& a : r.attempts) AppendFields(out, "  - ", "    ", core::AttemptFields(a));
  }
  // Only a scheduled job has any: other files stay as they were.
  if (!r.skipped_slots.empty()) {
    out += "skipped_slots:\n";
    for (const auto& s : r.skipped_slots) {
      AppendFields(out, "  - ", "    ", core::SkippedSlotFields(s));
    }
  }
  return out;
}

namespace {

// The document of a status file: a mapping, or the first problem met reading it.
core::Result<Value> StatusDocument(std::string_view text, const std::string& path) {
  YamlParse parse = ParseYamlDocument(text, path);
  if (!parse.root) {
    return core::Error::InvalidInput(parse.diagnostics.empty()
                                         ? path + ": not a YAML document"
                                         : parse.diagnostics.front().ToString());
  }
  if (!parse.diagnostics.empty()) {
    return core::Error::InvalidInput(parse.diagnostics.front().ToString());
  }
  Value root = ToValue(*parse.root);
  if (!root.is_object()) {
    return core::Error::InvalidInput(path + ": a status file must be a mapping");
  }
  return root;
}

// The record's own fields, everything but `errors` and `attempts`.
core::Status ReadRecordFields(const Value& root, const std::string& path, core::StatusRecord& r) {
  StatusFieldReader fields(root.as_object(), path + ": ");
  fields.String("name", r.name);
  if (!fields.problem() && r.name.empty()) fields.Fail("name", "a non-empty string");
  fields.String("instance", r.instance);
  fields.String("ray_cluster", r.ray_cluster);
  fields.String("spec_path", r.spec_path);
  fields.String("spec_hash", r.spec_hash);
  fields.String("spec_commit", r.spec_commit);
  if (auto code = root.as_object().find("code");
      code != root.as_object().end() && !code->second.is_null()) {
    if (!code->second.is_object()) {
      fields.Fail("code", "a mapping of folder, tree and commit");
    } else {
      StatusFieldReader code_fields(code->second.as_object(), path + ": code.");
      core::RunCode run_code;
      code_fields.String("folder", run_code.folder);
      code_fields.String("tree", run_code.tree);
      code_fields.String("commit", run_code.commit);
      if (code_fields.problem()) return core::Error::InvalidInput(*code_fields.problem());
      r.code.set(std::move(run_code));
    }
  }
  fields.PhaseField("phase", r.phase, /*required=*/true);
  std::string on_remove;
  fields.String("on_remove", on_remove);
  if (on_remove == "keep") {
    r.on_remove = core::OnRemove::kKeep;
  } else if (!on_remove.empty() && on_remove != "stop") {
    fields.Fail("on_remove", "stop or keep");
  }
  fields.String("submission_id", r.submission_id);
  fields.Integer("attempt", r.attempt);
  fields.Status("status", r.status);
  fields.String("message", r.message);
  fields.OptionalString("error_type", r.error_type);
  fields.OptionalString("job_id", r.job_id);
  fields.Time("start_time", r.start_time_ms);
  fields.Time("end_time", r.end_time_ms);
  fields.Integer("driver_exit_code", r.driver_exit_code);
  fields.String("dashboard_url", r.dashboard_url);
  fields.String("run_dir", r.run_dir);
  if (fields.problem()) return core::Error::InvalidInput(*fields.problem());
  return core::OkStatus();
}

core::Status ReadErrors(const Value& root, const std::string& path, core::StatusRecord& r) {
  const Value* errors = root.Find("errors");
  if (errors == nullptr || errors->is_null()) return core::OkStatus();
  if (!errors->is_array()) return core::Error::InvalidInput(path + ": errors must be a list");
  for (const Value& e : errors->as_array()) {
    if (!e.is_string()) {
      return core::Error::InvalidInput(path + ": errors must be a list of strings");
    }
    r.errors.push_back(e.as_string());
  }
  return core::OkStatus();
}

core::Result<core::AttemptRecord> ReadAttempt(const Value& item, const std::string& where) {
  if (!item.is_object()) return core::Error::InvalidInput(where + " must be a mapping");
  core::AttemptRecord a;
  StatusFieldReader af(item.as_object(), where + ".");
  af.String("submission_id", a.submission_id);
  std::optional<int> number;
  af.Integer("attempt", number);
  a.attempt = number.value_or(0);
  af.String("spec_hash", a.spec_hash);
  af.Status("status", a.status);
  af.PhaseField("phase", a.phase, /*required=*/false);
  af.Time("start_time", a.start_time_ms);
  af.Time("end_time", a.end_time_ms);
  af.String("message", a.message);
  std::string stop_reason;
  af.String("stop_reason", stop_reason);
  if (!stop_reason.empty()) {
    a.stop_reason = core::ParseStopReason(stop_reason).value_or(core::StopReason::kUnknown);
    if (a.stop_reason == core::StopReason::kUnknown) a.unknown_stop_reason = stop_reason;
  }
  af.Time("stop_sent_at", a.stop_sent_ms);
  af.String("commit", a.commit);
  std::string failure_class;
  af.String("failure_class", failure_class);
  // A class this version does not know (a newer one wrote it) counts as the run's own.
  if (!failure_class.empty()) {
    a.failure_class = core::ParseFailureClass(failure_class).value_or(core::FailureClass::kOwn);
  }
  core::AttemptEnding ending;
  af.String("error_type", ending.error_type);
  af.String("stop_commit", ending.stop_commit);
  af.Time("lost_at", ending.lost_ms);
  a.ending.set(std::move(ending));
  if (af.problem()) return core::Error::InvalidInput(*af.problem());
  return a;
}

core::Status ReadAttempts(const Value& root, const std::string& path, core::StatusRecord& r) {
  const Value* attempts = root.Find("attempts");
  if (attempts == nullptr || attempts->is_null()) return core::OkStatus();
  if (!attempts->is_array()) return core::Error::InvalidInput(path + ": attempts must be a list");
  for (size_t i = 0; i < attempts->as_array().size(); ++i) {
    core::Result<core::AttemptRecord> a =
        ReadAttempt(attempts->as_array()[i], path + ": attempts[" + std::to_string(i) + "]");
    if (!a.ok()) return a.error();
    r.attempts.push_back(std::move(*a));
  }
  return core::OkStatus();
}

// A scheduled job's slots that got no run; absent in older files and other jobs'.
core::Status ReadSkippedSlots(const Value& root, const std::string& path, core::StatusRecord& r) {
  const Value* skipped = root.Find("skipped_slots");
  if (skipped == nullptr || skipped->is_null()) return core::OkStatus();
  if (!skipped->is_array()) {
    return core::Error::InvalidInput(path + ": skipped_slots must be a list");
  }
  for (size_t i = 0; i < skipped->as_array().size(); ++i) {
    const Value& item = skipped->as_array()[i];
    const std::string where = path + ": skipped_slots[" + std::to_string(i) + "]";
    if (!item.is_object()) return core::Error::InvalidInput(where + " must be a mapping");
    StatusFieldReader fields(item.as_object(), where + ".");
    std::optional<int64_t> slot_ms;
    core::SkippedSlot s;
    fields.Time("slot", slot_ms);
    fields.String("reason", s.reason);
    if (fields.problem()) return core::Error::InvalidInput(*fields.problem());
    if (!slot_ms) return core::Error::InvalidInput(where + ".slot is required");
    s.slot_ms = *slot_ms;
    r.skipped_slots.push_back(std::move(s));
  }
  return core::OkStatus();
}

}  // namespace

core::Result<core::StatusRecord> DecodeStatusYaml(std::string_view text, const std::string& path) {
  core::Result<Value> root = StatusDocument(text, path);
  if (!root.ok()) return root.error();
  core::StatusRecord r;
  for (auto read : {ReadRecordFields, ReadErrors, ReadAttempts, ReadSkippedSlots}) {
    if (core::Status s = read(*root, path, r); !s.ok()) return s.error();
  }
  return r;
}

}  // namespace rg::spec
