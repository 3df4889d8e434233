#!/usr/bin/env bash
# The ctest fixture `ray_head` (tests/e2e/CMakeLists.txt): one real Ray head for the e2e tests.
#   ray_head_fixture.sh start|stop BUILD_DIR
#
# The head's Ray comes from RG_E2E_RAY_VENV when ctest's environment sets it (scripts/test.sh
# runs the e2e label a second time that way, with Ray 2.51.1), else from RG_VENV (the pinned
# Ray). Each Ray version has its own state dir, BUILD_DIR/ray-head-<version>; BUILD_DIR/ray-head,
# which the tests read as RG_E2E_RAY_STATE_DIR, links to the current one. Only one head runs at
# a time: start first stops whatever head the link still points at.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ray_head=$here/../../scripts/ray-head.sh

[ $# -eq 2 ] || { echo "usage: $0 start|stop BUILD_DIR" >&2; exit 2; }
action=$1
link=$2/ray-head

case "$action" in
  start)
    venv=${RG_E2E_RAY_VENV:-${RG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv}}
    [ -x "$venv/bin/python" ] || { echo "ray-head fixture: no python in $venv" >&2; exit 1; }
    version=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("ray"))') ||
      { echo "ray-head fixture: no ray in $venv (run scripts/install-deps.sh)" >&2; exit 1; }
    if [ -L "$link" ]; then
      bash "$ray_head" stop "$link"
      rm -f "$link"
    elif [ -d "$link" ]; then  # a state dir of its own, from before the per-version layout
      bash "$ray_head" stop "$link"
      rm -rf "$link"
    fi
    ln -s "ray-head-$version" "$link"
    echo "ray-head fixture: Ray $version from $venv, state in $2/ray-head-$version"
    RG_VENV=$venv exec bash "$ray_head" start "$2/ray-head-$version"
    ;;
  stop)
    if [ -e "$link" ]; then exec bash "$ray_head" stop "$link"; fi
    echo "ray-head fixture: no head recorded in $link"
    ;;
  *)
    echo "usage: $0 start|stop BUILD_DIR" >&2
    exit 2
    ;;
esac
