#!/usr/bin/env bash
# Installs everything ray-gitops needs to build and test on a fresh Debian machine:
# the C++ toolchain and libraries from Debian's packages, and a Python virtual environment
# outside the checkout with ray[default] (for the real Ray head the end-to-end tests start).
# Idempotent: re-running it only checks what is already there.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  libgit2-dev libyaml-cpp-dev libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev
  catch2 libcli11-dev libssl-dev chromium libfyaml-dev clang libclang-rt-14-dev
  clang-tidy libjemalloc-dev zlib1g-dev lld tzdata libzip-dev libssh2-1-dev openssh-server
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
  # openssh-server is here for the tests' own sshd (tests/integration/ssh), which they start on
  # a loopback port and stop themselves: its postinst must not leave a system sshd on port 22.
  # invoke-rc.d and deb-systemd-invoke start nothing while policy-rc.d exits 101.
  policy_added=""
  if [[ " ${need_apt[*]} " == *" openssh-server "* && ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    policy_added=yes
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
  if [[ -n $policy_added ]]; then
    $SUDO rm -f /usr/sbin/policy-rc.d
    # Nor at the next boot.
    if [[ -d /run/systemd/system ]]; then
      $SUDO systemctl disable ssh.service ssh.socket >/dev/null 2>&1 || true
    fi
  fi
fi

# The Python side: venvs outside the checkout, cached between runs. The pinned Ray is the
# main one; a second venv holds the Ray our first users run (the first production cluster's:
# docs/ray-jobs-api.md, "Across Ray versions"), so the real-Ray tests run against both.
install_venv() {
  local venv=$1 spec=$2
  local stamp="$venv/.rg-installed"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$spec" ]; then
    local py=${RG_PYTHON:-python3}
    if ! "$py" -m venv --help >/dev/null 2>&1; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
    fi
    echo "install-deps: creating $venv with $spec"
    mkdir -p "$(dirname "$venv")"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "$spec" jsonschema
    echo "$spec" >"$stamp"
  fi
  echo "install-deps: ok (venv $venv, $("$venv/bin/python" -c 'import ray; print("ray", ray.__version__)'))"
}

cache=${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops
install_venv "${RG_VENV:-$cache/venv}" "${RG_RAY_SPEC:-ray[default]==2.60.0}"
if [ "${RG_SKIP_E2E:-0}" != 1 ] && [ "${RG_SKIP_SECOND_RAY:-0}" != 1 ]; then
  install_venv "${RG_VENV2:-$cache/venv-ray2.51.1}" "${RG_RAY2_SPEC:-ray[default]==2.51.1}"
fi

# verl's own Hydra config folder, for `validate --verl-config` and its tests: the verl wheel,
# downloaded once without its dependencies (no torch) and unpacked beside the venvs.
install_verl() {
  local dir=$1 spec=$2 pip=$3
  local stamp="$dir/.rg-installed"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$spec" ]; then
    echo "install-deps: unpacking $spec into $dir"
    local download
    download=$(mktemp -d)
    "$pip" download -q --disable-pip-version-check --no-deps "$spec" -d "$download"
    rm -rf "$dir"
    mkdir -p "$dir"
    "$(dirname "$pip")/python" -m zipfile -e "$download"/verl-*.whl "$dir"
    rm -rf "$download"
    echo "$spec" >"$stamp"
  fi
  echo "install-deps: ok (verl config $dir/verl/trainer/config)"
}

install_verl "${RG_VERL_DIR:-$cache/verl-0.9.1}" "${RG_VERL_SPEC:-verl==0.9.1}" \
  "${RG_VENV:-$cache/venv}/bin/pip"
