#!/usr/bin/env bash
# Finished runs (docs/reconcile.md, "Finished jobs in Ray"; docs/artifacts.md, "Driver logs"),
# on the real head: the daemon with --gc-finished-after 2s keeps the driver log of a run that
# succeeded in its artifacts, deletes the run from Ray once its end is committed, and never
# submits it again. Usage:
#   finished_runs_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
source "$here/daemon_lib.sh"
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-finished-$RG_RUN_TAG"
DMN_ARTIFACTS_ROOT=$RG_TMP/shared
mkdir -p "$DMN_ARTIFACTS_ROOT"
rg_on_exit() {
  dmn_kill
  rg_stop_ours "$DMN_INSTANCE"
}

marker="finished-run-marker-$RG_RUN_TAG"
dmn_init_repo
dmn_spec done "echo $marker"
dmn_push "a run that prints a marker and succeeds"
dmn_start "$RG_TMP/daemon.log" --interval 1s --gc-finished-after 2s

# Submitted, ended, recorded: the status branch says Succeeded.
dmn_wait 180 "done recorded Succeeded" dmn_has_phase done Succeeded >/dev/null
id=$(dmn_status_file done | rg_yaml_field submission_id)
[ -n "$id" ] || rg_fail "the record names no submission id"

# Its driver log was kept before anything could delete it.
log=$DMN_ARTIFACTS_ROOT/jobs/$id/logs/driver.log
[ -f "$log" ] || { ls -R "$DMN_ARTIFACTS_ROOT" >&2; cat "$DMN_LOG" >&2; rg_fail "no $log"; }
grep -q "$marker" "$log" || { cat "$log" >&2; rg_fail "the kept driver log does not hold the run's output"; }

# Deleted from Ray once its end was committed and 2 s had passed.
not_in_ray() { ! dmn_in_ray "$1"; }
dmn_wait 60 "$id deleted from Ray" not_in_ray "$id" >/dev/null
# The pass logs its deletes when it ends, after Ray already lost the job: wait for the line.
logged_delete() { grep -q "deleted from Ray.*$1" "$DMN_LOG"; }
dmn_wait 30 "the daemon logging the delete of $id" logged_delete "$id" >/dev/null

# Three more passes: nothing of ours in Ray (not submitted again), the record kept.
dmn_wait_passes 3
[ -z "$(dmn_list_ours)" ] || { dmn_list_ours >&2; rg_fail "a run of ours is in Ray again"; }
dmn_has_phase done Succeeded || rg_fail "the record no longer says Succeeded"
dmn_status_file done | grep -q "submission_id: \"\\?$id" || rg_fail "the record no longer names $id"
dmn_stop
echo "finished runs: $id kept its driver log ($(wc -c <"$log") bytes), was deleted from Ray, and was not run again"
