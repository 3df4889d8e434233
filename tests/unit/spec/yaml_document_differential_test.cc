// ParseYamlDocument builds its tree from libfyaml's events; until it did, yaml-cpp built it. The
// two must agree on every YAML file the repository holds, on every prefix of those files (cut
// at each line, to reach the error paths), and on a table of awkward inputs: the same tree with
// the same positions, or the same diagnostics. The few intentional differences are listed in
// IntendedDifferences() with the reason for each.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/status_model.h"
#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/status_codec.h"
#include "reconciler/spec/yaml_document.h"
#include "tests/support/sanitizer.h"
#include "tests/support/test_files.h"
#include "tests/unit/spec/diagnostic_messages.h"
#include "tests/unit/spec/yaml_document_legacy.h"

namespace rg::spec {
namespace {

namespace fs = std::filesystem;

std::string PosText(core::SourcePos pos) {
  return std::to_string(pos.line) + ":" + std::to_string(pos.column);
}

// The first difference between two trees, as "where: what", or "" when they are the same.
std::string FirstDifference(const YamlNode& a, const YamlNode& b, const std::string& where) {
  if (a.kind != b.kind) return where + ": kinds differ";
  if (a.pos.line != b.pos.line || a.pos.column != b.pos.column) {
    return where + ": positions differ (" + PosText(a.pos) + " vs " + PosText(b.pos) + ")";
  }
  // yaml-cpp made the escapes "\_" and "\N" single Latin-1 bytes, libfyaml makes them UTF-8;
  // both builders refuse such a string with the same diagnostic, which the caller compares.
  const bool latin1_escape = b.is_string() && !IsUtf8(b.text) && IsUtf8(a.text);
  if (!(a.scalar == b.scalar) && !latin1_escape) return where + ": values differ";
  if (a.text != b.text && !latin1_escape) {
    return where + ": texts differ (\"" + a.text + "\" vs \"" + b.text + "\")";
  }
  if (a.items.size() != b.items.size()) return where + ": list lengths differ";
  for (size_t i = 0; i < a.items.size(); ++i) {
    std::string diff =
        FirstDifference(a.items[i], b.items[i], where + "[" + std::to_string(i) + "]");
    if (!diff.empty()) return diff;
  }
  if (a.entries.size() != b.entries.size()) return where + ": mapping sizes differ";
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const YamlEntry& x = a.entries[i];
    const YamlEntry& y = b.entries[i];
    if (x.key != y.key) return where + ": keys differ (\"" + x.key + "\" vs \"" + y.key + "\")";
    if (x.key_pos.line != y.key_pos.line || x.key_pos.column != y.key_pos.column) {
      return where + "." + x.key + ": key positions differ (" + PosText(x.key_pos) + " vs " +
             PosText(y.key_pos) + ")";
    }
    std::string diff = FirstDifference(x.value, y.value, where + "." + x.key);
    if (!diff.empty()) return diff;
  }
  return "";
}

std::string FirstDifference(const YamlParse& now, const YamlParse& before) {
  if (Messages(now.diagnostics) != Messages(before.diagnostics)) {
    std::string out = "diagnostics differ:\n  now:";
    for (const auto& m : Messages(now.diagnostics)) out += "\n    " + m;
    out += "\n  before:";
    for (const auto& m : Messages(before.diagnostics)) out += "\n    " + m;
    return out;
  }
  if (now.root.has_value() != before.root.has_value()) return "one has a tree, one has not";
  if (!now.root) return "";
  return FirstDifference(*now.root, *before.root, "root");
}

// Inputs on which the two builders differ on purpose. Each is checked to give what it gives
// now, so that a change to either side shows up here.
struct IntendedDifference {
  std::string text;
  std::vector<std::string> now;  // the diagnostics ParseYamlDocument gives
  std::string reason;
};

std::string DeepFlowSequence(int depth) {
  return "a: " + std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']') + "\n";
}

const std::vector<IntendedDifference>& IntendedDifferences() {
  static const std::vector<IntendedDifference> differences = {
      {DeepFlowSequence(600),
       {"t.yaml:1:502: error: the document is nested too deeply"},
       "nesting too deep is placed at the node that goes too deep; yaml-cpp placed it where its "
       "scanner had read to, which in flow context is the end of the collection"},
      {"...\n",
       {"t.yaml: error: the file is empty (expected a mapping of fields)"},
       "a stream of only a document end marker holds no document (YAML 1.2); yaml-cpp read one "
       "empty document, which the loaders refused as empty too"},
      {"a: !x,y 1\n",
       {"t.yaml:1:6: error: cannot read the YAML from here on"},
       "a tag shorthand may not hold a flow indicator; yaml-cpp ended the tag there and "
       "failed on what followed (\"end of map not found\")"},
      {"- !a[b c\n",
       {"t.yaml:1:5: error: cannot read the YAML from here on"},
       "as above (yaml-cpp: \"end of sequence flow not found\" at 2:1)"},
      // tests/fuzz/regressions/status_codec/libfyaml-leak-escaped-quotes
      {"!" + std::string(42, '\'') + "!!str " + std::string(86, '\''),
       {"t.yaml:1:1: error: unsupported tag \"!" + std::string(42, '\'') +
        "!!str\" (only !!str is)"},
       "a tag libfyaml reads as a local tag is refused as a tag we do not support; yaml-cpp's "
       "scanner refused its quote (\"illegal character found while scanning tag handle\" at "
       "1:2). Both refuse the file"},
  };
  return differences;
}

bool IsIntendedDifference(std::string_view text) {
  return std::any_of(IntendedDifferences().begin(), IntendedDifferences().end(),
                     [&](const IntendedDifference& d) { return d.text == text; });
}

// Awkward inputs the repository's files may not hold: styles, tags, anchors, empty nodes,
// several documents, errors.
const std::vector<std::string>& AwkwardInputs() {
  static const std::vector<std::string> inputs = {
      "",
      "# only a comment\n",
      "---\n",
      "--- # c\n",
      "...\n",
      "a: 1\n---\n",
      "a: 1\n---\nb: 2\n",
      "a: 1\n...\n---\nb: 2\n---\nc: 3\n",
      "a:\nb: ~\nc: null\nd: Null\ne: NULL\nf: ''\ng: \"\"\n",
      "- \n- x\n- \n",
      "- \n-\n- # c\n  \n- y\n",
      "a:\n  - \n  -\nb: 1\n",
      "[a, b, {c: d}, [e]]\n",
      "{a: 1, b: [2, 3], c: {d: e}}\n",
      "{a, b: c}\n",
      "[a: 1, b: 2]\n",
      "a: &x 1\nb: *x\n",
      "a: &x\n  k: v\nb: *x\nc: [*x, *x]\n",
      "a: &x {k: v, k: w}\nb: *x\n",
      "a: &x !!binary abc\nb: *x\n",
      "a: &x\nb: *x\n",
      "a: *nothing\n",
      "a: &x [*x]\n",
      "<<: {a: 1}\nb: 2\n",
      "base: &b {a: 1}\nderived:\n  <<: *b\n  c: 2\n",
      "a: !!str 1\nb: !!int 2\nc: !!float 3\nd: !!bool true\ne: !!null ~\nf: !foo x\ng: ! 7\n",
      "a: !<tag:yaml.org,2002:str> 1\n",
      "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n",
      "a: !!str\nb: !foo\nc: 1\n",
      "!!map {a: 1}\n",
      "- !!seq [1]\n- !!str [1]\n",
      "a: 'it''s'\nb: \"q\\\"t\\n\\t\\x41\\u00e9\\U0001F600\"\nc: \"\\0\"\n",
      "a: \"x\\_y\"\nb: \"x\\\\_y\"\nc: \"\\N\"\n",
      "a: |\n  line 1\n  line 2\nb: >\n  folded\n  text\n\n  more\nc: |-\n  x\nd: |+\n  y\n\ne: "
      "1\n",
      "a: plain\n  continued\n  lines\nb: 'single\n  quoted'\nc: \"double\n  quoted\"\n",
      "a: 1\nb: -2\nc: +3\nd: 0x1F\ne: 0o17\nf: 1.5\ng: -.5\nh: 1e9\ni: .inf\nj: .nan\nk: 1_000\n"
      "l: 9223372036854775808\nm: true\nn: False\no: yes\np: 012\n",
      "1: a\ntrue: b\nnull: c\n~: d\n[x]: e\n{y: z}: f\n",
      "? a\n: 1\n? b\n",
      "? |\n  block key\n: v\n",
      "a: 1\na: 2\nb: {c: 1, c: 2}\n",
      "\"quoted key\": 1\n'single': 2\n",
      "a: b: c\n",
      "a: [1, 2\n",
      "a: \"unterminated\n",
      "key with no colon\n",
      "a:\n\tb: 1\n",
      "a: 1\r\nb: [x,\r\n  y]\r\n",
      "\xef\xbb\xbf"
      "a: 1\n",
      "a: caf\xc3\xa9\nb: \xc3\xa9\xc3\xa9: x\n\xc3\xa9: [\xc3\xa9, 1]\n",
      "!a,b\n",
      "a: !x,y 1\n",
      "- !a[b c\n",
      "a: &anchor\n  b: &inner [1, 2]\n  c: *inner\n",
      "- - - x\n    - y\n  - z\n",
      "- a: 1\n  b: 2\n- c: 3\n",
      "a:\n  b:\n    c:\n      d: [1, {e: f}]\n",
      "hello\n",
      "- a\n- b\n",
      "\"just a string\"\n",
      "a: 1 # comment\n# more\nb: 2 #\n",
      "a: @x\n",
      "a: `x\n",
      "a: 1\n  b: 2\n",
      "%YAML 1.1\n---\na: yes\n",
      "%YAML 1.2\n---\na: 1\n",
      "--- |\n  text\n",
      "--- >-\n  folded\n",
      "--- 'q'\n",
      "--- &a [1, *a]\n",
      "a: &a\n  b: *a\n",
  };
  return inputs;
}

bool SkippedDirectory(const fs::path& path) {
  const std::string name = path.filename().string();
  return name == ".git" || name.starts_with("build") || name == "node_modules" || name == ".cache";
}

bool IsYamlName(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".yaml" || ext == ".yml";
}

// Every YAML file under `root` (build folders aside), and every file of the YAML fuzz corpora.
std::vector<fs::path> YamlFiles(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory() && SkippedDirectory(it->path())) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    const std::string relative = fs::relative(it->path(), root).generic_string();
    const bool fuzz_corpus = relative.starts_with("tests/fuzz/") &&
                             (relative.find("/spec_loader/") != std::string::npos ||
                              relative.find("/status_codec/") != std::string::npos);
    if (IsYamlName(it->path()) || fuzz_corpus) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The text cut after some of its lines (at most about 40 cuts, evenly spread), the whole text
// last.
std::vector<std::string> LinePrefixes(const std::string& text) {
  std::vector<size_t> ends;
  for (size_t i = text.find('\n'); i != std::string::npos && i + 1 < text.size();
       i = text.find('\n', i + 1)) {
    ends.push_back(i + 1);
  }
  const size_t step = ends.size() / 40 + 1;
  std::vector<std::string> out;
  for (size_t k = 0; k < ends.size(); k += step) out.push_back(text.substr(0, ends[k]));
  out.push_back(text);
  return out;
}

bool IsNestedTooDeeply(const YamlParse& parse) {
  return !parse.root && parse.diagnostics.size() == 1 &&
         parse.diagnostics[0].message == "the document is nested too deeply";
}

struct Tally {
  int compared = 0;
  int rejected_by_both = 0;
  int intended = 0;
  std::vector<std::string> failures;

  void Compare(const std::string& text, const std::string& name) {
    if (IsIntendedDifference(text)) {
      ++intended;
      return;
    }
    const YamlParse now = ParseYamlDocument(text, "t.yaml");
    const YamlParse before = ParseYamlDocumentLegacy(text, "t.yaml");
    // Nesting too deep is placed differently on purpose (see IntendedDifferences()).
    if (IsNestedTooDeeply(now) && IsNestedTooDeeply(before)) {
      ++intended;
      return;
    }
    ++compared;
    if (!now.root && !before.root) ++rejected_by_both;
    const std::string diff = FirstDifference(now, before);
    if (!diff.empty()) failures.push_back(name + ": " + diff);
  }

  void Report(const char* what) const {
    std::printf("%s: %d inputs compared (%d rejected by both), %d intended differences\n", what,
                compared, rejected_by_both, intended);
    for (size_t i = 0; i < failures.size() && i < 20; ++i) {
      std::printf("  %s\n", failures[i].c_str());
    }
  }
};

// Under ASan a parse costs about ten times as much, and every line prefix of every file is a
// parse: the debug suite compares every prefix, the ASan suite every fifth (docs/testing.md,
// "The ASan+UBSan stage").
#if defined(RG_UNDER_ASAN)
constexpr size_t kPrefixStride = 5;
#else
constexpr size_t kPrefixStride = 1;
#endif

TEST_CASE("the libfyaml builder agrees with the yaml-cpp builder on the repository's YAML") {
  std::vector<fs::path> files = YamlFiles(RG_SOURCE_DIR);
  // verl's Hydra configs, when scripts/install-deps.sh has unpacked them.
  std::error_code ec;
  if (fs::is_directory(RG_VERL_CONFIG_DIR, ec)) {
    for (const fs::path& path : YamlFiles(RG_VERL_CONFIG_DIR)) files.push_back(path);
  }
  REQUIRE(files.size() > 50);
  Tally whole;
  Tally prefixes;
  for (const fs::path& path : files) {
    const std::string text = testing::ReadFileText(path);
    const std::string name = fs::relative(path, RG_SOURCE_DIR).generic_string();
    whole.Compare(text, name);
    const std::vector<std::string> cuts = LinePrefixes(text);
    for (size_t i = 0; i + 1 < cuts.size(); i += kPrefixStride) {
      prefixes.Compare(cuts[i], name + " (cut " + std::to_string(i + 1) + ")");
    }
  }
  std::printf("%zu files\n", files.size());
  whole.Report("whole files");
  prefixes.Report("line prefixes");
  CHECK(whole.failures.empty());
  CHECK(prefixes.failures.empty());
}

TEST_CASE("the libfyaml builder agrees with the yaml-cpp builder on awkward inputs") {
  Tally tally;
  for (const std::string& text : AwkwardInputs()) tally.Compare(text, "\"" + text + "\"");
  tally.Report("awkward inputs");
  CHECK(tally.failures.empty());
}

TEST_CASE("the builders' intended differences give what they are meant to") {
  for (const IntendedDifference& difference : IntendedDifferences()) {
    DYNAMIC_SECTION(difference.reason) {
      const YamlParse now = ParseYamlDocument(difference.text, "t.yaml");
      CHECK(Messages(now.diagnostics) == difference.now);
    }
  }
}

TEST_CASE("an alias bomb is refused quickly, before it is expanded") {
  // Nine levels of ten aliases each: a billion nodes if expanded.
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  const auto start = std::chrono::steady_clock::now();
  const YamlParse parse = ParseYamlDocument(text, "t.yaml");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK_FALSE(parse.root);
  // Stopped inside the ninth expansion of a0's list, at one of its items.
  CHECK(Messages(parse.diagnostics) ==
        std::vector<std::string>{
            "t.yaml:1:22: error: document too large after alias expansion (more than 100000 "
            "nodes)"});
  CHECK(Messages(ParseYamlDocumentLegacy(text, "t.yaml").diagnostics) ==
        Messages(parse.diagnostics));
  // The budget stops it after 100000 nodes, a few milliseconds even in a debug build.
  CHECK(elapsed < std::chrono::seconds(5));
}

TEST_CASE("parsing speed of the libfyaml and yaml-cpp builders", "[.bench]") {
  const std::string spec = testing::ReadFileText(fs::path(RG_SOURCE_DIR) /
                                                 "examples/repo/jobs/ppo/qwen2.5-0.5b-gsm8k.yaml");
  core::StatusRecord record;
  record.name = "ppo-qwen";
  record.spec_path = "jobs/ppo/qwen.yaml";
  record.spec_hash = "3f2a1c9b0e";
  record.spec_commit = "0123456789abcdef0123456789abcdef01234567";
  record.phase = core::Phase::kRunning;
  record.submission_id = "ppo-qwen-3f2a1c9b0e-r1";
  record.attempt = 1;
  record.status = core::RayJobStatus::kRunning;
  record.message = "Job is currently running";
  record.job_id = "02000000";
  record.start_time_ms = 1795000000123;
  record.dashboard_url = "http://127.0.0.1:8265/#/jobs/ppo-qwen-3f2a1c9b0e-r1";
  for (int i = 0; i < 2; ++i) {
    core::AttemptRecord attempt;
    attempt.attempt = i;
    attempt.submission_id = "ppo-qwen-3f2a1c9b0e-r" + std::to_string(i);
    attempt.spec_hash = "3f2a1c9b0e";
    attempt.status = core::RayJobStatus::kFailed;
    attempt.phase = core::Phase::kFailed;
    attempt.start_time_ms = 1794990000000;
    attempt.end_time_ms = 1794999000000;
    attempt.message = "Job entrypoint command failed with exit code 1";
    record.attempts.push_back(attempt);
  }
  const std::string status = EncodeStatusYaml(record);
  constexpr int kCopies = 10000;
  auto time = [&](const char* what, const std::string& text, auto parse) {
    size_t nodes = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCopies; ++i) {
      const YamlParse result = parse(text, "t.yaml");
      nodes += result.root ? result.root->entries.size() : 0;
    }
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;
    std::printf("%-30s %8.1f us per file (%zu bytes, %zu top-level keys)\n", what,
                elapsed.count() / kCopies, text.size(), nodes / kCopies);
  };
  time("spec, libfyaml builder", spec, ParseYamlDocument);
  time("spec, yaml-cpp builder", spec, ParseYamlDocumentLegacy);
  time("status, libfyaml builder", status, ParseYamlDocument);
  time("status, yaml-cpp builder", status, ParseYamlDocumentLegacy);
  SUCCEED();
}

}  // namespace
}  // namespace rg::spec
