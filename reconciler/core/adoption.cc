#include "reconciler/core/adoption.h"

#include <string>
#include <utility>
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

// The keys of our render (`ours`, an object) whose values differ in `theirs`, as dotted paths
// one object deep ("env_vars.HF_TOKEN"), and how many keys only `theirs` has.
void DifferingKeys(const Value& ours, const Value& theirs, std::vector<std::string>& names,
                   size_t& extra) {
  const Value::Object empty;
  const Value::Object& mine = ours.is_object() ? ours.as_object() : empty;
  const Value::Object& other = theirs.is_object() ? theirs.as_object() : empty;
  for (const auto& [key, value] : mine) {
    auto it = other.find(key);
    if (it != other.end() && SameJson(value, it->second)) continue;
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

// The env_vars of a runtime_env, or null.
Value::Object* EnvVarsOf(Value& runtime_env) {
  if (!runtime_env.is_object()) return nullptr;
  auto it = runtime_env.as_object().find("env_vars");
  if (it == runtime_env.as_object().end() || !it->second.is_object()) return nullptr;
  return &it->second.as_object();
}

// Drops from both env_vars each secret name that both hold: its value is the secrets
// directory's (or the node's), which may change without changing the run.
void DropSecretValues(Value& ours, Value& theirs, const StringMap& secrets) {
  Value::Object* mine = EnvVarsOf(ours);
  Value::Object* other = EnvVarsOf(theirs);
  if (mine == nullptr || other == nullptr) return;
  for (const auto& [name, reference] : secrets) {
    auto in_mine = mine->find(name);
    auto in_other = other->find(name);
    if (in_mine == mine->end() || in_other == other->end()) continue;
    mine->erase(in_mine);
    other->erase(in_other);
  }
}

// What differs between the render's runtime_env and the job's; empty when they are the same.
std::string RuntimeEnvMismatch(const Value& ours, const Value& theirs, const StringMap& secrets) {
  if (secrets.empty()) {
    return SameJson(ours, theirs) ? std::string() : DescribeRuntimeEnvDifference(ours, theirs);
  }
  Value mine = ours;
  Value other = theirs;
  DropSecretValues(mine, other, secrets);
  return SameJson(mine, other) ? std::string() : DescribeRuntimeEnvDifference(mine, other);
}

}  // namespace

std::string RenderMismatch(const RayJob& job, const Value& body, const StringMap& secrets) {
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
  if (std::string differs =
          RuntimeEnvMismatch(Field(body, "runtime_env"), job.runtime_env.get(), secrets);
      !differs.empty()) {
    what.push_back(std::move(differs));
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
