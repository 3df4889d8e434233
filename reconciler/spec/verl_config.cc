#include "reconciler/spec/verl_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/yaml_document.h"

namespace rg::spec {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> SplitDots(std::string_view text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = text.find('.', start);
    parts.emplace_back(text.substr(start, dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

std::string JoinPackage(const std::string& parent, const std::string& package) {
  std::string joined = parent.empty() ? package : package.empty() ? parent : parent + "." + package;
  // `_global_` anywhere makes what follows it absolute (Hydra's rule).
  const size_t global = joined.rfind("_global_");
  if (global == std::string::npos) return joined;
  const size_t rest = global + std::string_view("_global_").size() + 1;
  return rest >= joined.size() ? std::string() : joined.substr(rest);
}

// `group` written in a config that sits in folder `dir`: relative unless it starts with '/'.
std::string ResolveGroup(const std::string& dir, std::string_view group) {
  if (group.starts_with('/')) return std::string(group.substr(1));
  return (fs::path(dir) / group).lexically_normal().generic_string();
}

// OmegaConf's merge as far as keys go: mappings merge key by key, anything else replaces.
void Merge(core::Value& into, const core::Value& from) {
  if (!into.is_object() || !from.is_object()) {
    into = from;
    return;
  }
  for (const auto& [key, value] : from.as_object()) Merge(into[key], value);
}

void MergeAt(core::Value& root, const std::string& package, const core::Value& content) {
  core::Value* node = &root;
  if (!package.empty()) {
    for (const std::string& part : SplitDots(package)) {
      if (!node->is_object()) *node = core::Value::Object{};
      node = &(*node)[part];
    }
  }
  Merge(*node, content);
}

// `# @package X` among the comment lines that open the file.
std::optional<std::string> PackageHeader(std::string_view text) {
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    if (!line.starts_with('#')) return std::nullopt;
    const size_t at = line.find("@package");
    if (at == std::string::npos) continue;
    std::string package = line.substr(at + std::string_view("@package").size());
    std::erase_if(package, [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
    return package;
  }
  return std::nullopt;
}

// One entry of a defaults list.
struct DefaultsEntry {
  bool self = false;
  bool optional = false;
  bool override = false;
  bool group = false;                  // `group: option`; else a config named by path
  std::string path;                    // the group, or the config, as written
  std::optional<std::string> package;  // after '@'
  std::vector<std::string> options;    // empty for a null option
};

// "optional override group@package" -> its parts.
DefaultsEntry ParseEntryKey(std::string key) {
  DefaultsEntry entry;
  for (const std::string_view keyword : {"optional ", "override "}) {
    while (key.starts_with(keyword)) {
      (keyword == "optional " ? entry.optional : entry.override) = true;
      key.erase(0, keyword.size());
    }
  }
  const size_t at = key.find('@');
  if (at != std::string::npos) entry.package = key.substr(at + 1);
  entry.path = key.substr(0, at);
  return entry;
}

std::optional<DefaultsEntry> ParseEntry(const YamlNode& item) {
  if (item.is_string()) {
    if (item.scalar.as_string() == "_self_") {
      DefaultsEntry self;
      self.self = true;
      return self;
    }
    return ParseEntryKey(item.scalar.as_string());
  }
  if (!item.is_mapping() || item.entries.size() != 1) return std::nullopt;
  DefaultsEntry entry = ParseEntryKey(item.entries[0].key);
  entry.group = true;
  const YamlNode& value = item.entries[0].value;
  if (value.is_string()) {
    entry.options.push_back(value.scalar.as_string());
  } else if (value.is_sequence()) {
    for (const YamlNode& option : value.items) {
      if (!option.is_string()) return std::nullopt;
      entry.options.push_back(option.scalar.as_string());
    }
  } else if (!value.is_null()) {
    return std::nullopt;
  }
  return entry;
}

// A config file read: its own keys and its defaults list.
struct ConfigFile {
  core::Value content = core::Value::Object{};
  std::vector<DefaultsEntry> defaults;
  std::optional<std::string> header_package;
};

class Composer {
 public:
  Composer(const ConfigReader& read, std::map<std::string, std::string> choices)
      : read_(read), forced_(std::move(choices)) {}

  ComposedConfig Compose(const std::string& config_name) {
    Load(config_name, "", std::nullopt, "", false);
    ComposedConfig out;
    out.errors = std::move(errors_);
    out.choices = std::move(choices_);
    if (out.errors.empty()) out.config = std::move(root_);
    return out;
  }

 private:
  // `path`: the config without ".yaml"; its package is `explicit_package`, else its header's,
  // else `default_package`, below `parent_package`.
  void Load(const std::string& path, const std::string& parent_package,
            const std::optional<std::string>& explicit_package, const std::string& default_package,
            bool optional) {
    if (++depth_ > kMaxDepth) {
      errors_.push_back(path + ".yaml: the defaults lists nest too deep (a cycle?)");
      return;
    }
    std::optional<ConfigFile> file = Read(path, optional);
    if (file) {
      const std::string package =
          JoinPackage(parent_package,
                      explicit_package.value_or(file->header_package.value_or(default_package)));
      Apply(path, *file, package);
    }
    --depth_;
  }

  std::optional<ConfigFile> Read(const std::string& path, bool optional) {
    const std::optional<std::string> text = read_(path + ".yaml");
    if (!text) {
      if (!optional) errors_.push_back(path + ".yaml: no such config");
      return std::nullopt;
    }
    YamlParse parse = ParseYamlDocument(*text, path + ".yaml");
    for (const core::Diagnostic& d : parse.diagnostics) errors_.push_back(d.ToString());
    if (!parse.root || !parse.diagnostics.empty()) return std::nullopt;
    ConfigFile file;
    file.header_package = PackageHeader(*text);
    if (parse.root->is_null()) return file;
    if (!parse.root->is_mapping()) {
      errors_.push_back(path + ".yaml: not a mapping");
      return std::nullopt;
    }
    if (!ReadDefaults(path, *parse.root, file)) return std::nullopt;
    for (const YamlEntry& entry : parse.root->entries) {
      if (entry.key != "defaults") file.content[entry.key] = ToValue(entry.value);
    }
    return file;
  }

  bool ReadDefaults(const std::string& path, const YamlNode& root, ConfigFile& file) {
    for (const YamlEntry& entry : root.entries) {
      if (entry.key != "defaults") continue;
      if (!entry.value.is_sequence()) {
        errors_.push_back(path + ".yaml: defaults must be a list");
        return false;
      }
      for (const YamlNode& item : entry.value.items) {
        std::optional<DefaultsEntry> parsed = ParseEntry(item);
        if (!parsed) {
          errors_.push_back(path + ".yaml:" + std::to_string(item.pos.line) +
                            ": a defaults entry must be a name or one `group: option`");
          return false;
        }
        file.defaults.push_back(std::move(*parsed));
      }
    }
    return true;
  }

  // The defaults list in order, the config's own keys where `_self_` stands (else last).
  void Apply(const std::string& path, const ConfigFile& file, const std::string& package) {
    const std::string dir = fs::path(path).parent_path().generic_string();
    for (const DefaultsEntry& entry : file.defaults) {
      if (entry.override) Force(ChoiceKey(dir, entry, package), entry);
    }
    bool self_done = false;
    for (const DefaultsEntry& entry : file.defaults) {
      if (entry.self) {
        MergeAt(root_, package, file.content);
        self_done = true;
      } else if (entry.group && !entry.override) {
        LoadGroup(dir, entry, package);
      } else if (!entry.group) {
        const std::string config = ResolveGroup(dir, entry.path);
        const std::string sub = fs::path(entry.path).parent_path().generic_string();
        Load(config, package, entry.package, Dotted(sub), entry.optional);
      }
    }
    if (!self_done) MergeAt(root_, package, file.content);
  }

  static std::string Dotted(std::string text) {
    std::replace(text.begin(), text.end(), '/', '.');
    return text;
  }

  // How a command line names this group: "group" or "group@package" (package made absolute).
  static std::string ChoiceKey(const std::string& dir, const DefaultsEntry& entry,
                               const std::string& package) {
    std::string group = ResolveGroup(dir, entry.path);
    if (!entry.package) return group;
    return group + "@" + JoinPackage(package, *entry.package);
  }

  void Force(const std::string& key, const DefaultsEntry& entry) {
    if (!entry.options.empty()) forced_.try_emplace(key, entry.options.front());
  }

  void LoadGroup(const std::string& dir, const DefaultsEntry& entry, const std::string& package) {
    const std::string group = ResolveGroup(dir, entry.path);
    const std::string key = ChoiceKey(dir, entry, package);
    std::vector<std::string> options = entry.options;
    if (auto forced = forced_.find(key); forced != forced_.end()) options = {forced->second};
    for (std::string& option : options) option = Interpolate(option);
    if (options.empty() || options.front() == "null") return;
    choices_.try_emplace(key, options.front());
    for (const std::string& option : options) {
      Load(group + '/' += option, package, entry.package, Dotted(entry.path), entry.optional);
    }
  }

  // `${group}` in an option name is that group's choice.
  std::string Interpolate(const std::string& option) {
    std::string out;
    size_t i = 0;
    while (i < option.size()) {
      const size_t open = option.find("${", i);
      const size_t close = open == std::string::npos ? open : option.find('}', open);
      if (close == std::string::npos) break;
      out += option.substr(i, open - i);
      const std::string name = option.substr(open + 2, close - open - 2);
      auto choice = choices_.find(name);
      if (choice == choices_.end()) {
        errors_.push_back("defaults: ${" + name + "} names no group chosen before it");
      } else {
        out += choice->second;
      }
      i = close + 1;
    }
    return out + option.substr(std::min(i, option.size()));
  }

  static constexpr int kMaxDepth = 64;
  const ConfigReader& read_;
  std::map<std::string, std::string> forced_;
  std::map<std::string, std::string> choices_;
  core::Value root_ = core::Value::Object{};
  std::vector<std::string> errors_;
  int depth_ = 0;
};

}  // namespace

ConfigReader DirectoryConfigReader(const std::string& dir) {
  return [dir](const std::string& path) -> std::optional<std::string> {
    const fs::path full = fs::path(dir) / path;
    std::error_code ec;
    if (!fs::is_regular_file(full, ec)) return std::nullopt;
    std::ifstream in(full, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return std::nullopt;
    return text.str();
  };
}

ComposedConfig ComposeHydraConfig(const ConfigReader& read, const std::string& config_name,
                                  const std::map<std::string, std::string>& choices) {
  return Composer(read, choices).Compose(config_name);
}

std::vector<std::string> KeyPaths(const core::Value& config) {
  std::vector<std::string> paths;
  std::function<void(const core::Value&, const std::string&)> walk =
      [&](const core::Value& node, const std::string& prefix) {
        if (!node.is_object()) return;
        for (const auto& [key, value] : node.as_object()) {
          std::string path = prefix.empty() ? key : prefix + '.' += key;
          walk(value, path);
          paths.push_back(std::move(path));
        }
      };
  walk(config, "");
  std::sort(paths.begin(), paths.end());
  return paths;
}

HydraOverride ParseHydraOverride(std::string_view text) {
  HydraOverride out;
  if (text.starts_with("~")) {
    out.kind = HydraOverride::Kind::kDelete;
    text.remove_prefix(1);
  } else if (text.starts_with("++")) {
    out.kind = HydraOverride::Kind::kForceAdd;
    text.remove_prefix(2);
  } else if (text.starts_with("+")) {
    out.kind = HydraOverride::Kind::kAdd;
    text.remove_prefix(1);
  }
  const size_t equals = text.find('=');
  out.key = std::string(text.substr(0, equals));
  if (equals != std::string_view::npos) out.value = std::string(text.substr(equals + 1));
  return out;
}

namespace {

// How far a dotted key reaches into the config: the deepest node it names and how many of its
// parts that took. A list is entered by index ("trainer.logger.0").
struct Reach {
  const core::Value* node = nullptr;
  size_t parts = 0;
};

Reach Walk(const core::Value& config, const std::vector<std::string>& parts) {
  Reach reach{&config, 0};
  for (const std::string& part : parts) {
    const core::Value* next = reach.node->Find(part);
    if (next == nullptr && reach.node->is_array() && !part.empty() &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        part.size() < 10 && std::stoul(part) < reach.node->as_array().size()) {
      next = &reach.node->as_array()[std::stoul(part)];
    }
    if (next == nullptr) return reach;
    reach.node = next;
    ++reach.parts;
  }
  return reach;
}

std::string Join(const std::vector<std::string>& parts, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out += (i == 0 ? "" : ".") + parts[i];
  return out;
}

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string UnknownKey(const core::Value& config, const std::string& key,
                       std::string_view config_label, bool hint_add) {
  std::string message = "unknown key " + Quoted(key) + " in " + std::string(config_label);
  const std::vector<std::string> paths = KeyPaths(config);
  const std::vector<std::string_view> known(paths.begin(), paths.end());
  if (const std::string_view best = DidYouMean(key, known); !best.empty()) {
    return message + " (did you mean " + Quoted(best) + "?)";
  }
  return hint_add ? message + " (+" + key + "=... adds a key it does not define)" : message;
}

}  // namespace

std::optional<std::string> CheckOverride(const core::Value& config, const HydraOverride& override,
                                         std::string_view config_label) {
  const std::vector<std::string> parts = SplitDots(override.key);
  const Reach reach = Walk(config, parts);
  const bool exists = reach.parts == parts.size();
  using Kind = HydraOverride::Kind;
  if (exists) {
    if (override.kind != Kind::kAdd) return std::nullopt;
    return "+" + override.key + " adds a key, but " + std::string(config_label) + " already has " +
           Quoted(override.key) + " (write " + override.key + "=... to set it)";
  }
  if (override.kind == Kind::kSet || override.kind == Kind::kDelete) {
    return UnknownKey(config, override.key, config_label, override.kind == Kind::kSet);
  }
  if (!reach.node->is_object() && !reach.node->is_null()) {
    return "cannot add " + Quoted(override.key) + ": " + Quoted(Join(parts, reach.parts)) +
           " is a value in " + std::string(config_label) + ", not a mapping";
  }
  return std::nullopt;
}

std::string_view VerlConfigName(core::Workload workload) {
  switch (workload) {
    case core::Workload::kPpo:
    case core::Workload::kGrpo:
      return "ppo_trainer";
    case core::Workload::kSft:
      return "sft_trainer_engine";
    case core::Workload::kCustom:
      break;
  }
  return "";
}

}  // namespace rg::spec

namespace rg::spec {
namespace {

// Where each item of `overrides` was written, read again from the spec's text.
std::vector<core::SourcePos> OverridePositions(std::string_view spec_text,
                                               const std::string& path) {
  std::vector<core::SourcePos> positions;
  const YamlParse parse = ParseYamlDocument(spec_text, path);
  if (!parse.root || !parse.root->is_mapping()) return positions;
  for (const YamlEntry& entry : parse.root->entries) {
    if (entry.key != "overrides" || !entry.value.is_sequence()) continue;
    for (const YamlNode& item : entry.value.items) positions.push_back(item.pos);
  }
  return positions;
}

// Mirrors render.cc: an override that sets trainer.device (with + or ++ too) replaces ours.
bool OverridesSetDevice(const std::vector<std::string>& overrides) {
  return std::any_of(overrides.begin(), overrides.end(), [](const std::string& item) {
    const HydraOverride parsed = ParseHydraOverride(item);
    return parsed.kind != HydraOverride::Kind::kDelete && parsed.key == "trainer.device";
  });
}

class KeyList {
 public:
  explicit KeyList(const core::JobSpec& spec) : spec_(spec) {}

  void Add(std::string_view key, std::string_view field, bool present = true) {
    if (!present) return;
    RenderedKey rendered;
    rendered.text = std::string(key) + "=";
    rendered.field = std::string(field);
    if (auto pos = spec_.positions.find(field); pos != spec_.positions.end()) {
      rendered.pos = pos->second;
    }
    keys_.push_back(std::move(rendered));
  }

  std::vector<RenderedKey> Take() { return std::move(keys_); }

 private:
  const core::JobSpec& spec_;
  std::vector<RenderedKey> keys_;
};

}  // namespace

// Keep in step with RenderVerlEntrypoint (reconciler/core/render.cc); a unit test renders a
// spec that sets every field and compares.
std::vector<RenderedKey> RenderedVerlKeys(const core::JobSpec& spec, std::string_view spec_text,
                                          bool has_shared_root) {
  const bool sft = spec.workload == core::Workload::kSft;
  KeyList keys(spec);
  keys.Add("algorithm.adv_estimator", "workload", spec.workload == core::Workload::kGrpo);
  keys.Add("data.train_files", "train_file", spec.trainer().train_file.has_value());
  keys.Add("data.val_files", "val_file", spec.trainer().val_file.has_value());
  keys.Add("model.path", "model_id", sft && spec.trainer().model_id.has_value());
  keys.Add("actor_rollout_ref.model.path", "model_id", !sft && spec.trainer().model_id.has_value());
  keys.Add("critic.model.path", "model_id",
           spec.workload == core::Workload::kPpo && spec.trainer().model_id.has_value());
  keys.Add("trainer.nnodes", "nnodes", spec.trainer().nnodes.has_value());
  keys.Add("trainer.n_gpus_per_node", "n_gpus_per_node",
           spec.trainer().n_gpus_per_node.has_value());
  keys.Add("trainer.total_training_steps", "total_training_steps",
           spec.trainer().total_training_steps.has_value());
  keys.Add("trainer.save_freq", "save_freq", spec.trainer().save_freq.has_value());
  keys.Add("trainer.test_freq", "test_freq", spec.trainer().test_freq.has_value());
  keys.Add("trainer.experiment_name", "workload");
  keys.Add("trainer.default_local_dir", "workload", has_shared_root);
  keys.Add("trainer.device", "workload", sft && !OverridesSetDevice(spec.trainer().overrides));
  std::vector<RenderedKey> out = keys.Take();
  const std::vector<core::SourcePos> positions = OverridePositions(spec_text, spec.path);
  for (size_t i = 0; i < spec.trainer().overrides.size(); ++i) {
    RenderedKey item;
    item.text = spec.trainer().overrides[i];
    item.field = "overrides[" + std::to_string(i) + "]";
    if (i < positions.size()) item.pos = positions[i];
    out.push_back(std::move(item));
  }
  return out;
}

namespace {

VerlKeyProblem Problem(const core::JobSpec& spec, const RenderedKey& key, std::string message) {
  VerlKeyProblem problem;
  problem.diagnostic =
      core::Diagnostic{spec.path, key.pos.line, key.pos.column, std::move(message)};
  problem.field = key.field;
  return problem;
}

bool IsGroupPath(std::string_view key) {
  return key.find('/') != std::string_view::npos || key.find('@') != std::string_view::npos;
}

// Overrides that pick an option of a group of the defaults list (`model_engine=megatron`). An
// option verl does not ship is a problem at its override.
std::map<std::string, std::string> GroupChoices(const core::JobSpec& spec,
                                                const std::vector<RenderedKey>& keys,
                                                const ComposedConfig& composed,
                                                const ConfigReader& read,
                                                std::vector<VerlKeyProblem>& problems) {
  std::map<std::string, std::string> choices;
  for (const RenderedKey& key : keys) {
    const HydraOverride parsed = ParseHydraOverride(key.text);
    if (parsed.kind != HydraOverride::Kind::kSet || !parsed.value) continue;
    if (!composed.choices.contains(parsed.key)) {
      if (IsGroupPath(parsed.key)) {
        problems.push_back(Problem(spec, key, "verl has no config group " + Quoted(parsed.key)));
      }
      continue;
    }
    const std::string group = parsed.key.substr(0, parsed.key.find('@'));
    if (*parsed.value != "null" && !read(group + "/" + *parsed.value + ".yaml")) {
      problems.push_back(Problem(
          spec, key,
          "verl's config group " + Quoted(group) + " has no option " + Quoted(*parsed.value)));
      continue;
    }
    choices[parsed.key] = *parsed.value;
  }
  return choices;
}

std::string ComposeError(const ComposedConfig& composed, std::string_view name) {
  return "cannot compose verl's " + std::string(name) + " config: " + composed.errors.front();
}

}  // namespace

std::vector<VerlKeyProblem> CheckVerlKeys(const core::JobSpec& spec, std::string_view spec_text,
                                          bool has_shared_root, const ConfigReader& read) {
  std::vector<VerlKeyProblem> problems;
  const std::string name(VerlConfigName(spec.workload));
  if (name.empty()) return problems;
  const std::vector<RenderedKey> keys = RenderedVerlKeys(spec, spec_text, has_shared_root);
  ComposedConfig composed = ComposeHydraConfig(read, name);
  if (composed.config) {
    const auto choices = GroupChoices(spec, keys, composed, read, problems);
    if (!choices.empty()) composed = ComposeHydraConfig(read, name, choices);
  }
  if (!composed.config) {
    const RenderedKey whole;
    problems.push_back(Problem(spec, whole, ComposeError(composed, name)));
    return problems;
  }
  const std::string label = "verl's " + name + " config";
  for (const RenderedKey& key : keys) {
    const HydraOverride parsed = ParseHydraOverride(key.text);
    if (IsGroupPath(parsed.key) ||
        (parsed.kind == HydraOverride::Kind::kSet && composed.choices.contains(parsed.key))) {
      continue;
    }
    if (auto message = CheckOverride(*composed.config, parsed, label)) {
      problems.push_back(Problem(spec, key, std::move(*message)));
    }
  }
  std::stable_sort(problems.begin(), problems.end(), [](const auto& a, const auto& b) {
    return std::tie(a.diagnostic.line, a.diagnostic.column) <
           std::tie(b.diagnostic.line, b.diagnostic.column);
  });
  return problems;
}

}  // namespace rg::spec
