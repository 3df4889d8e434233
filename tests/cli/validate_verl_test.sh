#!/usr/bin/env bash
# `ray-gitops validate --verl-config` against verl 0.9.1's own config folder (the wheel that
# scripts/install-deps.sh unpacks into RG_VERL_DIR), and `validate --format json`.
# Args: path-to-binary source-dir.
set -u
bin=$1
src=$2
verl=${RG_VERL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/verl-0.9.1}/verl/trainer/config
py=${RG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv}/bin/python
# shellcheck source=tests/cli/lib.sh
source "$src/tests/cli/lib.sh"

if [ ! -f "$verl/ppo_trainer.yaml" ]; then
  echo "FAIL: no verl config in $verl (run scripts/install-deps.sh, or set RG_VERL_DIR)" >&2
  exit 1
fi

expect_err_line() {
  grep -qxF "$2" "$work/$1.err" || fail "$1: no line '$2' in stderr: $(cat "$work/$1.err")"
}

# The shipped examples compose against verl 0.9.1, SFT included.
run examples validate --repo "$src/examples/repo" --verl-config "$verl"
expect_rc examples 0
[[ $(cat "$work/examples.out") == "ok: cluster.yaml and 5 jobspecs are valid" ]] ||
  fail "examples: stdout $(cat "$work/examples.out")"

# A copy of the examples with a spec whose overrides hold a typo, an add of an existing key,
# a delete and a force-add that are fine, and a model_id the sft config has no key for.
repo=$work/repo
cp -r "$src/examples/repo" "$repo"
cat >"$repo/jobs/ppo/typo.yaml" <<'EOF'
workload: ppo
name: typo
nnodes: 1
overrides:
  - data.max_prompt_length=512
  - data.prompt_keyy=question
  - +data.prompt_key=question
  - ~data.val_max_samples
  - ++actor_rollout_ref.model.override_config.attention_dropout=0.0
EOF
run typo validate --repo "$repo" --verl-config "$verl"
expect_rc typo 1
expect_err_line typo "jobs/ppo/typo.yaml:6:5: error: unknown key \"data.prompt_keyy\" in verl's ppo_trainer config (did you mean \"data.prompt_key\"?)"
expect_err_line typo "jobs/ppo/typo.yaml:7:5: error: +data.prompt_key adds a key, but verl's ppo_trainer config already has \"data.prompt_key\" (write data.prompt_key=... to set it)"
[[ $(grep -c error: "$work/typo.err") == 2 ]] || fail "typo: expected 2 errors: $(cat "$work/typo.err")"
[[ $(cat "$work/typo.out") == "2 errors in 1 file" ]] || fail "typo: stdout $(cat "$work/typo.out")"

# Only the FILE named is reported.
run typo-file validate --repo "$repo" --verl-config "$verl" jobs/ppo/qwen2.5-0.5b-gsm8k.yaml
expect_rc typo-file 0

# Without --verl-config, the spec's code_path is looked in when it holds verl's config.
mkdir -p "$work/code/verl/trainer"
cp -r "$verl" "$work/code/verl/trainer/config"
sed -i "s|^name: typo|name: typo\ncode_path: $work/code|" "$repo/jobs/ppo/typo.yaml"
run code-path validate --repo "$repo"
expect_rc code-path 1
expect_err_line code-path "jobs/ppo/typo.yaml:7:5: error: unknown key \"data.prompt_keyy\" in verl's ppo_trainer config (did you mean \"data.prompt_key\"?)"

# The same as one JSON object on stdout, nothing on stderr.
run json validate --repo "$repo" -o json
expect_rc json 1
[ -s "$work/json.err" ] && fail "json: stderr is not empty: $(cat "$work/json.err")"
"$py" - "$work/json.out" <<'PYEOF' || fail "json: unexpected document: $(cat "$work/json.out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["version"] == 1 and doc["valid"] is False and doc["files"] == 7, doc
first = doc["diagnostics"][0]
assert first == {
    "file": "jobs/ppo/typo.yaml", "line": 7, "column": 5, "field": "overrides[1]",
    "severity": "error",
    "message": "unknown key \"data.prompt_keyy\" in verl's ppo_trainer config "
               "(did you mean \"data.prompt_key\"?)"}, first
assert len(doc["diagnostics"]) == 2, doc
PYEOF

# A valid repository in JSON; a loader error has no field, a whole-file error no line.
run json-valid validate --repo "$src/examples/repo" --format json --verl-config "$verl"
expect_rc json-valid 0
"$py" - "$work/json-valid.out" <<'PYEOF' || fail "json-valid: $(cat "$work/json-valid.out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc == {"version": 1, "valid": True, "files": 6, "diagnostics": []}, doc
PYEOF
printf 'workload: ppo\nnnodes: two\n' >"$repo/jobs/ppo/typo.yaml"
run json-loader validate --repo "$repo" -o json jobs/ppo/typo.yaml nope.yaml
expect_rc json-loader 1
"$py" - "$work/json-loader.out" <<'PYEOF' || fail "json-loader: $(cat "$work/json-loader.out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["files"] == 2, doc
d = {x["file"]: x for x in doc["diagnostics"]}
assert d["jobs/ppo/typo.yaml"]["line"] == 2 and d["jobs/ppo/typo.yaml"]["field"] is None, d
assert d["nope.yaml"]["line"] is None and d["nope.yaml"]["column"] is None, d
assert d["nope.yaml"]["message"] == "file not found", d
PYEOF

# --verl-config must name a folder.
run no-dir validate --repo "$src/examples/repo" --verl-config "$work/nowhere"
expect_rc no-dir 1
grep -q "nowhere: error: --verl-config: not a folder" "$work/no-dir.err" ||
  fail "no-dir: $(cat "$work/no-dir.err")"

run bad-format validate --repo "$src/examples/repo" -o yaml
[[ $(cat "$work/bad-format.rc") != 0 ]] || fail "bad-format: -o yaml was accepted"
grep -q -- "--format: yaml not in {text,json}" "$work/bad-format.err" ||
  fail "bad-format: $(cat "$work/bad-format.err")"

finish "validate --verl-config: ok"
