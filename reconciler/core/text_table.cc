#include "reconciler/core/text_table.h"

#include <algorithm>

namespace rg::core {

std::string FormatTextTable(const std::vector<TextRow>& rows) {
  std::string out;
  AppendTextTable(rows, out);
  return out;
}

void AppendTextTable(const std::vector<TextRow>& rows, std::string& out) {
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
