#include "reconciler/core/pending_reason.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

namespace rg::core {
namespace {

constexpr std::string_view kPrefix = "asks for ";

// Ray keeps resource amounts in ten-thousandths: compare in those units, so 0.1 + 0.2 fits
// into 0.3.
int64_t Units(double amount) { return std::llround(amount * 10000.0); }

bool IsMemory(std::string_view name) { return name == "memory"; }
bool IsBuiltIn(std::string_view name) { return name == "CPU" || name == "GPU" || IsMemory(name); }

// At most `decimals` decimals, trailing zeros and a trailing point removed.
std::string Trimmed(double value, int decimals) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.*f", decimals, value);
  std::string out(buf.data());
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  return out == "-0" ? "0" : out;
}

std::string ReadableBytes(double bytes) {
  constexpr std::array<std::string_view, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (unit + 1 < kUnits.size() && std::fabs(bytes) >= 1024.0) {
    bytes /= 1024.0;
    ++unit;
  }
  return Trimmed(bytes, unit == 0 ? 0 : 2) + " " + std::string(kUnits[unit]);
}

// The amount alone for memory ("0 B"); for other resources the bare number ("0").
std::string BareAmount(std::string_view name, double amount) {
  return IsMemory(name) ? ReadableBytes(amount) : Trimmed(amount, 4);
}

std::string JoinAnd(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

// A request and a total that print alike although the request is larger (memory rounded to
// two decimals) are shown in bytes.
std::pair<std::string, std::string> Distinct(std::string_view name, double asked, double have) {
  std::string a = FormatResourceAmount(name, asked);
  std::string h = FormatResourceAmount(name, have);
  if (a == h && IsMemory(name)) {
    a = Trimmed(asked, 0) + " bytes memory";
    h = Trimmed(have, 0) + " bytes memory";
  }
  return {a, h};
}

struct Shortfall {
  std::string asked;  // "1 GPU"
  std::string why;    // "the cluster has 0 GPU"
  bool never = false;
};

std::optional<Shortfall> Check(const ResourceAmount& want, const ClusterResources& cluster) {
  const double total = FindClusterResource(cluster.total, want.name).value_or(0.0);
  const double free = FindClusterResource(cluster.available, want.name).value_or(0.0);
  if (Units(want.amount) <= Units(total)) {
    if (Units(want.amount) <= Units(free)) return std::nullopt;
    auto [asked, have] = Distinct(want.name, want.amount, total);
    return Shortfall{
        asked, "the cluster has " + have + ", " + BareAmount(want.name, free) + " free", false};
  }
  if (Units(total) <= 0) {
    std::string why = IsBuiltIn(want.name)
                          ? "the cluster has " + FormatResourceAmount(want.name, 0.0)
                          : "no node has " + want.name;
    return Shortfall{FormatResourceAmount(want.name, want.amount), why, true};
  }
  auto [asked, have] = Distinct(want.name, want.amount, total);
  return Shortfall{asked, "the cluster has " + have + " in all", true};
}

}  // namespace

std::vector<ResourceAmount> DriverResources(const JobSpec& spec, const RayConfig& cluster) {
  std::vector<ResourceAmount> out;
  auto add = [&out](const std::string& name, double amount) {
    if (Units(amount) <= 0) return;
    for (ResourceAmount& r : out) {
      if (r.name == name) {
        r.amount += amount;
        return;
      }
    }
    out.push_back({name, amount});
  };
  if (auto cpus =
          spec.entrypoint_num_cpus ? spec.entrypoint_num_cpus : cluster.entrypoint_num_cpus) {
    add("CPU", *cpus);
  }
  if (auto gpus =
          spec.entrypoint_num_gpus ? spec.entrypoint_num_gpus : cluster.entrypoint_num_gpus) {
    add("GPU", *gpus);
  }
  if (auto memory = spec.entrypoint_memory ? spec.entrypoint_memory : cluster.entrypoint_memory) {
    add("memory", static_cast<double>(*memory));
  }
  if (const auto& resources =
          spec.entrypoint_resources ? spec.entrypoint_resources : cluster.entrypoint_resources) {
    for (const auto& [name, amount] : *resources) add(name, amount);  // a sorted map
  }
  return out;
}

std::string RayDashboardKey(std::string_view name) {
  std::string out;
  size_t start = 0;
  bool first = true;
  while (true) {
    const size_t end = name.find('_', start);
    const std::string_view part =
        name.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (first) {
      out += part;
    } else {
      // str.title(): a letter after a letter is lowered, any other letter raised.
      bool after_letter = false;
      for (char c : part) {
        const auto u = static_cast<unsigned char>(c);
        const bool letter = std::isalpha(u) != 0;
        if (letter) c = static_cast<char>(after_letter ? std::tolower(u) : std::toupper(u));
        after_letter = letter;
        out += c;
      }
    }
    first = false;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

std::optional<double> FindClusterResource(
    const std::map<std::string, double, std::less<>>& resources, std::string_view name) {
  if (auto it = resources.find(name); it != resources.end()) return it->second;
  if (auto it = resources.find(RayDashboardKey(name)); it != resources.end()) return it->second;
  return std::nullopt;
}

std::string FormatResourceAmount(std::string_view name, double amount) {
  return BareAmount(name, amount) + " " + std::string(name);
}

std::optional<std::string> ExplainPending(const std::vector<ResourceAmount>& request,
                                          const ClusterResources& cluster) {
  std::vector<std::string> asked;
  std::string why;
  bool never = false;
  for (const ResourceAmount& want : request) {
    std::optional<Shortfall> s = Check(want, cluster);
    if (!s) continue;
    asked.push_back(s->asked);
    if (!why.empty()) why += "; ";
    why += s->why;
    never = never || s->never;
  }
  if (asked.empty()) return std::nullopt;
  std::string out = std::string(kPrefix) + JoinAnd(asked) + "; " + why;
  if (never) out += ", so it cannot start until the cluster grows";
  return out;
}

bool IsPendingExplanation(std::string_view message) { return message.starts_with(kPrefix); }

bool AnyRunPending(const Plan& plan, const RayJobsById& ray_jobs) {
  return std::ranges::any_of(plan.jobs, [&ray_jobs](const JobPlan& jp) {
    if (jp.phase != Phase::kPending) return false;
    auto it = ray_jobs.find(jp.submission_id);
    return it != ray_jobs.end() && it->second->status == RayJobStatus::kPending;
  });
}

}  // namespace rg::core
