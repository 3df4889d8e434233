#include "reconciler/spec/verl_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "reconciler/spec/spec_entry.h"
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
  core::SourcePos pos;                 // where it was written
  std::string text;                    // as written, for messages
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

std::optional<DefaultsEntry> ParseEntryAsWritten(const YamlNode& item) {
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

// The entry as a message quotes it: "group@package: option", "[a, b]" for a list of options.
std::string EntryText(const YamlNode& item) {
  if (item.is_scalar()) return item.text;
  if (!item.is_mapping() || item.entries.empty()) return "[...]";
  const YamlNode& value = item.entries[0].value;
  std::string text = item.entries[0].key + ": ";
  if (value.is_scalar()) return text + value.text;
  std::string options;
  for (const YamlNode& option : value.items) {
    options += (options.empty() ? "" : ", ") + (option.is_scalar() ? option.text : "...");
  }
  return text + "[" + options + "]";
}

std::optional<DefaultsEntry> ParseEntry(const YamlNode& item) {
  constexpr size_t kShown = 200;  // a message quotes no more of an entry
  std::optional<DefaultsEntry> entry = ParseEntryAsWritten(item);
  if (entry) {
    entry->pos = item.pos;
    entry->text = EntryText(item);
    if (entry->text.size() > kShown) {
      size_t cut = kShown;
      while (cut > 0 && (static_cast<unsigned char>(entry->text[cut]) & 0xC0) == 0x80) --cut;
      entry->text = entry->text.substr(0, cut) + "...";
    }
  }
  return entry;
}

// A config file read: its own keys and its defaults list.
struct ConfigFile {
  core::Value content = core::Value::Object{};
  std::vector<DefaultsEntry> defaults;
  std::optional<std::string> header_package;
};

// A change that composition makes to a config tree, kept so that what a (file, package)
// composes to can be merged again as one step. OmegaConf's merge as far as keys go: mappings
// merge key by key, anything else replaces. With `replace` set the node becomes that value;
// else it becomes a mapping (a value that is not one is dropped) and each child is merged
// into its key. Composing two changes gives one that does the first, then the second.
struct Delta {
  std::optional<core::Value> replace;
  std::map<std::string, Delta, std::less<>> merge;
};

// Where a defaults entry was written, for messages: "a.yaml:3:5: defaults entry \"b\"", or
// the file alone (its implicit `_self_`), or nothing (the primary config).
struct Site {
  std::string file;
  const DefaultsEntry* entry = nullptr;

  std::string Prefix() const {
    if (entry == nullptr) return file;
    return file + ":" + std::to_string(entry->pos.line) + ":" + std::to_string(entry->pos.column) +
           ": defaults entry \"" + entry->text + "\"";
  }
};

std::string NormalPath(std::string_view path) {
  return fs::path(path).lexically_normal().generic_string();
}

bool ReadDefaults(const std::string& path, const YamlNode& root, ConfigFile& file,
                  std::vector<std::string>& errors) {
  for (const YamlEntry& entry : root.entries) {
    if (entry.key != "defaults") continue;
    if (!entry.value.is_sequence()) {
      errors.push_back(path + ": defaults must be a list");
      return false;
    }
    for (const YamlNode& item : entry.value.items) {
      std::optional<DefaultsEntry> parsed = ParseEntry(item);
      if (!parsed) {
        errors.push_back(path + ":" + std::to_string(item.pos.line) +
                         ": a defaults entry must be a name or one `group: option`");
        return false;
      }
      file.defaults.push_back(std::move(*parsed));
    }
  }
  return true;
}

}  // namespace

// A config file as read once: its keys and defaults list, or why it cannot be used.
struct ParsedConfigFile {
  std::optional<ConfigFile> file;
  bool missing = false;
  std::string refusal;              // the reader's, for a file outside the folder
  std::vector<std::string> errors;  // a broken file's
};

struct ParsedConfigFiles {
  std::map<std::string, ParsedConfigFile> files;
};

namespace {

ParsedConfigFile ParseConfigFile(const ConfigReader& read, const std::string& path) {
  ParsedConfigFile out;
  core::Result<std::string> text = read(path);
  if (!text) {
    out.missing = text.error().IsNotFound();
    if (!out.missing) out.refusal = text.error().message();
    return out;
  }
  YamlParse parse = ParseYamlDocument(*text, path);
  for (const core::Diagnostic& d : parse.diagnostics) out.errors.push_back(d.ToString());
  if (!parse.root || !parse.diagnostics.empty()) return out;
  ConfigFile file;
  file.header_package = PackageHeader(*text);
  if (!parse.root->is_null()) {
    if (!parse.root->is_mapping()) {
      out.errors.push_back(path + ": not a mapping");
      return out;
    }
    if (!ReadDefaults(path, *parse.root, file, out.errors)) return out;
    for (const YamlEntry& entry : parse.root->entries) {
      if (entry.key != "defaults") file.content[entry.key] = ToValue(entry.value);
    }
  }
  out.file = std::move(file);
  return out;
}

class Composer {
 public:
  Composer(const ConfigReader& read, ParsedConfigFiles& files,
           std::map<std::string, std::string> choices)
      : read_(read), files_(files), forced_(std::move(choices)) {}

  ComposedConfig Compose(const std::string& config_name) {
    const Delta& delta = Load(config_name, "", std::nullopt, "", false, Site{});
    core::Value root = core::Value::Object{};
    if (errors_.empty()) {
      ApplyTo(root, delta);
      CheckBudget(Site{config_name + ".yaml"});
    }
    ComposedConfig out;
    out.errors = std::move(errors_);
    out.choices = std::move(choices_);
    out.cost = cost_;
    if (out.errors.empty()) out.config = std::move(root);
    return out;
  }

 private:
  // `written`: the config without ".yaml", relative to the folder; its package is
  // `explicit_package`, else its header's, else `default_package`, below `parent_package`.
  // What it composes to, kept per (file, package).
  const Delta& Load(const std::string& written, const std::string& parent_package,
                    const std::optional<std::string>& explicit_package,
                    const std::string& default_package, bool optional, const Site& site) {
    static const Delta kNothing;
    if (over_) return kNothing;  // reported by the Apply that follows, at its entry
    if (++cost_.entries > kMaxDefaultsEntries) {
      Stop(site, "composing follows more than " + std::to_string(kMaxDefaultsEntries) +
                     " defaults entries (a defaults list that fans out?)");
      return kNothing;
    }
    const std::optional<std::string> path = InsideConfigFolder(written + ".yaml");
    if (!path) {
      Error(site, NormalPath(written + ".yaml") + " is outside the config folder; nothing is read");
      return kNothing;
    }
    if (std::find(stack_.begin(), stack_.end(), *path) != stack_.end()) {
      Error(site, "makes a cycle: " + Cycle(*path));
      return kNothing;
    }
    if (stack_.size() >= kMaxDefaultsDepth) {
      Stop(site,
           "the defaults lists nest more than " + std::to_string(kMaxDefaultsDepth) + " deep");
      return kNothing;
    }
    const ConfigFile* file =
        Read(*path, optional, site.entry != nullptr && site.entry->path.starts_with('/'), site);
    if (file == nullptr) return kNothing;
    const std::string package = JoinPackage(
        parent_package, explicit_package.value_or(file->header_package.value_or(default_package)));
    if (std::count(package.begin(), package.end(), '.') >= kMaxPackageParts) {
      Error(site, "its package has more than " + std::to_string(kMaxPackageParts) + " parts");
      return kNothing;
    }
    auto [memo, fresh] = composed_.try_emplace(std::make_pair(*path, package));
    if (!fresh) return memo->second;
    stack_.push_back(*path);
    cost_.depth = std::max(cost_.depth, static_cast<int>(stack_.size()));
    memo->second = Apply(*path, *file, package);
    stack_.pop_back();
    return memo->second;
  }

  // "a.yaml -> b.yaml -> a.yaml" for `path` on the stack.
  std::string Cycle(const std::string& path) const {
    std::string chain;
    for (auto at = std::find(stack_.begin(), stack_.end(), path); at != stack_.end(); ++at) {
      chain += *at + " -> ";
    }
    return chain + path;
  }

  // `rooted`: written with a leading '/', which Hydra reads as the config folder's root.
  const ConfigFile* Read(const std::string& path, bool optional, bool rooted, const Site& site) {
    auto [read, fresh] = files_.files.try_emplace(path);
    if (fresh) {
      ++cost_.files_read;
      read->second = ParseConfigFile(read_, path);
    }
    const ParsedConfigFile& parsed = read->second;
    if (seen_.insert(path).second) {
      for (const std::string& error : parsed.errors) Report(error);
    }
    if (!parsed.refusal.empty()) Error(site, parsed.refusal);
    if (parsed.missing && !optional && rooted) {
      Error(site, path +
                      ": no such config (a leading / names the config folder, not the file "
                      "system)");
    } else if (parsed.missing && !optional) {
      Report(path + ": no such config");
    }
    return parsed.file ? &*parsed.file : nullptr;
  }

  // The defaults list in order, the config's own keys where `_self_` stands (else last).
  Delta Apply(const std::string& path, const ConfigFile& file, const std::string& package) {
    const std::string dir = fs::path(path).parent_path().generic_string();
    for (const DefaultsEntry& entry : file.defaults) {
      if (entry.override) Force(ChoiceKey(dir, entry, package), entry);
    }
    Delta out;
    bool self_done = false;
    for (const DefaultsEntry& entry : file.defaults) {
      const Site site{path, &entry};
      if (entry.self) {
        MergeContent(out, package, file.content);
        self_done = true;
      } else if (entry.group && !entry.override) {
        LoadGroup(out, dir, entry, package, site);
      } else if (!entry.group) {
        const std::string sub = fs::path(entry.path).parent_path().generic_string();
        ComposeInto(out, Load(ResolveGroup(dir, entry.path), package, entry.package, Dotted(sub),
                              entry.optional, site));
      }
      if (CheckBudget(site)) return out;
    }
    if (!self_done) MergeContent(out, package, file.content);
    CheckBudget(Site{path});
    return out;
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

  void LoadGroup(Delta& out, const std::string& dir, const DefaultsEntry& entry,
                 const std::string& package, const Site& site) {
    const std::string group = ResolveGroup(dir, entry.path);
    const std::string key = ChoiceKey(dir, entry, package);
    std::vector<std::string> options = entry.options;
    if (auto forced = forced_.find(key); forced != forced_.end()) options = {forced->second};
    for (std::string& option : options) option = Interpolate(option);
    if (options.empty() || options.front() == "null") return;
    choices_.try_emplace(key, options.front());
    for (const std::string& option : options) {
      ComposeInto(out, Load(group + '/' += option, package, entry.package, Dotted(entry.path),
                            entry.optional, site));
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
        Report("defaults: ${" + name + "} names no group chosen before it");
      } else {
        out += choice->second;
      }
      i = close + 1;
    }
    return out + option.substr(std::min(i, option.size()));
  }

  // A config's own keys, at `package`.
  void MergeContent(Delta& out, const std::string& package, const core::Value& content) {
    Delta* node = &out;
    if (!package.empty()) {
      for (const std::string& part : SplitDots(package)) {
        Spend(1, static_cast<int64_t>(part.size()));
        node = &node->merge[part];
      }
    }
    Delta own;
    ToDelta(own, content);
    ComposeInto(*node, own);
  }

  void ToDelta(Delta& into, const core::Value& value) {
    if (!value.is_object()) {
      SpendOn(value);
      into.replace = value;
      return;
    }
    Spend(1, 0);
    for (const auto& [key, child] : value.as_object()) {
      if (over_) return;
      Spend(0, static_cast<int64_t>(key.size()));
      ToDelta(into.merge[key], child);
    }
  }

  void ComposeInto(Delta& into, const Delta& from) {
    if (over_) return;
    Spend(1, 0);
    if (from.replace) {
      SpendOn(*from.replace);
      into.replace = from.replace;
      into.merge.clear();
      return;
    }
    if (into.replace) {
      ApplyTo(*into.replace, from);
      return;
    }
    for (const auto& [key, child] : from.merge) {
      Spend(0, static_cast<int64_t>(key.size()));
      ComposeInto(into.merge[key], child);
    }
  }

  void ApplyTo(core::Value& target, const Delta& delta) {
    if (over_) return;
    Spend(1, 0);
    if (delta.replace) {
      SpendOn(*delta.replace);
      target = *delta.replace;
      return;
    }
    if (!target.is_object()) target = core::Value::Object{};
    for (const auto& [key, child] : delta.merge) {
      Spend(0, static_cast<int64_t>(key.size()));
      ApplyTo(target[key], child);
    }
  }

  // A value copied whole: every node of it, and the bytes of its keys and strings.
  void SpendOn(const core::Value& value) {
    Spend(1, value.is_string() ? static_cast<int64_t>(value.as_string().size()) : 0);
    if (value.is_array()) {
      for (const core::Value& item : value.as_array()) {
        if (over_) return;
        SpendOn(item);
      }
    } else if (value.is_object()) {
      for (const auto& [key, item] : value.as_object()) {
        if (over_) return;
        Spend(0, static_cast<int64_t>(key.size()));
        SpendOn(item);
      }
    }
  }

  void Spend(int64_t nodes, int64_t bytes) {
    cost_.nodes += nodes;
    cost_.bytes += bytes;
    if (cost_.nodes > kMaxComposedNodes || cost_.bytes > kMaxComposedBytes) over_ = true;
  }

  // Reports a crossed bound at `site`, once. True when composing has stopped.
  bool CheckBudget(const Site& site) {
    if (over_ && !stopped_) {
      Stop(site, "composing makes more than " + std::to_string(kMaxComposedNodes) +
                     " keys and values or " + std::to_string(kMaxComposedBytes >> 20) +
                     " MiB of them (a defaults list that fans out?)");
    }
    return stopped_;
  }

  void Error(const Site& site, const std::string& message) {
    const std::string prefix = site.Prefix();
    Report(prefix.empty() ? message : prefix + ": " + message);
  }

  // Only the first errors are kept: a config that keeps failing stops being composed.
  void Report(std::string message) {
    if (errors_.size() < kMaxErrors) {
      errors_.push_back(std::move(message));
    } else {
      stopped_ = over_ = true;
    }
  }

  void Stop(const Site& site, const std::string& message) {
    Error(site, message);
    stopped_ = true;
    over_ = true;
  }

  static constexpr size_t kMaxErrors = 20;

  const ConfigReader& read_;
  ParsedConfigFiles& files_;
  std::map<std::string, std::string> forced_;
  std::map<std::string, std::string> choices_;
  std::set<std::string> seen_;  // files whose errors this composition has reported
  std::map<std::pair<std::string, std::string>, Delta> composed_;
  std::vector<std::string> stack_;  // the files being composed, outermost first
  std::vector<std::string> errors_;
  CompositionCost cost_;
  bool over_ = false;     // a bound is crossed: nothing more is loaded or merged
  bool stopped_ = false;  // ... and that is reported
};

// Whether `path` is `root` or below it; both canonical.
bool Contains(const fs::path& root, const fs::path& path) {
  const fs::path relative = path.lexically_relative(root);
  return !relative.empty() && *relative.begin() != "..";
}

// The config folder as the reader keeps it: canonical, or why nothing is read from it.
struct ConfigRoot {
  fs::path canonical;  // empty when there is no such folder
  std::string refusal;
};

ConfigRoot CanonicalRoot(const std::string& dir, const std::string& within) {
  ConfigRoot root;
  std::error_code ec;
  root.canonical = fs::canonical(dir, ec);
  if (ec) root.canonical.clear();
  if (!within.empty() && !root.canonical.empty()) {
    const fs::path bound = fs::canonical(within, ec);
    if (ec || !Contains(bound, root.canonical)) {
      root.refusal = "the config folder " + dir + " leads outside the repository " + within +
                     "; nothing is read";
    }
  }
  return root;
}

core::Result<std::string> ReadConfigFile(const ConfigRoot& root, const std::string& path) {
  if (!root.refusal.empty()) return core::Error::InvalidInput(root.refusal);
  const std::optional<std::string> inside = InsideConfigFolder(path);
  if (!inside) {
    return core::Error::InvalidInput(NormalPath(path) +
                                     " is outside the config folder; nothing is read");
  }
  if (root.canonical.empty()) return core::Error::NotFound(path);
  std::error_code ec;
  const fs::path real = fs::canonical(root.canonical / *inside, ec);
  if (ec) return core::Error::NotFound(path);  // nothing there, or a dangling link
  if (!Contains(root.canonical, real)) {
    const std::string link = FirstLinkAlong(root.canonical, *inside);
    const std::string through =
        link.empty()      ? *inside + " leads"
        : link == *inside ? link + " is a symbolic link that leads"
                          : *inside + " lies behind " + link + ", a symbolic link that leads";
    return core::Error::InvalidInput(through +
                                     " outside the config folder; nothing is read through it");
  }
  if (!fs::is_regular_file(real, ec)) return core::Error::NotFound(path);
  std::ifstream in(real, std::ios::binary);
  std::string text(kMaxSpecFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return core::Error::NotFound(path);
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

}  // namespace

std::optional<std::string> InsideConfigFolder(std::string_view path) {
  if (path.empty() || path.find('\0') != std::string_view::npos) return std::nullopt;
  const fs::path normal = fs::path(path).lexically_normal();
  if (normal.is_absolute() || normal.has_root_path() || normal.empty()) return std::nullopt;
  const fs::path first = *normal.begin();
  if (first == ".." || first == ".") return std::nullopt;
  return normal.generic_string();
}

ConfigReader DirectoryConfigReader(const std::string& dir, const std::string& within) {
  return [root = CanonicalRoot(dir, within)](const std::string& path) {
    return ReadConfigFile(root, path);
  };
}

ConfigFolder::ConfigFolder(ConfigReader read)
    : read_(std::move(read)), files_(std::make_unique<ParsedConfigFiles>()) {}

ConfigFolder::~ConfigFolder() = default;

std::shared_ptr<const ComposedConfig> ConfigFolder::Compose(
    const std::string& config_name, const std::map<std::string, std::string>& choices) {
  auto key = std::make_pair(config_name, choices);
  if (auto kept = composed_.find(key); kept != composed_.end()) return kept->second;
  auto composed = std::make_shared<const ComposedConfig>(
      Composer(read_, *files_, choices).Compose(config_name));
  if (composed_.size() < kKeptCompositions) composed_.emplace(std::move(key), composed);
  return composed;
}

ComposedConfig ComposeHydraConfig(const ConfigReader& read, const std::string& config_name,
                                  const std::map<std::string, std::string>& choices) {
  return *ConfigFolder(read).Compose(config_name, choices);
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

// What is wrong with picking `option` for `group`: an option verl does not ship, or one
// outside the config folder (nothing is read then).
std::optional<std::string> OptionProblem(const std::string& group, const std::string& option,
                                         const ConfigReader& read) {
  if (option == "null") return std::nullopt;
  const std::string named = "option " + Quoted(option) + " of verl's config group " + Quoted(group);
  const std::optional<std::string> path = InsideConfigFolder(group + "/" + option + ".yaml");
  if (!path) return named + " is outside the config folder; nothing is read";
  const core::Result<std::string> text = read(*path);
  if (text.ok()) return std::nullopt;
  if (!text.error().IsNotFound()) return named + ": " + text.error().message();
  return "verl's config group " + Quoted(group) + " has no option " + Quoted(option);
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
    if (auto problem = OptionProblem(group, *parsed.value, read)) {
      problems.push_back(Problem(spec, key, std::move(*problem)));
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
  ConfigFolder folder(read);
  return CheckVerlKeys(spec, spec_text, has_shared_root, folder);
}

std::vector<VerlKeyProblem> CheckVerlKeys(const core::JobSpec& spec, std::string_view spec_text,
                                          bool has_shared_root, ConfigFolder& folder) {
  std::vector<VerlKeyProblem> problems;
  const std::string name(VerlConfigName(spec.workload));
  if (name.empty()) return problems;
  const std::vector<RenderedKey> keys = RenderedVerlKeys(spec, spec_text, has_shared_root);
  std::shared_ptr<const ComposedConfig> composed_ptr = folder.Compose(name);
  if (composed_ptr->config) {
    const auto choices = GroupChoices(spec, keys, *composed_ptr, folder.reader(), problems);
    if (!choices.empty()) composed_ptr = folder.Compose(name, choices);
  }
  const ComposedConfig& composed = *composed_ptr;
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
