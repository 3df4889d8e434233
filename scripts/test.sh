#!/usr/bin/env bash
# The whole test suite from a fresh machine: install, configure, build (warnings are
# errors), then ctest. ctest starts one real Ray head for the e2e tests and stops it at
# the end, whatever happened.
#   RG_PRESET=debug|release|asan   build preset (default debug)
#   RG_SKIP_E2E=1                  leave out the tests that need a real Ray head (label e2e)
#   RG_SKIP_SECOND_RAY=1           run the e2e label only against the pinned Ray, not also
#                                  against the second one (RG_VENV2, Ray 2.51.1)
#   RG_SKIP_SANITIZERS=1           leave out the ASan+UBSan build and its suite (everything
#                                  but e2e, and the fuzzers)
#   RG_FUZZ_SECONDS=N              how long each fuzzer runs (default 30)
#   RG_SKIP_TIDY=1                 leave out clang-tidy over reconciler/ (scripts/tidy.sh)
#   RG_SKIP_PACKAGE=1              leave out the Debian package and the image
#                                  (tests/package/package_test.sh: root, buildah, mmdebstrap)
#   RG_DEBUG_FLAGS=FLAGS           debug info of the debug-type builds (default -g1)
set -euo pipefail
# Each stage's wall time, so that the whole command's time can be kept in check
# (docs/testing.md, "How long the suite takes").
stage_started=$SECONDS
stage_done() {
  echo "test: $1 took $((SECONDS - stage_started)) s (${SECONDS} s in all)"
  stage_started=$SECONDS
}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash scripts/install-deps.sh
stage_done "installing the dependencies"
export RG_VENV=${RG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv}
export RG_VERL_DIR=${RG_VERL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/verl-0.9.1}

# Debug builds here keep line tables only (-g1): file and line in every sanitizer report and
# backtrace, a third less compile and link time than full debug info (docs/testing.md, "How
# long the suite takes"). Configure a preset yourself for a debugger.
debug_info=-DCMAKE_CXX_FLAGS_DEBUG=${RG_DEBUG_FLAGS:--g1}
preset=${RG_PRESET:-debug}
# RG_BUILD_TESTS=ON: a build folder the demo configured without them gets them back.
cmake --preset "$preset" -DRG_WERROR=ON -DRG_BUILD_TESTS=ON -DRG_VENV="$RG_VENV" \
  -DRG_VERL_DIR="$RG_VERL_DIR" -DRG_FUZZ_SECONDS="${RG_FUZZ_SECONDS:-30}" "$debug_info" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
stage_done "the $preset build"

# Two stages run in the background from here on, each in a process group of its own (so
# that the command stops them whole when it fails) and at the lowest CPU priority: clang-tidy
# over reconciler/, and the Debian package of this build with the image's runtime stage made
# from it (tests/package/package_test.sh; docs/install.md, "What the tests check"). The test
# stages in the foreground wait on Ray heads, sshd, backoffs and schedules for much of their
# time; the background stages use those idle cores, and never take a core from a test. Their
# output is printed, and their failure fails the command, at the end (docs/testing.md, "How
# long the suite takes").
background=()
background_names=()
background_logs=()
trap 'for pid in "${background[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done' EXIT
in_background() { # NAME LOG COMMAND...
  local name=$1 log=$2
  shift 2
  setsid nice -n 19 bash -c 'started=$SECONDS; "$@"; status=$?
    echo "test: $0 took $((SECONDS - started)) s in the background (exit $status)"; exit $status' \
    "$name" "$@" >"$log" 2>&1 &
  background+=("$!")
  background_names+=("$name")
  background_logs+=("$log")
  echo "test: $name, in the background (its output follows the last stage)"
}
mkdir -p build
if [ "${RG_SKIP_TIDY:-0}" != 1 ]; then
  in_background "clang-tidy over reconciler/ (scripts/tidy.sh)" build/tidy.log \
    bash scripts/tidy.sh "build/$preset"
fi
if [ "${RG_SKIP_PACKAGE:-0}" != 1 ]; then
  if [ "$preset" = asan ]; then
    echo "test: RG_PRESET=asan: no package of a sanitizer build (the package stage is left out)"
  else
    in_background "the Debian package and the image (tests/package/package_test.sh)" \
      build/package-test.log bash tests/package/package_test.sh "build/$preset"
  fi
fi
# At the end: each background stage's output, and 1 when one failed.
finish_background() {
  local i status failed=0
  for i in "${!background[@]}"; do
    status=0
    wait "${background[$i]}" || status=$?
    cat "${background_logs[$i]}"
    if [ "$status" != 0 ]; then
      echo "test: FAILED: ${background_names[$i]} (see above)" >&2
      failed=1
    fi
  done
  background=()
  stage_done "waiting for the background stages"
  return "$failed"
}

ctest_args=(--preset "$preset" -j 2 --timeout 600)
if [ "${RG_SKIP_E2E:-0}" = 1 ]; then
  echo "test: RG_SKIP_E2E=1, leaving out the real-Ray tests (label e2e)"
  ctest_args+=(-LE e2e)
fi

# The e2e label against the second Ray first, so that the closing line is the whole suite's.
# Its fixture has its own state dir and has stopped its head before the suite starts the
# pinned one (docs/testing.md, "Two Ray versions").
second_ray_failed=0
if [ "${RG_SKIP_E2E:-0}" != 1 ] && [ "${RG_SKIP_SECOND_RAY:-0}" != 1 ]; then
  venv2=${RG_VENV2:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv-ray2.51.1}
  echo "test: the real-Ray tests (label e2e) against the Ray of $venv2"
  RG_E2E_RAY_VENV=$venv2 ctest --preset "$preset" -j 2 --timeout 600 -L e2e ||
    second_ray_failed=1
  stage_done "the real-Ray tests against the second Ray"
  echo "test: now the whole suite, its real-Ray tests against the Ray of $RG_VENV"
fi
ctest "${ctest_args[@]}"
stage_done "the $preset suite"
if [ "$second_ray_failed" = 1 ]; then
  echo "test: FAILED: the real-Ray tests against the Ray of $venv2 (see above)" >&2
  finish_background || true
  exit 1
fi

# The ASan+UBSan suite without the real-Ray tests (the suite above when that was the preset).
# Built with clang++, its fuzz targets are libFuzzer binaries on the same
# instrumented code, and its suite runs each for RG_FUZZ_SECONDS (label fuzz): one build for
# both (docs/testing.md, "Sanitizers and fuzzing").
if [ "${RG_SKIP_SANITIZERS:-0}" != 1 ]; then
  if [ "$preset" != asan ]; then
    echo "test: the ASan+UBSan build (preset asan): the suite but the real-Ray tests, and the fuzzers, ${RG_FUZZ_SECONDS:-30} s each"
    cmake --preset asan -DRG_WERROR=ON -DRG_VENV="$RG_VENV" -DRG_VERL_DIR="$RG_VERL_DIR" \
      -DRG_FUZZ_SECONDS="${RG_FUZZ_SECONDS:-30}" "$debug_info" >/dev/null
    cmake --build --preset asan -j "$(nproc)"
    stage_done "the asan build"
    ctest --preset asan -j 2 --timeout 600 -LE e2e
    stage_done "the asan suite and the fuzzers"
  fi
  grep -E '^[0-9]+/[0-9]+ Testing: fuzz\.|^#[0-9]+[[:space:]]+DONE' \
    build/asan/Testing/Temporary/LastTest.log || true
fi

finish_background
echo "test: all stages passed (${SECONDS} s in all)"
