#!/usr/bin/env bash
# `cmake --install` puts under a prefix the files the Debian package holds (docs/install.md):
# the binary (it runs), the review script on PATH, the systemd unit starting that prefix's
# binary, the JSON Schemas as in schema/, the hooks (executable) and the docs. The package
# itself is checked by tests/package/package_test.sh. Usage:
#   install_test.sh RAY_GITOPS_BINARY SOURCE_DIR BUILD_DIR PROJECT_VERSION
set -euo pipefail
src=$2
build=$3
version=$4
tmp=$(mktemp -d /tmp/rg-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "cmake --install"; }

[ "$("$prefix/bin/ray-gitops" version)" = "ray-gitops $version" ] || fail "the installed binary"
review=$prefix/bin/ray-gitops-review
[ -L "$review" ] && [ -x "$review" ] || fail "bin/ray-gitops-review is not a link to an executable"
[ "$(readlink -f "$review")" = "$(readlink -f "$prefix/share/ray-gitops/hooks/ci/ray-gitops-review")" ] ||
  fail "bin/ray-gitops-review points at $(readlink "$review")"
[ -x "$prefix/share/ray-gitops/hooks/pre-commit" ] || fail "the pre-commit hook is not executable"
for f in github-actions.yml gitlab-ci.yml; do
  cmp -s "$src/hooks/ci/$f" "$prefix/share/ray-gitops/hooks/ci/$f" || fail "hooks/ci/$f"
done
for f in "$src"/schema/*.json; do
  cmp -s "$f" "$prefix/share/ray-gitops/schema/$(basename "$f")" || fail "schema/$(basename "$f")"
done
[ "$(ls "$prefix/share/ray-gitops/schema" | wc -l)" = "$(ls "$src"/schema/*.json | wc -l)" ] ||
  fail "share/ray-gitops/schema holds other files"
for f in README.md docs/install.md docs/operations.md examples/repo/cluster.yaml \
  examples/systemd/ray-gitops.service examples/kubernetes/ray-gitops.yaml; do
  [ -f "$prefix/share/doc/ray-gitops/$f" ] || fail "share/doc/ray-gitops/$f is missing"
done

unit=$prefix/lib/systemd/system/ray-gitops.service
[ -f "$unit" ] || fail "no lib/systemd/system/ray-gitops.service"
grep -qxF "ExecStart=$prefix/bin/ray-gitops --log-format json \\" "$unit" ||
  fail "the unit does not start this prefix's binary: $(grep ExecStart "$unit")"
# Apart from that line, the installed unit is the example.
diff <(grep -v '^ExecStart=' "$unit") <(grep -v '^ExecStart=' "$src/examples/systemd/ray-gitops.service") ||
  fail "the installed unit differs from examples/systemd/ray-gitops.service"
echo "PASS: cmake --install under '$prefix'"
