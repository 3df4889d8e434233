#!/usr/bin/env python3
"""A listener that records every request it gets, for tests of where credentials go: appends
one JSON line per request (method, path, headers with lower-case names) to the file given as
argv[1], prints its port on stdout, and serves until killed. It answers as a Ray head with no
jobs would: GET /api/version and GET /api/jobs/ (an empty list); anything else is 404."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1]
VERSION = {"version": "4", "ray_version": "2.60.0", "ray_commit": "0" * 40,
           "session_name": "session_recorder"}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def record(self):
        entry = {"method": self.command, "path": self.path,
                 "headers": {k.lower(): v for k, v in self.headers.items()}}
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def reply(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def answer(self):
        self.record()
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        path = self.path.split("?", 1)[0]
        if self.command == "GET" and path == "/api/version":
            self.reply(200, VERSION)
        elif self.command == "GET" and path == "/api/jobs/":
            self.reply(200, [])
        else:
            self.reply(404, {"detail": "not found"})

    do_GET = do_POST = do_PUT = do_DELETE = answer


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
