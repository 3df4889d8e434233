// Prints a registry exercising every metric type and every escape, for parse_exposition.py.

#include <iostream>

#include "reconciler/core/metrics.h"

int main() {
  rg::core::MetricsRegistry m;
  m.DeclareCounter("rg_http_requests_total", "HTTP requests served, by route and status code.");
  m.Add("rg_http_requests_total", 3, {{"path", "/webhook"}, {"code", "401"}});
  m.Add("rg_http_requests_total", 7, {{"path", "/metrics"}, {"code", "200"}});
  m.DeclareGauge("rg_jobs", "Jobs by phase.\nSecond line with a \\ backslash.");
  m.Set("rg_jobs", 2, {{"phase", "Running"}});
  m.Set("rg_jobs", 0.5, {{"phase", "Fail\"ed\\\nx"}});
  m.DeclareGauge("rg_last_success_timestamp_seconds", "Unix time of the last good pass.");
  m.Set("rg_last_success_timestamp_seconds", 1795000000.123);
  m.DeclareGauge("rg_tiny", "Very small and very large values.");
  m.Set("rg_tiny", 1e-12, {{"k", "small"}});
  m.Set("rg_tiny", 2.5e300, {{"k", "large"}});
  m.Set("rg_tiny", -1.0 / 0.0, {{"k", "neg_inf"}});
  m.DeclareHistogram("rg_pass_duration_seconds", "Duration of a reconcile pass.",
                     {0.1, 0.5, 1, 2.5, 10});
  for (double v : {0.05, 0.2, 0.7, 0.7, 3.0, 60.0}) {
    m.Observe("rg_pass_duration_seconds", v, {{"result", "ok"}});
  }
  m.Observe("rg_pass_duration_seconds", 0.3, {{"result", "error"}});
  m.DeclareCounter("rg_unused_total", "Declared, never incremented.");
  std::cout << m.RenderPrometheusText();
  return 0;
}
