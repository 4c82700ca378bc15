#!/usr/bin/env bats
# Disk limits: --disk (and sbx.conf's disk, 10Gi shipped) bounds a sandbox's
# writable layer under both runtimes: a 20 GB write stops at the limit with
# ENOSPC inside, the host pays at most the limit, status shows it; the files
# of a limited sandbox outlive it (fs, commit) as any other's.

load ../helpers/common

setup () {
  sbx_setup
  sbx_import_payload
}

MiB=1048576

# Bytes the sandbox's writable layer takes on the host.
host_bytes () {
  echo $(($(stat -c %b "$SBX_ROOT/sandboxes/$1/disk.img") * 512))
}

# fill RT ID LIMIT_MIB: 20 GB of zeros into the sandbox's root; the write
# fails with ENOSPC, short of the limit, and the host pays at most the limit.
fill () {
  local id=$2 limit=$3
  run --separate-stderr sbx exec "$id" -- sh -c \
    'dd if=/dev/zero of=/big bs=1M count=20480 2>&1; echo "dd=$?"; ls -l /big | awk "{print \"size=\" \$5}"'
  expect_status 0
  expect_contains "$output" "No space left on device"
  expect_contains "$output" "dd=1"
  local size
  size=$(printf '%s\n' "$output" | sed -n 's/^size=//p')
  [ -n "$size" ] || fail "no size of /big: $output"
  [ "$size" -le $((limit * MiB)) ] || fail "/big grew to $size bytes under a $limit MiB limit"
  [ "$size" -ge $((limit * MiB / 2)) ] || fail "/big stopped at $size bytes, far below the $limit MiB limit"
  local host
  host=$(host_bytes "$id")
  [ "$host" -le $((limit * MiB + MiB)) ] || fail "the host gave $host bytes to a $limit MiB limit"
}

disk_limit () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --disk 64Mi)
  fill "$rt" "$id" 64
  # status shows the limit and what it uses.
  run --separate-stderr sbx status "$id"
  expect_status 0
  expect_contains "$output" "disk:       64.0 MiB ("
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(printf '%s' "$output" | jget 'd["options"]["disk"]')" $((64 * MiB)) "options.disk"
  local used
  used=$(printf '%s' "$output" | jget 'd["disk_used"]')
  [ "$used" -ge $((32 * MiB)) ] || fail "disk_used $used after filling 64 MiB"
  # What it deletes goes back to the host, and it can write again.
  run --separate-stderr sbx exec "$id" -- sh -c 'rm /big && dd if=/dev/zero of=/again bs=1M count=8 2>&1 && sync'
  expect_status 0
  local host
  host=$(host_bytes "$id")
  [ "$host" -le $((16 * MiB)) ] || fail "the host still gives $host bytes after the sandbox deleted its files"
  sbx terminate "$id" >/dev/null
}

@test "disk: a 20 GB write stops at --disk 64Mi with ENOSPC inside [runc]" { disk_limit runc; }
@test "disk: a 20 GB write stops at --disk 64Mi with ENOSPC inside [runsc]" { disk_limit runsc; }

conf_default () {
  local rt=$1 id
  require_runtime "$rt"
  sbx_write_conf "disk = 48Mi"
  id=$(sbx create --runtime "$rt" --image payload)
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(printf '%s' "$output" | jget 'd["options"]["disk"]')" $((48 * MiB)) "options.disk from sbx.conf"
  fill "$rt" "$id" 48
  sbx terminate "$id" >/dev/null
}

@test "disk: sbx.conf's disk is the default limit [runc]" { conf_default runc; }
@test "disk: sbx.conf's disk is the default limit [runsc]" { conf_default runsc; }

@test "disk: the shipped default is 10Gi, seen inside as the root's size" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload)
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(printf '%s' "$output" | jget 'd["options"]["disk"]')" $((10 * 1024 * MiB)) "options.disk"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "disk:       10.0 GiB ("
  # The root's filesystem is the 10 GiB image (its metadata aside).
  run --separate-stderr sbx exec "$id" -- sh -c 'df -k / | awk "NR == 2 {print \$2}"'
  expect_status 0
  [ "$output" -gt $((9 * 1024 * 1024)) ] && [ "$output" -le $((10 * 1024 * 1024)) ] \
    || fail "the root is $output KiB, not about 10 GiB"
  [ -f "$SBX_ROOT/sandboxes/$id/disk.img" ] || fail "no disk image"
  sbx terminate "$id" >/dev/null
}

@test "disk: --disk 0 is no limit, explicitly" {
  require_runtime runc
  local id
  sbx_write_conf "disk = 48Mi"
  id=$(sbx create --runtime runc --image payload --disk 0)
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(printf '%s' "$output" | jget 'd["options"]["disk"]')" 0 "options.disk"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "disk:       unlimited"
  [ ! -e "$SBX_ROOT/sandboxes/$id/disk.img" ] || fail "a disk image for --disk 0"
  # Past what sbx.conf's 48Mi would allow.
  run --separate-stderr sbx exec "$id" -- sh -c 'dd if=/dev/zero of=/big bs=1M count=64 2>&1 && rm /big'
  expect_status 0
  sbx terminate "$id" >/dev/null
}

@test "disk: sizes out of range are refused and nothing is made" {
  local bad
  for bad in 1Mi 15Mi abc -1 1Pi 100Ti ""; do
    expect_error INVALID_ARGUMENT create --runtime runc --disk "$bad"
    expect_contains "$stderr" "--disk"
  done
  sbx_write_conf "disk = 1Ki"
  expect_error INVALID_ARGUMENT create --runtime runc
  expect_contains "$stderr" "disk"
  sbx_write_conf
  run sbx ls -q
  expect_eq "$output" "" "sandboxes after refused creates"
}

# The files of a limited sandbox: fs while it runs and after, commit of a
# running and of an ended one (its image mounted read-only, briefly).
files_outlive () {
  local rt=$1 id img
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --disk 32Mi)
  sbx exec "$id" -- sh -c 'echo live > /live && mkdir -p /d && echo x > /d/x && rm /bin/true' >/dev/null
  img=$(sbx commit --tag running "$id")
  [ -n "$img" ] || fail "no image from a commit of a running sandbox"
  sbx terminate "$id" >/dev/null
  run --separate-stderr sbx fs "$id" read /live
  expect_status 0
  expect_eq "$output" live "fs read after the end"
  printf 'written\n' | sbx fs "$id" write /after >/dev/null
  run --separate-stderr sbx fs "$id" read /after
  expect_eq "$output" written "fs write after the end"
  sbx commit --tag ended "$id" >/dev/null
  run --separate-stderr sbx run --rm --runtime "$rt" --image running -- sh -c 'cat /live /d/x; test -e /bin/true || echo gone'
  expect_status 0
  expect_eq "$output" "$(printf 'live\nx\ngone')" "files of the running commit"
  run --separate-stderr sbx run --rm --runtime "$rt" --image ended -- cat /live /after
  expect_eq "$output" "$(printf 'live\nwritten')" "files of the ended commit"
  sbx rm "$id" >/dev/null
  [ ! -e "$SBX_ROOT/sandboxes/$id" ] || fail "the sandbox's directory (and image) after rm"
}

@test "disk: a limited sandbox's files outlive it: fs, commit [runc]" { files_outlive runc; }
@test "disk: a limited sandbox's files outlive it: fs, commit [runsc]" { files_outlive runsc; }

# --- image_size_max and store_reserve (sbx.conf) --------------------------------

layer_count () {
  find "$SBX_ROOT/layers/sha256" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l
}

# Nothing half-written: no layer directory in the making left behind.
no_partial_layers () {
  local left
  left=$(find "$SBX_ROOT/layers/tmp" -mindepth 1 -maxdepth 1 2>/dev/null)
  [ -z "$left" ] || fail "partial layers left: $left"
}

# A tarball of NAME=MiB zero files, compressed to almost nothing.
zero_tar () {
  local out=$1 dir
  shift
  dir=$(mktemp -d "$BATS_TEST_TMPDIR/zt.XXXXXX")
  for f in "$@"; do dd if=/dev/zero of="$dir/${f%%=*}" bs=1M count="${f#*=}" 2>/dev/null; done
  tar -C "$dir" -czf "$out" .
  rm -rf "$dir"
}

@test "disk: import refuses an archive that expands past image_size_max; nothing is written" {
  zero_tar "$BATS_TEST_TMPDIR/bomb.tgz" a=6 b=6
  [ "$(stat -c %s "$BATS_TEST_TMPDIR/bomb.tgz")" -lt 100000 ] || fail "the archive is not small"
  local n
  n=$(layer_count)
  sbx_write_conf "image_size_max = 10Mi"
  expect_error RESOURCE_EXHAUSTED import --tag bomb "$BATS_TEST_TMPDIR/bomb.tgz"
  expect_contains "$stderr" "image_size_max"
  expect_eq "$(layer_count)" "$n" "layers after the refused import"
  no_partial_layers
  expect_error NOT_FOUND create --pull never --image bomb
  # The same archive under a limit it fits.
  sbx_write_conf "image_size_max = 16Mi"
  sbx import --tag bomb "$BATS_TEST_TMPDIR/bomb.tgz" >/dev/null
  expect_eq "$(layer_count)" $((n + 1)) "layers after the import that fits"
}

# Each layer under the limit, the image over it: an OCI archive of three
# (busybox, 5 MiB, 5 MiB).
@test "disk: import refuses an image whose layers together pass image_size_max" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --block-network)
  sbx exec "$id" -- dd if=/dev/zero of=/b bs=1M count=5 2>/dev/null
  sbx commit --tag one "$id" >/dev/null
  sbx terminate "$id" >/dev/null
  id=$(sbx create --runtime runc --block-network --image one)
  sbx exec "$id" -- dd if=/dev/zero of=/c bs=1M count=5 2>/dev/null
  sbx commit --tag two "$id" >/dev/null
  sbx terminate "$id" >/dev/null
  sbx export two "$BATS_TEST_TMPDIR/two.tar" >/dev/null
  sbx rm $(sbx ls -q) >/dev/null
  sbx rmi two one >/dev/null
  sbx gc >/dev/null
  local n
  n=$(layer_count)
  sbx_write_conf "image_size_max = 10Mi"
  expect_error RESOURCE_EXHAUSTED import --tag two "$BATS_TEST_TMPDIR/two.tar"
  expect_contains "$stderr" "3 layers expand to"
  expect_contains "$stderr" "image_size_max"
  expect_error NOT_FOUND create --pull never --image two
  sbx gc >/dev/null
  expect_eq "$(layer_count)" "$n" "layers after the refused import and gc"
  no_partial_layers
}

@test "disk: build and commit refuse a layer past image_size_max" {
  require_runtime runc
  mkdir -p "$BATS_TEST_TMPDIR/ctx"
  printf '{"base":"busybox","steps":[{"run":"dd if=/dev/zero of=/big bs=1M count=12"}]}' \
    >"$BATS_TEST_TMPDIR/ctx/blueprint.json"
  local n id
  sbx tag busybox base-only # the built-in image's layer, made on first use
  n=$(layer_count)
  sbx_write_conf "image_size_max = 10Mi"
  expect_error RESOURCE_EXHAUSTED build --runtime runc --tag big "$BATS_TEST_TMPDIR/ctx"
  expect_contains "$stderr" "image_size_max"
  expect_eq "$(layer_count)" "$n" "layers after the refused build"
  no_partial_layers
  expect_error NOT_FOUND create --pull never --image big
  id=$(sbx create --runtime runc --block-network)
  sbx exec "$id" -- dd if=/dev/zero of=/big bs=1M count=12 2>/dev/null
  expect_error RESOURCE_EXHAUSTED commit --tag big "$id"
  expect_eq "$(layer_count)" "$n" "layers after the refused commit"
  no_partial_layers
  sbx terminate "$id" >/dev/null
}

@test "disk: store operations refuse to start below store_reserve; nothing is made" {
  require_runtime runc
  local id n snapdir
  id=$(sbx create --runtime runc --block-network)
  zero_tar "$BATS_TEST_TMPDIR/small.tgz" a=1
  sbx tag busybox base-only
  mkdir -p "$BATS_TEST_TMPDIR/ctx"
  printf '{"base":"busybox","steps":[{"run":"true"}]}' >"$BATS_TEST_TMPDIR/ctx/blueprint.json"
  n=$(layer_count)
  # More than any test host has free.
  sbx_write_conf "store_reserve = 60Ti"
  expect_error RESOURCE_EXHAUSTED create --runtime runc
  expect_contains "$stderr" "store_reserve"
  expect_error RESOURCE_EXHAUSTED run --runtime runc -- true
  expect_error RESOURCE_EXHAUSTED import --tag small "$BATS_TEST_TMPDIR/small.tgz"
  expect_error RESOURCE_EXHAUSTED build --runtime runc "$BATS_TEST_TMPDIR/ctx"
  expect_error RESOURCE_EXHAUSTED commit --tag c "$id"
  expect_error RESOURCE_EXHAUSTED snapshot "$id"
  expect_eq "$(sbx ls -q)" "$id" "sandboxes after the refused operations"
  expect_eq "$(layer_count)" "$n" "layers"
  expect_eq "$(state_of "$id")" running "the sandbox a refused snapshot left alone"
  # 0 turns the check off.
  sbx_write_conf "store_reserve = 0"
  sbx import --tag small "$BATS_TEST_TMPDIR/small.tgz" >/dev/null
  sbx terminate "$id" >/dev/null
}

@test "disk: gc removes the disk templates of sizes other than sbx.conf's" {
  require_runtime runc
  sbx_write_conf "disk = 48Mi"
  sbx run --rm --runtime runc --block-network --disk 32Mi -- true
  sbx run --rm --runtime runc --block-network -- true
  [ -f "$SBX_ROOT/disk/ext4-$((32 * MiB)).img" ] || fail "no template for 32Mi"
  [ -f "$SBX_ROOT/disk/ext4-$((48 * MiB)).img" ] || fail "no template for 48Mi"
  sbx gc >/dev/null
  [ ! -e "$SBX_ROOT/disk/ext4-$((32 * MiB)).img" ] || fail "gc left the 32Mi template"
  [ -f "$SBX_ROOT/disk/ext4-$((48 * MiB)).img" ] || fail "gc removed the default's template"
  # Made again when needed.
  run --separate-stderr sbx run --rm --runtime runc --block-network --disk 32Mi -- sh -c 'df -k / | awk "NR == 2 {print \$2}"'
  expect_status 0
  [ "$output" -gt $((24 * 1024)) ] && [ "$output" -le $((32 * 1024)) ] || fail "root of $output KiB under --disk 32Mi"
}

# A monitor killed with its sandbox: the namespace goes, and with it the
# mount and the loop device (the leak check looks for both).
@test "disk: kill -9 of the monitor leaves no mount and no loop device" {
  require_runtime runc
  local id pid
  id=$(sbx create --runtime runc --block-network --disk 32Mi)
  sbx exec "$id" -- sh -c 'echo kept > /kept'
  pid=$(monitor_pid "$id")
  kill -9 "$pid"
  wait_for_state "$id" failed
  # Its files are still there, for fs and commit.
  run --separate-stderr sbx fs "$id" read /kept
  expect_status 0
  expect_eq "$output" kept "a file of the sandbox whose monitor was killed"
}
