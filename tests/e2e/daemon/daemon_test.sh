#!/usr/bin/env bash
# The daemon (`ray-gitops run`) end to end: a bare remote, a clone that pushes, and the daemon
# against a Ray head. Usage:
#   daemon_test.sh RAY_GITOPS_BINARY SOURCE_DIR [FAKE_RAY_SERVER_BINARY]
# With the third argument the test starts its own fake head instead of using the real one
# named by $RG_E2E_RAY_STATE_DIR.
#
# Daemon 1 (--interval 10m, so only a webhook can explain a pass after the first):
#   a wrongly signed webhook is refused with 401 and causes no pass and no job; a correctly
#   signed one gets the pushed spec's job into Ray within a few seconds; /metrics parses as
#   Prometheus text and holds the pass and submit metrics; SIGTERM ends it with status 0.
# Daemon 2 (--interval 2s, no webhook): a pushed spec is submitted within one interval (+ slack),
#   and a job that ends on Ray shows up on the status branch within one interval (+ slack).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

source "$here/../lib.sh"
[ $# -ge 3 ] && rg_e2e_fake_head "$3"
rg_e2e_init "$1" "$2"
source "$here/daemon_lib.sh"

DMN_INSTANCE="e2e-daemon-$RG_RUN_TAG"
DMN_PID=""
rg_on_exit() {
  dmn_kill
  rg_stop_ours "$DMN_INSTANCE"
}

# Slack on top of "a few seconds" and "one interval": a Ray submit on a loaded 2-core machine
# takes a second or two by itself.
SLACK=8

secret="s3cret-$RG_RUN_TAG"
printf '%s\n' "$secret" >"$RG_TMP/webhook-secret"
dmn_init_repo

planned_id() {  # the submission id the next pass will give the job named $1
  rg plan --repo "$DMN_REMOTE" --ref main --cache-dir "$RG_TMP/plan-cache" \
    --instance "$DMN_INSTANCE" --format json 2>/dev/null | "$RG_PY" -c '
import json, sys
ids = [a["submission_id"] for a in json.load(sys.stdin)["actions"]
       if a["action"] == "submit" and a["name"] == sys.argv[1]]
print(ids[0] if ids else "")' "$1" || true
}
ready() { [ "$(dmn_http_code /readyz)" = 200 ]; }

# ============ daemon 1: webhooks, long interval ============
dmn_start "$RG_TMP/daemon1.log" --interval 10m --webhook-secret-file "$RG_TMP/webhook-secret" \
  --webhook-kind github
dmn_wait 60 "daemon 1 ready after its first pass" ready >/dev/null
[ "$(dmn_http_code /healthz)" = 200 ] || rg_fail "/healthz is not 200"
passes0=$(dmn_metric rg_passes_total)
[ "$passes0" -ge 1 ] || rg_fail "no pass counted after the first one ended (got $passes0)"

dmn_spec hook "sleep 2"
dmn_push "hook job"
hook_id=$(planned_id hook)
[[ "$hook_id" =~ ^hook-[0-9a-f]{10}$ ]] || rg_fail "plan names no hook-<hash> id (got '$hook_id')"

# --- d: a wrong signature is refused and causes nothing ---
triggers0=$(dmn_metric rg_triggers_total source=webhook:github)
rejected0=$(dmn_metric rg_webhook_rejected_total reason=bad_signature)
code=$(dmn_webhook "not-the-secret")
[ "$code" = 401 ] || rg_fail "a wrongly signed webhook got $code, expected 401"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST "$DMN_URL/webhook" \
  -H 'X-GitHub-Event: push' --data-binary '{"ref":"refs/heads/main"}')
[ "$code" = 401 ] || rg_fail "an unsigned webhook got $code, expected 401"
sleep 3
[ "$(dmn_metric rg_passes_total)" = "$passes0" ] || rg_fail "a refused webhook caused a pass"
[ "$(dmn_metric rg_triggers_total source=webhook:github)" = "$triggers0" ] ||
  rg_fail "a refused webhook was counted as a trigger"
[ "$(dmn_metric rg_webhook_rejected_total reason=bad_signature)" = $((rejected0 + 1)) ] ||
  rg_fail "the bad signature was not counted in rg_webhook_rejected_total"
! dmn_in_ray "$hook_id" || rg_fail "$hook_id is in Ray although only refused webhooks came"
if grep -q 'trigger=webhook' "$DMN_LOG"; then rg_fail "the log shows a webhook-triggered pass"; fi

# --- a: a correctly signed webhook gets the pushed spec into Ray within a few seconds ---
code=$(dmn_webhook "$secret")
[ "$code" = 202 ] || { cat "$RG_TMP/webhook.out" >&2; rg_fail "the signed webhook got $code"; }
took=$(dmn_wait $((2 + SLACK)) "$hook_id in Ray after the webhook" dmn_in_ray "$hook_id")
echo "webhook -> $hook_id in Ray: ${took} ms"
[ "$(dmn_metric rg_triggers_total source=webhook:github)" = $((triggers0 + 1)) ] ||
  rg_fail "the webhook was not counted in rg_triggers_total{source=\"webhook:github\"}"
dmn_wait 30 "the webhook's pass ended" dmn_metric_ge $((passes0 + 1)) rg_passes_total >/dev/null
# A ping is authenticated but triggers nothing.
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST "$DMN_URL/webhook" \
  -H 'X-GitHub-Event: ping' -H "X-Hub-Signature-256: sha256=$(printf '{}' |
    openssl dgst -sha256 -hmac "$secret" -r | cut -d' ' -f1)" --data-binary '{}')
[ "$code" = 200 ] || rg_fail "a signed ping got $code, expected 200"

# --- g: /metrics is Prometheus text and holds the pass and submit metrics ---
curl -s --max-time 10 "$DMN_URL/metrics" >"$RG_TMP/metrics.txt"
"$RG_PY" - "$RG_TMP/metrics.txt" <<'PYEOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
families = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
want = {
    "rg_pass_duration_seconds": "histogram", "rg_passes": "counter", "rg_jobs": "gauge",
    "rg_submits": "counter", "rg_stops": "counter", "rg_adoptions": "counter",
    "rg_errors": "counter", "rg_last_successful_pass_timestamp_seconds": "gauge",
    "rg_consecutive_failures": "gauge", "rg_triggers": "counter",
    "rg_ray_request_seconds": "histogram", "rg_git_request_seconds": "histogram",
    "rg_http_requests": "counter",
}
for name, kind in want.items():
    assert name in families, f"missing family {name}; have {sorted(families)}"
    assert families[name].type == kind, f"{name} is {families[name].type}, expected {kind}"
def value(name, **labels):
    return sum(s.value for f in families.values() for s in f.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))
assert value("rg_submits_total") == 1, value("rg_submits_total")
assert value("rg_passes_total", result="ok") >= 2, value("rg_passes_total", result="ok")
assert value("rg_pass_duration_seconds_count") == value("rg_passes_total")
assert value("rg_ray_request_seconds_count", call="submit") >= 1
assert value("rg_ray_request_seconds_count", call="list") >= 2
assert value("rg_git_request_seconds_count", call="load") >= 2
assert value("rg_jobs", phase="Pending") + value("rg_jobs", phase="Running") \
    + value("rg_jobs", phase="Succeeded") == 1, "the hook job is not counted by phase"
assert value("rg_consecutive_failures") == 0
assert value("rg_last_successful_pass_timestamp_seconds") > 1.7e9
print("metrics: %d families parsed" % len(families))
PYEOF

dmn_stop 20
[ "$DMN_STATUS" = 0 ] || { cat "$DMN_LOG" >&2; rg_fail "daemon 1 exited $DMN_STATUS on SIGTERM"; }
grep -q 'stopped' "$DMN_LOG" || rg_fail "daemon 1 did not log that it stopped"

# ============ daemon 2: no webhook, short interval ============
interval=2
dmn_start "$RG_TMP/daemon2.log" --interval "${interval}s"
dmn_wait 60 "daemon 2 ready" ready >/dev/null

# --- b: a pushed spec is submitted within one interval (+ slack), with no webhook at all ---
dmn_spec timer "sleep 2"
dmn_push "timer job"
timer_id=$(planned_id timer)
[[ "$timer_id" =~ ^timer-[0-9a-f]{10}$ ]] || rg_fail "plan names no timer-<hash> id (got '$timer_id')"
took=$(dmn_wait $((interval + SLACK)) "$timer_id in Ray without a webhook" dmn_in_ray "$timer_id")
echo "push -> $timer_id in Ray by the timer: ${took} ms (interval ${interval}s)"

# --- c: the job ends on Ray; its status commit follows within one interval (+ slack) ---
# Measured from Ray's own end_time of the run to the moment the status branch says Succeeded
# (polled every 50 ms), so the time the run took to start and end does not count.
succeeded() { [ "$(dmn_status_file timer | dmn_field phase)" = Succeeded ]; }
dmn_wait 180 "a status commit saying timer Succeeded" succeeded >/dev/null
seen_ms=$(dmn_now_ms)
end_ms=$(rg_api_get "/api/jobs/$timer_id" | "$RG_PY" -c '
import json, sys
j = json.load(sys.stdin)
assert j["status"] == "SUCCEEDED", j["status"]
print(j["end_time"])')
lag=$((seen_ms - end_ms))
echo "Ray end_time -> status commit seen: ${lag} ms (interval ${interval}s)"
[ "$lag" -le $(((interval + SLACK) * 1000)) ] ||
  rg_fail "the end of $timer_id reached the status branch ${lag} ms after it ended"
dmn_status_file timer >"$RG_TMP/timer.yaml"
[ "$(dmn_field submission_id <"$RG_TMP/timer.yaml")" = "$timer_id" ] ||
  { cat "$RG_TMP/timer.yaml" >&2; rg_fail "the status file names another run"; }
git -C "$DMN_REMOTE" log --format=%B $(dmn_ledger) >"$RG_TMP/status-log.txt"
grep -q "timer: .*-> Succeeded" "$RG_TMP/status-log.txt" || {
  cat "$RG_TMP/status-log.txt" >&2
  rg_fail "no status commit message records timer's transition to Succeeded"
}
# The hook job, done long ago, was neither resubmitted nor duplicated.
[ "$(dmn_list_ours | grep -c '^hook-')" = 1 ] || { dmn_list_ours >&2; rg_fail "hook ran twice"; }
[ "$(dmn_list_ours | grep -c '^timer-')" = 1 ] || { dmn_list_ours >&2; rg_fail "timer ran twice"; }

dmn_stop 20
[ "$DMN_STATUS" = 0 ] || { cat "$DMN_LOG" >&2; rg_fail "daemon 2 exited $DMN_STATUS on SIGTERM"; }
echo "PASS"
