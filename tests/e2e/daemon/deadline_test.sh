#!/usr/bin/env bash
# `deadline` (docs/jobspec.md, "Lifecycle"), on the real head: the daemon, passing every
# second, stops a `sleep 600` with `deadline: 5s` once 5 s have passed since its submission,
# records it DeadlineExceeded with the stop's reason, and never submits it again, though its
# spec allows retries. Prints the time from the submission to the stop. Usage:
#   deadline_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
source "$here/daemon_lib.sh"
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-deadline-$RG_RUN_TAG"
rg_on_exit() {
  dmn_kill
  rg_stop_ours "$DMN_INSTANCE"
}

dmn_init_repo
dmn_spec bounded "sleep 600"
printf 'deadline: 5s\nretries: 2\n' >>"$DMN_WORK/jobs/bounded.yaml"
dmn_push "a run with a deadline of 5 s"

interval=1
dmn_start "$RG_TMP/daemon.log" --interval "${interval}s"

# The record says DeadlineExceeded (the stop was sent) within the time the run takes to start
# on a busy head, plus its 5 s.
dmn_wait 180 "bounded recorded DeadlineExceeded" dmn_has_phase bounded DeadlineExceeded >/dev/null
id=$(dmn_list_ours | awk '{ print $1 }')
[ "$(echo "$id" | wc -w)" = 1 ] || rg_fail "expected one run of ours, Ray has: $id"
rg_wait_status "$id" STOPPED 60 2>/dev/null || true
[ "$(rg_status_of "$id")" = STOPPED ] || rg_fail "$id was not stopped (now $(rg_status_of "$id"))"

# When the stop was sent, from the submission (Ray's start_time): never before 5 s, and within
# two intervals after (3 s more for a pass on a loaded machine).
dmn_status_file bounded >"$RG_TMP/bounded.yaml"
grep -q 'stop_reason: deadline' "$RG_TMP/bounded.yaml" || { cat "$RG_TMP/bounded.yaml" >&2; rg_fail "the attempt's stop reason is not deadline"; }
elapsed_ms=$("$RG_PY" - "$RG_TMP/bounded.yaml" <<'PYEOF'
import datetime, re, sys
text = open(sys.argv[1]).read()
def at(key):
    m = re.search(r"^\s+%s: \"?([0-9T:.\-]+)Z\"?$" % key, text, re.M)
    return datetime.datetime.fromisoformat(m.group(1))
print(int((at("stop_sent_at") - at("start_time")).total_seconds() * 1000))
PYEOF
)
echo "deadline: the stop of $id was sent ${elapsed_ms} ms after its submission (deadline 5000 ms, interval ${interval} s)"
[ "$elapsed_ms" -ge 5000 ] || rg_fail "the stop was sent before the deadline (${elapsed_ms} ms)"
[ "$elapsed_ms" -le $((5000 + 2 * interval * 1000 + 3000)) ] ||
  rg_fail "the stop was sent ${elapsed_ms} ms after the submission, later than two intervals after 5 s"

# Three more passes after Ray reported STOPPED: nothing is submitted, the phase stays.
dmn_wait_passes 3
[ "$(dmn_list_ours | wc -l)" = 1 ] || { dmn_list_ours >&2; rg_fail "the run was submitted again"; }
dmn_has_phase bounded DeadlineExceeded || rg_fail "the phase did not stay DeadlineExceeded"
dmn_stop
echo "deadline: $id stopped for its deadline, recorded DeadlineExceeded, not resubmitted"
