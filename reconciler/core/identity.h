#pragma once
// Deterministic identity of a run (DESIGN.md 2.1): spec hash, names, submission ids.

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

// First 10 hex digits of SHA-256 over ToCanonicalJson(document minus policy fields).
// REQUIRES: document.is_object()
std::string ComputeSpecHash(const Value& document);

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

}  // namespace rg::core
