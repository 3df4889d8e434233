#!/usr/bin/env bash
# The whole GitOps loop on one machine (about 11 minutes the first time on 2 cores, 10 of them
# building; a minute after that):
#   install what the demo uses (scripts/install-deps.sh demo: no test tool, one Ray), build the
#   binary (Ninja's progress on the terminal), start a local Ray head, push the example
#   repository to a local bare Git remote (jobs pointed at a CPU-only stand-in of verl, plus
#   the smoke job), `ray-gitops plan` and `render`, then the daemon (`ray-gitops run`): its
#   first pass submits the jobs; /readyz, /metrics and /api/v1/status; a spec change, reviewed with
#   `ray-gitops diff`, is pushed and reaches Ray through a
#   signed GitHub push webhook (the interval is 10 minutes, so the webhook is what runs the
#   pass); the example pipeline: a pass while the SFT stage runs shows the GRPO stage Waiting
#   on it, and the first pass after the SFT succeeded submits the GRPO stage with the SFT
#   run's directory in its command (POST /api/v1/sync runs each of these passes, once Ray
#   reports the state it needs); code from the repository: the eval-report job runs
#   src/eval-report/ of the pushed commit, a push that only bumps its REPORT_VERSION is named
#   by `plan` as a code change and makes a new run whose log prints the new version (the fork
#   of verl in forks/verl is fetched from the pinned wheel and rendered, its job suspended:
#   it needs GPUs); once the runs ended, POST /api/v1/sync records how; then the
#   status branch, STATUS.md and `ray-gitops history`, and SIGTERM stops the daemon (exit 0).
#   The daemon and the head are stopped and the temp dir removed on exit, whatever happens
#   (also on Ctrl-C).
#
#   bash scripts/demo.sh
#     RG_DEMO_SKIP_INSTALL=1        skip `scripts/install-deps.sh demo` (the Debian packages of
#                                   scripts/packages/build and demo, the venv with the pinned
#                                   Ray, the verl wheel)
#     RG_DEMO_PRESET=release|debug  which CMake preset builds ray-gitops (default release, in
#                                   build/release, configured with RG_BUILD_TESTS=OFF; the test
#                                   suite's build/debug is left alone)
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
  say "installing what the demo needs (scripts/install-deps.sh demo)"
  bash "$src/scripts/install-deps.sh" demo
fi

# Ninja's status lines ("[done/total] what it builds") from the build's output, as they come:
# on a terminal one line rewritten in place, elsewhere one line each. (bash's read, not awk:
# mawk reads a pipe in blocks, which holds the lines back until the build ends.)
build_progress() {
  local line cols=0 shown=0
  if [ -t 1 ]; then
    cols=$(stty size </dev/tty 2>/dev/null | cut -d' ' -f2) || true
    cols=${cols:-80}
  fi
  while IFS= read -r line; do
    [[ $line =~ ^\[[0-9]+/[0-9]+\]\  ]] || continue
    if ((cols)); then
      printf '\r\033[K%s' "${line:0:cols-1}"
      shown=1
    else
      printf '%s\n' "$line"
    fi
  done
  if ((shown)); then printf '\n'; fi
}

say "building ray-gitops (preset $preset in build/$preset, without the tests;" \
  "the first build takes about 10 minutes on 2 cores)"
# The binary alone: RG_BUILD_TESTS=OFF, so configuring needs none of the test suite's packages.
# The whole output goes to a log kept in the build folder; its tail is shown when the build
# fails.
build_log=$src/build/$preset/demo-build.log
mkdir -p "$(dirname "$build_log")"
build_started=$SECONDS
if ! (cd "$src" && cmake --preset "$preset" -DRG_BUILD_TESTS=OFF &&
  NINJA_STATUS='[%f/%t] ' cmake --build "build/$preset" --target ray-gitops -j2) 2>&1 |
  tee "$build_log" | build_progress; then
  tail -n 40 "$build_log"
  echo "build failed (the whole log: $build_log)" >&2
  exit 1
fi
echo "built in $((SECONDS - build_started)) s"
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
# The demo's own stand-in for stage 1 of the pipeline (the SFT job): it stays RUNNING until the
# file its RG_DEMO_SFT_GATE names exists, so that a pass sees stage 2 Waiting on a running
# stage 1; then it leaves what verl 0.9.1 leaves under trainer.default_local_dir (the step
# folder with huggingface/config.json, no weights, and the tracker file) and prints its
# arguments like the other stand-ins.
sft_gate_rel=demo/sft-may-finish # under shared_root
sft_gate=$shared/$sft_gate_rel
mkdir -p "$(dirname "$sft_gate")"
cat >"$shared/common/code/verl/standin/verl/trainer/sft_trainer_ray.py" <<'PYEOF'
"""verl.trainer.sft_trainer_ray stand-in of the demo (stage 1 of the pipeline)."""

import os
import sys
import time

from verl.trainer import report


def arg(key):
    values = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith(key + "=")]
    return values[-1] if values else None


if __name__ == "__main__":
    gate = os.environ.get("RG_DEMO_SFT_GATE")
    if gate:
        print("VERL-STANDIN waiting for " + gate, flush=True)
        deadline = time.monotonic() + 900
        while not os.path.exists(gate):
            if time.monotonic() > deadline:
                sys.exit("VERL-STANDIN " + gate + " never appeared")
            time.sleep(0.2)
    out, steps = arg("trainer.default_local_dir"), arg("trainer.total_training_steps")
    if out and steps:
        hf = os.path.join(out, "global_step_" + steps, "huggingface")
        os.makedirs(hf, exist_ok=True)
        with open(os.path.join(hf, "config.json"), "w") as f:
            f.write('{"note": "written by the demo stand-in, not by verl"}\n')
        with open(os.path.join(out, "latest_checkpointed_iteration.txt"), "w") as f:
            f.write(steps)
    sys.exit(report("verl.trainer.sft_trainer_ray"))
PYEOF
git init -q --bare -b main "$demo/remote.git"
git clone -q "$demo/remote.git" "$demo/work" 2>/dev/null
cd "$demo/work"
git checkout -q -b main
git config user.email demo@localhost
git config user.name demo
cp -r "$src/examples/repo/." .
# The fork of verl the example keeps in the repository: verl 0.9.1 from the wheel that
# scripts/install-deps.sh unpacked (downloaded by pip when that is missing).
verl_wheel=${RG_VERL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/verl-0.9.1}
[ -d "$verl_wheel/verl" ] || verl_wheel=""
PYTHON=$py bash forks/verl/fetch.sh ${verl_wheel:+"$verl_wheel"}
sft_name=sft-qwen2.5-0.5b-gsm8k   # stage 1 of the pipeline (jobs/sft/qwen2.5-0.5b.yaml)
grpo_name=grpo-qwen2.5-0.5b-gsm8k # stage 2 (jobs/grpo/qwen2.5-0.5b-gsm8k.yaml)
"$py" - "$address" "$shared" "$sft_name" "$sft_gate_rel" <<'PYEOF'
import glob, sys, yaml
address, shared, sft_name, sft_gate_rel = sys.argv[1:5]
cluster = yaml.safe_load(open("cluster.yaml"))
cluster["address"] = address
cluster["shared_root"] = shared
cluster.pop("user_code_path", None)
yaml.safe_dump(cluster, open("cluster.yaml", "w"), sort_keys=False)
# The trainers become the CPU-only stand-in: same entrypoints, a few seconds each. So does
# verl in a custom job that runs it from a code_path (the nightly evaluation). The trainer
# that runs the fork of verl kept in the repository (code: forks/verl) is the real verl and
# needs GPUs: it stays suspended here, validated and rendered but never submitted.
for path in glob.glob("jobs/**/*.yaml", recursive=True):
    spec = yaml.safe_load(open(path))
    if spec["workload"] == "custom" and "code_path" not in spec:
        continue
    if "code" in spec:
        spec["suspend"] = True
        yaml.safe_dump(spec, open(path, "w"), sort_keys=False)
        continue
    spec["code_path"] = "${shared_root}/common/code/verl/standin"
    if spec.get("name") == sft_name:
        spec.setdefault("env_vars", {})["RG_DEMO_SFT_GATE"] = "${shared_root}/" + sft_gate_rel
    yaml.safe_dump(spec, open(path, "w"), sort_keys=False)
PYEOF
git add -A
git commit -qm "desired state: the example jobs on the local head"
git push -q origin main
git log --stat --format='commit %h  %s' main -- . ':(exclude)forks/verl/verl'
echo " (and forks/verl/verl/: $(git ls-files forks/verl/verl | wc -l) files of verl 0.9.1)"
echo "--- cluster.yaml"
cat cluster.yaml
echo "--- jobs/smoke/hello.yaml"
cat jobs/smoke/hello.yaml
# The pipeline's stage 2, the scheduled evaluation and the two jobs whose code is in the
# repository, the fields that make them so.
"$py" - <<'PYEOF'
import yaml
for path, keys in (
        ("jobs/grpo/qwen2.5-0.5b-gsm8k.yaml", ("after", "model_id")),
        ("jobs/eval/gsm8k-nightly.yaml",
         ("schedule", "timezone", "concurrency", "starting_deadline", "deadline")),
        ("jobs/eval/report.yaml", ("code", "entrypoint")),
        ("jobs/grpo/qwen2.5-0.5b-gsm8k-fork.yaml", ("code", "suspend"))):
    spec = yaml.safe_load(open(path))
    print("--- " + path + " (" + ", ".join(keys) + ")")
    print(yaml.safe_dump({k: spec[k] for k in keys if k in spec}, sort_keys=False), end="")
PYEOF
repo_flags=(--repo "$demo/remote.git" --cache-dir "$demo/cache")

say "ray-gitops plan   (what a merge would do; exit 2 = changes pending)"
echo "($grpo_name waits for $sft_name; eval-gsm8k-nightly shows its next slot)"
set +e
rg plan "${repo_flags[@]}"
echo "(exit $?)"
set -e

say "ray-gitops render jobs/ppo/qwen2.5-0.5b-gsm8k.yaml   (the body POSTed to Ray)"
rg render --repo "$demo/work" jobs/ppo/qwen2.5-0.5b-gsm8k.yaml --format json

fork_spec=jobs/grpo/qwen2.5-0.5b-gsm8k-fork.yaml
say "ray-gitops render $fork_spec   (code: forks/verl, shipped as the run's working_dir)"
rg render --repo "$demo/work" "$fork_spec" --format json 2>"$demo/render-fork.err" |
  "$py" -c '
import json, sys
body = json.load(sys.stdin)
print("entrypoint:  " + body["entrypoint"][:72] + " ...")
print("working_dir: " + body["runtime_env"]["working_dir"])
print("PYTHONPATH:  " + body["runtime_env"]["env_vars"]["PYTHONPATH"])'
cat "$demo/render-fork.err"
grep -q "^$fork_spec: code forks/verl .*shipped as gcs://_ray_pkg_" "$demo/render-fork.err" ||
  { echo "render named no package for $fork_spec" >&2; exit 1; }

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
# Waits (up to 60 s) until more than $1 passes have ended: the daemon counts a pass when it
# ends, after its submits, its status commit and its log lines.
wait_passes_after() {
  for _ in $(seq 1 300); do
    [ "$(passes)" -gt "$1" ] && return 0
    sleep 0.2
  done
  return 1
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
    print("  %-28s %-10s %-35s %s" % (j["name"], j["phase"], j["submission_id"], j["status"]))'
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
before=$(passes)
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
# The pass goes on after the submit; once it ended, the next trigger starts a pass of its own.
wait_passes_after "$before" ||
  { show_log "$log_seen"; echo "the webhook's pass never ended" >&2; exit 1; }
show_log "$log_seen"
log_seen=$(($(wc -l <"$daemon_log") + 1))

# One field of one job in the daemon's /api/v1/status ("" when the job or the field is absent).
job_field() {
  { curl -s --max-time 10 "$url/api/v1/status" || true; } | "$py" -c '
import json, sys
try:
    jobs = [j for j in json.load(sys.stdin)["jobs"] if j["name"] == sys.argv[1]]
except (ValueError, KeyError, TypeError):
    jobs = []
print((jobs[0].get(sys.argv[2]) or "") if jobs else "")' "$1" "$2"
}
# Ray's status of a submission ("" when Ray does not know it).
ray_status() {
  { curl -s --max-time 10 "${auth[@]}" "$address/api/jobs/$1" || true; } | "$py" -c '
import json, sys
try:
    print(json.load(sys.stdin).get("status") or "")
except (ValueError, AttributeError):
    print("")'
}
# Waits (up to $3 seconds) until Ray reports submission $1 in status $2; fails at once when the
# run ended in another status.
wait_ray_status() {
  local now=""
  for _ in $(seq 1 $(($3 * 5))); do
    now=$(ray_status "$1")
    [ "$now" = "$2" ] && return 0
    case $now in SUCCEEDED | FAILED | STOPPED) break ;; esac
    sleep 0.2
  done
  echo "$1 is ${now:-unknown to Ray}, not $2" >&2
  return 1
}
# POST /api/v1/sync (the webhook secret as bearer token) and wait until the pass it asked for
# ended. Nothing else triggers a pass meanwhile (the interval is 10 minutes, and the pass of
# the previous trigger has ended), so that pass is the first one to see what Ray says now.
sync_pass() {
  local before
  before=$(passes)
  echo "POST /api/v1/sync: HTTP $(code -X POST -d "" -H "Authorization: Bearer $secret" \
    "$url/api/v1/sync")"
  wait_passes_after "$before" ||
    { show_log "$log_seen"; echo "the pass never ended" >&2; return 1; }
  show_log "$log_seen"
  log_seen=$(($(wc -l <"$daemon_log") + 1))
}

say "the pipeline: $grpo_name waits while $sft_name runs"
sft_id=$(job_field "$sft_name" submission_id)
[ -n "$sft_id" ] || { status_summary; echo "$sft_name has no run" >&2; exit 1; }
echo "stage 1 is $sft_id; its stand-in runs until $sft_gate exists"
wait_ray_status "$sft_id" RUNNING 120 || { show_log "$log_seen"; exit 1; }
echo "Ray: $sft_id is RUNNING; a pass to look at it:"
sync_pass
status_summary
grpo_phase=$(job_field "$grpo_name" phase)
grpo_message=$(job_field "$grpo_name" message)
echo "$grpo_name: $grpo_phase ($grpo_message)"
if [ "$grpo_phase" != Waiting ] || [[ $grpo_message != *"$sft_name"*Running* ]]; then
  echo "$grpo_name should be Waiting on $sft_name, which is Running" >&2
  exit 1
fi

say "stage 1 succeeds: the first pass after it submits $grpo_name"
touch "$sft_gate"
wait_ray_status "$sft_id" SUCCEEDED 120 || { show_log "$log_seen"; exit 1; }
echo "Ray: $sft_id SUCCEEDED; no pass has seen it yet, so $grpo_name is still" \
  "$(job_field "$grpo_name" phase)"
sync_pass
grpo_id=$(job_field "$grpo_name" submission_id)
if [ -z "$grpo_id" ] || [ "$(code "${auth[@]}" "$address/api/jobs/$grpo_id")" != 200 ]; then
  status_summary
  echo "the first pass after $sft_name succeeded did not submit $grpo_name" >&2
  exit 1
fi
echo "$grpo_name: $(job_field "$grpo_name" phase), submitted as $grpo_id"
sft_steps=$("$py" -c 'import sys, yaml
print(yaml.safe_load(open(sys.argv[1]))["total_training_steps"])' jobs/sft/qwen2.5-0.5b.yaml)
sft_model=$shared/jobs/$sft_id/checkpoints/global_step_$sft_steps/huggingface
echo "its entrypoint, as Ray holds it: the model is stage 1's, in stage 1's run directory"
model_arg=$({ curl -s --max-time 10 "${auth[@]}" "$address/api/jobs/$grpo_id" || true; } |
  "$py" -c '
import json, shlex, sys
words = shlex.split(json.load(sys.stdin)["entrypoint"])
print("\n".join(w for w in words if w.startswith("actor_rollout_ref.model.path=")))')
echo "  $model_arg"
[ "$model_arg" = "actor_rollout_ref.model.path=$sft_model" ] ||
  { echo "expected actor_rollout_ref.model.path=$sft_model" >&2; exit 1; }
echo "what stage 1's stand-in left there (verl 0.9.1's layout; the real one adds the weights):"
(cd "$shared/jobs/$sft_id/checkpoints" && find . -type f | sort &&
  echo "latest_checkpointed_iteration.txt: $(cat latest_checkpointed_iteration.txt)")

say "code from the repository: eval-report runs src/eval-report/ of the pushed commit"
report_name=eval-report # jobs/eval/report.yaml, code: src/eval-report
report_old=$(job_field "$report_name" submission_id)
[ -n "$report_old" ] || { status_summary; echo "$report_name has no run" >&2; exit 1; }
wait_ray_status "$report_old" SUCCEEDED 120 || { rg logs "$report_old" || true; exit 1; }
echo "ray-gitops logs $report_old"
rg logs "$report_old" | sed 's/^/  /'
rg logs "$report_old" | grep -q "^eval-report v1: done" ||
  { echo "$report_old did not print the marker v1" >&2; exit 1; }

say "a code push: only src/eval-report/report.py changes (REPORT_VERSION v1 -> v2)"
sed -i 's/^REPORT_VERSION = "v1"$/REPORT_VERSION = "v2"/' src/eval-report/report.py
git diff --stat
git commit -qam "eval-report: v2"
git push -q origin main
git log --oneline -1
echo "ray-gitops plan, what it says of $report_name (exit 2: a change is pending):"
set +e
rg plan "${repo_flags[@]}" >"$demo/plan-code.out" 2>&1
plan_status=$?
set -e
# Its row of the table, and its section below the table (up to the next blank line).
awk -v n="$report_name" '$2 == n { print "  " $0 } $0 ~ "^[a-z]+ +" n ":$" { s = 1 }
  s && /^$/ { s = 0 } s { print "  " $0 }' "$demo/plan-code.out"
echo "(exit $plan_status)"
grep -q "code changed: src/eval-report (1 file: report.py)" "$demo/plan-code.out" ||
  { cat "$demo/plan-code.out"; echo "plan named no code change" >&2; exit 1; }
sync_pass
report_new=$(job_field "$report_name" submission_id)
if [ -z "$report_new" ] || [ "$report_new" = "$report_old" ]; then
  status_summary
  echo "the pass after the code push started no new run of $report_name" >&2
  exit 1
fi
echo "$report_name: the current run is now $report_new (was $report_old, now a past run)"
wait_ray_status "$report_new" SUCCEEDED 120 || { rg logs "$report_new" || true; exit 1; }
echo "ray-gitops logs $report_new"
rg logs "$report_new" | sed 's/^/  /'
rg logs "$report_new" | grep -q "^eval-report v2: done" ||
  { echo "$report_new did not print the marker v2" >&2; exit 1; }
echo "both runs, as Ray lists them:"
rg list | awk -v p="^$report_name-" 'NR == 1 || $1 ~ p'

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

say "ray-gitops history $grpo_name   (Waiting on $sft_name, then its run)"
rg history "$grpo_name" "${repo_flags[@]}"

say "ray-gitops history $report_name   (the code each run got: folder@tree, commit)"
rg history "$report_name" "${repo_flags[@]}"

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
