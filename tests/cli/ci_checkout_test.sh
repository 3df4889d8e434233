#!/usr/bin/env bash
# `plan --repo .` in the checkouts CI makes, against the fake head: a `git clone --depth 1`
# (single branch: no status branch at all locally) and a full clone (the status branch only as
# origin/ray-gitops/status) plan the same actions, for the same reasons, as `plan` on the
# remote itself; with origin unreachable the remote-tracking branch is used; with no status
# branch anywhere the plan says it has no ledger, on stderr and in its output.
# Args: path-to-binary source-dir path-to-fake-ray-server.
set -u
bin=$1
fake=$3
# shellcheck source=tests/cli/lib.sh
source "$2/tests/cli/lib.sh"
start_server address "$fake"

remote=$work/remote.git
git init -q --bare "$remote"
git clone -q "$remote" "$work/person" 2>/dev/null
cd "$work/person" || exit 1
mkdir jobs
printf 'address: %s\n' "$address" >cluster.yaml
# `sleep infinity` runs until stopped, on the fake head as in a shell: the runs stay active
# through every plan below, however long the test takes.
job() { printf 'workload: custom\nentrypoint: sleep infinity\nenv_vars:\n  VERSION: "%s"\n' "$1"; }
job 1 >jobs/a.yaml
job 1 >jobs/b.yaml
git add -A && git commit -qm first && git push -q origin main
# The first sync writes the ledger (ray-gitops/status) on the remote.
"$bin" sync --repo "$remote" --cache-dir "$work/cache" --no-artifacts >/dev/null 2>"$work/sync.err" ||
  fail "the first sync: $(cat "$work/sync.err")"
# The change under review: a edited, c added. Two more commits, so the shallow clone cuts history.
job 2 >jobs/a.yaml
git commit -qam "edit a"
job 1 >jobs/c.yaml
git add -A && git commit -qm "add c" && git push -q origin main

# plan NAME REPO: the actions of `plan -o json` as "action name submission_id reason" lines.
plan() {
  local name=$1
  shift
  "$bin" plan --repo "$@" --cache-dir "$work/cache-$name" -o json >"$work/$name.json" \
    2>"$work/$name.err"
  echo $? >"$work/$name.rc"
  python3 - "$work/$name.json" >"$work/$name.actions" <<'PY' || fail "$name: no JSON plan: $(cat "$work/$name.err")"
import json, sys
for a in json.load(open(sys.argv[1]))["actions"]:
    print(a["action"], a["name"], a["submission_id"], a["reason"])
PY
}

plan remote "$remote"
[[ $(cat "$work/remote.rc") == 2 ]] || fail "plan on the remote: exit $(cat "$work/remote.rc"): $(cat "$work/remote.err")"
grep -q "^submit a .*spec changed" "$work/remote.actions" || fail "the remote's plan does not replace a: $(cat "$work/remote.actions")"
grep -q "^submit c " "$work/remote.actions" || fail "the remote's plan does not submit c"
grep -q "^stop a " "$work/remote.actions" || fail "the remote's plan does not stop a's old run"

git clone -q --depth 1 "file://$remote" "$work/shallow"
[[ -f $work/shallow/.git/shallow ]] || fail "the clone is not shallow"
plan shallow "$work/shallow"
diff "$work/remote.actions" "$work/shallow.actions" >&2 || fail "a shallow clone plans differently"
grep -q "no ledger" "$work/shallow.err" && fail "the shallow clone found no ledger: $(cat "$work/shallow.err")"

git clone -q "$remote" "$work/full"
git -C "$work/full" show-ref --verify -q refs/remotes/origin/ray-gitops/status ||
  fail "the full clone lacks origin/ray-gitops/status"
git -C "$work/full" show-ref --verify -q refs/heads/ray-gitops/status &&
  fail "the full clone has a local status branch"
plan full "$work/full"
diff "$work/remote.actions" "$work/full.actions" >&2 || fail "a full clone plans differently"
# history reads the same ledger in both checkouts.
for clone in full shallow; do
  "$bin" history a --repo "$work/$clone" --cache-dir "$work/cache-h" -o json >"$work/h.out" 2>"$work/h.err" ||
    fail "history in the $clone clone: $(cat "$work/h.err")"
  grep -q '"transitions"' "$work/h.out" || fail "history in the $clone clone: $(cat "$work/h.out")"
done

# origin unreachable (its URL, which names whose runs are ours, unchanged): the remote-tracking
# branch as last fetched, and a warning saying so.
mv "$remote" "$work/away.git"
plan offline "$work/full"
mv "$work/away.git" "$remote"
diff "$work/remote.actions" "$work/offline.actions" >&2 || fail "a clone without its origin plans differently"
grep -q "cannot fetch ray-gitops/status from origin" "$work/offline.err" ||
  fail "no warning that origin could not be reached: $(cat "$work/offline.err")"

# No status branch anywhere: said on stderr and in the plan.
mv "$remote" "$work/away.git"
plan noledger "$work/shallow"
grep -q "no ledger" "$work/noledger.err" || fail "no ledger not said on stderr: $(cat "$work/noledger.err")"
python3 -c "import json,sys; n=json.load(open(sys.argv[1]))['ledger_note']; assert n.startswith('no ledger'), n" \
  "$work/noledger.json" || fail "no ledger not said in the plan"
"$bin" plan --repo "$work/shallow" --cache-dir "$work/cache-text" >"$work/text.out" 2>/dev/null
grep -q "^Note: no ledger" "$work/text.out" || fail "the text plan does not say it has no ledger"
"$bin" history a --repo "$work/shallow" --cache-dir "$work/cache-h2" >/dev/null 2>"$work/h.err" &&
  fail "history without a ledger exited 0"
grep -q "no ledger" "$work/h.err" || fail "history without a ledger: $(cat "$work/h.err")"
mv "$work/away.git" "$remote"

finish "all CI checkout checks passed"
