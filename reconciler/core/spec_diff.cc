#include "reconciler/core/spec_diff.h"

#include <algorithm>
#include <cstddef>

namespace rg::core {
namespace {

std::string Join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// The longest common subsequence table of a and b, for a walk from the front:
// lcs[i][j] = LCS length of a[i..] and b[j..].
template <typename T>
std::vector<std::vector<int>> LcsTable(const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;) {
    for (size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  return lcs;
}

// The edit script of a -> b: ' ' kept, '-' only in a, '+' only in b, with the index of the
// element in a ('-', ' ') or b ('+').
struct Edit {
  char op;
  size_t index;
};

template <typename T>
std::vector<Edit> EditScript(const std::vector<T>& a, const std::vector<T>& b) {
  const std::vector<std::vector<int>> lcs = LcsTable(a, b);
  std::vector<Edit> out;
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      out.push_back({' ', i});
      ++i;
      ++j;
    } else if (j == b.size() || (i < a.size() && lcs[i + 1][j] >= lcs[i][j + 1])) {
      out.push_back({'-', i++});
    } else {
      out.push_back({'+', j++});
    }
  }
  return out;
}

void DiffInto(const std::string& path, const Value& before, const Value& after,
              std::vector<FieldChange>& out);

void DiffObjects(const std::string& path, const Value::Object& before, const Value::Object& after,
                 std::vector<FieldChange>& out) {
  auto b = before.begin();
  auto a = after.begin();
  while (b != before.end() || a != after.end()) {
    if (a == after.end() || (b != before.end() && b->first < a->first)) {
      out.push_back({Join(path, b->first), ShowValue(b->second), std::nullopt, false});
      ++b;
    } else if (b == before.end() || a->first < b->first) {
      out.push_back({Join(path, a->first), std::nullopt, ShowValue(a->second), false});
      ++a;
    } else {
      DiffInto(Join(path, a->first), b->second, a->second, out);
      ++a;
      ++b;
    }
  }
}

void DiffArrays(const std::string& path, const Value::Array& before, const Value::Array& after,
                std::vector<FieldChange>& out) {
  for (const Edit& e : EditScript(before, after)) {
    if (e.op == '-') out.push_back({path, ShowValue(before[e.index]), std::nullopt, true});
    if (e.op == '+') out.push_back({path, std::nullopt, ShowValue(after[e.index]), true});
  }
}

void DiffInto(const std::string& path, const Value& before, const Value& after,
              std::vector<FieldChange>& out) {
  if (before == after) return;
  if (before.is_object() && after.is_object()) {
    DiffObjects(path, before.as_object(), after.as_object(), out);
  } else if (before.is_array() && after.is_array()) {
    DiffArrays(path, before.as_array(), after.as_array(), out);
  } else {
    out.push_back({path, ShowValue(before), ShowValue(after), false});
  }
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Appends every leaf of `value` under `path` as "path: value".
void LeafLines(const std::string& path, const Value& value, std::vector<std::string>& out) {
  if (value.is_object() && !value.as_object().empty()) {
    for (const auto& [key, child] : value.as_object()) LeafLines(Join(path, key), child, out);
    return;
  }
  out.push_back(path + ": " + ShowValue(value));
}

}  // namespace

std::string ShowValue(const Value& value) {
  if (value.is_string()) return value.as_string().empty() ? "\"\"" : value.as_string();
  return ToCanonicalJson(value);
}

std::string FormatFieldChange(const FieldChange& change) {
  if (change.item) {
    return change.field + ": " + (change.after ? "+ " + *change.after : "- " + *change.before);
  }
  return change.field + ": " + change.before.value_or("(unset)") + " -> " +
         change.after.value_or("(unset)");
}

std::vector<FieldChange> DiffFields(const Value& before, const Value& after) {
  std::vector<FieldChange> out;
  DiffInto("", before, after, out);
  return out;
}

std::vector<std::string> SplitShellWords(std::string_view command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote == 0 && IsBlank(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    word += c;
    // A backslash escapes the next character outside quotes and inside double quotes.
    if (quote != '\'' && c == '\\' && i + 1 < command.size()) {
      word += command[++i];
    } else if (quote == 0 && (c == '\'' || c == '"')) {
      quote = c;
    } else if (c == quote) {
      quote = 0;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::vector<std::string> SubmissionLines(const Value& body) {
  std::vector<std::string> lines;
  if (const Value* entrypoint = body.Find("entrypoint");
      entrypoint != nullptr && entrypoint->is_string()) {
    lines = SplitShellWords(entrypoint->as_string());
  }
  if (!body.is_object()) return lines;
  for (const auto& [key, value] : body.as_object()) {
    if (key == "entrypoint" || key == "submission_id" || key == "metadata") continue;
    LeafLines(key, value, lines);
  }
  return lines;
}

std::vector<DiffLine> DiffLines(const std::vector<std::string>& before,
                                const std::vector<std::string>& after) {
  std::vector<DiffLine> out;
  for (const Edit& e : EditScript(before, after)) {
    out.push_back({e.op, e.op == '+' ? after[e.index] : before[e.index]});
  }
  return out;
}

bool HasChanges(const std::vector<DiffLine>& lines) {
  return std::ranges::any_of(lines, [](const DiffLine& l) { return l.op != ' '; });
}

std::vector<DiffLine> TrimToContext(const std::vector<DiffLine>& lines, int context) {
  std::vector<bool> keep(lines.size(), false);
  const auto reach = static_cast<ptrdiff_t>(std::max(context, 0));
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].op == ' ') continue;
    const ptrdiff_t from = std::max<ptrdiff_t>(0, static_cast<ptrdiff_t>(i) - reach);
    const ptrdiff_t to = std::min<ptrdiff_t>(static_cast<ptrdiff_t>(lines.size()) - 1,
                                             static_cast<ptrdiff_t>(i) + reach);
    for (ptrdiff_t k = from; k <= to; ++k) keep[static_cast<size_t>(k)] = true;
  }
  std::vector<DiffLine> out;
  bool gap = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!keep[i]) {
      gap = true;
      continue;
    }
    if (gap && !out.empty()) out.push_back({' ', "..."});
    gap = false;
    out.push_back(lines[i]);
  }
  return out;
}

Value ClusterDocument(const RayConfig& cluster) {
  Value doc = Value::Object{};
  if (cluster.name) doc["name"] = *cluster.name;
  doc["address"] = cluster.address;
  if (cluster.shared_root) doc["shared_root"] = *cluster.shared_root;
  if (cluster.entrypoint_num_cpus) doc["entrypoint_num_cpus"] = *cluster.entrypoint_num_cpus;
  if (cluster.entrypoint_num_gpus) doc["entrypoint_num_gpus"] = *cluster.entrypoint_num_gpus;
  if (cluster.entrypoint_memory) doc["entrypoint_memory"] = *cluster.entrypoint_memory;
  if (cluster.entrypoint_resources) {
    Value resources = Value::Object{};
    for (const auto& [key, amount] : *cluster.entrypoint_resources) resources[key] = amount;
    doc["entrypoint_resources"] = std::move(resources);
  }
  if (cluster.runtime_env.is_object() && !cluster.runtime_env.as_object().empty()) {
    doc["runtime_env"] = cluster.runtime_env;
  }
  if (cluster.user_code_path) doc["user_code_path"] = *cluster.user_code_path;
  // Names and references only: values are never in the model.
  if (!cluster.secrets.empty()) {
    Value secrets = Value::Object{};
    for (const auto& [name, reference] : cluster.secrets) {
      secrets[std::string(name)] = std::string(reference);
    }
    doc["secrets"] = std::move(secrets);
  }
  if (cluster.secret_delivery != SecretDelivery::kEnv ||
      cluster.positions.contains("secret_delivery")) {
    doc["secret_delivery"] = std::string(SecretDeliveryName(cluster.secret_delivery));
  }
  if (cluster.allow_secrets_without_ray_auth ||
      cluster.positions.contains("allow_secrets_without_ray_auth")) {
    doc["allow_secrets_without_ray_auth"] = cluster.allow_secrets_without_ray_auth;
  }
  return doc;
}

}  // namespace rg::core
