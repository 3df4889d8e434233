#!/usr/bin/env bash
# Adoption checks what it adopts (docs/reconcile.md, "Adoption"): a job planted in Ray under the
# id `render` predicts, with ray-gitops's labels forged and another entrypoint, is a Conflict
# naming the job; `sync` never records it as the spec's run, never submits over it and never
# stops it. A job submitted by hand with only a `gitops.managed-by` label, or with a repository
# but no `gitops.spec-hash`, is never stopped or deleted, even by `sync --gc-finished-after`.
# Usage: adoption_test.sh RAY_GITOPS_BINARY SOURCE_DIR [FAKE_RAY_SERVER_BINARY]
# With the third argument the test starts its own fake head instead of using the real one
# named by $RG_E2E_RAY_STATE_DIR.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=../lib.sh
source "$here/../lib.sh"
if [ $# -ge 3 ]; then rg_e2e_fake_head "$3"; fi
rg_e2e_init "$1" "$2"
# shellcheck source=../daemon/daemon_lib.sh
source "$here/../daemon/daemon_lib.sh"

# An instance of its own: no other test's jobs are within its reach on a shared head.
DMN_INSTANCE="e2e-adopt-$RG_RUN_TAG"
hand_running="e2e-hand-running-$RG_RUN_TAG"
hand_no_hash="e2e-hand-nohash-$RG_RUN_TAG"
rg_on_exit() {
  rg_stop_ours "$DMN_INSTANCE"
  rg stop "$hand_running" >/dev/null 2>&1 || true
}

sync_() {
  rg sync --repo "$DMN_REMOTE" --cache-dir "$RG_TMP/cache" --instance "$DMN_INSTANCE" \
    --no-artifacts --gc-finished-after 1s >"$RG_TMP/sync.out" 2>&1 || true
}

# post BODY_FILE: POST /api/jobs/ with the JSON in BODY_FILE, as anyone with access to Ray can.
post() {
  RG_API_ADDRESS=$RG_ADDRESS RG_API_TOKEN=$RG_TOKEN "$RG_PY" - "$1" <<'PYEOF'
import os, sys, urllib.request
headers = {"User-Agent": "ray-gitops-e2e", "Content-Type": "application/json"}
if os.environ["RG_API_TOKEN"]:
    headers["Authorization"] = "Bearer " + os.environ["RG_API_TOKEN"]
with open(sys.argv[1], "rb") as f:
    body = f.read()
req = urllib.request.Request(os.environ["RG_API_ADDRESS"] + "/api/jobs/", data=body,
                             headers=headers, method="POST")
with urllib.request.urlopen(req, timeout=60) as resp:
    resp.read()
PYEOF
}

dmn_init_repo
dmn_spec train "sleep 300"
dmn_push "a spec whose id anyone can predict"

# --- the render ray-gitops will submit, planted first with another entrypoint ---
rg render --repo "$DMN_WORK" jobs/train.yaml --format json --instance "$DMN_INSTANCE" \
  >"$RG_TMP/render.json"
"$RG_PY" - "$RG_TMP/render.json" "$RG_TMP/planted.json" "$DMN_INSTANCE" "$DMN_REMOTE" <<'PYEOF'
import json, sys
body = json.load(open(sys.argv[1]))
body["entrypoint"] = "echo PWNED"
body["metadata"]["gitops.managed-by"] = sys.argv[3]
body["metadata"]["gitops.repo"] = sys.argv[4]
json.dump(body, open(sys.argv[2], "w"))
PYEOF
id=$("$RG_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["submission_id"])' \
  "$RG_TMP/render.json")
post "$RG_TMP/planted.json"
rg_wait_status "$id" SUCCEEDED

# --- two jobs by hand with some of the labels ---
printf '{"entrypoint": "sleep 300", "submission_id": "%s", "metadata": {"gitops.managed-by": "%s", "gitops.name": "gone"}}' \
  "$hand_running" "$DMN_INSTANCE" >"$RG_TMP/hand1.json"
printf '{"entrypoint": "true", "submission_id": "%s", "metadata": {"gitops.managed-by": "%s", "gitops.repo": "%s", "gitops.name": "train"}}' \
  "$hand_no_hash" "$DMN_INSTANCE" "$DMN_REMOTE" >"$RG_TMP/hand2.json"
post "$RG_TMP/hand1.json"
post "$RG_TMP/hand2.json"
rg_wait_status "$hand_running" RUNNING
rg_wait_status "$hand_no_hash" SUCCEEDED

# ended_past_gc ID: job ID ended longer ago than sync_'s --gc-finished-after (1s), on the clock
# its end_time is on (this machine's, for the heads these tests start).
ended_past_gc() {
  rg_api_get "/api/jobs/$1" | "$RG_PY" -c '
import json, sys, time
end = json.load(sys.stdin).get("end_time") or 0
sys.exit(0 if end and time.time() * 1000 - end > 1000 else 1)'
}
# So that every sync below would delete it, were it ours.
waited=0
until ended_past_gc "$hand_no_hash"; do
  waited=$((waited + 1))
  [ "$waited" -lt 100 ] || rg_fail "$hand_no_hash: no end_time older than 1s after 20s"
  sleep 0.2
done

for pass in 1 2; do
  sync_
  record=$(dmn_status_file train) || rg_fail "pass $pass: no status file for train"
  phase=$(printf '%s\n' "$record" | dmn_field phase)
  [ "$phase" = Conflict ] || { cat "$RG_TMP/sync.out" >&2; rg_fail "pass $pass: train is $phase, expected Conflict"; }
  printf '%s\n' "$record" | grep -qF "submission id $id" || rg_fail "pass $pass: the message does not name $id"
  printf '%s\n' "$record" | grep -qF "its entrypoint differs" || rg_fail "pass $pass: the message does not say the entrypoint differs"
  if printf '%s\n' "$record" | grep -qF PWNED; then rg_fail "pass $pass: the record shows the planted entrypoint"; fi
  printf '%s\n' "$record" | "$RG_PY" -c '
import sys, yaml
record = yaml.safe_load(sys.stdin)
ids = [a.get("submission_id") for a in (record.get("attempts") or [])]
sys.exit(1 if sys.argv[1] in ids else 0)' "$id" || rg_fail "pass $pass: the planted job is recorded as an attempt"
  [ "$(rg_status_of "$id")" = SUCCEEDED ] || rg_fail "pass $pass: the planted job is gone or changed"
  [ "$(rg_status_of "$hand_running")" = RUNNING ] || rg_fail "pass $pass: the hand job was stopped"
  [ "$(rg_status_of "$hand_no_hash")" = SUCCEEDED ] || rg_fail "pass $pass: the hand job without a spec hash was deleted"
done
echo "ok: a planted job is a Conflict, never adopted, stopped or submitted over; hand jobs are left alone"
