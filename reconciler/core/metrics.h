#pragma once
// In-process metrics with Prometheus text exposition (version 0.0.4). Thread-safe: the
// reconcile loop records while the HTTP server renders. Pure: no clock, no I/O.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace rg::core {

using MetricLabels = std::map<std::string, std::string, std::less<>>;

class MetricsRegistry {
 public:
  // Declares a metric family once (idempotent); `help` is its HELP line. Names must match
  // [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*.
  void DeclareCounter(std::string_view name, std::string_view help);
  void DeclareGauge(std::string_view name, std::string_view help);
  // `buckets`: upper bounds in ascending order; +Inf is implied.
  void DeclareHistogram(std::string_view name, std::string_view help,
                        const std::vector<double>& buckets);

  // REQUIRES: the family was declared with the matching type.
  void Add(std::string_view counter, double delta = 1, const MetricLabels& labels = {});
  void Set(std::string_view gauge, double value, const MetricLabels& labels = {});
  // Drops every series of a gauge family (e.g. before re-setting jobs by phase).
  void ClearGauge(std::string_view gauge);
  void Observe(std::string_view histogram, double value, const MetricLabels& labels = {});

  // Current value of a counter or gauge series; 0 when it does not exist. For tests and
  // the status API.
  double Value(std::string_view name, const MetricLabels& labels = {}) const;
  // Number of observations of a histogram series.
  uint64_t Count(std::string_view histogram, const MetricLabels& labels = {}) const;

  // The whole registry as Prometheus text: families sorted by name, series by labels,
  // label values escaped (\\, \", \n).
  std::string RenderPrometheusText() const;

 private:
  struct Family;
  // Adds `family` under `name` unless the name is invalid or already declared.
  void DeclareFamily(std::string_view name, std::shared_ptr<Family> family);

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Family>, std::less<>> families_;
};

}  // namespace rg::core
