#!/usr/bin/env bash
# `ray-gitops validate` on fixture repositories. Args: path-to-binary source-dir.
set -u
bin=$1
src=$2
broken=$src/tests/data/broken
valid=$src/tests/data/spec/valid-repo
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run NAME ARGS...: runs the binary, leaving stdout, stderr and the exit status in $work/NAME.*
run() {
  local name=$1
  shift
  "$bin" "$@" >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.rc"
}

expect_rc() {
  local got
  got=$(cat "$work/$1.rc")
  [[ $got == "$2" ]] || fail "$1: exit status $got, expected $2"
}

expect_out() {
  local got
  got=$(cat "$work/$1.out")
  [[ $got == "$2" ]] || fail "$1: stdout '$got', expected '$2'"
}

# Every kind of problem, each reported once at its line and column; the valid spec, the
# hidden folder and the non-YAML file are not reported.
run broken validate --repo "$broken"
expect_rc broken 1
diff -u "$broken/expected-errors.txt" "$work/broken.err" || fail "broken: stderr differs"
expect_out broken "51 errors in 24 files"
grep -q "jobs/valid/ok.yaml" "$work/broken.err" && fail "broken: the valid spec was reported"
grep -q ".drafts\|notes.txt" "$work/broken.err" && fail "broken: a hidden or non-YAML file was read"

# An invalid cluster file is reported on its own; ${shared_root} cannot be checked against it.
run cluster validate --repo "$broken" --cluster-file cluster-invalid.yaml
expect_rc cluster 1
grep '^cluster-invalid.yaml:' "$work/cluster.err" >"$work/cluster.only"
diff -u "$broken/expected-cluster-errors.txt" "$work/cluster.only" || fail "cluster: errors differ"
grep -q "shared_root is used" "$work/cluster.err" && fail "cluster: shared_root checked against an invalid cluster file"

run missing-cluster validate --repo "$broken" --cluster-file nope.yaml
expect_rc missing-cluster 1
grep -qx "nope.yaml: error: file not found" "$work/missing-cluster.err" ||
  fail "missing-cluster: no 'file not found' for the cluster file"

run valid validate --repo "$valid"
expect_rc valid 0
expect_out valid "ok: cluster.yaml and 3 jobspecs are valid"
[[ -s $work/valid.err ]] && fail "valid: unexpected stderr: $(cat "$work/valid.err")"

# FILE arguments: only those files (and the cluster file) are reported.
run one-valid validate --repo "$broken" jobs/valid/ok.yaml
expect_rc one-valid 0
expect_out one-valid "ok: cluster.yaml and 1 jobspec is valid"

run one-broken validate --repo "$broken" jobs/names/dup-a.yaml jobs/workload/unknown.yaml
expect_rc one-broken 1
diff -u <(grep -e '^jobs/names/dup-a.yaml:' -e '^jobs/workload/unknown.yaml:' "$broken/expected-errors.txt") \
  "$work/one-broken.err" || fail "one-broken: stderr differs"
expect_out one-broken "2 errors in 2 files"

run bad-args validate --repo "$broken" jobs/no-such.yaml ../outside.yaml jobs/notes.txt
expect_rc bad-args 1
grep -qx "jobs/no-such.yaml: error: file not found" "$work/bad-args.err" || fail "bad-args: missing file not reported"
grep -q "^../outside.yaml: error: not inside the repository" "$work/bad-args.err" || fail "bad-args: outside file not reported"
grep -q "^jobs/notes.txt: error: neither the cluster file nor a JobSpec" "$work/bad-args.err" || fail "bad-args: non-spec file not reported"

# As a pre-commit hook runs it: from the repository root, with repo-relative paths.
(cd "$broken" && "$bin" validate jobs/valid/ok.yaml >"$work/hook.out" 2>"$work/hook.err"; echo $? >"$work/hook.rc")
expect_rc hook 0

# A file over the size limit is rejected without being parsed.
cp -r "$valid" "$work/repo"
python3 -c "import sys; open(sys.argv[1], 'w').write('workload: custom\nentrypoint: ' + 'x' * 1100000 + '\n')" \
  "$work/repo/jobs/huge.yaml"
run huge validate --repo "$work/repo"
expect_rc huge 1
grep -qx "jobs/huge.yaml: error: file is too large (over 1048576 bytes)" "$work/huge.err" || fail "huge: not rejected"

# A verl spec that can be retried but saves no checkpoint: a warning at its line and column, and
# the repository stays valid (exit 0). Retried by default (infra_retries: 3).
mkdir -p "$work/ckpt/jobs"
printf 'address: http://127.0.0.1:8265\nshared_root: /shared\n' >"$work/ckpt/cluster.yaml"
printf '# no save_freq\nworkload: ppo\nmodel_id: m\n' >"$work/ckpt/jobs/default.yaml"
printf 'workload: grpo\nmodel_id: m\nsave_freq: 10\nretries: 2\noverrides:\n  - trainer.save_freq=-1\n' \
  >"$work/ckpt/jobs/overridden.yaml"
printf 'workload: sft\nmodel_id: m\nretries: 1\ninfra_retries: 0\n' >"$work/ckpt/jobs/retried.yaml"
printf 'workload: sft\nmodel_id: m\ninfra_retries: 0\n' >"$work/ckpt/jobs/never-retried.yaml"
printf 'workload: ppo\nmodel_id: m\nsave_freq: 20\n' >"$work/ckpt/jobs/saves.yaml"
printf 'workload: ppo\nmodel_id: m\noverrides:\n  - +trainer.save_freq=5\n' >"$work/ckpt/jobs/saves-by-override.yaml"
printf 'workload: custom\nentrypoint: echo\nretries: 3\n' >"$work/ckpt/jobs/custom.yaml"
run ckpt validate --repo "$work/ckpt"
expect_rc ckpt 0
expect_out ckpt "ok: cluster.yaml and 7 jobspecs are valid (3 warnings)"
grep -qx "jobs/default.yaml:2:1: warning: ppo job can be retried (infra_retries: 3 by default) but sets no save_freq above 0: .*" \
  "$work/ckpt.err" || fail "ckpt: default infra_retries not warned at workload: $(cat "$work/ckpt.err")"
grep -q "^jobs/overridden.yaml:5:1: warning: grpo job can be retried (retries: 2, infra_retries: 3 by default) but sets no save_freq above 0: verl then saves no checkpoint, so a retried attempt starts again from step 0" \
  "$work/ckpt.err" || fail "ckpt: an override turning save_freq off not warned at overrides: $(cat "$work/ckpt.err")"
grep -q "^jobs/retried.yaml:3:1: warning: sft job can be retried (retries: 1) " "$work/ckpt.err" ||
  fail "ckpt: retries not warned at retries: $(cat "$work/ckpt.err")"
grep -q -e "^jobs/never-retried" -e "^jobs/saves" -e "^jobs/custom" "$work/ckpt.err" && fail "ckpt: warned about a spec that needs no checkpoint: $(cat "$work/ckpt.err")"
run ckpt-json validate --repo "$work/ckpt" --format json
expect_rc ckpt-json 0
python3 - "$work/ckpt-json.out" <<'PY' || fail "ckpt-json: $(cat "$work/ckpt-json.out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["valid"] is True, d
got = sorted((x["file"], x["line"], x["column"], x["severity"]) for x in d["diagnostics"])
assert got == [("jobs/default.yaml", 2, 1, "warning"), ("jobs/overridden.yaml", 5, 1, "warning"),
               ("jobs/retried.yaml", 3, 1, "warning")], got
PY
# With an error beside it, the warning is still shown and the exit status is the error's.
printf 'workload: custom\n' >"$work/ckpt/jobs/broken.yaml"
run ckpt-broken validate --repo "$work/ckpt"
expect_rc ckpt-broken 1
expect_out ckpt-broken "1 error in 1 file (3 warnings)"

run help validate --help
expect_rc help 0
grep -q -- "--cluster-file" "$work/help.out" || fail "help: --cluster-file not described"

if [[ -d $src/examples/repo ]]; then
  run examples validate --repo "$src/examples/repo"
  expect_rc examples 0
  [[ -s $work/examples.err ]] && fail "examples: $(cat "$work/examples.err")"
  # The fork of verl as shipped, before forks/verl/fetch.sh: the zip would hold LICENSE alone
  # (README.md, fetch.sh and .gitattributes are export-ignore).
  if [[ ! -d $src/examples/repo/forks/verl/verl ]]; then
    run fork-render render --repo "$src/examples/repo" jobs/grpo/qwen2.5-0.5b-gsm8k-fork.yaml
    expect_rc fork-render 0
    grep -q "code forks/verl (working tree): tree [0-9a-f]*, 1 file, .*gcs://_ray_pkg_" \
      "$work/fork-render.err" || fail "fork-render: $(cat "$work/fork-render.err")"
  fi
else
  echo "skipped: $src/examples/repo does not exist"
fi

if ((failures > 0)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all validate checks passed"
