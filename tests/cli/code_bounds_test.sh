#!/usr/bin/env bash
# A code folder under review (a pull request, often from a fork) is read inside the repository
# only and in bounded memory (docs/code-in-the-repository.md): a 1 GiB file of zeros in it is
# refused by its size in validate, diff and plan with a peak resident set under 256 MB; a
# symlink anywhere on its path is named in validate, render, plan, sync and submit, and nothing
# behind it is read or uploaded; an export-ignored link is never followed; the folder keeps
# apart from the jobs and status folders.
# Args: path-to-binary source-dir path-to-fake-ray-server path-to-peak_rss.
set -u
bin=$1
fake=$3
peak_rss=$4
source "$2/tests/cli/lib.sh"

expect_line() {  # NAME TEXT: stderr holds TEXT
  grep -qF -- "$2" "$work/$1.err" || fail "$1: no '$2' in: $(cat "$work/$1.err")"
}
expect_out() {  # NAME TEXT: stdout holds TEXT
  grep -qF -- "$2" "$work/$1.out" || fail "$1: no '$2' in: $(cat "$work/$1.out")"
}
expect_nowhere() {  # NAME TEXT: neither stdout nor stderr holds TEXT
  ! grep -qF -- "$2" "$work/$1.out" "$work/$1.err" || fail "$1: '$2' was read: $(cat "$work/$1.err")"
}
# peak NAME ARGS...: `run` through peak_rss; the peak in KB in $work/NAME.rss.
peak() {
  local name=$1
  shift
  "$peak_rss" "$work/$name.rss" "$bin" "$@" >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.rc"
}
expect_peak_under_mb() {  # NAME MB
  local kb
  kb=$(cat "$work/$1.rss")
  echo "$1: peak resident set $((kb / 1024)) MB"
  ((kb < $2 * 1024)) || fail "$1: peak resident set $((kb / 1024)) MB, over $2 MB"
}

start_server address "$fake"

# --- 1 GiB of zeros in a code folder (a 4.7 MB push): refused by its size, nothing read ---
repo=$work/big
git init -q "$repo"
printf 'address: %s\n' "$address" >"$repo/cluster.yaml"
mkdir -p "$repo/jobs" "$repo/big"
printf 'workload: custom\ncode: big\nentrypoint: sh run.sh\n' >"$repo/jobs/big.yaml"
printf 'tiny\n' >"$repo/big/run.sh"
git -C "$repo" add -A && git -C "$repo" commit -qm base
truncate -s 1G "$repo/big/zeros.bin"  # sparse: the test itself stays small
too_big="jobs/big.yaml:2:7: error: code: big holds 1.0 GiB of files, over the limit of 100.0 MiB"
largest="its largest files: big/zeros.bin (1.0 GiB), big/run.sh (5 bytes)"

peak validate validate --repo "$repo"
expect_rc validate 1
expect_line validate "$too_big"
expect_line validate "$largest"
expect_peak_under_mb validate 256

# The blob written as Git would write it, without a 1 GiB buffer anywhere.
blob=$(python3 - "$repo/.git" <<'PY'
import hashlib, os, sys, zlib
size = 1 << 30
header = b"blob %d\0" % size
sha, deflate, chunk = hashlib.sha1(header), zlib.compressobj(1), bytes(1 << 20)
parts = [deflate.compress(header)]
for _ in range(size // len(chunk)):
    sha.update(chunk)
    parts.append(deflate.compress(chunk))
parts.append(deflate.flush())
name = sha.hexdigest()
os.makedirs(os.path.join(sys.argv[1], "objects", name[:2]), exist_ok=True)
with open(os.path.join(sys.argv[1], "objects", name[:2], name[2:]), "wb") as f:
    f.write(b"".join(parts))
print(name)
PY
)
git -C "$repo" update-index --add --cacheinfo "100644,$blob,big/zeros.bin"
git -C "$repo" commit -qm "1 GiB of zeros"

peak diff diff --repo "$repo" HEAD~1 HEAD
expect_out diff "$too_big"
expect_peak_under_mb diff 256
peak diff_wt diff --repo "$repo" HEAD~1
expect_out diff_wt "$too_big"
expect_peak_under_mb diff_wt 256
peak plan plan --repo "$repo" --ray-address "$address"
expect_out plan "$too_big"
expect_out plan "$largest"
expect_peak_under_mb plan 256
# A bare repository (a push's remote) is read in place too, not copied object by object.
git clone -q --bare "$repo" "$work/big.git"
peak plan_bare plan --repo "$work/big.git" --cache-dir "$work/cache-big" --ray-address "$address"
expect_out plan_bare "$too_big"
expect_peak_under_mb plan_bare 256

# --- a symlink on the path of a code folder, at every depth: named, never followed ---
outside=$work/outside
mkdir -p "$outside/secretdir" "$outside/x/y"
printf 'outside secret\n' >"$outside/secretdir/secret.txt"
printf 'outside secret\n' >"$outside/x/y/secret.txt"
links=$work/links
git init -q "$links"
printf 'address: %s\n' "$address" >"$links/cluster.yaml"
mkdir -p "$links/jobs" "$links/a/b"
ln -s "$outside" "$links/l"
ln -s "$outside" "$links/a/l"
ln -s ../../../outside "$links/a/b/l"
printf 'workload: custom\ncode: l/secretdir\nentrypoint: cat secret.txt\n' >"$links/jobs/leak.yaml"
printf 'workload: custom\ncode: a/l/x/y\nentrypoint: cat secret.txt\n' >"$links/jobs/deep.yaml"
printf 'workload: custom\ncode: a/b/l/secretdir\nentrypoint: cat secret.txt\n' >"$links/jobs/deeper.yaml"
git -C "$links" add -A && git -C "$links" commit -qm "links above code folders"
never="; a code folder is read inside the repository only, never through a link"
leak="jobs/leak.yaml:2:7: error: code: l is a symlink on the path to l/secretdir$never"
deep="jobs/deep.yaml:2:7: error: code: a/l is a symlink on the path to a/l/x/y$never"
deeper="jobs/deeper.yaml:2:7: error: code: a/b/l is a symlink on the path to a/b/l/secretdir$never"

run links_validate validate --repo "$links"
expect_rc links_validate 1
expect_line links_validate "$leak"
expect_line links_validate "$deep"
expect_line links_validate "$deeper"
run links_render render --repo "$links" jobs/leak.yaml
expect_rc links_render 1
expect_line links_render "$leak"
expect_nowhere links_render "gcs://_ray_pkg_"
run links_plan plan --repo "$links" --ray-address "$address"
expect_out links_plan "$leak"
expect_out links_plan "$deep"
expect_out links_plan "$deeper"
git clone -q --bare "$links" "$work/links.git"
run links_sync sync --repo "$work/links.git" --cache-dir "$work/cache" --ray-address "$address" \
  --no-artifacts --no-status
expect_line links_sync "$leak"
expect_nowhere links_sync "code uploaded"
run links_submit submit --config "$links/cluster.yaml" --jobspec "$links/jobs/leak.yaml" \
  --no-artifacts
expect_rc links_submit 1
expect_line links_submit "code: l is a symlink on the path to l/secretdir"
[[ -z $("$bin" --ray-address "$address" list --format json 2>/dev/null | grep -o leak) ]] ||
  fail "a spec whose code folder lies behind a link was submitted"

# --- an export-ignored link inside a code folder is never followed (validate's verl check) ---
fork=$work/fork
git init -q "$fork"
printf 'address: %s\n' "$address" >"$fork/cluster.yaml"
mkdir -p "$fork/jobs" "$fork/trainer" "$outside/verl/trainer/config"
printf 'OUTSIDE_MARKER: {\n' >"$outside/verl/trainer/config/ppo_trainer.yaml"
ln -s "$outside/verl" "$fork/trainer/verl"
printf 'verl export-ignore\n' >"$fork/trainer/.gitattributes"
printf 'print("train")\n' >"$fork/trainer/main.py"
cat >"$fork/jobs/ppo.yaml" <<'EOF'
workload: ppo
code: trainer
model_id: m
train_file: /data/train.parquet
val_file: /data/val.parquet
EOF
run fork_validate validate --repo "$fork"
expect_rc fork_validate 0
expect_nowhere fork_validate "ppo_trainer"
# The same from a relative --repo.
(cd "$work" && "$bin" validate --repo fork >"$work/fork_relative.out" 2>"$work/fork_relative.err"
  echo $? >"$work/fork_relative.rc")
expect_rc fork_relative 0

# --- the jobs folder and the status folder are no code folders ---
apart=$work/apart
git init -q "$apart"
printf 'address: %s\n' "$address" >"$apart/cluster.yaml"
mkdir -p "$apart/jobs/x" "$apart/status" "$apart/deploy/jobs"
printf 'workload: custom\ncode: jobs\nentrypoint: x\n' >"$apart/jobs/a.yaml"
printf 'workload: custom\ncode: jobs/x\nentrypoint: x\n' >"$apart/jobs/b.yaml"
printf 'workload: custom\ncode: status\nentrypoint: x\n' >"$apart/jobs/c.yaml"
printf 'workload: custom\ncode: .\nentrypoint: x\n' >"$apart/jobs/d.yaml"
printf 'x\n' >"$apart/jobs/x/run.sh"
printf 'x\n' >"$apart/status/run.sh"
run apart validate --repo "$apart"
expect_rc apart 1
expect_line apart "jobs/a.yaml:2:7: error: code: jobs is the jobs folder jobs: every spec edit would change the code's tree"
expect_line apart "jobs/b.yaml:2:7: error: code: jobs/x lies inside the jobs folder jobs"
expect_line apart "jobs/c.yaml:2:7: error: code: status is the status folder status: every status commit would change the code's tree"
expect_line apart "jobs/d.yaml:2:7: error: code cannot be the repository's root: it holds the jobs folder jobs and the status folder status"
printf 'workload: custom\ncode: deploy\nentrypoint: x\n' >"$apart/deploy/jobs/e.yaml"
printf 'x\n' >"$apart/deploy/run.sh"
run apart_dir validate --repo "$apart" --jobs-dir deploy/jobs
expect_rc apart_dir 1
expect_line apart_dir "deploy/jobs/e.yaml:2:7: error: code: deploy contains the jobs folder deploy/jobs"

finish "code bounds: 1 GiB refused unread, links named and never followed, jobs and status folders apart"
