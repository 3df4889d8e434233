#!/usr/bin/env bash
# The pull-request review recipe (hooks/ci/ray-gitops-review, run by hooks/ci/github-actions.yml
# and hooks/ci/gitlab-ci.yml) run as CI runs it: in a shallow checkout of the change, against a
# local bare repository and a local HTTP stand-in for the GitHub and GitLab comment APIs that
# records every call. The first run creates ONE comment; a run after the next push updates that
# same comment; an invalid spec fails the check and still updates the comment. With
# RAY_GITOPS_PLAN=1, plan talks to the CI's RAY_ADDRESS (with the token), never to the
# cluster.yaml address of the change, which points at a listener recording every request; with
# no RAY_ADDRESS, plan is skipped and the comment says why. As in the image (no git): a full
# checkout reviews, a shallow one fails with the hint to check out the history; a checkout
# another user owns (as root, and root's checkout as the image's user) is trusted in a private
# HOME, logged in one line and removed at the end; an unset HOME gets a private one too.
# Args: path-to-binary source-dir.
set -u
bin=$1
src=$2
# shellcheck source=tests/cli/lib.sh
source "$src/tests/cli/lib.sh"
token=ci-recipe-token-0123456789
start_server api python3 "$src/tests/cli/comment_api_stub.py" "$work/calls.jsonl" "$token"
# Where the change's cluster.yaml points, and the head the CI's RAY_ADDRESS names.
start_server pointed python3 "$src/tests/cli/request_recorder.py" "$work/pointed.jsonl"
start_server ray python3 "$src/tests/cli/request_recorder.py" "$work/ray.jsonl"
touch "$work/pointed.jsonl" "$work/ray.jsonl"
ray_token=ci-recipe-ray-token-24680

remote=$work/remote.git
git init -q --bare "$remote"
git clone -q "$remote" "$work/person" 2>/dev/null
cd "$work/person" || exit 1
mkdir jobs
printf 'address: %s\n' "$pointed" >cluster.yaml
printf 'workload: custom\nentrypoint: python train.py --steps 100\n' >jobs/a.yaml
git add -A && git commit -qm base && git push -q origin main
git checkout -qb feature
printf 'workload: custom\nentrypoint: python train.py --steps 200\n' >jobs/a.yaml
printf 'workload: custom\nentrypoint: python eval.py\n' >jobs/b.yaml
git add -A && git commit -qm "more steps, an eval" && git push -q origin feature

# review NAME ENV...: a fresh shallow checkout of feature, then the recipe in it with only the
# given CI variables; its exit status in $work/NAME.rc.
review() {
  local name=$1
  shift
  rm -rf "$work/ci"
  git clone -q --depth 1 --branch feature "file://$remote" "$work/ci"
  (cd "$work/ci" && env -i PATH="$PATH" HOME="$HOME" RAY_GITOPS="$bin" "$@" \
    python3 "$src/hooks/ci/ray-gitops-review" >"$work/$name.out" 2>"$work/$name.err")
  echo $? >"$work/$name.rc"
}
# calls METHOD: how many recorded calls used METHOD.
calls() { grep -c "\"method\": \"$1\"" "$work/calls.jsonl" || true; }
# thread URL: the comments the stand-in holds there, as JSON.
thread() {
  python3 - "$1" "$token" <<'PY'
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
print(json.dumps(json.load(urllib.request.urlopen(req))))
PY
}

echo '{"pull_request": {"number": 7}}' >"$work/event.json"
github=(GITHUB_ACTIONS=true GITHUB_API_URL="$api" GITHUB_REPOSITORY=org/repo
  GITHUB_EVENT_PATH="$work/event.json" GITHUB_BASE_REF=main GITHUB_TOKEN="$token")
github_thread=$api/repos/org/repo/issues/7/comments

# --- GitHub: the first run creates the comment ---
review gh1 "${github[@]}"
[[ $(cat "$work/gh1.rc") == 0 ]] || fail "first GitHub run: exit $(cat "$work/gh1.rc"): $(cat "$work/gh1.err")"
[[ $(calls POST) == 1 ]] || fail "first GitHub run: $(calls POST) comments created, expected 1"
[[ $(calls PATCH) == 0 ]] || fail "first GitHub run updated a comment"
thread "$github_thread" >"$work/t1.json"
python3 - "$work/t1.json" <<'PY' || fail "the GitHub comment after the first run"
import json, sys
items = json.load(open(sys.argv[1]))
assert len(items) == 1, items
body = items[0]["body"]
assert "<!-- ray-gitops-review -->" in body
assert "**validate:** every file is valid." in body, body
assert "**Runs change:**" in body and "| replace | a |" in body and "| submit | b |" in body, body
assert "+ --steps" not in body and "+ 200" in body, body
PY
grep -q "$token" "$work/gh1.out" "$work/gh1.err" && fail "the token was printed"

# --- the next push: the same comment is updated, no second one ---
cd "$work/person" || exit 1
printf 'workload: custom\nentrypoint: python eval.py --full\n' >jobs/b.yaml
git commit -qam "full eval" && git push -q origin feature
review gh2 "${github[@]}"
[[ $(cat "$work/gh2.rc") == 0 ]] || fail "second GitHub run: exit $(cat "$work/gh2.rc"): $(cat "$work/gh2.err")"
[[ $(calls POST) == 1 ]] || fail "second GitHub run created another comment"
[[ $(calls PATCH) == 1 ]] || fail "second GitHub run: $(calls PATCH) updates, expected 1"
grep '"PATCH"' "$work/calls.jsonl" | grep -q '"path": "/repos/org/repo/issues/comments/1001"' ||
  fail "the update went elsewhere: $(grep PATCH "$work/calls.jsonl")"
thread "$github_thread" | grep -q -- "+ --full" || fail "the comment does not show the new push"

# --- plan: against the CI's RAY_ADDRESS with the token, never the change's cluster.yaml ---
review plan1 "${github[@]}" RAY_GITOPS_DRY_RUN=1 RAY_GITOPS_PLAN=1 RAY_ADDRESS="$ray" \
  RAY_AUTH_TOKEN="$ray_token"
grep -q "Bearer $ray_token" "$work/ray.jsonl" || fail "plan did not reach RAY_ADDRESS with the token: $(cat "$work/plan1.err")"
grep -q "### plan against the cluster" "$work/plan1.out" || fail "plan1: no plan: $(cat "$work/plan1.out")"
grep -q "$ray_token" "$work/plan1.out" "$work/plan1.err" && fail "plan1 printed the Ray token"
review plan2 "${github[@]}" RAY_GITOPS_DRY_RUN=1 RAY_GITOPS_PLAN=1 RAY_AUTH_TOKEN="$ray_token"
[[ $(cat "$work/plan2.rc") == 0 ]] || fail "plan2: exit $(cat "$work/plan2.rc"): $(cat "$work/plan2.err")"
grep -q "plan skipped" "$work/plan2.out" || fail "no RAY_ADDRESS: the comment does not say plan was skipped: $(cat "$work/plan2.out")"
grep -q "RAY_ADDRESS" "$work/plan2.out" || fail "no RAY_ADDRESS: the comment does not name it"
[[ -s $work/pointed.jsonl ]] && fail "the change's cluster.yaml address was contacted: $(cat "$work/pointed.jsonl")"

# --- an invalid spec: the check fails, the comment says why ---
cd "$work/person" || exit 1
printf 'workload: custom\nentrypont: python eval.py\n' >jobs/b.yaml
git commit -qam "typo" && git push -q origin feature
review gh3 "${github[@]}"
[[ $(cat "$work/gh3.rc") == 1 ]] || fail "invalid spec: exit $(cat "$work/gh3.rc"), expected 1"
[[ $(calls POST) == 1 ]] || fail "invalid spec: another comment was created"
thread "$github_thread" | grep -q "jobs/b.yaml:2:1" || fail "the comment does not name the invalid file"

# --- GitLab: a note on the merge request, created once, then updated ---
gitlab=(GITLAB_CI=true CI_API_V4_URL="$api/api/v4" CI_PROJECT_ID=42 CI_MERGE_REQUEST_IID=3
  CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main RAY_GITOPS_GITLAB_TOKEN="$token")
review gl1 "${gitlab[@]}"
[[ $(calls POST) == 2 ]] || fail "first GitLab run: no note created: $(cat "$work/gl1.err")"
review gl2 "${gitlab[@]}"
[[ $(calls POST) == 2 ]] || fail "second GitLab run created another note"
[[ $(calls PUT) == 1 ]] || fail "second GitLab run: $(calls PUT) updates, expected 1"
grep '"PUT"' "$work/calls.jsonl" | grep -q '"path": "/api/v4/projects/42/merge_requests/3/notes/1002"' ||
  fail "the GitLab update went elsewhere: $(grep PUT "$work/calls.jsonl")"

# --- refused credentials: the check fails and says so ---
review bad "${github[@]/GITHUB_TOKEN=$token/GITHUB_TOKEN=wrong}"
[[ $(cat "$work/bad.rc") == 1 ]] || fail "a refused token: exit $(cat "$work/bad.rc")"
grep -q "cannot post the review comment" "$work/bad.err" || fail "a refused token: $(cat "$work/bad.err")"

# --- the image: no git, a checkout another user owns, a HOME that cannot be written ---
# The image has python3 and ray-gitops but no git; its python3 is Debian's.
nogit=$work/nogit-bin
mkdir -p "$nogit"
system_python=/usr/bin/python3
[[ -x $system_python ]] || system_python=$(python3 -c 'import sys; print(sys.executable)')
ln -s "$system_python" "$nogit/python3"
cp "$bin" "$work/ray-gitops"
chmod 755 "$work" "$work/ray-gitops"
PATH=$nogit type -P git >/dev/null && fail "git is on the image-like PATH"

# image_review NAME CHECKOUT [PREFIX...] -- ENV...: the recipe in CHECKOUT with only PATH=$nogit
# (no git) and the given CI variables, its temporary files in a TMPDIR of its own, run under
# PREFIX (setpriv ...) when given; stdout, stderr, exit status in $work/NAME.{out,err,rc}.
image_review() {
  local name=$1 dir=$2 prefix=()
  shift 2
  while [[ $1 != -- ]]; do prefix+=("$1"); shift; done
  shift
  mkdir -p "$work/$name.tmp"
  chmod 1777 "$work/$name.tmp"
  (cd "$dir" && "${prefix[@]}" env -i PATH="$nogit" TMPDIR="$work/$name.tmp" \
    RAY_GITOPS="$work/ray-gitops" RAY_GITOPS_DRY_RUN=1 "$@" \
    "$nogit/python3" "$src/hooks/ci/ray-gitops-review" >"$work/$name.out" 2>"$work/$name.err")
  echo $? >"$work/$name.rc"
}
# left_behind NAME: the run left nothing in its TMPDIR (its private HOME is gone).
left_behind() {
  [[ -z $(ls -A "$work/$1.tmp") ]] || fail "$1 left its private HOME behind: $(ls -A "$work/$1.tmp")"
}
diffed() {
  [[ $(cat "$work/$1.rc") == 0 ]] || fail "$1: exit $(cat "$work/$1.rc"): $(cat "$work/$1.err") $(cat "$work/$1.out")"
  grep -q "| replace | a |" "$work/$1.out" || fail "$1: no diff in the comment: $(cat "$work/$1.out")"
}

# A full checkout (fetch-depth: 0) holds origin/main: no git needed. HOME is unset, as for
# `docker run --user UID` with a uid the image does not know: a private HOME, then removed.
cd "$work/person" || exit 1
printf 'workload: custom\nentrypoint: python eval.py --full\n' >jobs/b.yaml
git commit -qam "typo fixed" && git push -q origin feature
git clone -q --branch feature "file://$remote" "$work/full"
image_review nogit "$work/full" -- "${github[@]}"
diffed nogit
grep -q "HOME (unset) cannot be written: a private HOME" "$work/nogit.err" ||
  fail "nogit: the private HOME is not logged: $(cat "$work/nogit.err")"
left_behind nogit

# A cancelled job (SIGTERM while ray-gitops runs) removes its private HOME too.
# The stand-in ray-gitops says it runs (its pid, inside the private HOME's lifetime), then waits
# to be stopped; the test stops it itself afterwards, whatever the script did with it.
printf '#!/bin/sh\necho $$ >"%s"\nexec /bin/sleep 600\n' "$work/slow.pid" >"$work/slow"
chmod 755 "$work/slow"
mkdir -p "$work/cancel.tmp"
(cd "$work/full" && exec env -i PATH="$nogit" TMPDIR="$work/cancel.tmp" RAY_GITOPS="$work/slow" \
  RAY_GITOPS_DRY_RUN=1 "${github[@]}" "$nogit/python3" "$src/hooks/ci/ray-gitops-review" \
  >"$work/cancel.out" 2>"$work/cancel.err") &
cancelled=$!
# Wait until ray-gitops runs (the script made its HOME before), or the script ended early.
for _ in $(seq 600); do
  [[ -s $work/slow.pid ]] && break
  kill -0 "$cancelled" 2>/dev/null || break
  sleep 0.1
done
[[ -s $work/slow.pid ]] || fail "cancel: ray-gitops never ran: $(cat "$work/cancel.err")"
[[ -n $(ls -A "$work/cancel.tmp") ]] || fail "cancel: no private HOME was made: $(cat "$work/cancel.err")"
kill -TERM "$cancelled"
status=0
wait "$cancelled" || status=$?
kill "$(cat "$work/slow.pid")" 2>/dev/null || true
[[ $status == 143 ]] || fail "cancel: the script did not exit on SIGTERM with 143 (exit $status)"
left_behind cancel

# A shallow checkout without git: the base cannot be fetched; the comment says what to do.
rm -rf "$work/shallow" && git clone -q --depth 1 --branch feature "file://$remote" "$work/shallow"
image_review shallow "$work/shallow" -- HOME="$work/shallow" "${github[@]}"
[[ $(cat "$work/shallow.rc") == 1 ]] || fail "shallow without git: exit $(cat "$work/shallow.rc")"
grep -q "fetch-depth: 0" "$work/shallow.out" || fail "shallow without git: no hint: $(cat "$work/shallow.out")"
grep -q "private HOME" "$work/shallow.err" && fail "shallow: a private HOME with a writable HOME of one's own"

if [[ $(id -u) == 0 ]]; then
  # As root on a checkout another user owns (a container on a mounted checkout): trusted as
  # the CI's own, in a private HOME that includes the user's own .gitconfig, then removed.
  rm -rf "$work/owned" && git clone -q --branch feature "file://$remote" "$work/owned"
  mkdir -p "$work/roothome"
  printf '[core]\n\tabbrev = 12\n' >"$work/roothome/.gitconfig"
  chown -R 4242:4242 "$work/owned"
  image_review owned "$work/owned" -- HOME="$work/roothome" "${github[@]}"
  diffed owned
  grep -q "the checkout $work/owned is owned by uid 4242, not by this user (uid 0): trusted" "$work/owned.err" ||
    fail "owned: the trust is not logged: $(cat "$work/owned.err")"
  [[ $(grep -c . "$work/owned.err") == 1 ]] || fail "owned: more than one line logged: $(cat "$work/owned.err")"
  left_behind owned
  [[ $(ls -A "$work/roothome") == .gitconfig ]] || fail "owned: the user's HOME was written: $(ls -A "$work/roothome")"
  # The same with git on PATH (a runner of one's own): git is told too.
  rm -rf "$work/ci" && git clone -q --depth 1 --branch feature "file://$remote" "$work/ci"
  chown -R 4242:4242 "$work/ci"
  (cd "$work/ci" && env -i PATH="$PATH" HOME="$work/roothome" TMPDIR="$work/owned.tmp" \
    RAY_GITOPS="$bin" RAY_GITOPS_DRY_RUN=1 "${github[@]}" \
    python3 "$src/hooks/ci/ray-gitops-review" >"$work/owned_git.out" 2>"$work/owned_git.err")
  echo $? >"$work/owned_git.rc"
  diffed owned_git
  grep -q "cannot fetch" "$work/owned_git.err" && fail "owned_git: git refused the checkout: $(cat "$work/owned_git.err")"
  left_behind owned
  # GitLab: the helper clones as root, the job runs as the image's user.
  rm -rf "$work/gitlab" && git clone -q --branch feature "file://$remote" "$work/gitlab"
  base_sha=$(git -C "$work/gitlab" rev-parse origin/main)
  chmod -R a+rX "$work/gitlab"
  image_review gitlab "$work/gitlab" setpriv --reuid 65532 --regid 65532 --clear-groups -- \
    HOME=/nonexistent "${gitlab[@]}" CI_MERGE_REQUEST_DIFF_BASE_SHA="$base_sha"
  diffed gitlab
  grep -q "owned by uid 0, not by this user (uid 65532): trusted" "$work/gitlab.err" ||
    fail "gitlab: the trust is not logged: $(cat "$work/gitlab.err")"
  left_behind gitlab
else
  echo "not root: the checkouts another user owns were not tried"
fi

finish "all review recipe checks passed"
