#pragma once
// The code package of DESIGN §1.4: its name in Ray's package store, known from the Git tree
// id alone, and the `export-ignore` rules of the .gitattributes files inside the folder that
// decide which files the zip leaves out (as `git archive <commit>:<folder>` does).

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rg::core {

// The version of the zip layout (entry order, times, modes, compression). Changing how the zip
// is built changes this number, and so every package's name.
inline constexpr int kCodeZipFormat = 1;

// First 40 hex digits of SHA-256 over "ray-gitops code zip <kCodeZipFormat>\n<tree_id>".
std::string CodePackageKey(std::string_view tree_id);
// "_ray_pkg_<key>.zip".
std::string CodePackageName(std::string_view tree_id);
// "gcs://_ray_pkg_<key>.zip", the runtime_env.working_dir of a spec with `code`.
std::string CodePackageUri(std::string_view tree_id);

// git's wildmatch: `*` and `?` and `[...]` (ranges, `!`/`^` negation, [:class:]) and `\`
// escapes. With `pathname`, `*`, `?` and `[...]` never match '/', and `**` matches across
// folders where it stands between slashes or at an end ("**/x", "x/**", "x/**/y"); elsewhere
// it is a `*`. Without `pathname`, `*` matches '/' too.
bool WildMatch(std::string_view pattern, std::string_view text, bool pathname);

// What one line of a .gitattributes file says about export-ignore.
enum class AttributeState {
  kSet,          // export-ignore
  kUnset,        // -export-ignore
  kUnspecified,  // !export-ignore
  kValue,        // export-ignore=<value>: a value, so not "set"
};

// A line of a .gitattributes file that names export-ignore.
struct AttributeRule {
  std::string pattern;          // as written, without a leading '/' or a trailing '/'
  bool basename_only = false;   // no '/' in the pattern: matches a name at any depth
  bool directory_only = false;  // written with a trailing '/'
  AttributeState state = AttributeState::kSet;
};

// The rules of a .gitattributes text that mention export-ignore, in file order: blank lines and
// '#' comments skipped; a pattern may be C-quoted ("a b"); `[attr]` macro definitions and
// negative patterns (`!pattern`, which git refuses) are skipped, and so is a line with an
// invalid attribute name (as git does). The last mention of export-ignore on a line counts.
std::vector<AttributeRule> ParseExportIgnoreRules(std::string_view text);

// Whether a rule written in a .gitattributes file matches `path`, both relative to the folder
// holding that file; `is_directory` for a folder's path.
bool RuleMatches(const AttributeRule& rule, std::string_view path, bool is_directory);

// The export-ignore rules of every .gitattributes file inside an archived folder.
class ExportIgnoreMatcher {
 public:
  // Adds the .gitattributes text of folder `dir` (relative to the archived folder, "" for the
  // folder itself, no trailing slash).
  void AddAttributesFile(std::string_view dir, std::string_view text);

  // Whether `path` (relative to the archived folder) has export-ignore set: the rules of the
  // .gitattributes files in the folders above it, shallow to deep and in file order, the last
  // match deciding (so a deeper file wins, and a later line wins within a file).
  bool IsExportIgnored(std::string_view path, bool is_directory) const;

  bool empty() const { return rules_.empty(); }

 private:
  std::map<std::string, std::vector<AttributeRule>, std::less<>> rules_;
};

}  // namespace rg::core
