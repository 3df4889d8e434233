#pragma once
// Deterministic identity of a run (docs/jobspec.md, "The spec hash and submission ids"): spec hash,
// names, submission ids.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/core/spec_model.h"
#include "reconciler/core/value.h"

namespace rg::core {

// Lowercase hex SHA-256 of `data` (FIPS 180-4; implemented here so that core links nothing,
// and cross-checked against OpenSSL in the tests).
std::string Sha256Hex(std::string_view data);

// The policy fields that never take part in a run's identity.
bool IsPolicyField(std::string_view key);

// First 10 hex digits of SHA-256 over ToCanonicalJson(document minus `name` and the policy
// fields), with "@instance": `instance` added for an instance other than the default, so two
// instances on one cluster never share an id. REQUIRES: document.is_object()
std::string ComputeSpecHash(const Value& document, std::string_view instance = {});

// The same with "@after": {upstream name: its spec_hash} added, for a job with `after`
// (core/pipeline.h): a change of any upstream gives the job a new hash. REQUIRES:
// document.is_object()
std::string ComputeSpecHash(const Value& document, std::string_view instance,
                            const std::map<std::string, std::string, std::less<>>& after_hashes);

// The input of a spec's identity beyond its document (DESIGN §2.1): "@after" for a job with
// `after`, "@code" (the Git tree id of its `code` folder) for a job with `code`.
struct IdentityExtras {
  const std::map<std::string, std::string, std::less<>>* after_hashes = nullptr;  // unset: none
  std::string_view code_tree;                                                     // empty: none
};
// The hash with those extras. REQUIRES: document.is_object()
std::string ComputeSpecHash(const Value& document, std::string_view instance,
                            const IdentityExtras& extras);

// Makes `spec` the spec of a run of `instance`: for an instance other than the default, its
// spec_hash takes the instance in (ComputeSpecHash), and the hashes without it stay current
// (legacy_spec_hashes), so upgrading restarts nothing. A no-op for the default instance and
// for a spec whose hash is already bound. Pinned submission ids are not changed.
void BindSpecToInstance(JobSpec& spec, std::string_view instance);

// The hash of the earlier rule (`name` and the newer policy fields included), when it differs
// from ComputeSpecHash; else empty. A run recorded under it is still the spec's current run, so
// upgrading ray-gitops restarts nothing. REQUIRES: document.is_object()
std::string ComputeLegacySpecHash(const Value& document);

// ^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$
bool IsValidJobName(std::string_view name);

// A pinned submission id: only [a-z0-9._-], 1..100 characters, starting and ending with a
// letter or digit, and never 8 hex digits (Ray would read it as a driver JobID).
bool IsValidPinnedSubmissionId(std::string_view id);

// "jobs/ppo/Qwen.yaml" with jobs_dir "jobs" -> "ppo-qwen". The result may still be an
// invalid name (the loader reports that).
std::string DefaultJobName(std::string_view spec_path, std::string_view jobs_dir);

// The id without the retry suffix: the pin, else "<name>-<spec_hash>".
std::string SubmissionIdBase(const JobSpec& spec);

// Attempt 0 is SubmissionIdBase(spec); attempt k >= 1 appends "-r<k>".
std::string SubmissionIdForAttempt(const JobSpec& spec, int attempt);

// A scheduled job's run of one slot (DESIGN §2.1): "<name>-<spec_hash>-<slot>", `slot` the
// slot's instant in UTC as YYYYMMDDHHMM (core::SlotIdSuffix); attempt k >= 1 appends "-r<k>".
// An empty `slot` is SubmissionIdForAttempt.
std::string SubmissionIdForSlot(const JobSpec& spec, std::string_view slot, int attempt);

// The slot ("YYYYMMDDHHMM") of a run id "<base>-<slot>[-r<k>]", where base is
// "<name>-<spec_hash>"; nullopt when `id` is no slot run of that base.
std::optional<std::string_view> SlotOfSubmissionId(std::string_view base, std::string_view id);

// One-off runs from `ray-gitops submit` (docs/operations.md) belong to no instance: they carry
// gitops.submitted-by: cli instead of gitops.managed-by.
inline constexpr std::string_view kMetaSubmittedBy = "gitops.submitted-by";
inline constexpr std::string_view kSubmittedByCli = "cli";

// The id of one-off run `run` of `spec`: run 0 is SubmissionIdBase(spec) + "-cli", run n >= 1
// appends "-cli-<n>". A pin replaces "<name>-<spec_hash>" here as everywhere, so a one-off of
// a pinned spec never takes the id the daemon gives the same spec.
std::string OneOffSubmissionId(const JobSpec& spec, int run);

// The run number of `id` when it is a one-off id of `spec` (0 for "<base>-cli", n for
// "<base>-cli-<n>" with n >= 1 written without leading zeros); nullopt otherwise.
std::optional<int> OneOffRunOf(const JobSpec& spec, std::string_view id);

}  // namespace rg::core
