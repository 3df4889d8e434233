#!/usr/bin/env bash
# `ray-gitops render` on the fixture repository tests/data/render.
# Usage: render_test.sh <ray-gitops binary> <source dir>
set -euo pipefail

BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$2
REPO=$SRC/tests/data/render
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Runs render; stdout to $WORK/out, stderr to $WORK/err, exit status to $status.
render() {
  set +e
  "$BIN" render "$@" >"$WORK/out" 2>"$WORK/err"
  status=$?
  set -e
}

# Asserts with python3 over the JSON body in $WORK/out; $1 names the check, $2 is the code,
# which sees `body` and `argv` (the entrypoint split as /bin/sh would split it).
check_json() {
  local name=$1 code=$2
  if ! python3 - "$WORK/out" "$code" <<'PY' 2>"$WORK/check_err"; then
import json, shlex, sys
with open(sys.argv[1]) as f:
    body = json.load(f)
argv = shlex.split(body["entrypoint"])
env = body["runtime_env"]["env_vars"]
exec(sys.argv[2])
PY
    fail "$name: $(cat "$WORK/check_err")"
  fi
}

# --- ppo, JSON ---
render --repo "$REPO" jobs/ppo/qwen.yaml --format json
[ "$status" -eq 0 ] || fail "ppo render exited $status: $(cat "$WORK/err")"
check_json "ppo json parses" 'assert isinstance(body, dict)'
check_json "ppo entrypoint starts with the ppo trainer" \
  'assert body["entrypoint"].startswith("python3 -m verl.trainer.main_ppo "), body["entrypoint"]'
check_json "ppo entrypoint holds every override, last, in order" '
overrides = ["data.train_batch_size=256", "actor_rollout_ref.rollout.name=vllm",
             "trainer.logger=[\x27console\x27]", "trainer.project_name=\"gsm8k ppo\""]
assert argv[-len(overrides):] == overrides, argv'
check_json "ppo entrypoint holds the spec fields" '
for word in ["data.train_files=/private/data/gsm8k/train.parquet",
             "data.val_files=/private/data/gsm8k/test.parquet",
             "actor_rollout_ref.model.path=/private/models/Qwen2.5-0.5B-Instruct",
             "critic.model.path=/private/models/Qwen2.5-0.5B-Instruct",
             "trainer.nnodes=1", "trainer.n_gpus_per_node=2", "trainer.total_training_steps=20",
             "trainer.save_freq=10", "trainer.test_freq=5",
             "trainer.experiment_name=" + body["submission_id"],
             "trainer.default_local_dir=/private/jobs/" + body["submission_id"] + "/checkpoints"]:
    assert word in argv, word'
check_json "ppo PYTHONPATH starts with code_path" '
assert env["PYTHONPATH"] == "/private/common/code/verl/codeA:/private/user/code:${PYTHONPATH}", env'
check_json "ppo env vars: cluster then job" '
assert env["HF_ENDPOINT"] == "https://hf-mirror.example" and env["HF_HOME"] == "/private/common/hf", env'
check_json "ppo entrypoint resources from the cluster" '
assert body["entrypoint_resources"] == {"worker_node": 1}, body
assert body["entrypoint_num_cpus"] == 1, body'
check_json "ppo submission id is <name>-<10 hex>" '
import re
assert re.fullmatch(r"ppo-qwen-[0-9a-f]{10}", body["submission_id"]), body["submission_id"]'
check_json "ppo metadata" '
md = body["metadata"]
assert md["gitops.managed-by"] == "ray-gitops" and md["gitops.name"] == "ppo-qwen", md
assert md["gitops.spec-path"] == "jobs/ppo/qwen.yaml" and md["gitops.attempt"] == "0", md
assert body["submission_id"] == "ppo-qwen-" + md["gitops.spec-hash"], md
assert all(isinstance(v, str) for v in md.values()), md
assert "job_submission_id" not in md and "job_name" not in md, md
assert not any(v is None for v in body.values()), body'
cp "$WORK/out" "$WORK/ppo1.json"

# The same spec renders the same bytes every time.
render --repo "$REPO" jobs/ppo/qwen.yaml --format json
cmp -s "$WORK/out" "$WORK/ppo1.json" || fail "ppo render is not deterministic"

# FILE may be given relative to the working directory.
(cd "$SRC/tests/data" && "$BIN" render --repo render render/jobs/ppo/qwen.yaml --format json) \
  >"$WORK/out" 2>"$WORK/err" || fail "render with a cwd-relative FILE failed: $(cat "$WORK/err")"
cmp -s "$WORK/out" "$WORK/ppo1.json" || fail "cwd-relative FILE rendered something else"

# --attempt and --instance.
render --repo "$REPO" jobs/ppo/qwen.yaml --format json --attempt 2 --instance staging
[ "$status" -eq 0 ] || fail "render --attempt 2 exited $status"
check_json "attempt 2 gets the -r2 suffix and the instance label" '
md = body["metadata"]
assert body["submission_id"] == "ppo-qwen-" + md["gitops.spec-hash"] + "-r2", body
assert md["gitops.attempt"] == "2" and md["gitops.managed-by"] == "staging", md
assert "trainer.experiment_name=" + body["submission_id"] in argv, argv'
check_json "attempt 2 writes and reads the checkpoints of the run (attempt 0's id), not its own" '
run_id = body["submission_id"][:-len("-r2")]
assert "trainer.default_local_dir=/private/jobs/" + run_id + "/checkpoints" in argv, argv
assert not any(w.startswith("trainer.default_local_dir=") and w.endswith("-r2/checkpoints")
               for w in argv), argv'

# --- sft ---
render --repo "$REPO" jobs/sft/qwen.yaml --format json
[ "$status" -eq 0 ] || fail "sft render exited $status: $(cat "$WORK/err")"
check_json "sft runs the sft trainer on the cpu" '
assert argv[:3] == ["python3", "-m", "verl.trainer.sft_trainer_ray"], argv
assert "trainer.device=cpu" in argv, argv
assert "model.path=/private/models/Qwen2.5-0.5B-Instruct" in argv, argv
assert "data.train_files=\"/private/data/gsm8k/sft train.parquet\"" in argv, argv
assert not any(w.startswith("data.val_files=") for w in argv), argv
assert env["PYTHONPATH"].startswith("/private/common/code/verl/codeB:"), env'

# --- custom: the entrypoint verbatim, resources from the job ---
render --repo "$REPO" jobs/custom/hello.yaml --format json
[ "$status" -eq 0 ] || fail "custom render exited $status: $(cat "$WORK/err")"
check_json "custom entrypoint is verbatim after interpolation" '
assert body["entrypoint"] == "python3 -c \x27print(\"hello from /private\")\x27 && echo $HOME", body
assert body["entrypoint_num_cpus"] == 0.5 and body["entrypoint_resources"] == {}, body'

# --- YAML is the default format ---
render --repo "$REPO" jobs/ppo/qwen.yaml
[ "$status" -eq 0 ] || fail "yaml render exited $status"
grep -q '^entrypoint: ' "$WORK/out" || fail "yaml output has no entrypoint line"
grep -q '^submission_id: ppo-qwen-[0-9a-f]\{10\}$' "$WORK/out" || fail "yaml output has no id"
if ! grep -q 'worker_node: 1' "$WORK/out"; then fail "yaml output has no worker_node"; fi

# --- invalid spec: exit 1 with path:line:col ---
render --repo "$REPO" jobs/bad/broken.yaml --format json
[ "$status" -eq 1 ] || fail "invalid spec exited $status, want 1"
grep -Eq '^jobs/bad/broken\.yaml:[0-9]+:[0-9]+: error: ' "$WORK/err" ||
  fail "invalid spec gave no path:line:col diagnostic: $(cat "$WORK/err")"
[ ! -s "$WORK/out" ] || fail "invalid spec still printed a body"

# --- invalid cluster file: exit 1 with path:line:col ---
cp -r "$REPO" "$WORK/repo"
printf 'address: http://127.0.0.1:8265\nentrypoint_num_cpus: lots\n' >"$WORK/repo/cluster.yaml"
render --repo "$WORK/repo" jobs/ppo/qwen.yaml
[ "$status" -eq 1 ] || fail "invalid cluster exited $status, want 1"
grep -Eq '^cluster\.yaml:[0-9]+:[0-9]+: error: ' "$WORK/err" ||
  fail "invalid cluster gave no path:line:col diagnostic: $(cat "$WORK/err")"

# --- a file that is not a JobSpec of the repository ---
render --repo "$REPO" jobs/ppo/missing.yaml
[ "$status" -eq 1 ] || fail "missing spec exited $status, want 1"
[ -s "$WORK/err" ] || fail "missing spec printed no error"

render --repo "$REPO" jobs/ppo/qwen.yaml --format xml
[ "$status" -ne 0 ] || fail "--format xml was accepted"

# --- secrets (docs/security.md): secret-named env vars show as <redacted>, wherever they appear ---
mkdir -p "$WORK/secret/jobs"
cat >"$WORK/secret/cluster.yaml" <<'YAML'
address: http://127.0.0.1:8265
runtime_env:
  env_vars:
    WANDB_API_KEY: wandb-value-0123456789
    HF_HOME: /private/hf-cache
YAML
cat >"$WORK/secret/jobs/leak.yaml" <<'YAML'
workload: custom
entrypoint: echo hf-spec-token-0123456789
env_vars:
  HF_TOKEN: hf-spec-token-0123456789
  MODE: fast
YAML
for format in json yaml; do
  render --repo "$WORK/secret" jobs/leak.yaml --format "$format"
  [ "$status" -eq 0 ] || fail "render of a spec with secrets exited $status: $(cat "$WORK/err")"
  if grep -q 'wandb-value-0123456789\|hf-spec-token-0123456789' "$WORK/out"; then
    fail "render --format $format printed a secret value"
  fi
  grep -q '/private/hf-cache' "$WORK/out" || fail "render --format $format lost a plain env var"
done
render --repo "$WORK/secret" jobs/leak.yaml --format json
check_json "secret env vars redacted" \
  'assert env["HF_TOKEN"] == "<redacted>" and env["WANDB_API_KEY"] == "<redacted>" and env["MODE"] == "fast", env'

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "render: all checks passed"
