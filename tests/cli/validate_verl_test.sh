#!/usr/bin/env bash
# `ray-gitops validate --verl-config` against verl 0.9.1's own config folder (the wheel that
# scripts/install-deps.sh unpacks into RG_VERL_DIR), and `validate --format json`; the
# examples with their fork of verl filled in by forks/verl/fetch.sh from that wheel, and
# `render` of the spec that runs the fork.
# Args: path-to-binary source-dir.
set -u
bin=$1
src=$2
wheel=${RG_VERL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/verl-0.9.1}
verl=$wheel/verl/trainer/config
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

# The shipped examples compose against verl 0.9.1, SFT included, as shipped (the fork of verl
# not fetched) and with the fork fetched, as a repository made from them holds it.
run examples validate --repo "$src/examples/repo" --verl-config "$verl"
expect_rc examples 0
[[ $(cat "$work/examples.out") == "ok: cluster.yaml and 7 jobspecs are valid" ]] ||
  fail "examples: stdout $(cat "$work/examples.out")"
examples=$work/examples
cp -r "$src/examples/repo" "$examples"
rm -rf "$examples/forks/verl/verl"
PYTHON=$py bash "$examples/forks/verl/fetch.sh" "$wheel" >"$work/fetch.out" 2>&1 ||
  fail "fetch.sh: $(cat "$work/fetch.out")"
grep -q "^fetch.sh: [0-9]* files of verl 0.9.1 in " "$work/fetch.out" ||
  fail "fetch.sh: $(cat "$work/fetch.out")"
run fork validate --repo "$examples" --verl-config "$verl"
expect_rc fork 0
[[ $(cat "$work/fork.out") == "ok: cluster.yaml and 7 jobspecs are valid" ]] ||
  fail "fork: stdout $(cat "$work/fork.out")"
[ -s "$work/fork.err" ] && fail "fork: stderr: $(cat "$work/fork.err")"

# Without --verl-config, the spec with `code` is checked against the config of the verl its
# folder holds: the fork's own. A key the fork adds is accepted, a typo is not; against the
# released verl the fork's key is unknown. (On a copy: the examples stay as shipped.)
own=$work/fork-own
cp -r "$examples" "$own"
sed -i '/^trainer:$/a\  fork_flag: false' "$own/forks/verl/verl/trainer/config/ppo_trainer.yaml"
fork_spec=jobs/grpo/qwen2.5-0.5b-gsm8k-fork.yaml
sed -i 's/^  - actor_rollout_ref.actor.use_kl_loss=true$/&\n  - trainer.fork_flag=true/' "$own/$fork_spec"
grep -q "trainer.fork_flag=true" "$own/$fork_spec" || fail "fork-own: the override was not added"
run fork-own validate --repo "$own" "$fork_spec"
expect_rc fork-own 0
run fork-released validate --repo "$own" --verl-config "$verl" "$fork_spec"
expect_rc fork-released 1
grep -q "^$fork_spec:36:5: error: unknown key \"trainer.fork_flag\" in verl's ppo_trainer config" \
  "$work/fork-released.err" || fail "fork-released: $(cat "$work/fork-released.err")"
sed -i 's/trainer.fork_flag=true/trainer.fork_flagg=true/' "$own/$fork_spec"
run fork-typo validate --repo "$own" "$fork_spec"
expect_rc fork-typo 1
grep -q "^$fork_spec:36:5: error: unknown key \"trainer.fork_flagg\" in verl's ppo_trainer config (did you mean \"trainer.fork_flag\"?)" \
  "$work/fork-typo.err" || fail "fork-typo: $(cat "$work/fork-typo.err")"
# With code_ref, the config is the one at that commit, whatever the working tree holds: the
# fork's flag is committed and tagged, then removed from the working tree.
sed -i 's/trainer.fork_flagg=true/trainer.fork_flag=true/' "$own/$fork_spec"
sed -i 's|^code: forks/verl$|&\ncode_ref: fork-v1|' "$own/$fork_spec"
git -C "$own" init -q && git -C "$own" add -A &&
  git -C "$own" -c user.name=t -c user.email=t@example.com commit -qm fork &&
  git -C "$own" tag fork-v1 || fail "fork-ref: cannot commit the copy"
sed -i '/^  fork_flag: false$/d' "$own/forks/verl/verl/trainer/config/ppo_trainer.yaml"
run fork-ref validate --repo "$own" "$fork_spec"
expect_rc fork-ref 0
sed -i '/^code_ref: fork-v1$/d' "$own/$fork_spec"
run fork-moved validate --repo "$own" "$fork_spec"
expect_rc fork-moved 1
grep -q "unknown key \"trainer.fork_flag\"" "$work/fork-moved.err" ||
  fail "fork-moved: $(cat "$work/fork-moved.err")"

# The spec that runs the fork ships the package and LICENSE, not the fork's README and
# fetch.sh (export-ignore); the trainer is imported from the working_dir, no code_path.
run fork-render render --repo "$examples" "$fork_spec" --format json
expect_rc fork-render 0
files=$((1 + $(find "$examples/forks/verl/verl" -type f | wc -l)))
grep -qE "^$fork_spec: code forks/verl \(working tree\): tree [0-9a-f]{40}, $files files, .*, shipped as gcs://_ray_pkg_[0-9a-f]+\.zip$" \
  "$work/fork-render.err" || fail "fork-render: no code line for $files files: $(cat "$work/fork-render.err")"
"$py" - "$work/fork-render.out" <<'PYEOF' || fail "fork-render: $(cat "$work/fork-render.out")"
import json, re, sys
body = json.load(open(sys.argv[1]))
assert re.fullmatch(r"gcs://_ray_pkg_[0-9a-f]+\.zip", body["runtime_env"]["working_dir"]), body
assert body["entrypoint"].startswith("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "), body
assert "/common/code/verl" not in body["runtime_env"]["env_vars"]["PYTHONPATH"], body
assert re.fullmatch(r"[0-9a-f]{40}", body["metadata"]["gitops.code-tree"]), body["metadata"]
PYEOF
# The custom job with its code in src/eval-report.
run report-render render --repo "$examples" jobs/eval/report.yaml --format json
expect_rc report-render 0
grep -q "^jobs/eval/report.yaml: code src/eval-report (working tree): tree [0-9a-f]*, 3 files, " \
  "$work/report-render.err" || fail "report-render: $(cat "$work/report-render.err")"
"$py" - "$work/report-render.out" <<'PYEOF' || fail "report-render: $(cat "$work/report-render.out")"
import json, re, sys
body = json.load(open(sys.argv[1]))
assert re.fullmatch(r"gcs://_ray_pkg_[0-9a-f]+\.zip", body["runtime_env"]["working_dir"]), body
assert body["entrypoint"] == "python3 report.py samples.jsonl", body
PYEOF

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
assert doc["version"] == 1 and doc["valid"] is False and doc["files"] == 9, doc
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
assert doc == {"version": 1, "valid": True, "files": 8, "diagnostics": []}, doc
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
