#include "reconciler/cli/ray_client_flags.h"

namespace rg::cli {
namespace {

// Credentials and an address only the commit under review gives: names what would have been
// sent (by where it came from, never its value) and the operator's ways to give the address.
core::Error UnderReviewRefusal(const GlobalOptions& global,
                               const adapters::RayClientOptions& options) {
  std::string held;
  if (options.token) {
    held = global.ray_token_file.empty() ? "the Ray token (RAY_AUTH_TOKEN)"
                                         : "the Ray token (--ray-token-file)";
  }
  if (!options.headers.empty()) {
    if (!held.empty()) held += " and ";
    held +=
        global.ray_headers.empty() ? "the headers of RAY_JOB_HEADERS" : "the --ray-header headers";
  }
  return core::Error::InvalidInput(
      "the Ray address comes only from the cluster file of the commit under review; a pull "
      "request could point it anywhere, so " +
      held +
      " will not be sent there: give --ray-address (or set RAY_ADDRESS or "
      "RAY_API_SERVER_ADDRESS) with the cluster's address, as the operator knows it");
}

}  // namespace

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
                                                              std::string_view other_source,
                                                              AddressTrust fallback_trust) {
  core::Result<adapters::RayClientOptions> options =
      adapters::ResolveRayClientOptions(RayFlagsFromGlobal(global, fallback_address));
  if (!options.ok()) return options;
  if (options->address.empty()) {
    return core::Error::InvalidInput(
        "no Ray address: give --ray-address, set RAY_API_SERVER_ADDRESS or RAY_ADDRESS, or " +
        std::string(other_source));
  }
  if (fallback_trust == AddressTrust::kUnderReview &&
      options->address_source == adapters::AddressSource::kFallback && options->HasCredentials()) {
    return UnderReviewRefusal(global, *options);
  }
  return options;
}

}  // namespace rg::cli
