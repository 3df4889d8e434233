#!/usr/bin/env python3
"""peak_rss reports its command's own peak, not its parent's: a parent holding 300 MB starts
/bin/true through it (wait4 alone reports the parent's 300 MB there), and a command that
touches 64 MB is reported at 64 MB or more. Exit codes pass through."""
import os
import sys

peak_rss = sys.argv[1]
out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"peak-rss-test-{os.getpid()}")


def run(argv):
    pid = os.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    _, status, usage = os.wait4(pid, 0)
    with open(out) as f:
        reported_kb = int(f.read())
    os.remove(out)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss, reported_kb


held = bytearray(300 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1

code, wait4_kb, own_kb = run([peak_rss, out, "/bin/true"])
print(f"/bin/true: wait4 {wait4_kb} KB, peak_rss {own_kb} KB")
assert code == 0, code
assert wait4_kb > 250 << 10, "the parent's resident set no longer shows through wait4"
assert own_kb < 128 << 10, f"peak_rss reported {own_kb} KB for /bin/true"

touch = "b = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
code, _, own_kb = run([peak_rss, out, sys.executable, "-c", touch])
print(f"64 MB touched: peak_rss {own_kb} KB")
assert code == 0, code
assert own_kb >= 64 << 10, own_kb

code, _, _ = run([peak_rss, out, "/bin/sh", "-c", "exit 3"])
assert code == 3, code
print("PASS")
