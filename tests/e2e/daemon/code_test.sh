#!/usr/bin/env bash
# Code from the repository (docs/code-in-the-repository.md) on the real head, with `sync` and
# `plan` as a person runs them: a spec whose `code: src` prints a marker from src/ and then
# waits for a file the script makes. Push, sync: the run's log shows marker A. Change only
# src/, push: plan names the code change, sync stops the old run (it is active) and the new
# run's log shows marker B. A second spec on the same folder reuses the package (no upload).
# A spec with `code_ref: v1` keeps marker A while src/ moves on, with no restart. Prints the
# time of the upload as the sync logged it. Usage:
#   code_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
source "$here/daemon_lib.sh"
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-code-$RG_RUN_TAG"
rg_on_exit() { rg_stop_ours "$DMN_INSTANCE"; }
dmn_init_repo
gates=$RG_TMP/gates
mkdir -p "$gates"

# The code: prints the marker file, then runs until its gate file exists.
mkdir -p "$DMN_WORK/src"
cat >"$DMN_WORK/src/main.py" <<'PY'
import os, sys, time
with open("marker.txt") as f:
    print("marker:", f.read().strip(), flush=True)
gate = os.path.join(os.environ["RG_GATES"], sys.argv[1])
while not os.path.exists(gate):
    time.sleep(0.1)
PY
echo "A $RG_RUN_TAG" >"$DMN_WORK/src/marker.txt"
# code_spec NAME [EXTRA YAML]: a custom spec running src/main.py with gate NAME.
code_spec() {
  printf 'workload: custom\ncode: src\nentrypoint: python3 main.py %s\nentrypoint_num_cpus: 0\n%s' \
    "$1" "${2:-}" >"$DMN_WORK/jobs/$1.yaml"
  printf 'env_vars:\n  RG_GATES: "%s"\n  RG_E2E_RUN: "%s"\n' "$gates" "$RG_RUN_TAG" >>"$DMN_WORK/jobs/$1.yaml"
}
code_spec m
dmn_push "code A"
git -C "$DMN_WORK" tag v1
git -C "$DMN_WORK" push -q origin v1

sync() {  # sync NAME: one sync, its log in $RG_TMP/NAME.log
  rg sync --repo "$DMN_REMOTE" --ref main --cache-dir "$RG_TMP/cache" --instance "$DMN_INSTANCE" \
    --no-artifacts 2>"$RG_TMP/$1.log" || { cat "$RG_TMP/$1.log" >&2; rg_fail "sync $1 failed"; }
}
# 1. push, sync: marker A.
sync sync1
grep -q "code uploaded" "$RG_TMP/sync1.log" || rg_fail "sync1 uploaded no code: $(cat "$RG_TMP/sync1.log")"
echo "code: $(grep -o 'code uploaded.*' "$RG_TMP/sync1.log")"
m1=$(rg_list_ours "$DMN_INSTANCE" | awk '$1 ~ /^m-/ { print $1 }')
[ -n "$m1" ] || rg_fail "m was not submitted"
rg_wait_log "$m1" "marker: A $RG_RUN_TAG"

# 2. A second spec on the same folder, and one pinned to v1: the package is there already.
code_spec shared
code_spec pinned 'code_ref: v1
'
dmn_push "two more specs on src"
sync sync2
grep -q "code uploaded" "$RG_TMP/sync2.log" && rg_fail "sync2 uploaded the package again: $(cat "$RG_TMP/sync2.log")"
# One listing per name, whatever the status: a run may go PENDING -> RUNNING between two.
shared1=$(rg_list_ours "$DMN_INSTANCE" | awk '$1 ~ /^shared-/ { print $1 }')
pinned1=$(rg_list_ours "$DMN_INSTANCE" | awk '$1 ~ /^pinned-/ { print $1 }')
[ -n "$shared1" ] && [ -n "$pinned1" ] || rg_fail "shared or pinned not submitted: $(rg_list_ours "$DMN_INSTANCE")"
rg_wait_log "$shared1" "marker: A $RG_RUN_TAG"
rg_wait_log "$pinned1" "marker: A $RG_RUN_TAG"

# 3. Only src/ changes: plan names it; sync stops the running m and starts it on marker B.
echo "B $RG_RUN_TAG" >"$DMN_WORK/src/marker.txt"
dmn_push "code B"
rg plan --repo "$DMN_REMOTE" --ref main --cache-dir "$RG_TMP/cache" --instance "$DMN_INSTANCE" \
  >"$RG_TMP/plan.out" 2>"$RG_TMP/plan.err" || true
grep -q "code changed: src (1 file: marker.txt)" "$RG_TMP/plan.out" ||
  rg_fail "plan does not name the code change: $(cat "$RG_TMP/plan.out" "$RG_TMP/plan.err")"
sync sync3
rg_wait_status "$m1" STOPPED 60
m2=$(rg_list_ours "$DMN_INSTANCE" | awk -v old="$m1" '$1 ~ /^m-/ && $1 != old { print $1 }')
[ -n "$m2" ] || rg_fail "no new run of m after the code change"
rg_wait_log "$m2" "marker: B $RG_RUN_TAG"
# The pinned spec keeps its run (v1 did not move), and still prints marker A.
[ "$(rg_status_of "$pinned1")" = RUNNING ] || rg_fail "$pinned1 is $(rg_status_of "$pinned1") after a code change outside v1"
[ -z "$(rg_list_ours "$DMN_INSTANCE" | awk -v old="$pinned1" '$1 ~ /^pinned-/ && $1 != old')" ] ||
  rg_fail "pinned was restarted: $(rg_list_ours "$DMN_INSTANCE")"
echo "code: $m1 (marker A) -> $m2 (marker B); $pinned1 kept marker A at v1"

touch "$gates/m" "$gates/shared" "$gates/pinned"
rg_wait_status "$m2" SUCCEEDED 60
echo "ok: code from the repository on the real head"
