#pragma once
// What is valid in a spec but probably not what its author means (docs/jobspec.md, "Warnings"):
// `validate` and `plan` show these as "path:line:col: warning: message"; unlike a validation
// error, a warning never freezes a job or fails a command. Pure.

#include "reconciler/core/diagnostic.h"
#include "reconciler/core/spec_model.h"

namespace rg::core {

// The warnings of one valid spec, in the order of their positions. Today one kind: a verl
// workload (ppo, grpo, sft) that can be retried (retries or infra_retries above 0; infra_retries
// defaults to 3) but whose effective trainer.save_freq (the `save_freq` field, or the last
// `trainer.save_freq=` of `overrides`, which wins) is not above 0: verl then saves no checkpoint
// (its default is -1), so every retried attempt starts again from step 0 (DESIGN §1.3). An
// override whose value is not a plain integer (an interpolation) is taken as set.
Diagnostics SpecWarnings(const JobSpec& spec);

}  // namespace rg::core
