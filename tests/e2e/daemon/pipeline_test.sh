#!/usr/bin/env bash
# Pipelines (docs/jobspec.md, "Pipelines"), on the real head, with the daemon passing every
# second: b (`after: [a]`) is Waiting while a runs (a waits for a file the script makes once
# it saw b Waiting, so no timing is bet on), is submitted in the first pass after a SUCCEEDED, and its entrypoint holds a's run directory. Editing only a's file gives
# a and b new ids, and b waits for the new a. An a that fails (no retries) leaves b Waiting
# with a's failure in its message, and b is never submitted. Prints the time from a's end to
# b's submission. Usage:
#   pipeline_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
source "$here/daemon_lib.sh"
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-pipeline-$RG_RUN_TAG"
rg_on_exit() {
  dmn_kill
  rg_stop_ours "$DMN_INSTANCE"
}

shared=$RG_TMP/shared
dmn_init_repo
rg_write_cluster "$shared" "$DMN_WORK/cluster.yaml" </dev/null
# a runs until the file $1 exists: the script ends it once it has seen what it checks.
gate() { echo "sh -c 'while [ ! -e $1 ]; do sleep 0.1; done'"; }
dmn_spec a "$(gate "$RG_TMP/a-may-end-1")"
# shellcheck disable=SC2016 # ${runs.a.dir} is for ray-gitops, not for this shell
dmn_spec b 'echo stage two reads ${runs.a.dir}/checkpoints'
printf 'after: [a]\n' >>"$DMN_WORK/jobs/b.yaml"
dmn_push "a two-stage pipeline"

interval=1
dmn_start "$RG_TMP/daemon.log" --interval "${interval}s"

# The run of `name` in Ray with status STATUS (one id, or nothing).
run_of() { dmn_list_ours | awk -v p="^$1-" -v s="$2" '$1 ~ p && $2 == s { print $1 }'; }
a_running() { [ -n "$(run_of a RUNNING)" ]; }
b_waiting_on() { dmn_status_file b | grep -q "^message: \"\?on a: $1"; }
field_of() {  # field_of ID FIELD: a field of Ray's job
  rg_api_get "/api/jobs/$1" | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1]) or "")' "$2"
}

# 1. b waits while a runs; Ray has nothing of b.
dmn_wait 120 "a RUNNING" a_running >/dev/null
dmn_wait 30 "b recorded Waiting on a: Running" b_waiting_on Running >/dev/null
dmn_has_phase b Waiting || rg_fail "b is not Waiting while a runs"
[ -z "$(dmn_list_ours | awk '$1 ~ /^b-/')" ] || rg_fail "b was submitted while a runs"
a1=$(run_of a RUNNING)
touch "$RG_TMP/a-may-end-1"

# 2. a SUCCEEDED: b is submitted by the next pass, with a's run directory.
b_in_ray() { [ -n "$(dmn_list_ours | awk '$1 ~ /^b-/ { print $1 }')" ]; }
dmn_wait 120 "b submitted" b_in_ray >/dev/null
b1=$(dmn_list_ours | awk '$1 ~ /^b-/ { print $1 }')
[ "$(rg_status_of "$a1")" = SUCCEEDED ] || rg_fail "b was submitted while $a1 is $(rg_status_of "$a1")"
a_end=$(field_of "$a1" end_time)
b_start=$(field_of "$b1" start_time)
echo "pipeline: $b1 submitted $((b_start - a_end)) ms after $a1 ended (interval ${interval} s)"
[ "$b_start" -ge "$a_end" ] || rg_fail "b started before a ended"
[ $((b_start - a_end)) -le $((2 * interval * 1000 + 3000)) ] ||
  rg_fail "b was submitted $((b_start - a_end)) ms after a ended: not the first pass after"
entrypoint=$(field_of "$b1" entrypoint)
case "$entrypoint" in
  *"$shared/jobs/$a1/checkpoints"*) ;;
  *) rg_fail "b's entrypoint does not hold a's run directory: $entrypoint" ;;
esac
echo "pipeline: b's entrypoint: $entrypoint"

# 3. Editing a alone: a new a, and b waits for it under a new id of its own.
sed -i "s|a-may-end-1|a-may-end-2|" "$DMN_WORK/jobs/a.yaml"
dmn_push "a changes"
new_a_running() { local id; id=$(run_of a RUNNING); [ -n "$id" ] && [ "$id" != "$a1" ]; }
dmn_wait 120 "the new a RUNNING" new_a_running >/dev/null
a2=$(run_of a RUNNING)
dmn_wait 30 "b Waiting on the new a" b_waiting_on Running >/dev/null
[ "$(dmn_list_ours | awk '$1 ~ /^b-/' | wc -l)" = 1 ] || rg_fail "a second b was submitted while the new a runs"
touch "$RG_TMP/a-may-end-2"
two_bs() { [ "$(dmn_list_ours | awk '$1 ~ /^b-/' | wc -l)" = 2 ]; }
dmn_wait 120 "the new b submitted" two_bs >/dev/null
b2=$(dmn_list_ours | awk -v old="$b1" '$1 ~ /^b-/ && $1 != old { print $1 }')
[ "$b2" != "$b1" ] || rg_fail "b kept its id after a changed"
case "$(field_of "$b2" entrypoint)" in
  *"$shared/jobs/$a2/checkpoints"*) ;;
  *) rg_fail "the new b does not read the new a's run directory: $(field_of "$b2" entrypoint)" ;;
esac
echo "pipeline: a $a1 -> $a2 gave b $b1 -> $b2"

# 4. a fails (no retries): b waits with the failure, and is never submitted.
printf 'workload: custom\nentrypoint: exit 3\nentrypoint_num_cpus: 0\n' >"$DMN_WORK/jobs/a.yaml"
rg_tag_spec "$DMN_WORK/jobs/a.yaml"
dmn_push "a fails"
dmn_wait 120 "b Waiting on a failed a" b_waiting_on Failed >/dev/null
dmn_wait_passes 3
dmn_has_phase b Waiting || rg_fail "b left Waiting after a failed"
[ "$(dmn_list_ours | awk '$1 ~ /^b-/' | wc -l)" = 2 ] || { dmn_list_ours >&2; rg_fail "b was submitted after a failed"; }
dmn_status_file b | grep '^message:'
dmn_stop
echo "pipeline: b waited for a, ran from its run directory, followed its edit, and never ran after its failure"
