#!/usr/bin/env bash
# A daemon whose clock is 2 h ahead of the Ray head's (docs/reconcile.md, "The head's clock"):
# a run just submitted with `deadline: 1h` is 2 h old by the daemon's clock, seconds old on the
# head's; deadlines count on the head's, so it keeps running. The skew is a warning of `sync`
# and `plan` (stderr) and of the daemon (/readyz, the status page and its JSON, rg_warnings).
# Usage: clock_skew_test.sh RAY_GITOPS_BINARY FAKE_RAY_SERVER_BINARY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../e2e/lib.sh"

bin=$1
tmp=$(mktemp -d /tmp/rg-clock-skew.XXXXXX)
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill -9 "$daemon_pid" 2>/dev/null || true
  rg_fake_stop
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  cat "$tmp"/*.err "$tmp"/daemon.log >&2 2>/dev/null || true
  exit 1
}

rg_fake_start "$2" --clock-offset-ms -7200000  # the head 2 h behind the daemon
ray=$RG_FAKE_URL
unset RAY_ADDRESS RAY_API_SERVER_ADDRESS RAY_AUTH_TOKEN RAY_JOB_HEADERS

remote=$tmp/remote.git
work=$tmp/work
rg_git_remote "$remote" "$work" "$ray" skew
mkdir -p "$work/jobs"
printf 'workload: custom\nentrypoint: sleep 36000\ndeadline: 1h\n' >"$work/jobs/train.yaml"
rg_git_push "$work" "a job with a deadline"

# The Date header is cut to the second and read a moment after it was written, so the skew it
# gives is the true one or a second more: 2h, or 2h1s when the head's second was about to turn.
skew="2h(1s)? ahead of the Ray head's"
warning="the daemon's clock is $skew \(read from the Date header of its answers\)"
flags=(--repo "$remote" --cache-dir "$tmp/cache" --instance skew)
status_of() {
  curl -sf "$ray/api/jobs/" | python3 -c '
import json, sys
print(" ".join(j["status"] for j in json.load(sys.stdin) if j.get("submission_id")))'
}

"$bin" --ray-address "$ray" sync "${flags[@]}" --no-artifacts >"$tmp/sync1.out" 2>"$tmp/sync1.err" ||
  fail "the first sync failed"
grep -qE "$warning" "$tmp/sync1.err" || fail "sync did not warn of the skew"
sleep 1
"$bin" --ray-address "$ray" sync "${flags[@]}" --no-artifacts >"$tmp/sync2.out" 2>"$tmp/sync2.err" ||
  fail "the second sync failed"
[ "$(status_of)" = RUNNING ] || fail "the run is '$(status_of)', expected RUNNING (stopped early?)"
grep -q '^phase: Running' <(git -C "$remote" show ray-gitops/status-skew:status/train.yaml) ||
  fail "the run is not recorded Running"

set +e
"$bin" --ray-address "$ray" plan "${flags[@]}" >"$tmp/plan.out" 2>"$tmp/plan.err"
set -e
grep -qE "$warning" "$tmp/plan.err" || fail "plan did not warn of the skew"
grep -q 'DeadlineExceeded' "$tmp/plan.out" && fail "plan would stop the run for its deadline"

"$bin" --ray-address "$ray" run "${flags[@]}" --no-artifacts --interval 1h \
  --listen 127.0.0.1:0 2>"$tmp/daemon.log" &
daemon_pid=$!
started() { grep -q ' started ' "$tmp/daemon.log"; }
wait_until() {  # wait_until SECONDS COMMAND...
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.1
  done
}
wait_until 30 started || fail "the daemon did not start"
http="http://127.0.0.1:$(grep -o ' port=[0-9]*' "$tmp/daemon.log" | head -1 | cut -d= -f2)"
warned() { curl -sf "$http/readyz" | grep -qE "warning: clock_skew: $warning"; }
wait_until 30 warned || fail "/readyz does not name the skew: $(curl -s "$http/readyz")"
curl -sf "$http/metrics" | grep -qF 'rg_warnings{kind="clock_skew"} 1' ||
  fail "rg_warnings{kind=\"clock_skew\"} is not 1"
curl -sf "$http/api/v1/status" | python3 -c '
import json, sys
kinds = [w["kind"] for w in json.load(sys.stdin)["warnings"]]
sys.exit(0 if kinds == ["clock_skew"] else 1)' || fail "the status JSON lacks the warning"
curl -sf "$http/" | grep -qE "2h(1s)? ahead of the Ray head" || fail "the status page lacks the warning"
[ "$(status_of)" = RUNNING ] || fail "the daemon stopped the run"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "the daemon did not exit 0"
daemon_pid=""
echo "clock skew: deadlines on the head's clock, warned by sync, plan and the daemon"
