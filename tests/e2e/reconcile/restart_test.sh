#!/usr/bin/env bash
# A Ray head restart seen through the binary (docs/operations.md, "Lost"; docs/reconcile.md,
# "Failure classes"): the fake head forgets every job and takes a new session_name; the next
# sync must not re-run finished work and marks the active runs Lost; once the infrastructure
# retry's backoff (30 s) has passed, a lost run with infra_retries left is resubmitted as
# attempt -r1, and a lost run without is only reported. Usage:
#   restart_test.sh RAY_GITOPS_BINARY SOURCE_DIR FAKE_RAY_SERVER_BINARY
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
rg_e2e_need_fake "$@"
rg_e2e_fake_head "$3"
rg_e2e_init "$1" "$2"

instance="e2e-restart-$RG_RUN_TAG"
remote=$RG_TMP/remote.git
work=$RG_TMP/work

list_ours() { rg_list_ours "$instance"; }
repo_flags=(--repo "$remote" --cache-dir "$RG_TMP/cache" --instance "$instance" --no-artifacts)
status_commits() { git -C "$remote" rev-list --count ray-gitops/status-$instance 2>/dev/null || echo 0; }
# One field of status/<name>.yaml at the tip of the status branch, quotes removed.
field() {
  git -C "$remote" show "ray-gitops/status-$instance:status/$1.yaml" | rg_yaml_field "$2"
}
expect_field() {
  local got
  got=$(field "$1" "$2")
  if [ "$got" != "$3" ]; then
    git -C "$remote" show "ray-gitops/status-$instance:status/$1.yaml" >&2 || true
    rg_fail "status/$1.yaml: $2 is '$got', expected '$3'"
  fi
}
sync_() {
  if ! rg sync "${repo_flags[@]}" >"$RG_TMP/sync.out" 2>"$RG_TMP/sync.log"; then
    cat "$RG_TMP/sync.out" "$RG_TMP/sync.log" >&2
    rg_fail "sync failed"
  fi
}
session() { rg_api_get /api/version | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["session_name"])'; }
spec() {  # spec NAME ENTRYPOINT INFRA_RETRIES
  printf 'workload: custom\nentrypoint: %s\nentrypoint_num_cpus: 0\ninfra_retries: %s\n' "$2" "$3" \
    >"$work/jobs/$1.yaml"
  rg_tag_spec "$work/jobs/$1.yaml"
}

rg_git_remote "$remote" "$work" "$RG_ADDRESS"
mkdir -p "$work/jobs"
spec quick "echo done" 0
spec runner "sleep 300" 1
spec single "sleep 301" 0
rg_git_push "$work" "three jobs"

# --- before the restart: quick succeeds, the two sleepers run, the ledger knows it all ---
sync_
[ "$(list_ours | wc -l)" = 3 ] || { list_ours >&2; rg_fail "expected three jobs after sync"; }
quick_id=$(list_ours | awk '$1 ~ /^quick-/ { print $1 }')
runner_id=$(list_ours | awk '$1 ~ /^runner-/ { print $1 }')
single_id=$(list_ours | awk '$1 ~ /^single-/ { print $1 }')
deadline=$((SECONDS + 30))
until [ "$(list_ours | awk '$1 ~ /^quick-/ { print $2 }')" = SUCCEEDED ] &&
  [ "$(list_ours | grep -c ' RUNNING$' || true)" = 2 ]; do
  [ $SECONDS -lt $deadline ] || { list_ours >&2; rg_fail "jobs did not settle"; }
  sleep 0.2
done
sync_
expect_field quick phase Succeeded
expect_field quick status SUCCEEDED
expect_field runner phase Running
expect_field single phase Running
session_before=$(session)

# --- the head restarts: every job is forgotten ---
kill -USR1 "${RG_FAKE_PID:-}"
read -r ack <&"${RG_FAKE[0]}"
[ "$ack" = restarted ] || rg_fail "the fake did not restart (said '$ack')"
[ -z "$(list_ours)" ] || { list_ours >&2; rg_fail "the restarted fake still lists jobs"; }
[ "$(session)" != "$session_before" ] || rg_fail "session_name did not change on restart"

# --- the pass after the restart: both sleepers Lost, nothing submitted before the backoff ---
sync_
[ -z "$(list_ours)" ] || { list_ours >&2; rg_fail "a run was submitted before the backoff"; }
# Finished work is not re-run, and its record is untouched.
expect_field quick phase Succeeded
expect_field quick submission_id "$quick_id"
expect_field runner phase Lost
expect_field runner submission_id "$runner_id"
field runner message | grep -q 'retrying after Lost, 1 of 1' || rg_fail "runner's message does not say it retries"
# The lost run without infrastructure retries: Lost, same attempt, nothing submitted.
expect_field single phase Lost
expect_field single submission_id "$single_id"
expect_field single attempt 0
field single message | grep -q 'infrastructure retries exhausted' || rg_fail "single's message does not say why"
# The commit lists both transitions to Lost, with their class.
git -C "$remote" log -1 --format=%B ray-gitops/status-$instance >"$RG_TMP/commit.txt"
grep -q '^runner: Running -> Lost (.*infra)' "$RG_TMP/commit.txt" || { cat "$RG_TMP/commit.txt" >&2; rg_fail "commit lacks runner -> Lost"; }
grep -q '^single: Running -> Lost' "$RG_TMP/commit.txt" || { cat "$RG_TMP/commit.txt" >&2; rg_fail "commit lacks single -> Lost"; }
grep -q '^quick:' "$RG_TMP/commit.txt" && rg_fail "the commit touches quick, which did not change"
git -C "$remote" show ray-gitops/status-$instance:STATUS.md | grep -q 'Lost' || rg_fail "STATUS.md shows no Lost job"

# --- once the backoff is over: runner is resubmitted as attempt 1, from infra_retries ---
# The backoff counts from attempt 0's lost_at (30 s for the first): wait until the clock has
# passed that, as recorded, then pass once.
lost_at=$(git -C "$remote" show "ray-gitops/status-$instance:status/runner.yaml" |
  sed -n "s/^ *lost_at: ['\"]\{0,1\}\([^'\"]*\).*/\1/p" | head -n 1)
[ -n "$lost_at" ] || rg_fail "runner's attempt 0 records no lost_at"
due=$(($(date -d "$lost_at" +%s) + 30))
until [ "$(date +%s)" -gt "$due" ]; do sleep 0.2; done
sync_
want_r1="$runner_id-r1"
after_restart=$(list_ours)
[ "$after_restart" = "$want_r1 RUNNING" ] || [ "$after_restart" = "$want_r1 PENDING" ] ||
  rg_fail "after the restart Ray should hold only $want_r1, it holds: $after_restart"
grep -q "submission_id=$want_r1" "$RG_TMP/sync.log" || { cat "$RG_TMP/sync.log" >&2; rg_fail "no submit of $want_r1 logged"; }
expect_field runner submission_id "$want_r1"
expect_field runner attempt 1
git -C "$remote" show "ray-gitops/status-$instance:status/runner.yaml" >"$RG_TMP/runner.yaml"
grep -q "$runner_id" "$RG_TMP/runner.yaml" || rg_fail "runner's status forgot attempt 0"
grep -q 'phase: Lost' "$RG_TMP/runner.yaml" || rg_fail "runner's status has no Lost phase"
grep -q 'failure_class: infra' "$RG_TMP/runner.yaml" || rg_fail "runner's attempt 0 has no class"
grep -q 'lost_at: ' "$RG_TMP/runner.yaml" || rg_fail "runner's attempt 0 has no lost_at"
expect_field single phase Lost
expect_field quick phase Succeeded

# --- the pass after that: the new attempt runs; nothing else moves ---
deadline=$((SECONDS + 30))
until [ "$(list_ours)" = "$want_r1 RUNNING" ]; do
  [ $SECONDS -lt $deadline ] || { list_ours >&2; rg_fail "$want_r1 does not run"; }
  sleep 0.2
done
sync_
[ "$(list_ours)" = "$want_r1 RUNNING" ] || { list_ours >&2; rg_fail "the fourth sync changed Ray's jobs"; }
expect_field runner phase Running
expect_field single phase Lost
expect_field quick phase Succeeded
before=$(status_commits)
sync_
[ "$(status_commits)" = "$before" ] || rg_fail "a pass after the dust settled made a status commit"
[ "$(list_ours)" = "$want_r1 RUNNING" ] || rg_fail "the last sync changed Ray's jobs"

# --- history tells the story ---
rg history runner "${repo_flags[@]:0:6}" >"$RG_TMP/history.txt" || rg_fail "history runner failed"
grep -q Lost "$RG_TMP/history.txt" || { cat "$RG_TMP/history.txt" >&2; rg_fail "history lacks Lost"; }
grep -q "$want_r1" "$RG_TMP/history.txt" || rg_fail "history lacks $want_r1"
echo "PASS"
