#!/usr/bin/env bash
# One real Ray head on loopback for the end-to-end tests (see docs/testing.md).
#
#   scripts/ray-head.sh start  STATE_DIR   start a head, wait until it runs jobs, write
#                                          STATE_DIR/{address,token,temp_dir,pid}
#   scripts/ray-head.sh stop   STATE_DIR   stop that head (safe to call twice)
#   scripts/ray-head.sh status STATE_DIR   exit 0 when that head answers
#
#   RG_VENV                 venv holding ray[default] (default ~/.cache/ray-gitops/venv)
#   RG_RAY_AUTH_MODE        token (default) or disabled
#   RG_RAY_START_TIMEOUT    seconds to wait for readiness (default 300)
#
# Every port is chosen free at start, so nothing collides with Ray's defaults (6379, 8265,
# 10001, ...) or with another head on the machine. The head runs in its own session (setsid);
# stop ends exactly the processes of that session, never other Ray processes on the machine
# (which `ray stop` would do).
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|status STATE_DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
action=$1
state_dir=$2

VENV=${RG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv}
PY="$VENV/bin/python"
RAY="$VENV/bin/ray"
AUTH_MODE=${RG_RAY_AUTH_MODE:-token}
START_TIMEOUT=${RG_RAY_START_TIMEOUT:-300}

die() {
  echo "ray-head: error: $*" >&2
  exit 1
}

# PIDs of every process in the session led by $1.
session_pids() {
  ps -eo pid=,sid= | awk -v sid="$1" '$2 == sid { print $1 }'
}

# PIDs of processes whose command line names the head's temp dir (a Ray process that left
# the session still names its session directory).
temp_dir_pids() {
  local dir=$1 pid
  [ -n "$dir" ] || return 0
  for pid in $(ps -eo pid=); do
    if { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$dir"; then
      echo "$pid"
    fi
  done
}

print_log_tail() {
  local temp_dir=$1
  echo "---- ray start output (tail) ----" >&2
  tail -n 40 "$state_dir/ray-start.log" 2>/dev/null >&2 || true
  local logs="$temp_dir/session_latest/logs"
  for f in gcs_server.err raylet.err dashboard.err dashboard.log dashboard_agent.log \
    runtime_env_agent.log; do
    if [ -s "$logs/$f" ]; then
      echo "---- $logs/$f (tail) ----" >&2
      tail -n 20 "$logs/$f" >&2 || true
    fi
  done
}

stop_head() {
  local pid="" temp_dir="" pids
  [ -f "$state_dir/pid" ] && pid=$(cat "$state_dir/pid")
  [ -f "$state_dir/temp_dir" ] && temp_dir=$(cat "$state_dir/temp_dir")
  if [ -z "$pid" ] && [ -z "$temp_dir" ]; then
    echo "ray-head: nothing to stop in $state_dir"
    return 0
  fi
  # `ray start --block` tears its children down on SIGTERM; then anything left is killed.
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
  fi
  for sig in TERM KILL; do
    pids=$( (if [ -n "$pid" ]; then session_pids "$pid"; fi; temp_dir_pids "$temp_dir") | sort -u)
    [ -n "$pids" ] || break
    # shellcheck disable=SC2086
    kill -"$sig" $pids 2>/dev/null || true
    sleep 1
  done
  if [ -n "$temp_dir" ] && [ -d "$temp_dir" ]; then
    case "$temp_dir" in
      /tmp/rgray.*) rm -rf "$temp_dir" ;;
      *) echo "ray-head: not removing unexpected temp dir $temp_dir" >&2 ;;
    esac
  fi
  rm -f "$state_dir/pid" "$state_dir/temp_dir" "$state_dir/address" "$state_dir/token"
  echo "ray-head: stopped"
}

# Checks the head: health, version, and (with "job") a trivial job run to SUCCEEDED.
probe() {
  RG_PROBE_ADDRESS=$(cat "$state_dir/address") RG_PROBE_TOKEN_FILE="$state_dir/token" \
    "$PY" - "$@" <<'PYEOF'
import json, os, sys, time, urllib.error, urllib.request, uuid

address = os.environ["RG_PROBE_ADDRESS"]
with open(os.environ["RG_PROBE_TOKEN_FILE"]) as f:
    token = f.read().strip()
deadline = time.monotonic() + float(sys.argv[1])
want_job = len(sys.argv) > 2 and sys.argv[2] == "job"

def call(method, path, body=None):
    headers = {"User-Agent": "ray-gitops-head-probe"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(address + path, data=data, headers=headers, method=method)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.read().decode()

def wait_for(what, check):
    last = None
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except (urllib.error.URLError, OSError, ValueError) as e:
            last = e
        time.sleep(0.5)
    sys.exit(f"timed out waiting for {what} (last error: {last})")

wait_for("GET /api/gcs_healthz", lambda: call("GET", "/api/gcs_healthz").strip() == "success")
version = wait_for("GET /api/version", lambda: json.loads(call("GET", "/api/version")))
if not want_job:
    print(version.get("ray_version", "?"))
    sys.exit(0)
sid = "rg-head-ready-" + uuid.uuid4().hex[:12]
wait_for("POST /api/jobs/", lambda: call("POST", "/api/jobs/",
                                         {"entrypoint": "true", "submission_id": sid}))
def succeeded():
    status = json.loads(call("GET", "/api/jobs/" + sid))["status"]
    if status in ("FAILED", "STOPPED"):
        sys.exit(f"readiness job {sid} ended {status}")
    return status == "SUCCEEDED"
wait_for(f"readiness job {sid} to succeed", succeeded)
# The job is left in place: a DELETE right after SUCCEEDED races the exiting supervisor
# actor, and Ray 2.60 then lists the job again as FAILED ("Entrypoint not found.").
print(version.get("ray_version", "?"))
PYEOF
}

start_head() {
  [ -x "$RAY" ] || die "no ray in $VENV (run scripts/install-deps.sh, or set RG_VENV)"
  case "$AUTH_MODE" in token | disabled) ;; *) die "RG_RAY_AUTH_MODE must be token or disabled" ;; esac
  mkdir -p "$state_dir"
  state_dir=$(cd "$state_dir" && pwd)
  # A head left behind by an interrupted run of this state dir is ours: replace it.
  if [ -f "$state_dir/pid" ] && kill -0 "$(cat "$state_dir/pid")" 2>/dev/null; then
    echo "ray-head: stopping the head still running from $state_dir (pid $(cat "$state_dir/pid"))"
  fi
  stop_head >/dev/null

  # Twelve distinct free ports, plus a free range of 200 for workers.
  local ports
  ports=$("$PY" - <<'PYEOF'
import random, socket
held, ports = [], []
while len(ports) < 12:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); held.append(s); ports.append(s.getsockname()[1])
def free(p):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p)); return True
        except OSError:
            return False
for _ in range(200):
    base = random.randrange(20000, 29000)
    if all(free(p) and p not in ports for p in range(base, base + 200)):
        break
else:
    raise SystemExit("no free worker port range")
print(*ports, base, base + 199)
PYEOF
  ) || die "could not choose free ports"
  read -r gcs_port dash_port agent_http agent_grpc metrics client_port node_mgr obj_mgr \
    env_agent autoscaler_metrics dashboard_metrics _spare min_worker max_worker <<<"$ports"

  local temp_dir token
  temp_dir=$(mktemp -d /tmp/rgray.XXXXXX)
  echo "$temp_dir" >"$state_dir/temp_dir"
  (umask 077 && "$PY" -c 'import secrets; print(secrets.token_hex(24))' >"$state_dir/token")
  token=$(cat "$state_dir/token")
  if [ "$AUTH_MODE" = disabled ]; then : >"$state_dir/token"; token=""; fi
  echo "http://127.0.0.1:$dash_port" >"$state_dir/address"

  # The head's environment is what every job's entrypoint inherits: the venv's bin first, so
  # that `python3` in an entrypoint is the venv's python, which has ray.
  export PATH="$VENV/bin:$PATH" RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE="$AUTH_MODE"
  # Loopback as the node IP: Ray otherwise replaces 127.0.0.1 by the first routable address.
  export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
  # Metrics ports that `ray start` has no flag for (defaults 44217 and 44227).
  export AUTOSCALER_METRIC_PORT="$autoscaler_metrics" DASHBOARD_METRIC_PORT="$dashboard_metrics"
  if [ -n "$token" ]; then export RAY_AUTH_TOKEN="$token"; else unset RAY_AUTH_TOKEN; fi
  unset RAY_ADDRESS RAY_API_SERVER_ADDRESS
  setsid "$RAY" start --head --block --node-ip-address=127.0.0.1 --port="$gcs_port" \
    --include-dashboard=true --dashboard-host=127.0.0.1 --dashboard-port="$dash_port" \
    --dashboard-agent-listen-port="$agent_http" --dashboard-agent-grpc-port="$agent_grpc" \
    --metrics-export-port="$metrics" --ray-client-server-port="$client_port" \
    --node-manager-port="$node_mgr" --object-manager-port="$obj_mgr" \
    --runtime-env-agent-port="$env_agent" --min-worker-port="$min_worker" \
    --max-worker-port="$max_worker" --num-cpus=4 --num-gpus=0 \
    --resources='{"worker_node": 2}' --object-store-memory=268435456 \
    --temp-dir="$temp_dir" --disable-usage-stats </dev/null >"$state_dir/ray-start.log" 2>&1 &
  echo $! >"$state_dir/pid"

  local version
  if ! version=$(probe "$START_TIMEOUT" job); then
    echo "ray-head: error: the head at $(cat "$state_dir/address") did not become ready" \
      "within ${START_TIMEOUT}s" >&2
    print_log_tail "$temp_dir"
    stop_head >&2 || true
    exit 1
  fi
  echo "ray-head: Ray $version at $(cat "$state_dir/address") (auth $AUTH_MODE)," \
    "temp dir $temp_dir, state in $state_dir"
}

case "$action" in
  start) start_head ;;
  stop) stop_head ;;
  status)
    [ -f "$state_dir/address" ] || die "no head recorded in $state_dir"
    probe 5 >/dev/null || die "the head at $(cat "$state_dir/address") does not answer"
    echo "ray-head: up at $(cat "$state_dir/address")"
    ;;
  *) usage ;;
esac
