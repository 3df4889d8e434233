#!/usr/bin/env bash
# Job secrets (docs/operations.md, "Job secrets") on the real head. A job with
# `secrets: {WANDB_API_KEY: wandb-key}` gets the value from --secrets-dir in its environment:
# its entrypoint compares the value's SHA-256 with the expected digest, so the value never
# appears in its command. On a head without token auth (Ray 2.51.1) env delivery is first
# refused by the probe, then allowed by `allow_secrets_without_ray_auth: true`. A missing
# reference freezes only its job, with the reference, the directory and the references present;
# rotating the file starts no run and `plan` exits 0; `node` delivery renders ${WANDB_API_KEY}.
# The value, before and after rotation, and its base64, percent-encoded and JSON-escaped forms
# appear nowhere: the remote's whole history, plan/diff/render in every format, sync's output,
# the daemon's log, its page and /api/v1/status, and the artifacts. Usage:
#   job_secrets_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
source "$here/daemon_lib.sh"
rg_e2e_init "$1" "$2"

DMN_INSTANCE="e2e-jobsec-$RG_RUN_TAG"
rg_on_exit() {
  dmn_kill
  rg_stop_ours "$DMN_INSTANCE"
}

rand() { od -An -N8 -tx1 /dev/urandom | tr -d ' \n'; }
# Characters that every encoding changes: '/', ' ', '"', '+', a non-ASCII letter.
value="wk/$(rand) +\"é$(rand)"
rotated="wk/$(rand) +\"é$(rand)-rotated"
digest() { printf '%s' "$1" | sha256sum | cut -c1-64; }

secrets_dir=$RG_TMP/secrets
mkdir -p "$secrets_dir"
printf '%s\n' "$value" >"$secrets_dir/wandb-key"
chmod 600 "$secrets_dir/wandb-key"

shared=$RG_TMP/shared
mkdir -p "$shared"
DMN_REMOTE=$RG_TMP/remote.git
DMN_WORK=$RG_TMP/work
rg_git_remote "$DMN_REMOTE" "$DMN_WORK" "$RG_ADDRESS"
write_cluster() {
  {
    echo "address: $RG_ADDRESS"
    echo "shared_root: $shared"
    cat
  } >"$DMN_WORK/cluster.yaml"
}
write_cluster </dev/null
mkdir -p "$DMN_WORK/jobs"
# The job fails unless the value it was given is the file's (digest compared, never shown).
cat >"$DMN_WORK/jobs/digest.yaml" <<YAML
workload: custom
entrypoint: sh -c 'test "\$(printf %s "\$WANDB_API_KEY" | sha256sum | cut -c1-64)" = $(digest "$value") && echo digest-ok'
entrypoint_num_cpus: 0
secrets:
  WANDB_API_KEY: wandb-key
YAML
rg_tag_spec "$DMN_WORK/jobs/digest.yaml"
cat >"$DMN_WORK/jobs/missing.yaml" <<YAML
workload: custom
entrypoint: "true"
entrypoint_num_cpus: 0
secrets:
  HF_TOKEN: hf-read
YAML
rg_tag_spec "$DMN_WORK/jobs/missing.yaml"
printf 'workload: custom\nentrypoint: "true"\nentrypoint_num_cpus: 0\n' >"$DMN_WORK/jobs/plain.yaml"
rg_tag_spec "$DMN_WORK/jobs/plain.yaml"
dmn_push "jobs with secrets"

n=0
sync() {  # sync: one pass with the secrets directory; output kept for the checks at the end
  n=$((n + 1))
  local status=0
  rg --secrets-dir "$secrets_dir" sync --repo "$DMN_REMOTE" --cache-dir "$RG_TMP/cache" \
    --instance "$DMN_INSTANCE" --artifacts-root "$shared" >"$RG_TMP/sync$n.out" \
    2>"$RG_TMP/sync$n.log" || status=$?
  echo "$status"
}
id_of() { dmn_status_file "$1" | dmn_field submission_id; }

# 1. A head anyone can read: env delivery refused, with the three ways out; the job without
#    secrets goes on. Then allowed by cluster.yaml.
if [ -z "$RG_TOKEN" ]; then
  sync >/dev/null
  dmn_has_phase digest Invalid || rg_fail "env delivery to an open Jobs API was not refused"
  for words in "without credentials" "RAY_AUTH_MODE=token" "secret_delivery: node" \
    "allow_secrets_without_ray_auth: true"; do
    dmn_status_file digest | grep -qF -- "$words" || rg_fail "the refusal does not say '$words'"
  done
  dmn_has_phase plain Pending || dmn_has_phase plain Running || dmn_has_phase plain Succeeded ||
    rg_fail "the job without secrets was not submitted beside the refused one"
  write_cluster <<<"allow_secrets_without_ray_auth: true"
  dmn_push "allow secrets without Ray's auth"
  echo "Ray without token auth: env delivery refused by the probe, then allowed"
fi

# 2. The value reaches the job; the missing reference freezes its job only.
sync >/dev/null
digest_id=$(id_of digest)
[ -n "$digest_id" ] || rg_fail "digest was not submitted"
rg_wait_status "$digest_id" SUCCEEDED 180
rg_log_has "$digest_id" digest-ok || rg_fail "the job did not see the value"
# Ray holds the value as sent (else the checks below would prove nothing).
rg_api_get "/api/jobs/$digest_id" | "$RG_PY" -c '
import json, sys
sys.exit(json.load(sys.stdin)["runtime_env"]["env_vars"]["WANDB_API_KEY"] != sys.argv[1])' "$value" ||
  rg_fail "Ray does not hold the value in the run's runtime_env"
dmn_has_phase missing Invalid || rg_fail "the job with a missing reference is not frozen"
for words in "secret reference 'hf-read'" "$secrets_dir" "references present: wandb-key"; do
  dmn_status_file missing | grep -qF -- "$words" || rg_fail "the frozen job's record lacks '$words'"
  grep -qF -- "$words" "$RG_TMP/sync$n.log" || rg_fail "sync's log lacks '$words'"
done
[ -n "$(id_of plain)" ] || rg_fail "the job without secrets was not submitted"
[ -z "$(dmn_list_ours | grep -- "-missing-\|^missing-" || true)" ] ||
  rg_fail "the frozen job was submitted"

# 3. The reference appears: the next pass submits it.
printf '%s\n' "hf-$(rand)-$(rand)" >"$secrets_dir/hf-read"
sync >/dev/null
dmn_has_phase missing Invalid && rg_fail "the job stayed frozen once its reference was there"
[ -n "$(id_of missing)" ] || rg_fail "the unfrozen job was not submitted"

# 4. Rotation: no new run, plan has nothing to do.
runs_before=$(dmn_list_ours | wc -l)
printf '%s\n' "$rotated" >"$secrets_dir/wandb-key"
set +e
rg plan --repo "$DMN_REMOTE" --cache-dir "$RG_TMP/cache" --instance "$DMN_INSTANCE" \
  >"$RG_TMP/plan-rotated.text" 2>"$RG_TMP/plan-rotated.log"
plan_status=$?
set -e
[ "$plan_status" = 0 ] || { cat "$RG_TMP/plan-rotated.text" >&2; rg_fail "plan exits $plan_status after a rotation"; }
sync >/dev/null
[ "$(dmn_list_ours | wc -l)" = "$runs_before" ] || rg_fail "a rotation started a run"
[ "$(id_of digest)" = "$digest_id" ] || rg_fail "a rotation replaced the run"

# 5. The daemon: its page, its API and its log, with the rotated value in its directory.
DMN_ARTIFACTS_ROOT=$shared
dmn_start "$RG_TMP/daemon.log" --secrets-dir "$secrets_dir" --interval 1s
dmn_wait_passes 2
curl -s --max-time 10 "$DMN_URL/api/v1/status" >"$RG_TMP/api.json"
curl -s --max-time 10 "$DMN_URL/" >"$RG_TMP/page.html"
grep -q digest "$RG_TMP/api.json" || rg_fail "/api/v1/status does not show the job"
dmn_stop

# 6. What reviewers read: render, plan and diff in every format; node delivery renders
#    ${WANDB_API_KEY}.
for format in yaml json; do
  rg render --repo "$DMN_WORK" jobs/digest.yaml --format "$format" >"$RG_TMP/render.$format"
  grep -qF '<secret:wandb-key>' "$RG_TMP/render.$format" || rg_fail "render -o $format shows no placeholder"
done
for format in text markdown json; do
  set +e
  rg plan --repo "$DMN_REMOTE" --cache-dir "$RG_TMP/cache" --instance "$DMN_INSTANCE" \
    --format "$format" >"$RG_TMP/plan.$format" 2>>"$RG_TMP/plan.log"
  rg diff --repo "$DMN_WORK" HEAD~1 HEAD --format "$format" >"$RG_TMP/diff.$format" 2>>"$RG_TMP/diff.log"
  set -e
done
write_cluster <<<"secret_delivery: node"
rg render --repo "$DMN_WORK" jobs/digest.yaml --format json >"$RG_TMP/render-node.json"
grep -qF '"WANDB_API_KEY": "${WANDB_API_KEY}"' "$RG_TMP/render-node.json" ||
  { cat "$RG_TMP/render-node.json" >&2; rg_fail "node delivery does not render \${WANDB_API_KEY}"; }

# 7. No value, in any form, anywhere we write.
git -C "$DMN_REMOTE" log -p --all >"$RG_TMP/history.txt"
grep -q "$digest_id" "$RG_TMP/history.txt" || rg_fail "the history does not name $digest_id"
grep -rqF "<secret:wandb-key>" "$shared/jobs/$digest_id" ||
  rg_fail "the artifacts of $digest_id do not show the placeholder"
forms=$("$RG_PY" - "$value" "$rotated" <<'PYEOF'
import base64, json, sys, urllib.parse
for v in sys.argv[1:]:
    b = v.encode()
    print(v)
    print(base64.b64encode(b).decode())
    for skip in range(3):
        rest = b[skip:]
        print(base64.b64encode(rest[: len(rest) // 3 * 3]).decode())
    print(urllib.parse.quote(v, safe=""))
    print(urllib.parse.quote(v, safe="").lower())
    print(urllib.parse.quote_plus(v))
    print(json.dumps(v)[1:-1])
    print(json.dumps(v, ensure_ascii=False)[1:-1])
PYEOF
)
places=("$RG_TMP/history.txt" "$RG_TMP/api.json" "$RG_TMP/page.html" "$RG_TMP/daemon.log")
for f in "$RG_TMP"/sync*.out "$RG_TMP"/sync*.log "$RG_TMP"/plan* "$RG_TMP"/diff.* "$RG_TMP"/render*; do
  places+=("$f")
done
while IFS= read -r f; do places+=("$f"); done < <(find "$shared/jobs" -type f)
checked=0
while IFS= read -r form; do
  for f in "${places[@]}"; do
    if grep -qF -- "$form" "$f"; then
      grep -nF -- "$form" "$f" | head -3 >&2
      rg_fail "a form of the secret (${form:0:4}...) reached $f"
    fi
  done
  checked=$((checked + 1))
done <<<"$forms"
echo "job secrets: $checked forms checked in ${#places[@]} places"
