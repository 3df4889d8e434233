#pragma once
// Sizes as people read them.

#include <cstdint>
#include <string>

namespace rg::core {

// "96 bytes", "812.0 KiB", "1.5 MiB", "2.0 GiB" (binary units, one decimal).
std::string HumanBytes(uint64_t bytes);

}  // namespace rg::core
