#!/usr/bin/env bash
# Two teams on one shared Ray cluster who both kept the default instance (docs/operations.md):
# repository A and repository B, each with its own jobs and one identical spec. Each side's
# plan and sync name the other repository and the fix, stop and record nothing of the other's,
# and mark the spec whose id the other side holds as Conflict. A moved repository adopts its
# runs only with --previous-repo. The daemon reports the foreign jobs as a warning on /readyz
# (still 200), /api/v1/status, the page and /metrics.
# Args: path-to-binary source-dir path-to-fake-ray-server.
set -euo pipefail
bin=$1
fake=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rg-shared-cluster.XXXXXX")
fake_pid=""
daemon_pid=""
cleanup() {
  if [[ -n $daemon_pid ]]; then kill -9 "$daemon_pid" 2>/dev/null || true; fi
  if [[ -n $fake_pid ]]; then kill "$fake_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
# Only cluster.yaml names the head: nothing from the caller's environment may leak in.
unset RAY_ADDRESS RAY_API_SERVER_ADDRESS RAY_AUTH_TOKEN RAY_JOB_HEADERS

last=""  # the name of the last command run, whose output a failure shows
fail() {
  echo "FAIL: $*" >&2
  if [[ -n $last ]]; then
    echo "--- $last: exit $(cat "$tmp/$last.rc" 2>/dev/null), stdout ---" >&2
    cat "$tmp/$last.out" >&2 2>/dev/null || true
    echo "--- $last: stderr ---" >&2
    cat "$tmp/$last.err" >&2 2>/dev/null || true
  fi
  exit 1
}

# run NAME ARGS...: the binary's stdout, stderr and exit status in $tmp/NAME.{out,err,rc}.
run() {
  last=$1
  shift
  local rc=0
  "$bin" "$@" >"$tmp/$last.out" 2>"$tmp/$last.err" || rc=$?
  echo "$rc" >"$tmp/$last.rc"
}
expect_rc() {
  [[ $(cat "$tmp/$1.rc") == "$2" ]] || fail "$1: exit status $(cat "$tmp/$1.rc"), expected $2"
}
says() {  # NAME TEXT: stdout or stderr of NAME holds TEXT
  grep -qF -- "$2" "$tmp/$1.out" "$tmp/$1.err"
}
expect_says() { says "$1" "$2" || fail "$1: no '$2'"; }
expect_not_says() {
  if says "$1" "$2"; then fail "$1: unexpected '$2'"; fi
}
# The plan table's rows with action stop, and the summary's stop count.
expect_no_stop() {
  if grep -qE '^stop ' "$tmp/$1.out"; then fail "$1: plans a stop"; fi
  grep -qE '^Plan for [0-9a-f]+: [0-9]+ to submit, 0 to stop,' "$tmp/$1.out" ||
    fail "$1: the summary does not say 0 to stop"
}
wait_until() {  # wait_until SECONDS COMMAND...
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# --- one fake Ray head ---
coproc FAKE { exec "$fake"; }
# shellcheck disable=SC2153  # FAKE_PID is set by coproc
fake_pid=$FAKE_PID
read -r port <&"${FAKE[0]}" || true
[[ ${port:-} =~ ^[0-9]+$ ]] || fail "the fake head did not start"
ray=http://127.0.0.1:$port

# Every job in the head with a submission id: "<submission_id> <status> <gitops.name>
# <gitops.managed-by> <gitops.repo>", sorted.
ray_jobs() {
  curl -sf "$ray/api/jobs/" | python3 -c '
import json, sys
for j in sorted(json.load(sys.stdin), key=lambda j: j.get("submission_id") or ""):
    if not j.get("submission_id"):
        continue
    m = j.get("metadata") or {}
    print(j["submission_id"], j["status"], m.get("gitops.name", "-"),
          m.get("gitops.managed-by", "-"), m.get("gitops.repo", "-"))'
}
# expect_active ID NAME REPO: the head runs ID (PENDING or RUNNING) as NAME of the default
# instance recorded under REPO.
expect_active() {
  local line
  line=$(ray_jobs | awk -v id="$1" '$1 == id')
  [[ $line =~ ^$1\ (PENDING|RUNNING)\ $2\ ray-gitops\ (.*)$ && ${BASH_REMATCH[2]} == "$3" ]] ||
    fail "job $1 ($2 of $3) is not active as it was: '${line:-absent}'; all jobs:
$(ray_jobs)"
}

# --- two repositories, both reaching the head through cluster.yaml, both on the default
#     instance; the same shared.yaml in each ---
A=$tmp/team-a.git
B=$tmp/team-b.git
make_repo() {  # make_repo BARE WORK SPEC_NAME ENTRYPOINT_SECONDS...
  local bare=$1 work=$2
  shift 2
  git init -q --bare -b main "$bare"
  git clone -q "$bare" "$work" 2>/dev/null
  git -C "$work" checkout -q -b main
  printf 'address: %s\n' "$ray" >"$work/cluster.yaml"
  mkdir -p "$work/jobs"
  while (($# > 0)); do
    printf 'workload: custom\nentrypoint: sleep %s\n' "$2" >"$work/jobs/$1.yaml"
    shift 2
  done
  git -C "$work" add -A
  git -C "$work" -c user.name=person -c user.email=person@localhost commit -qm "jobs"
  git -C "$work" push -q origin main 2>/dev/null
}
make_repo "$A" "$tmp/work-a" train 600 shared 601
make_repo "$B" "$tmp/work-b" other 602 shared 601
cmp -s "$tmp/work-a/jobs/shared.yaml" "$tmp/work-b/jobs/shared.yaml" ||
  fail "the fixture's shared.yaml differs between the repositories"
cache=(--cache-dir "$tmp/cache")
warn_a="Warning: instance ray-gitops on this cluster is also used by $A (2 jobs); give each repository its own --instance"
warn_b="Warning: instance ray-gitops on this cluster is also used by $B (1 job); give each repository its own --instance"
conflict_a="is taken by a run of $A, another repository using instance ray-gitops on this cluster"

# --- A syncs first: its two jobs run, recorded under A ---
run sync-a1 sync --repo "$A" "${cache[@]}" --no-artifacts
expect_rc sync-a1 0
expect_not_says sync-a1 "also used by"
[[ $(ray_jobs | wc -l) == 2 ]] || fail "sync of A: expected 2 jobs in the head, got:
$(ray_jobs)"
train_id=$(ray_jobs | awk '$3 == "train" { print $1 }')
shared_id=$(ray_jobs | awk '$3 == "shared" { print $1 }')
[[ $train_id == train-* && $shared_id == shared-* ]] || fail "sync of A: no train and shared jobs"
expect_active "$train_id" train "$A"
expect_active "$shared_id" shared "$A"

# --- B plans: A's runs are foreign, named with their count; shared is Conflict naming A;
#     nothing of A's is stopped; exit 2 for other's submit ---
run plan-b plan --repo "$B" "${cache[@]}"
expect_rc plan-b 2
expect_says plan-b "$warn_a"
expect_no_stop plan-b
grep -qE '^submit +other +other-' "$tmp/plan-b.out" || fail "plan-b: other is not planned for submit"
row=$(grep -E '^[a-z]+ +shared ' "$tmp/plan-b.out" || true)
[[ $row == *" Conflict "*"submission id $shared_id $conflict_a"* ]] ||
  fail "plan-b: shared is not Conflict naming A: '$row'"
if grep -qE '^[a-z]+ +train ' "$tmp/plan-b.out"; then fail "plan-b: lists A's job train"; fi
if grep -qE '^(submit|replace) +shared ' "$tmp/plan-b.out"; then fail "plan-b: submits shared"; fi

# --- B syncs: other submitted, A's jobs untouched, the warning printed; B's ledger holds no
#     record of train and a Conflict record of shared naming A ---
run sync-b sync --repo "$B" "${cache[@]}" --no-artifacts
expect_rc sync-b 0
expect_says sync-b "$warn_a"
expect_says sync-b "submitted attempt=0 job=other"
grep -qE 'actions done failed=0 ms=[0-9]+\.[0-9] stops=0 submits=1$' "$tmp/sync-b.err" ||
  fail "sync-b: no 'actions done' line counting its one submit:
$(cat "$tmp/sync-b.err")"
expect_not_says sync-b "job=shared submission_id"
expect_not_says sync-b "job=train"
[[ $(ray_jobs | wc -l) == 3 ]] || fail "sync of B: expected 3 jobs in the head, got:
$(ray_jobs)"
other_id=$(ray_jobs | awk '$3 == "other" { print $1 }')
[[ $other_id == other-* ]] || fail "sync of B: other was not submitted"
expect_active "$train_id" train "$A"
expect_active "$shared_id" shared "$A"
expect_active "$other_id" other "$B"
ledger="ray-gitops/status"
if git -C "$B" cat-file -e "$ledger:status/train.yaml" 2>/dev/null; then
  fail "B's ledger records A's job train"
fi
git -C "$B" cat-file -e "$ledger:status/other.yaml" 2>/dev/null || fail "B's ledger has no record of other"
shared_b=$(git -C "$B" show "$ledger:status/shared.yaml" 2>/dev/null) || fail "B's ledger has no record of shared"
grep -qx 'phase: Conflict' <<<"$shared_b" || fail "B's record of shared is not Conflict: $shared_b"
grep -qF "$conflict_a" <<<"$shared_b" || fail "B's record of shared does not name A: $shared_b"
grep -qE '^attempts: \[\]$' <<<"$shared_b" || fail "B's record of shared holds A's run as an attempt: $shared_b"

# --- A syncs again: keeps its runs, stops nothing of B's, names B ---
run sync-a2 sync --repo "$A" "${cache[@]}" --no-artifacts
expect_rc sync-a2 0
expect_says sync-a2 "$warn_b"
expect_no_stop sync-a2
expect_not_says sync-a2 "submitted "
[[ $(ray_jobs | wc -l) == 3 ]] || fail "the second sync of A changed the jobs in the head:
$(ray_jobs)"
expect_active "$train_id" train "$A"
expect_active "$shared_id" shared "$A"
expect_active "$other_id" other "$B"
git -C "$A" show "$ledger:status/shared.yaml" | grep -qE '^phase: (Pending|Running)$' ||
  fail "A's record of shared is not its run: $(git -C "$A" show "$ledger:status/shared.yaml")"
if git -C "$A" cat-file -e "$ledger:status/other.yaml" 2>/dev/null; then
  fail "A's ledger records B's job other"
fi

# --- plan --format json: the foreign array names A with its count ---
run plan-b-json plan --repo "$B" "${cache[@]}" --format json
expect_rc plan-b-json 0
A="$A" python3 - "$tmp/plan-b-json.out" <<'PY' || fail "plan-b-json: the foreign array or shared's row is wrong"
import json, os, sys
plan = json.load(open(sys.argv[1]))
a = os.environ["A"]
assert plan["foreign"] == [{
    "repo": a, "jobs": 2,
    "message": f"instance ray-gitops on this cluster is also used by {a} (2 jobs); "
               "give each repository its own --instance"}], plan["foreign"]
assert plan["adopted_previous"] == [], plan["adopted_previous"]
assert plan["actions"] == [], plan["actions"]
shared = [j for j in plan["jobs"] if j["name"] == "shared"]
assert len(shared) == 1 and shared[0]["phase"] == "Conflict" and a in shared[0]["message"], shared
assert not [j for j in plan["jobs"] if j["name"] == "train"], plan["jobs"]
PY

# --- moving A: a copy at a new place, as `git clone --bare` makes it. Its origin points back
#     at A, but a bare repository is never a checkout: it is a repository of its own
#     (docs/operations.md), and adopts A's runs only with --previous-repo. ---
A2=$tmp/moved/team-a.git
mkdir -p "$tmp/moved"
git clone -q --bare "$A" "$A2" 2>/dev/null

run plan-moved plan --repo "$A2" "${cache[@]}"
expect_says plan-moved "$warn_a"
expect_says plan-moved "$warn_b"
expect_not_says plan-moved "Note: adopting"
expect_no_stop plan-moved
for name in train shared; do
  row=$(grep -E "^[a-z]+ +$name " "$tmp/plan-moved.out" || true)
  [[ $row == *" Conflict "*"$conflict_a"* ]] || fail "plan-moved: $name is not Conflict naming A: '$row'"
done
if grep -qE '^(submit|replace) ' "$tmp/plan-moved.out"; then fail "plan-moved: submits a run of A's again"; fi

run plan-moved-prev plan --repo "$A2" "${cache[@]}" --previous-repo "$A"
expect_rc plan-moved-prev 0
expect_says plan-moved-prev "Note: adopting 2 runs recorded under $A (--previous-repo)"
expect_says plan-moved-prev "$warn_b"
expect_not_says plan-moved-prev "$warn_a"
expect_not_says plan-moved-prev "Conflict"
grep -qE '^Plan for [0-9a-f]+: 0 to submit, 0 to stop, 2 unchanged$' "$tmp/plan-moved-prev.out" ||
  fail "plan-moved-prev: does not plan to keep both runs and nothing else"
grep -qE "^keep +train +$train_id +(Pending|Running) " "$tmp/plan-moved-prev.out" ||
  fail "plan-moved-prev: train's run is not kept"

# The same repository written another way (file URL, no .git, a trailing slash) is the same.
run plan-moved-url plan --repo "$A2" "${cache[@]}" --previous-repo "file://${A%.git}/"
expect_rc plan-moved-url 0
expect_says plan-moved-url "Note: adopting 2 runs recorded under file://${A%.git}/ (--previous-repo)"

# Credentials in --previous-repo are refused before anything runs, and never echoed.
secret=s3cr3t-previous-0123
run prev-cred plan --repo "$A2" "${cache[@]}" --previous-repo "https://user:$secret@git.example.com/x"
expect_rc prev-cred 1
expect_says prev-cred "--previous-repo: the URL holds credentials"
expect_not_says prev-cred "$secret"
expect_not_says prev-cred "Plan for"

# --- the daemon on B: foreign jobs are a warning, never unreadiness ---
daemon_log=$tmp/daemon.log
last=""
"$bin" run --repo "$B" "${cache[@]}" --no-artifacts --interval 1h --listen 127.0.0.1:0 \
  2>"$daemon_log" >/dev/null &
daemon_pid=$!
dfail() {
  echo "--- daemon log ---" >&2
  cat "$daemon_log" >&2
  fail "$@"
}
log_has() { grep -qE -- "$1" "$daemon_log"; }
wait_until 30 log_has ' started .*port=[0-9]+' || dfail "the daemon did not start"
http="http://127.0.0.1:$(grep -oE ' port=[0-9]+' "$daemon_log" | head -1 | cut -d= -f2)"
readyz_code() { curl -s -o "$tmp/readyz.body" -w '%{http_code}' "$http/readyz" || true; }
ready() { [[ $(readyz_code) == 200 ]]; }
wait_until 60 ready || dfail "/readyz never answered 200 (last: $(readyz_code) $(cat "$tmp/readyz.body"))"
warning_text="instance ray-gitops on this cluster is also used by $A (2 jobs); give each repository its own --instance"
head -1 "$tmp/readyz.body" | grep -qx ok || dfail "/readyz does not say ok: $(cat "$tmp/readyz.body")"
grep -qxF "warning: foreign_jobs: $warning_text" "$tmp/readyz.body" ||
  dfail "/readyz does not list the foreign_jobs warning naming A: $(cat "$tmp/readyz.body")"

curl -sf "$http/api/v1/status" >"$tmp/status.json" || dfail "GET /api/v1/status failed"
WANT="$warning_text" python3 - "$tmp/status.json" <<'PY' || dfail "/api/v1/status lacks the foreign_jobs warning: $(cat "$tmp/status.json")"
import json, os, sys
warnings = json.load(open(sys.argv[1]))["warnings"]
assert {"kind": "foreign_jobs", "message": os.environ["WANT"]} in warnings, warnings
PY

curl -sf "$http/" >"$tmp/page.html" || dfail "GET / failed"
grep -qF "$warning_text" "$tmp/page.html" || dfail "the page does not show the warning"
grep -qF 'data-kind="foreign_jobs"' "$tmp/page.html" || dfail "the page's warning has no kind foreign_jobs"

curl -sf "$http/metrics" >"$tmp/metrics.txt" || dfail "GET /metrics failed"
grep -qxF 'rg_warnings{kind="foreign_jobs"} 1' "$tmp/metrics.txt" ||
  dfail "metrics lack rg_warnings{kind=\"foreign_jobs\"} 1: $(grep rg_warnings "$tmp/metrics.txt")"
grep -qxF 'rg_foreign_jobs 2' "$tmp/metrics.txt" ||
  dfail "metrics lack rg_foreign_jobs 2: $(grep rg_foreign_jobs "$tmp/metrics.txt" || echo none)"
grep -qxF 'rg_ready 1' "$tmp/metrics.txt" || dfail "metrics do not say ready"

# The daemon's pass stopped nothing of A's and left B's run alone.
expect_active "$train_id" train "$A"
expect_active "$shared_id" shared "$A"
expect_active "$other_id" other "$B"
[[ $(ray_jobs | wc -l) == 3 ]] || dfail "the daemon changed the jobs in the head: $(ray_jobs)"

kill -TERM "$daemon_pid"
exited() { ! kill -0 "$daemon_pid" 2>/dev/null; }
wait_until 30 exited || dfail "the daemon did not exit within 30 s of SIGTERM"
code=0
wait "$daemon_pid" || code=$?
daemon_pid=""
[[ $code == 0 ]] || dfail "the daemon exited $code after SIGTERM, expected 0"
log_has ' stopped' || dfail "no stopped line in the daemon's log"
echo "all shared-cluster checks passed"
