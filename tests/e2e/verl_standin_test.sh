#!/usr/bin/env bash
# The example PPO and SFT specs run a stand-in verl (tests/e2e/data/verl) found through
# PYTHONPATH=code_path; every Hydra override reaches the trainer as one intact argument, an
# override full of shell metacharacters runs no command, and the trainers save checkpoints
# where trainer.default_local_dir says.
# Usage: verl_standin_test.sh RAY_GITOPS_BINARY SOURCE_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rg_e2e_init "$@"

shared=$RG_TMP/shared
mkdir -p "$shared/common/code/verl" "$RG_TMP/repo/jobs/ppo" "$RG_TMP/repo/jobs/sft"
cp -r "$RG_SRC/tests/e2e/data/verl" "$shared/common/code/verl/standin"
rg_write_cluster "$shared" "$RG_TMP/repo/cluster.yaml" <<'EOF_CLUSTER'
entrypoint_num_cpus: 1
entrypoint_resources:
  worker_node: 1
runtime_env:
  env_vars:
    HF_HOME: ${shared_root}/common/hf
EOF_CLUSTER

pwned=$RG_TMP/pwned
hostile="trainer.project_name='a b; touch $pwned' \$(touch $pwned) \`touch $pwned\`"
# The examples, with code_path at the stand-in and one hostile override added.
for spec in ppo/qwen2.5-0.5b-gsm8k.yaml sft/qwen2.5-0.5b.yaml; do
  "$RG_PY" - "$RG_SRC/examples/repo/jobs/$spec" "$RG_TMP/repo/jobs/$spec" "$hostile" "$RG_RUN_TAG" <<'PYEOF'
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
spec["code_path"] = "${shared_root}/common/code/verl/standin"
spec.setdefault("env_vars", {})["RG_E2E_RUN"] = sys.argv[4]
spec.setdefault("overrides", []).append(sys.argv[3])
yaml.safe_dump(spec, open(sys.argv[2], "w"), sort_keys=False)
PYEOF
done

declare -A ids
for w in ppo sft; do
  spec=$(ls "$RG_TMP/repo/jobs/$w/"*.yaml)
  ids[$w]=$(rg submit --config "$RG_TMP/repo/cluster.yaml" --jobspec "$spec" \
    2>"$RG_TMP/submit.err") || rg_fail "submit $w: $(cat "$RG_TMP/submit.err")"
done
for w in ppo sft; do
  # entrypoint_resources asks for worker_node, which this single-node head advertises: a
  # driver that could not be placed would stay PENDING and time out here.
  rg_wait_status "${ids[$w]}" SUCCEEDED 240
done

for w in ppo sft; do
  id=${ids[$w]}
  rg logs "$id" >"$RG_TMP/$w.log"
  rg_api_get "/api/jobs/$id" >"$RG_TMP/$w.json"
  module=verl.trainer.main_ppo
  [ $w = sft ] && module=verl.trainer.sft_trainer_ray
  grep -qx "VERL-STANDIN module=$module" "$RG_TMP/$w.log" || rg_fail "$w did not run $module"
  grep -qx "VERL-STANDIN package=$shared/common/code/verl/standin/verl" "$RG_TMP/$w.log" ||
    rg_fail "$w imported verl from elsewhere: $(grep package= "$RG_TMP/$w.log")"
  grep -qx "VERL-STANDIN done" "$RG_TMP/$w.log" || rg_fail "$w did not finish"
  # The shell words of the entrypoint Ray ran, after `python3 -m MODULE`, are exactly the
  # arguments the trainer printed, in order.
  "$RG_PY" - "$RG_TMP/$w.json" "$RG_TMP/$w.log" "$w" "$pwned" <<'PYEOF' || rg_fail "$w: overrides not intact"
import json, os, shlex, sys
job = json.load(open(sys.argv[1]))
words = shlex.split(job["entrypoint"])
assert words[:2] == ["python3", "-m"], words
expected = words[3:]
printed = [l[len("ARG: "):] for l in open(sys.argv[2]).read().splitlines() if l.startswith("ARG: ")]
assert printed == expected, (printed, expected)
wanted = {
    "ppo": ["trainer.total_training_steps=200", "actor_rollout_ref.rollout.name=vllm",
            "trainer.n_gpus_per_node=2"],
    "sft": ["trainer.device=cpu", "data.messages_key=messages", "trainer.total_training_steps=100"],
}[sys.argv[3]]
for token in wanted:
    assert token in printed, (token, printed)
assert any(job["submission_id"] in a and a.startswith("trainer.experiment_name=") for a in printed)
hostile = [a for a in printed if a.startswith("trainer.project_name=")]
assert len(hostile) == 1 and "touch " + sys.argv[4] in hostile[0] and "$(" in hostile[0], hostile
# The stand-in checkpoints as verl: every save_freq-th step (50) and the last one, the
# tracker naming the last.
ckpt = [a for a in printed if a.startswith("trainer.default_local_dir=")][-1].split("=", 1)[1]
last = {"ppo": 200, "sft": 100}[sys.argv[3]]
assert open(os.path.join(ckpt, "latest_checkpointed_iteration.txt")).read() == str(last), ckpt
saved = sorted(int(d.split("_")[-1]) for d in os.listdir(ckpt) if d.startswith("global_step_"))
assert saved == list(range(50, last + 1, 50)), (ckpt, saved)
PYEOF
  node=$("$RG_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["driver_node_id"] or "")' "$RG_TMP/$w.json")
  [ -n "$node" ] || rg_fail "$w has no driver node"
done
[ ! -e "$pwned" ] || rg_fail "an override ran a shell command ($pwned exists)"
echo "verl stand-in: ok (${ids[ppo]}, ${ids[sft]})"
