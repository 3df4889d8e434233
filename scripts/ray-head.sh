#!/usr/bin/env bash
# One real Ray head on loopback for the end-to-end tests (see docs/testing.md).
#
#   scripts/ray-head.sh start  STATE_DIR   start a head, wait until it runs jobs, write
#                                          STATE_DIR/{address,token,auth_mode,ray_version,
#                                          temp_dir,pid,ray-start.log}
#   scripts/ray-head.sh stop   STATE_DIR   stop that head (safe to call twice)
#   scripts/ray-head.sh status STATE_DIR   exit 0 when that head answers
#
#   RG_VENV                 venv holding ray[default] (default ~/.cache/ray-gitops/venv)
#   RG_RAY_AUTH_MODE        token (default) or disabled
#   RG_RAY_START_TIMEOUT    seconds to wait for readiness (default 300)
#   RG_RAY_START_ATTEMPTS   how often to run `ray start` when its dashboard does not come up
#                           in time (default 3); any other early exit fails at once
#
# Ready means: GET /api/gcs_healthz says success, GET /api/version answers, the head's
# authentication mode is the one asked for (GET /api/authentication_mode; a Ray without token
# auth is recorded as `disabled`, loudly), the cluster status lists the head's resources (CPU
# and worker_node), and a job `true` runs to SUCCEEDED. If `ray start` exits meanwhile, start
# fails at once with the tail of its output.
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
START_ATTEMPTS=${RG_RAY_START_ATTEMPTS:-3}

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
  echo "---- ray start output (tail of $state_dir/ray-start.log) ----" >&2
  tail -n 40 "$state_dir/ray-start.log" >&2 2>/dev/null || true
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
  rm -f "$state_dir/pid" "$state_dir/temp_dir" "$state_dir/address" "$state_dir/token" \
    "$state_dir/auth_mode" "$state_dir/ray_version"
  echo "ray-head: stopped"
}

# probe TIMEOUT [ready]: checks the head of $state_dir. Without "ready": health and version,
# prints the Ray version. With "ready" (during start): also the authentication mode, the
# cluster's resources and a job run to SUCCEEDED; writes STATE_DIR/{ray_version,auth_mode}
# and prints the Ray version. Exits 3 as soon as `ray start` (STATE_DIR/pid) has exited.
probe() {
  RG_PROBE_STATE_DIR=$state_dir RG_PROBE_AUTH_MODE=$AUTH_MODE "$PY" - "$@" <<'PYEOF'
import json, os, sys, time, urllib.error, urllib.request, uuid

state_dir = os.environ["RG_PROBE_STATE_DIR"]
asked_mode = os.environ["RG_PROBE_AUTH_MODE"]
def read(name):
    try:
        with open(os.path.join(state_dir, name)) as f:
            return f.read().strip()
    except OSError:
        return ""
def write(name, text):
    with open(os.path.join(state_dir, name), "w") as f:
        f.write(text + "\n" if text else "")  # an empty token file is empty, as `[ -s ]` expects

address = read("address")
token = read("token")
ray_pid = int(read("pid") or 0)
deadline = time.monotonic() + float(sys.argv[1])
starting = len(sys.argv) > 2 and sys.argv[2] == "ready"
started = time.monotonic()

def call(method, path, body=None, auth=True):
    headers = {"User-Agent": "ray-gitops-head-probe"}
    if token and auth:
        headers["Authorization"] = "Bearer " + token
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(address + path, data=data, headers=headers, method=method)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.read().decode()

def ray_start_alive():
    # A child that exited stays a zombie until its parent reaps it: that counts as exited.
    try:
        with open(f"/proc/{ray_pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

def wait_for(what, check):
    last = None
    while time.monotonic() < deadline:
        if starting and ray_pid and not ray_start_alive():
            print(f"ray-head: `ray start` exited while waiting for {what}"
                  f" ({time.monotonic() - started:.0f}s after start)", file=sys.stderr)
            sys.exit(3)
        try:
            result = check()
            if result:
                return result
        except (urllib.error.URLError, OSError, ValueError) as e:
            last = e
        time.sleep(0.5)
    sys.exit(f"ray-head: timed out waiting for {what} (last error: {last})")

wait_for("GET /api/gcs_healthz", lambda: call("GET", "/api/gcs_healthz").strip() == "success")
version = wait_for("GET /api/version", lambda: json.loads(call("GET", "/api/version")))
ray_version = version.get("ray_version", "?")
if not starting:
    print(ray_version)
    sys.exit(0)
write("ray_version", ray_version)

# The authentication mode the head really runs with. Rays before token authentication have
# no such route (404) and ignore RAY_AUTH_MODE: they run without auth whatever was asked.
def auth_mode():
    try:
        answer = json.loads(call("GET", "/api/authentication_mode", auth=False))
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return "disabled", f"Ray {ray_version} has no token authentication" \
                " (GET /api/authentication_mode: 404)"
        raise
    mode = answer.get("authentication_mode") if isinstance(answer, dict) else None
    if not isinstance(mode, str) or not mode:
        raise ValueError(f"GET /api/authentication_mode answered {answer!r}")
    return mode, f"GET /api/authentication_mode says {mode!r}"
mode, why = wait_for("GET /api/authentication_mode", auth_mode)
if mode == "token":
    # Token mode must show: an anonymous request is refused.
    try:
        call("GET", "/api/jobs/", auth=False)
        sys.exit(f"ray-head: Ray {ray_version} says token mode but answers an anonymous "
                 "GET /api/jobs/")
    except urllib.error.HTTPError as e:
        if e.code != 401:
            sys.exit(f"ray-head: an anonymous GET /api/jobs/ got HTTP {e.code}, expected 401")
if asked_mode != mode:
    bar = "!" * 78
    print(f"{bar}\nray-head: WARNING: RG_RAY_AUTH_MODE={asked_mode} was asked for, but the head"
          f" runs with authentication {mode!r}:\nray-head: {why}.\nray-head: Recorded as"
          f" {os.path.join(state_dir, 'auth_mode')} = {mode}; the tests run without a token"
          f" and the\nray-head: contract suite's auth case is skipped.\n{bar}", file=sys.stderr)
    if mode != "token":
        token = ""
        write("token", "")
write("auth_mode", mode)

# The head's resources reach the cluster status a moment after the head answers; a submit
# before that records an empty `ray status`.
def resources():
    answer = json.loads(call("GET", "/api/cluster_status?format=1"))
    text = ((answer.get("data") or {}).get("clusterStatus") or "") if isinstance(answer, dict) else ""
    return isinstance(text, str) and "CPU" in text and "worker_node" in text
wait_for("the cluster status to list CPU and worker_node", resources)

sid = "rg-head-ready-" + uuid.uuid4().hex[:12]
wait_for("POST /api/jobs/", lambda: call("POST", "/api/jobs/",
                                         {"entrypoint": "true", "submission_id": sid}))
def succeeded():
    status = json.loads(call("GET", "/api/jobs/" + sid))["status"]
    if status in ("FAILED", "STOPPED"):
        sys.exit(f"ray-head: readiness job {sid} ended {status}")
    return status == "SUCCEEDED"
wait_for(f"readiness job {sid} to succeed", succeeded)
# The job is left in place: a DELETE right after SUCCEEDED races the exiting supervisor
# actor, and Ray 2.60 then lists the job again as FAILED ("Entrypoint not found.").
print(f"{ray_version} {mode} {time.monotonic() - started:.0f}")
PYEOF
}

# Starts `ray start --block` in its own session on fresh free ports; writes
# STATE_DIR/{temp_dir,token,address,pid}.
launch_head() {
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
  # that `python3` in an entrypoint is the venv's python, which has ray. A subshell, so that
  # a second attempt starts from the same environment.
  (
    export PATH="$VENV/bin:$PATH" RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE="$AUTH_MODE"
    # Loopback as the node IP: Ray otherwise replaces 127.0.0.1 by the first routable address.
    export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
    # Metrics ports that `ray start` has no flag for (defaults 44217 and 44227).
    export AUTOSCALER_METRIC_PORT="$autoscaler_metrics" DASHBOARD_METRIC_PORT="$dashboard_metrics"
    # How long `ray start` waits for its dashboard (default 60 s), for the Rays that read it;
    # a loaded 2-core machine can take longer. Older Rays wait a fixed ~20 s (see attempts).
    export RAY_DASHBOARD_STARTUP_TIMEOUT_S="${RAY_DASHBOARD_STARTUP_TIMEOUT_S:-240}"
    if [ -n "$token" ]; then export RAY_AUTH_TOKEN="$token"; else unset RAY_AUTH_TOKEN; fi
    unset RAY_ADDRESS RAY_API_SERVER_ADDRESS
    exec setsid "$RAY" start --head --block --node-ip-address=127.0.0.1 --port="$gcs_port" \
      --include-dashboard=true --dashboard-host=127.0.0.1 --dashboard-port="$dash_port" \
      --dashboard-agent-listen-port="$agent_http" --dashboard-agent-grpc-port="$agent_grpc" \
      --metrics-export-port="$metrics" --ray-client-server-port="$client_port" \
      --node-manager-port="$node_mgr" --object-manager-port="$obj_mgr" \
      --runtime-env-agent-port="$env_agent" --min-worker-port="$min_worker" \
      --max-worker-port="$max_worker" --num-cpus=4 --num-gpus=0 \
      --resources='{"worker_node": 2}' --object-store-memory=268435456 \
      --temp-dir="$temp_dir" --disable-usage-stats
  ) </dev/null >"$state_dir/ray-start.log" 2>&1 &
  echo $! >"$state_dir/pid"
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

  local attempt=1 pid temp_dir result rc code
  while :; do
    launch_head
    pid=$(cat "$state_dir/pid")
    temp_dir=$(cat "$state_dir/temp_dir")
    rc=0
    result=$(probe "$START_TIMEOUT" ready) || rc=$?
    [ "$rc" = 0 ] && break
    if [ "$rc" = 3 ]; then
      code=0
      wait "$pid" || code=$?
      echo "ray-head: error: \`ray start\` exited with status $code before the head was ready" \
        "(attempt $attempt of $START_ATTEMPTS)" >&2
      print_log_tail "$temp_dir"
      stop_head >&2 || true
      # Rays before the dashboard startup timeout became configurable give the dashboard a
      # fixed ~20 s, which a loaded machine can miss; nothing else is worth a second try.
      if grep -q "Failed to start the dashboard" "$state_dir/ray-start.log" &&
        [ "$attempt" -lt "$START_ATTEMPTS" ]; then
        attempt=$((attempt + 1))
        echo "ray-head: the dashboard did not come up in time; starting again" \
          "(attempt $attempt of $START_ATTEMPTS)" >&2
        continue
      fi
      exit 1
    fi
    echo "ray-head: error: the head at $(cat "$state_dir/address") did not become ready" \
      "within ${START_TIMEOUT}s" >&2
    print_log_tail "$temp_dir"
    stop_head >&2 || true
    exit 1
  done
  local version mode took
  read -r version mode took <<<"$result"
  echo "ray-head: Ray $version at $(cat "$state_dir/address") (auth $mode), ready after" \
    "${took}s, temp dir $temp_dir, state in $state_dir"
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
