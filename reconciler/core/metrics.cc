#include "reconciler/core/metrics.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace rg::core {

namespace {

enum class FamilyType { kCounter, kGauge, kHistogram };

std::string_view TypeName(FamilyType t) {
  switch (t) {
    case FamilyType::kCounter:
      return "counter";
    case FamilyType::kGauge:
      return "gauge";
    case FamilyType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

bool IsMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    const bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

bool IsLabelName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

bool LabelsValid(const MetricLabels& labels, bool histogram) {
  // Prometheus reserves the double-underscore prefix; `le` belongs to the bucket lines.
  return std::ranges::all_of(labels, [histogram](const auto& label) {
    const std::string& name = label.first;
    return IsLabelName(name) && !name.starts_with("__") && !(histogram && name == "le");
  });
}

// Go's strconv.ParseFloat (what Prometheus uses) reads every output of this: the shortest
// decimal that round-trips, or +Inf / -Inf / NaN.
std::string FormatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::array<char, 64> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return {buf.data(), res.ptr};
}

std::string FormatCount(uint64_t v) { return std::to_string(v); }

// The exposition format's escapes: backslash and newline everywhere, the double quote only
// in a label value (HELP text keeps its quotes).
void AppendEscaped(std::string& out, std::string_view v, bool label_value) {
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && label_value) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void AppendEscapedLabelValue(std::string& out, std::string_view v) { AppendEscaped(out, v, true); }

void AppendEscapedHelp(std::string& out, std::string_view v) { AppendEscaped(out, v, false); }

// `{a="x",b="y"}`, with `extra` (the bucket's le) appended last; nothing for no labels.
void AppendLabels(std::string& out, const MetricLabels& labels,
                  const std::pair<std::string_view, std::string>* extra = nullptr) {
  if (labels.empty() && extra == nullptr) return;
  out += '{';
  bool first = true;
  auto one = [&](std::string_view name, std::string_view value) {
    if (!first) out += ',';
    first = false;
    out += name;
    out += "=\"";
    AppendEscapedLabelValue(out, value);
    out += '"';
  };
  for (const auto& [name, value] : labels) one(name, value);
  if (extra != nullptr) one(extra->first, extra->second);
  out += '}';
}

}  // namespace

struct MetricsRegistry::Family {
  struct Series {
    double value = 0;                     // counter, gauge
    std::vector<uint64_t> bucket_counts;  // histogram, per bucket (not cumulative)
    double sum = 0;
    uint64_t count = 0;
  };

  FamilyType type;
  std::string help;
  std::vector<double> buckets;
  std::map<MetricLabels, Series> series;
};

namespace {

// Deduced return type: Family is private to the registry and must not be named here.
template <typename Families>
auto* FindFamily(Families& families, std::string_view name) {
  auto it = families.find(name);
  return it == families.end() ? nullptr : it->second.get();
}

}  // namespace

void MetricsRegistry::DeclareCounter(std::string_view name, std::string_view help) {
  auto f = std::make_shared<Family>();
  f->type = FamilyType::kCounter;
  f->help = std::string(help);
  DeclareFamily(name, std::move(f));
}

void MetricsRegistry::DeclareGauge(std::string_view name, std::string_view help) {
  auto f = std::make_shared<Family>();
  f->type = FamilyType::kGauge;
  f->help = std::string(help);
  DeclareFamily(name, std::move(f));
}

void MetricsRegistry::DeclareHistogram(std::string_view name, std::string_view help,
                                       const std::vector<double>& buckets) {
  auto f = std::make_shared<Family>();
  f->type = FamilyType::kHistogram;
  f->help = std::string(help);
  // Bounds must be finite and strictly ascending for the cumulative counts to mean anything;
  // +Inf is always the last bucket.
  for (const double b : buckets) {
    if (!std::isfinite(b)) continue;
    if (!f->buckets.empty() && b <= f->buckets.back()) continue;
    f->buckets.push_back(b);
  }
  DeclareFamily(name, std::move(f));
}

void MetricsRegistry::DeclareFamily(std::string_view name, std::shared_ptr<Family> family) {
  if (!IsMetricName(name)) return;
  std::lock_guard lock(mu_);
  if (families_.contains(name)) return;
  families_.emplace(std::string(name), std::move(family));
}

// Misuse (an undeclared family, a wrong type, bad label names) records nothing: metrics must
// never take the daemon down.
void MetricsRegistry::Add(std::string_view counter, double delta, const MetricLabels& labels) {
  if (!(delta >= 0) || !LabelsValid(labels, false)) return;
  std::lock_guard lock(mu_);
  Family* f = FindFamily(families_, counter);
  if (f == nullptr || f->type != FamilyType::kCounter) return;
  f->series[labels].value += delta;
}

void MetricsRegistry::Set(std::string_view gauge, double value, const MetricLabels& labels) {
  if (!LabelsValid(labels, false)) return;
  std::lock_guard lock(mu_);
  Family* f = FindFamily(families_, gauge);
  if (f == nullptr || f->type != FamilyType::kGauge) return;
  f->series[labels].value = value;
}

void MetricsRegistry::ClearGauge(std::string_view gauge) {
  std::lock_guard lock(mu_);
  Family* f = FindFamily(families_, gauge);
  if (f == nullptr || f->type != FamilyType::kGauge) return;
  f->series.clear();
}

void MetricsRegistry::Observe(std::string_view histogram, double value,
                              const MetricLabels& labels) {
  if (std::isnan(value) || !LabelsValid(labels, true)) return;
  std::lock_guard lock(mu_);
  Family* f = FindFamily(families_, histogram);
  if (f == nullptr || f->type != FamilyType::kHistogram) return;
  Family::Series& s = f->series[labels];
  if (s.bucket_counts.empty()) s.bucket_counts.assign(f->buckets.size() + 1, 0);
  const auto pos = std::lower_bound(f->buckets.begin(), f->buckets.end(), value);
  ++s.bucket_counts[static_cast<size_t>(pos - f->buckets.begin())];
  s.sum += value;
  ++s.count;
}

double MetricsRegistry::Value(std::string_view name, const MetricLabels& labels) const {
  std::lock_guard lock(mu_);
  const Family* f = FindFamily(families_, name);
  if (f == nullptr || f->type == FamilyType::kHistogram) return 0;
  auto it = f->series.find(labels);
  return it == f->series.end() ? 0 : it->second.value;
}

uint64_t MetricsRegistry::Count(std::string_view histogram, const MetricLabels& labels) const {
  std::lock_guard lock(mu_);
  const Family* f = FindFamily(families_, histogram);
  if (f == nullptr || f->type != FamilyType::kHistogram) return 0;
  auto it = f->series.find(labels);
  return it == f->series.end() ? 0 : it->second.count;
}

namespace {

// One sample line: `<name><suffix>{labels[,extra]} <value>`.
void AppendSample(std::string& out, std::string_view name, std::string_view suffix,
                  const MetricLabels& labels, const std::string& value,
                  const std::pair<std::string_view, std::string>* extra = nullptr) {
  out += name;
  out += suffix;
  AppendLabels(out, labels, extra);
  out += ' ';
  out += value;
  out += '\n';
}

}  // namespace

std::string MetricsRegistry::RenderPrometheusText() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, family] : families_) {
    out += "# HELP ";
    out += name;
    out += ' ';
    AppendEscapedHelp(out, family->help);
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += TypeName(family->type);
    out += '\n';
    for (const auto& [labels, s] : family->series) {
      if (family->type != FamilyType::kHistogram) {
        AppendSample(out, name, "", labels, FormatNumber(s.value));
        continue;
      }
      uint64_t cumulative = 0;
      for (size_t i = 0; i <= family->buckets.size(); ++i) {
        cumulative += s.bucket_counts[i];
        const std::pair<std::string_view, std::string> le{
            "le", i < family->buckets.size() ? FormatNumber(family->buckets[i]) : "+Inf"};
        AppendSample(out, name, "_bucket", labels, FormatCount(cumulative), &le);
      }
      AppendSample(out, name, "_sum", labels, FormatNumber(s.sum));
      AppendSample(out, name, "_count", labels, FormatCount(s.count));
    }
  }
  return out;
}

}  // namespace rg::core
