#!/usr/bin/env bash
# Where the Ray token and headers go, as CI runs the binary on a pull request (docs/hooks.md,
# "Pull requests from others"). The change under review points cluster.yaml at a
# listener that records every request; the credentials are in the environment (or the flags):
# `plan` sends nothing there, exits 1 and names --ray-address; with --ray-address or
# RAY_ADDRESS they go to that address only; with no credential at all plan uses the commit's
# address; validate, render and diff never contact Ray; sync sends the token to the address of
# what it applies.
# Args: path-to-binary source-dir path-to-fake-ray-server.
set -u
bin=$1
src=$2
fake=$3
# shellcheck source=tests/cli/lib.sh
source "$src/tests/cli/lib.sh"
token=tok-1b2c3d4e5f6a
header=hdr-9e8d7c6b5a4f
# The listener the pull request points at, and the operator's head (both record requests).
start_server pointed python3 "$src/tests/cli/request_recorder.py" "$work/pointed.jsonl"
start_server trusted python3 "$src/tests/cli/request_recorder.py" "$work/trusted.jsonl"
touch "$work/pointed.jsonl" "$work/trusted.jsonl"

repo=$work/repo
git init -q "$repo"
cd "$repo" || exit 1
mkdir jobs
printf 'workload: custom\nentrypoint: python train.py\n' >jobs/hello.yaml
printf 'address: %s\n' "$pointed" >cluster.yaml
git add -A && git commit -qm "point the cluster at a host of the pull request's"
base=$(git rev-parse HEAD)
printf 'workload: custom\nentrypoint: python train.py --more\n' >jobs/hello.yaml
git commit -qam more
cd "$work" || exit 1

# ray_env NAME ARGS...: `run NAME ARGS...` with the Ray credentials in the environment, as CI
# holds them, and no address there.
ray_env() {
  (
    unset RAY_ADDRESS RAY_API_SERVER_ADDRESS
    export RAY_AUTH_TOKEN=$token RAY_JOB_HEADERS="{\"X-Api-Key\": \"$header\"}"
    run "$@"
  )
}
# plain NAME ARGS...: `run NAME ARGS...` with no Ray variable at all.
plain() {
  (
    unset RAY_ADDRESS RAY_API_SERVER_ADDRESS RAY_AUTH_TOKEN RAY_JOB_HEADERS
    run "$@"
  )
}
requests() { wc -l <"$work/$1.jsonl"; }
# no_secret NAME: neither credential shows in the run's output.
no_secret() {
  grep -q -e "$token" -e "$header" "$work/$1.out" "$work/$1.err" && fail "$1 printed a credential"
}
# refused NAME: plan exited 1 naming --ray-address and RAY_ADDRESS, and nothing reached the
# listener.
refused() {
  expect_rc "$1" 1
  grep -q -- "--ray-address" "$work/$1.err" || fail "$1 does not name --ray-address: $(cat "$work/$1.err")"
  grep -q "RAY_ADDRESS" "$work/$1.err" || fail "$1 does not name RAY_ADDRESS: $(cat "$work/$1.err")"
  [[ $(requests pointed) == 0 ]] || fail "$1: the listener got $(requests pointed) request(s): $(cat "$work/pointed.jsonl")"
  no_secret "$1"
}
cache=(--cache-dir "$work/cache")

# --- plan with credentials and only the commit's address: refused, nothing sent ---
ray_env plan-env plan --repo "$repo" "${cache[@]}"
refused plan-env
grep -q "commit under review" "$work/plan-env.err" || fail "plan-env does not say why: $(cat "$work/plan-env.err")"
printf '%s\n' "$token" >"$work/token"
plain plan-token-file --ray-token-file "$work/token" plan --repo "$repo" "${cache[@]}"
refused plan-token-file
plain plan-header --ray-header "X-Api-Key=$header" plan --repo "$repo" "${cache[@]}"
refused plan-header
ray_env plan-json plan --repo "$repo" "${cache[@]}" --format json
refused plan-json

# --- the operator's address: the credentials go there, and only there ---
ray_env plan-flag --ray-address "$trusted" plan --repo "$repo" "${cache[@]}"
expect_rc plan-flag 2
no_secret plan-flag
[[ $(requests pointed) == 0 ]] || fail "plan --ray-address reached the commit's address"
python3 - "$work/trusted.jsonl" "$token" "$header" <<'PY' || fail "the trusted head did not get the credentials: $(cat "$work/trusted.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines, "no request"
for r in lines:
    assert r["headers"].get("authorization") == "Bearer " + sys.argv[2], r
    assert r["headers"].get("x-api-key") == sys.argv[3], r
PY
: >"$work/trusted.jsonl"
env RAY_ADDRESS="$trusted" RAY_AUTH_TOKEN=$token "$bin" plan --repo "$repo" "${cache[@]}" \
  >"$work/plan-ray-address.out" 2>"$work/plan-ray-address.err"
[[ $? == 2 ]] || fail "plan with RAY_ADDRESS: $(cat "$work/plan-ray-address.err")"
grep -q "Bearer $token" "$work/trusted.jsonl" || fail "RAY_ADDRESS's head did not get the token"
[[ $(requests pointed) == 0 ]] || fail "plan with RAY_ADDRESS reached the commit's address"

# --- validate, render and diff never contact Ray ---
ray_env validate validate --repo "$repo"
expect_rc validate 0
ray_env render render --repo "$repo" jobs/hello.yaml
expect_rc render 0
ray_env diff diff --repo "$repo" "$base" HEAD
expect_rc diff 2
[[ $(requests pointed) == 0 ]] || fail "validate, render or diff contacted the commit's address"
for name in validate render diff; do no_secret $name; done

# --- no credential at all: plan asks the commit's address, with nothing to leak ---
plain plan-bare plan --repo "$repo" "${cache[@]}"
expect_rc plan-bare 2
[[ $(requests pointed) -ge 1 ]] || fail "plan without credentials did not plan against the commit's address"
grep -qi '"authorization"' "$work/pointed.jsonl" && fail "plan without credentials sent an Authorization header"

# --- sync applies what it reads: the token goes to its cluster.yaml address ---
start_server head "$fake" --token "$token"
cd "$repo" || exit 1
printf 'address: %s\n' "$head" >cluster.yaml
git commit -qam "the operator's head"
cd "$work" || exit 1
env -u RAY_ADDRESS -u RAY_API_SERVER_ADDRESS RAY_AUTH_TOKEN=$token "$bin" sync --repo "$repo" \
  "${cache[@]}" --no-artifacts --no-status >"$work/sync.out" 2>"$work/sync.err" ||
  fail "sync with the token for its cluster.yaml address: $(cat "$work/sync.err")"
grep -q "submitted" "$work/sync.err" || fail "sync submitted nothing: $(cat "$work/sync.err")"

finish "ray credentials: plan sends none to the commit's address; validate, render and diff contact no Ray"
