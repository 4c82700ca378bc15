#!/usr/bin/env python3
"""A bearer-token issuer in front of a registry, for the registry tests.

    token-proxy.py --upstream http://127.0.0.1:PORT --port-file FILE
                   [--auth bearer|none] [--user USER:PASSWORD] [--anonymous]
                   [--log FILE]

Listens on 127.0.0.1 (a free port, written to --port-file once it listens)
and forwards every request to --upstream (a plain-HTTP registry with no auth
of its own), the Host header kept, so the Locations the registry answers
with name this proxy.

--auth bearer: a request under /v2/ without a token this proxy issued gets
401 with `WWW-Authenticate: Bearer realm="http://127.0.0.1:P/token",
service="test",scope="repository:NAME:pull"` (pull,push for a write); GET
/token issues an opaque token for good basic credentials (--user), or for
none at all when --anonymous is given; bad credentials get 401. A token is
good for the scope it was asked for and all requests of that repository.
--auth none: a plain forwarding proxy (to count requests).

--log: one line per request, written and flushed before it is forwarded,
"METHOD PATH AUTH" (AUTH: bearer, basic or none; never the secret itself).
Standard library only.
"""

import argparse
import base64
import http.client
import http.server
import json
import os
import re
import secrets
import sys
import threading
import urllib.parse

HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
       "transfer-encoding", "upgrade"}


class State:
    lock = threading.Lock()
    tokens = {}  # token -> set of repository names
    args = None
    port = 0
    log = None


def log(line):
    if State.log is None:
        return
    with State.lock:
        State.log.write(line + "\n")
        State.log.flush()


def repo_of(path):
    m = re.match(r"^/v2/(.+?)/(manifests|blobs|tags)/", path)
    return m.group(1) if m else None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def auth_kind(self):
        a = self.headers.get("Authorization", "")
        return a.split(" ", 1)[0].lower() if a else "none"

    def reply(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def token(self):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        a = self.headers.get("Authorization", "")
        ok = False
        if a.lower().startswith("basic "):
            try:
                given = base64.b64decode(a[6:].strip()).decode()
            except Exception:
                given = None
            ok = State.args.user is not None and given == State.args.user
            if not ok:
                self.reply(401, b'{"details":"bad credentials"}', [("Content-Type", "application/json")])
                return
        elif State.args.anonymous:
            ok = True
        if not ok:
            self.reply(401, b'{"details":"credentials required"}', [("Content-Type", "application/json")])
            return
        repos = set()
        for s in q.get("scope", []):
            for one in s.split(" "):
                parts = one.split(":")
                if len(parts) >= 3 and parts[0] == "repository":
                    repos.add(":".join(parts[1:-1]))
        t = secrets.token_hex(16)
        with State.lock:
            State.tokens[t] = repos
        body = json.dumps({"token": t, "access_token": t, "expires_in": 300}).encode()
        self.reply(200, body, [("Content-Type", "application/json")])

    def authorized(self, path):
        a = self.headers.get("Authorization", "")
        if not a.lower().startswith("bearer "):
            return False
        with State.lock:
            repos = State.tokens.get(a[7:].strip())
        if repos is None:
            return False
        repo = repo_of(path)
        return repo is None or repo in repos

    def challenge(self, path):
        repo = repo_of(path)
        hdr = 'Bearer realm="http://127.0.0.1:%d/token",service="test"' % State.port
        if repo:
            action = "pull" if self.command in ("GET", "HEAD") else "pull,push"
            hdr += ',scope="repository:%s:%s"' % (repo, action)
        body = b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}'
        self.reply(401, body, [("WWW-Authenticate", hdr), ("Content-Type", "application/json"),
                               ("Docker-Distribution-Api-Version", "registry/2.0")])

    def handle_any(self):
        path = urllib.parse.urlsplit(self.path).path
        log("%s %s %s" % (self.command, path, self.auth_kind()))
        if path == "/token":
            self.token()
            return
        if State.args.auth == "bearer" and path.startswith("/v2") and not self.authorized(path):
            # Drain a body the client sent before answering.
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                self.rfile.read(n)
            self.challenge(path)
            return
        self.forward()

    def forward(self):
        up = urllib.parse.urlsplit(State.args.upstream)
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
        # A list: a header may come more than once (Accept does).
        headers = [(k, v) for k, v in self.headers.items()
                   if k.lower() not in HOP and k.lower() not in ("authorization", "content-length")]
        body = None
        if "Content-Length" in self.headers:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            headers.append(("Content-Length", str(len(body))))
        elif self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(n))
                self.rfile.readline()
            body = b"".join(chunks)
            headers.append(("Content-Length", str(len(body))))
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers:
            conn.putheader(k, v)
        conn.endheaders(body)
        resp = conn.getresponse()
        self.send_response(resp.status, resp.reason)
        length = resp.getheader("Content-Length")
        for k, v in resp.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        if length is None and self.command != "HEAD" and resp.status not in (204, 304):
            data = resp.read()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self.end_headers()
            if self.command != "HEAD":
                while True:
                    data = resp.read(65536)
                    if not data:
                        break
                    self.wfile.write(data)
        conn.close()

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--auth", choices=("bearer", "none"), default="bearer")
    ap.add_argument("--user")
    ap.add_argument("--anonymous", action="store_true")
    ap.add_argument("--log")
    State.args = ap.parse_args()
    if State.args.log:
        State.log = open(State.args.log, "a")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    State.port = srv.server_address[1]
    tmp = State.args.port_file + ".new"
    with open(tmp, "w") as f:
        f.write("%d\n" % State.port)
    os.rename(tmp, State.args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
