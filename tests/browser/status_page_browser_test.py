"""Loads the status page in headless Chromium and checks what the browser made of it.

The expected jobs come from the same server's /api/v1/status; the observed ones from the DOM
Chromium dumps after loading /. Also takes a screenshot and checks it is a real, non-blank PNG.
Then a job's own page (/jobs/<name>), and two snapshots made by the reconcile loop on a fake
clock: one invalid spec (a ready daemon, the error on the job's row, no failing banner) and Ray
unreachable after a good pass (the last known jobs, and since when Ray cannot be reached).

usage: status_page_browser_test.py <status_page_server> <chromium> <screenshot.png>
"""

import contextlib
import html.parser
import json
import shutil
import struct
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zlib


class PageParser(html.parser.HTMLParser):
    """Collects the job rows, their cells, links and every element name seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.rows = []
        self.title = ""
        self.state = ""
        self._row = None
        self._cell = None
        self._in_title = False
        self._in_state = False
        self.state_class = ""
        self.ids = {}
        self.attempts = []
        self.notice = ""
        self._in_notice = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "title":
            self._in_title = True
        if a.get("id"):
            self.ids[a["id"]] = tag
        if a.get("id") == "state":
            self._in_state = True
            self.state_class = a.get("class", "")
        if a.get("id") == "unready":
            self._in_notice = 1
        elif self._in_notice:
            self._in_notice += 1
        if tag == "tr" and a.get("class") == "attempt":
            self.attempts.append(a.get("data-submission-id"))
        if tag == "tr" and a.get("class") == "job":
            self._row = {"name": a.get("data-name"), "phase": a.get("data-phase"),
                         "cells": [], "links": []}
        elif self._row is not None and tag == "td":
            self._cell = []
        elif self._row is not None and tag == "a":
            self._row["links"].append(a.get("href"))
        elif self._row is not None and tag == "span" and "phase" in a.get("class", ""):
            self._row["phase_class"] = a.get("class")

    def handle_endtag(self, tag):
        if self._in_notice:
            self._in_notice -= 1
        if tag == "title":
            self._in_title = False
        if tag == "div":
            self._in_state = False
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row["cells"].append("".join(self._cell))
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._in_state:
            self.state += data
        if self._in_notice:
            self.notice += data
        if self._cell is not None:
            self._cell.append(data)


def check_png(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "screenshot is not a PNG"
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    assert width >= 800 and height >= 600, (width, height)
    # Decode enough of the image to see it is not one flat colour: a blank page would be.
    idat = b""
    pos = 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    distinct = len(set(raw[: 4 * width * 200]))
    assert distinct > 20, f"screenshot looks blank ({distinct} distinct byte values)"
    print(f"screenshot {width}x{height}, {len(data)} bytes, {distinct} distinct byte values")


def chromium(binary, profile, *args):
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--disable-extensions", "--hide-scrollbars",
           f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120).stdout


@contextlib.contextmanager
def serve(server_bin, scenario):
    """The status page server over `scenario`'s snapshot; yields its base URL."""
    server = subprocess.Popen([server_bin, scenario], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        first = server.stdout.readline().split()
        assert first[:1] == ["port"], first
        yield f"http://127.0.0.1:{first[1]}"
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def status_code(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def load(chromium_bin, profile, url):
    page = PageParser()
    dom = chromium(chromium_bin, profile, "--dump-dom", url)
    page.feed(dom)
    # Nothing from a hostile message became an element.
    assert "script" not in page.tags, "a <script> element reached the DOM"
    assert "img" not in page.tags, "an <img> element reached the DOM"
    assert "pwned" not in page.title, page.title
    return page, dom


def check_rows(page, status):
    """Every job of the JSON is a row of the page with the same phase, links and message."""
    rows = {row["name"]: row for row in page.rows}
    assert len(page.rows) == len(status["jobs"]), (len(page.rows), len(status["jobs"]))
    dashboard = status["dashboard_url"].rstrip("/")
    for job in status["jobs"]:
        row = rows[job["name"]]
        cells = row["cells"]
        assert cells[0] == job["name"], cells
        assert cells[1] == job["phase"], (cells[1], job["phase"])
        assert row["phase_class"] == "phase phase-" + job["phase"].lower(), row
        links = [f"jobs/{job['name']}"]
        if job["submission_id"]:
            assert cells[2] == job["submission_id"], cells
            links.append(f"{dashboard}/#/jobs/{job['submission_id']}")
        assert row["links"] == links, (row["links"], links)
        assert cells[5] == (job["spec_commit"] or "")[:12], (cells[5], job["spec_commit"])
        message = "\n".join(filter(None, [job["message"]] + job["errors"]))
        assert cells[8] == message, (cells[8], message)
    return rows


def check_sample(server_bin, chromium_bin, profile, screenshot):
    with serve(server_bin, "sample") as base:
        status = get_json(base + "/api/v1/status")
        page, dom = load(chromium_bin, profile, base + "/")
        assert page.title.startswith("ray-gitops"), page.title
        assert page.state.strip() == status["state"], (page.state, status["state"])
        rows = check_rows(page, status)
        hostile = [j for j in status["jobs"] if "<script>" in (j["message"] or "")]
        assert hostile, "the canned snapshot lost its hostile message"
        assert rows[hostile[0]["name"]]["cells"][8] == hostile[0]["message"]
        for phase, n in status["counts"].items():
            assert f"</span>{phase}<b>{n}</b></li>" in dom, phase

        # The hostile job's own page: every attempt, as text; the same data as JSON.
        name = hostile[0]["name"]
        job = get_json(f"{base}/api/v1/jobs/{name}")
        job_page, _ = load(chromium_bin, profile, f"{base}/jobs/{name}")
        assert job_page.attempts == [a["submission_id"] for a in job["job"]["attempts"]], (
            job_page.attempts)
        assert "job-facts" in job_page.ids and "attempts" in job_page.ids, job_page.ids
        assert status_code(f"{base}/jobs/no-such-job") == 404
        assert status_code(f"{base}/jobs/%3Cscript%3E") == 404
        assert status_code(f"{base}/api/v1/jobs/Bad_Name") == 404

        chromium(chromium_bin, profile, "--window-size=1400,900", f"--screenshot={screenshot}",
                 base + "/")
        check_png(screenshot)
        print(f"status page ok: {len(page.rows)} jobs, hostile message shown as text, "
              f"job page of {name} with {len(job_page.attempts)} attempts")


def check_invalid_spec(server_bin, chromium_bin, profile):
    with serve(server_bin, "invalid-spec") as base:
        status = get_json(base + "/api/v1/status")
        page, _ = load(chromium_bin, profile, base + "/")
        assert status["ready"] and status["state"] == "ready", status["state"]
        assert page.state.strip() == "ready", page.state
        assert "state-failing" not in page.state_class, page.state_class
        assert "unready" not in page.ids, "a not-ready notice for an invalid spec"
        assert "warnings" in page.ids, "the invalid spec is not listed as a warning"
        rows = check_rows(page, status)
        invalid = [j for j in status["jobs"] if j["phase"] == "Invalid"]
        assert invalid and invalid[0]["errors"], status["jobs"]
        assert invalid[0]["errors"][0] in rows[invalid[0]["name"]]["cells"][8]
        print(f"invalid spec ok: ready, the error on the row of {invalid[0]['name']}")


def check_ray_unreachable(server_bin, chromium_bin, profile):
    with serve(server_bin, "ray-unreachable") as base:
        status = get_json(base + "/api/v1/status")
        page, _ = load(chromium_bin, profile, base + "/")
        assert not status["ready"] and status["unreachable"] == "Ray", status
        assert status["jobs"], "the last known jobs were dropped"
        check_rows(page, status)
        since = status["unreachable_since"]  # 2026-01-01T00:00:15.000Z
        shown = since[:10] + " " + since[11:19] + "Z"
        assert f"Cannot reach Ray since {shown}" in page.notice, page.notice
        assert "as last known" in page.notice, page.notice
        print(f"Ray unreachable ok: {len(page.rows)} last known jobs, since {shown}")


def main():
    server_bin, chromium_bin, screenshot = sys.argv[1:4]
    profile = tempfile.mkdtemp(prefix="rg-chromium-")
    try:
        check_sample(server_bin, chromium_bin, profile, screenshot)
        check_invalid_spec(server_bin, chromium_bin, profile)
        check_ray_unreachable(server_bin, chromium_bin, profile)
        return 0
    finally:
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
