#!/usr/bin/env bash
# --repo with credentials in the URL is refused by every command that takes one, before anything
# runs, with exit status 1, a message naming --git-token-file, and the credential never echoed.
# A bare SSH user and a path holding '@' are not credentials. Args: path-to-binary source-dir.
set -u
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

secret=ghp_cli_secret_0123456789abcdef
# The same credential in each place a URL can hold one.
urls=(
  "https://bob:$secret@github.com/org/repo.git"
  "https://$secret@github.com/org/repo.git"
  "http://bob:$secret@git.example.com:8080/org/repo"
  "ssh://git:$secret@github.com/org/repo.git"
  "file://bob:$secret@/srv/repo.git"
)
commands=("plan" "sync" "run" "history some-job")

for url in "${urls[@]}"; do
  for command in "${commands[@]}"; do
    # shellcheck disable=SC2086 # "history some-job" is two words on purpose
    timeout 20 "$bin" $command --repo "$url" --cache-dir "$work/cache" \
      --ray-address http://127.0.0.1:1 >"$work/out" 2>"$work/err"
    rc=$?
    what="$command --repo ${url/$secret/<secret>}"
    [[ $rc == 1 ]] || fail "$what: exit status $rc, expected 1"
    grep -q -- "--git-token-file" "$work/err" || fail "$what: the refusal does not name --git-token-file: $(cat "$work/err")"
    grep -q "holds credentials" "$work/err" || fail "$what: not refused for its credentials: $(cat "$work/err")"
    if grep -q "$secret" "$work/out" "$work/err"; then fail "$what: the credential was printed"; fi
  done
done
# Nothing was cloned: the refusal comes before any work.
[[ -e $work/cache ]] && fail "a cache dir was created for a refused URL"

# Not credentials: a bare SSH user (the account, not a secret) and '@' in a local path. These
# fail later (nothing listens there), but never for credentials.
mkdir -p "$work/at@sign"
for url in "ssh://git@127.0.0.1:1/org/repo.git" "$work/at@sign/repo"; do
  timeout 20 "$bin" plan --repo "$url" --cache-dir "$work/cache2" --ray-address http://127.0.0.1:1 \
    >"$work/out" 2>"$work/err"
  grep -q "holds credentials" "$work/err" && fail "plan --repo $url: refused as holding credentials"
done

if ((failures > 0)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all --repo credential checks passed"
