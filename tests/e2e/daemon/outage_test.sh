#!/usr/bin/env bash
# The daemon while Ray is unreachable (docs/daemon.md "Readiness"), against the
# fake head behind a proxy that is killed and restarted on the same port. Usage:
#   outage_test.sh RAY_GITOPS_BINARY SOURCE_DIR FAKE_RAY_SERVER_BINARY
# The daemon keeps running and healthy; /readyz turns 503 once the outage outlasts the
# readiness window (3 intervals); nothing is submitted, stopped or recorded meanwhile, even
# though a commit asks for a new run and the removal of the running one; when the head is back
# /readyz returns to 200 by itself and that commit is applied.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
rg_e2e_need_fake "$@"
source "$here/daemon_lib.sh"
dmn_fake_head "$3"
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-outage-$RG_RUN_TAG"
DMN_PID=""
rg_on_exit() {
  dmn_kill
  [ -n "${DMN_PROXY_PID:-}" ] && dmn_proxy_down
}

interval=1  # readiness window: 3 s
dmn_init_repo
dmn_spec steady "sleep 600"
dmn_push "one long job"
dmn_start "$RG_TMP/daemon.log" --interval "${interval}s" --max-backoff 2s
ready() { [ "$(dmn_http_code /readyz)" = 200 ]; }
not_ready() { [ "$(dmn_http_code /readyz)" = 503 ]; }
steady_running() { dmn_fake_jobs | grep -q '^steady-[0-9a-f]* RUNNING$'; }
dmn_wait 30 "ready after the first pass" ready >/dev/null
dmn_wait 30 "steady RUNNING" steady_running >/dev/null
dmn_wait 30 "steady's Running recorded" \
  bash -c "git -C '$DMN_REMOTE' show $(dmn_ledger):status/steady.yaml | grep -q '^phase: Running'" \
  >/dev/null
# The status branch has settled once two more passes went by after Running was recorded (a
# pass that was already running may still commit what it saw); only then is it the baseline.
ok_passes=$(dmn_metric rg_passes_total result=ok)
dmn_wait 30 "two more passes" dmn_metric_ge $((ok_passes + 2)) rg_passes_total result=ok >/dev/null
jobs_before=$(dmn_fake_jobs)
status_before=$(git -C "$DMN_REMOTE" rev-parse $(dmn_ledger))
submits_before=$(dmn_metric rg_submits_total)
stops_before=$(dmn_metric rg_stops_total)
errors_before=$(dmn_metric rg_passes_total result=error)

# --- the head goes away; a commit meanwhile replaces the running job by another ---
dmn_proxy_down
rm "$DMN_WORK/jobs/steady.yaml"
dmn_spec newcomer "sleep 600"
dmn_push "replace steady by newcomer"
took=$(dmn_wait $((3 * interval + 10)) "/readyz 503 during the outage" not_ready)
echo "head down -> /readyz 503: ${took} ms (window $((3 * interval)) s)"
# Not too early: unready only once two passes in a row have failed or the last successful
# pass is at least 3 intervals old (docs/daemon.md, "Readiness"); the first comes first when
# the backoff between the two failures is short.
curl -s --max-time 10 "$DMN_URL/api/v1/status" | "$RG_PY" -c '
import datetime, json, sys
s = json.load(sys.stdin)
t = lambda v: datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
age = (t(s["now"]) - t(s["last_success"])).total_seconds()
assert not s["ready"] and s["consecutive_failures"] >= 1, s
n = s["consecutive_failures"]
assert n >= 2 or age >= 3 * float(sys.argv[1]) - 0.1, f"not ready {age} s and {n} failed passes in"
' "$interval" || rg_fail "/readyz turned 503 before two failed passes or the readiness window"
curl -s --max-time 10 "$DMN_URL/readyz" >"$RG_TMP/readyz.txt" || true
grep -q 'not ready' "$RG_TMP/readyz.txt" || { cat "$RG_TMP/readyz.txt" >&2; rg_fail "503 without a reason"; }
sleep 3  # a few more failed passes
kill -0 "$DMN_PID" 2>/dev/null || { cat "$DMN_LOG" >&2; rg_fail "the daemon died during the outage"; }
[ "$(dmn_http_code /healthz)" = 200 ] || rg_fail "/healthz is not 200 during the outage"
[ "$(dmn_metric rg_passes_total result=error)" -gt "$errors_before" ] ||
  rg_fail "no failed pass counted during the outage"
[ "$(dmn_metric rg_consecutive_failures)" -ge 1 ] || rg_fail "rg_consecutive_failures is 0"
[ "$(dmn_metric rg_submits_total)" = "$submits_before" ] || rg_fail "a submit was counted"
[ "$(dmn_metric rg_stops_total)" = "$stops_before" ] || rg_fail "a stop was counted"
[ "$(dmn_fake_jobs)" = "$jobs_before" ] || { dmn_fake_jobs >&2; rg_fail "Ray's jobs changed"; }
[ "$(git -C "$DMN_REMOTE" rev-parse $(dmn_ledger))" = "$status_before" ] ||
  rg_fail "a status commit was made while Ray was unreachable"
grep -q 'result=failed' "$DMN_LOG" || rg_fail "no failed pass logged"

# --- the head is back on the same address: ready again by itself, the commit applied ---
dmn_proxy_up
took=$(dmn_wait 20 "/readyz 200 after the head came back" ready)
echo "head back -> /readyz 200: ${took} ms"
newcomer_running() { dmn_fake_jobs | grep -q '^newcomer-[0-9a-f]* RUNNING$'; }
steady_stopped() { dmn_fake_jobs | grep -q '^steady-[0-9a-f]* STOPPED$'; }
dmn_wait 20 "newcomer submitted after the outage" newcomer_running >/dev/null
dmn_wait 20 "steady stopped after the outage" steady_stopped >/dev/null
[ "$(dmn_fake_jobs | wc -l)" = 2 ] || { dmn_fake_jobs >&2; rg_fail "expected exactly two jobs"; }
[ "$(dmn_metric rg_consecutive_failures)" = 0 ] || rg_fail "rg_consecutive_failures not reset"

dmn_stop 20
[ "$DMN_STATUS" = 0 ] || { cat "$DMN_LOG" >&2; rg_fail "the daemon exited $DMN_STATUS on SIGTERM"; }
echo "PASS"
