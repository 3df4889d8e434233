#!/usr/bin/env bash
# Documents that are not well-formed YAML (tests/data/malformed), which a lenient parser would
# read as something else: `ray-gitops validate` and hooks/pre-commit refuse each of them with
# its line and column. Args: path-to-binary source-dir.
set -u
bin=$1
src=$2
corpus=$src/tests/data/malformed
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

# The whole corpus: one error per malformed file, none for the valid ones.
run all validate --repo "$corpus"
expect_rc all 1
diff -u "$corpus/expected-errors.txt" "$work/all.err" || fail "all: stderr differs"
files=$(wc -l <"$corpus/expected-errors.txt")
[[ $(cat "$work/all.out") == "$files errors in $files files" ]] ||
  fail "all: stdout '$(cat "$work/all.out")', expected '$files errors in $files files'"

# Each file on its own (as the pre-commit hook passes them): exactly its own line.
while IFS= read -r expected; do
  file=${expected%%:*}
  name=$(basename "$file" .yaml)
  run "one-$name" validate --repo "$corpus" "$file"
  expect_rc "one-$name" 1
  [[ $(cat "$work/one-$name.err") == "$expected" ]] ||
    fail "$file: stderr '$(cat "$work/one-$name.err")', expected '$expected'"
done <"$corpus/expected-errors.txt"

run valid validate --repo "$corpus" jobs/valid.yaml
expect_rc valid 0
[[ -s $work/valid.err ]] && fail "valid: unexpected stderr: $(cat "$work/valid.err")"

# A malformed cluster file: refused on its own line.
run cluster validate --repo "$corpus" --cluster-file cluster-malformed.yaml jobs/valid.yaml
expect_rc cluster 1
diff -u "$corpus/expected-cluster-errors.txt" "$work/cluster.err" || fail "cluster: stderr differs"

# hooks/pre-commit in a throwaway repository: every malformed file is refused when staged.
repo=$work/repo
hook_tmp=$work/hook-tmp
mkdir -p "$hook_tmp"
g() {
  env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE HOME="$work" GIT_CONFIG_NOSYSTEM=1 \
    LC_ALL=C TMPDIR="$hook_tmp" RAY_GITOPS="$bin" git -C "$repo" "$@"
}
git init -q "$repo"
g config user.name Test
g config user.email test@example.com
g config commit.gpgsign false
cp "$src/hooks/pre-commit" "$repo/.git/hooks/pre-commit"
chmod +x "$repo/.git/hooks/pre-commit"

mkdir -p "$repo/jobs"
cp "$corpus/cluster.yaml" "$repo/cluster.yaml"
cp "$corpus/jobs/valid.yaml" "$repo/jobs/valid.yaml"
g add cluster.yaml jobs
g commit -q -m "valid cluster and spec" 2>"$work/hook-valid.err" ||
  fail "hook: a commit of the valid files was refused: $(cat "$work/hook-valid.err")"
head=$(g rev-parse HEAD)

while IFS= read -r expected; do
  file=${expected%%:*}
  cp "$corpus/$file" "$repo/$file"
  g add "$file"
  if g commit -q -m "add $file" 2>"$work/hook.err"; then
    fail "hook: the commit of $file was not refused"
  fi
  grep -qxF "$expected" "$work/hook.err" || fail "hook: $file: refusal lacks '$expected': $(cat "$work/hook.err")"
  [[ $(g rev-parse HEAD) == "$head" ]] || fail "hook: $file: a refused commit moved HEAD"
  g rm -q --cached "$file"
  rm "$repo/$file"
done <"$corpus/expected-errors.txt"

cp "$corpus/cluster-malformed.yaml" "$repo/cluster.yaml"
g add cluster.yaml
if g commit -q -m "malformed cluster" 2>"$work/hook.err"; then
  fail "hook: the commit of a malformed cluster.yaml was not refused"
fi
sed 's/^cluster-malformed\.yaml:/cluster.yaml:/' "$corpus/expected-cluster-errors.txt" >"$work/cluster.expected"
grep -qxFf "$work/cluster.expected" "$work/hook.err" ||
  fail "hook: cluster.yaml: refusal lacks '$(cat "$work/cluster.expected")': $(cat "$work/hook.err")"
[[ -z $(ls -A "$hook_tmp") ]] || fail "hook: left files behind: $(ls -A "$hook_tmp")"

if ((failures > 0)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all malformed YAML checks passed"
