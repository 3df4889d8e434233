#!/usr/bin/env bash
# The Stopping phase (docs/reconcile.md), on the real head: a removed spec whose job stays PENDING
# for a resource the cluster lacks. Ray answers the stop but keeps the job PENDING; the sent
# stop is remembered in the ledger, so `plan` does not repeat it (exit 0) and shows the job as
# Stopping, and a second sync sends nothing. Usage:
#   stopping_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
rg_e2e_init "$1" "$2"

instance="e2e-stopping-$RG_RUN_TAG"
remote=$RG_TMP/remote.git
work=$RG_TMP/work
rg_on_exit() { rg_stop_ours "$instance"; }
flags=(--repo "$remote" --cache-dir "$RG_TMP/cache" --instance "$instance")
status_file() { git -C "$remote" show "ray-gitops/status-$instance:status/$1.yaml"; }

rg_git_remote "$remote" "$work" "$RG_ADDRESS"
mkdir -p "$work/jobs"
cat >"$work/jobs/starved.yaml" <<'YAML'
workload: custom
entrypoint: "true"
entrypoint_num_cpus: 0
entrypoint_resources:
  rg_e2e_resource_nobody_has: 1
YAML
rg_tag_spec "$work/jobs/starved.yaml"
printf 'workload: custom\nentrypoint: "true"\nentrypoint_num_cpus: 0\n' >"$work/jobs/other.yaml"
rg_tag_spec "$work/jobs/other.yaml"
rg_git_push "$work" "a job that can never be scheduled, and another"

rg sync "${flags[@]}" --no-artifacts >"$RG_TMP/sync1.out" 2>"$RG_TMP/sync1.log" ||
  { cat "$RG_TMP/sync1.out" "$RG_TMP/sync1.log" >&2; rg_fail "the first sync failed"; }
id=$(rg_list_ours "$instance" | awk '/starved/ { print $1 }')
[ -n "$id" ] || rg_fail "the starved job was not submitted"
[ "$(rg_status_of "$id")" = PENDING ] || rg_fail "$id is not PENDING"

git -C "$work" rm -q jobs/starved.yaml
rg_git_push "$work" "remove the starved job"
rg sync "${flags[@]}" --no-artifacts >"$RG_TMP/sync2.out" 2>"$RG_TMP/sync2.log" ||
  { cat "$RG_TMP/sync2.out" "$RG_TMP/sync2.log" >&2; rg_fail "the second sync failed"; }
grep -q 'stopped' "$RG_TMP/sync2.log" || { cat "$RG_TMP/sync2.log" >&2; rg_fail "no stop was sent"; }
[ "$(rg_status_of "$id")" = PENDING ] ||
  rg_fail "Ray carried out the stop of $id (now $(rg_status_of "$id")); this head no longer keeps a starved job PENDING"

# The ledger remembers the stop; the plan neither repeats it nor reports a change.
status_file starved >"$RG_TMP/starved.yaml"
grep -q '^phase: Stopping' "$RG_TMP/starved.yaml" || { cat "$RG_TMP/starved.yaml" >&2; rg_fail "the record is not Stopping"; }
grep -q 'stop_sent_at:' "$RG_TMP/starved.yaml" || rg_fail "the record does not say when the stop was sent"
set +e
rg plan --repo "$remote" --cache-dir "$RG_TMP/cache" --instance "$instance" >"$RG_TMP/plan.out" 2>"$RG_TMP/plan.err"
code=$?
set -e
cat "$RG_TMP/plan.out"
[ "$code" = 0 ] || { cat "$RG_TMP/plan.err" >&2; rg_fail "plan exited $code, expected 0 (nothing pending)"; }
grep -Eq "^keep +starved +$id +Stopping +spec removed; stop sent at [0-9T:.-]+Z, Ray still reports PENDING" "$RG_TMP/plan.out" ||
  rg_fail "plan does not show starved as Stopping since the time of the stop"
grep -q '^stop ' "$RG_TMP/plan.out" && rg_fail "plan repeats the stop"

# A second sync sends nothing and commits nothing of the starved job. The other job runs
# `true` and may move on between the two syncs (PENDING to RUNNING on a busy machine, or to
# SUCCEEDED): then, and only then, a commit records that step of the other job.
before=$(git -C "$remote" rev-parse ray-gitops/status-$instance)
rg sync "${flags[@]}" --no-artifacts >"$RG_TMP/sync3.out" 2>"$RG_TMP/sync3.log" ||
  { cat "$RG_TMP/sync3.out" "$RG_TMP/sync3.log" >&2; rg_fail "the third sync failed"; }
grep -q 'stopped' "$RG_TMP/sync3.log" && rg_fail "the third sync sent the stop again"
after=$(git -C "$remote" rev-parse ray-gitops/status-$instance)
if [ "$after" != "$before" ]; then
  git -C "$remote" diff --name-only "$before" "$after" >"$RG_TMP/changed.txt"
  grep -Evx 'status/other.yaml|STATUS.md' "$RG_TMP/changed.txt" &&
    rg_fail "the third sync committed more than a step of the other job"
  grep -qx 'status/other.yaml' "$RG_TMP/changed.txt" ||
    rg_fail "the third sync committed, but not a step of the other job"
fi
echo "stopping: $id stays PENDING after its stop; plan exit 0, shows Stopping; no repeat"
