#pragma once
// The Hydra keys a verl trainer run sets, checked against verl's own config (`validate
// --verl-config DIR`). verl's config folder is composed the way Hydra composes it: a config's
// `defaults` list loads `group@package: option` as `<group>/<option>.yaml` at `package`,
// groups relative to the containing config's folder (`../optim`), option names interpolated
// from the choices made so far (`${model_engine}_actor`), `_self_` placing the config's own
// keys, `optional` entries that may be missing, `null` options skipped, `override group:
// option` and the `# @package` header (`_global_` included). Only the resulting key tree
// matters here; values are kept as read, never interpolated.
//
// The rules for an override `key=value` (what Hydra does with its config in struct mode):
// - `key=value`: the key must exist. A key below an empty mapping (`{}`) or a null value does
//   not exist either: Hydra refuses it too and says to write `+key=value`.
// - `+key=value`: the key must not exist ("Could not append to config. An item is already
//   at ..."). Its parents need not exist; the nearest existing one must be a mapping or null.
// - `++key=value`: adds or overrides; the nearest existing parent must be a mapping or null.
// - `~key` and `~key=value`: the key must exist.
// - `group=option` or `group@package=option` for a group of the defaults list picks another
//   option for it before composing (`model_engine=megatron`); an unknown option is an error.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/diagnostic.h"
#include "reconciler/core/result.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/core/value.h"

namespace rg::spec {

// Reads a config file by its path below the config folder ("actor/dp_actor.yaml"): its text;
// NotFound when there is no such file; InvalidInput, saying why, when the file lies outside
// the folder (through a symbolic link) and nothing was read. The composer asks only for paths
// that stay inside the folder as written (InsideConfigFolder).
using ConfigReader = std::function<core::Result<std::string>(const std::string& path)>;

// Reads files below `dir` on disk, never outside it: a path is resolved and must land inside
// the folder, symbolic links that stay inside followed. `within` (the repository, when the
// folder is one under review; empty otherwise): the folder itself must lie inside it, else
// every read is refused. At most kMaxSpecFileBytes + 1 bytes of a file are read (the YAML
// parser refuses more).
ConfigReader DirectoryConfigReader(const std::string& dir, const std::string& within = "");

// `path` (relative to the config folder) normalised ("actor/../optim/x.yaml" ->
// "optim/x.yaml"), or nullopt when it is empty, absolute, holds a NUL or leaves the folder.
std::optional<std::string> InsideConfigFolder(std::string_view path);

// Bounds on one composition, so that a config folder under review cannot make `validate` run
// for hours or fill memory (a defaults list of 120 entries, each listing 120 more, ...). Each
// file is read and parsed once and each (file, package) composed once; these bound the rest.
// verl 0.9.1's largest composition (ppo_megatron_trainer, any model_engine) reads 19 files,
// follows 24 defaults entries, nests 4 deep and makes 9,996 keys and values (copies while
// merging included; 1,064 keys in the result) holding 140 KiB: the bounds are 16 to 40 times
// that. Crossing one is an error at the defaults entry that crossed it.
inline constexpr int kMaxDefaultsEntries = 1000;       // entries followed, memoised ones too
inline constexpr int kMaxDefaultsDepth = 64;           // defaults lists inside each other
inline constexpr int kMaxPackageParts = 64;            // parts of a package ("a.b.c": 3)
inline constexpr int64_t kMaxComposedNodes = 250000;   // keys and values made while merging
inline constexpr int64_t kMaxComposedBytes = 4 << 20;  // bytes of their keys and strings

// What one composition cost, against the bounds above.
struct CompositionCost {
  int files_read = 0;  // distinct files asked of the reader
  int entries = 0;     // defaults entries followed
  int depth = 0;       // deepest nesting of defaults lists
  int64_t nodes = 0;   // keys and values made while merging
  int64_t bytes = 0;   // bytes of their keys and string values
};

struct ComposedConfig {
  std::optional<core::Value> config;  // set iff `errors` is empty
  // "actor/dp_actor.yaml: ..." for a config that is broken; "ppo_trainer.yaml:12:5: defaults
  // entry \"...\": ..." for an entry that cannot be followed (outside the folder, a cycle, a
  // bound crossed).
  std::vector<std::string> errors;
  // The option each group of the defaults lists took, keyed as a command line names the group:
  // "model_engine", "actor@actor_rollout_ref.actor" (group@package when the entry names one).
  std::map<std::string, std::string> choices;
  CompositionCost cost;
};

// Composes `<config_name>.yaml` with its defaults list. `choices`: group overrides
// ("model_engine" -> "megatron"), applied before the defaults lists are read. A config file
// loaded again at the same package is not composed again: its first composition is merged
// (Hydra refuses a group chosen twice, so a later `override` cannot change it).
ComposedConfig ComposeHydraConfig(const ConfigReader& read, const std::string& config_name,
                                  const std::map<std::string, std::string>& choices = {});

struct ParsedConfigFiles;  // defined in verl_config.cc

// One config folder's files and compositions, kept while a command runs over many specs:
// each file is asked of the reader and parsed once, and each config composed once per set of
// choices (the first kKeptCompositions sets kept). Not thread-safe.
class ConfigFolder {
 public:
  static constexpr size_t kKeptCompositions = 32;

  explicit ConfigFolder(ConfigReader read);
  ~ConfigFolder();
  ConfigFolder(const ConfigFolder&) = delete;
  ConfigFolder& operator=(const ConfigFolder&) = delete;

  const ConfigReader& reader() const { return read_; }

  // ComposeHydraConfig against this folder.
  std::shared_ptr<const ComposedConfig> Compose(
      const std::string& config_name, const std::map<std::string, std::string>& choices = {});

 private:
  ConfigReader read_;
  std::unique_ptr<ParsedConfigFiles> files_;
  std::map<std::pair<std::string, std::map<std::string, std::string>>,
           std::shared_ptr<const ComposedConfig>>
      composed_;
};

// Every key path of the tree, dotted ("trainer.nnodes"), mappings included, lists not entered;
// sorted.
std::vector<std::string> KeyPaths(const core::Value& config);

// One override as Hydra reads it from the command line: `[~|+|++]key[=value]`.
struct HydraOverride {
  enum class Kind { kSet, kAdd, kForceAdd, kDelete };
  Kind kind = Kind::kSet;
  std::string key;
  std::optional<std::string> value;  // the text after the first '=', unquoted as written
};
HydraOverride ParseHydraOverride(std::string_view text);

// What is wrong with the override for this composed config (the rules above); nullopt when it
// is fine. The text is the whole message, "did you mean" included; `config_label` names the
// config in it ("verl's ppo_trainer config").
std::optional<std::string> CheckOverride(const core::Value& config, const HydraOverride& override,
                                         std::string_view config_label);

// The config a workload's trainer reads: "ppo_trainer" (ppo, grpo), "sft_trainer_engine" (sft);
// empty for custom.
std::string_view VerlConfigName(core::Workload workload);

// A Hydra key the rendered entrypoint sets, with the spec field it comes from (the field whose
// line and column an error about it points at): "workload" for the keys ray-gitops adds on its
// own, "overrides[i]" for the spec's overrides.
struct RenderedKey {
  std::string text;  // the override as written, or "key=" for a key ray-gitops renders
  std::string field;
  core::SourcePos pos;
};

// The keys of core::RenderEntrypoint for this spec, in its order, then the spec's overrides.
// `spec_text`: the spec file, read again for the line and column of each override.
// `has_shared_root`: whether the cluster sets one (trainer.default_local_dir depends on it).
std::vector<RenderedKey> RenderedVerlKeys(const core::JobSpec& spec, std::string_view spec_text,
                                          bool has_shared_root);

// A problem with one spec against verl's config, and the field it concerns.
struct VerlKeyProblem {
  core::Diagnostic diagnostic;
  std::string field;
};

// Checks every rendered key of a ppo, grpo or sft spec against `<dir>` composed for its
// workload. Group overrides among the spec's overrides pick options before composing. A config
// that cannot be composed is one problem against the spec at line 0.
std::vector<VerlKeyProblem> CheckVerlKeys(const core::JobSpec& spec, std::string_view spec_text,
                                          bool has_shared_root, ConfigFolder& folder);
std::vector<VerlKeyProblem> CheckVerlKeys(const core::JobSpec& spec, std::string_view spec_text,
                                          bool has_shared_root, const ConfigReader& read);

}  // namespace rg::spec
