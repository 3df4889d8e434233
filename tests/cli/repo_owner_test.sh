#!/usr/bin/env bash
# A checkout another user owns, as CI makes them (GitLab's helper clones as root, the job runs
# as the image's user; a container runs as root on a mounted checkout): Git refuses to open it
# (safe.directory), and every command that opens it says so plainly, naming the checkout, the
# owner's uid, this process's uid and the fix, instead of libgit2 1.5's "config value
# 'safe.directory' was not found". validate, which reads the files without Git, fails the specs
# whose code folder it would read from Git. The fix the message gives works. Run as root
# (chown); skipped otherwise. Args: path-to-binary source-dir.
set -u
bin=$1
# shellcheck source=tests/cli/lib.sh
source "$2/tests/cli/lib.sh"
if [[ $(id -u) != 0 ]]; then
  echo "not root: cannot give the checkout to another user; skipped"
  exit 77
fi
other=4242
chmod 755 "$work"
export HOME=$work/home
mkdir -p "$HOME"

repo=$work/checkout
git init -q "$repo"
cd "$repo" || exit 1
mkdir -p jobs src/tool
printf 'address: http://127.0.0.1:9\n' >cluster.yaml
printf 'workload: custom\nentrypoint: python train.py\n' >jobs/plain.yaml
printf 'print("hi")\n' >src/tool/main.py
printf 'workload: custom\ncode: src/tool\nentrypoint: python main.py\n' >jobs/coded.yaml
git add -A && git commit -qm first
printf 'workload: custom\nentrypoint: python train.py --more\n' >jobs/plain.yaml
git commit -qam second
chown -R "$other:$other" "$repo"

# refused NAME UID SELF PATH: run NAME failed with the ownership message for PATH.
refused() {
  local name=$1 owner=$2 self=$3 path=$4 said
  said=$(cat "$work/$name.out" "$work/$name.err")
  expect_rc "$name" 1
  grep -qF "the Git repository $path is owned by another user (uid $owner; this process runs as uid $self)" <<<"$said" ||
    fail "$name: the message does not name the checkout and both uids: $said"
  grep -qF "git config --global --add safe.directory $path\`" <<<"$said" ||
    fail "$name: the message does not give the safe.directory fix for $path: $said"
  grep -qF "run ray-gitops as uid $owner" <<<"$said" || fail "$name: the message does not offer the owner: $said"
  grep -q "was not found\|not a Git repository" <<<"$said" && fail "$name: libgit2's baffling message is shown: $said"
}

run diff diff --repo . HEAD~1 HEAD
refused diff "$other" 0 "$repo"
run diff_abs diff --repo "$repo/" HEAD~1 HEAD
refused diff_abs "$other" 0 "$repo"
run plan plan --repo . --ray-address http://127.0.0.1:9
refused plan "$other" 0 "$repo"
run plan_status plan --repo "$repo" --ref ray-gitops/status --ray-address http://127.0.0.1:9 \
  --cache-dir "$work/cache"
refused plan_status "$other" 0 "$repo"
run sync sync --repo "file://$repo" --cache-dir "$work/cache" --no-artifacts \
  --ray-address http://127.0.0.1:9
refused sync "$other" 0 "$repo"

# validate reads the specs as files; the code folder is the one thing it reads from Git.
run validate validate --repo .
expect_rc validate 1
grep -q "^jobs/coded.yaml:2:7: error: code: the Git repository $repo is owned by another user (uid $other;" "$work/validate.err" ||
  fail "validate: the coded spec's error: $(cat "$work/validate.err")"
grep -q "plain.yaml" "$work/validate.err" && fail "validate: a spec without code failed: $(cat "$work/validate.err")"
rm jobs/coded.yaml
run validate_plain validate --repo .
expect_rc validate_plain 0
git -C "$repo" -c safe.directory="$repo" checkout -q -- jobs/coded.yaml
chown -R "$other:$other" "$repo"

# The other way round: a checkout root owns, read by an unprivileged user.
if command -v setpriv >/dev/null 2>&1; then
  cp -a "$repo" "$work/rootowned"
  chown -R 0:0 "$work/rootowned"
  cd "$work/rootowned" || exit 1
  setpriv --reuid 65532 --regid 65532 --clear-groups env HOME=/nonexistent \
    "$bin" diff --repo . HEAD~1 HEAD >"$work/unpriv.out" 2>"$work/unpriv.err"
  echo $? >"$work/unpriv.rc"
  refused unpriv 0 65532 "$work/rootowned"
  cd "$repo" || exit 1
else
  echo "setpriv is not installed: the unprivileged case was not run"
fi

# The fix the message gives.
git config --global --add safe.directory "$repo"
run trusted diff --repo . HEAD~1 HEAD
expect_rc trusted 2
grep -q "1 to replace" "$work/trusted.out" || fail "trusted: $(cat "$work/trusted.out")"
run trusted_validate validate --repo .
expect_rc trusted_validate 0

finish "a checkout another user owns: every command names it, the uids and the fix"
