#!/usr/bin/env bash
# A retried verl run resumes from its checkpoints (DESIGN §1.3; docs/reconcile.md), on the real
# head with the daemon passing every second: a ppo spec on the stand-in verl
# (tests/e2e/data/verl) with `retries: 1`, save_freq 1 and 4 steps, whose attempt 0 fails at
# step 3 after checkpointing steps 1 and 2 (STANDIN_FAIL_AT_STEP). Attempt 1 (-r1) gets the
# same trainer.default_local_dir=<shared_root>/jobs/<attempt 0's id>/checkpoints as attempt 0
# (both read from Ray's entrypoints) and an experiment_name of its own, resumes from step 2 (its
# log says so, and it runs steps 3 and 4 only) and SUCCEEDS; the folder then holds steps 1 to 4
# and the status file names it as the run's folder. Usage:
#   resume_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
source "$here/daemon_lib.sh"
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-resume-$RG_RUN_TAG"
rg_on_exit() {
  dmn_kill
  rg_stop_ours "$DMN_INSTANCE"
}

shared=$RG_TMP/shared
dmn_init_repo
rg_write_cluster "$shared" "$DMN_WORK/cluster.yaml" </dev/null
mkdir -p "$shared/common/code/verl"
cp -r "$RG_SRC/tests/e2e/data/verl" "$shared/common/code/verl/standin"
cat >"$DMN_WORK/jobs/ppo.yaml" <<EOF_SPEC
workload: ppo
code_path: \${shared_root}/common/code/verl/standin
model_id: \${shared_root}/models/stand-in
train_file: \${shared_root}/data/train.parquet
val_file: \${shared_root}/data/test.parquet
nnodes: 1
n_gpus_per_node: 1
total_training_steps: 4
save_freq: 1
entrypoint_num_cpus: 0
retries: 1
env_vars:
  STANDIN_FAIL_AT_STEP: "3"
  RG_E2E_RUN: "$RG_RUN_TAG"
EOF_SPEC
dmn_push "a ppo run that fails once at step 3"

started=$SECONDS
dmn_start "$RG_TMP/daemon.log" --interval 1s

# Succeeded, or Failed with its one retry spent (then the checks below say what went wrong).
ended() {
  dmn_has_phase ppo Succeeded ||
    { dmn_has_phase ppo Failed && [ "$(dmn_status_file ppo | rg_yaml_field attempt)" = 1 ]; }
}
dmn_wait 240 "ppo recorded Succeeded, or Failed after attempt 1" ended >/dev/null
dmn_list_ours >"$RG_TMP/ours.txt"
id0=$(awk '$1 !~ /-r[0-9]+$/ { print $1 }' "$RG_TMP/ours.txt")
id1=$id0-r1
printf '%s FAILED\n%s SUCCEEDED\n' "$id0" "$id1" | diff - "$RG_TMP/ours.txt" >&2 ||
  { dmn_status_file ppo >&2; rg logs "$id1" >&2 || true; rg_fail "expected $id0 FAILED and $id1 SUCCEEDED in Ray"; }
dmn_has_phase ppo Succeeded || rg_fail "the run's phase is not Succeeded"

# The trainer.* overrides of each attempt's entrypoint as Ray holds it.
override() {  # override ID KEY
  rg_api_get "/api/jobs/$1" | "$RG_PY" -c '
import json, shlex, sys
words = shlex.split(json.load(sys.stdin)["entrypoint"])
found = [w.split("=", 1)[1] for w in words if w.startswith(sys.argv[1] + "=")]
print(found[-1] if found else "")' "$2"
}
ckpt=$shared/jobs/$id0/checkpoints
for id in "$id0" "$id1"; do
  dir=$(override "$id" trainer.default_local_dir)
  [ "$dir" = "$ckpt" ] || rg_fail "$id: trainer.default_local_dir=$dir, not attempt 0's $ckpt"
  name=$(override "$id" trainer.experiment_name)
  [ "$name" = "$id" ] || rg_fail "$id: trainer.experiment_name=$name, not its own id"
done

# Attempt 0 saved steps 1 and 2 and failed at 3; attempt 1 went on from 2.
rg logs "$id0" >"$RG_TMP/a0.log"
rg logs "$id1" >"$RG_TMP/a1.log"
for line in "VERL-STANDIN training from scratch" "VERL-STANDIN saved global_step_2 to $ckpt/global_step_2" \
  "VERL-STANDIN failing at step 3 (STANDIN_FAIL_AT_STEP)"; do
  grep -qxF -- "$line" "$RG_TMP/a0.log" || { cat "$RG_TMP/a0.log" >&2; rg_fail "attempt 0's log lacks: $line"; }
done
grep -qxF -- "VERL-STANDIN resumed from global step 2 ($ckpt/global_step_2)" "$RG_TMP/a1.log" ||
  { cat "$RG_TMP/a1.log" >&2; rg_fail "attempt 1 did not resume from step 2"; }
steps=$(sed -n 's/^VERL-STANDIN step //p' "$RG_TMP/a1.log" | tr '\n' ' ')
[ "$steps" = "3 4 " ] || rg_fail "attempt 1 ran steps '$steps', not 3 and 4"
grep -qxF "VERL-STANDIN done" "$RG_TMP/a1.log" || rg_fail "attempt 1 did not finish"

# One folder holds both attempts' checkpoints, each step written by the attempt that ran it.
[ "$(cat "$ckpt/latest_checkpointed_iteration.txt")" = 4 ] || rg_fail "the tracker does not name step 4"
for step in 1 2 3 4; do
  want=$id0
  [ $step -ge 3 ] && want=$id1
  state=$ckpt/global_step_$step/actor/standin_state.json
  "$RG_PY" -c 'import json,sys; assert json.load(open(sys.argv[1]))["experiment_name"] == sys.argv[2]' \
    "$state" "$want" 2>/dev/null || rg_fail "global_step_$step was not written by $want ($state)"
done
[ ! -e "$shared/jobs/$id1/checkpoints" ] || rg_fail "attempt 1 has a checkpoint folder of its own"

dmn_status_file ppo >"$RG_TMP/ppo.yaml"
[ "$(rg_yaml_field run_dir <"$RG_TMP/ppo.yaml")" = "$shared/jobs/$id0" ] ||
  { cat "$RG_TMP/ppo.yaml" >&2; rg_fail "the status file's run_dir is not $shared/jobs/$id0"; }
dmn_stop
echo "resume: $id1 resumed from $id0's step 2 in $ckpt and succeeded ($((SECONDS - started)) s from the daemon's start)"
