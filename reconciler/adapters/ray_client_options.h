#pragma once
// How to reach a Ray head: address, credentials, extra headers, TLS, timeouts. Resolved
// from flags first, then Ray's own environment variables (docs/ray-jobs-api.md, "Authentication
// and transport").

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reconciler/core/result.h"
#include "reconciler/ports/clock.h"

namespace rg::adapters {

// Where a resolved address came from. Only the operator's sources (the flag, the environment)
// and a cluster file the caller trusts may receive credentials (cli/ray_client_flags.h).
enum class AddressSource {
  kNone,         // no address
  kFlag,         // --ray-address
  kEnvironment,  // RAY_API_SERVER_ADDRESS or RAY_ADDRESS
  kFallback,     // RayClientFlags::fallback_address (a cluster file's)
};

struct RayClientOptions {
  std::string address;  // e.g. http://127.0.0.1:8265 (no trailing slash)
  AddressSource address_source = AddressSource::kNone;
  std::optional<std::string> token;            // sent as Authorization and X-Ray-Authorization
  std::map<std::string, std::string> headers;  // extra headers for every request
  std::string ca_file;                         // for https://
  bool insecure = false;                       // https:// without verification
  // Deadlines of one attempt of a call: the connection within connect_timeout, then the whole
  // exchange (not only each wait for a byte: a head that trickles its answer is cut off too)
  // within read_timeout, or submit_timeout for a submit.
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds read_timeout{30000};
  // Submit gets a long read timeout: a cancelled submit can leave a job PENDING forever.
  std::chrono::milliseconds submit_timeout{300000};
  // An upload to Ray's package store may carry 100 MiB: 300 s is 100 MiB at ~350 KB/s.
  std::chrono::milliseconds upload_timeout{300000};
  int max_attempts = 4;  // for idempotent calls (GET, stop, delete)
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{5000};

  // Whether requests carry a secret: the token, or any extra header (a proxy's key or cookie).
  bool HasCredentials() const { return token.has_value() || !headers.empty(); }

  // The caller's clock, read when an answer with a Date header arrives (HeadClockOffsetMs,
  // HeadNowMs); null: the system's. Not owned.
  ports::Clock* clock = nullptr;
};

// Inputs to resolution; empty means "not given".
struct RayClientFlags {
  std::string address;               // --ray-address
  std::string fallback_address;      // e.g. cluster.yaml's address, used last
  std::string token_file;            // --ray-token-file
  std::vector<std::string> headers;  // --ray-header K=V
  std::string ca_file;               // --ray-ca-file
  bool insecure = false;             // --ray-insecure
};

// Address: --ray-address, then RAY_API_SERVER_ADDRESS, then RAY_ADDRESS, then the fallback
// ("ray://" or bare "host:port" addresses are turned into http://host:8265 / http://host:port);
// an address holding credentials (user:password@), a query or a fragment is refused.
// Token: --ray-token-file, then RAY_AUTH_TOKEN. Headers: --ray-header, then RAY_JOB_HEADERS
// (a JSON object). Errors (kInvalidInput) name the flag or variable at fault.
core::Result<RayClientOptions> ResolveRayClientOptions(const RayClientFlags& flags);

}  // namespace rg::adapters
