#!/usr/bin/env bash
# `schedule` (docs/jobspec.md, "Schedules"), on the real head: a daemon passing every second
# with `schedule: "* * * * *"` on a short job submits one run per minute, each run's id ending
# in its minute's UTC time (YYYYMMDDHHMM); a restart of the daemon inside a minute adds no
# second run for that slot. Usage:
#   schedule_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
source "$here/daemon_lib.sh"
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-schedule-$RG_RUN_TAG"
rg_on_exit() {
  dmn_kill
  rg_stop_ours "$DMN_INSTANCE"
}

dmn_init_repo
dmn_spec tick "echo tick"
printf 'schedule: "* * * * *"\n' >>"$DMN_WORK/jobs/tick.yaml"
dmn_push "a job every minute"

# How many runs of ours Ray has, and whether no slot has two of them.
runs() { dmn_list_ours | wc -l; }
runs_ge() { [ "$(runs)" -ge "$1" ]; }
# The slots (YYYYMMDDHHMM) of our runs, one a line, sorted; retries (-r<k>) would repeat one.
slots() { dmn_list_ours | awk '{ print $1 }' | sed -n 's/.*-\([0-9]\{12\}\)\(-r[0-9]*\)\{0,1\}$/\1/p' | sort; }
utc_minute() { date -u +%Y%m%d%H%M; }
second_of_minute() { echo $((10#$(date -u +%S))); }
early_in_minute() { [ "$(second_of_minute)" -lt 30 ]; }

dmn_start "$RG_TMP/daemon.log" --interval 1s

# The latest slot (this minute) runs at once, the next minute's at its minute: two runs, of
# two consecutive minutes.
dmn_wait 200 "two slot runs" runs_ge 2 >/dev/null
mapfile -t seen < <(slots)
[ "${#seen[@]}" = 2 ] || { dmn_list_ours >&2; rg_fail "expected two slot runs, Ray has ${#seen[@]}"; }
next=$(date -u -d "${seen[0]:0:8} ${seen[0]:8:2}:${seen[0]:10:2} UTC + 1 minute" +%Y%m%d%H%M)
[ "${seen[1]}" = "$next" ] || rg_fail "the slots ${seen[*]} are not two consecutive minutes"
echo "schedule: runs of the slots ${seen[*]}"

# Each run's id ends in the minute Ray says it was submitted in (the slot's, in UTC).
dmn_wait 60 "the status branch records both runs" \
  bash -c "git -C '$DMN_REMOTE' show '$(dmn_ledger):status/tick.yaml' | grep -c 'submission_id: .*-${seen[1]}'" >/dev/null
rg list --format json >"$RG_TMP/list.json"
"$RG_PY" - "$RG_TMP/list.json" "$DMN_INSTANCE" <<'PYEOF'
import datetime, json, sys
jobs = [j for j in json.load(open(sys.argv[1])) if j.get("managed_by") == sys.argv[2]]
for j in jobs:
    slot = j["submission_id"].rsplit("-", 1)[1]
    start = j.get("start_time")
    if not start:
        continue
    if isinstance(start, (int, float)):
        t = datetime.datetime.fromtimestamp(start / 1000, datetime.timezone.utc)
    else:
        t = datetime.datetime.fromisoformat(start.replace("Z", "+00:00"))
    if t.strftime("%Y%m%d%H%M") != slot:
        sys.exit(f"{j['submission_id']} was submitted at {start}, not in its slot's minute")
PYEOF

# A restart inside a minute: the slot's run exists, so the new daemon submits nothing for it.
dmn_wait 70 "the start of a minute" early_in_minute >/dev/null
minute=$(utc_minute)
before=$(runs)
dmn_stop
dmn_start "$RG_TMP/daemon2.log" --interval 1s
dmn_wait_passes 3
mapfile -t after < <(slots)
[ "$(printf '%s\n' "${after[@]}" | uniq -d)" = "" ] || { dmn_list_ours >&2; rg_fail "a slot has two runs"; }
if [ "$(utc_minute)" = "$minute" ]; then
  [ "$(runs)" = "$before" ] || { dmn_list_ours >&2; rg_fail "the restart added a run inside minute $minute"; }
  echo "schedule: a restart inside minute $minute added no run ($before runs)"
else
  echo "schedule: the minute turned during the restart; still one run per slot (${#after[@]} runs)"
fi
grep -q "$minute" <(printf '%s\n' "${after[@]}") || rg_fail "no run of the slot $minute"
dmn_stop
echo "schedule: one run per minute, ids ending in their minute, none added by a restart"
