#pragma once
// Markdown that every Markdown output of ray-gitops shares (`plan`, `diff`, STATUS.md), and the
// one way a value from the repository, from Ray or from Git is put into it. A value never
// starts or ends a line of ours and never holds a line break (EscapeText), so it cannot open a
// heading, a list item, a block quote, a table row or a fence; in a line, it is either escaped
// text (EscapeMarkdownText), a code span (MarkdownCode, MarkdownCodeCell), or, in an HTML
// block such as <details><summary>, EscapeHtml (escape.h). Pure.

#include <string>
#include <string_view>

namespace rg::core {

// A code fence for `content`: three backticks, or one more than the longest run of backticks
// in it, so that nothing inside can end the block.
std::string CodeFence(std::string_view content);

// A fenced code block: the fence, `language`, the content, the fence. REQUIRES: each line of
// `content` that holds a value was made with EscapeText (a value is one line, whole).
std::string CodeBlock(std::string_view content, std::string_view language);

// A value as inline text, in a sentence or a table cell: EscapeText; then \ ` * _ [ ] ~ | $ !
// escaped with a backslash (no emphasis, code, link, image, strikethrough, math or cell
// break), < > & as entities (no HTML, autolink or entity), and a zero-width space
// (&#8203;) after each '@' and before the ':' of "://" and the '.' of "www." (no mention,
// e-mail or web autolink); surrounding spaces trimmed (no hard line break).
std::string EscapeMarkdownText(std::string_view value);

// A value as a code span outside a table: EscapeText, between runs of backticks longer than
// any inside it (padded with a space when it starts or ends with a backtick or a space). Inside
// a code span nothing renders: no link, HTML, mention or emphasis. "" for an empty value.
std::string MarkdownCode(std::string_view value);

// A value as code in a table cell: MarkdownCode when it holds no '|' and no '\' (GitHub and
// GitLab read "\|" inside a cell's code span differently), else <code> around
// EscapeMarkdownText.
std::string MarkdownCodeCell(std::string_view value);

}  // namespace rg::core
