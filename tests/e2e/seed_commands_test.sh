#!/usr/bin/env bash
# The seed's one-off commands against the real head: submit (with artifacts, and a second
# submit refused), status, logs, list, stop, by id and by name, and logs of a PENDING job.
# Usage: seed_commands_test.sh RAY_GITOPS_BINARY SOURCE_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rg_e2e_init "$@"

shared=$RG_TMP/shared
mkdir -p "$shared" "$RG_TMP/repo/jobs/smoke"
secret="e2e-secret-$RANDOM$RANDOM"
rg_write_cluster "$shared" "$RG_TMP/repo/cluster.yaml" <<EOF_CLUSTER
entrypoint_num_cpus: 1
entrypoint_resources:
  worker_node: 1
runtime_env:
  env_vars:
    GREETING: hi there
    MY_API_TOKEN: $secret
EOF_CLUSTER
cat >"$RG_TMP/repo/jobs/smoke/hello.yaml" <<'EOF_SPEC'
workload: custom
entrypoint: echo "greeting=$GREETING"; echo "pythonpath=$PYTHONPATH"; echo last-line
EOF_SPEC
rg_tag_spec "$RG_TMP/repo/jobs/smoke/hello.yaml"

# --- submit: prints the id, the run succeeds ---
id=$(rg submit --config "$RG_TMP/repo/cluster.yaml" --jobspec "$RG_TMP/repo/jobs/smoke/hello.yaml" \
  2>"$RG_TMP/submit.err") || { cat "$RG_TMP/submit.err" >&2; rg_fail "submit exited non-zero"; }
[[ "$id" =~ ^smoke-hello-[0-9a-f]{10}-cli$ ]] || rg_fail "unexpected submission id '$id'"
rg_wait_status "$id" SUCCEEDED 180

# --- status: times in RFC 3339 UTC, exit code, owner ---
rg status "$id" >"$RG_TMP/status.out"
grep -qx "status: SUCCEEDED" "$RG_TMP/status.out" || rg_fail "status: $(cat "$RG_TMP/status.out")"
grep -Eqx "start_time: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z" "$RG_TMP/status.out" ||
  rg_fail "start_time not RFC 3339 UTC: $(cat "$RG_TMP/status.out")"
grep -qx "driver_exit_code: 0" "$RG_TMP/status.out" || rg_fail "no driver exit code 0"
grep -qx "managed_by: cli" "$RG_TMP/status.out" || rg_fail "not shown as a one-off (cli) run"
missing="does-not-exist-$RANDOM"
if rg status "$missing" >/dev/null 2>"$RG_TMP/missing.err"; then rg_fail "status of a missing job exited 0"; fi
grep -qx "ray-gitops: no job named $missing or with id $missing in Ray at $RG_ADDRESS" "$RG_TMP/missing.err" ||
  rg_fail "status of a missing job: $(cat "$RG_TMP/missing.err")"

# --- status by name: the name's latest run (this run's, the newest smoke-hello on the head) ---
rg status smoke-hello >"$RG_TMP/status-name.out"
grep -qx "submission_id: $id" "$RG_TMP/status-name.out" || rg_fail "status smoke-hello: $(cat "$RG_TMP/status-name.out")"
grep -qx "name: smoke-hello" "$RG_TMP/status-name.out" || rg_fail "status by name lacks the name"
rg status smoke-hello -o json | "$RG_PY" -c '
import json, sys
job = json.load(sys.stdin)
assert job["submission_id"] == sys.argv[1] and job["name"] == "smoke-hello", job
assert job["status"] == "SUCCEEDED" and job["attempt"] == 0 and job["driver_exit_code"] == 0, job
assert job["submitted_by"] == "cli" and job["start_time"].endswith("Z"), job
' "$id" || rg_fail "status smoke-hello -o json"

# --- logs: the output is there; --tail 1 gives the last line only ---
rg logs "$id" >"$RG_TMP/logs.out"
grep -qx "greeting=hi there" "$RG_TMP/logs.out" || rg_fail "logs lack the greeting: $(cat "$RG_TMP/logs.out")"
grep -q "^pythonpath=$shared/user/code:" "$RG_TMP/logs.out" ||
  rg_fail "PYTHONPATH lacks user_code_path: $(grep pythonpath "$RG_TMP/logs.out")"
rg logs smoke-hello >"$RG_TMP/logs-name.out" 2>"$RG_TMP/logs-name.err"
cmp -s "$RG_TMP/logs.out" "$RG_TMP/logs-name.out" || rg_fail "logs smoke-hello differs from logs $id"
grep -qx "ray-gitops: logs of $id, the latest run of smoke-hello" "$RG_TMP/logs-name.err" ||
  rg_fail "logs by name does not say which run: $(cat "$RG_TMP/logs-name.err")"
# Ray writes its own "Running entrypoint ..." line into the same log, before or after the
# job's output: the last line is whichever came last.
rg logs "$id" --tail 1 >"$RG_TMP/tail.out"
[ "$(wc -l <"$RG_TMP/tail.out")" = 1 ] && [ "$(cat "$RG_TMP/tail.out")" = "$(tail -n 1 "$RG_TMP/logs.out")" ] ||
  rg_fail "logs --tail 1 is not the last line: '$(cat "$RG_TMP/tail.out")'"
rg logs "$id" --follow >"$RG_TMP/follow.out"  # a finished job: prints all and returns
grep -qx "last-line" "$RG_TMP/follow.out" || rg_fail "logs --follow of a finished job"

# --- list: table and JSON, with the name and managed-by columns ---
rg list | grep -E "^$id +smoke-hello +SUCCEEDED +SUBMISSION +cli " >/dev/null ||
  rg_fail "list: $(rg list)"
rg list -o json | "$RG_PY" -c '
import json, sys
jobs = {j["submission_id"]: j for j in json.load(sys.stdin)}
job = jobs[sys.argv[1]]
assert job["status"] == "SUCCEEDED" and job["managed_by"] is None, job
assert job["submitted_by"] == "cli" and job["name"] == "smoke-hello", job
assert job["metadata"]["gitops.name"] == "smoke-hello", job
' "$id" || rg_fail "list -o json"
"$RG_BIN" render --repo "$RG_TMP/repo" jobs/smoke/hello.yaml -o json | "$RG_PY" -c '
import json, sys
assert json.load(sys.stdin)["metadata"]["gitops.name"] == "smoke-hello"
' || rg_fail "render -o json"

# --- artifacts: the tree of docs/artifacts.md, the exact body, no secrets ---
dir=$shared/jobs/$id
for f in config/ray_config.yaml config/jobspec.yaml config/submit_payload.json logs/submit.out \
  debug/ray_status_pre.txt debug/ray_job_list_post.txt; do
  [ -s "$dir/$f" ] || rg_fail "artifact $f missing or empty"
done
cmp -s "$dir/config/jobspec.yaml" "$RG_TMP/repo/jobs/smoke/hello.yaml" || rg_fail "jobspec.yaml differs"
grep -q "GREETING: hi there" "$dir/config/ray_config.yaml" || rg_fail "ray_config.yaml"
grep -q "worker_node" "$dir/debug/ray_status_pre.txt" || rg_fail "ray_status_pre.txt lacks resources"
grep -q "^$id PENDING\|^$id RUNNING\|^$id SUCCEEDED" "$dir/debug/ray_job_list_post.txt" ||
  rg_fail "ray_job_list_post.txt lacks the job: $(cat "$dir/debug/ray_job_list_post.txt")"
grep -qx "outcome: submitted" "$dir/logs/submit.out" || rg_fail "submit.out: $(cat "$dir/logs/submit.out")"
grep -qx "ray_address: $RG_ADDRESS" "$dir/logs/submit.out" || rg_fail "submit.out lacks the address"
rg_api_get "/api/jobs/$id" >"$RG_TMP/ray_job.json"
"$RG_PY" - "$dir/config/submit_payload.json" "$RG_TMP/ray_job.json" "$secret" <<'PYEOF' || rg_fail "submit_payload.json is not the body Ray holds"
import json, sys
payload = json.load(open(sys.argv[1]))
ray = json.load(open(sys.argv[2]))
secret = sys.argv[3]
assert payload["entrypoint"] == ray["entrypoint"], (payload["entrypoint"], ray["entrypoint"])
assert payload["metadata"] == ray["metadata"], (payload["metadata"], ray["metadata"])
assert payload["submission_id"] == ray["submission_id"]
# The artifact redacts secret env vars; Ray got the real value. Everything else is identical.
assert payload["runtime_env"]["env_vars"]["MY_API_TOKEN"] == "<redacted>", payload
assert ray["runtime_env"]["env_vars"]["MY_API_TOKEN"] == secret
payload["runtime_env"]["env_vars"]["MY_API_TOKEN"] = secret
assert payload["runtime_env"] == ray["runtime_env"], (payload["runtime_env"], ray["runtime_env"])
assert payload["entrypoint_num_cpus"] == 1 and payload["entrypoint_resources"] == {"worker_node": 1}
PYEOF
if grep -rqF -- "$secret" "$dir"; then
  rg_fail "the secret env var value leaked into an artifact"
fi
if [ -n "$RG_TOKEN" ] && grep -rqF -- "$RG_TOKEN" "$dir"; then rg_fail "the Ray token leaked into an artifact"; fi

# --- a second submit of the same spec names the run, submits nothing and exits 3 ---
set +e
id2=$(rg submit --config "$RG_TMP/repo/cluster.yaml" --jobspec "$RG_TMP/repo/jobs/smoke/hello.yaml" \
  2>"$RG_TMP/submit2.err")
status2=$?
set -e
[ "$status2" = 3 ] || rg_fail "second submit exited $status2, not 3: $(cat "$RG_TMP/submit2.err")"
[ "$id2" = "$id" ] || rg_fail "second submit printed id $id2, not $id"
grep -q "$id already exists: SUCCEEDED (.*); nothing submitted" "$RG_TMP/submit2.err" ||
  rg_fail "refusal: $(cat "$RG_TMP/submit2.err")"
[ "$(grep -c '^outcome: ' "$dir/logs/submit.out")" = 1 ] || rg_fail "submit.out should hold one record"

# --- --no-artifacts and --artifacts-root ---
cat >"$RG_TMP/repo/jobs/smoke/other.yaml" <<'EOF_SPEC'
workload: custom
entrypoint: echo other
EOF_SPEC
rg_tag_spec "$RG_TMP/repo/jobs/smoke/other.yaml"
other=$(rg submit --config "$RG_TMP/repo/cluster.yaml" --jobspec "$RG_TMP/repo/jobs/smoke/other.yaml" \
  --artifacts-root "$RG_TMP/elsewhere" 2>/dev/null) || rg_fail "submit with --artifacts-root"
[ -s "$RG_TMP/elsewhere/jobs/$other/config/submit_payload.json" ] || rg_fail "--artifacts-root ignored"
[ ! -e "$shared/jobs/$other" ] || rg_fail "--artifacts-root still wrote under shared_root"
rg_wait_status "$other" SUCCEEDED 180

# --- logs --follow on a running job: every line once, returns when the job ends ---
cat >"$RG_TMP/repo/jobs/smoke/ticker.yaml" <<'EOF_SPEC'
workload: custom
entrypoint: for i in 1 2 3 4; do echo tick-$i; sleep 1; done
EOF_SPEC
rg_tag_spec "$RG_TMP/repo/jobs/smoke/ticker.yaml"
ticker=$(rg submit --config "$RG_TMP/repo/cluster.yaml" --jobspec "$RG_TMP/repo/jobs/smoke/ticker.yaml" \
  --no-artifacts 2>/dev/null) || rg_fail "submit of the ticker"
rg_wait_status "$ticker" RUNNING 180
timeout 120 "$RG_BIN" --ray-address "$RG_ADDRESS" ${RG_TOKEN:+--ray-token-file "$RG_TOKEN_FILE"} \
  logs "$ticker" --follow >"$RG_TMP/ticker.out" || rg_fail "logs --follow did not end by itself"
for i in 1 2 3 4; do
  [ "$(grep -cx "tick-$i" "$RG_TMP/ticker.out")" = 1 ] ||
    rg_fail "logs --follow printed tick-$i not exactly once: $(cat "$RG_TMP/ticker.out")"
done
[ "$(rg_status_of "$ticker")" = SUCCEEDED ] || rg_fail "--follow returned before the job ended"

# --- stop: a sleeping job becomes STOPPED ---
cat >"$RG_TMP/repo/jobs/smoke/sleeper.yaml" <<'EOF_SPEC'
workload: custom
entrypoint: echo sleeping; sleep 300
EOF_SPEC
rg_tag_spec "$RG_TMP/repo/jobs/smoke/sleeper.yaml"
sleeper=$(rg submit --config "$RG_TMP/repo/cluster.yaml" --jobspec "$RG_TMP/repo/jobs/smoke/sleeper.yaml" \
  --no-artifacts 2>/dev/null) || rg_fail "submit of the sleeper"
[ ! -e "$shared/jobs/$sleeper" ] || rg_fail "--no-artifacts still wrote artifacts"
rg_wait_status "$sleeper" RUNNING 180
rg stop smoke-sleeper | grep -qx "stop sent to $sleeper, the latest run of smoke-sleeper (Ray stops it asynchronously)" ||
  rg_fail "stop by name did not report a stop of $sleeper"
rg_wait_status "$sleeper" STOPPED 60
rg stop "$sleeper" | grep -q "had already ended" || rg_fail "a second stop should send nothing"

# --- logs of a PENDING job: says so on stderr, prints nothing, exits 0. This one waits for a
#     resource the cluster lacks, so it stays PENDING; Ray answers its stop without carrying it
#     out, and fails it after its start timeout. ---
cat >"$RG_TMP/repo/jobs/smoke/starved.yaml" <<'EOF_SPEC'
workload: custom
entrypoint: echo never
entrypoint_num_cpus: 0
entrypoint_resources:
  rg_e2e_resource_nobody_has: 1
EOF_SPEC
rg_tag_spec "$RG_TMP/repo/jobs/smoke/starved.yaml"
starved=$(rg submit --config "$RG_TMP/repo/cluster.yaml" --jobspec "$RG_TMP/repo/jobs/smoke/starved.yaml" \
  --no-artifacts 2>/dev/null) || rg_fail "submit of the starved job"
[ "$(rg_status_of "$starved")" = PENDING ] || rg_fail "$starved is not PENDING"
rg logs smoke-starved >"$RG_TMP/starved.out" 2>"$RG_TMP/starved.err" ||
  rg_fail "logs of a PENDING job exited non-zero: $(cat "$RG_TMP/starved.err")"
[ ! -s "$RG_TMP/starved.out" ] || rg_fail "logs of a PENDING job printed: $(cat "$RG_TMP/starved.out")"
grep -q "^ray-gitops: smoke-starved ($starved) is PENDING: no driver log yet; Ray says: Job has not started yet" \
  "$RG_TMP/starved.err" || rg_fail "logs of a PENDING job: $(cat "$RG_TMP/starved.err")"
rg stop "$starved" >/dev/null || rg_fail "stop of the starved job"

echo "seed commands: ok ($id, $other, $ticker, $sleeper, $starved)"
