#!/usr/bin/env bash
# The whole GitOps loop on one machine, in a few minutes on 2 cores:
#   install the dependencies, build, start a local Ray head, push the example repository to a
#   local bare Git remote (jobs pointed at a CPU-only stand-in of verl, plus the smoke job),
#   `ray-gitops plan` and `sync`, wait for the runs to finish, sync again, then show the status
#   branch, STATUS.md and `ray-gitops history`. The head is stopped and the temp dir removed on
#   exit, whatever happens (also on Ctrl-C).
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

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cleanup() {
  local status=$?
  trap - EXIT INT TERM
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

say "ray-gitops sync   (submits; the status branch records the runs)"
rg sync "${repo_flags[@]}"

say "waiting for the runs to finish"
for _ in $(seq 1 100); do
  active=$(rg list --format json |
    "$py" -c 'import json,sys; print(sum(j["status"] in ("PENDING","RUNNING") for j in json.load(sys.stdin)))')
  [ "$active" = 0 ] && break
  sleep 3
done
rg list

say "ray-gitops sync   (records how the runs ended)"
rg sync "${repo_flags[@]}"

say "ray-gitops sync   (again: nothing to do, nothing committed)"
rg sync "${repo_flags[@]}"

say "git log ray-gitops/status   (the audit trail)"
git -C "$demo/remote.git" log --format='%h %s%n%b' ray-gitops/status

say "STATUS.md on the status branch"
git -C "$demo/remote.git" show ray-gitops/status:STATUS.md

say "ray-gitops history smoke-hello"
rg history smoke-hello "${repo_flags[@]}"

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
