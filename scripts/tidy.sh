#!/usr/bin/env bash
# clang-tidy over every source file of reconciler/ with the project's .clang-tidy, using the
# compilation database of a configured build (default build/debug). Any finding fails.
# The tests are left out: Catch2's macros expand into code the readability checks flag
# by design (docs/testing.md, "clang-tidy").
#   scripts/tidy.sh [BUILD_DIR] [FILE_REGEX]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build/debug}
files=${2:-^$root/reconciler/.*\.cc$}
if [ ! -f "$build/compile_commands.json" ]; then
  echo "tidy: no $build/compile_commands.json; configure a build first" >&2
  exit 2
fi
tidy=$(command -v run-clang-tidy || command -v run-clang-tidy-14)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if "$tidy" -p "$build" -j "$(nproc)" -quiet "$files" >"$log" 2>&1; then
  echo "tidy: clean ($(grep -c '^clang-tidy' "$log" || true) files)"
else
  # Only the findings, each with its source line, not the per-file banners.
  grep -E -A3 'warning:|error:' "$log" | grep -v '^[0-9]* warnings\? generated' >&2 || cat "$log" >&2
  echo "tidy: FAILED (see the findings above)" >&2
  exit 1
fi
