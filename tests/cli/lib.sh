# Shared by the tests/cli scripts (sourced): a scratch folder removed on exit with every
# background server started here, `fail` that counts, `finish` that reports, a `git` with a
# fixed identity and default branch, and the fake Ray head started as a background process.
work=$(mktemp -d)
failures=0
background_pids=()
cleanup() {
  local pid
  for pid in "${background_pids[@]}"; do kill "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# finish MESSAGE: exit 1 when a check failed, else print MESSAGE.
finish() {
  if ((failures > 0)); then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "$1"
}

export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t \
  GIT_COMMITTER_EMAIL=t@example.com
git() { command git -c init.defaultBranch=main -c advice.detachedHead=false "$@"; }

# run NAME ARGS...: runs the binary ($bin), leaving stdout, stderr and the exit status in
# $work/NAME.out, .err and .rc.
run() {
  local name=$1
  shift
  "$bin" "$@" >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.rc"
}

# expect_rc NAME STATUS: the run NAME exited STATUS.
expect_rc() {
  local got
  got=$(cat "$work/$1.rc")
  [[ $got == "$2" ]] || fail "$1: exit status $got, expected $2 (stderr: $(cat "$work/$1.err"))"
}

# start_server VAR COMMAND...: runs COMMAND, which prints its port on its first line, in the
# background; sets VAR to http://127.0.0.1:<port>. Exits the test when it does not start.
start_server() {
  local var=$1 port
  shift
  coproc SERVER { exec "$@"; }
  background_pids+=("$SERVER_PID")
  read -r port <&"${SERVER[0]}"
  [[ $port =~ ^[0-9]+$ ]] || { echo "FAIL: $1 did not start" >&2; exit 1; }
  printf -v "$var" 'http://127.0.0.1:%s' "$port"
}
