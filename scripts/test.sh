#!/usr/bin/env bash
# The whole test suite from a fresh machine: install, configure, build (warnings are
# errors), then ctest. ctest starts one real Ray head for the e2e tests and stops it at
# the end, whatever happened.
#   RG_PRESET=debug|release|asan   build preset (default debug)
#   RG_SKIP_E2E=1                  leave out the tests that need a real Ray head (label e2e)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash scripts/install-deps.sh
export RG_VENV=${RG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv}

preset=${RG_PRESET:-debug}
cmake --preset "$preset" -DRG_WERROR=ON -DRG_VENV="$RG_VENV" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"

ctest_args=(--preset "$preset" -j 2 --timeout 600)
if [ "${RG_SKIP_E2E:-0}" = 1 ]; then
  echo "test: RG_SKIP_E2E=1, leaving out the real-Ray tests (label e2e)"
  ctest_args+=(-LE e2e)
fi
ctest "${ctest_args[@]}"
