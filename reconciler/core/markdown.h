#pragma once
// Small pieces of Markdown that every Markdown output of ray-gitops shares. Pure.

#include <string>
#include <string_view>

namespace rg::core {

// A code fence for `content`: three backticks, or one more than the longest run of backticks
// in it, so that nothing inside can end the block.
std::string CodeFence(std::string_view content);

// A fenced code block: the fence, `language`, the content, the fence.
std::string CodeBlock(std::string_view content, std::string_view language);

}  // namespace rg::core
