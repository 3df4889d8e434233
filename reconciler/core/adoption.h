#pragma once
// Whether a job found in Ray under one of our ids is the run ray-gitops renders for it
// (docs/reconcile.md, "Adoption"). Labels are a claim anyone who can submit to Ray can make; the
// submission id, the entrypoint, the runtime_env and the code tree label of the render are what
// a run of ours holds. Ray echoes the entrypoint and the runtime_env as they were submitted
// (GET /api/jobs/<id>; a JSON round trip, so key order and the spelling of numbers may differ).

#include <string>

#include "reconciler/core/ray_job.h"
#include "reconciler/core/string_map.h"
#include "reconciler/core/value.h"

namespace rg::core {

// True when `a` and `b` are the same JSON value: objects by key, whatever their order; numbers
// by value (1 and 1.0 are equal, as after a JSON round trip).
bool SameJson(const Value& a, const Value& b);

// What differs between `job` and `body`, the POST /api/jobs/ body rendered for the attempt the
// job claims to be: "its entrypoint differs", "its runtime_env differs (in env_vars.HF_TOKEN,
// working_dir)", "its submission id is not ...", joined by "; ". Empty when the job is that
// render. Values are never shown (the render may hold secret values, the job anything); only
// the keys of the render that differ are named, at most a few. REQUIRES: `job` was read by a
// GET (its runtime_env is known). `secrets` are the job's secrets (EffectiveSecrets; name ->
// reference): for their names only presence in env_vars is compared, never the value, so a run
// whose secret was rotated since, or that holds ${NAME} where a render now holds the value or a
// placeholder, is still the render of its attempt.
std::string RenderMismatch(const RayJob& job, const Value& body, const StringMap& secrets = {});

}  // namespace rg::core
