#include "reconciler/core/code_package.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "reconciler/core/identity.h"

namespace rg::core {

std::string CodePackageKey(std::string_view tree_id) {
  std::string input = "ray-gitops code zip " + std::to_string(kCodeZipFormat) + "\n";
  input += tree_id;
  return Sha256Hex(input).substr(0, 40);
}

std::string CodePackageName(std::string_view tree_id) {
  return "_ray_pkg_" + CodePackageKey(tree_id) + ".zip";
}

std::string CodePackageUri(std::string_view tree_id) { return "gcs://" + CodePackageName(tree_id); }

namespace {

// Outcomes of matching a pattern's tail, as git's wildmatch has them: kAbortAll tells every
// enclosing star that no later start can match either (the text ran out), kAbortToStarStar
// that only a `**` further out may still match (a `*` met a '/').
enum class Match { kMatch, kNoMatch, kAbortAll, kAbortToStarStar };

// Whether `c` is in the POSIX class `name` ("alpha", "digit", ...); nullopt for an unknown name.
std::optional<bool> InCharClass(std::string_view name, unsigned char c) {
  const int ch = c;
  if (name == "alnum") return std::isalnum(ch) != 0;
  if (name == "alpha") return std::isalpha(ch) != 0;
  if (name == "blank") return ch == ' ' || ch == '\t';
  if (name == "cntrl") return std::iscntrl(ch) != 0;
  if (name == "digit") return std::isdigit(ch) != 0;
  if (name == "graph") return std::isgraph(ch) != 0;
  if (name == "lower") return std::islower(ch) != 0;
  if (name == "print") return std::isprint(ch) != 0;
  if (name == "punct") return std::ispunct(ch) != 0;
  if (name == "space") return std::isspace(ch) != 0;
  if (name == "upper") return std::isupper(ch) != 0;
  if (name == "xdigit") return std::isxdigit(ch) != 0;
  return std::nullopt;
}

// Matches the bracket expression starting after the '[' at p[pi] against `tc`; on return `pi`
// is at its closing ']'. nullopt for a malformed expression (no closing ']', unknown class).
std::optional<bool> MatchBracket(std::string_view p, size_t& pi, unsigned char tc) {
  bool negated = false;
  if (pi < p.size() && (p[pi] == '!' || p[pi] == '^')) {
    negated = true;
    ++pi;
  }
  bool matched = false;
  int prev = -1;  // the last single character, the start of a possible range
  for (bool first = true;; first = false, ++pi) {
    if (pi >= p.size()) return std::nullopt;
    auto c = static_cast<unsigned char>(p[pi]);
    if (c == ']' && !first) break;
    if (c == '\\') {
      if (++pi >= p.size()) return std::nullopt;
      c = static_cast<unsigned char>(p[pi]);
    } else if (c == '-' && prev >= 0 && pi + 1 < p.size() && p[pi + 1] != ']') {
      c = static_cast<unsigned char>(p[++pi]);
      if (c == '\\') {
        if (++pi >= p.size()) return std::nullopt;
        c = static_cast<unsigned char>(p[pi]);
      }
      if (tc >= prev && tc <= c) matched = true;
      prev = -1;
      continue;
    } else if (c == '[' && pi + 1 < p.size() && p[pi + 1] == ':') {
      const size_t end = p.find(":]", pi + 2);
      if (end != std::string_view::npos) {
        const auto in = InCharClass(p.substr(pi + 2, end - pi - 2), tc);
        if (!in) return std::nullopt;
        matched = matched || *in;
        pi = end + 1;
        prev = -1;
        continue;
      }
    }
    if (tc == c) matched = true;
    prev = c;
  }
  return matched != negated;
}

Match DoWild(std::string_view p, std::string_view t, bool pathname);

// The star(s) at p[pi]: tries every split of the rest of `t` from `ti` on.
Match MatchStar(std::string_view p, size_t pi, std::string_view t, size_t ti, bool pathname) {
  const size_t stars_begin = pi;
  while (pi < p.size() && p[pi] == '*') ++pi;
  bool match_slash = !pathname;
  if (pathname && pi - stars_begin >= 2) {
    const bool at_start = stars_begin == 0 || p[stars_begin - 1] == '/';
    const bool at_end = pi == p.size() || p[pi] == '/';
    if (at_start && at_end) {
      // "**/" may stand for no folder at all.
      if (pi < p.size() && DoWild(p.substr(pi + 1), t.substr(ti), pathname) == Match::kMatch) {
        return Match::kMatch;
      }
      match_slash = true;
    }
  }
  const std::string_view rest = p.substr(pi);
  if (rest.empty()) {
    if (!match_slash && t.find('/', ti) != std::string_view::npos) return Match::kAbortToStarStar;
    return Match::kMatch;
  }
  for (; ti < t.size(); ++ti) {
    const Match m = DoWild(rest, t.substr(ti), pathname);
    if (m != Match::kNoMatch) {
      if (!match_slash || m != Match::kAbortToStarStar) return m;
    } else if (!match_slash && t[ti] == '/') {
      return Match::kAbortToStarStar;
    }
  }
  return Match::kAbortAll;
}

Match DoWild(std::string_view p, std::string_view t, bool pathname) {
  size_t ti = 0;
  for (size_t pi = 0; pi < p.size(); ++pi, ++ti) {
    char pc = p[pi];
    if (pc == '*') return MatchStar(p, pi, t, ti, pathname);
    if (ti >= t.size()) return Match::kAbortAll;
    const auto tc = static_cast<unsigned char>(t[ti]);
    if (pc == '?') {
      if (pathname && tc == '/') return Match::kNoMatch;
      continue;
    }
    if (pc == '[') {
      ++pi;
      const auto in = MatchBracket(p, pi, tc);
      if (!in) return Match::kAbortAll;
      if (!*in || (pathname && tc == '/')) return Match::kNoMatch;
      continue;
    }
    if (pc == '\\') {
      if (pi + 1 == p.size()) return Match::kNoMatch;  // a lone '\' at the end matches nothing
      pc = p[++pi];
    }
    if (static_cast<unsigned char>(pc) != tc) return Match::kNoMatch;
  }
  return ti == t.size() ? Match::kMatch : Match::kNoMatch;
}

constexpr std::string_view kBlank = " \t\r\n";

// A C-quoted string starting at text[0] == '"' (git's quoting of odd path names): the
// unquoted bytes and the length consumed, or nullopt when it is not well formed.
std::optional<std::pair<std::string, size_t>> UnquoteC(std::string_view text) {
  std::string out;
  for (size_t i = 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') return std::make_pair(std::move(out), i + 1);
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= text.size()) return std::nullopt;
    const std::string_view simple = "a\ab\bf\fn\nr\rt\tv\v\\\\\"\"";
    const char e = text[i];
    if (const size_t at = simple.find(e); at != std::string_view::npos && at % 2 == 0) {
      out += simple[at + 1];
    } else if (e >= '0' && e <= '3' && i + 2 < text.size() && text[i + 1] >= '0' &&
               text[i + 1] <= '7' && text[i + 2] >= '0' && text[i + 2] <= '7') {
      out += static_cast<char>(((e - '0') << 6) | ((text[i + 1] - '0') << 3) | (text[i + 2] - '0'));
      i += 2;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// git's rule for attribute names: [-._0-9a-zA-Z]+, not starting with '-'.
bool IsValidAttributeName(std::string_view name) {
  if (name.empty() || name.front() == '-') return false;
  return std::ranges::all_of(name, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
  });
}

// The attributes of one line's list (or of a macro definition), in order; nullopt when an
// attribute name is invalid (git then skips the whole line).
std::optional<std::vector<AttributeAssignment>> ParseAssignments(std::string_view states) {
  std::vector<AttributeAssignment> out;
  while (true) {
    const size_t begin = states.find_first_not_of(kBlank);
    if (begin == std::string_view::npos) break;
    const size_t end = std::min(states.find_first_of(kBlank, begin), states.size());
    std::string_view token = states.substr(begin, end - begin);
    states = states.substr(end);
    AttributeState state = AttributeState::kSet;
    if (token.front() == '-' || token.front() == '!') {
      state = token.front() == '-' ? AttributeState::kUnset : AttributeState::kUnspecified;
      token.remove_prefix(1);
    } else if (const size_t eq = token.find('='); eq != std::string_view::npos) {
      state = AttributeState::kValue;
      token = token.substr(0, eq);
    }
    if (!IsValidAttributeName(token)) return std::nullopt;
    out.push_back({std::string(token), state});
  }
  return out;
}

constexpr std::string_view kExportIgnore = "export-ignore";
constexpr std::string_view kMacroPrefix = "[attr]";

// The rule for `pattern` as git's parse_path_pattern reads it.
AttributeRule MakeRule(std::string pattern, std::vector<AttributeAssignment> assignments) {
  AttributeRule rule;
  rule.assignments = std::move(assignments);
  if (!pattern.empty() && pattern.back() == '/') {
    rule.directory_only = true;
    pattern.pop_back();
  }
  rule.basename_only = pattern.find('/') == std::string::npos;
  if (!rule.basename_only && pattern.front() == '/') pattern.erase(0, 1);
  rule.pattern = std::move(pattern);
  return rule;
}

// One non-blank, non-comment line: its pattern (unquoted) and its attribute list; nullopt for
// a blank line, a comment or a malformed quoted pattern's line read as written.
std::optional<std::pair<std::string, std::string_view>> SplitLine(std::string_view line) {
  const size_t begin = line.find_first_not_of(kBlank);
  if (begin == std::string_view::npos || line[begin] == '#') return std::nullopt;
  line = line.substr(begin);
  const auto quoted = line.front() == '"' ? UnquoteC(line) : std::nullopt;
  if (quoted) return std::make_pair(quoted->first, line.substr(quoted->second));
  const size_t end = std::min(line.find_first_of(kBlank), line.size());
  return std::make_pair(std::string(line.substr(0, end)), line.substr(end));
}

// The rule of one line, or nullopt for a line that cannot decide export-ignore.
std::optional<AttributeRule> ParseLine(std::string_view line, const AttributeMacros& macros) {
  auto split = SplitLine(line);
  if (!split) return std::nullopt;
  auto& [pattern, states] = *split;
  if (pattern.empty() || pattern.starts_with(kMacroPrefix) || pattern.front() == '!') {
    return std::nullopt;
  }
  auto assignments = ParseAssignments(states);
  if (!assignments) return std::nullopt;
  std::erase_if(*assignments, [&](const AttributeAssignment& a) {
    return a.name != kExportIgnore && !macros.contains(a.name);
  });
  if (assignments->empty()) return std::nullopt;
  return MakeRule(std::move(pattern), std::move(*assignments));
}

// Calls `each` with every line of `text`.
template <typename Each>
void ForEachLine(std::string_view text, Each each) {
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    each(text.substr(0, end));
    text = text.substr(std::min(end + 1, text.size()));
  }
}

}  // namespace

bool WildMatch(std::string_view pattern, std::string_view text, bool pathname) {
  return DoWild(pattern, text, pathname) == Match::kMatch;
}

AttributeMacros ParseAttributeMacros(std::string_view text) {
  AttributeMacros macros;
  ForEachLine(text, [&](std::string_view line) {
    const size_t begin = line.find_first_not_of(kBlank);
    if (begin == std::string_view::npos || !line.substr(begin).starts_with(kMacroPrefix)) return;
    line = line.substr(begin + kMacroPrefix.size());
    const size_t end = std::min(line.find_first_of(kBlank), line.size());
    const std::string_view name = line.substr(0, end);
    auto assignments = ParseAssignments(line.substr(end));
    if (!IsValidAttributeName(name) || !assignments) return;
    macros.insert_or_assign(std::string(name), std::move(*assignments));
  });
  return macros;
}

std::vector<AttributeRule> ParseExportIgnoreRules(std::string_view text,
                                                  const AttributeMacros& macros) {
  std::vector<AttributeRule> rules;
  ForEachLine(text, [&](std::string_view line) {
    if (auto rule = ParseLine(line, macros)) rules.push_back(std::move(*rule));
  });
  return rules;
}

bool RuleMatches(const AttributeRule& rule, std::string_view path, bool is_directory) {
  if (rule.directory_only && !is_directory) return false;
  if (rule.basename_only) {
    const size_t slash = path.rfind('/');
    const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    return WildMatch(rule.pattern, name, false);
  }
  // As git does, the pattern's literal head is compared on its own and the rest matched after
  // it, so a `**` right after the head counts as standing at the start.
  const std::string_view pattern = rule.pattern;
  const size_t head = std::min(pattern.find_first_of("*?[\\"), pattern.size());
  if (path.substr(0, head) != pattern.substr(0, head)) return false;
  if (head == pattern.size()) return path.size() == head;
  return WildMatch(pattern.substr(head), path.substr(head), true);
}

void ExportIgnoreMatcher::AddAttributesFile(std::string_view dir, std::string_view text) {
  if (dir.empty()) macros_ = ParseAttributeMacros(text);
  auto rules = ParseExportIgnoreRules(text, macros_);
  if (rules.empty()) return;
  auto& into = rules_[std::string(dir)];
  into.insert(into.end(), rules.begin(), rules.end());
}

namespace {

// git's fill of one attribute: the first value met wins; a macro filled as set expands to
// its own attributes, last first. True once export-ignore has its value (in `result`).
bool FillAttribute(const AttributeMacros& macros, const AttributeAssignment& a,
                   std::vector<std::string_view>& filled, AttributeState& result) {
  if (std::ranges::find(filled, a.name) != filled.end()) return false;
  filled.push_back(a.name);
  if (a.name == kExportIgnore) {
    result = a.state;
    return true;
  }
  if (a.state != AttributeState::kSet) return false;
  const auto macro = macros.find(a.name);
  if (macro == macros.end()) return false;
  const std::vector<AttributeAssignment>& inner = macro->second;
  for (size_t i = inner.size(); i-- > 0;) {
    if (FillAttribute(macros, inner[i], filled, result)) return true;
  }
  return false;
}

}  // namespace

bool ExportIgnoreMatcher::IsExportIgnored(std::string_view path, bool is_directory) const {
  // The matching rules, shallow to deep and in file order; git reads them backwards.
  std::vector<const AttributeRule*> matched;
  const auto collect = [&](std::string_view dir) {
    const auto it = rules_.find(dir);
    if (it == rules_.end()) return;
    const std::string_view relative = dir.empty() ? path : path.substr(dir.size() + 1);
    for (const AttributeRule& rule : it->second) {
      if (RuleMatches(rule, relative, is_directory)) matched.push_back(&rule);
    }
  };
  collect("");
  for (size_t slash = path.find('/'); slash != std::string_view::npos;
       slash = path.find('/', slash + 1)) {
    collect(path.substr(0, slash));
  }
  AttributeState state = AttributeState::kUnspecified;
  std::vector<std::string_view> filled;
  for (size_t r = matched.size(); r-- > 0;) {
    const std::vector<AttributeAssignment>& assignments = matched[r]->assignments;
    for (size_t a = assignments.size(); a-- > 0;) {
      if (FillAttribute(macros_, assignments[a], filled, state)) {
        return state == AttributeState::kSet;
      }
    }
  }
  return false;
}

}  // namespace rg::core
