#!/usr/bin/env bash
# Two code snapshots side by side (`code_path`, docs/jobspec.md): each job imports its own
# code_path's module and prints its own marker, never the other's.
# Usage: multi_version_test.sh RAY_GITOPS_BINARY SOURCE_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rg_e2e_init "$@"

shared=$RG_TMP/shared
for v in codeA codeB; do
  mkdir -p "$shared/common/code/mvp/$v"
  echo "MARKER = \"$v\"" >"$shared/common/code/mvp/$v/mvp_marker.py"
done
mkdir -p "$RG_TMP/repo/jobs/mvp"
rg_write_cluster "$shared" "$RG_TMP/repo/cluster.yaml" <<'EOF_CLUSTER'
entrypoint_num_cpus: 1
entrypoint_resources:
  worker_node: 1
EOF_CLUSTER
# `python3` in an entrypoint is whatever the head's PATH gives; scripts/ray-head.sh puts the
# venv first, as a real head's image would have its own python first.
for v in codeA codeB; do
  cat >"$RG_TMP/repo/jobs/mvp/$v.yaml" <<EOF_SPEC
workload: custom
code_path: \${shared_root}/common/code/mvp/$v
entrypoint: python3 -c "import mvp_marker; print('MARKER=' + mvp_marker.MARKER)"
EOF_SPEC
  rg_tag_spec "$RG_TMP/repo/jobs/mvp/$v.yaml"
done

declare -A ids
for v in codeA codeB; do
  ids[$v]=$(rg submit --config "$RG_TMP/repo/cluster.yaml" --jobspec "$RG_TMP/repo/jobs/mvp/$v.yaml" \
    --no-artifacts 2>"$RG_TMP/submit.err") || rg_fail "submit $v: $(cat "$RG_TMP/submit.err")"
done
for v in codeA codeB; do
  rg_wait_status "${ids[$v]}" SUCCEEDED 180
done
for v in codeA codeB; do
  other=codeB
  [ $v = codeB ] && other=codeA
  logs=$(rg logs "${ids[$v]}")
  grep -qx "MARKER=$v" <<<"$logs" || rg_fail "job $v (${ids[$v]}) lacks MARKER=$v: $logs"
  if grep -q "MARKER=$other" <<<"$logs"; then rg_fail "job $v printed the marker of $other"; fi
done
echo "multi-version: ok (${ids[codeA]}, ${ids[codeB]})"
