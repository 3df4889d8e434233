# Shared by the e2e scripts: sourced, never run. Reads the head that ctest's fixture started
# (scripts/ray-head.sh writes $RG_E2E_RAY_STATE_DIR/{address,token}) and gives small helpers.
# Usage from a test: source lib.sh; rg_e2e_init RAY_GITOPS_BINARY SOURCE_DIR
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
  trap 'rm -rf "$RG_TMP"' EXIT
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

# Waits until job $1 has status $2 (within $3 seconds, default 120); prints its status and
# logs when it ends otherwise or the time runs out.
rg_wait_status() {
  local id=$1 want=$2 limit=${3:-120} status=""
  local deadline=$((SECONDS + limit))
  while [ $SECONDS -lt $deadline ]; do
    status=$(rg_status_of "$id")
    [ "$status" = "$want" ] && return 0
    case "$status" in SUCCEEDED | FAILED | STOPPED)
      rg status "$id" >&2 || true
      rg logs "$id" >&2 || true
      rg_fail "job $id ended $status, expected $want" ;;
    esac
    sleep 1
  done
  rg status "$id" >&2 || true
  rg_fail "job $id still $status after ${limit}s, expected $want"
}

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
