#!/usr/bin/env bats
# Images: tags, rmi (refused while a sandbox uses the image), and the
# collection of layers nothing references.

load ../helpers/common

layer_count () {
  find "$SBX_ROOT/layers/sha256" -mindepth 1 -maxdepth 1 | wc -l
}

@test "images: tag names an image, rmi of one of several tags only untags" {
  local id
  run --separate-stderr sbx tag busybox mine
  expect_status 0
  id=$(sbx --json images | jpipe '[i["id"] for i in d if "busybox" in i["tags"]][0]')
  expect_eq "$output" "tagged $id as mine" "what tag says"
  run --separate-stderr sbx --json tag busybox mine
  expect_eq "$(jget 'd["id"] + " " + d["tag"]')" "$id mine" "tag --json"
  sbx tag "$id" other
  run --separate-stderr sbx --json images
  expect_eq "$(jget '[sorted(i["tags"]) for i in d if i["id"] == "'"$id"'"][0]')" '["busybox", "mine", "other"]' "tags"
  run --separate-stderr sbx rmi mine
  expect_status 0
  expect_eq "$output" "untagged mine" "rmi of a tag"
  run --separate-stderr sbx --json images
  expect_eq "$(jget '[sorted(i["tags"]) for i in d if i["id"] == "'"$id"'"][0]')" '["busybox", "other"]' "tags after rmi"
  # A tag moves when it is set again.
  sbx_import_payload
  sbx tag payload other
  expect_eq "$(sbx --json images | jpipe '[i["id"] for i in d if "other" in i["tags"]][0]')" \
    "$(sbx --json images | jpipe '[i["id"] for i in d if "payload" in i["tags"]][0]')" "moved tag"
  # -q: the full ids, which rmi and --image take.
  run --separate-stderr sbx images -q
  expect_status 0
  expect_eq "$output" "$(sbx --json images | jpipe '"\n".join(i["id"] for i in d)')" "images -q"
  expect_contains "$output" "$id"
  expect_error INVALID_ARGUMENT images -q extra
  expect_error INVALID_ARGUMENT tag busybox 'bad name!'
  expect_error NOT_FOUND tag no-such-image x
  expect_error INVALID_ARGUMENT tag busybox
}

@test "images: rmi is refused while a sandbox uses the image, --force removes it, layers go with the last user" {
  require_runtime runc
  local id before
  sbx_import_payload
  before=$(layer_count)
  id=$(sbx create --runtime runc --image payload)
  expect_error BUSY rmi payload
  run --separate-stderr sbx rmi --force payload
  expect_status 0
  expect_contains "$output" "removed sha256:"
  expect_error NOT_FOUND create --pull never --image payload
  # The sandbox still runs on its layers.
  expect_eq "$(sbx exec "$id" -- echo alive)" alive "sandbox after rmi --force"
  expect_eq "$(layer_count)" "$before" "layers kept while a sandbox uses them"
  sbx terminate --rm "$id" >/dev/null
  run --separate-stderr sbx --json gc
  expect_status 0
  expect_eq "$(jget 'd["layers"]')" 1 "layers collected by gc"
  expect_eq "$(layer_count)" $((before - 1)) "layers after gc"
  expect_error NOT_FOUND rmi payload
  expect_error INVALID_ARGUMENT rmi
}

@test "images: rmi of an unused image removes its layers at once; shared layers stay" {
  local a
  sbx_import_payload
  a=$(sbx --json images | jpipe '[i["id"] for i in d if "payload" in i["tags"]][0]')
  # The same tarball under a second tag is the same image: one layer.
  sbx import --tag payload2 "$BATS_FILE_TMPDIR/payload.tar" >/dev/null
  expect_eq "$(sbx --json images | jpipe '[i["id"] for i in d if "payload2" in i["tags"]][0]')" "$a" "same content, same image"
  run --separate-stderr sbx rmi payload2
  expect_eq "$output" "untagged payload2" "one of two tags"
  local n
  n=$(layer_count)
  run --separate-stderr sbx rmi payload
  expect_status 0
  expect_eq "$(layer_count)" $((n - 1)) "the layer went with the image"
}

@test "images: an import is settled on the disk after it returns; a layer the host went down on is refused until imported again" {
  require_runtime runc
  local layer dir
  sbx_import_payload
  layer=$(sbx --json images | jpipe '[i for i in d if "payload" in i["tags"]][0]["layers"][-1]')
  dir=$SBX_ROOT/layers/sha256/${layer#sha256:}
  [ -d "$dir/rootfs" ] || fail "no layer directory $dir"
  [ ! -e "$dir/layer.tar" ] || fail "the layer kept a copy of the tarball"
  # Its settling process drops the pending mark (gc does it too).
  sbx_wait_settled
  sbx gc >/dev/null
  [ ! -e "$dir/pending" ] || fail "pending mark left after gc"
  # As if the host had gone down before the layer reached the disk.
  printf '00000000-0000-4000-8000-000000000000' >"$dir/pending"
  expect_error INTERNAL create --runtime runc --image payload
  expect_contains "$stderr" "may be incomplete"
  expect_error INTERNAL export payload "$BATS_TEST_TMPDIR/out.tar"
  [ ! -e "$BATS_TEST_TMPDIR/out.tar" ] || fail "export wrote a file"
  sbx gc >/dev/null
  [ -e "$dir/pending" ] || fail "gc dropped an earlier boot's mark"
  # The same tarball again makes the layer anew, in its place.
  sbx_import_payload
  sbx gc >/dev/null
  [ ! -e "$dir/pending" ] || fail "the new layer did not settle"
  run --separate-stderr sbx run --rm --runtime runc --image payload -- echo whole
  expect_status 0
  expect_eq "$output" whole "a sandbox from the layer made again"
}
