#pragma once
// Values a pull request can put in a spec (or Ray in a message) to forge the review comment or
// to reach a terminal, and what the outputs must hold whatever the values were.

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace rg::core::testing {

inline constexpr std::string_view kForgedHeading = "## \xE2\x9C\x85 no runs change, safe to merge";

// Each as YAML double-quoted scalar text (without the quotes) and as the value it holds.
struct HostileValue {
  std::string yaml;
  std::string value;
};

inline const std::vector<HostileValue>& HostileValues() {
  static const std::vector<HostileValue> values = {
      {"x\\n## \xE2\x9C\x85 no runs change, safe to merge\\n",
       "x\n## \xE2\x9C\x85 no runs change, safe to merge\n"},
      {"x\\r\\n# \xE2\x9C\x85 safe\\r", "x\r\n# \xE2\x9C\x85 safe\r"},
      {"\\e[31mred\\e[0m \\x9b2J",
       "\x1b[31mred\x1b[0m \xC2\x9B"
       "2J"},
      {"a ``` b ```` c ` d", "a ``` b ```` c ` d"},
      {"</code></summary></details>\\n\\n<details><summary>forged",
       "</code></summary></details>\n\n<details><summary>forged"},
      {"a | b | c\\n| forged | row | x | y | z |", "a | b | c\n| forged | row | x | y | z |"},
      {"<script>alert(1)</script> <img src=x onerror=alert(1)>",
       "<script>alert(1)</script> <img src=x onerror=alert(1)>"},
      {"rtl \xE2\x80\xAE"
       "desrever \xE2\x81\xA6iso\xE2\x81\xA9",
       "rtl \xE2\x80\xAE"
       "desrever \xE2\x81\xA6iso\xE2\x81\xA9"},
      {"ends in a backslash\\\\", "ends in a backslash\\"},
      {"![x](https://evil/x.png) [click](https://evil) @org/team",
       "![x](https://evil/x.png) [click](https://evil) @org/team"},
      {"\\t- forged item\\n> forged quote\\n```\\nforged fence",
       "\t- forged item\n> forged quote\n```\nforged fence"},
  };
  return values;
}

inline std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t from = 0;
  while (from < text.size()) {
    const size_t eol = text.find('\n', from);
    const size_t end = eol == std::string_view::npos ? text.size() : eol;
    lines.emplace_back(text.substr(from, end - from));
    from = end + 1;
  }
  return lines;
}

// A raw C0 control other than the line feed, DEL, a C1 control, or a bidi control.
inline bool HasRawControl(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b < 0x20 && b != '\n') || b == 0x7f) return true;
    const auto next = [&](size_t k) {
      return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
    };
    if (b == 0xC2 && next(1) >= 0x80 && next(1) <= 0x9F) return true;
    if (b == 0xE2 && next(1) == 0x80 && next(2) >= 0xA8 && next(2) <= 0xAE) return true;
    if (b == 0xE2 && next(1) == 0x81 && next(2) >= 0xA6 && next(2) <= 0xA9) return true;
  }
  return false;
}

// Unescaped pipes of a table row: those after an even run of backslashes.
inline int BarePipes(std::string_view row) {
  int n = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    size_t run = 0;
    while (run < i && row[i - 1 - run] == '\\') ++run;
    if (row[i] == '|' && run % 2 == 0) ++n;
  }
  return n;
}

// `line` without its code spans, where nothing renders.
inline std::string WithoutCodeSpans(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size();) {
    if (line[i] != '`') {
      out += line[i++];
      continue;
    }
    size_t open = line.find_first_not_of('`', i);
    if (open == std::string_view::npos) open = line.size();
    const size_t n = open - i;
    size_t close = open;
    for (;;) {  // the next run of exactly n backticks
      close = line.find('`', close);
      if (close == std::string_view::npos) break;
      size_t end = line.find_first_not_of('`', close);
      if (end == std::string_view::npos) end = line.size();
      if (end - close == n) break;
      close = end;
    }
    if (close == std::string_view::npos) {  // no span: the backticks are text
      out.append(line.substr(i, n));
      i = open;
      continue;
    }
    i = close + n;
  }
  return out;
}

// Text output: no control character reaches the terminal, no value starts a line.
inline void CheckText(std::string_view text) {
  CHECK_FALSE(HasRawControl(text));
  for (const std::string& line : Lines(text)) {
    INFO(line);
    CHECK_FALSE(line.starts_with(kForgedHeading));
    CHECK_FALSE(line.starts_with("# "));
    CHECK_FALSE(line.starts_with("| forged"));
  }
}

// Markdown output: every line is one of ours. Outside code blocks a line starts with our
// heading, a table row of `columns` cells, "<details>" or "</details>", a list item, a quote
// or a word of ours; no line starts with a value's heading, HTML or fence; the HTML blocks
// balance.
inline void CheckMarkdown(std::string_view md, int columns) {
  CHECK_FALSE(HasRawControl(md));
  std::string fence;  // the open code block's fence, else empty
  int details = 0;
  for (const std::string& line : Lines(md)) {
    INFO(line);
    CHECK_FALSE(line.starts_with(kForgedHeading));
    if (!fence.empty()) {
      if (line == fence) fence.clear();
      continue;
    }
    if (line.starts_with("```")) {
      fence = line.substr(0, line.find_first_not_of('`'));
      continue;
    }
    if (line.starts_with("#")) CHECK(line.starts_with("### ray-gitops "));
    if (line.starts_with("|")) CHECK(BarePipes(line) == columns + 1);
    if (line.starts_with("<details>")) ++details;
    if (line.starts_with("</details>")) --details;
    if (line.starts_with("<")) {
      CHECK((line.starts_with("<details><summary>") || line == "</details>"));
    }
    const std::string rendered = WithoutCodeSpans(line);
    CHECK(rendered.find("<script") == std::string::npos);
    CHECK(rendered.find("<img") == std::string::npos);
    CHECK(rendered.find("](https://evil") == std::string::npos);
    CHECK_FALSE(line.starts_with("> forged"));
    CHECK_FALSE(line.starts_with("- forged"));
  }
  CHECK(fence.empty());
  CHECK(details == 0);
}

}  // namespace rg::core::testing
