"""An evaluation report: GSM8K-style answer accuracy of saved model responses.

Reads a JSON Lines file of {"question", "reference", "response"} records (the file next to
this one by default), scores every response with both answer rules of scoring.py, and prints
one line per rule and one per response the rules disagree on. Standard library only; runs in
well under a second on one CPU.

    python3 report.py [samples.jsonl]
"""

import json
import os
import platform
import sys

import scoring

# Bump on every change to the scoring: it is printed with every report, so two reports can
# be compared only when they name the same version.
REPORT_VERSION = "v1"


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    path = argv[1] if len(argv) > 1 else os.path.join(here, "samples.jsonl")
    with open(path, encoding="utf-8") as f:
        samples = [json.loads(line) for line in f if line.strip()]
    if not samples:
        print("eval-report: no samples in " + path, file=sys.stderr)
        return 1
    print("eval-report %s: %d samples from %s (python %s)" % (
        REPORT_VERSION, len(samples), os.path.basename(path), platform.python_version()))
    scores = {}
    for method in ("strict", "flexible"):
        scores[method] = [scoring.score(s, method) for s in samples]
        right = sum(scores[method])
        print("  %-8s %2d/%d = %5.1f%%" % (method, right, len(samples), 100.0 * right / len(samples)))
    for i, sample in enumerate(samples):
        if scores["strict"][i] != scores["flexible"][i]:
            print("  rules disagree on #%d: %r" % (i, sample["response"][-60:]))
    print("eval-report %s: done" % REPORT_VERSION)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
