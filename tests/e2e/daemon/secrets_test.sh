#!/usr/bin/env bash
# Nothing secret leaves (docs/security.md), on the real head: a job that
# prints the Ray token (or, on a head without token auth, a --ray-header value), a cluster env
# var WANDB_API_KEY and a spec env var HF_TOKEN, then fails. Ray appends those log lines to the
# job's message; none of the values may appear in the status branch's history, in `plan`
# (text, markdown, json), in /api/v1/status, on the status page, in the daemon's log or in the
# artifacts, and the recorded message is Ray's first line. Usage:
#   secrets_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
source "$here/daemon_lib.sh"
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-secrets-$RG_RUN_TAG"
rg_on_exit() {
  dmn_kill
  rg_stop_ours "$DMN_INSTANCE"
}

rand() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
wandb_key="wandb-$(rand)"
hf_token="hf_$(rand)"
header_secret="hdr-$(rand)"
webhook_secret="whk-$(rand)"
printf '%s' "$webhook_secret" >"$RG_TMP/webhook-secret"
# The job reads the process's secrets from files, so they are never written into the repo. It
# waits for $go, which this script makes once the first sync is done, so that the daemon
# (which knows every secret, the webhook's included) sees it end and keeps its driver log,
# not the first sync (which is given no webhook secret).
secret_file=$RG_TMP/secrets.txt
go=$RG_TMP/go
{
  [ -n "$RG_TOKEN" ] && echo "RAY_TOKEN_SEEN=$RG_TOKEN"
  echo "HEADER_SEEN=$header_secret"
  echo "WEBHOOK_SEEN=$webhook_secret"
} >"$secret_file"
chmod 600 "$secret_file"
secrets=("$wandb_key" "$hf_token" "$header_secret" "$webhook_secret")
[ -n "$RG_TOKEN" ] && secrets+=("$RG_TOKEN")

shared=$RG_TMP/shared
mkdir -p "$shared"
DMN_REMOTE=$RG_TMP/remote.git
DMN_WORK=$RG_TMP/work
rg_git_remote "$DMN_REMOTE" "$DMN_WORK" "$RG_ADDRESS"
cat >"$DMN_WORK/cluster.yaml" <<YAML
address: $RG_ADDRESS
shared_root: $shared
runtime_env:
  env_vars:
    WANDB_API_KEY: "$wandb_key"
    WANDB_PROJECT: "e2e-secrets"
YAML
mkdir -p "$DMN_WORK/jobs"
cat >"$DMN_WORK/jobs/leaky.yaml" <<YAML
workload: custom
entrypoint: sh -c 'while [ ! -e $go ]; do sleep 0.1; done; env | sort; echo "HF_SEEN=\$HF_TOKEN"; echo "WANDB_SEEN=\$WANDB_API_KEY"; cat $secret_file; exit 1'
entrypoint_num_cpus: 0
env_vars:
  HF_TOKEN: "$hf_token"
  RG_E2E_RUN: "$RG_RUN_TAG"
YAML
dmn_push "a job that prints secrets and fails"

header_args=(--ray-header "X-Rg-E2e=$header_secret")
# 1. One sync submits it; wait until Ray says FAILED, and check Ray's own message holds the
#    secrets (else this test would prove nothing).
rg "${header_args[@]}" sync --repo "$DMN_REMOTE" --cache-dir "$RG_TMP/cache" \
  --instance "$DMN_INSTANCE" --artifacts-root "$shared" >"$RG_TMP/sync1.out" 2>"$RG_TMP/sync1.log"
id=$(dmn_list_ours | awk 'NR == 1 { print $1 }')
[ -n "$id" ] || rg_fail "sync submitted nothing"
touch "$go"
rg_wait_status "$id" FAILED 180 2>/dev/null || true
[ "$(rg_status_of "$id")" = FAILED ] || rg_fail "$id did not fail"
rg_api_get "/api/jobs/$id" >"$RG_TMP/ray-job.json"
for s in "$wandb_key" "$hf_token" "$header_secret"; do
  grep -qF -- "$s" "$RG_TMP/ray-job.json" ||
    rg_fail "Ray's message for $id does not hold the secrets; the test cannot check anything"
done
ray_first_line=$("$RG_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["message"].splitlines()[0].strip())' "$RG_TMP/ray-job.json")

# 2. The daemon records the failure, serves /api/v1/status and the page, logs what it did,
#    and (unless the first sync saw the failure already) keeps the driver log.
DMN_ARTIFACTS_ROOT=$shared
dmn_start "$RG_TMP/daemon.log" "${header_args[@]}" --interval 1s \
  --webhook-secret-file "$RG_TMP/webhook-secret"
status_failed() { dmn_status_file leaky | grep -q '^phase: Failed'; }
dmn_wait 120 "the status branch records leaky as Failed" status_failed >/dev/null
[ "$(dmn_webhook "$webhook_secret")" = 202 ] || rg_fail "a signed webhook was not accepted"
curl -s --max-time 10 "$DMN_URL/api/v1/status" >"$RG_TMP/api.json"
curl -s --max-time 10 "$DMN_URL/" >"$RG_TMP/page.html"
grep -q leaky "$RG_TMP/api.json" || rg_fail "/api/v1/status does not show the job"
dmn_stop

# 3. plan in every format, and a second sync (whose artifacts list the failed job).
for format in text markdown json; do
  set +e
  rg "${header_args[@]}" plan --repo "$DMN_REMOTE" --cache-dir "$RG_TMP/cache" \
    --instance "$DMN_INSTANCE" --format "$format" >"$RG_TMP/plan.$format" 2>>"$RG_TMP/plan.log"
  set -e
  grep -q leaky "$RG_TMP/plan.$format" || rg_fail "plan --format $format does not show the job"
done
printf 'workload: custom\nentrypoint: "true"\nentrypoint_num_cpus: 0\n' >"$DMN_WORK/jobs/after.yaml"
rg_tag_spec "$DMN_WORK/jobs/after.yaml"
dmn_push "one more job, so that a submit writes the job list into its artifacts"
rg "${header_args[@]}" sync --repo "$DMN_REMOTE" --cache-dir "$RG_TMP/cache" \
  --instance "$DMN_INSTANCE" --artifacts-root "$shared" >"$RG_TMP/sync2.out" 2>"$RG_TMP/sync2.log"
grep -rqF "$id" "$shared/jobs" || rg_fail "no artifact lists $id (the check below would be empty)"
# The driver log holds what the job printed, the secrets among it (so the check below sees
# them if they were not redacted).
grep -q "HF_SEEN=" "$shared/jobs/$id/logs/driver.log" ||
  rg_fail "no driver log of $id holds the job's output (the check below would miss it)"

# 4. None of the secrets anywhere we write.
git -C "$DMN_REMOTE" log -p $(dmn_ledger) >"$RG_TMP/status-history.txt"
grep -q "$id" "$RG_TMP/status-history.txt" || rg_fail "the status history does not name $id"
places=("$RG_TMP/status-history.txt" "$RG_TMP/plan.text" "$RG_TMP/plan.markdown"
  "$RG_TMP/plan.json" "$RG_TMP/api.json" "$RG_TMP/page.html" "$RG_TMP/daemon.log"
  "$RG_TMP/sync1.out" "$RG_TMP/sync1.log" "$RG_TMP/sync2.out" "$RG_TMP/sync2.log"
  "$RG_TMP/plan.log")
while IFS= read -r f; do places+=("$f"); done < <(find "$shared/jobs" -type f)
for s in "${secrets[@]}"; do
  for f in "${places[@]}"; do
    if grep -qF -- "$s" "$f"; then
      grep -nF -- "$s" "$f" | head -3 >&2
      rg_fail "a secret (${s:0:4}...) reached $f"
    fi
  done
done
# The driver's log lines that Ray appended (its last ten or so) never leave Ray either.
for f in "$RG_TMP/status-history.txt" "$RG_TMP/plan.markdown" "$RG_TMP/api.json"; do
  if grep -q 'HF_SEEN=\|WANDB_SEEN=' "$f"; then
    rg_fail "the driver's log tail reached $f"
  fi
done

# 5. The status message is Ray's first line.
recorded=$(dmn_status_file leaky | "$RG_PY" -c 'import sys, yaml; print(yaml.safe_load(sys.stdin)["message"])')
[ "$recorded" = "$ray_first_line" ] ||
  rg_fail "recorded message '$recorded' is not Ray's first line '$ray_first_line'"
echo "secrets: ${#secrets[@]} secret values checked in ${#places[@]} places; message: $recorded"
