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

// One attribute of a line: its name and what the line does to it.
struct AttributeAssignment {
  std::string name;
  AttributeState state = AttributeState::kSet;
  bool operator==(const AttributeAssignment&) const = default;
};

// The macros a .gitattributes file defines (`[attr]name attr1 -attr2 ...`): each name and the
// attributes it stands for, in the order written.
using AttributeMacros = std::map<std::string, std::vector<AttributeAssignment>, std::less<>>;

// A line of a .gitattributes file that may decide export-ignore.
struct AttributeRule {
  std::string pattern;          // as written, without a leading '/' or a trailing '/'
  bool basename_only = false;   // no '/' in the pattern: matches a name at any depth
  bool directory_only = false;  // written with a trailing '/'
  // The line's assignments of export-ignore and of macros, in line order (a later one wins).
  std::vector<AttributeAssignment> assignments;
};

// The `[attr]` macro definitions of a .gitattributes text, a later definition of a name
// replacing an earlier one (git honours them only in the top-level file: for `git archive
// <tree>`, the archived folder's own .gitattributes).
AttributeMacros ParseAttributeMacros(std::string_view text);

// The rules of a .gitattributes text that mention export-ignore or one of `macros`, in file
// order: blank lines and '#' comments skipped; a pattern may be C-quoted ("a b"); `[attr]`
// macro definitions and negative patterns (`!pattern`, which git refuses) are skipped, and so
// is a line with an invalid attribute name (as git does).
std::vector<AttributeRule> ParseExportIgnoreRules(std::string_view text,
                                                  const AttributeMacros& macros = {});

// Whether a rule written in a .gitattributes file matches `path`, both relative to the folder
// holding that file; `is_directory` for a folder's path.
bool RuleMatches(const AttributeRule& rule, std::string_view path, bool is_directory);

// The export-ignore rules of every .gitattributes file inside an archived folder.
class ExportIgnoreMatcher {
 public:
  // Adds the .gitattributes text of folder `dir` (relative to the archived folder, "" for the
  // folder itself, no trailing slash). The folder's own file comes first: its `[attr]` macros
  // apply to every file; macros defined deeper are ignored, as git ignores them.
  void AddAttributesFile(std::string_view dir, std::string_view text);

  // Whether `path` (relative to the archived folder) has export-ignore set, as git decides it:
  // the rules of the .gitattributes files in the folders above it, deepest file and last line
  // first, each attribute taking the first value met; a macro met set expands to its
  // attributes there (so `-macro` on a later line keeps an earlier `macro` from expanding).
  bool IsExportIgnored(std::string_view path, bool is_directory) const;

  bool empty() const { return rules_.empty(); }

 private:
  AttributeMacros macros_;
  std::map<std::string, std::vector<AttributeRule>, std::less<>> rules_;
};

}  // namespace rg::core
