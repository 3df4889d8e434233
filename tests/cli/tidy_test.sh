#!/usr/bin/env bash
# scripts/tidy.sh finds what it must, now that it tidies a folder's sources as one unit and
# runs the static analyzer file by file: planted findings of both kinds, in a folder of several
# sources and in a folder of one, are reported at their own file and line; clean sources pass.
#   tidy_test.sh SOURCE_DIR
set -euo pipefail
root=$1
mkdir -p "$root/build"
# Inside the checkout, under a folder named like ours: .clang-tidy and its header filter
# (reconciler/) apply there as they do to the real sources.
work=$(mktemp -d "$root/build/tidy-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/reconciler
mkdir -p "$src/many" "$src/one"

cat >"$src/many/null.cc" <<'EOF'
namespace planted {
int Deref(bool b) {
  int* p = nullptr;
  if (b) p = new int(1);
  const int r = *p;
  delete p;
  return r;
}
}  // namespace planted
EOF
cat >"$src/many/else.cc" <<'EOF'
namespace planted {
int Pick(bool b) {
  if (b) {
    return 1;
  } else {
    return 2;
  }
}
}  // namespace planted
EOF
cat >"$src/many/clean.cc" <<'EOF'
namespace planted {
int Twice(int x) { return 2 * x; }
}  // namespace planted
EOF
# The same finding in a folder of one source (a unit of one: the source itself).
cp "$src/many/else.cc" "$src/one/alone.cc"
{
  echo '['
  first=1
  for f in many/null many/else many/clean one/alone; do
    [ "$first" = 1 ] || echo ','
    first=0
    printf '{"directory": "%s", "file": "%s", "command": "c++ -std=c++20 -Wall -Wextra -Werror -o %s.o -c %s"}' \
      "$work" "$src/$f.cc" "$work/$(basename "$f")" "$src/$f.cc"
  done
  echo ']'
} >"$work/compile_commands.json"

fail() {
  echo "FAIL: $1" >&2
  echo "--- output:" >&2
  cat "$work/out" >&2
  exit 1
}

# Everything: three sources of one folder make one unit, the fourth is its own.
status=0
bash "$root/scripts/tidy.sh" "$work" "^$src/.*\\.cc\$" >"$work/out" 2>&1 || status=$?
[ "$status" = 1 ] || fail "tidy over planted findings exits $status, not 1"
grep -q 'many/null.cc:5:.*clang-analyzer-core.NullDereference' "$work/out" ||
  fail "the analyzer's null dereference in many/null.cc:5 is not reported"
grep -q 'many/else.cc:5:.*readability-else-after-return' "$work/out" ||
  fail "the else after return in many/else.cc:5 (a source of a unit) is not reported"
grep -q 'one/alone.cc:5:.*readability-else-after-return' "$work/out" ||
  fail "the else after return in one/alone.cc:5 (a unit of one) is not reported"
if grep -q 'clean.cc:' "$work/out"; then fail "a finding is reported in clean.cc"; fi

# The units themselves: by folder and command, a folder of one source left as it is.
python3 "$root/scripts/tidy_units.py" "$work/compile_commands.json" "^$src/.*\\.cc\$" \
  "$(mktemp -d "$work/units.XXXXXX")" >"$work/out"
grep -q '^4 files in 2 units$' "$work/out" || fail "tidy_units.py does not make 2 units of 4 files"

# A clean source passes.
bash "$root/scripts/tidy.sh" "$work" "^$src/many/clean\\.cc\$" >"$work/out" 2>&1 ||
  fail "tidy over a clean source fails"
grep -q '^tidy: clean' "$work/out" || fail "tidy over a clean source does not say clean"
echo "tidy: planted findings reported at their files and lines, a clean source passes"
