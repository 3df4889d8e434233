#!/usr/bin/env bash
# Links, submodules and bad job names in one repository, read on disk by `validate` and from a
# commit by `sync` (against the fake head): the same errors naming each path, nothing followed,
# the other jobs submitted and recorded. And the status branch each instance writes by default.
# Args: path-to-binary source-dir path-to-fake-ray-server.
set -u
bin=$1
fake=$3
work=$(mktemp -d)
fake_pid=""
cleanup() {
  [[ -n $fake_pid ]] && kill "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run NAME ARGS...: the binary's stdout, stderr and exit status in $work/NAME.{out,err,rc}.
run() {
  local name=$1
  shift
  "$bin" "$@" >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.rc"
}
expect_rc() {
  [[ $(cat "$work/$1.rc") == "$2" ]] || fail "$1: exit status $(cat "$work/$1.rc"), expected $2: $(cat "$work/$1.err")"
}
expect_line() {  # NAME LINE: stderr holds LINE (as a whole line of validate, or a log line's end)
  grep -qF -- "$2" "$work/$1.err" || fail "$1: no line '$2' in: $(cat "$work/$1.err")"
}
expect_no_secret() {
  if grep -q "$secret" "$work/$1.out" "$work/$1.err"; then fail "$1: the linked file's content was printed"; fi
}
git_() { git -C "$repo" -c user.name=person -c user.email=person@localhost "$@" >/dev/null 2>&1; }

coproc FAKE { exec "$fake"; }
fake_pid=$FAKE_PID
read -r port <&"${FAKE[0]}"
[[ $port =~ ^[0-9]+$ ]] || { echo "FAIL: the fake head did not start" >&2; exit 1; }
address=http://127.0.0.1:$port

secret=ghp_entries_secret_0123456789
link_error="is a symbolic link; specs must be regular files (links are never followed)"
submodule_error="is a Git submodule; specs must be regular files (nothing in a submodule is read)"
name_error='name must be 1 to 63 characters of [a-z0-9._-] starting and ending with a letter or digit'

# A developer's checkout: one good spec, a linked one aiming at a token file, a link to a folder
# of specs, two badly named specs, and a submodule (committed as a gitlink; on disk a folder
# holding .git, as `git submodule add` leaves it).
repo=$work/repo
git init -q -b main "$repo"
printf 'address: %s\n' "$address" >"$repo/cluster.yaml"
echo "$secret" >"$repo/token.txt"
mkdir -p "$repo/jobs" "$repo/elsewhere"
printf 'workload: custom\nentrypoint: sleep 300\n' >"$repo/jobs/ok.yaml"
printf 'workload: custom\nentrypoint: sleep 301\nname: "../x"\n' >"$repo/jobs/dots.yaml"
printf 'workload: custom\nentrypoint: sleep 302\nname: sub/dir\n' >"$repo/jobs/slash.yaml"
printf 'workload: custom\nentrypoint: sleep 303\n' >"$repo/elsewhere/more.yaml"
ln -s ../token.txt "$repo/jobs/link.yaml"
ln -s ../elsewhere "$repo/jobs/more"
git_ add -A
git_ update-index --add --cacheinfo "160000,$(git -C "$repo" hash-object -t commit --stdin </dev/null 2>/dev/null || echo 0000000000000000000000000000000000000001),jobs/vendor"
git_ commit -qm "specs, links, names and a submodule" || fail "cannot commit the fixture"
# What sync reads and writes: the remote the checkout would push to (libgit2 pushes only to a
# bare repository).
remote=$work/remote.git
git clone -q --bare "$repo" "$remote" 2>/dev/null || fail "cannot clone the fixture"
mkdir -p "$repo/jobs/vendor"
echo "gitdir: ../../.git/modules/vendor" >"$repo/jobs/vendor/.git"
printf 'workload: custom\nentrypoint: sleep 304\n' >"$repo/jobs/vendor/inner.yaml"

# --- on disk: validate --repo DIR, and validate FILE... ---
run disk validate --repo "$repo"
expect_rc disk 1
expect_line disk "jobs/link.yaml: error: $link_error"
expect_line disk "jobs/more: error: $link_error"
expect_line disk "jobs/vendor: error: $submodule_error"
expect_line disk "jobs/dots.yaml:3:7: error: $name_error (got \"../x\")"
expect_line disk "jobs/slash.yaml:3:7: error: $name_error (got \"sub/dir\")"
expect_no_secret disk
grep -q "inner.yaml\|elsewhere" "$work/disk.err" && fail "disk: a spec behind a link or in a submodule was read"

run file validate --repo "$repo" jobs/link.yaml jobs/more/more.yaml jobs/vendor/inner.yaml
expect_rc file 1
expect_line file "jobs/link.yaml: error: $link_error"
expect_line file "jobs/more: error: $link_error"
expect_line file "jobs/vendor: error: $submodule_error"
expect_no_secret file

run file-ok validate --repo "$repo" jobs/ok.yaml
expect_rc file-ok 0

# --- in a commit: sync reports the same errors, submits the good job, records every file ---
run sync1 sync --repo "$remote" --cache-dir "$work/cache" --no-artifacts --instance team-b
expect_line sync1 "jobs/link.yaml: error: $link_error"
expect_line sync1 "jobs/more: error: $link_error"
expect_line sync1 "jobs/vendor: error: $submodule_error"
expect_line sync1 "jobs/dots.yaml:3:7: error: $name_error"
expect_line sync1 "jobs/slash.yaml:3:7: error: $name_error"
expect_no_secret sync1
grep -q "submitted.*job=ok " "$work/sync1.err" || fail "sync1: the good job was not submitted: $(cat "$work/sync1.err")"
grep -q "more-more\|inner" "$work/sync1.err" && fail "sync1: a spec behind a link or in a submodule was submitted"

# A non-default instance writes ray-gitops/status-<instance>; each file's record sits at
# status/<valid name>.yaml.
ledger=ray-gitops/status-team-b
git -C "$remote" rev-parse -q --verify "refs/heads/$ledger" >/dev/null || fail "no branch $ledger"
git -C "$remote" rev-parse -q --verify refs/heads/ray-gitops/status >/dev/null &&
  fail "instance team-b wrote the default instance's ray-gitops/status"
files=$(git -C "$remote" ls-tree -r --name-only "$ledger" -- status | tr '\n' ' ')
[[ $files == "status/dots.yaml status/link.yaml status/more.yaml status/ok.yaml status/slash.yaml status/vendor.yaml " ]] ||
  fail "status files on $ledger: $files"
git -C "$remote" show "$ledger:status/link.yaml" | grep -q "$secret" && fail "the link's target is in its status file"

# --- the status branch per instance: an explicit --status-branch wins; the default instance
#     keeps ray-gitops/status ---
run sync2 sync --repo "$remote" --cache-dir "$work/cache" --no-artifacts --instance team-c \
  --status-branch custom/ledger
git -C "$remote" rev-parse -q --verify refs/heads/custom/ledger >/dev/null || fail "no branch custom/ledger"
git -C "$remote" rev-parse -q --verify refs/heads/ray-gitops/status-team-c >/dev/null &&
  fail "--status-branch did not win over the instance's default"
run sync3 sync --repo "$remote" --cache-dir "$work/cache" --no-artifacts
git -C "$remote" rev-parse -q --verify refs/heads/ray-gitops/status >/dev/null ||
  fail "the default instance did not write ray-gitops/status: $(cat "$work/sync3.err")"

if ((failures > 0)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all repository entry checks passed"
