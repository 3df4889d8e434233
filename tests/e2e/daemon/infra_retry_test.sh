#!/usr/bin/env bash
# Failure classes (DESIGN §3.1; docs/reconcile.md), on the real head with one daemon passing
# every second over two specs at once:
# - sleeper, `sleep 600` with retries: 0 and infra_retries: 1. Its JobSupervisor process is
#   killed (kill -9): Ray ends it FAILED with JOB_SUPERVISOR_ACTOR_DIED; the status file says
#   "retrying after JOB_SUPERVISOR_ACTOR_DIED, 1 of 1" and a pass submits -r1 once the backoff
#   (30 s from the end) has passed; attempt 0's record keeps its error_type and the class
#   infra. -r1's supervisor killed too: Failed with infrastructure retries exhausted, no -r2.
# - exits, `exit 3` with retries: 0: Failed, never retried (its class is own).
# The supervisor is found from the entrypoint: Ray runs it as `/bin/sh -c ENTRYPOINT` from the
# supervisor actor's process, so the script takes the shell whose command line holds this
# run's marker and whose environment names the attempt's submission id (Ray's job config in
# RAY_JOB_CONFIG_JSON_ENV_VAR), and kills its parent after checking it is a
# ray::JobSupervisor. Prints the backoff Ray's times show. Usage:
#   infra_retry_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
source "$here/daemon_lib.sh"
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-infra-$RG_RUN_TAG"
rg_on_exit() {
  dmn_kill
  rg_stop_ours "$DMN_INSTANCE"
}

marker=rg-e2e-infra-$RG_RUN_TAG
dmn_init_repo
dmn_spec sleeper "sleep 600 && echo $marker"
printf 'retries: 0\ninfra_retries: 1\n' >>"$DMN_WORK/jobs/sleeper.yaml"
dmn_spec exits "exit 3"
printf 'retries: 0\n' >>"$DMN_WORK/jobs/exits.yaml"
dmn_push "a sleeper and a job that exits 3"

started=$SECONDS
dmn_start "$RG_TMP/daemon.log" --interval 1s

sleepers() { dmn_list_ours | awk '$1 ~ /^sleeper-/'; }
has_sleeper() { [ -n "$(sleepers)" ]; }
running() { rg_has_status "$1" RUNNING; }
field_of() {  # field_of ID FIELD: a field of Ray's job
  rg_api_get "/api/jobs/$1" | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1]) or "")' "$2"
}

# The pid of the JobSupervisor process that runs submission $1's entrypoint (none yet: fails).
supervisor_of() {
  local pid sup
  for pid in $(pgrep -f -- "$marker" || true); do
    case "$(ps -o args= -p "$pid" 2>/dev/null)" in "/bin/sh -c "*) ;; *) continue ;; esac
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -q "^RAY_JOB_CONFIG_JSON_ENV_VAR=.*\"$1\"" ||
      continue
    sup=$(ps -o ppid= -p "$pid" | tr -d ' ')
    case "$(ps -o args= -p "$sup" 2>/dev/null)" in
      ray::JobSupervisor*) echo "$sup"; return 0 ;;
    esac
  done
  return 1
}

kill_supervisor() {  # kill_supervisor ID
  local sup
  dmn_wait 120 "$1 RUNNING" running "$1" >/dev/null
  dmn_wait 30 "the shell of $1's entrypoint under a ray::JobSupervisor" supervisor_of "$1" >/dev/null
  sup=$(supervisor_of "$1")
  echo "infra: killing $1's supervisor (pid $sup: $(ps -o args= -p "$sup" | tr -s ' '))"
  kill -9 "$sup"
}

ray_error_is() { [ "$(field_of "$1" error_type)" = "$2" ]; }

# 1. The first kill: FAILED with JOB_SUPERVISOR_ACTOR_DIED, retried as -r1 after the backoff.
dmn_wait 120 "sleeper in Ray" has_sleeper >/dev/null
id0=$(sleepers | awk '{ print $1 }')
kill_supervisor "$id0"
t=$(dmn_wait 60 "$id0 FAILED" rg_has_status "$id0" FAILED)
echo "infra: Ray reported $id0 FAILED $t ms after the kill"
ray_error_is "$id0" JOB_SUPERVISOR_ACTOR_DIED ||
  rg_fail "$id0's error_type is $(field_of "$id0" error_type), not JOB_SUPERVISOR_ACTOR_DIED"
rg status "$id0" | grep -qx "error_type: JOB_SUPERVISOR_ACTOR_DIED" ||
  { rg status "$id0" >&2; rg_fail "status $id0 does not name JOB_SUPERVISOR_ACTOR_DIED"; }
retrying() { dmn_status_file sleeper | grep -q 'retrying after JOB_SUPERVISOR_ACTOR_DIED, 1 of 1'; }
dmn_wait 30 "sleeper recorded 'retrying after JOB_SUPERVISOR_ACTOR_DIED, 1 of 1'" retrying >/dev/null
dmn_has_phase sleeper Pending || { dmn_status_file sleeper >&2; rg_fail "sleeper is not Pending while it waits to retry"; }
id1=$id0-r1
dmn_wait 150 "$id1 submitted" dmn_in_ray "$id1" >/dev/null
gap=$(($(field_of "$id1" start_time) - $(field_of "$id0" end_time)))
echo "infra: $id1 submitted $gap ms after $id0 ended (backoff 30000 ms)"
[ "$gap" -ge 30000 ] || rg_fail "$id1 was submitted before the 30 s backoff ($gap ms)"
# The first backoff, not the second (60 s): passes run every second, and a loaded machine may
# delay one by some seconds, which must not fail the test.
[ "$gap" -lt 55000 ] || rg_fail "$id1 was submitted $gap ms after $id0 ended: later than the first backoff (30 s) explains"

# Attempt 0's record keeps what ended it.
dmn_status_file sleeper >"$RG_TMP/sleeper.yaml"
"$RG_PY" - "$RG_TMP/sleeper.yaml" "$id0" <<'PYEOF' || { cat "$RG_TMP/sleeper.yaml" >&2; rg_fail "attempt 0's record"; }
import sys, yaml
record = yaml.safe_load(open(sys.argv[1]))
a0 = [a for a in record["attempts"] if a["submission_id"] == sys.argv[2]]
assert len(a0) == 1, record["attempts"]
assert a0[0]["error_type"] == "JOB_SUPERVISOR_ACTOR_DIED", a0
assert a0[0]["failure_class"] == "infra", a0
PYEOF

# 2. The second kill spends infra_retries: Failed, exhausted, no third attempt.
kill_supervisor "$id1"
dmn_wait 60 "$id1 FAILED" rg_has_status "$id1" FAILED >/dev/null
ray_error_is "$id1" JOB_SUPERVISOR_ACTOR_DIED || rg_fail "$id1's error_type is $(field_of "$id1" error_type)"
exhausted() { dmn_has_phase sleeper Failed && dmn_status_file sleeper | grep -q '^message: .*exhausted'; }
dmn_wait 60 "sleeper recorded Failed with its infrastructure retries exhausted" exhausted >/dev/null
dmn_status_file sleeper | grep '^message:'

# 3. exits failed by its own doing and was not retried (it has had the whole test to be).
dmn_wait 60 "exits recorded Failed" dmn_has_phase exits Failed >/dev/null
dmn_status_file exits >"$RG_TMP/exits.yaml"
"$RG_PY" - "$RG_TMP/exits.yaml" <<'PYEOF' || { cat "$RG_TMP/exits.yaml" >&2; rg_fail "exits' record"; }
import sys, yaml
record = yaml.safe_load(open(sys.argv[1]))
assert record["attempt"] == 0 and record["status"] == "FAILED", record
assert [a["failure_class"] for a in record["attempts"]] == ["own"], record["attempts"]
PYEOF

dmn_wait_passes 3
dmn_list_ours >"$RG_TMP/ours.txt"
exits_id=$(awk '$1 ~ /^exits-/ { print $1 }' "$RG_TMP/ours.txt")
printf '%s FAILED\n%s FAILED\n%s FAILED\n' "$exits_id" "$id0" "$id1" | diff - "$RG_TMP/ours.txt" >&2 ||
  rg_fail "expected only $exits_id, $id0 and $id1, all FAILED"
dmn_has_phase sleeper Failed || rg_fail "sleeper left Failed"
dmn_stop
echo "infra: two supervisor kills gave one retry ($id1) and no third attempt; exit 3 was not retried ($((SECONDS - started)) s from the daemon's start)"
