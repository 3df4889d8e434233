#pragma once
// Job secrets (docs/jobspec.md, "Secrets"): a spec and cluster.yaml name environment variables
// whose values the daemon reads from its secrets directory, never from Git. The model and the
// repository only ever hold names and references; a value exists only in SecretValues, which
// only a submission's render is given. Pure.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/string_map.h"
#include "reconciler/core/value.h"

namespace rg::core {

struct DesiredState;
struct JobSpec;
struct RayConfig;

// How secret values reach Ray (cluster.yaml's secret_delivery): kEnv puts each value in the
// submission's runtime_env.env_vars; kNode sends `${NAME}`, which Ray expands on each node from
// that node's environment.
enum class SecretDelivery { kEnv, kNode };
std::string_view SecretDeliveryName(SecretDelivery delivery);
// "env" or "node"; nullopt otherwise.
std::optional<SecretDelivery> ParseSecretDelivery(std::string_view text);

// reference -> value, as the daemon read them from the secrets directory.
using SecretValues = std::map<std::string, std::string, std::less<>>;

// "<secret:REFERENCE>": what every printed output shows instead of a value.
std::string SecretPlaceholder(std::string_view reference);

// "${NAME}": what node delivery sends, for Ray to expand on the node.
std::string NodeSecretVariable(std::string_view name);

// True when `value` under the env var `name` holds no value but stands for a secret: a
// SecretPlaceholder of a valid reference, or NodeSecretVariable(name). Safe to show anywhere,
// and what a reviewer needs to see (RedactSecrets keeps it).
bool IsSecretStandIn(std::string_view name, std::string_view value);

// `body`, a POST /api/jobs/ body, with the value of each name of `secrets` (name -> reference)
// in its runtime_env.env_vars replaced by SecretPlaceholder(reference), except a name's own
// `${NAME}` (node delivery): what is recorded of a submission that carried values (artifacts).
Value WithSecretPlaceholders(const Value& body, const StringMap& secrets);

// The secrets one job gets: cluster.yaml's, then the job's own (the job wins per name);
// name -> reference.
StringMap EffectiveSecrets(const JobSpec& spec, const RayConfig& cluster);

// With cluster.yaml's secret_delivery node: the names every valid job's secrets need in the
// Ray nodes' environment, sorted, each once (what `plan` says it expects there). Empty with env
// delivery or an invalid cluster file.
std::vector<std::string> NodeSecretNames(const DesiredState& desired);

// A reference names a file of the secrets directory: ^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$ (no
// "/", never "." or "..", at most 128 characters).
bool IsSecretReference(std::string_view reference);

// Names no secret may take: the env vars ray-gitops sets itself (PYTHONPATH).
bool IsReservedEnvName(std::string_view name);

// What a credential committed as an env var value looks like, when `value` under the variable
// `name` has the shape of one ("a Hugging Face token"); nullopt otherwise. The shapes, their
// lengths and character sets are in docs/jobspec.md ("Secrets"): a token is found anywhere in
// the value where it starts after a character that is not a letter, digit, "_" or "-" (so
// inside a URL too), and it must end there as well; a 40-hex value only counts whole, under a
// name containing WANDB that is not about a commit (COMMIT, SHA, HASH, REV, REVISION as a
// word of the name).
std::optional<std::string_view> CredentialKind(std::string_view name, std::string_view value);

}  // namespace rg::core
