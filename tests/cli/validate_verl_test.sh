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
# Never retried: no save_freq warning beside the errors this test is about.
infra_retries: 0
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

# A hostile verl config: nothing outside its folder is opened, whatever its defaults list
# says, and a defaults list that fans out is composed once per file. The spec's override is
# a key only the file outside defines: were that file read, the spec would pass.
hostile=$work/hostile
mkdir -p "$hostile/repo/jobs/ppo" "$hostile/outside/grp"
printf 'address: http://127.0.0.1:8265\n' >"$hostile/repo/cluster.yaml"
printf 'workload: ppo\nnnodes: 1\noverrides:\n  - trainer.outside_key=1\n' \
  >"$hostile/repo/jobs/ppo/x.yaml"
printf '# @package _global_\ntrainer:\n  outside_key: 1\n' >"$hostile/outside/extra.yaml"
cp "$hostile/outside/extra.yaml" "$hostile/outside/grp/x.yaml"
printf '# @package _global_\nmodel_engine: dp\n' >"$hostile/outside/me.yaml"
# hostile_config NAME ENTRY...: a config folder $hostile/NAME whose ppo_trainer.yaml lists
# ENTRY... (one per line, as written) and then its own keys.
hostile_config() {
  local dir=$hostile/$1 entry
  shift
  mkdir -p "$dir/model_engine"
  printf '# @package _global_\nmodel_engine: dp\n' >"$dir/model_engine/dp.yaml"
  {
    echo "defaults:"
    for entry in "$@"; do echo "  - $entry"; done
    printf '  - _self_\ntrainer:\n  nnodes: 1\n  experiment_name: e\n'
  } >"$dir/ppo_trainer.yaml"
}
# expect_outside NAME ENTRY MESSAGE: validate against $hostile/NAME fails naming ENTRY (at
# line 2, column 5 of ppo_trainer.yaml) with MESSAGE, and the outside key is not accepted.
expect_outside() {
  run "$1" validate --repo "$hostile/repo" --verl-config "$hostile/$1"
  expect_rc "$1" 1
  grep -qF "jobs/ppo/x.yaml: error: cannot compose verl's ppo_trainer config: ppo_trainer.yaml:2:5: defaults entry \"$2\": $3" \
    "$work/$1.err" || fail "$1: $(cat "$work/$1.err")"
}
hostile_config control
run control validate --repo "$hostile/repo" --verl-config "$hostile/control"
expect_rc control 1
grep -qF 'unknown key "trainer.outside_key"' "$work/control.err" || fail "control: $(cat "$work/control.err")"
hostile_config dotdot ../outside/extra
expect_outside dotdot ../outside/extra "../outside/extra.yaml is outside the config folder; nothing is read"
hostile_config group-dotdot 'model_engine/../../outside/extra'
expect_outside group-dotdot model_engine/../../outside/extra "../outside/extra.yaml is outside the config folder; nothing is read"
hostile_config option-dotdot '../outside@x: ../outside/extra'
expect_outside option-dotdot "../outside@x: ../outside/extra" "../outside/extra.yaml is outside the config folder; nothing is read"
hostile_config absolute "/$hostile/outside/extra"
expect_outside absolute "/$hostile/outside/extra" "$hostile/outside/extra.yaml is outside the config folder; nothing is read"
hostile_config root-relative "$hostile/outside/extra"
run root-relative validate --repo "$hostile/repo" --verl-config "$hostile/root-relative"
expect_rc root-relative 1
grep -qF "jobs/ppo/x.yaml: error: cannot compose verl's ppo_trainer config: ppo_trainer.yaml:2:5: defaults entry \"$hostile/outside/extra\": ${hostile#/}/outside/extra.yaml: no such config (a leading / names the config folder, not the file system)" \
  "$work/root-relative.err" || fail "root-relative: $(cat "$work/root-relative.err")"
hostile_config linked-file extra
ln -s ../outside/extra.yaml "$hostile/linked-file/extra.yaml"
expect_outside linked-file extra "extra.yaml is a symbolic link that leads outside the config folder; nothing is read through it"
hostile_config linked-group 'grp: x'
ln -s ../outside/grp "$hostile/linked-group/grp"
expect_outside linked-group "grp: x" "grp/x.yaml lies behind grp, a symbolic link that leads outside the config folder; nothing is read through it"
# A link that stays inside the folder is followed, as Hydra would.
hostile_config linked-inside 'grp: x'
mkdir -p "$hostile/linked-inside/real"
printf 'k: 1\n' >"$hostile/linked-inside/real/x.yaml"
ln -s real "$hostile/linked-inside/grp"
run linked-inside validate --repo "$hostile/repo" --verl-config "$hostile/linked-inside"
expect_rc linked-inside 1
grep -qF 'unknown key "trainer.outside_key"' "$work/linked-inside.err" ||
  fail "linked-inside: $(cat "$work/linked-inside.err")"
# A group option picked by the spec under review is no way out either.
hostile_config spec-option 'model_engine: dp'
printf 'workload: ppo\nnnodes: 1\noverrides:\n  - model_engine=../../outside/me\n' \
  >"$hostile/repo/jobs/ppo/y.yaml"
run spec-option validate --repo "$hostile/repo" --verl-config "$hostile/spec-option" jobs/ppo/y.yaml
expect_rc spec-option 1
grep -qF 'jobs/ppo/y.yaml:4:5: error: option "../../outside/me" of verl'"'"'s config group "model_engine" is outside the config folder; nothing is read' \
  "$work/spec-option.err" || fail "spec-option: $(cat "$work/spec-option.err")"
rm "$hostile/repo/jobs/ppo/y.yaml"
# The config of a code folder in the repository under review: its folder is
# verl/trainer/config of that code folder, even where the repository goes on around it.
mkdir -p "$hostile/repo/forks/v/verl/trainer/config"
cp "$hostile/outside/extra.yaml" "$hostile/repo/forks/v/extra.yaml"
(
  cd "$hostile/repo/forks/v/verl/trainer/config" &&
    printf 'defaults:\n  - ../../../extra\n  - _self_\ntrainer:\n  nnodes: 1\n  experiment_name: e\n' \
      >ppo_trainer.yaml
)
printf 'workload: ppo\ncode: forks/v\nnnodes: 1\noverrides:\n  - trainer.outside_key=1\n' \
  >"$hostile/repo/jobs/ppo/code.yaml"
run code-folder validate --repo "$hostile/repo" jobs/ppo/code.yaml
expect_rc code-folder 1
grep -qF 'jobs/ppo/code.yaml: error: cannot compose verl'"'"'s ppo_trainer config: ppo_trainer.yaml:2:5: defaults entry "../../../extra": ../../../extra.yaml is outside the config folder; nothing is read' \
  "$work/code-folder.err" || fail "code-folder: $(cat "$work/code-folder.err")"
# The same committed and pinned by code_ref: read from the tag's tree, refused alike.
printf 'code_ref: v1\n' >>"$hostile/repo/jobs/ppo/code.yaml"
git -C "$hostile/repo" init -q && git -C "$hostile/repo" add -A &&
  git -C "$hostile/repo" commit -qm hostile && git -C "$hostile/repo" tag v1 ||
  fail "code-ref: cannot commit"
run code-ref validate --repo "$hostile/repo" jobs/ppo/code.yaml
expect_rc code-ref 1
grep -qF 'defaults entry "../../../extra": ../../../extra.yaml is outside the config folder; nothing is read' \
  "$work/code-ref.err" || fail "code-ref: $(cat "$work/code-ref.err")"
rm -rf "$hostile/repo/jobs/ppo/code.yaml" "$hostile/repo/forks" "$hostile/repo/.git"
# --verl-config inside the repository under review whose folder is a link out of it.
hostile_config linked-out
ln -s ../linked-out "$hostile/repo/verl-config"
run linked-out validate --repo "$hostile/repo" --verl-config "$hostile/repo/verl-config"
expect_rc linked-out 1
grep -qF "cannot compose verl's ppo_trainer config: the config folder $hostile/repo/verl-config leads outside the repository $hostile/repo; nothing is read" \
  "$work/linked-out.err" || fail "linked-out: $(cat "$work/linked-out.err")"
rm "$hostile/repo/verl-config"

# Three levels of 120 entries over four small files: composed once per file and package, in
# well under a second (it took hours when each entry was composed again).
fan=$hostile/fan
mkdir -p "$fan"
# fan_out [wide]: b.yaml, c.yaml and d.yaml below a ppo_trainer.yaml, each of the first three
# listing the next 120 times (wide: each time at a package of its own, `c@c17`).
fan_out() {
  local file
  local -A next=([ppo_trainer]=b [b]=c [c]=d)
  for file in ppo_trainer b c; do
    {
      echo "defaults:"
      for i in $(seq 120); do echo "  - ${next[$file]}${1:+@${next[$file]}$i}"; done
      if [[ $file == ppo_trainer ]]; then
        printf '  - _self_\ntrainer:\n  nnodes: 1\n  experiment_name: e\n  outside_key: 1\n'
      else
        echo "$file: 1"
      fi
    } >"$fan/$file.yaml"
  done
  printf 'd: 1\n' >"$fan/d.yaml"
}
# fan_run NAME: validate against $fan, timed.
fan_run() {
  local start
  start=$(date +%s%N)
  timeout 120 "$bin" validate --repo "$hostile/repo" --verl-config "$fan" >"$work/$1.out" 2>"$work/$1.err"
  echo $? >"$work/$1.rc"
  local ms=$((($(date +%s%N) - start) / 1000000))
  echo "$1: validate took $ms ms"
  ((ms < 60000)) || fail "$1: took $ms ms, over 60 s"
}
fan_out
fan_run fan
expect_rc fan 0
# The same with every entry at a package of its own: 120^3 copies of d.yaml is more than any
# verl config composes, and it stops at the budget with the entry that crossed it.
fan_out wide
fan_run fan-wide
expect_rc fan-wide 1
grep -qE "^jobs/ppo/x.yaml: error: cannot compose verl's ppo_trainer config: c.yaml:[0-9]+:5: defaults entry \"d@d[0-9]+\": composing (follows more than [0-9]+ defaults entries|makes more than [0-9]+ keys and values)" \
  "$work/fan-wide.err" || fail "fan-wide: $(cat "$work/fan-wide.err")"


finish "validate --verl-config: ok"
