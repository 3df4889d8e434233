#!/usr/bin/env bash
# Code from the repository (docs/code-in-the-repository.md) through the binary: `validate` on
# a checkout refuses a code folder that is missing, holds a symlink or would be a zip over
# code_max_bytes, naming the spec's line and the files; `render` shows the package URI, the
# tree id (the one `git rev-parse HEAD:src` gives) and the size; against the fake head, `sync`
# runs the code, `plan` names a code change with its files, and `history` shows the code.
# Args: path-to-binary source-dir path-to-fake-ray-server.
set -u
bin=$1
fake=$3
source "$2/tests/cli/lib.sh"

expect_line() {  # NAME TEXT: stderr holds TEXT
  grep -qF -- "$2" "$work/$1.err" || fail "$1: no '$2' in: $(cat "$work/$1.err")"
}
expect_out() {  # NAME TEXT: stdout holds TEXT
  grep -qF -- "$2" "$work/$1.out" || fail "$1: no '$2' in: $(cat "$work/$1.out")"
}

start_server address "$fake"

repo=$work/repo
git init -q "$repo"
printf 'address: %s\ncode_max_bytes: 8192\n' "$address" >"$repo/cluster.yaml"
mkdir -p "$repo/jobs" "$repo/src"
printf 'workload: custom\ncode: src\nentrypoint: cat marker.txt\n' >"$repo/jobs/marker.yaml"
printf 'marker A\n' >"$repo/src/marker.txt"
printf 'print("train")\n' >"$repo/src/train.py"
git -C "$repo" add -A && git -C "$repo" commit -qm "code A"

# --- validate and render on the checkout ---
run ok validate --repo "$repo"
expect_rc ok 0
run render render --repo "$repo" jobs/marker.yaml --format json
expect_rc render 0
tree=$(git -C "$repo" rev-parse HEAD:src)
expect_line render "jobs/marker.yaml: code src (working tree): tree $tree, 2 files, 24 bytes, shipped as gcs://_ray_pkg_"
python3 - "$work/render.out" "$tree" <<'PY' || fail "render: the body does not name the package and the tree"
import json, sys
body = json.load(open(sys.argv[1]))
assert body["runtime_env"]["working_dir"].startswith("gcs://_ray_pkg_"), body
assert body["metadata"]["gitops.code-tree"] == sys.argv[2], body["metadata"]
PY

# A missing folder, a symlink inside, a folder too big: errors at the spec's `code`, naming files.
printf 'workload: custom\ncode: lib\nentrypoint: cat x\n' >"$repo/jobs/missing.yaml"
mkdir -p "$repo/linked"
printf 'x\n' >"$repo/linked/a.txt"
ln -s a.txt "$repo/linked/b.txt"
printf 'workload: custom\ncode: linked\nentrypoint: cat a.txt\n' >"$repo/jobs/linked.yaml"
mkdir -p "$repo/big"
head -c 20000 /dev/urandom >"$repo/big/weights.bin"
printf 'tiny\n' >"$repo/big/run.sh"
printf 'workload: custom\ncode: big\nentrypoint: sh run.sh\n' >"$repo/jobs/big.yaml"
run bad validate --repo "$repo"
expect_rc bad 1
expect_line bad "jobs/missing.yaml:2:7: error: code: lib does not exist"
expect_line bad "jobs/linked.yaml:2:7: error: code: linked/b.txt is a symlink"
expect_line bad "jobs/big.yaml:2:7: error: code: big holds 19.5 KiB of files, over the limit of 8.0 KiB"
expect_line bad "its largest files: big/weights.bin (19.5 KiB), big/run.sh (5 bytes)"
rm -rf "$repo/jobs/missing.yaml" "$repo/jobs/linked.yaml" "$repo/jobs/big.yaml" "$repo/linked" "$repo/big"

# --- sync against the fake head, a code change named by plan, history ---
remote=$work/remote.git
git clone -q --bare "$repo" "$remote"
run plan0 plan --repo "$remote" --cache-dir "$work/cache"
expect_out plan0 "new job (code src@$(echo "$tree" | cut -c1-10), 2 files, 24 bytes)"
run sync1 sync --repo "$remote" --cache-dir "$work/cache" --no-artifacts
expect_rc sync1 0
expect_line sync1 "code uploaded"
grep -q "submitted.*job=marker " "$work/sync1.err" || fail "sync1: marker was not submitted: $(cat "$work/sync1.err")"

printf 'marker B\n' >"$repo/src/marker.txt"
git -C "$repo" commit -qam "code B"
git -C "$repo" push -q "$remote" HEAD:main 2>/dev/null || git -C "$repo" push -q "$remote" HEAD:master
run plan plan --repo "$remote" --cache-dir "$work/cache"
expect_out plan "code changed: src (1 file: marker.txt)"
run sync2 sync --repo "$remote" --cache-dir "$work/cache" --no-artifacts
expect_rc sync2 0
run history history marker --repo "$remote" --cache-dir "$work/cache"
expect_rc history 0
expect_out history "CODE"
expect_out history "src@$(git -C "$repo" rev-parse HEAD:src | cut -c1-10) (commit $(git -C "$repo" rev-parse HEAD | cut -c1-10))"

# diff between the two commits of the checkout names the change; with the working tree too,
# its files compared with the base's tree: one changed, one new, one removed, one made
# executable, an ignored one left out.
run diff diff --repo "$repo" HEAD~1 HEAD
expect_rc diff 2
expect_out diff "code changed: src (1 file: marker.txt)"
printf 'marker C\n' >"$repo/src/marker.txt"
printf 'print("eval")\n' >"$repo/src/eval.py"
mkdir -p "$repo/src/lib" && printf 'x = 1\n' >"$repo/src/lib/util.py"
git -C "$repo" add src/lib/util.py && git -C "$repo" commit -qm "util"
chmod +x "$repo/src/lib/util.py"
git -C "$repo" rm -q src/train.py
printf '*.pyc\n' >"$repo/.gitignore"
printf 'compiled' >"$repo/src/eval.pyc"
run diff_wt diff --repo "$repo" HEAD
expect_rc diff_wt 2
expect_out diff_wt "code changed: src (4 files: eval.py, lib/util.py, marker.txt, train.py)"
git -C "$repo" checkout -q HEAD -- src/train.py
rm -f "$repo/.gitignore" "$repo/src/eval.pyc"

# A one-off submit ships the folder as the working tree holds it (marker C).
run submit submit --config "$repo/cluster.yaml" --jobspec "$repo/jobs/marker.yaml" --no-artifacts
expect_rc submit 0
one_off=$(head -n1 "$work/submit.out")
[[ $one_off == marker-*-cli ]] || fail "submit: unexpected id '$one_off'"
wait_succeeded() {  # the one-off run SUCCEEDED, polled for up to 10 s
  local i
  for i in $(seq 1 100); do
    "$bin" --ray-address "$address" status "$1" 2>/dev/null | grep -q "^status: SUCCEEDED" && return 0
    sleep 0.1
  done
  fail "$1 did not succeed within 10 s: $("$bin" --ray-address "$address" status "$1" 2>&1)"
}
wait_succeeded "$one_off"
"$bin" --ray-address "$address" logs "$one_off" 2>/dev/null | grep -q "marker C" ||
  fail "submit: the one-off run did not get the working tree's code: $("$bin" --ray-address "$address" logs "$one_off" 2>&1)"

finish "code: validate, render, sync, plan and history ok"
