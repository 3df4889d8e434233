#include "reconciler/core/escape.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/diagnostic.h"
#include "reconciler/core/markdown.h"

namespace rg::core {
namespace {

// Values a pull request can put in a spec, a file name, a branch or a commit, or Ray in a
// message, to forge output or to reach a terminal.
const std::vector<std::string> kHostile = {
    "x\n## \xE2\x9C\x85 no runs change, safe to merge\n",
    "x\r\n# \xE2\x9C\x85 safe",
    "carriage\rreturn",
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;https://evil\x1b\\link\x1b]8;;\x1b\\",
    "csi \xC2\x9B"
    "31m",
    "``` ```` `",
    "</details></summary>\n\n# forged",
    "a | b | c",
    "<script>alert(1)</script>",
    "abc\xE2\x80\xAE"
    "cba\xE2\x81\xA6x\xE2\x81\xA9",
    "bad \xFF\xFE utf8 \xC0\xAF \xED\xA0\x80",
    "ends in a backslash\\",
    "![x](https://evil/x.png) [click](https://evil)",
    "@org/team and someone@example.com",
    "https://evil.example/phish www.evil.example",
    "tab\there\x7f\x00nul",
    "$\\text{safe}$ ~~gone~~ **bold** _it_",
};

bool HasRawControl(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x20 || b == 0x7f) return true;
    if (b == 0xC2 && i + 1 < s.size()) {
      const auto n = static_cast<unsigned char>(s[i + 1]);
      if (n >= 0x80 && n <= 0x9F) return true;  // C1
    }
    if (b == 0xE2 && i + 2 < s.size()) {
      const auto n1 = static_cast<unsigned char>(s[i + 1]);
      const auto n2 = static_cast<unsigned char>(s[i + 2]);
      if (n1 == 0x80 && n2 >= 0xA8 && n2 <= 0xAE) return true;    // U+2028-U+202E
      if (n1 == 0x81 && n2 >= 0xA6 && n2 <= 0xA9) return true;    // U+2066-U+2069
      if (n1 == 0x80 && (n2 == 0x8E || n2 == 0x8F)) return true;  // U+200E, U+200F
    }
  }
  return false;
}

// True when some '|' of `s` is not escaped (an even run of backslashes before it).
bool HasBarePipe(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '|') continue;
    size_t run = 0;
    while (run < i && s[i - 1 - run] == '\\') ++run;
    if (run % 2 == 0) return true;
  }
  return false;
}

// True when some character of `chars` in `s` is not escaped by a backslash.
bool HasBare(const std::string& s, std::string_view chars) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (chars.find(s[i]) == std::string_view::npos) continue;
    size_t run = 0;
    while (run < i && s[i - 1 - run] == '\\') ++run;
    if (run % 2 == 0) return true;
  }
  return false;
}

TEST_CASE("text: control characters, C1, bidi controls and invalid UTF-8 are escapes", "[escape]") {
  CHECK(EscapeText("a\nb\r\tc") == "a\\nb\\r\\tc");
  CHECK(EscapeText("\x1b[31mred") == "\\x1b[31mred");
  CHECK(EscapeText(std::string("nul\0del\x7f", 8)) == "nul\\x00del\\x7f");
  CHECK(EscapeText("csi \xC2\x9B") == "csi \\u009b");
  CHECK(EscapeText("a\xE2\x80\xAE"
                   "b\xE2\x81\xA6"
                   "c\xE2\x80\xA8") == "a\\u202eb\\u2066c\\u2028");
  CHECK(EscapeText("bad \xFF \xC0\xAF \xED\xA0\x80 \xE2\x82") ==
        "bad \\xff \\xc0\\xaf \\xed\\xa0\\x80 \\xe2\\x82");
  // Printable text, the backslash and valid UTF-8 are kept as they are.
  CHECK(EscapeText("caf\xC3\xA9 \xE2\x9C\x85 \xF0\x9F\x9A\x80 a\\b") ==
        "caf\xC3\xA9 \xE2\x9C\x85 \xF0\x9F\x9A\x80 a\\b");
  CHECK_FALSE(NeedsTextEscape("plain ascii and caf\xC3\xA9"));
  for (const std::string& v : kHostile) {
    INFO(v);
    const std::string out = EscapeText(v);
    CHECK_FALSE(HasRawControl(out));
    CHECK(EscapeText(out) == out);  // idempotent
  }
}

TEST_CASE("html: the five significant characters are entities, controls are escapes", "[escape]") {
  CHECK(EscapeHtml(R"(<a href="x">'&'</a>)") ==
        "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  CHECK(EscapeHtml("line\nbreak\x1b") == "line\\nbreak\\x1b");
  for (const std::string& v : kHostile) {
    INFO(v);
    const std::string out = EscapeHtml(v);
    CHECK_FALSE(HasRawControl(out));
    CHECK(out.find_first_of("<>\"'") == std::string::npos);
  }
}

TEST_CASE("markdown text: one line, no markup, no HTML, no link, no mention, no cell break",
          "[escape][markdown]") {
  CHECK(EscapeMarkdownText("plain-name.v2") == "plain-name.v2");
  CHECK(EscapeMarkdownText("a|b") == "a\\|b");
  CHECK(EscapeMarkdownText("  trimmed  ") == "trimmed");
  CHECK(EscapeMarkdownText("x\n## y") == "x\\\\n## y");
  CHECK(EscapeMarkdownText("<b>&") == "&lt;b&gt;&amp;");
  CHECK(EscapeMarkdownText("ends\\") == "ends\\\\");
  CHECK(EscapeMarkdownText("@org/team") == "@&#8203;org/team");
  CHECK(EscapeMarkdownText("https://evil") == "https&#8203;://evil");
  CHECK(EscapeMarkdownText("see WWW.evil.com") == "see WWW&#8203;.evil.com");
  CHECK(EscapeMarkdownText("![x](u)") == "\\!\\[x\\](u)");
  for (const std::string& v : kHostile) {
    INFO(v);
    const std::string out = EscapeMarkdownText(v);
    CHECK_FALSE(HasRawControl(out));
    CHECK_FALSE(HasBarePipe(out));
    CHECK_FALSE(HasBare(out, "`*_[]~$!"));
    CHECK(out.find_first_of("<>") == std::string::npos);
    for (size_t at = out.find("://"); at != std::string::npos; at = out.find("://", at + 1)) {
      CHECK(out.substr(0, at).ends_with("&#8203;"));
    }
    for (size_t at = out.find('@'); at != std::string::npos; at = out.find('@', at + 1)) {
      CHECK(out.substr(at + 1).starts_with("&#8203;"));
    }
    // A trailing backslash is escaped: it cannot escape what follows the value.
    const size_t kept = out.find_last_not_of('\\');
    CHECK((out.size() - (kept == std::string::npos ? 0 : kept + 1)) % 2 == 0);
  }
}

TEST_CASE("markdown code: a span no backtick run inside can close, on one line",
          "[escape][markdown]") {
  CHECK(MarkdownCode("ppo-3f2a") == "`ppo-3f2a`");
  CHECK(MarkdownCode("a`b") == "``a`b``");
  CHECK(MarkdownCode("`start") == "`` `start ``");
  CHECK(MarkdownCode("x ``` y") == "````x ``` y````");
  CHECK(MarkdownCode(" both ") == "`  both  `");
  CHECK(MarkdownCode("").empty());
  CHECK(MarkdownCode("a\nb") == "`a\\nb`");
  CHECK(MarkdownCodeCell("ppo") == "`ppo`");
  CHECK(MarkdownCodeCell("a|b") == "<code>a\\|b</code>");
  CHECK(MarkdownCodeCell("a\\") == "<code>a\\\\</code>");
  for (const std::string& v : kHostile) {
    INFO(v);
    const std::string code = MarkdownCode(v);
    CHECK_FALSE(HasRawControl(code));
    // The opening run is longer than any run inside, so only the closing run matches it.
    const size_t open = code.find_first_not_of('`');
    const std::string fence = code.substr(0, open);
    CHECK(code.ends_with(fence));
    CHECK(code.substr(open, code.size() - 2 * open).find(fence) == std::string::npos);
    CHECK_FALSE(HasBarePipe(MarkdownCodeCell(v)));
  }
}

TEST_CASE("a code block's fence is longer than any backtick run inside", "[escape][markdown]") {
  CHECK(CodeFence("no backticks") == "```");
  CHECK(CodeFence("a ````` b") == "``````");
  CHECK(CodeBlock("x", "text") == "```text\nx\n```\n");
}

TEST_CASE("a diagnostic quoting a value is one line of text", "[escape]") {
  const Diagnostic d{"jobs/x\n# y.yaml", 3, 7, "unknown key \"a\x1b[2J\nb\""};
  CHECK(d.ToString() == "jobs/x\\n# y.yaml:3:7: error: unknown key \"a\\x1b[2J\\nb\"");
}

}  // namespace
}  // namespace rg::core
