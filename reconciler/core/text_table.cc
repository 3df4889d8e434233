#include "reconciler/core/text_table.h"

#include <algorithm>

#include "reconciler/core/escape.h"

namespace rg::core {

std::string FormatTextTable(const std::vector<TextRow>& rows) {
  std::string out;
  AppendTextTable(rows, out);
  return out;
}

void AppendTextTable(const std::vector<TextRow>& rows, std::string& out) {
  // Rare: a cell whose value needs escaping. The table is then made from escaped copies.
  const bool needs_escape = std::ranges::any_of(rows, [](const TextRow& row) {
    return std::ranges::any_of(row, [](const std::string& cell) { return NeedsTextEscape(cell); });
  });
  if (needs_escape) {
    std::vector<TextRow> escaped = rows;
    for (TextRow& row : escaped) {
      for (std::string& cell : row) cell = EscapeText(cell);
    }
    AppendTextTable(escaped, out);
    return;
  }
  std::vector<size_t> widths;
  for (const TextRow& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  // Every cell but a row's last is padded to its column's width plus two; each row ends in "\n".
  size_t size = out.size();
  for (const TextRow& row : rows) {
    for (size_t i = 0; i + 1 < row.size(); ++i) size += widths[i] + 2;
    if (!row.empty()) size += row.back().size();
    size += 1;
  }
  out.reserve(size);
  for (const TextRow& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out.append(widths[i] - row[i].size() + 2, ' ');
    }
    out += '\n';
  }
}

}  // namespace rg::core
