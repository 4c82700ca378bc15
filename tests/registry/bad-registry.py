#!/usr/bin/env python3
"""A registry that breaks the protocol, one way per repository name.

    bad-registry.py --port-file FILE [--log FILE] [--drip-interval SECONDS]

Listens on 127.0.0.1 (a free port, written to --port-file once it listens),
plain HTTP. GET /v2/ answers 200. The repository a request names picks what
goes wrong with its `latest` tag (every other tag is 404 MANIFEST_UNKNOWN,
every other repository 404 NAME_UNKNOWN):

  good         a sound one-layer image (the control: this server works)
  wrongdigest  a layer blob whose bytes do not hash to its digest (same size)
  truncated    a layer blob cut short: Content-Length says all of it, the
               connection closes half way (a Range request gets no more)
  bigmanifest  a manifest of 5 MiB (over the 4 MiB bound)
  bigindex     an OCI index of 10,000 entries
  manylayers   a manifest of 129 layers (over SBX_PULL_LAYERS_MAX, 128)
  bomb         a layer of 40 KiB of gzip that expands to a 40 MiB file
  redirect     the manifest redirects to itself, forever (a loop of two URLs)
  drip         the layer blob comes one byte every --drip-interval seconds
               (default 3)
  norealm      every /v2/ request of it: 401 `WWW-Authenticate: Bearer
               service="test"` (no realm)
  schema1      a Docker schema 1 manifest (signed, prettyjws)
  foreign      an OCI manifest of a Helm chart (config and layer of the
               application/vnd.cncf.helm.* media types)
  slow1, slow2 a sound three-layer image whose top layer (256 KiB) comes
               1 KiB every 0.25 s the first time it is asked for, at once
               (Range honoured) after that: to interrupt a pull half way

Every blob is served with Range honoured (206) unless its mode says
otherwise.

--log: one line per request, written and flushed before the answer,
"METHOD PATH", and for a blob of slow1/slow2 " slow" (the top layer),
" fast" (another layer) or " config". Standard library only.
"""

import argparse
import gzip
import hashlib
import http.server
import io
import json
import os
import re
import sys
import tarfile
import threading
import time
import urllib.parse

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZ = "application/vnd.oci.image.layer.v1.tar+gzip"

ARGS = None
LOCK = threading.Lock()
LOGF = None


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def tar_of(files):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in files:
            ti = tarfile.TarInfo(name)
            ti.mtime, ti.mode, ti.size = 1700000000, 0o644, len(data)
            t.addfile(ti, io.BytesIO(data))
    return bio.getvalue()


def zeros_tar_gz(name, size):
    """A gzip tar of one file of SIZE zero bytes, made without holding it."""
    bio = io.BytesIO()
    raw = hashlib.sha256()

    class Tee:
        def __init__(self, gz):
            self.gz = gz

        def write(self, b):
            raw.update(b)
            return self.gz.write(b)

    with gzip.GzipFile(fileobj=bio, mode="wb", mtime=0) as gz:
        tee = Tee(gz)
        ti = tarfile.TarInfo(name)
        ti.mtime, ti.mode, ti.size = 1700000000, 0o644, size
        tee.write(ti.tobuf(format=tarfile.USTAR_FORMAT))
        chunk = bytes(1 << 20)
        left = size
        while left:
            n = min(left, len(chunk))
            tee.write(chunk[:n])
            left -= n
        tee.write(bytes((512 - size % 512) % 512))
        tee.write(bytes(1024))
    return bio.getvalue(), "sha256:" + raw.hexdigest()


class Image:
    """A manifest and the blobs it names."""

    def __init__(self):
        self.blobs = {}
        self.manifest = None
        self.media_type = OCI_MANIFEST

    def blob(self, data, media_type):
        d = sha(data)
        self.blobs[d] = data
        return {"mediaType": media_type, "digest": d, "size": len(data)}


def config_for(diff_ids):
    return json.dumps({"architecture": "amd64", "os": "linux", "created": "2024-01-02T03:04:05Z",
                       "config": {"Env": ["PATH=/bin"]},
                       "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()


def simple(layers_raw, compress=True):
    """An image of layers (raw tars), gzip-compressed."""
    img = Image()
    descs, diff_ids = [], []
    for raw in layers_raw:
        diff_ids.append(sha(raw))
        data = gzip.compress(raw, mtime=0) if compress else raw
        descs.append(img.blob(data, OCI_LAYER_GZ))
    cfg = img.blob(config_for(diff_ids), OCI_CONFIG)
    img.manifest = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": cfg,
                               "layers": descs}).encode()
    return img


def build():
    images = {}
    images["good"] = simple([tar_of([("good.txt", b"good\n")])])

    img = simple([tar_of([("wrong.txt", b"wrong digest\n" * 100)])])
    d = json.loads(img.manifest)["layers"][0]["digest"]
    data = bytearray(img.blobs[d])
    data[len(data) // 2] ^= 0xFF
    img.blobs[d] = bytes(data)
    images["wrongdigest"] = img

    images["truncated"] = simple([tar_of([("big.bin", os.urandom(256 * 1024))])])

    img = simple([tar_of([("x", b"x")])])
    m = json.loads(img.manifest)
    m["annotations"] = {"pad": "p" * (5 * 1024 * 1024)}
    img.manifest = json.dumps(m).encode()
    images["bigmanifest"] = img

    img = Image()
    entries = []
    for i in range(10000):
        entries.append({"mediaType": OCI_MANIFEST, "digest": "sha256:%064x" % i, "size": 1000,
                        "platform": {"os": "linux", "architecture": "arch%d" % i}})
    img.manifest = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}).encode()
    img.media_type = OCI_INDEX
    images["bigindex"] = img

    images["manylayers"] = simple([tar_of([("f%d" % i, b"%d\n" % i)]) for i in range(129)])

    img = Image()
    data, diff_id = zeros_tar_gz("bomb.bin", 40 << 20)
    desc = img.blob(data, OCI_LAYER_GZ)
    cfg = img.blob(config_for([diff_id]), OCI_CONFIG)
    img.manifest = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": cfg,
                               "layers": [desc]}).encode()
    images["bomb"] = img

    images["redirect"] = simple([tar_of([("r", b"r")])])
    images["drip"] = simple([tar_of([("drip.txt", b"drip\n" * 50)])])
    images["norealm"] = simple([tar_of([("n", b"n")])])

    img = Image()
    img.manifest = json.dumps({
        "schemaVersion": 1, "name": "schema1", "tag": "latest", "architecture": "amd64",
        "fsLayers": [{"blobSum": "sha256:a3ed95caeb02ffe68cdd9fd84406680ae93d633cb16422d00e8a7c22955b46d4"}],
        "history": [{"v1Compatibility": "{\"id\":\"x\"}"}],
        "signatures": [{"header": {"alg": "ES256"}, "signature": "c2ln", "protected": "e30"}]}).encode()
    img.media_type = "application/vnd.docker.distribution.manifest.v1+prettyjws"
    images["schema1"] = img

    img = Image()
    cfg = img.blob(b'{"name":"chart","version":"0.1.0","apiVersion":"v2"}', "application/vnd.cncf.helm.config.v1+json")
    lay = img.blob(gzip.compress(tar_of([("chart/Chart.yaml", b"name: chart\n")]), mtime=0),
                   "application/vnd.cncf.helm.chart.content.v1.tar+gzip")
    img.manifest = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": cfg,
                               "layers": [lay]}).encode()
    images["foreign"] = img

    for n in ("slow1", "slow2"):
        images[n] = simple([tar_of([("%s-a" % n, b"a\n")]), tar_of([("%s-b" % n, b"b\n")]),
                            tar_of([("%s-c.bin" % n, os.urandom(256 * 1024))])])
    return images


IMAGES = {}
SLOW_SERVED = set()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def reply(self, code, body=b"", headers=(), length=None):
        self.send_response(code)
        self.send_header("Docker-Distribution-Api-Version", "registry/2.0")
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, code, what):
        body = json.dumps({"errors": [{"code": what, "message": what.lower().replace("_", " ")}]}).encode()
        self.reply(code, body, [("Content-Type", "application/json")])

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        note = ""
        m = re.match(r"^/v2/(slow[12])/blobs/(.+)$", path)
        if m and m.group(1) in IMAGES:
            man = json.loads(IMAGES[m.group(1)].manifest)
            if m.group(2) == man["layers"][-1]["digest"]:
                note = " slow"
            elif m.group(2) == man["config"]["digest"]:
                note = " config"
            else:
                note = " fast"
        if LOGF is not None:
            with LOCK:
                LOGF.write("%s %s%s\n" % (self.command, path, note))
                LOGF.flush()
        if path in ("/v2", "/v2/"):
            self.reply(200, b"{}", [("Content-Type", "application/json")])
            return
        m = re.match(r"^/v2/(.+?)/(manifests|blobs)/([^/]+)$", path)
        if not m:
            self.error(404, "NAME_UNKNOWN")
            return
        name, kind, ref = m.groups()
        img = IMAGES.get(name)
        if img is None:
            self.error(404, "NAME_UNKNOWN")
            return
        if name == "norealm":
            self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                       [("WWW-Authenticate", 'Bearer service="test"'), ("Content-Type", "application/json")])
            return
        if kind == "manifests":
            if name == "redirect":
                n = int(urllib.parse.parse_qs(url.query).get("hop", ["0"])[0])
                self.reply(302, b"", [("Location", "/v2/redirect/manifests/%s?hop=%d" % (ref, (n + 1) % 2))])
                return
            if ref != "latest" and ref != sha(img.manifest):
                self.error(404, "MANIFEST_UNKNOWN")
                return
            self.reply(200, img.manifest, [("Content-Type", img.media_type),
                                           ("Docker-Content-Digest", sha(img.manifest))])
            return
        data = img.blobs.get(ref)
        if data is None:
            self.error(404, "BLOB_UNKNOWN")
            return
        if name == "truncated" and json.loads(img.manifest)["layers"][0]["digest"] == ref:
            self.truncated(data)
            return
        if name == "drip" and json.loads(img.manifest)["layers"][0]["digest"] == ref:
            self.drip(data)
            return
        if name.startswith("slow") and json.loads(img.manifest)["layers"][-1]["digest"] == ref:
            with LOCK:
                first = name not in SLOW_SERVED
                SLOW_SERVED.add(name)
            if first and self.command == "GET":
                self.drip(data, chunk=1024, interval=0.25)
                return
        rng = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if rng and int(rng.group(1)) < len(data):
            start = int(rng.group(1))
            end = int(rng.group(2)) if rng.group(2) else len(data) - 1
            end = min(end, len(data) - 1)
            self.reply(206, data[start:end + 1], [("Content-Type", "application/octet-stream"),
                                                  ("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))])
            return
        self.reply(200, data, [("Content-Type", "application/octet-stream"), ("Docker-Content-Digest", ref)])

    do_HEAD = do_GET

    def truncated(self, data):
        half = len(data) // 2
        start = 0
        rng = re.match(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if rng:
            start = int(rng.group(1))
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if self.command != "HEAD" and start < half:
            self.wfile.write(data[start:half])
        self.wfile.flush()
        self.close_connection = True

    def drip(self, data, chunk=1, interval=None):
        if interval is None:
            interval = ARGS.drip_interval
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if self.command == "HEAD":
            return
        try:
            for i in range(0, len(data), chunk):
                self.wfile.write(data[i:i + chunk])
                self.wfile.flush()
                time.sleep(interval)
        except OSError:
            pass
        self.close_connection = True


def main():
    global ARGS, LOGF
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log")
    ap.add_argument("--drip-interval", type=float, default=1.0)
    ARGS = ap.parse_args()
    if ARGS.log:
        LOGF = open(ARGS.log, "a")
    IMAGES.update(build())
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    tmp = ARGS.port_file + ".new"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, ARGS.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
