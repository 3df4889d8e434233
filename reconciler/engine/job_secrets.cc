#include "reconciler/engine/job_secrets.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

namespace rg::engine {

const core::Result<std::string>& PassSecretValues::Read(std::string_view reference) {
  if (auto it = read_.find(reference); it != read_.end()) return it->second;
  core::Result<std::string> value =
      source_ != nullptr ? source_->Read(reference)
                         : core::Result<std::string>(core::Error::NotFound(
                               "secret reference '" + std::string(reference) +
                               "' cannot be read: no secrets directory is in use by this command"));
  return read_.emplace(std::string(reference), std::move(value)).first->second;
}

void RedactDeclaredSecrets(const core::DesiredState& state, PassSecretValues& values,
                           core::Redactor& redactor) {
  if (!state.cluster) return;
  std::set<std::string, std::less<>> references;
  for (const auto& [name, reference] : state.cluster->secrets) references.emplace(reference);
  for (const core::JobSpec& spec : state.jobs) {
    for (const auto& [name, reference] : spec.secrets()) references.emplace(reference);
  }
  for (const std::string& reference : references) {
    const core::Result<std::string>& value = values.Read(reference);
    if (value.ok()) redactor.AddDeclared(*value);
  }
}

namespace {

// The spec a submit renders, as the apply finds it: the specs are sorted by path.
const core::JobSpec* SpecToSubmit(const core::DesiredState& state, const core::Action& action) {
  auto it = std::lower_bound(
      state.jobs.begin(), state.jobs.end(), action.spec_path,
      [](const core::JobSpec& spec, const std::string& path) { return spec.path < path; });
  return it != state.jobs.end() && it->path == action.spec_path ? &*it : nullptr;
}

std::string Frozen(const std::string& what) {
  return what + "; the job is frozen (nothing submitted or stopped) until this is fixed";
}

std::string OpenJobsApiMessage(std::string_view names, std::string_view address) {
  return Frozen(
      "secret_delivery: env would put " + std::string(names) +
      " in the submission's runtime_env, and the Jobs API at " + std::string(address) +
      " answers GET /api/jobs/ without credentials, so anyone who reaches it could read the "
      "values. Ways out: turn on Ray's token authentication (RAY_AUTH_MODE=token, Ray 2.52 and "
      "later) or put an authenticating proxy in front of the dashboard; or set "
      "`secret_delivery: node` in cluster.yaml and give the nodes these variables; or set "
      "`allow_secrets_without_ray_auth: true` in cluster.yaml, accepting that anyone who "
      "reaches the Jobs API reads the values");
}

std::string JoinNames(const core::StringMap& secrets) {
  std::string out;
  for (const auto& [name, reference] : secrets) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// An error of `spec`'s file, at where it writes the secret `name` (its cluster's: the file).
core::Diagnostic SpecError(const core::JobSpec& spec, std::string_view name, std::string message) {
  core::Diagnostic d;
  d.path = spec.path;
  d.message = std::move(message);
  const auto& positions = spec.secret_fields().name_pos;
  if (auto it = positions.find(name); it != positions.end()) {
    d.line = it->second.line;
    d.column = it->second.column;
  }
  return d;
}

}  // namespace

std::map<std::string, core::Diagnostic, std::less<>> SubmitSecrets::Gather(
    const core::Plan& plan, const core::DesiredState& state) {
  std::map<std::string, core::Diagnostic, std::less<>> frozen;
  const core::RayConfig& cluster = *state.cluster;
  if (cluster.secret_delivery != core::SecretDelivery::kEnv) return frozen;
  for (const core::Action& action : plan.actions) {
    if (action.kind != core::ActionKind::kSubmit || by_job_.contains(action.name)) continue;
    const core::JobSpec* spec = SpecToSubmit(state, action);
    if (spec == nullptr) continue;  // the apply reports a submit without its spec
    const core::StringMap secrets = core::EffectiveSecrets(*spec, cluster);
    if (secrets.empty()) continue;
    if (!cluster.allow_secrets_without_ray_auth && !readable_) {
      readable_ = server_.JobsReadableWithoutCredentials();
    }
    if (readable_ && readable_->ok() && **readable_) {
      frozen.emplace(action.name, SpecError(*spec, secrets.begin()->first,
                                            OpenJobsApiMessage(JoinNames(secrets), ray_address_)));
      continue;
    }
    core::SecretValues values;
    for (const auto& [name, reference] : secrets) {
      const core::Result<std::string>& value = values_.Read(reference);
      if (!value.ok()) {
        frozen.emplace(
            action.name,
            SpecError(*spec, name, Frozen(std::string(name) + ": " + value.error().message())));
        break;
      }
      values.emplace(std::string(reference), *value);
    }
    if (!frozen.contains(action.name)) by_job_.emplace(action.name, std::move(values));
  }
  return frozen;
}

core::Result<const core::SecretValues*> SubmitSecrets::ForSubmit(std::string_view name) const {
  auto it = by_job_.find(name);
  if (it == by_job_.end()) return static_cast<const core::SecretValues*>(nullptr);
  if (readable_ && !readable_->ok()) {
    return core::Error(readable_->error().kind(),
                       "secrets not sent: " + readable_->error().message() +
                           " (secret_delivery: env is refused when it can; tried again next pass)");
  }
  return &it->second;
}

void FreezeForSecrets(const std::map<std::string, core::Diagnostic, std::less<>>& frozen,
                      core::DesiredState& state) {
  std::vector<bool> failed(state.jobs.size(), false);
  std::vector<core::InvalidSpec> moved;
  for (size_t i = 0; i < state.jobs.size(); ++i) {
    const core::JobSpec& spec = state.jobs[i];
    auto why = frozen.find(spec.name);
    if (why == frozen.end()) continue;
    failed[i] = true;
    moved.push_back({spec.path, spec.name, {why->second}});
  }
  core::MoveToInvalid(state, failed, std::move(moved));
}

}  // namespace rg::engine
