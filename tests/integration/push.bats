#!/usr/bin/env bats
# Images to and from registries as names in the store: sbx push writes an
# OCI image that podman pulls and runs, and sends no blob the registry has;
# --image REF / --pull POLICY on create and run, and a blueprint's base,
# take an image from the store by its full reference and pull it only when
# the policy says so (with the image present, `missing` sends no request);
# full references are tags that images, tag and rmi take. Registries are
# docker-registry on loopback (tests/helpers/registry.bash).

load ../helpers/common
load ../helpers/registry

setup_file () {
  sbx_build_payload_tar
  reg_start reg plain
}

teardown_file () {
  reg_stop_all
}

setup () {
  sbx_setup
  sbx_write_conf "registry_insecure = $(reg_addr reg)"
}

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

# The image id `sbx images` gives tag NAME.
image_id_of () {
  sbx --json images | jpipe "[i['id'] for i in d if '$1' in i['tags']][0]"
}

# requests METHOD PATH: requests the registry logged for /v2/PATH/...
# (METHOD: an extended regular expression).
requests () {
  reg_count reg "\"($1) /v2/$2/"
}

@test "push: podman pulls and runs what sbx pushed, config and all; a second push sends no blob again" {
  command -v podman >/dev/null || skip "podman is not installed"
  command -v runc >/dev/null || skip "runc is not installed"
  sbx_import_payload
  # Two layers and a config: env, workdir, cmd, on the payload.
  local ctx=$BATS_TEST_TMPDIR/ctx reg ref
  reg=$(reg_addr reg)
  ref=$reg/sbx/app:1
  mkdir -p "$ctx"
  echo "hello from a pushed layer" >"$ctx/hello.txt"
  cat >"$ctx/blueprint.json" <<-EOF
	{ "base": "payload", "steps": [ { "env": { "FOO": "bar baz" } }, { "workdir": "/work" },
	  { "files": [ { "src": "hello.txt", "dest": "/work/hello.txt" } ] }, { "cmd": [ "cat", "hello.txt" ] } ] }
	EOF
  run --separate-stderr sbx build --runtime runc --tag app "$ctx"
  expect_status 0

  run --separate-stderr sbx --json push app "$ref"
  expect_status 0
  local digest
  digest=$(jget 'd["digest"]')
  expect_eq "$digest" "$(reg_digest reg sbx/app:1)" "the digest push printed is the registry's"
  local nblobs
  nblobs=$(($(sbx --json images | jpipe "len([i for i in d if 'app' in i['tags']][0]['layers'])") + 1))
  [ "$nblobs" -ge 3 ] || fail "the built image has $((nblobs - 1)) layers, expected two or more"
  expect_eq "$(requests PUT sbx/app/blobs)" "$nblobs" "blobs uploaded (each layer, the config)"
  # Plain output: the digest alone.
  run --separate-stderr sbx push app "$reg/sbx/app:2"
  expect_status 0
  expect_eq "$output" "$digest" "second push's output"
  # ... which sent no blob again, and compressed nothing again (the record
  # of what each layer compressed to is kept beside it).
  expect_eq "$(requests PUT sbx/app/blobs)" "$nblobs" "blobs uploaded after the second push"
  expect_eq "$(requests POST sbx/app/blobs)" "$nblobs" "uploads started after the second push"
  local l
  for l in $(sbx --json images | jpipe "' '.join([i for i in d if 'app' in i['tags']][0]['layers'])"); do
    [ -s "$SBX_ROOT/layers/sha256/${l#sha256:}/push-gzip" ] || fail "no push record beside layer $l"
  done

  PODMAN_DIR=$(mktemp -d /tmp/sbx-podman.XXXXXX)
  run podman_ pull -q --tls-verify=false "$ref"
  expect_status 0
  run --separate-stderr podman_ --runtime runc run --rm --network=none --ulimit nofile=1024:1024 \
    --ulimit nproc=1024:1024 "$ref"
  expect_status 0
  expect_eq "$output" "hello from a pushed layer" "the image's cmd, in its workdir, under podman"
  run --separate-stderr podman_ --runtime runc run --rm --network=none --ulimit nofile=1024:1024 \
    --ulimit nproc=1024:1024 "$ref" sh -c 'echo "$FOO"; pwd; cat /etc/passwd'
  expect_status 0
  expect_eq "$output" "$(printf 'bar baz\n/work\n'; tar -xOf "$BATS_FILE_TMPDIR/payload.tar" ./etc/passwd)" \
    "env, workdir and the base layer's files under podman"
}

@test "push: bad input is refused before anything is sent" {
  sbx_import_payload
  local reg before
  reg=$(reg_addr reg)
  before=$(reg_count reg '"(POST|PUT|HEAD) ')
  expect_error NOT_FOUND push no-such-image "$reg/x:1"
  expect_error INVALID_ARGUMENT push payload "$reg/UPPER:1"
  expect_error INVALID_ARGUMENT push payload "$reg/x@sha256:$(printf '%064d' 0)"
  run --separate-stderr sbx push payload "$reg/x:bad tag"
  expect_status 125
  expect_eq "$(reg_count reg '"(POST|PUT|HEAD) ')" "$before" "requests for refused pushes"
  # Nothing listens on port 1: the registry cannot be reached.
  printf 'registry_insecure = 127.0.0.1:1\n' >>"$SBX_CONF"
  expect_error INTERNAL push payload 127.0.0.1:1/x:1
}

@test "images: full references are tags that images, tag, rmi and --image take" {
  require_runtime runc
  sbx_import_payload
  local id
  id=$(image_id_of payload)
  run --separate-stderr sbx tag payload docker.io/library/python:3.12-slim
  expect_status 0
  run --separate-stderr sbx tag payload 127.0.0.1:5000/team/tool:v1.2
  expect_status 0
  run --separate-stderr sbx images
  expect_status 0
  expect_contains "$output" "payload,docker.io/library/python:3.12-slim,127.0.0.1:5000/team/tool:v1.2"
  expect_eq "$(sbx --json images | jpipe "' '.join(sorted([i for i in d if i['id'] == '$id'][0]['tags']))")" \
    "127.0.0.1:5000/team/tool:v1.2 docker.io/library/python:3.12-slim payload" "--json tags"
  # A short name finds the full reference it normalizes to, with no registry
  # asked (the image is there): docker.io/library/ is implied.
  run --separate-stderr sbx run --runtime runc --pull never --image python:3.12-slim -- cat /etc/passwd
  expect_status 0
  expect_contains "$output" "root:x:0:0"
  # Not a reference: refused by name.
  expect_error INVALID_ARGUMENT tag payload Docker.io/Library/X:1
  expect_error INVALID_ARGUMENT create --image 'bad ref:1'
  # rmi by full reference takes that tag only while others remain.
  run --separate-stderr sbx rmi docker.io/library/python:3.12-slim
  expect_status 0
  expect_eq "$output" "untagged docker.io/library/python:3.12-slim" "rmi output"
  expect_eq "$(sbx --json images | jpipe "' '.join(sorted([i for i in d if i['id'] == '$id'][0]['tags']))")" \
    "127.0.0.1:5000/team/tool:v1.2 payload" "tags after rmi"
  expect_error NOT_FOUND rmi docker.io/library/python:3.12-slim
  # A short name is read as podman reads it: the full reference it
  # normalizes to, by tag, rmi and push alike; one not there is NOT_FOUND by
  # that reference.
  run --separate-stderr sbx tag 127.0.0.1:5000/team/tool:v1.2 docker.io/library/alpine:3
  expect_status 0
  run --separate-stderr sbx tag alpine:3 docker.io/library/python:3.12-slim
  expect_status 0
  expect_eq "$(image_id_of docker.io/library/python:3.12-slim)" "$id" "tagged from a short name"
  run --separate-stderr sbx rmi python:3.12-slim
  expect_status 0
  expect_eq "$output" "untagged docker.io/library/python:3.12-slim" "rmi of a short name"
  expect_error NOT_FOUND rmi python:3.12-slim
  expect_contains "$output" "docker.io/library/python:3.12-slim"
}

@test "obtain: --pull missing uses the image present without a request; never refuses; always pulls" {
  require_runtime runc
  sbx_import_payload
  local reg ref before
  reg=$(reg_addr reg)
  ref=$reg/sbx/obtain:1
  run --separate-stderr sbx push payload "$ref"
  expect_status 0

  # Absent, --pull never: NOT_FOUND naming the reference and the policy,
  # and no request.
  before=$(reg_count reg '"[A-Z]+ /v2/')
  expect_error NOT_FOUND run --runtime runc --pull never --image "$ref" -- true
  expect_contains "$output" "$ref"
  expect_contains "$output" "--pull never"
  expect_eq "$(reg_count reg '"[A-Z]+ /v2/')" "$before" "requests with --pull never"

  # Absent, missing (the default): pulled, then run; tagged with its full
  # reference.
  run --separate-stderr sbx run --runtime runc --image "$ref" -- /bin/sbx-testpayload echo pulled
  expect_status 0
  expect_eq "$(last_line)" "pulled" "the payload from the pulled image"
  [ -n "$(image_id_of "$ref")" ] || fail "no image tagged $ref after the pull"
  local asked
  asked=$(requests 'GET|HEAD' sbx/obtain/manifests)
  [ "$asked" -ge 1 ] || fail "the pull asked for no manifest"

  # Present, missing: no request at all, by create and by run.
  before=$(reg_count reg '"[A-Z]+ /v2/')
  run --separate-stderr sbx run --runtime runc --rm --image "$ref" -- true
  expect_status 0
  run --separate-stderr sbx create --runtime runc --pull missing --image "$ref"
  expect_status 0
  sbx terminate "$output" >/dev/null
  expect_eq "$(reg_count reg '"[A-Z]+ /v2/')" "$before" "requests with the image present"
  # ... even when its registry cannot be reached at all.
  run --separate-stderr sbx tag payload 127.0.0.1:1/gone:1
  expect_status 0
  run --separate-stderr sbx run --runtime runc --rm --image 127.0.0.1:1/gone:1 -- /bin/sbx-testpayload echo local
  expect_status 0
  expect_eq "$(last_line)" "local" "an image present, from a registry that is down"

  # Present, always: the registry is asked again.
  run --separate-stderr sbx run --runtime runc --rm --pull always --image "$ref" -- true
  expect_status 0
  [ "$(requests 'GET|HEAD' sbx/obtain/manifests)" -gt "$asked" ] || fail "--pull always asked for no manifest"
  # ... but a local name is used as it is, whatever the policy.
  before=$(reg_count reg '"[A-Z]+ /v2/')
  run --separate-stderr sbx run --runtime runc --rm --pull always --image payload -- true
  expect_status 0
  expect_eq "$(reg_count reg '"[A-Z]+ /v2/')" "$before" "requests for a local name with --pull always"
  expect_error INVALID_ARGUMENT run --pull sometimes --image payload -- true
}

@test "obtain: a blueprint's base may be a registry reference, pulled when missing" {
  require_runtime runc
  sbx_import_payload
  local reg ref asked ctx=$BATS_TEST_TMPDIR/ctx
  reg=$(reg_addr reg)
  ref=$reg/sbx/base:1
  run --separate-stderr sbx push payload "$ref"
  expect_status 0
  mkdir -p "$ctx"
  printf '{"base": "%s", "steps": [{"env": {"FROM_BASE": "yes"}}]}' "$ref" >"$ctx/blueprint.json"
  run --separate-stderr sbx build --runtime runc --tag derived "$ctx"
  expect_status 0
  [ -n "$(image_id_of "$ref")" ] || fail "the base was not pulled and tagged $ref"
  asked=$(requests 'GET|HEAD' sbx/base/manifests)
  [ "$asked" -ge 1 ] || fail "the build asked for no manifest of its base"
  run --separate-stderr sbx run --runtime runc --rm --image derived -- sh -c 'echo "$FROM_BASE"'
  expect_status 0
  expect_eq "$output" "yes" "the derived image's env"
  # Built again: the base is in the store, the registry is not asked.
  run --separate-stderr sbx build --runtime runc --tag derived "$ctx"
  expect_status 0
  expect_eq "$(requests 'GET|HEAD' sbx/base/manifests)" "$asked" "manifest requests after the second build"
}
