#!/usr/bin/env bash
# `ray-gitops run` as a process, against the fake head and a local bare remote: the first pass
# at start, a pass on POST /api/v1/sync, readiness and metrics over HTTP, the graceful stop
# (the pass in flight finishes its current action, records status, exit 0) and the hard stop
# on a second signal. Usage: run_daemon_test.sh RAY_GITOPS_BINARY FAKE_RAY_SERVER_BINARY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../e2e/lib.sh"

bin=$1
tmp=$(mktemp -d /tmp/rg-run-daemon.XXXXXX)
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill -9 "$daemon_pid" 2>/dev/null || true
  rg_fake_stop
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- daemon log ---" >&2
  cat "$tmp"/daemon*.log >&2 2>/dev/null || true
  exit 1
}

# Answers to submits are held back 6 s once armed (SIGUSR2), so a stop can land mid-action.
rg_fake_start "$2" --hold-submit-ms 6000
ray=$RG_FAKE_URL
unset RAY_ADDRESS RAY_API_SERVER_ADDRESS RAY_AUTH_TOKEN RAY_JOB_HEADERS

hold_next_submit() {
  kill -USR2 "$RG_FAKE_PID"
  local ack
  read -r ack <&"${RG_FAKE[0]}"
  [ "$ack" = holding ] || fail "the fake did not arm a held submit (said '$ack')"
}
job_count() {
  curl -sf "$ray/api/jobs/" | python3 -c '
import json, sys
print(sum(1 for j in json.load(sys.stdin) if j.get("submission_id")))'
}
wait_until() {  # wait_until SECONDS COMMAND...
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.1
  done
}
jobs_at_least() { [ "$(job_count)" -ge "$1" ]; }
log_has() { grep -qE -- "$2" "$1"; }

remote=$tmp/remote.git
work=$tmp/work
rg_git_remote "$remote" "$work" "$ray" daemon
spec() {
  mkdir -p "$work/jobs"
  printf 'workload: custom\nentrypoint: sleep %s\n' "$2" >"$work/jobs/$1.yaml"
}
push() { rg_git_push "$work" "$1"; }
spec alpha 300
push "one job"

start_daemon() {  # start_daemon LOG
  "$bin" --ray-address "$ray" run --repo "$remote" --cache-dir "$tmp/cache" --instance daemon \
    --no-artifacts --interval 1h --listen 127.0.0.1:0 --parallelism 1 2>"$1" &
  daemon_pid=$!
  wait_until 30 log_has "$1" ' started ' || fail "the daemon did not start"
  http="http://127.0.0.1:$(grep -o ' port=[0-9]*' "$1" | head -1 | cut -d= -f2)"
}

# --- start: the first pass runs at once; ready; metrics ---
start_daemon "$tmp/daemon1.log"
wait_until 30 jobs_at_least 1 || fail "the first pass did not submit alpha"
ready() { curl -sf -o /dev/null "$http/readyz"; }
wait_until 30 ready || fail "/readyz never answered 200"
wait_until 10 log_has "$tmp/daemon1.log" 'pass .*result=ok.*trigger=timer' ||
  fail "no log line for the first pass"
log_has "$tmp/daemon1.log" 'submitted .*job=alpha submission_id=alpha-' || fail "no submit log line"
metrics=$(curl -sf "$http/metrics")
for want in 'rg_passes_total{result="ok"} 1' 'rg_submits_total 1' \
  'rg_triggers_total{source="timer"} 1' 'rg_jobs{phase="Pending"} 1' \
  'rg_ray_request_seconds_count{call="submit"} 1' 'rg_git_request_seconds_count{call="load"}' \
  'rg_git_request_seconds_count{call="write_status"} 1' 'rg_pass_duration_seconds_count 1'; do
  grep -qF "$want" <<<"$metrics" || fail "metrics lack '$want'"
done
# What the daemon holds at rest, read once the pass's memory went back (after its log line).
resident_known() {
  curl -sf "$http/metrics" | awk '$1 == "rg_resident_bytes_after_pass" && $2 + 0 > 1000000 { ok = 1 }
    END { exit !ok }'
}
wait_until 10 resident_known || fail "no rg_resident_bytes_after_pass after the first pass"
git -C "$remote" show ray-gitops/status-daemon:status/alpha.yaml | grep -q '^phase: Pending' ||
  fail "alpha's status was not recorded"

# --- a sync request runs a pass at once (the timer is an hour away); a stop lands mid-submit:
# the submit in flight completes and is recorded, the next one never starts, exit 0 ---
spec beta 301
spec gamma 302
push "two more"
hold_next_submit
curl -sf -X POST -d "" "$http/api/v1/sync" >/dev/null || fail "POST /api/v1/sync failed"
wait_until 30 jobs_at_least 2 || fail "the triggered pass did not submit beta"
kill -TERM "$daemon_pid"
set +e
wait "$daemon_pid"
code=$?
set -e
daemon_pid=""
[ "$code" = 0 ] || fail "the daemon exited $code after one SIGTERM, expected 0"
[ "$(job_count)" = 2 ] || fail "a new action started after the stop request"
log_has "$tmp/daemon1.log" 'pass .*trigger=api' || fail "the triggered pass is not logged as api"
log_has "$tmp/daemon1.log" 'not_started=1' || fail "the skipped submit is not logged"
log_has "$tmp/daemon1.log" ' stopped' || fail "no stopped line"
git -C "$remote" show ray-gitops/status-daemon:status/beta.yaml | grep -q '^submission_id: beta-' ||
  fail "the submit done before the stop was not recorded"

# --- a second signal ends the process at once, the held submit still in flight ---
hold_next_submit
start_daemon "$tmp/daemon2.log"
wait_until 30 jobs_at_least 3 || fail "the restarted daemon did not submit gamma"
kill -TERM "$daemon_pid"
wait_until 5 log_has "$tmp/daemon2.log" 'shutting down' || fail "the first signal went unseen"
kill -INT "$daemon_pid"
set +e
wait "$daemon_pid"
code=$?
set -e
daemon_pid=""
[ "$code" = 130 ] || fail "the daemon exited $code after a second signal, expected 130"
log_has "$tmp/daemon2.log" 'second signal' || fail "no log line for the second signal"
if log_has "$tmp/daemon2.log" ' stopped'; then fail "the daemon finished its pass anyway"; fi

# --- a push to a world at rest is a narrow pass: only the changed spec's job is read, planned
# and recorded; the pass after it is a full one again ---
metric() {  # metric NAME: its value, 0 when absent
  curl -sf "$http/metrics" | awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }'
}
at_rest() {
  curl -sf -X POST -d "" "$http/api/v1/sync" >/dev/null
  [ "$(metric rg_unchanged_passes_total)" -ge 1 ]
}
start_daemon "$tmp/daemon3.log"
wait_until 30 at_rest || fail "the daemon never found the world at rest"
beta_run() { git -C "$remote" show ray-gitops/status-daemon:status/beta.yaml | grep '^submission_id:'; }
old_beta=$(beta_run)
spec beta 303
push "beta edited"
curl -sf -X POST -d "" "$http/api/v1/sync" >/dev/null
narrow_done() { [ "$(metric rg_narrow_passes_total)" = 1 ]; }
wait_until 30 narrow_done || fail "the push was not a narrow pass"
log_has "$tmp/daemon3.log" 'pass .*narrow=1.*stops=1.*submits=1' ||
  fail "the narrow pass's log line does not say it replaced beta's run alone"
[ "$(beta_run)" != "$old_beta" ] || fail "the narrow pass did not record beta's new run"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "the daemon did not stop cleanly"
daemon_pid=""

# --- bad flags are refused before anything starts ---
set +e
"$bin" run --repo "$remote" --interval 10x >/dev/null 2>"$tmp/bad.log"
code=$?
set -e
[ "$code" = 1 ] || fail "--interval 10x exited $code, expected 1"
grep -q 'positive duration' "$tmp/bad.log" || fail "no message for a bad --interval"
echo "PASS"
