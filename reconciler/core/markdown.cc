#include "reconciler/core/markdown.h"

#include <algorithm>

namespace rg::core {

std::string CodeFence(std::string_view content) {
  size_t longest = 0;
  size_t run = 0;
  for (char c : content) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  std::string fence(std::max<size_t>(3, longest + 1), '`');
  return fence;
}

std::string CodeBlock(std::string_view content, std::string_view language) {
  const std::string fence = CodeFence(content);
  std::string out = fence + std::string(language) + "\n" + std::string(content);
  if (!content.empty() && content.back() != '\n') out += "\n";
  return out + fence + "\n";
}

}  // namespace rg::core
