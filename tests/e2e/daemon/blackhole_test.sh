#!/usr/bin/env bash
# A stalled Git remote and a deleted cache (docs/daemon.md "Deadlines" and "Shutdown"), against
# the fake head.
# Usage:
#   blackhole_test.sh RAY_GITOPS_BINARY SOURCE_DIR FAKE_RAY_SERVER_BINARY
# 1. The remote accepts the TCP connection and never answers (http:// to a listener that never
#    writes; a Git timeout far longer than the test): /healthz stays 200, /readyz turns 503
#    naming the pass that outlasts its deadline, rg_pass_in_flight_seconds shows it, and one
#    SIGTERM ends the process with 0 in under 10 s (the transfer in flight is cancelled).
# 2. The --cache-dir deleted while the daemon runs: the next passes clone again and a spec
#    pushed afterwards still reaches Ray; the daemon keeps running.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
rg_e2e_need_fake "$@"
source "$here/daemon_lib.sh"
dmn_fake_head "$3" 0
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-blackhole-$RG_RUN_TAG"
DMN_PID=""
BLACKHOLE_PID=""
rg_on_exit() {
  dmn_kill
  [ -n "${DMN_PROXY_PID:-}" ] && dmn_proxy_down
  [ -n "$BLACKHOLE_PID" ] && kill "$BLACKHOLE_PID" 2>/dev/null
  return 0
}

# A listener that accepts every connection and never writes; prints its port first.
python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])
' >"$RG_TMP/blackhole.port" &
BLACKHOLE_PID=$!
dmn_wait 15 "the blackhole listener" test -s "$RG_TMP/blackhole.port" >/dev/null
blackhole_port=$(head -n1 "$RG_TMP/blackhole.port")

# --- 1. a remote that never answers -----------------------------------------------------------
DMN_REMOTE="http://127.0.0.1:$blackhole_port/team/jobs.git"
dmn_start "$RG_TMP/daemon1.log" --interval 1s --pass-deadline 2s --git-timeout 1h
readyz_body() { curl -s --max-time 10 "$DMN_URL/readyz"; }
past_deadline() { readyz_body | grep -q "longer than its deadline of 2 s"; }
waited=$(dmn_wait 60 "/readyz naming the pass past its deadline" past_deadline)
[ "$(dmn_http_code /readyz)" = 503 ] || rg_fail "/readyz is not 503 under a stalled remote"
[ "$(dmn_http_code /healthz)" = 200 ] || rg_fail "/healthz is not 200 under a stalled remote"
echo "blackhole: /readyz 503 after ${waited} ms: $(readyz_body)"
# The gauges are refreshed every 200 ms.
gauge_past_deadline() {
  "$RG_PY" -c "import sys; sys.exit(0 if float('$(dmn_metric rg_pass_in_flight_seconds)') > 2 else 1)"
}
dmn_wait 30 "rg_pass_in_flight_seconds past the 2 s deadline" gauge_past_deadline >/dev/null
echo "blackhole: rg_pass_in_flight_seconds=$(dmn_metric rg_pass_in_flight_seconds)" \
  "rg_ready=$(dmn_metric rg_ready)"
[ "$(dmn_metric rg_ready)" = 0 ] || rg_fail "rg_ready is not 0 under a stalled remote"
grep -q 'not ready: a pass has been running for' "$DMN_LOG" ||
  rg_fail "no log line for the pass past its deadline"

sent_ms=$(dmn_now_ms)
dmn_stop 10
took=$(($(dmn_now_ms) - sent_ms))
[ "$DMN_STATUS" = 0 ] || { cat "$DMN_LOG" >&2; rg_fail "exit status $DMN_STATUS on SIGTERM"; }
echo "blackhole: SIGTERM -> exit 0 in ${took} ms"
grep -q 'cancelled' "$DMN_LOG" || { cat "$DMN_LOG" >&2; rg_fail "no cancelled fetch logged"; }

# --- 2. the cache directory deleted under a running daemon ------------------------------------
dmn_init_repo
dmn_spec first "sleep 600"
dmn_push "first"
dmn_start "$RG_TMP/daemon2.log" --interval 500ms
first_id() { dmn_fake_jobs | grep -q "first"; }
dmn_wait 60 "the first job in Ray" first_id >/dev/null
# rm races the daemon, which may be writing into the folder (a fetch of its 500 ms passes):
# a file made between rm's reads and its rmdir fails it with "Directory not empty". Again then.
removed=0
for _ in $(seq 100); do
  if rm -rf "$RG_TMP/cache" 2>/dev/null; then
    removed=1
    break
  fi
done
[ "$removed" = 1 ] || rg_fail "could not remove the cache directory under the daemon"
dmn_spec second "sleep 600"
dmn_push "second"
second_id() { dmn_fake_jobs | grep -q "second"; }
waited=$(dmn_wait 60 "the job pushed after the cache was deleted" second_id)
kill -0 "$DMN_PID" 2>/dev/null || { cat "$DMN_LOG" >&2; rg_fail "the daemon died"; }
[ -d "$RG_TMP/cache" ] || rg_fail "the clone was not made again"
echo "deleted cache: the next spec reached Ray ${waited} ms after its push; the daemon runs on"
dmn_stop 15
[ "$DMN_STATUS" = 0 ] || { cat "$DMN_LOG" >&2; rg_fail "exit status $DMN_STATUS on SIGTERM"; }
echo "PASS"
