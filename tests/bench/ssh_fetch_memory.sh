#!/usr/bin/env bash
# Memory over SSH fetches (ssh_fetch_memory.cc) against an sshd of the tests' own
# (tests/integration/ssh/sshd_fixture.sh): first as ray-gitops runs, libgit2 given a private
# home; then libgit2 reading a user's known_hosts of LINES lines itself, its parse freed with
# each session as ray-gitops does, then left to libgit2 (the leak avoided). With --check, only
# the first, failing when its heap grew by more than MAX_KB over the last half of the fetches.
# Exit 77 (skipped) when sshd cannot be used here.
# Args: path-to-ssh_fetch_memory source-dir [--fetches N] [--lines LINES] [--check MAX_KB]
set -u
prog=$1
src=$2
shift 2
fetches=200
lines=2000
check=""
while (($#)); do
  case $1 in
    --fetches) fetches=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    --check) check=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=tests/cli/lib.sh
source "$src/tests/cli/lib.sh"
# shellcheck source=tests/integration/ssh/sshd_fixture.sh
source "$src/tests/integration/ssh/sshd_fixture.sh"
if ! why=$(sshd_fixture_available); then
  echo "SKIP: $why"
  exit 77
fi
sshd_fixture_start bench ed25519 ecdsa
port=${sshd_port[bench]}
repo=$work/repo.git
git init -q --bare "$repo"
git clone -q "$repo" "$work/checkout" 2>/dev/null
(cd "$work/checkout" && echo x >f && git add f && git commit -qm x && git push -q origin HEAD:main) || exit 1
url="ssh://$(id -un)@127.0.0.1:$port$repo"
right="[127.0.0.1]:$port $(cut -d' ' -f1,2 "$work/sshd-bench/host_ed25519.pub")"
echo "$right" >"$work/known_hosts"

if [[ -n $check ]]; then
  "$prog" --url "$url" --key "$(sshd_client_key)" --known-hosts "$work/known_hosts" \
    --cache-dir "$work/cache-private" --private-home --fetches "$fetches" --max-growth-kb "$check"
  exit $?
fi

"$prog" --url "$url" --key "$(sshd_client_key)" --known-hosts "$work/known_hosts" \
  --cache-dir "$work/cache-private" --private-home --fetches "$fetches" || exit 1
echo
# A user's file: LINES lines of other hosts (a few keys repeated under other names), then ours.
mkdir -p "$work/home/.ssh"
for i in $(seq 1 8); do ssh-keygen -q -t ed25519 -N '' -C '' -f "$work/other-$i"; done
for i in $(seq 1 "$lines"); do
  echo "host-$i.example.com $(cut -d' ' -f1,2 "$work/other-$((i % 8 + 1)).pub")"
done >"$work/home/.ssh/known_hosts"
echo "$right" >>"$work/home/.ssh/known_hosts"
echo "(a known_hosts of $((lines + 1)) lines, each parse freed with its session)"
HOME=$work/home "$prog" --url "$url" --key "$(sshd_client_key)" \
  --known-hosts "$work/home/.ssh/known_hosts" --cache-dir "$work/cache-user" --fetches "$fetches"
echo
echo "(the same, each parse left to libgit2: the leak avoided)"
HOME=$work/home "$prog" --url "$url" --key "$(sshd_client_key)" \
  --known-hosts "$work/home/.ssh/known_hosts" --cache-dir "$work/cache-kept" --fetches "$fetches" \
  --keep-lists
