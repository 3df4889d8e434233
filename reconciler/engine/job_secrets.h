#pragma once
// Job secrets in a pass (docs/reconcile.md, "Secrets"). Values come from the secrets directory
// (ports::SecretSource), each reference read at most once per pass and never kept across
// passes; a pass with no declared secret reads nothing.
// - Every declared reference is read once the desired state is known, best effort, so that the
//   pass redacts every value (and its encodings) from all it writes: Ray's messages, records,
//   driver logs, the page (core::Redactor::AddDeclared).
// - The plan's submits of jobs with secrets, when the cluster delivers them with `env`, need
//   every value of theirs; a value that cannot be read freezes that job (moved to the invalid
//   specs with a message naming the reference, the directory and the references present: no
//   submit, no stop), and the plan is made again. Before any value is sent, the Jobs API is
//   probed once (ports::JobServer::JobsReadableWithoutCredentials) unless cluster.yaml allows
//   secrets without Ray's auth: readable without credentials freezes those jobs with the three
//   ways out; a probe that cannot tell fails their submits (kTransient; the next pass asks
//   again). `node` delivery needs no value.
// A dry run (`plan`) never reads a value.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/diagnostic.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/result.h"
#include "reconciler/core/secrets.h"
#include "reconciler/ports/job_server.h"
#include "reconciler/ports/secret_source.h"

namespace rg::engine {

// The values one pass read, by reference, with the errors of those it could not.
class PassSecretValues {
 public:
  explicit PassSecretValues(ports::SecretSource* source = nullptr) : source_(source) {}
  // The value of `reference`, read now when this pass has not read it yet. Without a source:
  // kNotFound, saying that no secrets directory is in use.
  const core::Result<std::string>& Read(std::string_view reference);

 private:
  ports::SecretSource* source_;
  std::map<std::string, core::Result<std::string>, std::less<>> read_;
};

// Reads every reference `state` declares (the cluster's and each valid spec's) and adds each
// value read to `redactor`; errors are left to the submits that need the value.
void RedactDeclaredSecrets(const core::DesiredState& state, PassSecretValues& values,
                           core::Redactor& redactor);

// What the plan's submits get of the secrets directory.
class SubmitSecrets {
 public:
  // `ray_address` is named in the probe's message (credentials stripped).
  SubmitSecrets(PassSecretValues& values, ports::JobServer& server, std::string ray_address)
      : values_(values), server_(server), ray_address_(std::move(ray_address)) {}

  // The jobs of `plan`'s submits that cannot be submitted as their spec asks, by name, with
  // why: an error of their spec file, at the secret's name when the spec writes it. Probes at
  // most once per object. REQUIRES: state.cluster.
  std::map<std::string, core::Diagnostic, std::less<>> Gather(const core::Plan& plan,
                                                              const core::DesiredState& state);

  // The values the submit of job `name` delivers: null when it delivers none (no secrets, or
  // `node`), an error when the probe could not tell. REQUIRES: Gather found the job submittable.
  core::Result<const core::SecretValues*> ForSubmit(std::string_view name) const;

 private:
  PassSecretValues& values_;
  ports::JobServer& server_;
  std::string ray_address_;
  std::optional<core::Result<bool>> readable_;  // the probe's answer, once asked
  std::map<std::string, core::SecretValues, std::less<>> by_job_;
};

// Moves the jobs `frozen` names out of `state.jobs` into its invalid specs, each with its
// diagnostic (core::MoveToInvalid).
void FreezeForSecrets(const std::map<std::string, core::Diagnostic, std::less<>>& frozen,
                      core::DesiredState& state);

}  // namespace rg::engine
