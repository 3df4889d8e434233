#!/usr/bin/env bash
# Why a run is Pending (docs/reconcile.md), on the real head, which has no GPU: a job asking
# for a GPU and one asking for a resource no node has stay PENDING, and each record's message
# says what the driver asks for that the cluster lacks, ahead of Ray's own words. A job whose
# driver fits keeps Ray's message. Usage:
#   pending_reason_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
rg_e2e_init "$1" "$2"

instance="e2e-pending-$RG_RUN_TAG"
remote=$RG_TMP/remote.git
work=$RG_TMP/work
rg_on_exit() { rg_stop_ours "$instance"; }
flags=(--repo "$remote" --cache-dir "$RG_TMP/cache" --instance "$instance")
status_file() { git -C "$remote" show "ray-gitops/status-$instance:status/$1.yaml"; }

rg_git_remote "$remote" "$work" "$RG_ADDRESS"
mkdir -p "$work/jobs"
printf 'workload: custom\nentrypoint: "true"\nentrypoint_num_cpus: 0\nentrypoint_num_gpus: 1\n' \
  >"$work/jobs/gpu.yaml"
rg_tag_spec "$work/jobs/gpu.yaml"
cat >"$work/jobs/special.yaml" <<'YAML'
workload: custom
entrypoint: "true"
entrypoint_num_cpus: 0
entrypoint_resources:
  rg_e2e_resource_nobody_has: 1
YAML
rg_tag_spec "$work/jobs/special.yaml"
rg_git_push "$work" "a job asking for a GPU, one asking for a resource nobody has"

rg sync "${flags[@]}" --no-artifacts >"$RG_TMP/sync1.out" 2>"$RG_TMP/sync1.log" ||
  { cat "$RG_TMP/sync1.out" "$RG_TMP/sync1.log" >&2; rg_fail "the sync failed"; }
for name in gpu special; do
  id=$(rg_list_ours "$instance" | awk -v n="$name" '$0 ~ n { print $1 }')
  [ -n "$id" ] || rg_fail "the $name job was not submitted"
  [ "$(rg_status_of "$id")" = PENDING ] || rg_fail "$id is not PENDING"
done

status_file gpu >"$RG_TMP/gpu.yaml"
status_file special >"$RG_TMP/special.yaml"
cat "$RG_TMP/gpu.yaml" "$RG_TMP/special.yaml"
grep -q '^phase: Pending' "$RG_TMP/gpu.yaml" || rg_fail "the GPU job is not Pending"
grep -Eq '^message: "?asks for 1 GPU; the cluster has 0 GPU, so it cannot start until the cluster grows\. .+' \
  "$RG_TMP/gpu.yaml" || rg_fail "the GPU job's message does not say it asks for a GPU the cluster lacks"
grep -Eq '^message: "?asks for 1 rg_e2e_resource_nobody_has; no node has rg_e2e_resource_nobody_has, so it cannot start' \
  "$RG_TMP/special.yaml" || rg_fail "the special job's message does not name the missing resource"

# A second sync writes the same messages: nothing is committed for either job.
before=$(git -C "$remote" rev-parse "ray-gitops/status-$instance")
rg sync "${flags[@]}" --no-artifacts >"$RG_TMP/sync2.out" 2>"$RG_TMP/sync2.log" ||
  { cat "$RG_TMP/sync2.out" "$RG_TMP/sync2.log" >&2; rg_fail "the second sync failed"; }
after=$(git -C "$remote" rev-parse "ray-gitops/status-$instance")
[ "$after" = "$before" ] || {
  git -C "$remote" diff "$before" "$after" >&2
  rg_fail "the second sync committed although nothing changed"
}
echo "pending reason: the GPU job and the special job say what they wait for"
