#!/usr/bin/env bash
# Fills this folder with the Python package of verl 0.9.1, the release the fork starts from:
# verl/ here is replaced by the package of the pinned wheel, checked before anything is copied.
# Commit the result as "verl 0.9.1 as released", then the fork's own changes on top of it.
#
#   bash fetch.sh                 download the wheel with pip (no dependencies)
#   bash fetch.sh WHEEL           use a downloaded verl-0.9.1-py3-none-any.whl
#   bash fetch.sh FOLDER          use the wheel unpacked into FOLDER (verl/ and its dist-info)
#
# PYTHON names the interpreter (default python3); its pip downloads the wheel.
set -euo pipefail
version=0.9.1
wheel_sha256=db6e6f2a8d9d5808d9ec32d357a42319fdc6967df688ff9d9810050f49bfdd14
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

from=${1:-}
if [ -z "$from" ]; then
  "$python" -m pip download -q --disable-pip-version-check --no-deps "verl==$version" -d "$tmp/wheel"
  from=$(ls "$tmp"/wheel/verl-"$version"-*.whl)
fi
if [ -f "$from" ]; then
  got=$(sha256sum "$from" | cut -d' ' -f1)
  if [ "$got" != "$wheel_sha256" ]; then
    echo "fetch.sh: $from is not the verl $version wheel (sha256 $got)" >&2
    exit 1
  fi
  "$python" -m zipfile -e "$from" "$tmp/unpacked"
  from=$tmp/unpacked
fi
if [ ! -d "$from/verl" ] || [ ! -f "$from/verl-$version.dist-info/RECORD" ]; then
  echo "fetch.sh: $from holds no unpacked verl $version wheel (verl/ and verl-$version.dist-info/)" >&2
  exit 1
fi

# Every file of the package as the wheel's RECORD lists it, with its size and hash: an
# unpacked folder may have been changed since it was unpacked.
"$python" - "$from" "$tmp/files" <<'PY'
import base64, csv, hashlib, os, sys
root, out = sys.argv[1], sys.argv[2]
record = [f for f in os.listdir(root) if f.endswith(".dist-info")][0] + "/RECORD"
files = []
with open(os.path.join(root, record), newline="") as f:
    for path, digest, size in csv.reader(f):
        if not path.startswith("verl/"):
            continue
        algo, _, want = digest.partition("=")
        data = open(os.path.join(root, path), "rb").read()
        got = base64.urlsafe_b64encode(hashlib.new(algo, data).digest()).rstrip(b"=").decode()
        if got != want or len(data) != int(size):
            sys.exit("fetch.sh: %s differs from the wheel's RECORD" % path)
        files.append(path)
on_disk = {os.path.relpath(os.path.join(d, n), root)
           for d, _, names in os.walk(os.path.join(root, "verl")) for n in names
           if "__pycache__" not in d}
extra = sorted(on_disk - set(files))
if extra:
    sys.exit("fetch.sh: not in the wheel: " + ", ".join(extra[:5]))
open(out, "w").write("\n".join(sorted(files)) + "\n")
PY

rm -rf "$here/verl"
(cd "$from" && tar -cf - -T "$tmp/files") | (cd "$here" && tar -xf -)
find "$here/verl" -type f -exec chmod 644 {} +  # as a wheel installs them, whatever unpacked it
echo "fetch.sh: $(wc -l <"$tmp/files") files of verl $version in $here/verl"
