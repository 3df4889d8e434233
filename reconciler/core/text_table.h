#pragma once
// The one way commands print a table: each column as wide as its widest cell plus two spaces,
// the last column as is, one line per row ending in "\n". `plan`, `list` and `history`.

#include <string>
#include <vector>

namespace rg::core {

using TextRow = std::vector<std::string>;

// REQUIRES: every row has the same number of cells. Each cell is printed as EscapeText shows it
// (escape.h): a value cannot break a row, move the cursor or colour the terminal.
std::string FormatTextTable(const std::vector<TextRow>& rows);
// As FormatTextTable, appended to `out`, which grows once, by the table's exact size (a plan of
// 50,000 rows is about 37 MB of text: grown by doubling, it held up to twice that while copied).
void AppendTextTable(const std::vector<TextRow>& rows, std::string& out);

}  // namespace rg::core
