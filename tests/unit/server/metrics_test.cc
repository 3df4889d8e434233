#include "reconciler/core/metrics.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

using rg::core::MetricsRegistry;

TEST_CASE("a counter renders HELP, TYPE and one line per label set, sorted by labels") {
  MetricsRegistry m;
  m.DeclareCounter("rg_submits_total", "Jobs submitted.");
  m.Add("rg_submits_total", 1, {{"result", "ok"}});
  m.Add("rg_submits_total", 2, {{"result", "ok"}});
  m.Add("rg_submits_total", 1, {{"result", "error"}});
  CHECK(m.RenderPrometheusText() ==
        "# HELP rg_submits_total Jobs submitted.\n"
        "# TYPE rg_submits_total counter\n"
        "rg_submits_total{result=\"error\"} 1\n"
        "rg_submits_total{result=\"ok\"} 3\n");
  CHECK(m.Value("rg_submits_total", {{"result", "ok"}}) == 3);
  CHECK(m.Value("rg_submits_total", {{"result", "missing"}}) == 0);
}

TEST_CASE("families render sorted by name whatever the declaration order") {
  MetricsRegistry m;
  m.DeclareGauge("zeta", "z");
  m.DeclareCounter("alpha_total", "a");
  m.Set("zeta", 1);
  m.Add("alpha_total");
  const std::string text = m.RenderPrometheusText();
  CHECK(text.find("# HELP alpha_total") < text.find("# HELP zeta"));
  CHECK(text.find("alpha_total 1\n") != std::string::npos);
  CHECK(text.find("zeta 1\n") != std::string::npos);
}

TEST_CASE("multiple labels render in name order, comma separated") {
  MetricsRegistry m;
  m.DeclareCounter("rg_http_requests_total", "r");
  m.Add("rg_http_requests_total", 1, {{"path", "/x"}, {"code", "200"}});
  CHECK(m.RenderPrometheusText().find("rg_http_requests_total{code=\"200\",path=\"/x\"} 1\n") !=
        std::string::npos);
}

TEST_CASE("histogram buckets are cumulative, end with +Inf, and carry sum and count") {
  MetricsRegistry m;
  m.DeclareHistogram("rg_pass_seconds", "Pass duration.", {0.5, 1, 2.5});
  for (double v : {0.25, 0.5, 0.75, 3.0, 100.0}) m.Observe("rg_pass_seconds", v);
  CHECK(m.RenderPrometheusText() ==
        "# HELP rg_pass_seconds Pass duration.\n"
        "# TYPE rg_pass_seconds histogram\n"
        "rg_pass_seconds_bucket{le=\"0.5\"} 2\n"
        "rg_pass_seconds_bucket{le=\"1\"} 3\n"
        "rg_pass_seconds_bucket{le=\"2.5\"} 3\n"
        "rg_pass_seconds_bucket{le=\"+Inf\"} 5\n"
        "rg_pass_seconds_sum 104.5\n"
        "rg_pass_seconds_count 5\n");
  CHECK(m.Count("rg_pass_seconds") == 5);
}

TEST_CASE("histogram labels come before le on bucket lines") {
  MetricsRegistry m;
  m.DeclareHistogram("rg_ray_request_seconds", "r", {1});
  m.Observe("rg_ray_request_seconds", 0.2, {{"op", "submit"}});
  const std::string text = m.RenderPrometheusText();
  CHECK(text.find("rg_ray_request_seconds_bucket{op=\"submit\",le=\"1\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("rg_ray_request_seconds_bucket{op=\"submit\",le=\"+Inf\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("rg_ray_request_seconds_count{op=\"submit\"} 1\n") != std::string::npos);
  CHECK(m.Count("rg_ray_request_seconds", {{"op", "submit"}}) == 1);
  CHECK(m.Count("rg_ray_request_seconds", {{"op", "stop"}}) == 0);
}

TEST_CASE("label values escape backslash, double quote and newline") {
  MetricsRegistry m;
  m.DeclareGauge("g", "h");
  m.Set("g", 1, {{"msg", "a\\b\"c\nd"}});
  CHECK(m.RenderPrometheusText().find("g{msg=\"a\\\\b\\\"c\\nd\"} 1\n") != std::string::npos);
}

TEST_CASE("HELP text escapes backslash and newline") {
  MetricsRegistry m;
  m.DeclareGauge("g", "line one\nback\\slash");
  CHECK(m.RenderPrometheusText().find("# HELP g line one\\nback\\\\slash\n") != std::string::npos);
}

TEST_CASE("numbers are written so Prometheus reads back the same value") {
  MetricsRegistry m;
  m.DeclareGauge("g", "h");
  m.Set("g", 0.1, {{"k", "a"}});
  m.Set("g", 1e-9, {{"k", "b"}});
  m.Set("g", 1.5e21, {{"k", "c"}});
  m.Set("g", -3, {{"k", "d"}});
  m.Set("g", 1.0 / 0.0, {{"k", "e"}});
  m.Set("g", -1.0 / 0.0, {{"k", "f"}});
  m.Set("g", 0.0 / 0.0, {{"k", "g"}});
  m.Set("g", 1764000000123, {{"k", "h"}});
  const std::string text = m.RenderPrometheusText();
  CHECK(text.find("g{k=\"a\"} 0.1\n") != std::string::npos);
  CHECK(text.find("g{k=\"b\"} 1e-09\n") != std::string::npos);
  CHECK(text.find("g{k=\"c\"} 1.5e+21\n") != std::string::npos);
  CHECK(text.find("g{k=\"d\"} -3\n") != std::string::npos);
  CHECK(text.find("g{k=\"e\"} +Inf\n") != std::string::npos);
  CHECK(text.find("g{k=\"f\"} -Inf\n") != std::string::npos);
  CHECK(text.find("g{k=\"g\"} NaN\n") != std::string::npos);
  CHECK(text.find("g{k=\"h\"} 1764000000123\n") != std::string::npos);
}

TEST_CASE("ClearGauge drops every series of the family but keeps the family") {
  MetricsRegistry m;
  m.DeclareGauge("rg_jobs", "Jobs by phase.");
  m.Set("rg_jobs", 2, {{"phase", "Running"}});
  m.Set("rg_jobs", 1, {{"phase", "Failed"}});
  m.ClearGauge("rg_jobs");
  m.Set("rg_jobs", 3, {{"phase", "Succeeded"}});
  CHECK(m.RenderPrometheusText() ==
        "# HELP rg_jobs Jobs by phase.\n"
        "# TYPE rg_jobs gauge\n"
        "rg_jobs{phase=\"Succeeded\"} 3\n");
  CHECK(m.Value("rg_jobs", {{"phase", "Running"}}) == 0);
}

TEST_CASE("a gauge Set replaces the value, a counter Add accumulates") {
  MetricsRegistry m;
  m.DeclareGauge("g", "h");
  m.DeclareCounter("c_total", "h");
  m.Set("g", 5);
  m.Set("g", 2);
  m.Add("c_total", 5);
  m.Add("c_total", 2);
  CHECK(m.Value("g") == 2);
  CHECK(m.Value("c_total") == 7);
}

TEST_CASE("misuse records nothing instead of failing") {
  MetricsRegistry m;
  m.DeclareCounter("c_total", "h");
  m.DeclareGauge("g", "h");
  m.Add("undeclared_total");
  m.Set("c_total", 4);   // wrong type
  m.Observe("g", 1);     // wrong type
  m.Add("c_total", -1);  // counters only go up
  m.Add("c_total", 1, {{"bad-name", "x"}});
  m.DeclareCounter("9starts_with_digit", "h");
  CHECK(m.Value("c_total") == 0);
  CHECK(m.Value("g") == 0);
  CHECK(m.Value("undeclared_total") == 0);
  const std::string text = m.RenderPrometheusText();
  CHECK(text.find("undeclared") == std::string::npos);
  CHECK(text.find("9starts") == std::string::npos);
  CHECK(text.find("\nc_total ") == std::string::npos);
}

TEST_CASE("declaring a family twice keeps the first declaration") {
  MetricsRegistry m;
  m.DeclareCounter("c_total", "first");
  m.DeclareGauge("c_total", "second");
  m.Add("c_total", 2);
  const std::string text = m.RenderPrometheusText();
  CHECK(text.find("# HELP c_total first\n# TYPE c_total counter\n") != std::string::npos);
  CHECK(m.Value("c_total") == 2);
}

TEST_CASE("concurrent updates from several threads are all counted") {
  MetricsRegistry m;
  m.DeclareCounter("c_total", "h");
  m.DeclareHistogram("h_seconds", "h", {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&m] {
      for (int i = 0; i < 1000; ++i) {
        m.Add("c_total");
        m.Observe("h_seconds", 0.5);
        if (i % 100 == 0) (void)m.RenderPrometheusText();
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(m.Value("c_total") == 4000);
  CHECK(m.Count("h_seconds") == 4000);
}
