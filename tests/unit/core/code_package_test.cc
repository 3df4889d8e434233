#include "reconciler/core/code_package.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace rg::core {
namespace {

constexpr std::string_view kTree = "0123456789abcdef0123456789abcdef01234567";

TEST_CASE("the package name is a hash of the zip format and the tree id", "[code_package]") {
  // sha256("ray-gitops code zip 1\n" + tree), first 40 hex digits, computed outside the project.
  CHECK(CodePackageKey(kTree) == "f55a4dc7d133e46077d66261151b9df174ebb037");
  CHECK(CodePackageName(kTree) == "_ray_pkg_f55a4dc7d133e46077d66261151b9df174ebb037.zip");
  CHECK(CodePackageUri(kTree) == "gcs://_ray_pkg_f55a4dc7d133e46077d66261151b9df174ebb037.zip");
  CHECK(CodePackageKey("1123456789abcdef0123456789abcdef01234567") != CodePackageKey(kTree));
}

struct WildRow {
  const char* pattern;
  const char* text;
  bool pathname;
  bool match;
};

TEST_CASE("wildmatch follows git's rules", "[code_package]") {
  const std::vector<WildRow> rows = {
      {"foo", "foo", true, true},
      {"foo", "bar", true, false},
      {"*", "foo", true, true},
      {"*", "foo/bar", true, false},
      {"*", "foo/bar", false, true},
      {"f*o", "fo", true, true},
      {"?", "/", true, false},
      {"?", "/", false, true},
      {"f?o", "foo", true, true},
      {"*.py", "a.py", true, true},
      {"*.py", "a/b.py", true, false},
      {"**/b.py", "b.py", true, true},
      {"**/b.py", "a/x/b.py", true, true},
      {"a/**", "a/b", true, true},
      {"a/**", "a/b/c", true, true},
      {"a/**", "a", true, false},
      {"a/**/b", "a/b", true, true},
      {"a/**/b", "a/x/y/b", true, true},
      {"a/**/b", "a/xb", true, false},
      {"a**b", "a/x/b", true, false},
      {"a**b", "axxb", true, true},
      {"[abc]", "b", true, true},
      {"[!abc]", "b", true, false},
      {"[^abc]", "d", true, true},
      {"[a-c]x", "bx", true, true},
      {"[a-c]x", "dx", true, false},
      {"[]]", "]", true, true},
      {"[!]]", "a", true, true},
      {"[a-]", "-", true, true},
      {"[/]", "/", true, false},
      {"[[:digit:]]*", "7up", true, true},
      {"[[:upper:]]", "a", true, false},
      {"[[:bogus:]]", "a", true, false},
      {"[abc", "a", true, false},
      {"\\*", "*", true, true},
      {"\\*", "x", true, false},
      {"a\\", "a\\", true, false},
      {"*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true, false},
  };
  for (const auto& row : rows) {
    INFO(row.pattern << " ~ " << row.text << (row.pathname ? " (pathname)" : ""));
    CHECK(WildMatch(row.pattern, row.text, row.pathname) == row.match);
  }
}

struct IgnoreRow {
  const char* path;
  bool is_directory;
  bool ignored;
};

TEST_CASE("gitattributes lines that name export-ignore become rules", "[code_package]") {
  const auto rules = ParseExportIgnoreRules(
      "# comment\n"
      "\n"
      "   *.log   export-ignore  \r\n"
      "/build/ export-ignore\n"
      "docs/*.md text -export-ignore\n"
      "tmp !export-ignore\n"
      "x export-ignore=yes\n"
      "\"a b\\tc\" export-ignore\n"
      "\"\\303\\274.txt\" export-ignore\n"
      "*.py text eol=lf\n"
      "!negated export-ignore\n"
      "[attr]mine export-ignore\n"
      "bad b@d export-ignore\n"
      "twice export-ignore -export-ignore\n"
      "noattrs\n");
  REQUIRE(rules.size() == 8);
  // What a line says about export-ignore itself: its last mention.
  const auto state = [](const AttributeRule& rule) {
    REQUIRE_FALSE(rule.assignments.empty());
    CHECK(rule.assignments.back().name == "export-ignore");
    return rule.assignments.back().state;
  };
  CHECK(rules[0].pattern == "*.log");
  CHECK(rules[0].basename_only);
  CHECK(state(rules[0]) == AttributeState::kSet);
  CHECK(rules[1].pattern == "build");
  CHECK(rules[1].directory_only);
  CHECK_FALSE(rules[1].basename_only);
  CHECK(rules[2].pattern == "docs/*.md");
  CHECK(state(rules[2]) == AttributeState::kUnset);
  CHECK(rules[2].assignments.size() == 1);  // `text` says nothing about export-ignore
  CHECK(state(rules[3]) == AttributeState::kUnspecified);
  CHECK(state(rules[4]) == AttributeState::kValue);
  CHECK(rules[5].pattern == "a b\tc");
  CHECK(rules[6].pattern == "\xc3\xbc.txt");
  CHECK(rules[7].pattern == "twice");
  CHECK(state(rules[7]) == AttributeState::kUnset);
}

TEST_CASE("gitattributes macros are read from [attr] lines, the last definition winning",
          "[code_package]") {
  const AttributeMacros macros = ParseAttributeMacros(
      "[attr]skip export-ignore\n"
      "  [attr]both   -text export-ignore\n"
      "[attr]bad b@d\n"
      "[attr]-neg export-ignore\n"
      "[attr]again text\n"
      "[attr]again -export-ignore\n"
      "skip export-ignore\n");
  CHECK(macros.size() == 3);
  CHECK(macros.at("skip") == std::vector<AttributeAssignment>{{"export-ignore"}});
  CHECK(macros.at("both") ==
        std::vector<AttributeAssignment>{{"text", AttributeState::kUnset}, {"export-ignore"}});
  CHECK(macros.at("again") ==
        std::vector<AttributeAssignment>{{"export-ignore", AttributeState::kUnset}});
  // A line naming a macro is a rule; one naming neither export-ignore nor a macro is none.
  const auto rules = ParseExportIgnoreRules("a skip\nb text\nc -skip text\n", macros);
  REQUIRE(rules.size() == 2);
  CHECK(rules[0].assignments == std::vector<AttributeAssignment>{{"skip"}});
  CHECK(rules[1].assignments == std::vector<AttributeAssignment>{{"skip", AttributeState::kUnset}});
}

TEST_CASE("export-ignore through macros is decided as git decides it", "[code_package]") {
  ExportIgnoreMatcher m;
  m.AddAttributesFile("",
                      "[attr]skip export-ignore\n"
                      "[attr]chain skip\n"
                      "[attr]binary export-ignore\n"
                      "[attr]keep -export-ignore\n"
                      "[attr]cyc1 cyc2\n"
                      "[attr]cyc2 cyc1 export-ignore\n"
                      "secret.txt skip\n"
                      "chained.txt chain\n"
                      "bin.dat binary\n"
                      "unset.txt skip\n"
                      "unset.txt -skip\n"
                      "late.txt -skip\n"
                      "late.txt skip\n"
                      "val.txt skip=1\n"
                      "order1.txt -export-ignore skip\n"
                      "order2.txt skip -export-ignore\n"
                      "cyc.txt cyc1\n"
                      "kept.txt skip keep\n"
                      "*.tmp skip\n");
  m.AddAttributesFile("sub", "[attr]subm export-ignore\nlocal.txt subm\nuse.txt skip\n");
  m.AddAttributesFile("sub2", "a.tmp -skip\nb.tmp !skip\n");
  const std::vector<IgnoreRow> rows = {
      {"secret.txt", false, true}, {"chained.txt", false, true},    {"bin.dat", false, true},
      {"unset.txt", false, false}, {"late.txt", false, true},       {"val.txt", false, false},
      {"order1.txt", false, true}, {"order2.txt", false, false},    {"cyc.txt", false, true},
      {"kept.txt", false, false},  {"sub/local.txt", false, false}, {"sub/use.txt", false, true},
      {"x.tmp", false, true},      {"sub2/a.tmp", false, false},    {"sub2/b.tmp", false, false},
      {"sub2/c.tmp", false, true}, {"other.txt", false, false},
  };
  for (const auto& row : rows) {
    INFO(row.path);
    CHECK(m.IsExportIgnored(row.path, row.is_directory) == row.ignored);
  }
  // Without a definition, binary is git's built-in macro, which leaves export-ignore alone.
  ExportIgnoreMatcher plain;
  plain.AddAttributesFile("", "bin.dat binary\n");
  CHECK_FALSE(plain.IsExportIgnored("bin.dat", false));
}

TEST_CASE("export-ignore: basename, anchored, **, folders, deeper files, unset", "[code_package]") {
  ExportIgnoreMatcher m;
  CHECK(m.empty());
  m.AddAttributesFile("",
                      "*.log export-ignore\n"
                      "/secret.env export-ignore\n"
                      "build/ export-ignore\n"
                      "gen/**/*.bin export-ignore\n"
                      "keep.log -export-ignore\n"
                      "data/** export-ignore\n"
                      "data/keep.csv !export-ignore\n"
                      "x export-ignore=1\n");
  m.AddAttributesFile("pkg", "*.log !export-ignore\n/local.py export-ignore\n");
  m.AddAttributesFile("pkg/sub", "local.py export-ignore\n*.tmp export-ignore\n");
  const std::vector<IgnoreRow> rows = {
      {"run.log", false, true},
      {"a/b/run.log", false, true},
      {"keep.log", false, false},
      {"a/keep.log", false, false},
      {"secret.env", false, true},
      {"a/secret.env", false, false},
      {"build", true, true},
      {"a/build", true, true},
      {"build", false, false},  // a file named build: "build/" is for folders
      {"gen/a.bin", false, true},
      {"gen/x/y/a.bin", false, true},
      {"gen/a.dat", false, false},
      {"data", true, false},
      {"data/a.csv", false, true},
      {"data/keep.csv", false, false},
      {"x", false, false},
      {"pkg/run.log", false, false},  // the deeper file wins
      {"pkg/local.py", false, true},
      {"pkg/a/local.py", false, false},  // anchored to pkg/
      {"pkg/sub/local.py", false, true},
      {"pkg/sub/deep/local.py", false, true},
      {"a.tmp", false, false},  // pkg/sub's rules stay in pkg/sub
      {"pkg/sub/a.tmp", false, true},
  };
  for (const auto& row : rows) {
    INFO(row.path << (row.is_directory ? "/" : ""));
    CHECK(m.IsExportIgnored(row.path, row.is_directory) == row.ignored);
  }
}

}  // namespace
}  // namespace rg::core
