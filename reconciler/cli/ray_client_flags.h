#pragma once
// The Ray client options every command that talks to Ray resolves from the global flags.

#include <string>
#include <string_view>

#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/core/result.h"

namespace rg::cli {

// The global flags as the resolution's input, `fallback_address` last.
adapters::RayClientFlags RayFlagsFromGlobal(const GlobalOptions& global,
                                            const std::string& fallback_address = "");

// Address and credentials from the global flags, then Ray's environment variables, then
// `fallback_address` (a cluster file's, or empty). kInvalidInput when no address results; its
// message ends with `other_source`, the command's own last way to give an address ("pass
// --config with ...").
core::Result<adapters::RayClientOptions> ResolveRayFromGlobal(const GlobalOptions& global,
                                                              const std::string& fallback_address,
                                                              std::string_view other_source);

}  // namespace rg::cli
