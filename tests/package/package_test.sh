#!/usr/bin/env bash
# The Debian package and the image, as a user gets them (docs/install.md, docs/testing.md
# "The package and the image"). From a configured and built BUILD_DIR:
#   1. cpack -G DEB packages the build (stripped);
#   2. the package installs with `apt-get install ./ray-gitops_*.deb` into a clean Debian 12
#      root (mmdebstrap's minbase, scripts/image.sh), puts every file where docs/install.md
#      says, enables nothing, and its binary runs `version` and validates examples/repo;
#   3. the image's runtime stage is built from that package (scripts/image.sh --deb, the
#      Containerfile with DEB=), and its binary, run as the image's user, prints its version,
#      validates examples/repo (its time zones come from the image's tzdata), and syncs one job
#      of a Git repository to the fake Ray head on loopback: Ray gets the submission, the
#      status branch gets its record; the image has CA certificates; its size is printed.
# Needs root, buildah and mmdebstrap (scripts/install-deps.sh) and Debian's package mirror.
#   tests/package/package_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: package_test.sh BUILD_DIR}" && pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
version=$(sed -n 's/^project(ray-gitops VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
image=ghcr.io/ray-gitops/ray-gitops:$version-test
storage=${RG_IMAGE_STORAGE:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/containers}
export RG_IMAGE_STORAGE=$storage
bh() { buildah --root "$storage/root" --runroot "$storage/run" --storage-driver vfs "$@"; }

tmp=$(mktemp -d /tmp/rg-package.XXXXXX)
containers=()
fake_pid=""
cleanup() {
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  for c in "${containers[@]}"; do bh rm "$c" >/dev/null 2>&1 || true; done
  bh rmi "$image" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "package: $*"; }

# --- 1. the package ---
rm -rf "$build/package"
(cd "$build" && cpack -G DEB >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack"; }
debs=("$build"/package/ray-gitops_"$version"_*.deb)
[ "${#debs[@]}" = 1 ] && [ -f "${debs[0]}" ] || fail "cpack made no ray-gitops_${version}_*.deb"
deb=${debs[0]}
step "$(basename "$deb"): $(stat -c %s "$deb") bytes"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libgit2 libssl3 libssh2 libzip tzdata; do
  [[ $depends == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "the package's version is not $version"

# --- 2. a clean Debian 12 root ---
bash "$root/scripts/image.sh" --bases-only
ctr=$(bh from --quiet --pull=never docker.io/library/debian:bookworm)
containers+=("$ctr")
run_in() { bh run --isolation chroot "$@"; }
mkdir "$tmp/deb"
cp "$deb" "$tmp/deb/"
run_in -v "$tmp/deb:/tmp/deb:ro" "$ctr" -- sh -c \
  'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/deb/*.deb' \
  >"$tmp/apt.log" 2>&1 || { tail -n 30 "$tmp/apt.log"; fail "apt-get install of the package"; }
step "installed on a clean Debian 12 root"
for f in /usr/bin/ray-gitops /usr/lib/systemd/system/ray-gitops.service \
  /usr/share/ray-gitops/schema/jobspec.schema.json /usr/share/ray-gitops/schema/cluster.schema.json \
  /usr/share/ray-gitops/schema/status.schema.json /usr/share/ray-gitops/hooks/pre-commit \
  /usr/share/ray-gitops/hooks/ci/ray-gitops-review /usr/share/doc/ray-gitops/README.md \
  /usr/share/doc/ray-gitops/docs/install.md; do
  run_in "$ctr" -- test -f "$f" || fail "the package did not install $f"
done
run_in "$ctr" -- test -x /usr/bin/ray-gitops-review || fail "ray-gitops-review is not on PATH"
run_in "$ctr" -- grep -q '^ExecStart=/usr/bin/ray-gitops ' /usr/lib/systemd/system/ray-gitops.service ||
  fail "the installed unit does not start /usr/bin/ray-gitops"
# Enabled by nobody: the admin enables the unit once it is configured.
if run_in "$ctr" -- sh -c 'ls /etc/systemd/system/*/ray-gitops.service' >/dev/null 2>&1; then
  fail "installing the package enabled the unit"
fi
out=$(run_in "$ctr" -- ray-gitops version)
[ "$out" = "ray-gitops $version" ] || fail "version from the package: $out"
run_in -v "$root/examples/repo:/repo:ro" "$ctr" -- ray-gitops validate --repo /repo >"$tmp/validate.log" 2>&1 ||
  { cat "$tmp/validate.log"; fail "the package's binary does not validate examples/repo"; }
step "the package's binary: $out; $(cat "$tmp/validate.log")"
# And it leaves nothing behind.
run_in "$ctr" -- sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq ray-gitops >/dev/null 2>&1 &&
  ! test -e /usr/bin/ray-gitops && ! test -e /usr/share/ray-gitops && ! test -e /usr/lib/systemd/system/ray-gitops.service' ||
  fail "apt-get purge ray-gitops left files behind"

# --- 3. the image, its runtime stage from that package ---
# The package sits in the build folder's package/, which the context (.dockerignore) keeps.
bash "$root/scripts/image.sh" --deb "$deb" --tag "$image" >"$tmp/image.log" 2>&1 ||
  { tail -n 40 "$tmp/image.log"; fail "the image did not build"; }
grep '^image: ' "$tmp/image.log"
user=$(bh inspect --type image --format '{{.OCIv1.Config.User}}' "$image")
entrypoint=$(bh inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$image")
[ "$user" = 65532:65532 ] || fail "the image's user is '$user'"
[ "$entrypoint" = '[ray-gitops]' ] || fail "the image's entrypoint is $entrypoint"
for label in version revision source; do
  value=$(bh inspect --type image --format "{{index .OCIv1.Config.Labels \"org.opencontainers.image.$label\"}}" "$image")
  [ -n "$value" ] || fail "the image has no org.opencontainers.image.$label label"
done
ictr=$(bh from --quiet --pull=never "$image")
containers+=("$ictr")
ids=$(run_in "$ictr" -- sh -c 'id -u; id -g; id -un; id -gn; stat -c %u:%g "$HOME" /var/cache/ray-gitops')
[ "$(echo $ids)" = "65532 65532 ray-gitops ray-gitops 65532:65532 65532:65532" ] ||
  fail "a command in the image runs as $(echo $ids) (uid, gid, names, owners of its home and cache)"
run_in "$ictr" -- test -s /etc/ssl/certs/ca-certificates.crt || fail "the image has no CA certificates"
run_in "$ictr" -- test -f /usr/share/zoneinfo/Europe/Berlin || fail "the image has no tzdata"
run_in "$ictr" -- sh -c '! command -v gcc && ! command -v cmake' >/dev/null || fail "the image holds a compiler"
out=$(run_in "$ictr" -- ray-gitops version)
[ "$out" = "ray-gitops $version" ] || fail "version from the image: $out"
run_in -v "$root/examples/repo:/repo:ro" "$ictr" -- ray-gitops validate --repo /repo >"$tmp/validate.log" 2>&1 ||
  { cat "$tmp/validate.log"; fail "the image's binary does not validate examples/repo"; }
step "the image's binary as uid 65532: $out; $(cat "$tmp/validate.log")"

# One sync from inside the image: a repository with one job, the fake Ray head on loopback.
fake=$build/tests/support/fake-ray-server
[ -x "$fake" ] || fail "no $fake (build the debug preset's tests first)"
"$fake" >"$tmp/fake.out" 2>"$tmp/fake.err" &
fake_pid=$!
# Its first line is its port, once it listens.
for _ in $(seq 1 600); do
  [ -s "$tmp/fake.out" ] && break
  kill -0 "$fake_pid" 2>/dev/null || fail "the fake Ray head exited: $(cat "$tmp/fake.err")"
  sleep 0.1
done
port=$(head -n 1 "$tmp/fake.out")
[[ $port =~ ^[0-9]+$ ]] || fail "the fake Ray head printed no port"
work=$tmp/work
mkdir -p "$work/jobs/smoke"
cp "$root/examples/repo/jobs/smoke/hello.yaml" "$work/jobs/smoke/"
printf 'address: http://127.0.0.1:%s\nshared_root: /private\n' "$port" >"$work/cluster.yaml"
git -C "$work" init -q -b main
git -C "$work" add -A
git -C "$work" -c user.name=t -c user.email=t@example.com commit -q -m "one job"
git clone -q --bare "$work" "$tmp/jobs.git"
# The image's user owns the remote it pushes the status branch to.
chown -R 65532:65532 "$tmp/jobs.git"
run_in -v "$tmp/jobs.git:/srv/jobs.git" "$ictr" -- ray-gitops sync --repo /srv/jobs.git \
  --no-artifacts >"$tmp/sync.log" 2>&1 || { cat "$tmp/sync.log"; fail "sync from the image"; }
jobs=$(curl -sf "http://127.0.0.1:$port/api/jobs/") || fail "the fake head does not answer"
python3 - "$jobs" <<'PYEOF' || fail "Ray did not get the job from the image's sync: $jobs"
import json, sys
jobs = json.loads(sys.argv[1])
assert len(jobs) == 1, jobs
meta = jobs[0]["metadata"]
assert meta["gitops.name"] == "smoke-hello" and meta["gitops.managed-by"] == "ray-gitops", meta
print("package: the image's sync submitted", jobs[0]["submission_id"])
PYEOF
# Owned by the image's user now: git on the host would refuse it without the exception.
records=$(git -c safe.directory='*' -C "$tmp/jobs.git" ls-tree -r --name-only ray-gitops/status) ||
  fail "the sync from the image wrote no status branch: $(cat "$tmp/sync.log")"
grep -q 'smoke-hello' <<<"$records" || fail "the status branch has no record of smoke-hello: $records"
size=$(bh images --format '{{.Size}}' "$image" | head -n 1)
echo "package: image size $size (a target of 150 MB)"
echo "package: ok"
