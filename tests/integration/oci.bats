#!/usr/bin/env bats
# Images from and to other tools: sbx export writes an OCI archive that
# podman loads and runs; sbx import takes it back, and takes hand-made OCI
# layouts (directory and tar) and docker-save-style archives with their
# config, whiteouts across layers and all. Every broken one (a digest that
# does not match, a path out of the archive, a missing or cut blob, no image
# for this host) is refused and leaves nothing in the store.

load ../helpers/common

# oci_make FORMAT OUT VARIANT: a two-layer image made from the payload
# tarball. Layer 1 is the payload (gzip-compressed in a layout); layer 2 adds
# /etc/motd and /work/hello and whites out /etc/group. The config sets Env
# FOO, WorkingDir /work, Entrypoint + Cmd and User.
#   FORMAT layout: OUT is a directory (oci-layout, index.json, blobs/sha256)
#   FORMAT docker: OUT is a docker save tar (manifest.json, HEX.json config,
#                  a legacy HEX/layer.tar, a HEX.tar and a symlink to it)
# VARIANT: good, multi (an arm64 entry before the amd64 one), arm64 (only
# arm64), bad-diffid, flip (a layer blob changed, same size), truncate (a
# layer blob cut short), missing (the config blob gone), dotdot (an index
# digest or a docker layer path climbing out).
oci_make () {
  py - "$1" "$2" "$3" "$BATS_FILE_TMPDIR/payload.tar" <<'EOF'
import gzip, hashlib, io, json, os, sys, tarfile

fmt, out, variant, payload = sys.argv[1:5]

def sha(b):
    return hashlib.sha256(b).hexdigest()

def add(t, name, data=None, link=None):
    ti = tarfile.TarInfo(name)
    ti.mtime, ti.uid, ti.gid = 1700000000, 0, 0
    if link is not None:
        ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, link, 0o777
        t.addfile(ti)
    elif data is None:
        ti.type, ti.mode = tarfile.DIRTYPE, 0o755
        t.addfile(ti)
    else:
        ti.size, ti.mode = len(data), 0o644
        t.addfile(ti, io.BytesIO(data))

def tar_bytes(entries):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as t:
        for e in entries:
            add(t, *e)
    return bio.getvalue()

l1 = open(payload, "rb").read()
l2 = tar_bytes([("etc", None), ("etc/motd", b"from layer two\n"), ("etc/.wh.group", b""),
                ("work", None), ("work/hello", b"hello from work\n")])
arch = "arm64" if variant == "arm64" else "amd64"
diff_ids = ["sha256:" + sha(l1), "sha256:" + sha(l2)]
if variant == "bad-diffid":
    diff_ids[1] = "sha256:" + "0" * 64
config = {
    "created": "2024-01-02T03:04:05Z", "architecture": arch, "os": "linux",
    "config": {"Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "FOO=bar baz"], "WorkingDir": "/work",
               "Entrypoint": ["/bin/sh"], "Cmd": ["-c", "echo hi"], "User": "0"},
    "rootfs": {"type": "layers", "diff_ids": diff_ids},
}
cfg = json.dumps(config).encode()

if fmt == "layout":
    blobs = {}
    def blob(b):
        h = sha(b)
        blobs[h] = b
        return {"digest": "sha256:" + h, "size": len(b)}
    l1z = gzip.compress(l1, mtime=0)
    manifest = {
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": dict(mediaType="application/vnd.oci.image.config.v1+json", **blob(cfg)),
        "layers": [dict(mediaType="application/vnd.oci.image.layer.v1.tar+gzip", **blob(l1z)),
                   dict(mediaType="application/vnd.oci.image.layer.v1.tar", **blob(l2))],
    }
    m = json.dumps(manifest).encode()
    entry = dict(mediaType="application/vnd.oci.image.manifest.v1+json", **blob(m),
                 platform={"architecture": arch, "os": "linux"},
                 annotations={"org.opencontainers.image.ref.name": "handmade"})
    entries = [entry]
    if variant == "multi":
        other = dict(entry, platform={"architecture": "arm64", "os": "linux"})
        entries = [other, entry]
    if variant == "dotdot":
        entry["digest"] = "sha256:../../../../../../etc/passwd"
    os.makedirs(out + "/blobs/sha256")
    for h, b in blobs.items():
        open(out + "/blobs/sha256/" + h, "wb").write(b)
    open(out + "/oci-layout", "w").write('{"imageLayoutVersion": "1.0.0"}')
    open(out + "/index.json", "w").write(json.dumps({"schemaVersion": 2, "manifests": entries}))
    l1p = out + "/blobs/sha256/" + sha(l1z)
    l2p = out + "/blobs/sha256/" + sha(l2)
    if variant == "flip":
        b = bytearray(l2)
        b[700] ^= 0xff
        open(l2p, "wb").write(bytes(b))
    if variant == "truncate":
        open(l1p, "wb").write(l1z[: len(l1z) // 2])
    if variant == "missing":
        os.unlink(out + "/blobs/sha256/" + sha(cfg))
else:
    legacy1, legacy2 = sha(b"legacy one"), sha(b"legacy two")
    layers = [legacy1 + "/layer.tar", legacy2 + "/layer.tar"]
    if variant == "dotdot":
        layers[1] = "../" + sha(l2) + ".tar"
    manifest = [{"Config": sha(cfg) + ".json", "RepoTags": ["handmade:latest"], "Layers": layers}]
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        add(t, legacy1, None)
        add(t, legacy1 + "/VERSION", b"1.0")
        add(t, legacy1 + "/json", b"{}")
        add(t, legacy1 + "/layer.tar", l1)
        add(t, sha(l2) + ".tar", l2)
        add(t, legacy2, None)
        add(t, legacy2 + "/layer.tar", link="../" + sha(l2) + ".tar")
        add(t, sha(cfg) + ".json", cfg)
        add(t, "manifest.json", json.dumps(manifest).encode())
        add(t, "repositories", json.dumps({"handmade": {"latest": legacy2}}).encode())
EOF
}

# Nothing of a refused import in the store: no layer, no temp directory, no
# image, no tag.
expect_store_clean () {
  local f left=
  for f in "$SBX_ROOT"/layers/sha256/* "$SBX_ROOT"/layers/tmp/* "$SBX_ROOT"/images/*.json; do
    [ "$f" = "$SBX_ROOT/images/tags.json" ] && [ "$(jget 'len(d)' "$(cat "$f")")" = 0 ] && continue
    [ -e "$f" ] && left="$left $f"
  done
  [ -z "$left" ] || fail "left in the store:$left"
}

# refused CODE WORD PATH: importing PATH (tagged) fails with CODE, the message
# says WORD, and the store stays clean.
refused () {
  expect_error "$1" import --tag refused "$3"
  expect_contains "$output" "$2"
  expect_store_clean
}

# In a new runc sandbox of IMAGE: FOO, the working directory, the files of
# both layers and whether the whiteout hides /etc/group.
sandbox_view () {
  local id
  id=$(sbx create --runtime runc --image "$1") || return 1
  run --separate-stderr sbx exec "$id" -- sh -c \
    'echo "FOO=$FOO"; pwd; cat /etc/motd /work/hello; test -e /etc/group && echo group-seen || echo group-hidden; head -n 1 /etc/passwd'
  sbx terminate --rm "$id" >/dev/null
}

expect_handmade_view () {
  expect_status 0
  expect_eq "$output" "$(printf 'FOO=bar baz\n/work\nfrom layer two\nhello from work\ngroup-hidden\nroot:x:0:0:root:/root:/bin/sh')" \
    "the image's files and config in a sandbox"
}

# The config of the OCI archive FILE, as JSON.
archive_config () {
  py - "$1" <<'EOF'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
blob = lambda d: t.extractfile("blobs/sha256/" + d.split(":")[1]).read()
index = json.loads(t.extractfile("index.json").read())
manifest = json.loads(blob(index["manifests"][0]["digest"]))
print(json.dumps({"index": index, "manifest": manifest, "config": json.loads(blob(manifest["config"]["digest"]))}))
EOF
}

# --- podman ------------------------------------------------------------------

PODMAN_DIR=

podman_ () {
  podman --root "$PODMAN_DIR/root" --runroot "$PODMAN_DIR/run" --storage-driver vfs --cgroup-manager cgroupfs "$@"
}

teardown () {
  if [ -n "$PODMAN_DIR" ] && [ -d "$PODMAN_DIR" ]; then
    podman_ rm -af >/dev/null 2>&1
    podman_ rmi -af >/dev/null 2>&1
    grep -qF "$PODMAN_DIR" /proc/mounts && awk -v d="$PODMAN_DIR" 'index($2, d) == 1 { print $2 }' /proc/mounts |
      sort -r | xargs -r umount -l
    rm -rf "$PODMAN_DIR"
  fi
  sbx_teardown
}

@test "oci: an exported image loads into podman, which runs it with the same files; what podman saves imports back" {
  command -v podman >/dev/null || skip "podman is not installed"
  command -v runc >/dev/null || skip "runc is not installed"
  sbx_import_payload
  local file=$BATS_TEST_TMPDIR/payload.oci.tar
  run --separate-stderr sbx --json export payload "$file"
  expect_status 0
  expect_eq "$(jget 'd["file"]')" "$file" "export file"
  expect_eq "$(jget 'd["size"]')" "$(stat -c %s "$file")" "export size"
  expect_eq "$(jget 'd["id"]')" "$(sbx --json images | jpipe '[i["id"] for i in d if "payload" in i["tags"]][0]')" \
    "export id"
  # Written atomically: no temp file beside it.
  expect_eq "$(ls -A "$BATS_TEST_TMPDIR" | grep -c '\.sbx-')" 0 "temp files next to the archive"
  local doc
  doc=$(archive_config "$file")
  expect_eq "$(jget 'd["index"]["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]' "$doc")" payload \
    "ref.name"
  expect_eq "$(jget 'd["config"]["architecture"] + "/" + d["config"]["os"]' "$doc")" amd64/linux "platform"

  PODMAN_DIR=$(mktemp -d /tmp/sbx-podman.XXXXXX)
  run podman_ load -i "$file"
  expect_status 0
  expect_contains "$output" "localhost/payload:latest"
  # The host's hard limits are below podman's defaults (DESIGN.md 8).
  run --separate-stderr podman_ --runtime runc run --rm --network=none --ulimit nofile=1024:1024 \
    --ulimit nproc=1024:1024 localhost/payload:latest sh -c 'cat /etc/passwd; ls /bin/sbx-testpayload; pwd'
  expect_status 0
  expect_eq "$output" "$(cat <(tar -xOf "$BATS_FILE_TMPDIR/payload.tar" ./etc/passwd) <(printf '/bin/sbx-testpayload\n/'))" \
    "files in podman's container"
  # What podman writes comes back as the same image.
  local id format
  id=$(sbx --json images | jpipe '[i["id"] for i in d if "payload" in i["tags"]][0]')
  for format in docker-archive oci-archive oci-dir; do
    run podman_ save --format "$format" -o "$BATS_TEST_TMPDIR/saved-$format" localhost/payload:latest
    expect_status 0
    run --separate-stderr sbx --json import "$BATS_TEST_TMPDIR/saved-$format"
    expect_status 0
    expect_eq "$(jget 'd["kind"]')" "${format/oci-dir/oci-layout}" "kind of podman's $format"
    expect_eq "$(jget 'd["id"]')" "$id" "image from podman's $format"
  done
}

@test "oci: a hand-made OCI layout imports with its config, and a whiteout hides a lower layer's file" {
  require_runtime runc
  local dir=$BATS_TEST_TMPDIR/layout
  oci_make layout "$dir" multi
  run --separate-stderr sbx --json import --tag handmade "$dir"
  expect_status 0
  expect_eq "$(jget 'd["kind"]')" oci-layout "kind"
  expect_eq "$(jget 'len(d["layers"])')" 2 "layers"
  sandbox_view handmade
  expect_handmade_view
  # Without a command, run runs Entrypoint + Cmd.
  run --separate-stderr sbx run --rm --runtime runc --image handmade
  expect_status 0
  expect_eq "$output" hi "Entrypoint + Cmd"
  expect_eq "$(ls "$SBX_ROOT/layers/tmp" | wc -l)" 0 "temp directories left"
}

@test "oci: a hand-made OCI archive (a tar of the layout) imports the same image" {
  require_runtime runc
  local dir=$BATS_TEST_TMPDIR/layout
  oci_make layout "$dir" good
  run --separate-stderr sbx --json import --tag fromdir "$dir"
  expect_status 0
  local id
  id=$(jget 'd["id"]')
  tar -C "$dir" -cf "$BATS_TEST_TMPDIR/layout.tar" .
  run --separate-stderr sbx --json import --tag fromtar "$BATS_TEST_TMPDIR/layout.tar"
  expect_status 0
  expect_eq "$(jget 'd["kind"]')" oci-archive "kind"
  expect_eq "$(jget 'd["id"]')" "$id" "same image from the tar"
  sandbox_view fromtar
  expect_handmade_view
  expect_eq "$(ls "$SBX_ROOT/layers/tmp" | wc -l)" 0 "temp directories left"
}

@test "oci: a docker-save-style archive imports, legacy layer directories and symlinks too" {
  require_runtime runc
  oci_make docker "$BATS_TEST_TMPDIR/docker.tar" good
  run --separate-stderr sbx --json import --tag docker "$BATS_TEST_TMPDIR/docker.tar"
  expect_status 0
  expect_eq "$(jget 'd["kind"]')" docker-archive "kind"
  sandbox_view docker
  expect_handmade_view
  expect_eq "$(ls "$SBX_ROOT/layers/tmp" | wc -l)" 0 "temp directories left"
}

@test "oci: export then import gives the same image where the store has it, the same files and config anywhere" {
  require_runtime runc
  oci_make layout "$BATS_TEST_TMPDIR/layout" good
  run --separate-stderr sbx --json import --tag handmade "$BATS_TEST_TMPDIR/layout"
  expect_status 0
  local id file=$BATS_TEST_TMPDIR/out.tar
  id=$(jget 'd["id"]')
  run --separate-stderr sbx --json export handmade "$file"
  expect_status 0
  local doc
  doc=$(archive_config "$file")
  expect_eq "$(jget 'd["config"]["config"]["Env"]' "$doc")" '["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "FOO=bar baz"]' "Env"
  expect_eq "$(jget 'd["config"]["config"]["WorkingDir"]' "$doc")" /work "WorkingDir"
  expect_eq "$(jget 'd["config"]["config"]["Cmd"]' "$doc")" '["/bin/sh", "-c", "echo hi"]' "Cmd"
  expect_eq "$(jget 'd["config"]["config"]["User"]' "$doc")" 0 "User"
  expect_eq "$(jget 'len(d["manifest"]["layers"])' "$doc")" 2 "layers"
  # Into the store that has the image: export wrote the layers' tars from
  # their files, and the store knows which layers they came from.
  run --separate-stderr sbx --json import --tag again "$file"
  expect_status 0
  expect_eq "$(jget 'd["id"]')" "$id" "the same image id when the store has it"
  expect_eq "$(ls "$SBX_ROOT/layers/sha256" | wc -l)" 2 "layers in the store (no second copy)"
  # The image and its layers go, then come back from the archive: the same
  # files and config, the layers named by the tars export wrote.
  sbx rmi handmade >/dev/null
  sbx rmi again >/dev/null
  expect_store_clean
  [ ! -e "$SBX_ROOT/layers/alias" ] || expect_eq "$(ls "$SBX_ROOT/layers/alias" | wc -l)" 0 "aliases of removed layers"
  run --separate-stderr sbx --json import --tag back "$file"
  expect_status 0
  expect_eq "$(jget 'd["kind"]')" oci-archive "kind"
  local back
  back=$(jget 'd["id"]')
  sandbox_view back
  expect_handmade_view
  # From there the round trip is exact: export writes the same tars again.
  run --separate-stderr sbx --json export back "$BATS_TEST_TMPDIR/second.tar"
  expect_status 0
  expect_eq "$(jget '[l["digest"] for l in d["manifest"]["layers"]]' "$(archive_config "$BATS_TEST_TMPDIR/second.tar")")" \
    "$(jget '[l["digest"] for l in d["manifest"]["layers"]]' "$(archive_config "$file")")" "the same layer blobs"
  # Uncompressed layers round-trip too.
  run --separate-stderr sbx --json export --compression none back "$BATS_TEST_TMPDIR/plain.tar"
  expect_status 0
  expect_eq "$(jget 'd["manifest"]["layers"][0]["mediaType"]' "$(archive_config "$BATS_TEST_TMPDIR/plain.tar")")" \
    application/vnd.oci.image.layer.v1.tar "uncompressed media type"
  sbx rmi back >/dev/null
  run --separate-stderr sbx --json import "$BATS_TEST_TMPDIR/plain.tar"
  expect_status 0
  expect_eq "$(jget 'd["id"]')" "$back" "the same image from uncompressed layers"
}

@test "oci: export refuses an unknown image, a bad --compression, a directory as FILE" {
  sbx_import_payload
  local out=$BATS_TEST_TMPDIR/out
  mkdir "$out"
  expect_error NOT_FOUND export nosuchimage "$out/x.tar"
  expect_error INVALID_ARGUMENT export --compression lz4 payload "$out/x.tar"
  expect_error INVALID_ARGUMENT export payload "$out"
  expect_error NOT_FOUND export payload "$out/no/such/dir/x.tar"
  expect_error INVALID_ARGUMENT export payload
  expect_eq "$(ls -A "$out" | wc -l)" 0 "files left by refused exports"
  expect_eq "$(ls "$SBX_ROOT/layers/tmp" | wc -l)" 0 "temp directories left"
}

@test "oci: a layer that is not what the config's diff_id says is refused, nothing left" {
  oci_make layout "$BATS_TEST_TMPDIR/layout" bad-diffid
  refused INVALID_ARGUMENT "digest mismatch" "$BATS_TEST_TMPDIR/layout"
  oci_make docker "$BATS_TEST_TMPDIR/docker.tar" bad-diffid
  refused INVALID_ARGUMENT "digest mismatch" "$BATS_TEST_TMPDIR/docker.tar"
}

@test "oci: a blob changed after the fact is refused, in a layout and in its tar, nothing left" {
  oci_make layout "$BATS_TEST_TMPDIR/layout" flip
  refused INVALID_ARGUMENT "digest mismatch" "$BATS_TEST_TMPDIR/layout"
  tar -C "$BATS_TEST_TMPDIR/layout" -cf "$BATS_TEST_TMPDIR/layout.tar" .
  refused INVALID_ARGUMENT "digest mismatch" "$BATS_TEST_TMPDIR/layout.tar"
}

@test "oci: a truncated blob is refused, nothing left" {
  oci_make layout "$BATS_TEST_TMPDIR/layout" truncate
  refused INVALID_ARGUMENT "bytes" "$BATS_TEST_TMPDIR/layout"
  tar -C "$BATS_TEST_TMPDIR/layout" -cf "$BATS_TEST_TMPDIR/layout.tar" .
  refused INVALID_ARGUMENT "bytes" "$BATS_TEST_TMPDIR/layout.tar"
}

@test "oci: a missing blob is refused, nothing left" {
  oci_make layout "$BATS_TEST_TMPDIR/layout" missing
  refused INVALID_ARGUMENT "missing" "$BATS_TEST_TMPDIR/layout"
  tar -C "$BATS_TEST_TMPDIR/layout" -cf "$BATS_TEST_TMPDIR/layout.tar" .
  refused INVALID_ARGUMENT "missing" "$BATS_TEST_TMPDIR/layout.tar"
}

@test "oci: paths that climb out of the image are refused, nothing left" {
  oci_make layout "$BATS_TEST_TMPDIR/layout" dotdot
  refused INVALID_ARGUMENT "digest" "$BATS_TEST_TMPDIR/layout"
  oci_make docker "$BATS_TEST_TMPDIR/docker.tar" dotdot
  refused INVALID_ARGUMENT "not a safe relative path" "$BATS_TEST_TMPDIR/docker.tar"
  # A member of the archive itself named with `..`.
  py - "$BATS_TEST_TMPDIR/evil.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name in ("oci-layout", "blobs/../../escaped"):
        ti = tarfile.TarInfo(name)
        data = b'{"imageLayoutVersion": "1.0.0"}'
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
EOF
  refused INVALID_ARGUMENT "not a safe relative path" "$BATS_TEST_TMPDIR/evil.tar"
  [ ! -e "$SBX_ROOT/layers/escaped" ] && [ ! -e "$SBX_ROOT/escaped" ] || fail "a member was written out of the work directory"
}

@test "oci: an index with no linux/amd64 image is refused, nothing left" {
  oci_make layout "$BATS_TEST_TMPDIR/layout" arm64
  refused INVALID_ARGUMENT "no image for linux/amd64" "$BATS_TEST_TMPDIR/layout"
  tar -C "$BATS_TEST_TMPDIR/layout" -cf "$BATS_TEST_TMPDIR/layout.tar" .
  refused INVALID_ARGUMENT "no image for linux/amd64" "$BATS_TEST_TMPDIR/layout.tar"
}

@test "oci: a directory that is no image is still refused as before" {
  mkdir -p "$BATS_TEST_TMPDIR/empty"
  refused INVALID_ARGUMENT "directory" "$BATS_TEST_TMPDIR/empty"
}
