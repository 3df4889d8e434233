#!/usr/bin/env bash
# Installs what ray-gitops needs on a Debian 12 machine, for one of two uses:
#
#   scripts/install-deps.sh [test]   what the test command (scripts/test.sh) uses: the Debian
#                                    packages of scripts/packages/{build,package,demo,test},
#                                    a venv with the pinned Ray and one with Ray 2.51.1 (not
#                                    with RG_SKIP_E2E=1 or RG_SKIP_SECOND_RAY=1), and the
#                                    verl 0.9.1 wheel unpacked
#   scripts/install-deps.sh demo     what scripts/demo.sh uses and nothing more: the packages
#                                    of scripts/packages/{build,demo}, the venv with the
#                                    pinned Ray, and the verl 0.9.1 wheel unpacked
#
# The Debian packages are listed in scripts/packages/ (the Containerfile reads the same
# lists); the venvs and the wheel go outside the checkout, under ~/.cache/ray-gitops.
# Idempotent: re-running it only checks what is already there.
#
#   RG_VENV, RG_RAY_SPEC        the pinned Ray's venv and pip requirement
#   RG_VENV2, RG_RAY2_SPEC      the second Ray's (test only)
#   RG_VERL_DIR, RG_VERL_SPEC   where the verl wheel is unpacked, and which one
#   RG_PYTHON                   the interpreter that creates the venvs (default python3)
set -euo pipefail

profile=${1:-test}
case $profile in
  demo) lists=(build demo) ;;
  test) lists=(build package demo test) ;;
  *)
    echo "usage: $0 [demo|test]" >&2
    exit 2
    ;;
esac

# Every word of a list that is not on a comment line: the same reading as the Containerfile's
# $(grep -v '^#' scripts/packages/LIST).
packages_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/packages
APT_PACKAGES=()
for list in "${lists[@]}"; do
  # shellcheck disable=SC2207 # one package a word is the lists' format
  APT_PACKAGES+=($(grep -v '^#' "$packages_dir/$list"))
done

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
# main one (the demo's head runs it); for the tests a second venv holds the Ray our first
# users run (the first production cluster's: docs/ray-jobs-api.md, "Across Ray versions"),
# so the real-Ray tests run against both.
install_venv() {
  local venv=$1 spec=$2
  local stamp="$venv/.rg-installed"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$spec" ]; then
    local py=${RG_PYTHON:-python3}
    if ! "$py" -m venv --help >/dev/null 2>&1; then
      echo "install-deps: $py has no venv module (python3-venv is in scripts/packages/demo)" >&2
      exit 1
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
if [ "$profile" = test ] && [ "${RG_SKIP_E2E:-0}" != 1 ] && [ "${RG_SKIP_SECOND_RAY:-0}" != 1 ]; then
  install_venv "${RG_VENV2:-$cache/venv-ray2.51.1}" "${RG_RAY2_SPEC:-ray[default]==2.51.1}"
fi

# verl's own Hydra config folder, for `validate --verl-config` and its tests, and the package
# the demo copies into the example's fork (examples/repo/forks/verl/fetch.sh): the verl
# wheel, downloaded once without its dependencies (no torch) and unpacked beside the venvs.
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
