#include "reconciler/core/code_change.h"

#include "reconciler/core/byte_size.h"

namespace rg::core {
namespace {

constexpr size_t kShortTree = 10;

}  // namespace

std::string CodeChangeText(std::string_view folder, std::string_view from_tree,
                           std::string_view to_tree, const std::vector<std::string>& files) {
  std::string out = "code changed: ";
  out.append(folder);
  if (files.empty()) {
    out.append(" (tree ").append(from_tree.substr(0, kShortTree)).append(" -> ");
    out.append(to_tree.substr(0, kShortTree)).append(")");
    return out;
  }
  out.append(" (").append(std::to_string(files.size()));
  out.append(files.size() == 1 ? " file: " : " files: ");
  for (size_t i = 0; i < files.size() && i < kCodeChangeFilesShown; ++i) {
    if (i > 0) out.append(", ");
    out.append(files[i]);
  }
  if (files.size() > kCodeChangeFilesShown) {
    out.append(", +").append(std::to_string(files.size() - kCodeChangeFilesShown)).append(" more");
  }
  out.append(")");
  return out;
}

std::string DescribeCodeChange(std::string_view folder, const std::string& from_tree,
                               const std::string& to_tree, const CodeChangeLister& lister) {
  std::vector<std::string> files;
  if (lister) files = lister(from_tree, to_tree);
  return CodeChangeText(folder, from_tree, to_tree, files);
}

std::string CodeSummary(const CodeFields& code) {
  std::string out = "code ";
  out.append(code.folder).append("@").append(std::string_view(code.tree_id).substr(0, kShortTree));
  out.append(", ")
      .append(std::to_string(code.files))
      .append(code.files == 1 ? " file, " : " files, ");
  out.append(HumanBytes(code.bytes));
  return out;
}

}  // namespace rg::core
