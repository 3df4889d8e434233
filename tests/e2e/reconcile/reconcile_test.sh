#!/usr/bin/env bash
# The reconciler end to end: a bare remote, a clone that pushes, and `plan` / `sync` /
# `history` against a Ray head. Usage:
#   reconcile_test.sh RAY_GITOPS_BINARY SOURCE_DIR [FAKE_RAY_SERVER_BINARY]
# With the third argument the test starts its own fake head instead of using the real one
# named by $RG_E2E_RAY_STATE_DIR.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

source "$here/../lib.sh"
[ $# -ge 3 ] && rg_e2e_fake_head "$3"
rg_e2e_init "$1" "$2"

instance="e2e-reconcile-$RG_RUN_TAG"
remote=$RG_TMP/remote.git
work=$RG_TMP/work
rg_on_exit() { rg_stop_ours "$instance"; }

list_ours() { rg_list_ours "$instance"; }
repo_flags=(--repo "$remote" --cache-dir "$RG_TMP/cache" --instance "$instance" --no-artifacts)
sync_() { rg sync "${repo_flags[@]}" "$@" 2>>"$RG_TMP/sync.log"; }
plan_() { rg plan --repo "$remote" --cache-dir "$RG_TMP/cache" --instance "$instance" "$@"; }
status_commits() { git -C "$remote" rev-list --count ray-gitops/status-$instance 2>/dev/null || echo 0; }
status_file() { git -C "$remote" show "ray-gitops/status-$instance:status/$1.yaml"; }
push() { rg_git_push "$work" "$1"; }
expect_exit() {
  local want=$1 got
  shift
  set +e
  "$@" >"$RG_TMP/out" 2>"$RG_TMP/err"
  got=$?
  set -e
  if [ "$got" != "$want" ]; then
    cat "$RG_TMP/out" "$RG_TMP/err" >&2
    rg_fail "'$*' exited $got, expected $want"
  fi
}
wait_running() {
  local n=$1 deadline=$((SECONDS + 120))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(list_ours | grep -c ' RUNNING$' || true)" -ge "$n" ] && return 0
    sleep 1
  done
  list_ours >&2
  rg_fail "fewer than $n jobs RUNNING after 120s"
}
spec() {  # spec FILE SECONDS
  mkdir -p "$(dirname "$1")"
  printf 'workload: custom\nentrypoint: sleep %s\nentrypoint_num_cpus: 0\n' "$2" >"$1"
  rg_tag_spec "$1"
}

rg_git_remote "$remote" "$work" "$RG_ADDRESS"
spec "$work/jobs/alpha.yaml" 300
spec "$work/jobs/beta.yaml" 301
push "two jobs"

# --- plan before any sync: both jobs pending, exit 2 ---
expect_exit 2 plan_
grep -q '^submit  *alpha ' "$RG_TMP/out" || rg_fail "plan does not submit alpha"
grep -q '^submit  *beta ' "$RG_TMP/out" || rg_fail "plan does not submit beta"
expect_exit 2 plan_ --format json
"$RG_PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format_version"]==1 and d["summary"]["submit"]==2' "$RG_TMP/out"

# --- sync submits exactly two jobs with deterministic ids and ownership metadata ---
expect_exit 0 sync_
[ "$(list_ours | wc -l)" = 2 ] || { list_ours >&2; rg_fail "expected two jobs after sync"; }
alpha_id=$(list_ours | awk '{ print $1 }' | grep -E '^alpha-[0-9a-f]{10}$' || true)
[ -n "$alpha_id" ] || rg_fail "no alpha-<hash> job"
rg_api_get "/api/jobs/$alpha_id" | "$RG_PY" -c '
import json, sys
m = json.load(sys.stdin)["metadata"]
assert m["gitops.name"] == "alpha" and m["gitops.spec-path"] == "jobs/alpha.yaml", m
assert m["gitops.attempt"] == "0" and len(m["gitops.spec-hash"]) == 10 and len(m["gitops.commit"]) == 40, m'

# --- a second sync submits nothing; once running, passes that learn nothing commit nothing ---
expect_exit 0 sync_
[ "$(list_ours | wc -l)" = 2 ] || rg_fail "second sync changed the job count"
wait_running 2
expect_exit 0 sync_
before=$(status_commits)
expect_exit 0 sync_
[ "$(status_commits)" = "$before" ] || rg_fail "a pass that changed nothing made a status commit"
expect_exit 0 plan_

# --- the status branch holds the fields of docs/status-branch.md ---
status_file alpha >"$RG_TMP/alpha.yaml"
for field in name spec_path spec_hash spec_commit phase submission_id attempt status \
  dashboard_url attempts; do
  grep -q "^$field:" "$RG_TMP/alpha.yaml" || { cat "$RG_TMP/alpha.yaml" >&2; rg_fail "no $field"; }
done
grep -q '^phase: Running' "$RG_TMP/alpha.yaml" || rg_fail "alpha is not Running in its status"
git -C "$remote" show ray-gitops/status-$instance:STATUS.md | grep -q alpha || rg_fail "STATUS.md lacks alpha"

# --- deleting alpha stops it; editing beta replaces its run; gamma fails and is retried ---
beta_old=$(list_ours | awk '$1 ~ /^beta-/ { print $1 }')
git -C "$work" rm -q jobs/alpha.yaml
spec "$work/jobs/beta.yaml" 302
printf 'workload: custom\nentrypoint: exit 3\nentrypoint_num_cpus: 0\nretries: 1\n' \
  >"$work/jobs/gamma.yaml"
rg_tag_spec "$work/jobs/gamma.yaml"
push "remove alpha, change beta, add gamma"
# The plan shows what changed in beta, and its stop row the phase of the run it stops.
expect_exit 2 plan_
grep -Eq "^stop +beta +$beta_old +Running " "$RG_TMP/out" || { cat "$RG_TMP/out" >&2; rg_fail "the stop row of beta is not Running"; }
grep -Eq '^ +- 301$' "$RG_TMP/out" && grep -Eq '^ +\+ 302$' "$RG_TMP/out" ||
  rg_fail "the plan does not show beta's rendered change"
expect_exit 0 sync_
gamma0=$(list_ours | awk '{ print $1 }' | grep -E '^gamma-[0-9a-f]{10}$' || true)
[ -n "$gamma0" ] || rg_fail "gamma was not submitted"
rg_wait_status "$gamma0" FAILED 60
rg_wait_status "$alpha_id" STOPPED 60 2>/dev/null || true
[ "$(rg_status_of "$alpha_id")" = STOPPED ] || rg_fail "alpha was not stopped"
[ "$(rg_status_of "$beta_old")" = STOPPED ] || rg_wait_status "$beta_old" STOPPED 60
beta_new=$(list_ours | awk -v old="$beta_old" '$1 ~ /^beta-/ && $1 != old { print $1 }')
[ -n "$beta_new" ] && [ "$beta_new" != "$beta_old" ] || rg_fail "beta was not resubmitted"

# --- a YAML syntax error over a running job's spec freezes it ---
wait_running 1
good_beta=$(cat "$work/jobs/beta.yaml")
printf 'workload: custom\nentrypoint: [unclosed\n' >"$work/jobs/beta.yaml"
push "break beta"
expect_exit 1 sync_
[ "$(rg_status_of "$beta_new")" = RUNNING ] || rg_fail "an invalid spec stopped its job"
status_file beta >"$RG_TMP/beta.yaml"
grep -q '^phase: Invalid' "$RG_TMP/beta.yaml" || { cat "$RG_TMP/beta.yaml" >&2; rg_fail "beta not Invalid"; }
grep -q 'jobs/beta.yaml:[0-9]*:[0-9]*: error:' "$RG_TMP/beta.yaml" || rg_fail "no error line in status"

# --- removing every spec while jobs run is blocked until --max-stops ---
printf '%s\n' "$good_beta" >"$work/jobs/beta.yaml"
push "fix beta"
expect_exit 0 sync_
[ "$(list_ours | grep -c "^$beta_new RUNNING" || true)" = 1 ] || rg_fail "fixing beta disturbed its run"
git -C "$work" rm -q jobs/beta.yaml jobs/gamma.yaml
push "remove every spec"
expect_exit 3 sync_
[ "$(rg_status_of "$beta_new")" = RUNNING ] || rg_fail "the empty-desired-state guard did not hold"
expect_exit 0 sync_ --max-stops 5
rg_wait_status "$beta_new" STOPPED 60

# --- history prints the transitions of a job ---
expect_exit 0 rg history beta "${repo_flags[@]:0:6}"
grep -q 'Invalid' "$RG_TMP/out" || { cat "$RG_TMP/out" >&2; rg_fail "history lacks the Invalid phase"; }
[ "$(grep -c "$beta_new" "$RG_TMP/out")" -ge 2 ] || rg_fail "history lacks beta's runs"
grep -Eq "$beta_old .*-> Stopped" "$RG_TMP/out" || rg_fail "history lacks the replaced run's Stopped"
# gamma: attempt 0 Failed, then attempt 1 submitted.
expect_exit 0 rg history gamma "${repo_flags[@]:0:6}" -o json
"$RG_PY" - "$RG_TMP/out" "$gamma0" <<'PY' || { cat "$RG_TMP/out" >&2; rg_fail "history of gamma"; }
import json, sys
rows = json.load(open(sys.argv[1]))["transitions"]
pairs = [(r["attempt"], r["submission_id"], r["to"]) for r in rows]
failed = [i for i, p in enumerate(pairs) if p[0] == 0 and p[1] == sys.argv[2] and p[2] == "Failed"]
retry = [i for i, p in enumerate(pairs) if p[0] == 1 and p[1] == sys.argv[2] + "-r1" and p[2] == "Pending"]
assert failed and retry and failed[0] < retry[0], pairs
PY
expect_exit 1 rg history no-such-job "${repo_flags[@]:0:6}"
# A status commit's subject names the job and its transition.
grep -Eq '^ray-gitops: (.*, )?beta [A-Za-z]+ -> [A-Za-z]+' <(git -C "$remote" log --format=%s ray-gitops/status-$instance) ||
  rg_fail "no status commit subject names beta's transition"
echo "PASS"
