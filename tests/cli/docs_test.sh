#!/usr/bin/env bash
# The documentation stands alone: no *.md file of the repository cites a file that lives outside
# it (a design or origin note, notes on the Ray Jobs API or on style, a path into a shared folder
# beside the repository), and every relative link of a *.md file points at a file of the
# repository (and, for a link to a heading of another page, at a heading that page has). Prints
# every offender, then exits 1.
# Usage: docs_test.sh <ray-gitops binary (unused)> <source dir>
set -euo pipefail

SRC=$(cd "$2" && pwd)

# The *.md files of the repository: the tracked ones in a Git checkout, else every one outside
# build trees and hidden folders.
if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t docs < <(git -C "$SRC" ls-files '*.md')
else
  mapfile -t docs < <(cd "$SRC" && find . -name '*.md' -not -path './build*' -not -path '*/.*' |
    sed 's|^\./||' | sort)
fi
[ "${#docs[@]}" -gt 0 ] || { echo "FAIL: no *.md file found under $SRC" >&2; exit 1; }

failures=0

# --- no reference to a file outside the repository ---
outside='DESIGN\.md|ORIGIN\.md|RAY_JOBS_API\.md|STYLE\.md|\.\./shared'
for doc in "${docs[@]}"; do
  [ -f "$SRC/$doc" ] || continue  # tracked but deleted in the working tree
  if hits=$(grep -nE "$outside" "$SRC/$doc"); then
    while IFS= read -r hit; do
      echo "FAIL: $doc:$hit" >&2
      failures=$((failures + 1))
    done <<<"$hits"
  fi
done
if [ "$failures" -gt 0 ]; then
  echo "FAIL: $failures line(s) cite a file outside the repository; point at the page of docs/" \
    "that explains the same thing, or drop the citation" >&2
fi

# --- relative links point at files (and headings) that exist ---
if ! python3 - "$SRC" "${docs[@]}" <<'PY'; then
import os
import re
import sys

src, docs = sys.argv[1], sys.argv[2:]
link = re.compile(r"\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
fence = re.compile(r"^\s*(```|~~~)")


def prose_lines(path):
    """The lines outside fenced code blocks, with inline code spans removed."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if fence.match(line):
                inside = not inside
                continue
            if not inside:
                yield number, re.sub(r"`[^`]*`", "``", line)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    result = set()
    inside = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if fence.match(line):
                inside = not inside
                continue
            m = None if inside else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                result.add(base if n == 0 else f"{base}-{n}")
    return result


bad = 0
for doc in docs:
    path = os.path.join(src, doc)
    if not os.path.isfile(path):
        continue
    for number, line in prose_lines(path):
        for target in link.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("/"):
                continue  # a URL (http:, mailto:) or a site path: not checked here
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            if not dest.startswith(src + os.sep) and dest != src:
                print(f"FAIL: {doc}:{number}: link {target} leaves the repository", file=sys.stderr)
                bad += 1
            elif not os.path.exists(dest):
                print(f"FAIL: {doc}:{number}: link {target}: no such file", file=sys.stderr)
                bad += 1
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                print(f"FAIL: {doc}:{number}: link {target}: no such heading in "
                      f"{os.path.relpath(dest, src)}", file=sys.stderr)
                bad += 1
sys.exit(1 if bad else 0)
PY
  failures=$((failures + 1))
fi

if [ "$failures" -gt 0 ]; then
  exit 1
fi
echo "docs_test: ${#docs[@]} *.md files stand alone, and their relative links resolve"
