#include "reconciler/core/spec_model.h"

namespace rg::core {

StringMap RayConfig::EnvVars() const {
  StringMap out;
  const Value* env = runtime_env.Find("env_vars");
  if (env == nullptr || !env->is_object()) return out;
  for (const auto& [key, value] : env->as_object()) {
    if (value.is_string()) out.emplace(key, value.as_string());
  }
  return out;
}

std::string_view WorkloadName(Workload w) {
  switch (w) {
    case Workload::kPpo:
      return "ppo";
    case Workload::kGrpo:
      return "grpo";
    case Workload::kSft:
      return "sft";
    case Workload::kCustom:
      return "custom";
  }
  return "custom";
}

std::string_view OnRemoveName(OnRemove o) { return o == OnRemove::kKeep ? "keep" : "stop"; }

std::string_view ConcurrencyName(Concurrency c) {
  switch (c) {
    case Concurrency::kReplace:
      return "replace";
    case Concurrency::kAllow:
      return "allow";
    case Concurrency::kForbid:
      break;
  }
  return "forbid";
}

}  // namespace rg::core
