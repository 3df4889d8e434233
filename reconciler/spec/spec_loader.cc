#include "reconciler/spec/spec_loader.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <utility>

#include "reconciler/core/identity.h"
#include "reconciler/spec/loaded_job_spec.h"
#include "reconciler/spec/yaml_document.h"

namespace rg::spec {
namespace {

using core::SourcePos;

constexpr std::array<std::string_view, 9> kClusterKeys = {
    "name",
    "address",
    "shared_root",
    "entrypoint_num_cpus",
    "entrypoint_num_gpus",
    "entrypoint_memory",
    "entrypoint_resources",
    "runtime_env",
    "user_code_path",
};

constexpr std::array<std::string_view, 24> kJobKeys = {
    "workload",
    "name",
    "submission_id",
    "code_path",
    "model_id",
    "train_file",
    "val_file",
    "nnodes",
    "n_gpus_per_node",
    "total_training_steps",
    "save_freq",
    "test_freq",
    "overrides",
    "entrypoint",
    "runtime_env",
    "env_vars",
    "entrypoint_num_cpus",
    "entrypoint_num_gpus",
    "entrypoint_memory",
    "entrypoint_resources",
    "retries",
    "suspend",
    "on_remove",
    "annotations",
};

// Fields that only shape the verl trainer command, which a custom entrypoint does not use.
constexpr std::array<std::string_view, 9> kTrainerOnlyKeys = {
    "model_id",  "train_file", "val_file",  "nnodes", "n_gpus_per_node", "total_training_steps",
    "save_freq", "test_freq",  "overrides",
};

constexpr std::string_view kSharedRootVariable = "${shared_root}";

template <size_t N>
bool Contains(const std::array<std::string_view, N>& keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

template <size_t N>
std::string UnknownKeyMessage(std::string_view key, const std::array<std::string_view, N>& known) {
  std::string message = "unknown key \"" + std::string(key) + "\"";
  std::string_view best;
  size_t best_distance = std::max<size_t>(2, key.size() / 3) + 1;
  for (std::string_view candidate : known) {
    const size_t distance = EditDistance(key, candidate);
    if (distance < best_distance) best = candidate, best_distance = distance;
  }
  if (!best.empty()) message += " (did you mean \"" + std::string(best) + "\"?)";
  return message;
}

bool IsEnvVarName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

// Reads typed fields out of the tree, reporting every problem instead of stopping at one.
class FieldReader {
 public:
  FieldReader(const std::string& path, core::Diagnostics* diagnostics)
      : path_(path), diagnostics_(diagnostics) {}

  void Error(SourcePos pos, std::string message) {
    diagnostics_->push_back({path_, pos.line, pos.column, std::move(message)});
  }

  void TypeError(std::string_view field, std::string_view requirement, const YamlNode& node) {
    Error(node.pos, std::string(field) + " must be " + std::string(requirement) + " (got " +
                        Describe(node) + ")");
  }

  std::optional<std::string> String(std::string_view field, const YamlNode& node) {
    if (!node.is_string() || node.scalar.as_string().empty()) {
      TypeError(field, "a non-empty string", node);
      return std::nullopt;
    }
    return node.scalar.as_string();
  }

  std::optional<int64_t> Integer(std::string_view field, const YamlNode& node, int64_t min,
                                 int64_t max, std::string_view requirement) {
    if (!node.is_scalar() || !node.scalar.is_int() || node.scalar.as_int() < min ||
        node.scalar.as_int() > max) {
      TypeError(field, requirement, node);
      return std::nullopt;
    }
    return node.scalar.as_int();
  }

  std::optional<double> NonNegativeNumber(std::string_view field, const YamlNode& node) {
    if (!node.is_scalar() || !node.scalar.is_number() || !std::isfinite(node.scalar.as_double()) ||
        node.scalar.as_double() < 0) {
      TypeError(field, "a number >= 0", node);
      return std::nullopt;
    }
    return node.scalar.as_double();
  }

  std::optional<int64_t> Memory(std::string_view field, const YamlNode& node) {
    return Integer(field, node, 0, INT64_MAX, "an integer number of bytes >= 0");
  }

  std::optional<core::ResourceMap> Resources(std::string_view field, const YamlNode& node) {
    if (!node.is_mapping()) {
      TypeError(field, "a mapping of resource names to numbers", node);
      return std::nullopt;
    }
    core::ResourceMap out;
    bool ok = true;
    for (const auto& entry : node.entries) {
      if (entry.key.empty()) {
        Error(entry.key_pos, std::string(field) + " keys must not be empty");
        ok = false;
        continue;
      }
      auto amount = NonNegativeNumber(std::string(field) + "." + entry.key, entry.value);
      if (!amount) {
        ok = false;
        continue;
      }
      out.emplace(entry.key, *amount);
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // Scalar values are kept as the text written: `HF_HUB_OFFLINE: 1` means "1".
  std::optional<core::StringMap> ScalarMap(std::string_view field, const YamlNode& node,
                                           bool env_var_names) {
    if (!node.is_mapping()) {
      TypeError(field, env_var_names ? "a mapping of variable names to values" : "a mapping", node);
      return std::nullopt;
    }
    core::StringMap out;
    bool ok = true;
    for (const auto& entry : node.entries) {
      if (env_var_names && !IsEnvVarName(entry.key)) {
        Error(entry.key_pos, std::string(field) + " key \"" + entry.key +
                                 "\" is not a valid environment variable name "
                                 "([A-Za-z_][A-Za-z0-9_]*)");
        ok = false;
        continue;
      }
      if (!entry.value.is_scalar() || entry.value.is_null()) {
        TypeError(std::string(field) + "." + entry.key, "a string, number or bool", entry.value);
        ok = false;
        continue;
      }
      out.emplace(entry.key, entry.value.text);
    }
    if (!ok) return std::nullopt;
    return out;
  }

 private:
  const std::string& path_;
  core::Diagnostics* diagnostics_;
};

core::Value StringMapValue(const core::StringMap& map) {
  core::Value::Object object;
  for (const auto& [key, value] : map) object.emplace(key, value);
  return object;
}

// Checks the document is a mapping; reports and returns nullptr otherwise.
const YamlNode* RootMapping(const YamlParse& parse, FieldReader& reader) {
  if (!parse.root) return nullptr;
  const YamlNode& root = *parse.root;
  if (root.is_null()) {
    reader.Error(root.pos, "the document is empty (expected a mapping of fields)");
    return nullptr;
  }
  if (!root.is_mapping()) {
    reader.Error(root.pos, "the document must be a mapping of fields (got " + Describe(root) + ")");
    return nullptr;
  }
  return &root;
}

void SortDiagnostics(core::Diagnostics& diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const auto& a, const auto& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
}

void CollectSharedRootUses(const YamlNode& node, std::vector<SourcePos>& out) {
  if (node.is_string() && node.scalar.as_string().find(kSharedRootVariable) != std::string::npos) {
    out.push_back(node.pos);
  }
  for (const auto& item : node.items) CollectSharedRootUses(item, out);
  for (const auto& entry : node.entries) CollectSharedRootUses(entry.value, out);
}

std::optional<core::Workload> ParseWorkload(std::string_view text) {
  if (text == "ppo") return core::Workload::kPpo;
  if (text == "grpo") return core::Workload::kGrpo;
  if (text == "sft") return core::Workload::kSft;
  if (text == "custom") return core::Workload::kCustom;
  return std::nullopt;
}

const YamlEntry* FindEntry(const YamlNode& mapping, std::string_view key) {
  for (const auto& entry : mapping.entries) {
    if (entry.key == key) return &entry;
  }
  return nullptr;
}

}  // namespace

Parsed<core::RayConfig> LoadRayConfig(std::string_view text, const std::string& path) {
  Parsed<core::RayConfig> out;
  YamlParse parse = ParseYamlDocument(text, path);
  out.diagnostics = std::move(parse.diagnostics);
  FieldReader reader(path, &out.diagnostics);
  const YamlNode* root = RootMapping(parse, reader);
  if (root == nullptr) {
    SortDiagnostics(out.diagnostics);
    return out;
  }

  core::RayConfig config;
  config.path = path;
  bool has_address = false;
  for (const auto& entry : root->entries) {
    const std::string& key = entry.key;
    const YamlNode& value = entry.value;
    if (!Contains(kClusterKeys, key)) {
      reader.Error(entry.key_pos, UnknownKeyMessage(key, kClusterKeys));
      continue;
    }
    config.positions[key] = entry.key_pos;
    if (key == "name") {
      // The cluster's identity in the ledger (DESIGN.md 4): it is written into every status
      // file and compared as is, so a line break or an edge space could never match by eye.
      const std::string name = value.is_string() ? value.scalar.as_string() : std::string();
      const bool ok = !name.empty() && name.size() <= 253 && name.front() != ' ' &&
                      name.back() != ' ' && std::none_of(name.begin(), name.end(), [](char c) {
                        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
                      });
      if (ok) {
        config.name = name;
      } else {
        reader.TypeError(key, "1 to 253 characters without control characters or edge spaces",
                         value);
      }
    } else if (key == "address") {
      has_address = true;
      const bool url = value.is_string() && (value.scalar.as_string().starts_with("http://") ||
                                             value.scalar.as_string().starts_with("https://"));
      const size_t scheme = url && value.scalar.as_string()[4] == 's' ? 8 : 7;
      if (!url || value.scalar.as_string().size() <= scheme ||
          value.scalar.as_string().find_first_of(" \t\n") != std::string::npos) {
        reader.TypeError(key, "an http:// or https:// URL", value);
      } else {
        config.address = value.scalar.as_string();
      }
    } else if (key == "shared_root") {
      if (!value.is_string() || !value.scalar.as_string().starts_with('/')) {
        reader.TypeError(key, "an absolute path", value);
      } else {
        config.shared_root = value.scalar.as_string();
      }
    } else if (key == "user_code_path") {
      config.user_code_path = reader.String(key, value);
    } else if (key == "entrypoint_num_cpus") {
      config.entrypoint_num_cpus = reader.NonNegativeNumber(key, value);
    } else if (key == "entrypoint_num_gpus") {
      config.entrypoint_num_gpus = reader.NonNegativeNumber(key, value);
    } else if (key == "entrypoint_memory") {
      config.entrypoint_memory = reader.Memory(key, value);
    } else if (key == "entrypoint_resources") {
      config.entrypoint_resources = reader.Resources(key, value);
    } else if (key == "runtime_env") {
      if (!value.is_mapping()) {
        reader.TypeError(key, "a mapping", value);
        continue;
      }
      core::Value::Object runtime_env;
      for (const auto& inner : value.entries) {
        if (inner.key == "env_vars") {
          if (auto env = reader.ScalarMap("runtime_env.env_vars", inner.value, true)) {
            runtime_env.emplace(inner.key, StringMapValue(*env));
          }
        } else {
          runtime_env.emplace(inner.key, ToValue(inner.value));
        }
      }
      config.runtime_env = std::move(runtime_env);
    }
  }
  if (!has_address) reader.Error(root->pos, "missing required key \"address\"");

  SortDiagnostics(out.diagnostics);
  if (out.diagnostics.empty()) out.value = std::move(config);
  return out;
}

LoadedJobSpec LoadJobSpecForDesiredState(std::string_view text, const std::string& path,
                                         std::string_view jobs_dir) {
  LoadedJobSpec out;
  out.name = core::DefaultJobName(path, jobs_dir);
  core::Diagnostics& diagnostics = out.parsed.diagnostics;
  YamlParse parse = ParseYamlDocument(text, path);
  diagnostics = std::move(parse.diagnostics);
  FieldReader reader(path, &diagnostics);
  const YamlNode* root = RootMapping(parse, reader);
  if (root == nullptr) {
    SortDiagnostics(diagnostics);
    return out;
  }
  CollectSharedRootUses(*root, out.shared_root_uses);

  core::JobSpec spec;
  spec.path = path;
  spec.document = ToValue(*root);

  std::optional<core::Workload> workload;
  if (const YamlEntry* entry = FindEntry(*root, "workload")) {
    workload =
        entry->value.is_string() ? ParseWorkload(entry->value.scalar.as_string()) : std::nullopt;
    if (!workload) reader.TypeError("workload", "one of ppo, grpo, sft, custom", entry->value);
  } else {
    reader.Error(root->pos, "missing required key \"workload\"");
  }
  const bool custom = workload == core::Workload::kCustom;
  if (workload) spec.workload = *workload;

  for (const auto& entry : root->entries) {
    const std::string& key = entry.key;
    const YamlNode& value = entry.value;
    if (!Contains(kJobKeys, key)) {
      reader.Error(entry.key_pos, UnknownKeyMessage(key, kJobKeys));
      continue;
    }
    spec.positions[key] = entry.key_pos;
    if (custom && Contains(kTrainerOnlyKeys, key)) {
      reader.Error(entry.key_pos, key + " is ignored by workload custom; remove it");
      continue;
    }
    if (key == "workload") continue;  // read above: the other fields depend on it
    if (key == "name") {
      // Only a valid name is kept: an invalid one ("../x", "sub/dir") would become a status
      // file's path, so the file keeps the name derived from its path.
      if (value.is_string() && core::IsValidJobName(value.scalar.as_string())) {
        out.name = value.scalar.as_string();
        out.name_is_explicit = true;
        out.name_pos = value.pos;
      } else {
        reader.TypeError(key,
                         "1 to 63 characters of [a-z0-9._-] starting and ending with a letter "
                         "or digit",
                         value);
      }
    } else if (key == "submission_id") {
      if (value.is_string()) {
        out.pinned_id = value.scalar.as_string();
        out.pinned_id_pos = value.pos;
      }
      if (!value.is_string() || !core::IsValidPinnedSubmissionId(value.scalar.as_string())) {
        reader.TypeError(key,
                         "1 to 100 characters of [a-z0-9._-] starting and ending with a letter "
                         "or digit, and not 8 hex digits",
                         value);
      } else {
        spec.submission_id = value.scalar.as_string();
      }
    } else if (key == "code_path") {
      spec.code_path = reader.String(key, value);
    } else if (key == "model_id") {
      spec.model_id = reader.String(key, value);
    } else if (key == "train_file") {
      spec.train_file = reader.String(key, value);
    } else if (key == "val_file") {
      spec.val_file = reader.String(key, value);
    } else if (key == "nnodes" || key == "n_gpus_per_node" || key == "total_training_steps") {
      auto number = reader.Integer(key, value, 1, INT64_MAX, "an integer >= 1");
      if (key == "nnodes") spec.nnodes = number;
      if (key == "n_gpus_per_node") spec.n_gpus_per_node = number;
      if (key == "total_training_steps") spec.total_training_steps = number;
    } else if (key == "save_freq" || key == "test_freq") {
      // verl reads -1 as "never".
      auto number = reader.Integer(key, value, -1, INT64_MAX, "an integer >= -1");
      (key == "save_freq" ? spec.save_freq : spec.test_freq) = number;
    } else if (key == "overrides") {
      if (!value.is_sequence()) {
        reader.TypeError(key, "a list of key=value strings", value);
        continue;
      }
      for (size_t i = 0; i < value.items.size(); ++i) {
        const YamlNode& item = value.items[i];
        const size_t equals = item.is_string() ? item.scalar.as_string().find('=') : 0;
        if (!item.is_string() || equals == 0 || equals == std::string::npos) {
          reader.TypeError("overrides[" + std::to_string(i) + "]", "a key=value string", item);
          continue;
        }
        spec.overrides.push_back(item.scalar.as_string());
      }
    } else if (key == "entrypoint") {
      if (workload && !custom) {
        reader.Error(entry.key_pos, "entrypoint is only allowed with workload custom (workload " +
                                        std::string(core::WorkloadName(*workload)) +
                                        " builds its own command)");
        continue;
      }
      spec.entrypoint = reader.String(key, value);
    } else if (key == "runtime_env") {
      if (!value.is_mapping()) {
        reader.TypeError(key, "a mapping", value);
        continue;
      }
      core::Value::Object runtime_env;
      for (const auto& inner : value.entries) {
        if (inner.key == "env_vars") {
          reader.Error(inner.key_pos,
                       "runtime_env.env_vars is not allowed in a JobSpec; use the top-level "
                       "env_vars");
          continue;
        }
        runtime_env.emplace(inner.key, ToValue(inner.value));
      }
      spec.runtime_env = std::move(runtime_env);
    } else if (key == "env_vars") {
      if (auto env = reader.ScalarMap(key, value, true)) {
        spec.env_vars = std::move(*env);
        // The run sees the text written, so `X: 1` and `X: "1"` are the same run.
        spec.document.as_object()[key] = StringMapValue(spec.env_vars);
      }
    } else if (key == "entrypoint_num_cpus") {
      spec.entrypoint_num_cpus = reader.NonNegativeNumber(key, value);
    } else if (key == "entrypoint_num_gpus") {
      spec.entrypoint_num_gpus = reader.NonNegativeNumber(key, value);
    } else if (key == "entrypoint_memory") {
      spec.entrypoint_memory = reader.Memory(key, value);
    } else if (key == "entrypoint_resources") {
      spec.entrypoint_resources = reader.Resources(key, value);
    } else if (key == "retries") {
      spec.retries = reader.Integer(key, value, 0, 100, "an integer from 0 to 100").value_or(0);
    } else if (key == "suspend") {
      if (!value.is_scalar() || !value.scalar.is_bool()) {
        reader.TypeError(key, "true or false", value);
      } else {
        spec.suspend = value.scalar.as_bool();
      }
    } else if (key == "on_remove") {
      if (value.is_string() && value.scalar.as_string() == "stop") {
        spec.on_remove = core::OnRemove::kStop;
      } else if (value.is_string() && value.scalar.as_string() == "keep") {
        spec.on_remove = core::OnRemove::kKeep;
      } else {
        reader.TypeError(key, "stop or keep", value);
      }
    } else if (key == "annotations") {
      if (auto annotations = reader.ScalarMap(key, value, false)) {
        spec.annotations = std::move(*annotations);
      }
    }
  }

  if (custom && FindEntry(*root, "entrypoint") == nullptr) {
    reader.Error(root->pos, "missing required key \"entrypoint\" (workload custom needs it)");
  }
  // A name written but invalid has its own error; the derived one is then beside the point.
  if (FindEntry(*root, "name") == nullptr && !core::IsValidJobName(out.name)) {
    reader.Error({1, 1}, "the name derived from the path (\"" + out.name +
                             "\") is not a valid job name; set name: explicitly");
  }
  spec.name = out.name;
  spec.spec_hash = core::ComputeSpecHash(spec.document);
  if (std::string legacy = core::ComputeLegacySpecHash(spec.document); !legacy.empty()) {
    spec.legacy_spec_hashes.push_back(std::move(legacy));
  }

  SortDiagnostics(diagnostics);
  if (diagnostics.empty()) out.parsed.value = std::move(spec);
  return out;
}

Parsed<core::JobSpec> LoadJobSpec(std::string_view text, const std::string& path,
                                  std::string_view jobs_dir) {
  return LoadJobSpecForDesiredState(text, path, jobs_dir).parsed;
}

}  // namespace rg::spec
