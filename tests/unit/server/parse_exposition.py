"""Reads the exposition of metrics_exposition_sample with prometheus_client's own parser and
checks every family, sample, label and value came through intact."""

import math
import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families


def main() -> int:
    text = subprocess.run([sys.argv[1]], check=True, capture_output=True, text=True).stdout
    families = {f.name: f for f in text_string_to_metric_families(text)}

    def samples(family):
        return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in families[family].samples}

    # The parser strips _total from counter family names.
    requests = families["rg_http_requests"]
    assert requests.type == "counter", requests.type
    assert samples("rg_http_requests") == {
        ("rg_http_requests_total", (("code", "200"), ("path", "/metrics"))): 7.0,
        ("rg_http_requests_total", (("code", "401"), ("path", "/webhook"))): 3.0,
    }, samples("rg_http_requests")

    jobs = families["rg_jobs"]
    assert jobs.type == "gauge"
    assert jobs.documentation == "Jobs by phase.\nSecond line with a \\ backslash.", jobs.documentation
    assert samples("rg_jobs") == {
        ("rg_jobs", (("phase", "Running"),)): 2.0,
        ("rg_jobs", (("phase", 'Fail"ed\\\nx'),)): 0.5,
    }, samples("rg_jobs")

    assert samples("rg_last_success_timestamp_seconds") == {
        ("rg_last_success_timestamp_seconds", ()): 1795000000.123
    }
    tiny = samples("rg_tiny")
    assert tiny[("rg_tiny", (("k", "small"),))] == 1e-12
    assert tiny[("rg_tiny", (("k", "large"),))] == 2.5e300
    assert math.isinf(tiny[("rg_tiny", (("k", "neg_inf"),))])

    hist = families["rg_pass_duration_seconds"]
    assert hist.type == "histogram"
    ok = {
        s.labels["le"]: s.value
        for s in hist.samples
        if s.name.endswith("_bucket") and s.labels["result"] == "ok"
    }
    assert ok == {"0.1": 1, "0.5": 2, "1": 4, "2.5": 4, "10": 5, "+Inf": 6}, ok
    h = samples("rg_pass_duration_seconds")
    assert h[("rg_pass_duration_seconds_count", (("result", "ok"),))] == 6
    assert math.isclose(h[("rg_pass_duration_seconds_sum", (("result", "ok"),))], 64.65)
    assert h[("rg_pass_duration_seconds_count", (("result", "error"),))] == 1

    assert families["rg_unused"].samples == []
    print(f"parsed {len(families)} families")
    return 0


if __name__ == "__main__":
    sys.exit(main())
