#pragma once
// From JobSpec to the exact body of `POST /api/jobs/` (docs/jobspec.md, "Rendering").

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/core/ownership.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/result.h"
#include "reconciler/core/secrets.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/core/value.h"

namespace rg::core {

// Ownership metadata keys (docs/jobspec.md, "Rendering").
inline constexpr std::string_view kMetaManagedBy = "gitops.managed-by";
inline constexpr std::string_view kMetaName = "gitops.name";
inline constexpr std::string_view kMetaSpecPath = "gitops.spec-path";
inline constexpr std::string_view kMetaSpecHash = "gitops.spec-hash";
inline constexpr std::string_view kMetaAttempt = "gitops.attempt";
inline constexpr std::string_view kMetaCommit = "gitops.commit";
// A scheduled job's run: the slot it runs for, "YYYYMMDDHHMM" in UTC (also its id's suffix).
inline constexpr std::string_view kMetaSlot = "gitops.slot";
inline constexpr std::string_view kMetaRepo = "gitops.repo";
// A run of a spec with `code`: the Git tree id of its code folder, and the commit it was taken
// from (code_ref's commit, or the commit read; absent for a working tree).
inline constexpr std::string_view kMetaCodeTree = "gitops.code-tree";
inline constexpr std::string_view kMetaCodeCommit = "gitops.code-commit";

// The gitops.attempt label of a job as a number >= 0; nullopt when it is absent or not one.
std::optional<int> AttemptLabel(const RayJob& job);

struct RenderContext {
  std::string instance = std::string(kDefaultInstance);  // --instance
  int attempt = 0;
  // A scheduled job's slot, "YYYYMMDDHHMM" in UTC (core::SlotIdSuffix): the run's id is then
  // SubmissionIdForSlot. Empty: not a slot run.
  std::string slot;
  std::string commit;    // the commit the spec was read from; left out of metadata when empty
  std::string repo_url;  // credentials are stripped before it is recorded; left out when empty
  // For a spec with `after`: each upstream's successful run, whose folder its
  // ${runs.<name>.dir} resolve to (core/pipeline.h); a name missing from it is an error. Unset:
  // the variables are left as written (a review's rendering: `diff`, `render`).
  std::optional<UpstreamRuns> upstream_runs;
  // The values of the secrets directory, for a submission with secret_delivery env. Null: every
  // secret is rendered as SecretPlaceholder(reference) (`render`, `plan`, `diff`, artifacts),
  // so a value reaches only the body that is POSTed.
  const SecretValues* secret_values = nullptr;
};

// Quotes one shell word: returned as is when every character is in [A-Za-z0-9_./=:,@+%-]
// (and it is not empty), else wrapped in single quotes with ' written as '\''.
std::string ShellQuote(std::string_view word);

// Quotes a Hydra override value when it holds a character Hydra's override grammar treats
// specially; returned unchanged otherwise.
std::string HydraQuoteValue(std::string_view value);

// Replaces every `${shared_root}` in `text`. Errors (kInvalidInput) when the text uses it and
// the cluster has no shared_root.
Result<std::string> InterpolateSharedRoot(std::string_view text, const RayConfig& cluster);

// The entrypoint command line for the spec (already shell-quoted). A verl workload's
// trainer.experiment_name is `submission_id` (the attempt's), its trainer.default_local_dir
// CheckpointDirectory(shared_root, run_id): `run_id` is the id of the run's attempt 0, so every
// attempt of the run reads and writes the same checkpoints (DESIGN §1.3).
Result<std::string> RenderEntrypoint(const JobSpec& spec, const RayConfig& cluster,
                                     std::string_view submission_id, std::string_view run_id);

// The trainer.default_local_dir every attempt of a verl run with id `run_id` gets
// (CheckpointDirectory); nullopt for a custom workload, a cluster without a shared_root, or a
// spec whose overrides set trainer.default_local_dir themselves (theirs wins).
std::optional<std::string> VerlCheckpointDirectory(const JobSpec& spec, const RayConfig& cluster,
                                                   std::string_view run_id);

// The whole POST /api/jobs/ body: submission_id, entrypoint, runtime_env, entrypoint_* and
// metadata. Unset fields are left out, never null. Each secret of EffectiveSecrets is an env
// var: `${NAME}` with secret_delivery node; with env, its value from context.secret_values (a
// reference missing there is a kNotFound error naming it, and there is no body), or
// SecretPlaceholder(reference) when no values are given.
Result<Value> RenderSubmission(const JobSpec& spec, const RayConfig& cluster,
                               const RenderContext& context);

// Removes user:password@ (or token@) from a URL before it is recorded anywhere.
std::string StripUrlCredentials(std::string_view url);

// The cluster's identity in the ledger (docs/status-branch.md): cluster.yaml's `name`, else
// `address` (the Jobs API address in use) without credentials.
std::string RayClusterName(const RayConfig& cluster, std::string_view address);

// True for env var names that look like secrets (TOKEN, SECRET, PASSWORD, PASSWD, KEY,
// CREDENTIAL, AUTH as a word part, case-insensitive).
bool LooksLikeSecretName(std::string_view name);

// A copy of a submission body with the values of secret-looking env vars replaced by
// "<redacted>", except where a value only stands for a secret (IsSecretStandIn:
// "<secret:REFERENCE>", or "${NAME}" under NAME), which a reviewer needs to see.
Value RedactSecrets(const Value& body);

}  // namespace rg::core
