#pragma once
// How a value read from the repository, from Ray or from Git is shown in text and in HTML
// (docs/plan-format.md, "Values in each format"); Markdown is in markdown.h, built on these.
// Every value a command, the status page or STATUS.md shows goes through one of them, so a
// value cannot move the cursor, colour a terminal, reorder what is displayed, or span two lines.
// Pure.

#include <cstdint>
#include <string>
#include <string_view>

namespace rg::core {

// A value as one line of text for a terminal or a log: every C0 control character as an
// escape (`\n`, `\r`, `\t`, else `\x1b` and the like), DEL as `\x7f`, the C1 controls
// (U+0080-U+009F) and the characters that change the direction or the lines of what follows
// (U+061C, U+200E, U+200F, U+2028, U+2029, U+202A-U+202E, U+2066-U+2069) as `\u009b` and the
// like, and each byte that is not part of valid UTF-8 as `\xff` and the like. Everything else,
// the backslash included, is kept: the escapes are for reading; JSON carries the exact value.
// Idempotent: the result holds nothing it would escape.
std::string EscapeText(std::string_view value);

// One line of output: `indent`, then `text` (ours, with values in it) as EscapeText shows it,
// then "\n".
std::string EscapedLine(std::string_view text, std::string_view indent = "");

// True when EscapeText(value) differs from `value`.
bool NeedsTextEscape(std::string_view value);

// The character at the start of `s` (non-empty) as EscapeText reads it: its code point and
// length in bytes (1 to 4; 0 when the first byte does not start valid UTF-8), and whether
// EscapeText shows it as an escape.
struct TextChar {
  uint32_t code_point = 0;
  size_t length = 0;
  bool escaped = true;
};
TextChar NextTextChar(std::string_view s);

// A value inside an HTML element or a quoted attribute: EscapeText, then & < > " ' as
// entities.
std::string EscapeHtml(std::string_view value);

}  // namespace rg::core
