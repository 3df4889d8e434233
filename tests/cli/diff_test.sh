#!/usr/bin/env bash
# `ray-gitops diff BASE [HEAD]` on real Git repositories, offline: the Ray address points at a
# closed port and nothing may reach it. A new, an edited, a removed spec and a cluster.yaml
# change: exit 2, each job with its action, the field diff, the rendered token, the jobs the
# cluster change reaches; an annotations-only change exits 0; an invalid spec exits 1 at its
# line and column; HEAD as a commit and a file:// URL give the same answer as the working
# tree; a shallow clone without BASE says how to fetch it. Args: path-to-binary source-dir.
set -u
bin=$1
# shellcheck source=tests/cli/lib.sh
source "$2/tests/cli/lib.sh"
export RAY_ADDRESS=http://127.0.0.1:1 RAY_API_SERVER_ADDRESS=http://127.0.0.1:1

ppo() {
  cat <<YAML
workload: ppo
code_path: \${shared_root}/code
model_id: Qwen/Qwen2.5-0.5B-Instruct
train_file: \${shared_root}/train.parquet
val_file: \${shared_root}/test.parquet
total_training_steps: $1
annotations:
  owner: $2
YAML
}

repo=$work/repo
mkdir -p "$repo/jobs"
cd "$repo" || exit 1
git init -q .
printf 'address: http://127.0.0.1:8265\nshared_root: /shared\n' >cluster.yaml
ppo 100 alice >jobs/ppo.yaml
printf 'workload: custom\nentrypoint: echo old\n' >jobs/old.yaml
printf 'workload: custom\nentrypoint: python serve.py\n' >jobs/same.yaml
git add -A && git commit -qm base

run_diff() { timeout 60 "$bin" diff --repo "$@" >"$work/out" 2>"$work/err"; echo $?; }

# --- annotations only: no effect on runs ---
ppo 100 bob >jobs/ppo.yaml
rc=$(run_diff . main)
[[ $rc == 0 ]] || fail "annotations-only change: exit $rc, expected 0: $(cat "$work/out" "$work/err")"
grep -q "annotations.owner: alice -> bob" "$work/out" || fail "annotations change not shown: $(cat "$work/out")"

# --- the whole change, in the working tree (uncommitted files included) ---
ppo 200 alice >jobs/ppo.yaml
git rm -q jobs/old.yaml
printf 'workload: custom\nentrypoint: echo new\nenv_vars:\n  WANDB_API_KEY: diff-test-secret-value\n' >jobs/new.yaml
printf 'entrypoint_num_gpus: 1\n' >>cluster.yaml
rc=$(run_diff . main)
[[ $rc == 2 ]] || fail "working tree: exit $rc, expected 2: $(cat "$work/err")"
cp "$work/out" "$work/worktree.txt"
grep -Eq "^submit +new " "$work/out" || fail "the new spec is not a submit"
grep -Eq "^replace +ppo " "$work/out" || fail "the edited spec is not a replace"
grep -Eq "^stop if active +old " "$work/out" || fail "the removed spec is not a stop"
grep -q "total_training_steps: 100 -> 200" "$work/out" || fail "no field diff"
grep -Eq "^ +\+ trainer\.total_training_steps=200$" "$work/out" || fail "rendered token not added"
grep -Eq "^ +- trainer\.total_training_steps=100$" "$work/out" || fail "rendered token not removed"
# The replaced run checkpoints in its own run folder (its retries share it: never an -r<k> folder).
grep -Eq "^ +- trainer\.default_local_dir=/shared/jobs/ppo-[0-9a-f]{10}/checkpoints$" "$work/out" ||
  fail "the old run's checkpoint folder is not shown: $(cat "$work/out")"
grep -Eq "^ +\+ trainer\.default_local_dir=/shared/jobs/ppo-[0-9a-f]{10}/checkpoints$" "$work/out" ||
  fail "the new run's checkpoint folder is not shown: $(cat "$work/out")"
grep -q "entrypoint_num_gpus: (unset) -> 1" "$work/out" || fail "cluster field diff missing"
grep -q "reaches the next submission of 3 jobs: new, ppo, same" "$work/out" ||
  fail "the jobs the cluster change reaches: $(grep reaches "$work/out")"
grep -q "gitops\." "$work/out" && fail "metadata shown in the rendered diff"
grep -q "diff-test-secret-value" "$work/out" "$work/err" && fail "a secret env value was printed"

# markdown: a summary line, a table, a details block per changed job
run_diff . main -o markdown >/dev/null
grep -q '^\*\*Runs change:\*\* 1 to submit, 1 to replace, 1 to stop if active' "$work/out" ||
  fail "markdown summary: $(head -3 "$work/out")"
grep -q '^| replace | ppo |' "$work/out" || fail "markdown table row"
grep -q '<details><summary>replace <code>ppo</code></summary>' "$work/out" || fail "markdown details"
# json parses and holds the same actions
run_diff . main --format json >/dev/null
python3 - "$work/out" <<'PY' || fail "json"
import json, sys
d = json.load(open(sys.argv[1]))
actions = {j["name"]: j["action"] for j in d["jobs"]}
assert actions == {"new": "submit", "old": "stop if active", "ppo": "replace", "same": "unchanged"}, actions
assert d["summary"]["runs_change"] is True
assert d["cluster"]["reaches"] == ["new", "ppo", "same"], d["cluster"]
PY

# --- the same change committed: HEAD as a commit, and the repository as a URL ---
git add -A && git commit -qm change
rc=$(run_diff . main~1 HEAD)
[[ $rc == 2 ]] || fail "main~1 HEAD: exit $rc"
diff <(tail -n +2 "$work/worktree.txt") <(tail -n +2 "$work/out") >/dev/null ||
  fail "the committed change diffs differently from the working tree"
rc=$(run_diff "file://$repo" main~1 main --cache-dir "$work/cache")
[[ $rc == 2 ]] || fail "file:// URL: exit $rc: $(cat "$work/err")"
grep -q "total_training_steps: 100 -> 200" "$work/out" || fail "file:// URL: no field diff"
# A bare repository has no working tree to compare: HEAD must be given.
git clone -q --bare "$repo" "$work/bare.git"
rc=$(run_diff "file://$work/bare.git" main~1 main)
[[ $rc == 2 ]] || fail "bare repository: exit $rc: $(cat "$work/err")"
rc=$(run_diff "$work/bare.git" main)
[[ $rc == 1 ]] || fail "a bare repository without HEAD: exit $rc"
grep -q "give HEAD" "$work/err" || fail "a bare repository without HEAD: $(cat "$work/err")"

# --- an invalid spec: exit 1, its file, line and column; the other jobs still diffed ---
printf 'workload: custom\nentrypont: echo typo\n' >jobs/bad.yaml
rc=$(run_diff . HEAD)
[[ $rc == 1 ]] || fail "invalid spec: exit $rc"
grep -q "jobs/bad.yaml:2:1" "$work/out" || fail "invalid spec: no file:line:col: $(cat "$work/out")"
rm jobs/bad.yaml

# --- a shallow clone: BASE is not there; the error says how to get it ---
git clone -q --depth 1 "file://$repo" "$work/shallow"
rc=$(run_diff "$work/shallow" HEAD~1)
[[ $rc == 1 ]] || fail "shallow clone: exit $rc"
grep -q "fetch --unshallow" "$work/err" || fail "shallow clone: $(cat "$work/err")"
rc=$(run_diff "$work/shallow" HEAD)
[[ $rc == 0 ]] || fail "shallow clone, HEAD against its working tree: exit $rc: $(cat "$work/err")"

finish "all diff checks passed"
