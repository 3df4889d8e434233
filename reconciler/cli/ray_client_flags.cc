#include "reconciler/cli/ray_client_flags.h"

namespace rg::cli {

adapters::RayClientFlags RayFlagsFromGlobal(const GlobalOptions& global,
                                            const std::string& fallback_address) {
  adapters::RayClientFlags flags;
  flags.address = global.ray_address;
  flags.fallback_address = fallback_address;
  flags.token_file = global.ray_token_file;
  flags.headers = global.ray_headers;
  flags.ca_file = global.ray_ca_file;
  flags.insecure = global.ray_insecure;
  return flags;
}

core::Result<adapters::RayClientOptions> ResolveRayFromGlobal(const GlobalOptions& global,
                                                              const std::string& fallback_address,
                                                              std::string_view other_source) {
  core::Result<adapters::RayClientOptions> options =
      adapters::ResolveRayClientOptions(RayFlagsFromGlobal(global, fallback_address));
  if (!options.ok()) return options;
  if (options->address.empty()) {
    return core::Error::InvalidInput(
        "no Ray address: give --ray-address, set RAY_API_SERVER_ADDRESS or RAY_ADDRESS, or " +
        std::string(other_source));
  }
  return options;
}

}  // namespace rg::cli
