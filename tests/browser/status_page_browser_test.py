"""Loads the status page in headless Chromium and checks what the browser made of it.

The expected jobs come from the same server's /api/v1/status; the observed ones from the DOM
Chromium dumps after loading /. Also takes a screenshot and checks it is a real, non-blank PNG.

usage: status_page_browser_test.py <status_page_server> <chromium> <screenshot.png>
"""

import html.parser
import json
import shutil
import struct
import subprocess
import sys
import tempfile
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

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "title":
            self._in_title = True
        if a.get("id") == "state":
            self._in_state = True
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


def main():
    server_bin, chromium_bin, screenshot = sys.argv[1:4]
    server = subprocess.Popen([server_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    profile = tempfile.mkdtemp(prefix="rg-chromium-")
    try:
        first = server.stdout.readline().split()
        assert first[:1] == ["port"], first
        base = f"http://127.0.0.1:{first[1]}"
        with urllib.request.urlopen(base + "/api/v1/status", timeout=10) as r:
            status = json.load(r)

        dom = chromium(chromium_bin, profile, "--dump-dom", base + "/")
        page = PageParser()
        page.feed(dom)

        # Nothing from the hostile message became an element.
        assert "script" not in page.tags, "a <script> element reached the DOM"
        assert "img" not in page.tags, "an <img> element reached the DOM"
        assert "pwned" not in page.title, page.title
        assert page.title.startswith("ray-gitops"), page.title
        assert page.state.strip() == status["state"], (page.state, status["state"])

        rows = {row["name"]: row for row in page.rows}
        assert len(page.rows) == len(status["jobs"]), (len(page.rows), len(status["jobs"]))
        dashboard = status["dashboard_url"].rstrip("/")
        for job in status["jobs"]:
            row = rows[job["name"]]
            cells = row["cells"]
            assert cells[0] == job["name"], cells
            assert cells[1] == job["phase"], (cells[1], job["phase"])
            assert row["phase_class"] == "phase phase-" + job["phase"].lower(), row
            if job["submission_id"]:
                assert cells[2] == job["submission_id"], cells
                assert row["links"] == [f"{dashboard}/#/jobs/{job['submission_id']}"], row
            else:
                assert row["links"] == [], row
            message = "\n".join(filter(None, [job["message"]] + job["errors"]))
            assert cells[8] == message, (cells[8], message)

        hostile = [j for j in status["jobs"] if "<script>" in (j["message"] or "")]
        assert hostile, "the canned snapshot lost its hostile message"
        assert rows[hostile[0]["name"]]["cells"][8] == hostile[0]["message"]

        for phase, n in status["counts"].items():
            assert f"</span>{phase}<b>{n}</b></li>" in dom, phase

        chromium(chromium_bin, profile, "--window-size=1400,900", f"--screenshot={screenshot}",
                 base + "/")
        check_png(screenshot)
        print(f"status page ok: {len(page.rows)} jobs, hostile message shown as text")
        return 0
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
