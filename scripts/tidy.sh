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
build=$(cd "$build" && pwd)
# run-clang-tidy first lists the enabled checks with the configuration of the directory it is
# run from: from outside the checkout it would find no .clang-tidy and refuse to run.
cd "$root"
tidy=$(command -v run-clang-tidy || command -v run-clang-tidy-14)
# Two runs. The static analyzer (clang-analyzer-*) goes over each source on its own: it
# follows paths only through functions of the file it was given, so it could not see into the
# sources of a unit. It explores at most 75,000 nodes of paths per function, the budget of its
# documented "shallow" mode, instead of 225,000: at the full budget it took 60 % of the stage,
# most of it inside the standard library's containers of a few long functions. Every other
# check goes over the sources of one folder that share a compile command as one unit, so that
# it reads the standard library's headers once per folder, not once per file
# (scripts/tidy_units.py). The units are written inside the checkout, so that clang-tidy finds
# .clang-tidy above them as it does above the sources. (docs/testing.md, "clang-tidy".)
mkdir -p "$root/build"
work=$(mktemp -d "$root/build/tidy-units.XXXXXX")
trap 'rm -rf "$work"' EXIT
# -Wno-error: the build already fails on a compiler warning (RG_WERROR), with g++ in the debug
# build and clang++ in the ASan one; promoted to errors here, warnings would be reported as
# clang-tidy findings of our sources instead.
nowerror=(-extra-arg=-Wno-error)
counts=$(python3 "$root/scripts/tidy_units.py" "$build/compile_commands.json" "$files" "$work")
failed=0
"$tidy" -p "$build" -j "$(nproc)" -quiet -checks='-*,clang-analyzer-*' \
  -extra-arg=-Xclang -extra-arg=-analyzer-config -extra-arg=-Xclang \
  -extra-arg=max-nodes=75000 "${nowerror[@]}" "$files" >"$work/analyzer.log" 2>&1 || failed=1
"$tidy" -p "$work" -j "$(nproc)" -quiet -checks='-clang-analyzer-*' "${nowerror[@]}" '.*' >"$work/checks.log" 2>&1 ||
  failed=1
if [ "$failed" = 0 ]; then
  echo "tidy: clean (the analyzer file by file, the other checks over $counts)"
else
  # Only the findings, each with its source line, not the per-file banners.
  grep -h -E -A3 'warning:|error:' "$work/analyzer.log" "$work/checks.log" |
    grep -v '^[0-9]* warnings\? generated' >&2 || cat "$work/analyzer.log" "$work/checks.log" >&2
  echo "tidy: FAILED (see the findings above)" >&2
  exit 1
fi
