#!/usr/bin/env python3
"""A local stand-in for the comment APIs of GitHub (issues comments) and GitLab (merge request
notes), for the review recipe's test. Keeps comments in memory, appends every call as one JSON
line to the file given as argv[1], prints its port on stdout, and serves until killed. Only
requests with the expected token are accepted (401 otherwise)."""

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1]
TOKEN = sys.argv[2]
comments = {}  # thread key -> list of {"id", "body"}
next_id = [1000]

GITHUB_THREAD = re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$")
GITHUB_ONE = re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")
GITLAB_THREAD = re.compile(r"^/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes$")
GITLAB_ONE = re.compile(r"^/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes/(\d+)$")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def authorised(self):
        return (self.headers.get("Authorization") == f"Bearer {TOKEN}" or
                self.headers.get("PRIVATE-TOKEN") == TOKEN)

    def reply(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self, body):
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n")

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.record(body)
        if not self.authorised():
            return self.reply(401, {"message": "Bad credentials"})
        path, _, query = self.path.partition("?")
        page = int(dict(p.split("=") for p in query.split("&") if "=" in p).get("page", "1"))
        thread = GITHUB_THREAD.match(path) or GITLAB_THREAD.match(path)
        one = GITHUB_ONE.match(path) or GITLAB_ONE.match(path)
        if thread:
            key = "/".join(thread.groups())
            items = comments.setdefault(key, [])
            if self.command == "GET":
                return self.reply(200, items if page == 1 else [])
            if self.command == "POST":
                next_id[0] += 1
                items.append({"id": next_id[0], "body": body["body"]})
                return self.reply(201, items[-1])
        if one and self.command in ("PATCH", "PUT"):
            wanted = int(one.groups()[-1])
            for items in comments.values():
                for item in items:
                    if item["id"] == wanted:
                        item["body"] = body["body"]
                        return self.reply(200, item)
        return self.reply(404, {"message": "Not Found"})

    do_GET = do_POST = do_PATCH = do_PUT = handle_any


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
