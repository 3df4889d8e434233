#!/usr/bin/env bash
# Crash safety of `sync` (docs/reconcile.md): a sync killed with SIGKILL after its submit reached
# Ray and before it recorded anything leaves one run, which the next sync adopts; a third sync
# then has nothing to do. Usage:
#   crash_test.sh RAY_GITOPS_BINARY SOURCE_DIR [FAKE_RAY_SERVER_BINARY]
# With the third argument the test starts its own fake head and makes it hold back its answer
# to the submit, so the kill lands deterministically inside the window. Against the real head
# named by $RG_E2E_RAY_STATE_DIR, the kill comes as soon as the job shows up in Ray's list;
# whether it beat the status commit is printed, the assertions hold either way.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

source "$here/../lib.sh"
[ $# -ge 3 ] && rg_e2e_fake_head "$3" --hold-submit-ms 20000
rg_e2e_init "$1" "$2"

instance="e2e-crash-$RG_RUN_TAG"
remote=$RG_TMP/remote.git
work=$RG_TMP/work
rg_on_exit() { rg_stop_ours "$instance"; }

list_ours() { rg_list_ours "$instance"; }
repo_flags=(--repo "$remote" --cache-dir "$RG_TMP/cache" --instance "$instance" --no-artifacts)
status_commits() { git -C "$remote" rev-list --count ray-gitops/status-$instance 2>/dev/null || echo 0; }
status_file() { git -C "$remote" show "ray-gitops/status-$instance:status/$1.yaml"; }
field() { rg_yaml_field "$2" <"$1"; }
sync_expect_0() {
  local log=$1
  shift
  if ! rg sync "${repo_flags[@]}" "$@" >"$log.out" 2>"$log"; then
    cat "$log.out" "$log" >&2
    rg_fail "sync failed ($log)"
  fi
}

rg_git_remote "$remote" "$work" "$RG_ADDRESS"
mkdir -p "$work/jobs"
printf 'workload: custom\nentrypoint: sleep 300\nentrypoint_num_cpus: 0\n' >"$work/jobs/crash.yaml"
rg_tag_spec "$work/jobs/crash.yaml"
rg_git_push "$work" "one long job"

# The id the run must have, from the plan (no sync has run yet).
want_id=$(rg plan --repo "$remote" --cache-dir "$RG_TMP/plan-cache" --instance "$instance" \
  --format json | "$RG_PY" -c '
import json, sys
ids = {a.get("submission_id") for a in json.load(sys.stdin).get("actions", [])} - {None}
assert len(ids) == 1, ids
print(ids.pop())') || true
[[ "$want_id" =~ ^crash-[0-9a-f]{10}$ ]] || rg_fail "plan does not name a crash-<hash> id (got '$want_id')"

# --- sync #1, killed by SIGKILL once Ray has the job and before it could record status ---
if [ -n "${RG_FAKE_PID:-}" ]; then
  kill -USR2 "${RG_FAKE_PID:-}"
  read -r ack <&"${RG_FAKE[0]}"
  [ "$ack" = holding ] || rg_fail "the fake did not arm the held submit (said '$ack')"
fi
# The sync runs as a child of this poller, which is warmed up before it starts the sync, polls
# Ray's list every 10 ms and SIGKILLs the sync the moment one of our jobs is there. It prints
# "killed" or, when the sync finished first (possible only on the real head), "finished".
token_args=()
[ -n "$RG_TOKEN" ] && token_args=(--ray-token-file "$RG_TOKEN_FILE")
outcome=$(RG_API_ADDRESS=$RG_ADDRESS RG_API_TOKEN=$RG_TOKEN "$RG_PY" - "$instance" \
  "$RG_TMP/sync1.log" "$RG_BIN" --ray-address "$RG_ADDRESS" "${token_args[@]}" sync \
  "${repo_flags[@]}" <<'PYEOF'
import http.client, json, os, signal, subprocess, sys, time, urllib.parse
instance, log, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
url = urllib.parse.urlsplit(os.environ["RG_API_ADDRESS"])
headers = {"User-Agent": "ray-gitops-e2e"}
if os.environ["RG_API_TOKEN"]:
    headers["Authorization"] = "Bearer " + os.environ["RG_API_TOKEN"]
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)

def ours_in_ray():
    conn.request("GET", "/api/jobs/", headers=headers)
    jobs = json.loads(conn.getresponse().read())
    return any((j.get("metadata") or {}).get("gitops.managed-by") == instance for j in jobs)

assert not ours_in_ray(), "a job of ours exists before the sync"
with open(log, "wb") as err:
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    if ours_in_ray():
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait()
            print("killed" if child.returncode == -signal.SIGKILL else "finished")
        else:
            print("finished")
        sys.exit(0)
    if child.poll() is not None:
        sys.exit("the sync ended (exit %d) before its job appeared in Ray" % child.returncode)
    time.sleep(0.01)
child.kill()
sys.exit("no job of ours appeared in Ray within 120 s")
PYEOF
) || { cat "$RG_TMP/sync1.log" >&2; rg_fail "sync #1 could not be run and killed"; }
echo "sync #1: $outcome"
if [ -n "${RG_FAKE_PID:-}" ] && [ "$outcome" != killed ]; then
  cat "$RG_TMP/sync1.log" >&2
  rg_fail "the fake held the submit's answer, yet the sync was not killed while waiting for it"
fi

if status_file crash >/dev/null 2>&1; then
  recorded_before_kill=yes
else
  recorded_before_kill=no
fi
echo "status recorded by sync #1: $recorded_before_kill"
# The fake held the submit's answer, so the sync cannot have recorded anything.
if [ -n "${RG_FAKE_PID:-}" ] && [ "$recorded_before_kill" = yes ]; then
  rg_fail "the killed sync recorded status although its submit never got an answer"
fi
[ "$(list_ours | wc -l)" = 1 ] || { list_ours >&2; rg_fail "expected one job after the killed sync"; }
[ "$(list_ours | awk '{ print $1 }')" = "$want_id" ] || rg_fail "the job is not $want_id"

# On the real head, let the run start so that the later passes see a settled Ray status.
deadline=$((SECONDS + 120))
until [ "$(list_ours | awk '{ print $2 }')" = RUNNING ]; do
  [ $SECONDS -lt $deadline ] || { list_ours >&2; rg_fail "$want_id never ran"; }
  sleep 1
done

# --- sync #2: the run is adopted, not duplicated ---
sync_expect_0 "$RG_TMP/sync2.log"
[ "$(list_ours | wc -l)" = 1 ] || { list_ours >&2; rg_fail "sync #2 submitted a second job"; }
[ "$(list_ours)" = "$want_id RUNNING" ] || { list_ours >&2; rg_fail "the adopted run is not RUNNING"; }
if grep -q 'submitted attempt=' "$RG_TMP/sync2.log"; then
  cat "$RG_TMP/sync2.log" >&2
  rg_fail "sync #2 logged a submit"
fi
status_file crash >"$RG_TMP/crash.yaml" || rg_fail "sync #2 recorded no status for crash"
[ "$(field "$RG_TMP/crash.yaml" phase)" = Running ] || { cat "$RG_TMP/crash.yaml" >&2; rg_fail "phase is not Running"; }
[ "$(field "$RG_TMP/crash.yaml" submission_id)" = "$want_id" ] || rg_fail "status names another id"
[ "$(field "$RG_TMP/crash.yaml" attempt)" = 0 ] || rg_fail "status is not attempt 0"
[ "$(field "$RG_TMP/crash.yaml" status)" = RUNNING ] || rg_fail "status does not hold Ray's RUNNING"

# --- sync #3: nothing to do, nothing recorded ---
before=$(status_commits)
sync_expect_0 "$RG_TMP/sync3.log"
[ "$(status_commits)" = "$before" ] || rg_fail "sync #3 made a status commit"
[ "$(list_ours)" = "$want_id RUNNING" ] || { list_ours >&2; rg_fail "sync #3 changed Ray's jobs"; }
if grep -Eq '(submitted|adopted) attempt=|stopped job=|status committed' "$RG_TMP/sync3.log"; then
  cat "$RG_TMP/sync3.log" >&2
  rg_fail "sync #3 acted"
fi
echo "PASS"
