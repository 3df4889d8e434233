#!/usr/bin/env bash
# The whole GitOps loop on one machine, in a few minutes on 2 cores:
#   install the dependencies, build, start a local Ray head, push the example repository to a
#   local bare Git remote (jobs pointed at a CPU-only stand-in of verl, plus the smoke job),
#   `ray-gitops plan` and `render`, then the daemon (`ray-gitops run`): its first pass submits
#   the jobs; /readyz, /metrics and /api/v1/status; a spec change, reviewed with
#   `ray-gitops diff`, is pushed and reaches Ray through a
#   signed GitHub push webhook (the interval is 10 minutes, so the webhook is what runs the
#   pass); once the runs ended, POST /api/v1/sync records how; then the status branch,
#   STATUS.md and `ray-gitops history`, and SIGTERM stops the daemon (exit 0). The daemon and
#   the head are stopped and the temp dir removed on exit, whatever happens (also on Ctrl-C).
#
#   bash scripts/demo.sh
#     RG_DEMO_SKIP_INSTALL=1        skip scripts/install-deps.sh
#     RG_DEMO_PRESET=release|debug  which CMake preset builds ray-gitops (default release, in
#                                   build/release; the test suite's build/debug is left alone)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${RG_DEMO_PRESET:-release}
venv=${RG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv}
py=$venv/bin/python
demo=$(mktemp -d /tmp/ray-gitops-demo.XXXXXX)
state=$demo/ray-head
head_started=0
daemon_pid=""

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    say "stopping the daemon (pid $daemon_pid)"
    kill -TERM "$daemon_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$daemon_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  if [ "$head_started" = 1 ]; then
    say "stopping the Ray head"
    bash "$src/scripts/ray-head.sh" stop "$state" || true
  fi
  rm -rf "$demo"
  if [ "$status" = 0 ]; then say "demo finished"; else say "demo FAILED (exit $status)"; fi
  exit "$status"
}
trap cleanup EXIT
# An interrupted demo still runs cleanup (bash runs the EXIT trap on `exit`, not on a signal).
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "${RG_DEMO_SKIP_INSTALL:-0}" != 1 ]; then
  say "installing dependencies (scripts/install-deps.sh)"
  bash "$src/scripts/install-deps.sh"
fi

say "building ray-gitops (preset $preset, build/$preset; the first build takes several minutes)"
build_log=$demo/build.log
if ! (cd "$src" && cmake --preset "$preset" && cmake --build "build/$preset" --target ray-gitops -j2) \
  >"$build_log" 2>&1; then
  tail -n 40 "$build_log"
  echo "build failed" >&2
  exit 1
fi
bin=$src/build/$preset/reconciler/cli/ray-gitops
"$bin" version

say "starting a local Ray head (scripts/ray-head.sh; loopback only, token auth)"
head_started=1
bash "$src/scripts/ray-head.sh" start "$state"
address=$(cat "$state/address")
ray_flags=(--ray-address "$address")
[ -s "$state/token" ] && ray_flags+=(--ray-token-file "$state/token")
unset RAY_ADDRESS RAY_API_SERVER_ADDRESS RAY_AUTH_TOKEN RAY_JOB_HEADERS
rg() { "$bin" "${ray_flags[@]}" "$@"; }
echo "head at $address"

say "the desired state: examples/repo, pushed to a bare Git remote"
shared=$demo/shared
mkdir -p "$shared/common/code/verl"
cp -r "$src/tests/e2e/data/verl" "$shared/common/code/verl/standin"
git init -q --bare -b main "$demo/remote.git"
git clone -q "$demo/remote.git" "$demo/work" 2>/dev/null
cd "$demo/work"
git checkout -q -b main
git config user.email demo@localhost
git config user.name demo
cp -r "$src/examples/repo/." .
"$py" - "$address" "$shared" <<'PYEOF'
import glob, sys, yaml
address, shared = sys.argv[1], sys.argv[2]
cluster = yaml.safe_load(open("cluster.yaml"))
cluster["address"] = address
cluster["shared_root"] = shared
cluster.pop("user_code_path", None)
yaml.safe_dump(cluster, open("cluster.yaml", "w"), sort_keys=False)
# The trainers become the CPU-only stand-in: same entrypoints, a few seconds each.
for path in glob.glob("jobs/**/*.yaml", recursive=True):
    spec = yaml.safe_load(open(path))
    if spec["workload"] != "custom":
        spec["code_path"] = "${shared_root}/common/code/verl/standin"
        yaml.safe_dump(spec, open(path, "w"), sort_keys=False)
PYEOF
git add -A
git commit -qm "desired state: the example jobs on the local head"
git push -q origin main
git log --stat --format='commit %h  %s' main
echo "--- cluster.yaml"
cat cluster.yaml
echo "--- jobs/smoke/hello.yaml"
cat jobs/smoke/hello.yaml
repo_flags=(--repo "$demo/remote.git" --cache-dir "$demo/cache")

say "ray-gitops plan   (what a merge would do; exit 2 = changes pending)"
set +e
rg plan "${repo_flags[@]}"
echo "(exit $?)"
set -e

say "ray-gitops render jobs/ppo/qwen2.5-0.5b-gsm8k.yaml   (the body POSTed to Ray)"
rg render --repo "$demo/work" jobs/ppo/qwen2.5-0.5b-gsm8k.yaml --format json

secret_file=$demo/webhook-secret
secret=$("$py" -c 'import secrets; print(secrets.token_hex(16))')
(umask 077 && printf '%s\n' "$secret" >"$secret_file")
daemon_log=$demo/daemon.log
say "ray-gitops run   (the daemon: --interval 10m, so after its first pass only a trigger runs one)"
# The binary itself, not the rg function: $! must be the daemon, not a subshell around it.
"$bin" "${ray_flags[@]}" run --repo "$demo/remote.git" --cache-dir "$demo/daemon-cache" \
  --branch main --interval 10m --listen 127.0.0.1:0 --webhook-secret-file "$secret_file" --webhook-kind github 2>"$daemon_log" &
daemon_pid=$!
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*started .*port=\([0-9]*\).*/\1/p' "$daemon_log" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$daemon_log"; echo "the daemon exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$daemon_log"; echo "the daemon logged no port" >&2; exit 1; }
url=http://127.0.0.1:$port
echo "daemon pid $daemon_pid, serving $url"
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }
until [ "$(code "$url/readyz")" = 200 ]; do
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$daemon_log"; echo "the daemon exited" >&2; exit 1; }
  sleep 0.2
done
passes() {
  curl -s --max-time 10 "$url/metrics" | awk '$1 ~ /^rg_passes_total/ { n += $2 } END { print n + 0 }'
}
# The daemon's log from line $1 on, with the time of day only.
show_log() { tail -n +"$1" "$daemon_log" | sed -E 's/^[0-9-]+T([0-9:.]+)Z /\1 /'; }
show_log 1
log_seen=$(($(wc -l <"$daemon_log") + 1))

say "GET /readyz, /metrics (a few lines), /api/v1/status (summarised)"
echo "/readyz: $(code "$url/readyz") $(curl -s --max-time 10 "$url/readyz")"
curl -s --max-time 10 "$url/metrics" |
  grep -E '^rg_(passes_total|submits_total|triggers_total|consecutive_failures|jobs\{phase="(Pending|Running|Succeeded)"\})'
status_summary() {
  curl -s --max-time 10 "$url/api/v1/status" | "$py" -c '
import json, sys
s = json.load(sys.stdin)
print("state=%s spec_commit=%s status_commit=%s counts=%s" % (
    s["state"], (s["spec_commit"] or "")[:10], (s["status_commit"] or "")[:10],
    json.dumps(s["counts"], sort_keys=True)))
for j in s["jobs"]:
    print("  %-24s %-10s %-35s %s" % (j["name"], j["phase"], j["submission_id"], j["status"]))'
}
status_summary

say "a spec change: push jobs/smoke/goodbye.yaml, then the GitHub push webhook"
cat >jobs/smoke/goodbye.yaml <<'YAMLEOF'
# Added while the daemon runs: the webhook below is what gets it into Ray.
workload: custom
entrypoint: python3 -c "print('goodbye from the daemon demo')"
on_remove: keep
YAMLEOF
git add jobs/smoke/goodbye.yaml
git commit -qm "smoke: a second smoke job"
git push -q origin main
git log --oneline -1
say "ray-gitops diff HEAD~1 HEAD   (the change as a reviewer sees it: offline, no Ray needed)"
set +e
rg diff --repo "$demo/work" HEAD~1 HEAD
echo "(exit $?: 2 = runs would change)"
set -e
# plan exits 2 when changes are pending: that is the expected answer here.
goodbye_id=$({ rg plan "${repo_flags[@]}" --format json 2>/dev/null || true; } | "$py" -c '
import json, sys
print([a["submission_id"] for a in json.load(sys.stdin)["actions"]
       if a["action"] == "submit" and a["name"] == "smoke-goodbye"][0])')
echo "the next pass will submit $goodbye_id"
body='{"ref":"refs/heads/main"}'
sig="sha256=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$secret" -r | cut -d' ' -f1)"
auth=()
[ -s "$state/token" ] && auth=(-H "Authorization: Bearer $(cat "$state/token")")
t0=$EPOCHREALTIME
echo "POST /webhook (X-GitHub-Event: push, signed): HTTP $(code -X POST "$url/webhook" \
  -H 'Content-Type: application/json' -H 'X-GitHub-Event: push' \
  -H "X-Hub-Signature-256: $sig" --data-binary "$body")"
in_ray=0
for _ in $(seq 1 600); do
  if [ "$(code "${auth[@]}" "$address/api/jobs/$goodbye_id")" = 200 ]; then in_ray=1; break; fi
  sleep 0.05
done
[ "$in_ray" = 1 ] || { show_log "$log_seen"; echo "$goodbye_id never reached Ray" >&2; exit 1; }
t1=$EPOCHREALTIME
echo "$goodbye_id is in Ray $(((${t1/./} - ${t0/./}) / 1000)) ms after the webhook"
sleep 2
show_log "$log_seen"
log_seen=$(($(wc -l <"$daemon_log") + 1))

say "waiting for the runs to finish"
for _ in $(seq 1 100); do
  active=$(rg list --format json |
    "$py" -c 'import json,sys; print(sum(j["status"] in ("PENDING","RUNNING") for j in json.load(sys.stdin)))')
  [ "$active" = 0 ] && break
  sleep 3
done
rg list

say "POST /api/v1/sync   (with the secret as bearer token: one more pass records how the runs ended)"
before=$(passes)
echo "without the token: HTTP $(code -X POST -d "" "$url/api/v1/sync")"
echo "with the token:    HTTP $(code -X POST -d "" -H "Authorization: Bearer $secret" \
  "$url/api/v1/sync")"
for _ in $(seq 1 300); do
  [ "$(passes)" -gt "$before" ] && break
  sleep 0.2
done
show_log "$log_seen"
status_summary

say "git log ray-gitops/status   (the audit trail)"
git -C "$demo/remote.git" log --format='%h %s%n%b' ray-gitops/status

say "STATUS.md on the status branch"
git -C "$demo/remote.git" show ray-gitops/status:STATUS.md

say "ray-gitops history smoke-goodbye"
rg history smoke-goodbye "${repo_flags[@]}"

say "stopping the daemon with SIGTERM"
log_seen=$(($(wc -l <"$daemon_log") + 1))
kill -TERM "$daemon_pid"
daemon_status=0
wait "$daemon_pid" || daemon_status=$?
daemon_pid=""
show_log "$log_seen"
echo "the daemon exited with status $daemon_status"
[ "$daemon_status" = 0 ] || exit 1

say "the artifacts of smoke-hello on the shared filesystem"
smoke_dir=$(find "$shared/jobs" -mindepth 1 -maxdepth 1 -name 'smoke-hello-*' | head -n 1)
if [ -n "$smoke_dir" ]; then
  (cd "$smoke_dir" && find . -type f | sort)
  echo "--- logs/submit.out"
  cat "$smoke_dir/logs/submit.out"
  echo "--- ray-gitops logs $(basename "$smoke_dir")"
  rg logs "$(basename "$smoke_dir")"
else
  echo "(no artifacts directory under $shared/jobs)"
fi
