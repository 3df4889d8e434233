#include "reconciler/spec/yaml_syntax_check.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace rg::spec {
namespace {

std::string SyntaxError(const std::string& text) {
  auto error = FindYamlSyntaxError(text, "jobs/t.yaml");
  return error ? error->ToString() : "well-formed";
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct MalformedCase {
  const char* what;
  const char* text;
  const char* expected;
};

TEST_CASE("a malformed document is one error at its 1-based line and column") {
  const std::vector<MalformedCase> cases = {
      {"an unterminated double quote swallowing the next lines",
       "workload: custom\nentrypoint: \"python train.py\nretries: 3\nsuspend: true\"\n",
       "jobs/t.yaml:2:13: error: wrongly indented double-quoted scalar"},
      {"an unterminated single quote swallowing the next lines",
       "workload: custom\nentrypoint: 'python train.py\nretries: 3\non_remove: keep'\n",
       "jobs/t.yaml:2:13: error: wrongly indented single-quoted scalar"},
      {"a double quote never closed before the end", "workload: custom\nentrypoint: \"echo",
       "jobs/t.yaml:2:14: error: double-quoted scalar without closing quote"},
      {"a missing colon after a key", "workload: custom\nretries 3\nsuspend: true\n",
       "jobs/t.yaml:2:1: error: could not find expected ':'"},
      {"a missing colon on the last key", "workload: custom\nretries 3\n",
       "jobs/t.yaml:2:1: error: invalid value after mapping"},
      {"a plain scalar after a mapping", "workload: custom\nretries: 3\nsuspend\n",
       "jobs/t.yaml:3:1: error: invalid value after mapping"},
      {"a second key on the line of a value", "workload: custom\nentrypoint: echo hi retries: 3\n",
       "jobs/t.yaml:2:28: error: invalid nested block mapping on the same line"},
      {"content after the document end marker", "---\nworkload: custom\n... suspend\n",
       "jobs/t.yaml:3:5: error: invalid content after document end marker"},
      {"a flow sequence left open before the next key",
       "workload: ppo\noverrides: [a=1,\nnnodes: 2]\n",
       "jobs/t.yaml:3:1: error: wrongly indented flow sequence"},
      {"a flow sequence left open to the end", "workload: ppo\noverrides: [a=1, b=2\n",
       "jobs/t.yaml:3:1: error: flow sequence without a closing bracket"},
      {"a flow mapping left open before the next key",
       "workload: custom\nenv_vars: {A: 1,\nretries: 3}\n",
       "jobs/t.yaml:3:1: error: wrongly indented flow mapping"},
      {"text after a closing quote", "workload: custom\nentrypoint: \"echo hi\" --now\n",
       "jobs/t.yaml:2:23: error: invalid trailing content after double-quoted scalar"},
      {"an unknown escape", "entrypoint: \"echo \\q\"\n",
       "jobs/t.yaml:1:19: error: invalid escape 'q' in double-quoted string"},
      {"a key indented deeper than its siblings", "workload: custom\n  retries: 3\n",
       "jobs/t.yaml:1:11: error: invalid multiline plain key"},
      {"a tab as indentation", "env_vars:\n\tA: 1\n",
       "jobs/t.yaml:2:1: error: tab character may not be used as indentation"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.what) { CHECK(SyntaxError(c.text) == c.expected); }
  }
}

TEST_CASE("well-formed streams pass, whatever they hold") {
  const std::vector<std::string> cases = {
      "",
      "# only a comment\n",
      "---\n",
      "workload: custom\nentrypoint: \"python train.py --name 'run 1'\"\n",
      "entrypoint: 'it''s quoted'\n",
      "entrypoint: >\n  python train.py\n  --epochs 3\nretries: 1\n",
      "entrypoint: |\n  echo one\n  echo two\n",
      "entrypoint: \"a long line\n  continued, indented\"\n",
      "entrypoint: echo \"unbalanced quotes inside a plain scalar are text\n",
      "overrides: [a=1,\n  b=2]\n",
      "overrides:\n- a=1\n- b=2\n",
      "base: &b {A: 1}\nenv_vars: *b\n",
      "a: 1\na: 2\n",  // duplicate keys are the document builder's to report
      "a: 1\n---\nb: 2\n",
      "a: 1\n...\n# trailing comment\n",
      "\xef\xbb\xbfworkload: custom\r\nentrypoint: \"echo\tone\"\r\n",
      "%YAML 1.2\n---\na: 1\n",
      "a: !!str 1\n",
  };
  for (const auto& text : cases) {
    INFO(text);
    CHECK(SyntaxError(text) == "well-formed");
  }
}

TEST_CASE("every YAML file of the examples and the valid fixtures is well-formed") {
  const std::filesystem::path source(RG_SOURCE_DIR);
  int checked = 0;
  for (const char* dir :
       {"examples/repo", "tests/data/spec/valid-repo", "tests/data/render", "tests/schema/valid"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(source / dir)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".yaml" && ext != ".yml")) continue;
      // Hidden folders (drafts) are never read by the loader; some are broken on purpose.
      if (entry.path().string().find("/.") != std::string::npos) continue;
      INFO(entry.path().string());
      CHECK(SyntaxError(ReadFile(entry.path())) == "well-formed");
      ++checked;
    }
  }
  CHECK(checked > 10);
}

TEST_CASE("every file of the malformed corpus is refused") {
  const std::filesystem::path corpus =
      std::filesystem::path(RG_SOURCE_DIR) / "tests/data/malformed";
  int refused = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(corpus)) {
    if (entry.path().extension() != ".yaml") continue;
    const auto name = entry.path().filename().string();
    if (name == "cluster.yaml" || name == "valid.yaml") continue;
    INFO(entry.path().string());
    auto error = FindYamlSyntaxError(ReadFile(entry.path()), name);
    REQUIRE(error.has_value());
    CHECK(error->line > 0);
    CHECK(error->column > 0);
    ++refused;
  }
  CHECK(refused >= 10);
}

TEST_CASE("libfyaml prints nothing, not even for a malformed document") {
  std::FILE* capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  std::fflush(stderr);
  const int saved = dup(fileno(stderr));
  REQUIRE(saved >= 0);
  REQUIRE(dup2(fileno(capture), fileno(stderr)) >= 0);
  const std::string malformed = SyntaxError("a: \"open\nb: 1\n");
  const std::string well_formed = SyntaxError("a: 1\n");
  std::fflush(stderr);
  dup2(saved, fileno(stderr));
  close(saved);
  std::fseek(capture, 0, SEEK_END);
  const long printed = std::ftell(capture);
  std::fclose(capture);
  CHECK(malformed == "jobs/t.yaml:1:4: error: wrongly indented double-quoted scalar");
  CHECK(well_formed == "well-formed");
  CHECK(printed == 0);
}

// No wall-clock bound here (it would flake on a loaded machine): a check that went
// exponential or recursed 100,000 levels deep would hit ctest's timeout or the stack.
TEST_CASE("deep flow nesting is left to the document builder") {
  const std::string deep = "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  CHECK(SyntaxError(deep) == "well-formed");
}

}  // namespace
}  // namespace rg::spec
