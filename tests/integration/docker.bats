#!/usr/bin/env bats
# Docker inside (--docker, sbx-create(1)): a with_docker image (debian:bookworm
# by debootstrap, then docker.io by apt-get in the build sandbox: the
# distribution's mirror, as debian.bats; built once per file by the first
# test that needs it: debootstrap's minutes plus 66 MB of packages, then
# shared with the tests by hard links), dockerd started at
# creation under runc, a tiny image made here (busybox in a docker-save
# archive: no registry) loaded with `docker load` and run, the nested
# container on the sandbox's network (its egress refusals, sbx expose);
# sbx.conf's docker_runtime (log: allowed and audited; enforce:
# POLICY_REFUSED); runsc's refusal with the measured reason; an image without
# dockerd.

load ../helpers/common

# The docker-save archive of tiny:1: the host's static busybox as /bin/busybox.
make_tiny_archive () {
  local d=$BATS_FILE_TMPDIR/tiny
  mkdir -p "$d/rootfs/bin" "$d/rootfs/www"
  cp "$SBX_BUSYBOX" "$d/rootfs/bin/busybox"
  echo nested-ok >"$d/rootfs/www/index.html"
  tar -C "$d/rootfs" -cf "$d/layer.tar" .
  py - "$d" <<'EOF'
import hashlib, io, json, sys, tarfile
d = sys.argv[1]
layer = open(d + "/layer.tar", "rb").read()
lsum = hashlib.sha256(layer).hexdigest()
cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["/bin/busybox", "sh"]},
                  "rootfs": {"type": "layers", "diff_ids": ["sha256:" + lsum]}}).encode()
csum = hashlib.sha256(cfg).hexdigest()
man = json.dumps([{"Config": csum + ".json", "RepoTags": ["tiny:1"], "Layers": [lsum + "/layer.tar"]}]).encode()
with tarfile.open(d + "/tiny.tar", "w") as t:
    for name, data in (("manifest.json", man), (csum + ".json", cfg), (lsum + "/layer.tar", layer)):
        ti = tarfile.TarInfo(name)
        ti.size, ti.mode = len(data), 0o644
        t.addfile(ti, io.BytesIO(data))
EOF
  mkdir -p "$d/in" && mv "$d/tiny.tar" "$d/in/"
}

setup_file () {
  sbx_build_payload_tar
  make_tiny_archive
}

teardown_file () {
  [ -d "$BATS_FILE_TMPDIR/root" ] || return 0
  SBX_ROOT=$BATS_FILE_TMPDIR/root SBX_RUN_ROOT=$BATS_FILE_TMPDIR/run "$SBX_BIN" gc >/dev/null 2>&1
  rm -rf --one-file-system "$BATS_FILE_TMPDIR/root" "$BATS_FILE_TMPDIR/run"
}

# The image `dk` in this test's store: built once per file, by the first
# test that needs it, into the file's own store (with the host's resolvers:
# the resolver guard is off for that test, as in debian.bats), then the
# file's layers and image records hard-linked in (layers are never written
# in place).
with_docker_image () {
  local ctx=$BATS_FILE_TMPDIR/ctx out
  command -v debootstrap >/dev/null || fail "no debootstrap (install it)"
  if [ ! -e "$BATS_FILE_TMPDIR/built" ]; then
    sbx_guard_off "debootstrap and apt fetch docker.io from the distribution's mirror"
    mkdir -p "$ctx"
    echo '{ "base": "debian:bookworm", "steps": [ { "with_docker": true } ] }' >"$ctx/blueprint.json"
    echo "# written by docker.bats: the host's resolvers" >"$BATS_FILE_TMPDIR/sbx.conf"
    out=$(SBX_CONF=$BATS_FILE_TMPDIR/sbx.conf SBX_ROOT=$BATS_FILE_TMPDIR/root SBX_RUN_ROOT=$BATS_FILE_TMPDIR/run \
      "$SBX_BIN" build --tag dk "$ctx" 2>&1) || fail "the with_docker build failed: $out"
    touch "$BATS_FILE_TMPDIR/built"
  fi
  mkdir -p "$SBX_ROOT"
  cp -al "$BATS_FILE_TMPDIR/root/layers" "$BATS_FILE_TMPDIR/root/images" "$SBX_ROOT/"
}

@test "docker: --docker on runc (docker_runtime = log): dockerd answers, docker load and run, the sandbox's network, expose, audit" {
  require_runtime runc
  with_docker_image
  local id mac url token
  id=$(sbx create --runtime runc --docker --image dk --copy-in "$BATS_FILE_TMPDIR/tiny/in:/tmp/in")
  # create returned: dockerd answers already.
  run --separate-stderr sbx exec "$id" -- docker version --format '{{.Server.Os}}'
  expect_status 0
  expect_eq "$output" linux "dockerd answers"
  run --separate-stderr sbx exec "$id" -- docker load -i /tmp/in/tiny.tar
  expect_status 0
  expect_eq "$output" "Loaded image: tiny:1"
  run --separate-stderr sbx exec "$id" -- docker run --rm tiny:1 /bin/busybox echo hello-nested
  expect_status 0
  expect_eq "$output" hello-nested "a nested container runs"
  # --network host: the sandbox's own interface, and its egress rules (a
  # refused destination fails at once).
  mac=$(sbx exec "$id" -- cat /sys/class/net/eth0/address)
  run --separate-stderr sbx exec "$id" -- docker run --rm --network host tiny:1 /bin/busybox sh -c \
    'cat /sys/class/net/eth0/address; busybox wget -q -T 5 -O /dev/null http://169.254.169.254/ && echo reached || echo refused'
  expect_status 0
  expect_eq "$output" "$mac
refused" "the nested container is on the sandbox's interface, under its egress rules"
  # Its port is the sandbox's: sbx expose serves it.
  sbx exec "$id" -- docker run -d --network host tiny:1 /bin/busybox httpd -f -p 8080 -h /www >/dev/null
  url=$(sbx --json expose "$id" 8080 | jpipe 'd["url"]')
  token=$(cat "$SBX_ROOT/token")
  run py - "$url" "$token" <<'EOF'
import sys, time, urllib.request
req = urllib.request.Request(sys.argv[1] + "/index.html", headers={"Authorization": "Bearer " + sys.argv[2]})
for i in range(100):
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            print(r.status, r.read().decode().strip())
            break
    except OSError:
        time.sleep(0.1)
EOF
  expect_status 0
  expect_eq "$output" "200 nested-ok" "the nested server through sbx expose"
  # The audit record says Docker ran on runc.
  run --separate-stderr sbx --json audit
  expect_status 0
  expect_eq "$(jget '[r["event"] for r in d if r["sandbox"] == "'"$id"'"]')" '["sandbox.docker_on_runc"]' "audit"
  # Its capabilities: the default set, SYS_ADMIN, NET_ADMIN, and moby's
  # MKNOD, NET_RAW, AUDIT_WRITE (bits 21, 12, 27, 13, 29).
  run --separate-stderr sbx exec "$id" -- sh -c 'grep CapBnd /proc/self/status'
  expect_eq "$output" "CapBnd:	00000000a82435fb" "bounding set"
  sbx terminate "$id" >/dev/null
}

@test "docker: sbx run --docker on runc, and a sandbox without --docker has no dockerd and the default hardening" {
  require_runtime runc
  with_docker_image
  run --separate-stderr sbx run --rm --runtime runc --docker --image dk --copy-in "$BATS_FILE_TMPDIR/tiny/in:/tmp/in" \
    -- sh -c 'docker load -q -i /tmp/in/tiny.tar >/dev/null && docker run --rm tiny:1 /bin/busybox echo via-run'
  expect_status 0
  expect_eq "$output" via-run
  run --separate-stderr sbx run --rm --runtime runc --image dk -- sh -c \
    'grep CapBnd /proc/self/status; docker version >/dev/null 2>&1 || echo no-daemon'
  expect_status 0
  expect_eq "$output" "CapBnd:	$SBX_DEFAULT_CAPS
no-daemon"
}

@test "docker: runsc is RUNTIME_UNAVAILABLE with the reason; docker_runtime = enforce is POLICY_REFUSED; no dockerd is INVALID_ARGUMENT" {
  sbx_import_payload
  expect_error RUNTIME_UNAVAILABLE create --docker --image payload
  expect_contains "$output" "cgroupfs has no devices controller"
  expect_contains "$output" "use --runtime runc"
  expect_error RUNTIME_UNAVAILABLE run --runtime runsc --docker --image payload -- true
  sbx_write_conf "docker_runtime = enforce"
  expect_error POLICY_REFUSED create --runtime runc --docker --image payload
  expect_contains "$output" "docker_runtime = enforce"
  expect_error POLICY_REFUSED run --runtime runc --docker --image payload -- true
  # Refused before anything was made: no sandbox, no audit record.
  expect_eq "$(sbx ls -q)" "" "no sandbox"
  expect_eq "$(sbx --json audit | jpipe "len(d)")" 0 "no audit record"
  sbx_write_conf "docker_runtime = log"
  require_runtime runc
  expect_error INVALID_ARGUMENT create --runtime runc --docker --image payload
  expect_contains "$output" "the image has no dockerd"
  expect_contains "$output" 'with_docker'
  expect_eq "$(sbx ls -q)" "" "the failed create left no sandbox"
}
