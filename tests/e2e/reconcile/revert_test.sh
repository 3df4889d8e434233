#!/usr/bin/env bash
# `git revert` brings a run back (docs/reconcile.md): a run ray-gitops stopped because its spec was
# replaced or removed runs again, as its next attempt, when a revert makes its spec desired
# again. Usage:
#   revert_test.sh RAY_GITOPS_BINARY SOURCE_DIR [FAKE_RAY_SERVER_BINARY]
# With the third argument the test starts its own fake head instead of using the real one
# named by $RG_E2E_RAY_STATE_DIR.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

source "$here/../lib.sh"
[ $# -ge 3 ] && rg_e2e_fake_head "$3"
rg_e2e_init "$1" "$2"

instance="e2e-revert-$RG_RUN_TAG"
remote=$RG_TMP/remote.git
work=$RG_TMP/work
rg_on_exit() { rg_stop_ours "$instance"; }

list_ours() { rg_list_ours "$instance"; }
sync_() {
  rg sync --repo "$remote" --cache-dir "$RG_TMP/cache" --instance "$instance" --no-artifacts \
    >>"$RG_TMP/sync.out" 2>>"$RG_TMP/sync.log" || {
    tail -n 30 "$RG_TMP/sync.out" "$RG_TMP/sync.log" >&2
    rg_fail "sync failed"
  }
}
status_file() { git -C "$remote" show "ray-gitops/status-$instance:status/$1.yaml"; }
push() { rg_git_push "$work" "$1"; }
revert_head() {
  git -C "$work" revert --no-edit HEAD >/dev/null
  git -C "$work" push -q origin main
}
spec() { # spec FILE SECONDS
  mkdir -p "$(dirname "$1")"
  printf 'workload: custom\nentrypoint: sleep %s\nentrypoint_num_cpus: 0\n' "$2" >"$1"
  rg_tag_spec "$1"
}
id_of() { list_ours | awk '{ print $1 }' | grep -E "^$1-[0-9a-f]{10}\$" || true; }
attempt_label() {
  rg_api_get "/api/jobs/$1" | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["gitops.attempt"])'
}

rg_git_remote "$remote" "$work" "$RG_ADDRESS"
spec "$work/jobs/one.yaml" 300
spec "$work/jobs/two.yaml" 301
push "v1 of one, and two"
sync_
v1=$(id_of one)
two=$(id_of two)
[ -n "$v1" ] && [ -n "$two" ] || { list_ours >&2; rg_fail "the first sync did not submit both"; }
rg_wait_status "$v1" RUNNING
rg_wait_status "$two" RUNNING

# --- edit v1 -> v2: v1 stopped as replaced ---
spec "$work/jobs/one.yaml" 299
push "v2 of one"
sync_
rg_wait_status "$v1" STOPPED 60
v2=$(id_of one | grep -vx "$v1" || true)
[ -n "$v2" ] || { list_ours >&2; rg_fail "v2 was not submitted"; }
rg_wait_status "$v2" RUNNING
sync_ # records v1's end
status_file one | grep -q 'stop_reason: replaced' || { status_file one >&2; rg_fail "no stop_reason: replaced"; }

# --- git revert: v2 stopped, v1 runs again as attempt 1 ---
revert_head
sync_
rg_wait_status "$v2" STOPPED 60
rg_wait_status "$v1-r1" RUNNING
[ "$(attempt_label "$v1-r1")" = 1 ] || rg_fail "the restored run is not attempt 1"
[ "$(rg_status_of "$v1")" = STOPPED ] || rg_fail "attempt 0 of v1 changed"
sync_
status_file one >"$RG_TMP/one.yaml"
grep -q "^submission_id: $v1-r1\$" "$RG_TMP/one.yaml" || { cat "$RG_TMP/one.yaml" >&2; rg_fail "status is not on $v1-r1"; }
grep -q '^attempt: 1$' "$RG_TMP/one.yaml" || rg_fail "status attempt is not 1"
grep -q '^phase: Running$' "$RG_TMP/one.yaml" || rg_fail "one is not Running"
grep -q 'stopped outside ray-gitops' "$RG_TMP/one.yaml" && rg_fail "a run we stopped is called stopped outside ray-gitops"

# --- delete two, then restore it with a revert: attempt 1 of the same spec ---
git -C "$work" rm -q jobs/two.yaml
push "remove two"
sync_
rg_wait_status "$two" STOPPED 60
sync_ # records two's end; the record of a removed spec is kept
status_file two | grep -q '^phase: Removed$' || { status_file two >&2; rg_fail "two's record is not kept as Removed"; }
revert_head
sync_
rg_wait_status "$two-r1" RUNNING
[ "$(attempt_label "$two-r1")" = 1 ] || rg_fail "the restored two is not attempt 1"

# --- and nothing more: a converged pass plans nothing ---
rg plan --repo "$remote" --cache-dir "$RG_TMP/cache" --instance "$instance" >"$RG_TMP/plan" 2>&1 ||
  { cat "$RG_TMP/plan" >&2; rg_fail "plan after the reverts has changes"; }
echo "PASS"
