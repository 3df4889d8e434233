#!/usr/bin/env bash
# SIGTERM during a pass (docs/daemon.md "Shutdown"), against the fake head behind a proxy that
# makes every request slow, so that a pass submitting eight jobs one at a time takes seconds.
# Usage:
#   shutdown_test.sh RAY_GITOPS_BINARY SOURCE_DIR FAKE_RAY_SERVER_BINARY
# SIGTERM as soon as the first job reaches Ray: the daemon exits 0 within a few seconds, the
# pass recorded what it had done (a status commit naming every job Ray has), it did not go on
# submitting; a restarted daemon submits the rest, and Ray then holds one job per spec. A
# second SIGTERM during a pass (a submit whose answer the fake holds back) exits at once with
# 143, and the next daemon still leaves exactly one job per spec (what Ray accepted unrecorded
# is adopted).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
rg_e2e_need_fake "$@"
source "$here/daemon_lib.sh"
dmn_fake_head "$3" 300
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-shutdown-$RG_RUN_TAG"
DMN_PID=""
rg_on_exit() {
  dmn_kill
  [ -n "${DMN_PROXY_PID:-}" ] && dmn_proxy_down
}

specs=(one two three four five six seven eight)
dmn_init_repo
for name in "${specs[@]}"; do dmn_spec "$name" "sleep 600"; done
dmn_push "eight long jobs"

dmn_start "$RG_TMP/daemon1.log" --interval 1h --parallelism 1
# curl alone (no interpreter to start) so that the signal follows the first submit closely.
some_job() { curl -s --max-time 5 "$DMN_FAKE_URL/api/jobs/" | grep -q '"submission_id"'; }
dmn_wait 60 "a first job in Ray" some_job >/dev/null
sent_ms=$(dmn_now_ms)
dmn_stop 15  # docs/daemon.md, "Shutdown": exit 0 within 15 s of SIGTERM
took=$(($(dmn_now_ms) - sent_ms))
[ "$DMN_STATUS" = 0 ] || { cat "$DMN_LOG" >&2; rg_fail "the daemon exited $DMN_STATUS on SIGTERM"; }
echo "SIGTERM -> exit 0: ${took} ms"
grep -q 'shutting down' "$DMN_LOG" || rg_fail "no 'shutting down' line"
grep -Eq 'pass .*not_started=[1-9]' "$DMN_LOG" ||
  { cat "$DMN_LOG" >&2; rg_fail "the interrupted pass does not report actions not started"; }

dmn_fake_jobs >"$RG_TMP/jobs1.txt"
n1=$(wc -l <"$RG_TMP/jobs1.txt")
[ "$n1" -ge 1 ] && [ "$n1" -lt "${#specs[@]}" ] ||
  { cat "$RG_TMP/jobs1.txt" >&2; rg_fail "expected the pass cut short, Ray has $n1 jobs"; }
# The pass recorded every run it got into Ray, in one status commit.
git -C "$DMN_REMOTE" log --format=%B -1 $(dmn_ledger) >"$RG_TMP/commit1.txt" ||
  rg_fail "the interrupted pass made no status commit"
while read -r id _; do
  name=${id%-*}
  [ "$(dmn_status_file "$name" | dmn_field submission_id)" = "$id" ] ||
    rg_fail "no status file records $id"
  grep -q "$name: new -> .*($id" "$RG_TMP/commit1.txt" ||
    { cat "$RG_TMP/commit1.txt" >&2; rg_fail "the status commit does not name $id"; }
done <"$RG_TMP/jobs1.txt"

# --- a new daemon continues: the rest submitted, nothing twice ---
dmn_start "$RG_TMP/daemon2.log" --interval 1h --parallelism 1
all_there() { [ "$(dmn_fake_jobs | wc -l)" -ge "${#specs[@]}" ]; }
dmn_wait 60 "every spec's job in Ray" all_there >/dev/null
ready() { [ "$(dmn_http_code /readyz)" = 200 ]; }
dmn_wait 60 "the second daemon's first pass" ready >/dev/null
dmn_fake_jobs >"$RG_TMP/jobs2.txt"
[ "$(wc -l <"$RG_TMP/jobs2.txt")" = "${#specs[@]}" ] ||
  { cat "$RG_TMP/jobs2.txt" >&2; rg_fail "expected one job per spec"; }
for name in "${specs[@]}"; do
  grep -Eq "^$name-[0-9a-f]{10} (PENDING|RUNNING)$" "$RG_TMP/jobs2.txt" ||
    { cat "$RG_TMP/jobs2.txt" >&2; rg_fail "no single attempt-0 run of $name"; }
  [ -n "$(dmn_status_file "$name" | dmn_field submission_id)" ] ||
    rg_fail "no status recorded for $name"
done
# The runs of the first daemon were neither resubmitted nor adopted again as new.
if grep -Eq "submitted .*job=($(cut -d' ' -f1 "$RG_TMP/jobs1.txt" | sed 's/-[0-9a-f]*$//' |
  paste -sd'|'))( |$)" "$DMN_LOG"; then
  cat "$DMN_LOG" >&2
  rg_fail "the second daemon submitted a job the first one had submitted"
fi
dmn_stop 20
[ "$DMN_STATUS" = 0 ] || { cat "$DMN_LOG" >&2; rg_fail "the second daemon exited $DMN_STATUS"; }

# --- a second SIGTERM during a pass ends the process at once with 143; nothing runs twice ---
more=(nine ten eleven twelve)
for name in "${more[@]}"; do dmn_spec "$name" "sleep 600"; done
dmn_push "four more"
total=$((${#specs[@]} + ${#more[@]}))
# The fake takes the next submit at once but holds its answer back (10 s): the pass is
# certainly in flight when both signals come, however slow the machine.
kill -USR2 "$RG_FAKE_PID"
read -r ack <&"${RG_FAKE[0]}"
[ "$ack" = holding ] || rg_fail "the fake did not arm a held submit (said '$ack')"
dmn_start "$RG_TMP/daemon3.log" --interval 1h --parallelism 1
one_more() { [ "$(curl -s --max-time 5 "$DMN_FAKE_URL/api/jobs/" | grep -o '"submission_id"' |
  wc -l)" -gt "${#specs[@]}" ]; }
dmn_wait 60 "a ninth job in Ray" one_more >/dev/null
kill -TERM "$DMN_PID"
# Signals of one kind that arrive before the first is handled coalesce into one: the second
# goes only once the daemon has logged the first.
dmn_wait 10 "the first SIGTERM logged" grep -q 'shutting down' "$DMN_LOG" >/dev/null
sent_ms=$(dmn_now_ms)
dmn_stop 5  # the second SIGTERM
took=$(($(dmn_now_ms) - sent_ms))
[ "$DMN_STATUS" = 143 ] || { cat "$DMN_LOG" >&2; rg_fail "a second SIGTERM gave exit $DMN_STATUS"; }
echo "second SIGTERM -> exit 143: ${took} ms"
grep -q 'second signal' "$DMN_LOG" || rg_fail "no 'second signal' line"
dmn_start "$RG_TMP/daemon4.log" --interval 1h
all_of_them() { [ "$(dmn_fake_jobs | wc -l)" -ge "$total" ]; }
dmn_wait 60 "every spec's job in Ray after the hard exit" all_of_them >/dev/null
dmn_wait 60 "the fourth daemon's first pass" ready >/dev/null
dmn_fake_jobs >"$RG_TMP/jobs4.txt"
[ "$(wc -l <"$RG_TMP/jobs4.txt")" = "$total" ] ||
  { cat "$RG_TMP/jobs4.txt" >&2; rg_fail "expected one job per spec after the hard exit"; }
for name in "${specs[@]}" "${more[@]}"; do
  grep -Eq "^$name-[0-9a-f]{10} (PENDING|RUNNING)$" "$RG_TMP/jobs4.txt" ||
    { cat "$RG_TMP/jobs4.txt" >&2; rg_fail "no single attempt-0 run of $name"; }
  [ -n "$(dmn_status_file "$name" | dmn_field submission_id)" ] || rg_fail "no status for $name"
done
dmn_stop 20
[ "$DMN_STATUS" = 0 ] || { cat "$DMN_LOG" >&2; rg_fail "the fourth daemon exited $DMN_STATUS"; }
echo "PASS"
