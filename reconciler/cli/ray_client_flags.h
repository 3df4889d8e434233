#pragma once
// The Ray client options every command that talks to Ray resolves from the global flags.

#include <string>
#include <string_view>

#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/cli/global_options.h"
#include "reconciler/core/result.h"

namespace rg::cli {

// Who chose a fallback address, and so whether the Ray token and the extra headers may go to
// it (docs/hooks.md, "Pull requests from others").
enum class AddressTrust {
  // The operator's: a cluster file named on the command line (`--config`), or the cluster.yaml
  // of what `sync` and the daemon apply (the watched branch, or the ref `sync` is told to).
  kOperator,
  // A commit under review (`plan`, often of a pull request from a fork): its cluster.yaml can
  // point anywhere, so the address gets no credential.
  kUnderReview,
};

// The global flags as the resolution's input, `fallback_address` last.
adapters::RayClientFlags RayFlagsFromGlobal(const GlobalOptions& global,
                                            const std::string& fallback_address = "");

// Address and credentials from the global flags, then Ray's environment variables, then
// `fallback_address` (a cluster file's, or empty). kInvalidInput when no address results; its
// message ends with `other_source`, the command's own last way to give an address ("pass
// --config with ..."). kInvalidInput too when the address is a fallback under review and
// there are credentials to send: the message names --ray-address and the variables.
core::Result<adapters::RayClientOptions> ResolveRayFromGlobal(const GlobalOptions& global,
                                                              const std::string& fallback_address,
                                                              std::string_view other_source,
                                                              AddressTrust fallback_trust);

}  // namespace rg::cli
