# shellcheck shell=bash
# Shared by the daemon scripts: sourced after ../lib.sh and rg_e2e_init, never run.
# Starts `ray-gitops run` on a free loopback port, signs GitHub webhooks, reads /metrics.

# A bare remote $DMN_REMOTE with main holding a cluster file for the head, and a clone
# $DMN_WORK that pushes to it.
dmn_init_repo() {
  DMN_REMOTE=$RG_TMP/remote.git
  DMN_WORK=$RG_TMP/work
  rg_git_remote "$DMN_REMOTE" "$DMN_WORK" "$RG_ADDRESS"
  mkdir -p "$DMN_WORK/jobs"
  touch "$DMN_WORK/jobs/.keep"
  dmn_push "cluster file"
}

dmn_push() { rg_git_push "$DMN_WORK" "$1"; }

# dmn_spec NAME ENTRYPOINT: a custom JobSpec jobs/NAME.yaml, unique to this run.
dmn_spec() {
  printf 'workload: custom\nentrypoint: %s\nentrypoint_num_cpus: 0\n' "$2" >"$DMN_WORK/jobs/$1.yaml"
  rg_tag_spec "$DMN_WORK/jobs/$1.yaml"
}

# dmn_start LOG [run flags...]: starts the daemon in the background on 127.0.0.1:<free port>
# and waits for its "started" line. Sets DMN_PID and DMN_URL. Artifacts go to
# $DMN_ARTIFACTS_ROOT when it is set, else nowhere.
dmn_start() {
  local log=$1
  shift
  local token_args=() artifact_args=(--no-artifacts)
  [ -n "$RG_TOKEN" ] && token_args=(--ray-token-file "$RG_TOKEN_FILE")
  [ -n "${DMN_ARTIFACTS_ROOT:-}" ] && artifact_args=(--artifacts-root "$DMN_ARTIFACTS_ROOT")
  "$RG_BIN" --ray-address "$RG_ADDRESS" "${token_args[@]}" run --repo "$DMN_REMOTE" \
    --branch main --cache-dir "$RG_TMP/cache" --instance "$DMN_INSTANCE" "${artifact_args[@]}" \
    --listen 127.0.0.1:0 "$@" 2>"$log" &
  DMN_PID=$!
  DMN_LOG=$log
  local deadline=$((SECONDS + 30)) port=""
  while [ $SECONDS -lt $deadline ]; do
    port=$(sed -n "s/.*started .*port=\([0-9]*\).*/\1/p" "$log" 2>/dev/null | head -n1 || true)
    [ -n "$port" ] && break
    kill -0 "$DMN_PID" 2>/dev/null || { cat "$log" >&2; rg_fail "the daemon exited at start"; }
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$log" >&2; rg_fail "the daemon logged no port within 30 s"; }
  DMN_URL=http://127.0.0.1:$port
}

# dmn_stop [LIMIT]: SIGTERM, then waits up to LIMIT seconds (default 20) and sets DMN_STATUS
# to the exit status; fails if the daemon is still running after LIMIT. Not in a subshell:
# only this shell can wait for the daemon.
dmn_stop() {
  local limit=${1:-20} deadline
  kill -TERM "$DMN_PID" 2>/dev/null || true
  deadline=$((SECONDS + limit))
  while kill -0 "$DMN_PID" 2>/dev/null; do
    if [ $SECONDS -ge "$deadline" ]; then
      kill -9 "$DMN_PID" 2>/dev/null || true
      cat "$DMN_LOG" >&2
      rg_fail "the daemon did not exit within ${limit}s of SIGTERM"
    fi
    sleep 0.05
  done
  DMN_STATUS=0
  wait "$DMN_PID" || DMN_STATUS=$?
  DMN_PID=""
}

# Kills a daemon still running (for traps).
dmn_kill() {
  if [ -n "${DMN_PID:-}" ]; then
    kill -9 "$DMN_PID" 2>/dev/null || true
    wait "$DMN_PID" 2>/dev/null || true
    DMN_PID=""
  fi
}

dmn_http_code() {  # dmn_http_code PATH: the status code of GET PATH
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$DMN_URL$1"
}

# dmn_webhook SECRET [BODY]: POSTs a GitHub push webhook signed with SECRET; prints the code.
dmn_webhook() {
  local secret=$1 body=${2:-'{"ref":"refs/heads/main"}'} sig
  sig="sha256=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$secret" -r | cut -d' ' -f1)"
  curl -s -o "$RG_TMP/webhook.out" -w '%{http_code}' --max-time 10 -X POST "$DMN_URL/webhook" \
    -H 'Content-Type: application/json' -H 'X-GitHub-Event: push' \
    -H "X-Hub-Signature-256: $sig" --data-binary "$body"
}

# dmn_metric NAME [LABEL=VALUE...]: the sum of the samples of NAME whose labels include the
# given ones, read from /metrics with prometheus_client's parser (0 when none).
dmn_metric() {
  curl -s --max-time 10 "$DMN_URL/metrics" | "$RG_PY" -c '
import sys
from prometheus_client.parser import text_string_to_metric_families
name, want = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
total = 0.0
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in want.items()):
            total += s.value
print(int(total) if total == int(total) else total)' "$@"
}

# dmn_metric_ge MIN NAME [LABEL=VALUE...]: succeeds when the metric is at least MIN.
dmn_metric_ge() {
  local min=$1
  shift
  [ "$(dmn_metric "$@")" -ge "$min" ]
}

# dmn_in_ray ID: succeeds when Ray knows the submission id (GET /api/jobs/ID answers 200).
dmn_in_ray() {
  local auth=()
  [ -n "$RG_TOKEN" ] && auth=(-H "Authorization: Bearer $RG_TOKEN")
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "${auth[@]}" \
    "$RG_ADDRESS/api/jobs/$1")" = 200 ]
}

# Our jobs in Ray, one line each: "<submission_id> <STATUS>", sorted.
dmn_list_ours() { rg_list_ours "$DMN_INSTANCE"; }

# The status branch the daemon writes: ray-gitops/status for the default instance, else
# ray-gitops/status-<instance> (docs/status-branch.md).
dmn_ledger() {
  if [ "$DMN_INSTANCE" = ray-gitops ]; then echo ray-gitops/status; else echo "ray-gitops/status-$DMN_INSTANCE"; fi
}
dmn_status_file() { git -C "$DMN_REMOTE" show "$(dmn_ledger):status/$1.yaml" 2>/dev/null; }
dmn_field() { rg_yaml_field "$1"; }

dmn_now_ms() {
  local t=$EPOCHREALTIME
  echo $((${t/./} / 1000))
}

# dmn_has_phase NAME PHASE: succeeds when the status branch records job NAME in PHASE.
dmn_has_phase() { dmn_status_file "$1" | grep -q "^phase: $2\$"; }

# dmn_wait_passes N: waits (up to 60 s) until the daemon has made N more passes.
dmn_wait_passes() {
  local want=$(($(dmn_metric rg_passes_total) + $1))
  dmn_wait 60 "$1 more passes" dmn_metric_ge "$want" rg_passes_total >/dev/null
}

# dmn_wait LIMIT_SECONDS WHAT COMMAND...: polls COMMAND every 50 ms until it succeeds.
# Prints the milliseconds it took; fails with WHAT after LIMIT.
dmn_wait() {
  local limit_ms=$(($1 * 1000)) what=$2 start
  shift 2
  start=$(dmn_now_ms)
  until "$@" >/dev/null 2>&1; do
    if [ $(($(dmn_now_ms) - start)) -gt $limit_ms ]; then
      cat "$DMN_LOG" >&2
      rg_fail "$what: not within $((limit_ms / 1000))s"
    fi
    sleep 0.05
  done
  echo $(($(dmn_now_ms) - start))
}

# dmn_fake_head FAKE_RAY_SERVER_BINARY [LATENCY_MS]: a fake head behind ray_proxy.py, so that
# the head can go away and come back on the same address. Call before rg_e2e_init: it points
# RG_E2E_RAY_STATE_DIR at the proxy, and rg_e2e_init's trap ends both. Sets DMN_FAKE_URL (the
# fake itself, for checks that must not go through the proxy), DMN_PROXY_PORT and
# DMN_PROXY_PID.
dmn_fake_head() {
  rg_e2e_fake_head "$1"
  DMN_FAKE_STATE=$RG_FAKE_STATE
  DMN_FAKE_URL=$RG_FAKE_URL
  DMN_PROXY_LATENCY_MS=${2:-0}
  DMN_PROXY_PORT=0
  dmn_proxy_up
  echo "http://127.0.0.1:$DMN_PROXY_PORT" >"$DMN_FAKE_STATE/address"
}

# (Re)starts the proxy on DMN_PROXY_PORT (0 the first time) in front of the fake.
dmn_proxy_up() {
  local out=$DMN_FAKE_STATE/proxy.out deadline=$((SECONDS + 15))
  : >"$out"
  python3 "$(dirname "${BASH_SOURCE[0]}")/ray_proxy.py" "$DMN_PROXY_PORT" \
    "${DMN_FAKE_URL##*:}" --latency-ms "$DMN_PROXY_LATENCY_MS" >"$out" &
  DMN_PROXY_PID=$!
  until [ -s "$out" ]; do
    [ $SECONDS -lt $deadline ] || rg_fail "the Ray proxy did not start"
    kill -0 "$DMN_PROXY_PID" 2>/dev/null || rg_fail "the Ray proxy exited at start"
    sleep 0.05
  done
  DMN_PROXY_PORT=$(head -n1 "$out")
}

# Makes the head unreachable: connections to its address are refused.
dmn_proxy_down() {
  kill "$DMN_PROXY_PID" 2>/dev/null || true
  wait "$DMN_PROXY_PID" 2>/dev/null || true
  DMN_PROXY_PID=""
}


# The fake's jobs, asked directly (not through the proxy): "<submission_id> <STATUS>" lines.
dmn_fake_jobs() {
  curl -s --max-time 10 "$DMN_FAKE_URL/api/jobs/" | python3 -c '
import json, sys
for j in sorted(json.load(sys.stdin), key=lambda j: j["submission_id"] or ""):
    print(j["submission_id"], j["status"])'
}
