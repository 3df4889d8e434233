#include "reconciler/core/spec_warnings.h"

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

namespace rg::core {
namespace {

constexpr std::string_view kSaveFreqKey = "trainer.save_freq";

// What `overrides` make of trainer.save_freq: unset (nullopt) when no item names it; else
// whether the last item that names it leaves checkpoints on (`key=N` with N > 0, or a value
// that is not a plain integer), as Hydra applies the items in order.
std::optional<bool> OverridesSaveCheckpoints(const std::vector<std::string>& overrides) {
  std::optional<bool> saves;
  for (std::string_view item : overrides) {
    if (item.starts_with('~')) {
      item.remove_prefix(1);
      if (item == kSaveFreqKey ||
          (item.starts_with(kSaveFreqKey) && item.substr(kSaveFreqKey.size()).starts_with('='))) {
        saves = false;  // deleted: verl's default, -1
      }
      continue;
    }
    while (item.starts_with('+')) item.remove_prefix(1);
    if (!item.starts_with(kSaveFreqKey) || !item.substr(kSaveFreqKey.size()).starts_with('=')) {
      continue;
    }
    const std::string_view value = item.substr(kSaveFreqKey.size() + 1);
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    saves = ec != std::errc() || end != value.data() + value.size() || n > 0;
  }
  return saves;
}

SourcePos PositionOf(const JobSpec& spec, std::string_view field) {
  auto it = spec.positions.find(field);
  return it == spec.positions.end() ? SourcePos{} : it->second;
}

// Where the warning points: what turned checkpoints off, else what makes the job retried.
SourcePos CheckpointWarningPos(const JobSpec& spec, bool decided_by_overrides) {
  if (decided_by_overrides) return PositionOf(spec, "overrides");
  if (spec.trainer().save_freq) return PositionOf(spec, "save_freq");
  if (spec.retries > 0) return PositionOf(spec, "retries");
  if (spec.positions.contains("infra_retries")) return PositionOf(spec, "infra_retries");
  return PositionOf(spec, "workload");
}

std::string RetriedBy(const JobSpec& spec) {
  std::string out;
  if (spec.retries > 0) out = "retries: " + std::to_string(spec.retries);
  if (spec.infra_retries > 0) {
    if (!out.empty()) out += ", ";
    out += "infra_retries: " + std::to_string(spec.infra_retries);
    if (!spec.positions.contains("infra_retries")) out += " by default";
  }
  return out;
}

}  // namespace

Diagnostics SpecWarnings(const JobSpec& spec) {
  Diagnostics out;
  if (spec.workload == Workload::kCustom || (spec.retries <= 0 && spec.infra_retries <= 0)) {
    return out;
  }
  const std::optional<bool> from_overrides = OverridesSaveCheckpoints(spec.trainer().overrides);
  const std::optional<int64_t>& field = spec.trainer().save_freq;
  const bool saves = from_overrides.value_or(field.has_value() && *field > 0);
  if (saves) return out;
  const SourcePos pos = CheckpointWarningPos(spec, from_overrides.has_value());
  out.push_back(Diagnostic{
      spec.path, pos.line, pos.column,
      std::string(WorkloadName(spec.workload)) + " job can be retried (" + RetriedBy(spec) +
          ") but sets no save_freq above 0: verl then saves no checkpoint, so a retried attempt "
          "starts again from step 0; set save_freq (e.g. save_freq: 100) to resume from the "
          "run's checkpoints"});
  return out;
}

}  // namespace rg::core
