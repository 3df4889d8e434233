# shellcheck shell=bash
# Shared by the e2e scripts: sourced, never run. Reads the head that ctest's fixture started
# (scripts/ray-head.sh writes $RG_E2E_RAY_STATE_DIR/{address,token}), or starts a fake head,
# and gives small helpers. Usage from a test:
#   source lib.sh; [rg_e2e_fake_head FAKE_RAY_SERVER_BINARY [FLAGS...]]
#   rg_e2e_init RAY_GITOPS_BINARY SOURCE_DIR
# A test that has more to clean up on exit defines rg_on_exit; the EXIT trap calls it first,
# then ends the fake head and removes $RG_TMP.
set -euo pipefail

rg_e2e_init() {
  RG_BIN=$1
  RG_SRC=$2
  : "${RG_E2E_RAY_STATE_DIR:?RG_E2E_RAY_STATE_DIR must name the state dir of a running head}"
  [ -s "$RG_E2E_RAY_STATE_DIR/address" ] || rg_fail "no head address in $RG_E2E_RAY_STATE_DIR"
  RG_ADDRESS=$(cat "$RG_E2E_RAY_STATE_DIR/address")
  RG_TOKEN_FILE=$RG_E2E_RAY_STATE_DIR/token
  RG_TOKEN=$(cat "$RG_TOKEN_FILE" 2>/dev/null || true)
  RG_VENV=${RG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv}
  RG_PY=$RG_VENV/bin/python
  # Only the flags: an address or token in the caller's environment must not leak in.
  unset RAY_ADDRESS RAY_API_SERVER_ADDRESS RAY_AUTH_TOKEN RAY_JOB_HEADERS
  RG_TMP=$(mktemp -d /tmp/rg-e2e.XXXXXX)
  # Makes every spec of this run (and so its submission id) new to a head that outlives runs.
  RG_RUN_TAG=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
  trap rg_e2e_cleanup EXIT
}

rg_e2e_cleanup() {
  if declare -F rg_on_exit >/dev/null; then rg_on_exit || true; fi
  rg_fake_stop
  [ -n "${RG_FAKE_STATE:-}" ] && rm -rf "$RG_FAKE_STATE"
  [ -n "${RG_TMP:-}" ] && rm -rf "$RG_TMP"
  return 0
}

# rg_fake_start FAKE_RAY_SERVER_BINARY [FLAGS...]: runs the fake head as the coprocess RG_FAKE
# (it answers on a free loopback port and prints the port first; SIGUSR1/SIGUSR2 acks come on
# ${RG_FAKE[0]}). Sets RG_FAKE_PID and RG_FAKE_URL. Ended by rg_fake_stop.
rg_fake_start() {
  coproc RG_FAKE { exec "$@"; }
  local port
  read -r port <&"${RG_FAKE[0]}"
  RG_FAKE_URL=http://127.0.0.1:$port
}

rg_fake_stop() {
  if [ -n "${RG_FAKE_PID:-}" ]; then kill "$RG_FAKE_PID" 2>/dev/null || true; fi
  RG_FAKE_PID=""
}

# rg_e2e_fake_head FAKE_RAY_SERVER_BINARY [FLAGS...]: the test's own fake head instead of the
# real one; call before rg_e2e_init, whose trap ends it.
rg_e2e_fake_head() {
  rg_fake_start "$@"
  RG_FAKE_STATE=$(mktemp -d /tmp/rg-fake-head.XXXXXX)
  echo "$RG_FAKE_URL" >"$RG_FAKE_STATE/address"
  export RG_E2E_RAY_STATE_DIR=$RG_FAKE_STATE
  trap rg_e2e_cleanup EXIT
}

# For the tests that run only against the fake: exits 2 unless a fake binary is the 3rd arg.
rg_e2e_need_fake() {
  [ $# -ge 3 ] && return 0
  echo "usage: $0 RAY_GITOPS_BINARY SOURCE_DIR FAKE_RAY_SERVER_BINARY" >&2
  exit 2
}

rg_fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# ray-gitops with the head's address and token.
rg() {
  local token_args=()
  [ -n "$RG_TOKEN" ] && token_args=(--ray-token-file "$RG_TOKEN_FILE")
  "$RG_BIN" --ray-address "$RG_ADDRESS" "${token_args[@]}" "$@"
}

# The status field of `ray-gitops status ID`.
rg_status_of() {
  rg status "$1" | awk -F': ' '$1 == "status" { print $2 }'
}

# Waits until "${@:4}" succeeds for job $1 (within $2 seconds), polling: Ray has no watch of a
# job's status or log. Fails, with the job's status and log, naming $3 (what was awaited) when
# the job ends without it or the time runs out. An ended job is asked once more, so a status or
# a line that came with its end counts.
rg_wait_job() {
  local id=$1 limit=$2 what=$3 status=""
  shift 3
  local deadline=$((SECONDS + limit))
  while [ $SECONDS -lt $deadline ]; do
    "$@" && return 0
    status=$(rg_status_of "$id")
    case "$status" in SUCCEEDED | FAILED | STOPPED)
      "$@" && return 0
      rg status "$id" >&2 || true
      rg logs "$id" >&2 || true
      rg_fail "job $id ended $status without $what" ;;
    esac
    sleep 0.5
  done
  rg status "$id" >&2 || true
  rg logs "$id" >&2 || true
  rg_fail "job $id: no $what within ${limit}s (status ${status:-unknown})"
}

rg_has_status() { [ "$(rg_status_of "$1")" = "$2" ]; }
rg_log_has() { rg logs "$1" 2>/dev/null | grep -qF -- "$2"; }

# Waits until job $1 has status $2 (within $3 seconds, default 120).
rg_wait_status() { rg_wait_job "$1" "${3:-120}" "status $2" rg_has_status "$1" "$2"; }

# Waits until job $1's driver log shows the text $2 (within $3 seconds, default 120).
rg_wait_log() { rg_wait_job "$1" "${3:-120}" "'$2' in its log" rg_log_has "$1" "$2"; }

# A raw Jobs API GET (path after the address), printed as JSON.
rg_api_get() {
  RG_API_ADDRESS=$RG_ADDRESS RG_API_TOKEN=$RG_TOKEN "$RG_PY" - "$1" <<'PYEOF'
import os, sys, urllib.request
headers = {"User-Agent": "ray-gitops-e2e"}
if os.environ["RG_API_TOKEN"]:
    headers["Authorization"] = "Bearer " + os.environ["RG_API_TOKEN"]
req = urllib.request.Request(os.environ["RG_API_ADDRESS"] + sys.argv[1], headers=headers)
with urllib.request.urlopen(req, timeout=30) as resp:
    sys.stdout.write(resp.read().decode())
PYEOF
}

# Appends this run's tag to a JobSpec file as an env var, which changes its spec hash.
rg_tag_spec() {
  printf 'env_vars:\n  RG_E2E_RUN: "%s"\n' "$RG_RUN_TAG" >>"$1"
}

# Writes a cluster file for the test head with shared_root $1; extra YAML lines on stdin.
rg_write_cluster() {
  local shared_root=$1 file=$2
  {
    echo "address: $RG_ADDRESS"
    echo "shared_root: $shared_root"
    cat
  } >"$file"
}

# rg_git_remote REMOTE WORK ADDRESS [WHO]: a bare remote whose main gets pushed from the clone
# WORK (committer WHO, default e2e), which holds a cluster file for ADDRESS and nothing else yet.
rg_git_remote() {
  local remote=$1 work=$2 address=$3 who=${4:-e2e}
  git init -q --bare -b main "$remote"
  git clone -q "$remote" "$work" 2>/dev/null
  git -C "$work" config user.email "$who@localhost"
  git -C "$work" config user.name "$who"
  git -C "$work" checkout -q -b main
  echo "address: $address" >"$work/cluster.yaml"
}

# rg_git_push WORK MESSAGE: commits everything in the clone and pushes main.
rg_git_push() {
  git -C "$1" add -A
  git -C "$1" commit -qm "$2"
  git -C "$1" push -q origin main
}

# rg_list_ours INSTANCE: our jobs in Ray, one line each, sorted: "<submission_id> <STATUS>".
rg_list_ours() {
  rg list --format json | "$RG_PY" -c '
import json, sys
for j in sorted(json.load(sys.stdin), key=lambda j: j["submission_id"] or ""):
    if j.get("managed_by") == sys.argv[1]:
        print(j["submission_id"], j["status"])' "$1"
}

# rg_stop_ours INSTANCE: stops whatever the instance still has pending or running (for traps).
rg_stop_ours() {
  local id
  [ -n "${RG_BIN:-}" ] || return 0
  for id in $(rg_list_ours "$1" 2>/dev/null | awk '$2 == "PENDING" || $2 == "RUNNING" { print $1 }'); do
    rg stop "$id" >/dev/null 2>&1 || true
  done
}

# rg_yaml_field KEY: a top-level field of the YAML on stdin, quotes removed.
rg_yaml_field() { awk -F': ' -v k="$1" '$1 == k { gsub(/"/, "", $2); print $2; exit }'; }
