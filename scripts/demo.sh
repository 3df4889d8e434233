#!/usr/bin/env bash
# The whole GitOps loop on one machine, in a few minutes on 2 cores:
#   install the dependencies, build, start a local Ray head, push the example repository to a
#   local bare Git remote (jobs pointed at a CPU-only stand-in of verl and the smoke job),
#   `ray-gitops sync`, wait for the runs to finish, sync again, then show the status branch,
#   STATUS.md and `ray-gitops history`. The head is stopped on exit, whatever happens.
#
#   bash scripts/demo.sh            (RG_DEMO_SKIP_INSTALL=1 skips install-deps.sh,
#                                    RG_DEMO_PRESET=debug|release picks the build, default release)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${RG_DEMO_PRESET:-release}
demo=$(mktemp -d /tmp/ray-gitops-demo.XXXXXX)
state=$demo/ray-head

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cleanup() {
  say "stopping the Ray head"
  bash "$src/scripts/ray-head.sh" stop "$state" || true
  rm -rf "$demo"
}
trap cleanup EXIT

if [ "${RG_DEMO_SKIP_INSTALL:-0}" != 1 ]; then
  say "installing dependencies"
  bash "$src/scripts/install-deps.sh"
fi

say "building ($preset)"
cmake --preset "$preset" -S "$src" >/dev/null
cmake --build "$src/build/$preset" --target ray-gitops -j2
bin=$src/build/$preset/reconciler/cli/ray-gitops

say "starting a local Ray head"
bash "$src/scripts/ray-head.sh" start "$state"
address=$(cat "$state/address")
ray_flags=(--ray-address "$address")
[ -s "$state/token" ] && ray_flags+=(--ray-token-file "$state/token")
unset RAY_ADDRESS RAY_API_SERVER_ADDRESS RAY_AUTH_TOKEN RAY_JOB_HEADERS

say "a bare Git remote and a clone of examples/repo"
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
py=${RG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv}/bin/python
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
repo_flags=(--repo "$demo/remote.git" --cache-dir "$demo/cache")

say "ray-gitops plan"
"$bin" "${ray_flags[@]}" plan "${repo_flags[@]}" || true

say "ray-gitops sync"
"$bin" "${ray_flags[@]}" sync "${repo_flags[@]}"

say "waiting for the runs to finish"
for _ in $(seq 1 120); do
  active=$("$bin" "${ray_flags[@]}" list --format json |
    "$py" -c 'import json,sys; print(sum(j["status"] in ("PENDING","RUNNING") for j in json.load(sys.stdin)))')
  [ "$active" = 0 ] && break
  sleep 3
done
"$bin" "${ray_flags[@]}" list

say "ray-gitops sync (records how the runs ended)"
"$bin" "${ray_flags[@]}" sync "${repo_flags[@]}"

say "git log ray-gitops/status"
git -C "$demo/remote.git" log --format='%h %s%n%b' ray-gitops/status

say "STATUS.md"
git -C "$demo/remote.git" show ray-gitops/status:STATUS.md

say "ray-gitops history smoke-hello"
"$bin" history smoke-hello "${repo_flags[@]}"
