#!/usr/bin/env bash
# One-off runs of `ray-gitops submit` belong to no instance (docs/operations.md): submitted beside
# a repository that a `sync` and a daemon reconcile, they keep running, never reach the status
# branch, and `list` shows them as `cli`. A second submit of the same spec submits nothing and
# names the run that exists and its state (exit 3); --new-run submits -cli-1, then -cli-2.
# Usage: one_off_submit_test.sh RAY_GITOPS_BINARY SOURCE_DIR [FAKE_RAY_SERVER_BINARY]
# With the third argument the test starts its own fake head instead of using the real one
# named by $RG_E2E_RAY_STATE_DIR.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=lib.sh
source "$here/lib.sh"
on_fake=false
if [ $# -ge 3 ]; then
  rg_e2e_fake_head "$3"
  on_fake=true
fi
rg_e2e_init "$1" "$2"
# shellcheck source=daemon/daemon_lib.sh
source "$here/daemon/daemon_lib.sh"

# On its own fake head the test reconciles as the default instance, the very label the old
# `submit` put on its jobs; on the shared real head as an instance of its own, so that no
# other test's jobs are within its reach.
if $on_fake; then DMN_INSTANCE=ray-gitops; else DMN_INSTANCE="e2e-oneoff-$RG_RUN_TAG"; fi
DMN_PID=""
one_offs=()
stop_one_offs() {
  local id
  for id in "${one_offs[@]}"; do rg stop "$id" >/dev/null 2>&1 || true; done
}
rg_on_exit() {
  dmn_kill
  rg_stop_ours "$DMN_INSTANCE"
  stop_one_offs
}

expect_exit() {  # expect_exit STATUS COMMAND...: runs COMMAND with stdout/stderr in $RG_TMP/{out,err}
  local want=$1 got
  shift
  set +e
  "$@" >"$RG_TMP/out" 2>"$RG_TMP/err"
  got=$?
  set -e
  if [ "$got" != "$want" ]; then
    cat "$RG_TMP/out" "$RG_TMP/err" >&2
    rg_fail "'$*' exited $got, expected $want"
  fi
}
artifacts=$RG_TMP/artifacts
submit() {  # submit SPEC [FLAGS...]
  local spec=$1
  shift
  rg submit --config "$DMN_WORK/cluster.yaml" --jobspec "$spec" --artifacts-root "$artifacts" "$@"
}
sync_() { rg sync --repo "$DMN_REMOTE" --cache-dir "$RG_TMP/cache" --instance "$DMN_INSTANCE" --no-artifacts; }
# The status branch's whole tree, every file's text (empty before the first status commit).
status_tree_text() { git -C "$DMN_REMOTE" grep -h -e . $(dmn_ledger) 2>/dev/null || true; }
still_running() {  # still_running ID...: each job is RUNNING
  local id status
  for id in "$@"; do
    status=$(rg_status_of "$id")
    [ "$status" = RUNNING ] || rg_fail "$id is $status, expected it still RUNNING"
  done
}
one_off_spec() {  # one_off_spec FILE ENTRYPOINT: a custom spec unique to this run
  mkdir -p "$(dirname "$1")"
  printf 'workload: custom\nentrypoint: %s\nentrypoint_num_cpus: 0\n' "$2" >"$1"
  rg_tag_spec "$1"
}

# The repository holds one spec, kept; the one-off probe is not in it.
dmn_init_repo
dmn_spec kept "sleep 300"
dmn_push "kept"
probe_spec=$RG_TMP/adhoc/jobs/probe.yaml
one_off_spec "$probe_spec" "sleep 300"

# --- submit: <name>-<hash>-cli, submitted-by cli, no managed-by; --instance is ignored ---
expect_exit 0 submit "$probe_spec" --instance "$DMN_INSTANCE"
probe=$(cat "$RG_TMP/out")
one_offs+=("$probe")
[[ "$probe" =~ ^probe-[0-9a-f]{10}-cli$ ]] || rg_fail "one-off id '$probe' is not probe-<hash>-cli"
grep -q "warning: --instance is ignored" "$RG_TMP/err" || rg_fail "no warning for --instance: $(cat "$RG_TMP/err")"
rg_api_get "/api/jobs/$probe" | "$RG_PY" -c '
import json, sys
m = json.load(sys.stdin)["metadata"]
assert m.get("gitops.submitted-by") == "cli", m
assert "gitops.managed-by" not in m, m
assert m["gitops.name"] == "probe" and m["gitops.spec-path"] == "jobs/probe.yaml", m
assert len(m["gitops.spec-hash"]) == 10 and m["gitops.attempt"] == "0", m
assert "gitops.commit" not in m and "gitops.repo" not in m, m' || rg_fail "labels of $probe"
for f in config/ray_config.yaml config/jobspec.yaml config/submit_payload.json logs/submit.out \
  debug/ray_job_list_post.txt; do
  [ -s "$artifacts/jobs/$probe/$f" ] || rg_fail "artifact $f of $probe missing or empty"
done

# A one-off of the repository's own spec takes an id beside the daemon's.
expect_exit 0 submit "$DMN_WORK/jobs/kept.yaml"
kept_one_off=$(cat "$RG_TMP/out")
one_offs+=("$kept_one_off")
[[ "$kept_one_off" =~ ^kept-[0-9a-f]{10}-cli$ ]] || rg_fail "one-off id '$kept_one_off'"
rg_wait_status "$probe" RUNNING 120
rg_wait_status "$kept_one_off" RUNNING 120

# --- two syncs: the one-offs keep running, the daemon's run of kept is its own ---
expect_exit 0 sync_
expect_exit 0 sync_
kept_daemon=$(rg_list_ours "$DMN_INSTANCE" | awk '{ print $1 }')
[[ "$kept_daemon" =~ ^kept-[0-9a-f]{10}$ ]] ||
  rg_fail "the instance's jobs are not exactly one kept-<hash>: $(rg_list_ours "$DMN_INSTANCE")"
rg_wait_status "$kept_daemon" RUNNING 120
still_running "$probe" "$kept_one_off"
[ -n "$(status_tree_text)" ] || rg_fail "sync wrote no status branch"
no_one_off_in_status() {
  if status_tree_text | grep -F -e "$probe" -e "$kept_one_off"; then
    rg_fail "a one-off run reached the status branch"
  fi
}
no_one_off_in_status
if git -C "$DMN_REMOTE" cat-file -e $(dmn_ledger):status/probe.yaml 2>/dev/null; then
  rg_fail "the status branch has a record of probe, which is not in the repository"
fi

# --- the daemon for two intervals after its first pass ---
dmn_start "$RG_TMP/daemon.log" --interval 2s
passes() { grep -cE ' (info|warn|error) pass .*result=' "$DMN_LOG" || true; }
at_least_passes() { [ "$(passes)" -ge "$1" ]; }
dmn_wait 60 "the daemon's first pass and two interval passes" at_least_passes 3 >/dev/null
dmn_stop 20
[ "$DMN_STATUS" = 0 ] || { cat "$DMN_LOG" >&2; rg_fail "the daemon exited $DMN_STATUS"; }
if grep -E "$probe|$kept_one_off" "$DMN_LOG" >&2; then rg_fail "the daemon acted on a one-off run"; fi
still_running "$probe" "$kept_one_off" "$kept_daemon"
no_one_off_in_status

# --- list: MANAGED_BY is cli for the one-offs; JSON keeps the labels apart ---
rg list >"$RG_TMP/list.txt"
head -n1 "$RG_TMP/list.txt" | grep -qE '^SUBMISSION_ID +NAME +STATUS +TYPE +MANAGED_BY ' ||
  rg_fail "list header: $(head -n1 "$RG_TMP/list.txt")"
grep -qE "^$probe +probe +RUNNING +SUBMISSION +cli " "$RG_TMP/list.txt" ||
  rg_fail "list does not show $probe as cli: $(cat "$RG_TMP/list.txt")"
grep -qE "^$kept_daemon +kept +RUNNING +SUBMISSION +$DMN_INSTANCE " "$RG_TMP/list.txt" ||
  rg_fail "list does not show $kept_daemon as $DMN_INSTANCE"
rg list --format json | "$RG_PY" -c '
import json, sys
jobs = {j["submission_id"]: j for j in json.load(sys.stdin)}
one_off, daemon = jobs[sys.argv[1]], jobs[sys.argv[2]]
assert one_off["submitted_by"] == "cli" and one_off["managed_by"] is None, one_off
assert one_off["name"] == "probe", one_off
assert daemon["managed_by"] == sys.argv[3] and daemon["submitted_by"] is None, daemon
' "$probe" "$kept_daemon" "$DMN_INSTANCE" || rg_fail "list --format json"
rg status "$probe" | grep -qx "managed_by: cli" || rg_fail "status does not show $probe as cli"

# --- a second submit names the run and its state, submits nothing, exits 3 ---
jobs_before=$(rg list --format json | "$RG_PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
expect_exit 3 submit "$probe_spec"
[ "$(cat "$RG_TMP/out")" = "$probe" ] || rg_fail "a refused submit printed '$(cat "$RG_TMP/out")'"
grep -q "^ray-gitops: $probe already exists: RUNNING (.*); nothing submitted; use --new-run" \
  "$RG_TMP/err" || rg_fail "refusal: $(cat "$RG_TMP/err")"
[ "$(grep -c '^outcome: ' "$artifacts/jobs/$probe/logs/submit.out")" = 1 ] ||
  rg_fail "a refused submit touched submit.out"

# --- --new-run: -cli-1, then -cli-2, each labelled and with artifacts ---
for n in 1 2; do
  expect_exit 0 submit "$probe_spec" --new-run
  id=$(cat "$RG_TMP/out")
  one_offs+=("$id")
  [ "$id" = "$probe-$n" ] || rg_fail "--new-run gave '$id', expected $probe-$n"
  rg_api_get "/api/jobs/$id" | "$RG_PY" -c '
import json, sys
m = json.load(sys.stdin)["metadata"]
assert m.get("gitops.submitted-by") == "cli" and "gitops.managed-by" not in m, m' ||
    rg_fail "labels of $id"
  [ -s "$artifacts/jobs/$id/logs/submit.out" ] || rg_fail "no artifacts for $id"
done
jobs_after=$(rg list --format json | "$RG_PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$jobs_after" -ge $((jobs_before + 2)) ] || rg_fail "job count $jobs_before -> $jobs_after"

# --- a FAILED run: the refusal gives Ray's first line, never the driver's log tail ---
marker="LOG-TAIL-$RG_RUN_TAG"
# The fake logs only what an entrypoint starting with `echo` prints, and then succeeds.
if $on_fake; then failing="exit 3"; else failing="echo $marker; exit 3"; fi
failer_spec=$RG_TMP/adhoc/jobs/failer.yaml
one_off_spec "$failer_spec" "$failing"
expect_exit 0 submit "$failer_spec" --no-artifacts
failer=$(cat "$RG_TMP/out")
one_offs+=("$failer")
rg_wait_status "$failer" FAILED 120
expect_exit 3 submit "$failer_spec" --no-artifacts
grep -q "^ray-gitops: $failer already exists: FAILED (Job entrypoint command failed with exit code 3" \
  "$RG_TMP/err" || rg_fail "refusal of a FAILED run: $(cat "$RG_TMP/err")"
[ "$(wc -l <"$RG_TMP/err")" = 1 ] || rg_fail "the refusal is not one line: $(cat "$RG_TMP/err")"
if grep -q "$marker" "$RG_TMP/err"; then rg_fail "the refusal printed the driver's log"; fi
$on_fake || rg logs "$failer" | grep -q "$marker" || rg_fail "the failing job did not log $marker"

# --- one more sync, then stop this test's own jobs ---
expect_exit 0 sync_
still_running "$probe" "$probe-1" "$probe-2" "$kept_one_off"
no_one_off_in_status
stop_one_offs
for id in "$probe" "$probe-1" "$probe-2" "$kept_one_off"; do rg_wait_status "$id" STOPPED 60; done
echo "one-off submit: ok ($probe, $kept_one_off beside $kept_daemon, $failer)"
