# A real OpenSSH server for the tests (sourced): `sshd -D -e -f <config>` on 127.0.0.1 at a
# free port, with host keys made by ssh-keygen, one client key in an authorized_keys file of
# its own, and its pid file in the test's folder. Each server is stopped by its own pid when the
# test ends (never by name: other sshd processes on the machine are not ours).
#
#   sshd_fixture_available            0 when /usr/sbin/sshd can be used, else prints why
#   sshd_fixture_start NAME TYPES...  starts server NAME with host keys of TYPES (ed25519,
#                                     ecdsa, rsa); sets sshd_port[NAME]; host keys in
#                                     $work/sshd-NAME/host_<type>.pub
#   sshd_client_key                   the client's private key (made once)
#
# REQUIRES: $work (a scratch folder) and background_pids (killed at exit), as tests/cli/lib.sh
# defines them.

sshd_bin=/usr/sbin/sshd
declare -A sshd_port=()

sshd_fixture_available() {
  if [[ ! -x $sshd_bin ]]; then
    echo "$sshd_bin is not installed (scripts/install-deps.sh installs openssh-server)"
    return 1
  fi
  if ! command -v ssh-keygen >/dev/null || ! command -v ssh-keyscan >/dev/null; then
    echo "ssh-keygen or ssh-keyscan is not installed"
    return 1
  fi
  # Run as root, sshd wants its privilege separation folder (the system's unit makes it).
  if [[ $(id -u) == 0 && ! -d /run/sshd ]] && ! mkdir -p -m 0755 /run/sshd 2>/dev/null; then
    echo "sshd runs as root here and /run/sshd cannot be made"
    return 1
  fi
  return 0
}

sshd_client_key() {
  local key=$work/client_ed25519
  [[ -f $key ]] || ssh-keygen -q -t ed25519 -N '' -C ray-gitops-test -f "$key"
  echo "$key"
}

_sshd_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

_sshd_config() {
  local dir=$1 port=$2
  shift 2
  {
    echo "Port $port"
    echo "ListenAddress 127.0.0.1"
    local t
    for t in "$@"; do echo "HostKey $dir/host_$t"; done
    echo "AuthorizedKeysFile $dir/authorized_keys"
    echo "PidFile $dir/sshd.pid"
    echo "StrictModes no"
    echo "UsePAM no"
    echo "PubkeyAuthentication yes"
    echo "PasswordAuthentication no"
    echo "KbdInteractiveAuthentication no"
    echo "PermitRootLogin prohibit-password"
    echo "AllowTcpForwarding no"
    echo "X11Forwarding no"
    echo "PrintMotd no"
    echo "LogLevel ERROR"
  } >"$dir/sshd_config"
}

# The server answers once its port accepts a connection and sends its banner.
_sshd_wait() {
  local port=$1 i banner
  for i in $(seq 1 100); do
    if { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
      read -r -t 2 banner <&3
      exec 3<&-
      [[ $banner == SSH-* ]] && return 0
    fi
    sleep 0.05
  done
  return 1
}

sshd_fixture_start() {
  local name=$1
  shift
  local dir=$work/sshd-$name t attempt port
  mkdir -p "$dir"
  for t in "$@"; do
    ssh-keygen -q -t "$t" -N '' -C '' -f "$dir/host_$t"
  done
  cp "$(sshd_client_key).pub" "$dir/authorized_keys"
  for attempt in 1 2 3; do
    port=$(_sshd_free_port)
    _sshd_config "$dir" "$port" "$@"
    "$sshd_bin" -D -e -f "$dir/sshd_config" 2>>"$dir/sshd.log" &
    background_pids+=("$!")
    if _sshd_wait "$port"; then
      sshd_port[$name]=$port
      return 0
    fi
    kill "$!" 2>/dev/null
  done
  echo "FAIL: sshd $name did not start: $(cat "$dir/sshd.log")" >&2
  exit 1
}
