#!/usr/bin/env bash
# Builds the image of Containerfile with buildah, on a machine without a container daemon
# (docs/install.md):
#   scripts/image.sh [--deb PATH] [--tag IMAGE] [--jobs N]
#     --deb PATH   install this Debian package (inside the checkout) instead of compiling;
#                  without it the Containerfile's build stage compiles from source, as
#                  `docker build` does (tens of minutes on 2 cores)
#     --tag IMAGE  the image's name (default ghcr.io/ray-gitops/ray-gitops:<version>)
#   scripts/image.sh --bases-only
# The Containerfile's bases, docker.io/library/debian:bookworm and :bookworm-slim, are made
# first from Debian's packages with mmdebstrap (minbase, merged /usr; the slim one without
# docs, man pages and locales, as Docker's) and kept in buildah's storage, so that the same
# Containerfile builds here with --pull=never and with Docker elsewhere. That storage (vfs)
# lives outside the checkout and outlives the run: RG_IMAGE_STORAGE, default
# ~/.cache/ray-gitops/containers. Prints the image's id and size at the end.
# Needs root, buildah and mmdebstrap (scripts/install-deps.sh installs them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=$(sed -n 's/^project(ray-gitops VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
deb="" tag="ghcr.io/ray-gitops/ray-gitops:$version" jobs="" bases_only=0
while (($#)); do
  case $1 in
    --deb) deb=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --bases-only) bases_only=1; shift ;;
    *) echo "image.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

storage=${RG_IMAGE_STORAGE:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/containers}
mirror=${RG_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${RG_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
mkdir -p "$storage"
bh() { buildah --root "$storage/root" --runroot "$storage/run" --storage-driver vfs "$@"; }

# One base: SUITE-slim or SUITE, from mmdebstrap's tarball, committed under Docker's name.
make_base() {
  local name=$1 slim=$2
  if bh inspect --type image "$name" >/dev/null 2>&1; then
    echo "image: base $name is there"
    return
  fi
  local work started=$SECONDS
  work=$(mktemp -d /tmp/rg-base.XXXXXX)
  local opts=(--quiet --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr)
  if [ "$slim" = 1 ]; then
    # What Docker's -slim images leave out, also for every package installed later.
    opts+=(--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
      --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/info/*'
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*')
  fi
  # Clean apt's lists and caches as the official images do.
  opts+=(--aptopt='Acquire::Languages "none"')
  if ! mmdebstrap "${opts[@]}" bookworm "$work/rootfs.tar" \
    "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
    "deb $security bookworm-security main" >"$work/mmdebstrap.log" 2>&1; then
    tail -n 30 "$work/mmdebstrap.log" >&2
    rm -rf "$work"
    echo "image: mmdebstrap failed for $name" >&2
    return 1
  fi
  local ctr
  ctr=$(bh from --quiet scratch)
  bh add --quiet "$ctr" "$work/rootfs.tar" / >/dev/null
  bh config --cmd bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --label org.opencontainers.image.description="Debian 12 minbase by mmdebstrap" "$ctr"
  bh commit --quiet --rm "$ctr" "$name" >/dev/null
  rm -rf "$work"
  echo "image: made base $name in $((SECONDS - started)) s"
}

make_base docker.io/library/debian:bookworm 0
make_base docker.io/library/debian:bookworm-slim 1
[ "$bases_only" = 1 ] && exit 0

revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
args=(--file "$root/Containerfile" --tag "$tag" --pull=never --isolation chroot --layers=false
  --build-arg "VERSION=$version" --build-arg "REVISION=$revision")
if [ -n "$deb" ]; then
  # A path inside the checkout, as the build stage reads it from its bind mount of the context.
  deb_abs=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
  case $deb_abs in
    "$root"/*) args+=(--build-arg "DEB=${deb_abs#"$root"/}") ;;
    *) echo "image.sh: --deb must be inside $root (the build context)" >&2; exit 2 ;;
  esac
fi
[ -n "$jobs" ] && args+=(--build-arg "JOBS=$jobs")
started=$SECONDS
bh bud "${args[@]}" "$root"
size=$(bh images --format '{{.Size}}' "$tag" | head -n 1)
echo "image: built $tag in $((SECONDS - started)) s, $size"
