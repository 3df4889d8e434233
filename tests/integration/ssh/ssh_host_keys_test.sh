#!/usr/bin/env bash
# SSH host keys against real OpenSSH servers on loopback (sshd_fixture.sh): the right key in
# every form a known_hosts file holds it (plain, hashed, [host]:port, in a list) lets sync fetch
# and push and plan read; an empty file, a missing file, a changed key, a key of another type
# (both ways) and an @revoked key are each refused with their message and the key's
# fingerprint, and no request reaches the Ray head; HOME unset works with --known-hosts; a
# daemon without an entry refuses to start; `known-hosts scan` prints what ssh-keyscan and
# ssh-keygen -lf print. Exit 77 (skipped) when sshd cannot be used here.
# Args: path-to-binary source-dir path-to-fake-ray-server.
set -u
bin=$1
src=$2
fake=$3
# shellcheck source=tests/cli/lib.sh
source "$src/tests/cli/lib.sh"
# shellcheck source=tests/integration/ssh/sshd_fixture.sh
source "$src/tests/integration/ssh/sshd_fixture.sh"
if ! why=$(sshd_fixture_available); then
  echo "SKIP: $why"
  exit 77
fi

sshd_fixture_start all ed25519 ecdsa rsa
sshd_fixture_start ed ed25519
sshd_fixture_start ec ecdsa
key=$(sshd_client_key)

# The fake head records every request: a refused fetch must send it nothing.
ray_log=$work/ray-requests.log
: >"$ray_log"
start_server ray "$fake" --record-requests "$ray_log"

# The desired-state repository, served by every sshd (the same path on this machine).
repo=$work/repo.git
git init -q --bare "$repo"
git clone -q "$repo" "$work/checkout" 2>/dev/null
(
  cd "$work/checkout" || exit 1
  mkdir jobs
  printf 'workload: custom\nentrypoint: python train.py\n' >jobs/hello.yaml
  printf 'address: %s\n' "$ray" >cluster.yaml
  git add -A && git commit -qm "one job" && git push -q origin HEAD:main
) || exit 1

url() { echo "ssh://$(id -un)@127.0.0.1:${sshd_port[$1]}$repo"; }
# name SERVER: the server's name in a known_hosts file.
name() { echo "[127.0.0.1]:${sshd_port[$1]}"; }
# line SERVER TYPE [NAMES]: the known_hosts line of the server's key of TYPE.
line() { echo "${3:-$(name "$1")} $(cut -d' ' -f1,2 "$work/sshd-$1/host_$2.pub")"; }
# fp SERVER TYPE: the key's fingerprint as ssh-keygen -lf prints it.
fp() { ssh-keygen -lf "$work/sshd-$1/host_$2.pub" | cut -d' ' -f2; }
requests() { wc -l <"$ray_log"; }

# ok NAME: the run succeeded.
ok() {
  expect_rc "$1" 0
  grep -q "SSH host key" "$work/$1.err" && fail "$1 complained of the host key: $(cat "$work/$1.err")"
}
# refused NAME TEXT FINGERPRINT...: the run failed naming TEXT and each fingerprint, and the Ray
# head got no request since the last check.
refused() {
  local run=$1 text=$2 f
  shift 2
  expect_rc "$run" 1
  grep -qF -- "$text" "$work/$run.err" || fail "$run does not say \"$text\": $(cat "$work/$run.err")"
  for f in "$@"; do
    grep -qF -- "$f" "$work/$run.err" || fail "$run does not show $f: $(cat "$work/$run.err")"
  done
  [[ $(requests) == 0 ]] || fail "$run: the Ray head got requests: $(cat "$ray_log")"
  : >"$ray_log"
}
# sync_with NAME SERVER FILE [ARGS...]: sync from SERVER with FILE as --known-hosts.
sync_with() {
  local run=$1 server=$2 file=$3
  shift 3
  run "$run" --known-hosts "$file" sync --repo "$(url "$server")" --git-ssh-key "$key" \
    --cache-dir "$work/cache-$run" --no-artifacts "$@"
}

# --- the right key, as each form of line holds it: fetched, submitted, status pushed ---
line all ed25519 >"$work/plain"
sync_with plain all "$work/plain"
ok plain
grep -q "submit" "$work/plain.out" "$work/plain.err" || fail "plain: nothing submitted: $(cat "$work/plain.out")"
git --git-dir "$repo" rev-parse -q --verify refs/heads/ray-gitops/status >/dev/null ||
  fail "plain: the status branch was not pushed over SSH"
[[ $(requests) -gt 0 ]] || fail "plain: the Ray head got no request"

cp "$work/plain" "$work/hashed"
ssh-keygen -q -H -f "$work/hashed" >/dev/null 2>&1
grep -q '^|1|' "$work/hashed" || fail "ssh-keygen -H did not hash the line"
sync_with hashed all "$work/hashed" --dry-run
ok hashed

line all ecdsa "other.example.com,$(name all),10.1.2.3" >"$work/list"
sync_with list all "$work/list" --dry-run
ok list

# ecdsa only: libssh2's own first choice, no preference needed; rsa lines are ignored for it.
{ line all rsa; line all ecdsa; } >"$work/ecdsa-rsa"
run plan-ok --known-hosts "$work/ecdsa-rsa" plan --repo "$(url all)" --git-ssh-key "$key" \
  --cache-dir "$work/cache-plan" --ray-address "$ray"
expect_rc plan-ok 0

# HOME unset: libgit2 still connects (its private home), the file comes from the flag.
(
  unset HOME
  sync_with no-home all "$work/plain" --dry-run
)
ok no-home
# RAY_GITOPS_KNOWN_HOSTS names the file when the flag does not.
RAY_GITOPS_KNOWN_HOSTS=$work/plain run env-file plan --repo "$(url all)" --git-ssh-key "$key" \
  --cache-dir "$work/cache-env" --ray-address "$ray"
expect_rc env-file 0

# --- refusals: each message with its fingerprint, nothing sent to Ray ---
: >"$ray_log"
: >"$work/empty"
sync_with empty all "$work/empty"
refused empty "is not in the known_hosts file $work/empty" "$(fp all ecdsa)" \
  "ray-gitops known-hosts scan 127.0.0.1:${sshd_port[all]}"

# A cache directory whose private home an earlier run filled (cache-plain: the ed25519 line):
# this run's file has no line, so libgit2 must be left without one (libssh2 then asks for
# ECDSA first).
run empty-reused --known-hosts "$work/empty" sync --repo "$(url all)" --git-ssh-key "$key" \
  --cache-dir "$work/cache-plain" --no-artifacts
refused empty-reused "is not in the known_hosts file" "offered ecdsa-sha2-nistp256 $(fp all ecdsa)"

sync_with missing all "$work/no-such-file"
refused missing "is not in the known_hosts file $work/no-such-file" "cannot be read" "$(fp all ecdsa)"

# The key changed: the file holds another server's ed25519 key under this name.
{ echo "# an old key"; line ed ed25519 "$(name all)"; } >"$work/changed"
sync_with changed all "$work/changed"
refused changed "SSH host key CHANGED for $(name all)" "$work/changed line 2" "$(fp all ed25519)" \
  "$(fp ed ed25519)" "intercept"

# Another type: the file holds ecdsa, the server has only ed25519 (the handshake itself fails),
# and the reverse.
line ec ecdsa "$(name ed)" >"$work/ecdsa-for-ed"
sync_with other-type ed "$work/ecdsa-for-ed"
refused other-type "lists $(name ed) only with ecdsa-sha2-nistp256" "(line 1)" "$(fp ed ed25519)"
line ed ed25519 "$(name ec)" >"$work/ed-for-ec"
sync_with other-type-2 ec "$work/ed-for-ec"
refused other-type-2 "lists $(name ec) only with ssh-ed25519" "$(fp ec ecdsa)"

# @revoked: the server's key is revoked.
printf '@revoked %s\n' "$(line ed ed25519)" >"$work/revoked"
sync_with revoked ed "$work/revoked"
refused revoked "SSH host key REVOKED" "$work/revoked line 1" "$(fp ed ed25519)"

# plan with an SSH --repo is checked as well.
run plan-empty --known-hosts "$work/empty" plan --repo "$(url all)" --git-ssh-key "$key" \
  --cache-dir "$work/cache-plan-empty" --ray-address "$ray"
refused plan-empty "is not in the known_hosts file" "$(fp all ecdsa)"

# --- the daemon refuses to start without an entry, naming every key of the host ---
timeout 60 "$bin" --known-hosts "$work/empty" run --repo "$(url all)" --git-ssh-key "$key" \
  --cache-dir "$work/cache-run" --listen 127.0.0.1:0 >"$work/run.out" 2>"$work/run.err"
echo $? >"$work/run.rc"
refused run "is not in the known_hosts file" "$(fp all ed25519)" "$(fp all ecdsa)"

# --- a running daemon whose host key changes: the pass fails with the message, in its log ---
cp "$work/plain" "$work/daemon-known-hosts"
"$bin" --known-hosts "$work/daemon-known-hosts" run --repo "$(url all)" --git-ssh-key "$key" \
  --cache-dir "$work/cache-daemon" --listen 127.0.0.1:0 --interval 1s --no-artifacts \
  >"$work/daemon.log" 2>&1 &
daemon_pid=$!
background_pids+=("$daemon_pid")
# wait_for SECONDS PATTERN: the daemon's log shows PATTERN within SECONDS.
wait_for() {
  local i
  for i in $(seq 1 $(($1 * 10))); do
    grep -qF -- "$2" "$work/daemon.log" && return 0
    sleep 0.1
  done
  return 1
}
wait_for 60 "result=ok" || fail "the daemon never passed: $(cat "$work/daemon.log")"
cp "$work/changed" "$work/daemon-known-hosts"
wait_for 30 "SSH host key CHANGED for $(name all)" ||
  fail "the daemon's log does not show the changed key: $(cat "$work/daemon.log")"
grep -qF "$(fp all ed25519)" "$work/daemon.log" || fail "the daemon's log lacks the new fingerprint"
port=$(grep -o ' port=[0-9]*' "$work/daemon.log" | head -1 | cut -d= -f2)
curl -s "http://127.0.0.1:$port/api/v1/status" | grep -q "CHANGED" ||
  fail "/api/v1/status does not show the refusal: $(curl -s "http://127.0.0.1:$port/api/v1/status")"
kill "$daemon_pid"
wait "$daemon_pid" 2>/dev/null

# --- known-hosts scan prints what ssh-keyscan and ssh-keygen -lf print (for the types libssh2
# can read: its 1.10 cannot take an RSA key signed with SHA-2, and OpenSSH no longer signs with
# SHA-1) ---
for server in all ed ec; do
  port=${sshd_port[$server]}
  run "scan-$server" known-hosts scan "127.0.0.1:$port"
  expect_rc "scan-$server" 0
  ssh-keyscan -t ed25519,ecdsa -p "$port" 127.0.0.1 2>/dev/null | sort >"$work/keyscan-$server"
  grep -v '^#' "$work/scan-$server.out" | sort >"$work/ours-$server"
  diff -u "$work/keyscan-$server" "$work/ours-$server" >/dev/null ||
    fail "scan $server: lines differ from ssh-keyscan: $(diff -u "$work/keyscan-$server" "$work/ours-$server")"
  ssh-keygen -lf "$work/keyscan-$server" | sort >"$work/keygen-$server"
  sed -n 's/^# \([0-9]* SHA256:.*\)$/\1/p' "$work/scan-$server.out" | sort >"$work/ourfp-$server"
  diff -u "$work/keygen-$server" "$work/ourfp-$server" >/dev/null ||
    fail "scan $server: fingerprints differ from ssh-keygen -lf: $(diff -u "$work/keygen-$server" "$work/ourfp-$server")"
  grep -q "Git host publishes" "$work/scan-$server.out" || fail "scan $server: no advice to compare"
done
[[ -s $work/ours-all ]] || fail "scan all: no key lines"
run scan-closed known-hosts scan "127.0.0.1:$(_sshd_free_port)"
expect_rc scan-closed 1
grep -q "cannot connect" "$work/scan-closed.err" || fail "scan-closed: $(cat "$work/scan-closed.err")"

finish "ssh host keys: ok"
