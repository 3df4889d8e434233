#!/usr/bin/env bash
# Installs everything ray-gitops needs to build and test on a fresh Debian machine:
# the C++ toolchain and libraries from Debian's packages, and a Python virtual environment
# outside the checkout with ray[default] (for the real Ray head the end-to-end tests start).
# Idempotent: re-running it only checks what is already there.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  libgit2-dev libyaml-cpp-dev libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev
  catch2 libcli11-dev libssl-dev chromium
)

need_apt=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    need_apt+=("$p")
  fi
done
if ((${#need_apt[@]})); then
  echo "install-deps: apt-get install ${need_apt[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

# The Python side: a venv outside the checkout, cached between runs.
VENV=${RG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv}
RAY_SPEC=${RG_RAY_SPEC:-ray[default]==2.60.0}
stamp="$VENV/.rg-installed"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$RAY_SPEC" ]; then
  PY=${RG_PYTHON:-python3}
  if ! "$PY" -m venv --help >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
  fi
  echo "install-deps: creating $VENV with $RAY_SPEC"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "$RAY_SPEC" jsonschema
  echo "$RAY_SPEC" >"$stamp"
fi
echo "install-deps: ok (venv $VENV, $("$VENV/bin/python" -c 'import ray; print("ray", ray.__version__)'))"
