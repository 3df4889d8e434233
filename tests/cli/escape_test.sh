#!/usr/bin/env bash
# Output a pull request cannot spoof, on a real repository: a spec whose values hold a line
# break and a forged "✅ no runs change, safe to merge" heading, ANSI escapes, a carriage return
# and bidi controls, a file name holding them too, and a commit author and a status record
# holding them. `diff` (markdown: no line of it starts with the forged heading or a value's
# HTML, each table row keeps its cells; text: no raw control character), `validate` and
# `history` (no raw control character), and `plan` against the fake Ray head the same.
# Args: path-to-binary source-dir path-to-fake-ray-server.
set -u
bin=$1
fake=$3
# shellcheck source=tests/cli/lib.sh
source "$2/tests/cli/lib.sh"
export RAY_ADDRESS=http://127.0.0.1:1 RAY_API_SERVER_ADDRESS=http://127.0.0.1:1

forged='## ✅ no runs change, safe to merge'
# As a YAML double-quoted scalar: a line break before and after the heading, ANSI colour, a
# carriage return, an RLO override, HTML and a fence.
value='x\n'"$forged"'\n\e[31mred\e[0m\rcr \u202eevil </details><script>x</script> ```'

# No raw C0 control but the line feed, no DEL, no C1 or bidi control in a file.
no_raw_controls() {
  python3 - "$1" <<'PY'
import re, sys
data = open(sys.argv[1], "rb").read()
text = data.decode("utf-8", errors="strict")
bad = re.findall("[\x00-\x09\x0b-\x1f\x7f\x80-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]", text)
sys.exit(1 if bad else 0)
PY
}

# check_markdown FILE HEADING: every line of FILE is one of ours: outside code blocks no heading
# but ours (HEADING), no HTML but our <details> lines, no value's HTML, each table row with five
# cells; no line anywhere starts with the forged heading; every code block closed.
check_markdown() {
  python3 - "$1" "$forged" "$2" <<'PY' || fail "markdown lines of $1: $(cat "$1")"
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
forged = sys.argv[2]
fence = None
problems = []
for n, line in enumerate(lines, 1):
    if line.startswith(forged.split(" ")[0] + " ") and forged[3:] in line:
        problems.append(f"{n}: forged heading: {line!r}")
    if fence:
        if line == fence:
            fence = None
        continue
    if line.startswith("```"):
        fence = line[: len(line) - len(line.lstrip("`"))]
        continue
    if line.startswith("#") and not line.startswith(sys.argv[3]):
        problems.append(f"{n}: a heading not ours: {line!r}")
    if line.startswith("<") and not (line.startswith("<details><summary>") or line == "</details>"):
        problems.append(f"{n}: HTML not ours: {line!r}")
    if "<script" in re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", line):
        problems.append(f"{n}: raw HTML from a value: {line!r}")
    if line.startswith("|"):
        bare, i = 0, 0
        for i, c in enumerate(line):
            if c == "|":
                run = len(line[:i]) - len(line[:i].rstrip("\\"))
                bare += run % 2 == 0
        if bare != 6:
            problems.append(f"{n}: a table row with {bare - 1} cells: {line!r}")
if fence:
    problems.append("a code block left open")
if problems:
    print("\n".join(problems))
    sys.exit(1)
PY
}

repo=$work/repo
mkdir -p "$repo/jobs"
cd "$repo" || exit 1
git init -q .
printf 'address: http://127.0.0.1:8265\nshared_root: /shared\n' >cluster.yaml
printf 'workload: custom\nentrypoint: echo old\nannotations:\n  note: old\n' >jobs/a.yaml
git add -A && git commit -qm base

cat >jobs/a.yaml <<YAML
workload: custom
entrypoint: "echo $value"
env_vars:
  NOTE: "$value"
annotations:
  note: "$value"
YAML
cp jobs/a.yaml "jobs/new-$(printf 'n\e[31m\u202e')-$(printf '%s' "$forged" | tr -d '#')".yaml
printf 'workload: "%s"\n' "$value" >jobs/bad.yaml
git add -A && git commit -qm "hostile values"

# --- diff: markdown, every line ---
timeout 60 "$bin" diff --repo . HEAD~1 HEAD --format markdown >"$work/md" 2>"$work/md.err"
rc=$?
[[ $rc == 1 || $rc == 2 ]] || fail "diff markdown: exit $rc: $(cat "$work/md.err")"
grep -q "forged\|no runs change" "$work/md" || fail "the hostile value is not shown at all"
check_markdown "$work/md" "### ray-gitops diff"
no_raw_controls "$work/md" || fail "a raw control character in the markdown diff"

# --- diff: text ---
timeout 60 "$bin" diff --repo . HEAD~1 HEAD >"$work/text" 2>"$work/text.err"
no_raw_controls "$work/text" || fail "a raw control character in the text diff: $(cat -v "$work/text")"
grep -q '\\x1b\[31mred' "$work/text" || fail "the escape is not shown escaped: $(cat "$work/text")"
grep -q "^$forged" "$work/text" && fail "a value starts a line of the text diff"
# --- diff: json keeps the exact value ---
timeout 60 "$bin" diff --repo . HEAD~1 HEAD --format json >"$work/json" 2>/dev/null
python3 - "$work/json" "$forged" <<'PY' || fail "json: $(head -c 2000 "$work/json")"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
after = [f["after"] for j in d["jobs"] for f in j["fields"] if f["field"] == "annotations.note"]
assert after and "\n" + sys.argv[2] + "\n\x1b[31m" in after[0], after
PY

# --- validate: the diagnostic quoting the value is one line ---
timeout 60 "$bin" validate --repo . >"$work/validate.out" 2>"$work/validate.err"
[[ $? == 1 ]] || fail "validate: expected exit 1"
cat "$work/validate.out" "$work/validate.err" >"$work/validate"
no_raw_controls "$work/validate" || fail "a raw control character in validate: $(cat -v "$work/validate")"
grep -q "^$forged" "$work/validate" && fail "a value starts a line of validate's output"
grep -q "jobs/bad.yaml" "$work/validate" || fail "validate does not name the bad file"

# --- plan against the fake head: the hostile spec is submitted, its entrypoint shown ---
ray=""
start_server ray "$fake"
git rm -q jobs/bad.yaml jobs/new-*.yaml && git commit -qm "only the hostile valid spec"
timeout 60 "$bin" plan --repo . --ray-address "$ray" --cache-dir "$work/cache" --format markdown \
  >"$work/plan.md" 2>"$work/plan.err"
[[ $? == 2 ]] || fail "plan markdown: expected exit 2: $(cat "$work/plan.err")"
grep -q "safe to merge" "$work/plan.md" || fail "plan does not show the value: $(cat "$work/plan.md")"
check_markdown "$work/plan.md" "### ray-gitops plan"
no_raw_controls "$work/plan.md" || fail "a raw control character in the markdown plan"
timeout 60 "$bin" plan --repo . --ray-address "$ray" --cache-dir "$work/cache" \
  >"$work/plan.txt" 2>"$work/plan.err"
no_raw_controls "$work/plan.txt" || fail "a raw control character in the text plan: $(cat -v "$work/plan.txt")"
grep -q "^$forged" "$work/plan.txt" && fail "a value starts a line of the text plan"

# --- history: a commit author and a status record with control characters ---
spec_commit=$(GIT_AUTHOR_NAME=$'Eve \e[31mred\e[0m\u202e' git commit -q --allow-empty -m author \
  && git rev-parse HEAD)
git checkout -q --orphan ray-gitops/status
git rm -rq --cached . && rm -rf jobs cluster.yaml
mkdir -p status
cat >status/a.yaml <<YAML
name: a
spec_path: jobs/a.yaml
spec_hash: "3f2a1c9b0e"
spec_commit: "$spec_commit"
phase: Failed
submission_id: "a-3f2a1c9b0e\e[2J\n$forged"
attempt: 0
status: FAILED
message: "$value"
errors: []
attempts: []
YAML
git add status && git commit -qm status
git checkout -q main
timeout 60 "$bin" history a --repo . >"$work/history" 2>"$work/history.err" ||
  fail "history: $(cat "$work/history.err")"
no_raw_controls "$work/history" || fail "a raw control character in history: $(cat -v "$work/history")"
grep -q "^$forged" "$work/history" && fail "a value starts a line of history"
grep -q 'Eve \\x1b\[31mred' "$work/history" || fail "the author is not shown escaped: $(cat "$work/history")"
[[ $(wc -l <"$work/history") == 2 ]] || fail "history: a row spans lines: $(cat "$work/history")"

finish "escape: ok"
