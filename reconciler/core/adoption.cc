#include "reconciler/core/adoption.h"

#include <vector>

#include "reconciler/core/render.h"

namespace rg::core {

bool SameJson(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.is_object() && b.is_object()) {
    const Value::Object& x = a.as_object();
    const Value::Object& y = b.as_object();
    if (x.size() != y.size()) return false;
    for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
      if (i->first != j->first || !SameJson(i->second, j->second)) return false;
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    const Value::Array& x = a.as_array();
    const Value::Array& y = b.as_array();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!SameJson(x[i], y[i])) return false;
    }
    return true;
  }
  return a == b;
}

namespace {

constexpr size_t kMaxNamedKeys = 4;

// A secret's placeholder ("<secret:REFERENCE>", core::SecretPlaceholder): what a render without
// values holds where the run was sent the value, which may have been rotated since.
bool IsSecretPlaceholder(const Value& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.as_string();
  return s.starts_with("<secret:") && s.ends_with(">");
}

// SameJson, where a secret's placeholder in `ours` stands for any string in `theirs`.
bool SameRendered(const Value& ours, const Value& theirs) {
  if (IsSecretPlaceholder(ours)) return theirs.is_string();
  if (ours.is_object() && theirs.is_object()) {
    const Value::Object& x = ours.as_object();
    const Value::Object& y = theirs.as_object();
    if (x.size() != y.size()) return false;
    for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
      if (i->first != j->first || !SameRendered(i->second, j->second)) return false;
    }
    return true;
  }
  return SameJson(ours, theirs);
}

// The keys of our render (`ours`, an object) whose values differ in `theirs`, as dotted paths
// one object deep ("env_vars.HF_TOKEN"), and how many keys only `theirs` has.
void DifferingKeys(const Value& ours, const Value& theirs, std::vector<std::string>& names,
                   size_t& extra) {
  const Value::Object empty;
  const Value::Object& mine = ours.is_object() ? ours.as_object() : empty;
  const Value::Object& other = theirs.is_object() ? theirs.as_object() : empty;
  for (const auto& [key, value] : mine) {
    auto it = other.find(key);
    if (it != other.end() && SameRendered(value, it->second)) continue;
    if (it != other.end() && value.is_object() && it->second.is_object()) {
      std::vector<std::string> inner;
      size_t inner_extra = 0;
      DifferingKeys(value, it->second, inner, inner_extra);
      for (const std::string& name : inner) {
        names.push_back(std::string(key).append(".").append(name));
      }
      if (inner.empty() || inner_extra > 0) names.push_back(key);
      continue;
    }
    names.push_back(key);
  }
  for (const auto& [key, value] : other) {
    if (!mine.contains(key)) ++extra;
  }
}

std::string DescribeRuntimeEnvDifference(const Value& ours, const Value& theirs) {
  std::vector<std::string> names;
  size_t extra = 0;
  if (ours.is_object() && theirs.is_object()) {
    DifferingKeys(ours, theirs, names, extra);
  }
  std::string out = "its runtime_env differs";
  if (names.empty() && extra == 0) return out;
  out += " (";
  std::string sep;
  for (size_t i = 0; i < names.size() && i < kMaxNamedKeys; ++i) {
    out += sep + names[i];
    sep = ", ";
  }
  if (names.size() > kMaxNamedKeys) {
    out += sep + std::to_string(names.size() - kMaxNamedKeys) + " more";
    sep = ", ";
  }
  if (extra > 0) {
    out += sep + std::to_string(extra) + (extra == 1 ? " key" : " keys") + " ray-gitops never sets";
  }
  return out + ")";
}

const Value& Field(const Value& body, std::string_view key) {
  static const Value kNull;
  const Value* v = body.Find(key);
  return v != nullptr ? *v : kNull;
}

}  // namespace

std::string RenderMismatch(const RayJob& job, const Value& body) {
  std::vector<std::string> what;
  const Value& id = Field(body, "submission_id");
  if (!id.is_string() || id.as_string() != job.submission_id) {
    what.push_back(
        "its submission id is not the one ray-gitops renders for the attempt its "
        "labels claim (" +
        (id.is_string() ? id.as_string() : std::string("none")) + ")");
  }
  const Value& entrypoint = Field(body, "entrypoint");
  if (!entrypoint.is_string() || entrypoint.as_string() != job.entrypoint) {
    what.emplace_back("its entrypoint differs");
  }
  // Ray drops a null runtime_env before it stores the job, and echoes null for none.
  const Value& runtime_env = Field(body, "runtime_env");
  if (!SameRendered(runtime_env, job.runtime_env.get())) {
    what.push_back(DescribeRuntimeEnvDifference(runtime_env, job.runtime_env.get()));
  }
  const Value& metadata = Field(body, "metadata");
  const Value& tree = Field(metadata, kMetaCodeTree);
  const std::string ours = tree.is_string() ? tree.as_string() : std::string();
  if (job.LabelView(kMetaCodeTree) != ours) {
    what.push_back("its " + std::string(kMetaCodeTree) + " label is not the spec's code tree");
  }
  std::string out;
  for (const std::string& w : what) {
    if (!out.empty()) out += "; ";
    out += w;
  }
  return out;
}

}  // namespace rg::core
