#!/usr/bin/env python3
"""Puts a multi-platform image into a plain-HTTP registry, for the tests.

    make-index.py URL SRC_REPO SRC_TAG DEST_REPO DEST_TAG

Reads image SRC_REPO:SRC_TAG (one manifest, this host's platform) from the
registry at URL (http://127.0.0.1:PORT) and uploads to DEST_REPO three images
made of its layers plus one layer of /etc/arch (the platform's name, a line):
linux/arm64, linux/arm/v7 and linux/amd64 (their configs say so), then an
OCI index of the three, in that order (the host's last), tagged DEST_TAG.
Prints the index's digest. Standard library only (the OCI distribution
spec's monolithic upload: POST, then PUT ?digest=).
"""

import gzip
import hashlib
import io
import json
import sys
import tarfile
import urllib.parse
import urllib.request

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
ACCEPT = ", ".join([OCI_MANIFEST, "application/vnd.docker.distribution.manifest.v2+json"])


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


class Reg:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def req(self, method, path, body=None, headers=None):
        url = path if path.startswith("http") else self.url + path
        r = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        with urllib.request.urlopen(r) as resp:
            return resp.status, resp.headers, resp.read()

    def manifest(self, repo, ref):
        _, h, b = self.req("GET", "/v2/%s/manifests/%s" % (repo, ref), headers={"Accept": ACCEPT})
        return json.loads(b), h.get("Content-Type")

    def blob(self, repo, digest):
        return self.req("GET", "/v2/%s/blobs/%s" % (repo, digest))[2]

    def put_blob(self, repo, data):
        d = sha(data)
        _, h, _ = self.req("POST", "/v2/%s/blobs/uploads/" % repo, body=b"")
        loc = urllib.parse.urljoin(self.url + "/", h["Location"])
        loc += ("&" if "?" in loc else "?") + "digest=" + urllib.parse.quote(d)
        self.req("PUT", loc, body=data, headers={"Content-Type": "application/octet-stream"})
        return d

    def put_manifest(self, repo, ref, data, media_type):
        self.req("PUT", "/v2/%s/manifests/%s" % (repo, ref), body=data, headers={"Content-Type": media_type})
        return sha(data)


def arch_layer(name):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as t:
        ti = tarfile.TarInfo("etc")
        ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 1700000000
        t.addfile(ti)
        data = (name + "\n").encode()
        ti = tarfile.TarInfo("etc/arch")
        ti.mode, ti.mtime, ti.size = 0o644, 1700000000, len(data)
        t.addfile(ti, io.BytesIO(data))
    raw = bio.getvalue()
    return raw, gzip.compress(raw, mtime=0)


def main():
    url, src_repo, src_tag, repo, tag = sys.argv[1:6]
    reg = Reg(url)
    src, _ = reg.manifest(src_repo, src_tag)
    config = json.loads(reg.blob(src_repo, src["config"]["digest"]))
    for layer in src["layers"]:
        reg.put_blob(repo, reg.blob(src_repo, layer["digest"]))
    entries = []
    for os_, arch, variant in (("linux", "arm64", None), ("linux", "arm", "v7"), ("linux", "amd64", None)):
        pname = "/".join(p for p in (os_, arch, variant) if p)
        raw, gz = arch_layer(pname)
        ld = reg.put_blob(repo, gz)
        cfg = json.loads(json.dumps(config))
        cfg["architecture"], cfg["os"] = arch, os_
        cfg.pop("variant", None)
        if variant:
            cfg["variant"] = variant
        cfg["rootfs"]["diff_ids"] = list(cfg["rootfs"]["diff_ids"]) + [sha(raw)]
        cfg_b = json.dumps(cfg).encode()
        cd = reg.put_blob(repo, cfg_b)
        m = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
             "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": len(cfg_b)},
             "layers": [dict(l, mediaType="application/vnd.oci.image.layer.v1.tar+gzip") for l in src["layers"]]
             + [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": ld, "size": len(gz)}]}
        mb = json.dumps(m).encode()
        md = reg.put_manifest(repo, sha(mb), mb, OCI_MANIFEST)
        plat = {"os": os_, "architecture": arch}
        if variant:
            plat["variant"] = variant
        entries.append({"mediaType": OCI_MANIFEST, "digest": md, "size": len(mb), "platform": plat})
    idx = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}).encode()
    print(reg.put_manifest(repo, tag, idx, OCI_INDEX))
    return 0


if __name__ == "__main__":
    sys.exit(main())
