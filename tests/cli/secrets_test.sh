#!/usr/bin/env bash
# `secrets:` as validate, render and diff see it, offline (docs/jobspec.md, "Secrets"): no
# command here reads a value, even with a secrets directory in the environment holding one;
# render shows <secret:REFERENCE> (env delivery) or ${NAME} (node delivery) in both formats;
# validate stops a credential committed in env_vars, a bad name or reference, PYTHONPATH and a
# name that is both a secret and a plain env var, each at its line and column; diff shows a
# changed reference as name: old -> new and a cluster.yaml secrets change as a cluster change
# reaching the next submission. Args: path-to-binary source-dir.
set -u
bin=$1
# shellcheck source=tests/cli/lib.sh
source "$2/tests/cli/lib.sh"
export RAY_ADDRESS=http://127.0.0.1:1 RAY_API_SERVER_ADDRESS=http://127.0.0.1:1

# A secrets directory whose value must never be printed nor read by these commands.
value=cli-secret-value-0123456789
mkdir -p "$work/secrets"
printf '%s\n' "$value" >"$work/secrets/wandb-key"
printf '%s\n' "$value" >"$work/secrets/wandb-key-2"
export CREDENTIALS_DIRECTORY=$work/secrets

# never_printed NAME: the run NAME printed no value, nor its base64 form.
never_printed() {
  local b64
  b64=$(printf '%s' "$value" | base64)
  if grep -qF -e "$value" -e "$b64" "$work/$1.out" "$work/$1.err"; then
    fail "$1 printed the secret value"
  fi
}

repo=$work/repo
mkdir -p "$repo/jobs"
cd "$repo" || exit 1
git init -q .
printf 'address: http://127.0.0.1:8265\nsecrets:\n  SLACK_TOKEN: slack\n' >cluster.yaml
cat >jobs/train.yaml <<'YAML'
workload: custom
entrypoint: python train.py
env_vars:
  HF_HOME: /hf
secrets:
  WANDB_API_KEY: wandb-key
YAML
git add -A && git commit -qm base

# --- validate and render: names and references only ---
run valid validate --repo .
expect_rc valid 0
never_printed valid

for format in json yaml; do
  run "render-$format" render --repo . jobs/train.yaml --format "$format"
  expect_rc "render-$format" 0
  never_printed "render-$format"
  grep -q 'WANDB_API_KEY.*<secret:wandb-key>' "$work/render-$format.out" ||
    fail "render $format: no <secret:wandb-key>: $(cat "$work/render-$format.out")"
  grep -q 'SLACK_TOKEN.*<secret:slack>' "$work/render-$format.out" ||
    fail "render $format: the cluster's secret is missing"
done
python3 -c '
import json, sys
env = json.load(open(sys.argv[1]))["runtime_env"]["env_vars"]
assert env["WANDB_API_KEY"] == "<secret:wandb-key>", env
assert env["SLACK_TOKEN"] == "<secret:slack>", env
assert env["HF_HOME"] == "/hf", env
' "$work/render-json.out" || fail "render json: env_vars"

printf 'address: http://127.0.0.1:8265\nsecrets:\n  SLACK_TOKEN: slack\nsecret_delivery: node\n' \
  >cluster.yaml
run render-node render --repo . jobs/train.yaml --format json
expect_rc render-node 0
python3 -c '
import json, sys
env = json.load(open(sys.argv[1]))["runtime_env"]["env_vars"]
assert env["WANDB_API_KEY"] == "${WANDB_API_KEY}", env
assert env["SLACK_TOKEN"] == "${SLACK_TOKEN}", env
' "$work/render-node.out" || fail "render node: env_vars: $(cat "$work/render-node.out")"
never_printed render-node
git checkout -q cluster.yaml

# --- validate: each error at its line and column, naming secrets ---
bad=$work/bad
mkdir -p "$bad/jobs"
printf 'address: http://127.0.0.1:8265\nruntime_env:\n  env_vars:\n    HF_TOKEN: x\n' \
  >"$bad/cluster.yaml"
cat >"$bad/jobs/leak.yaml" <<'YAML'
workload: custom
entrypoint: python train.py
env_vars:
  HF_TOKEN_RO: hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567
  MODEL: hf_internal_testing
  PIP: sk-learn
YAML
cat >"$bad/jobs/names.yaml" <<'YAML'
workload: custom
entrypoint: python train.py
env_vars:
  WANDB_API_KEY: plain
secrets:
  WANDB_API_KEY: wandb-key
  PYTHONPATH: py
  HF_TOKEN: ../hf
  1BAD: x
YAML
printf 'workload: custom\nentrypoint: echo\nsecrets:\n  HF_TOKEN: hf-read\n' >"$bad/jobs/cross.yaml"
run invalid validate --repo "$bad"
expect_rc invalid 1
for expected in \
  'jobs/leak.yaml:4:16: error: env_vars.HF_TOKEN_RO looks like a Hugging Face token; put it in the daemon'"'"'s secrets directory and name it under secrets: (docs/jobspec.md, "Secrets")' \
  'jobs/names.yaml:6:3: error: secrets.WANDB_API_KEY: env_vars also sets WANDB_API_KEY (line 4)' \
  'jobs/names.yaml:7:3: error: secrets.PYTHONPATH cannot be a secret' \
  'jobs/names.yaml:8:13: error: secrets.HF_TOKEN must be a reference of 1 to 128 characters' \
  'jobs/cross.yaml:4:3: error: secrets.HF_TOKEN: cluster.yaml'"'"'s runtime_env.env_vars also sets HF_TOKEN (cluster.yaml:4)' \
  'jobs/names.yaml:9:3: error: secrets key "1BAD" is not a valid environment variable name'; do
  grep -qF "$expected" "$work/invalid.out" "$work/invalid.err" ||
    fail "validate: missing [$expected] in: $(cat "$work/invalid.out" "$work/invalid.err")"
done
grep -q "hf_internal_testing\|sk-learn" "$work/invalid.out" "$work/invalid.err" &&
  fail "validate took an ordinary value for a credential"

# --- diff: a changed reference, then a cluster.yaml secrets change ---
run_diff() { run "$1" diff --repo . main "${@:2}"; }
sed -i 's/wandb-key$/wandb-key-2/' jobs/train.yaml
for format in text markdown json; do
  run_diff "diff-$format" -o "$format"
  expect_rc "diff-$format" 2
  never_printed "diff-$format"
  grep -qF 'secrets.WANDB_API_KEY: wandb-key -> wandb-key-2' "$work/diff-$format.out" ||
    fail "diff $format: the reference change: $(cat "$work/diff-$format.out")"
  grep -qF '<secret:wandb-key-2>' "$work/diff-$format.out" ||
    fail "diff $format: the rendered placeholder"
done
git checkout -q jobs/train.yaml

printf 'address: http://127.0.0.1:8265\nsecrets:\n  SLACK_TOKEN: slack-2\n' >cluster.yaml
run_diff diff-cluster
expect_rc diff-cluster 2
grep -qF 'secrets.SLACK_TOKEN: slack -> slack-2' "$work/diff-cluster.out" ||
  fail "diff: the cluster's secrets change: $(cat "$work/diff-cluster.out")"
grep -q 'reaches the next submission of 1 job: train' "$work/diff-cluster.out" ||
  fail "diff: the job the cluster change reaches: $(cat "$work/diff-cluster.out")"
grep -Eq '^replace' "$work/diff-cluster.out" && fail "diff: a cluster secrets change replaced a run"
never_printed diff-cluster

finish "secrets: validate, render and diff show names and references, never a value"
