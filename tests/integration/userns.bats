#!/usr/bin/env bats
# runc sandboxes in a user namespace (DESIGN.md section 6, userns.c): uid 0
# inside is a leased, unprivileged host range; image layers stay as they
# are; the file API and commit keep the ids the sandbox sees; a host that
# cannot is refused unless sbx.conf says runc_userns = optional.

load ../helpers/common

setup () {
  sbx_setup
  require_runtime runc
}

teardown () {
  sbx_teardown
}

pid_alive () {
  local st
  st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# host_base ID: the first host id of the sandbox's range, from sbx status.
host_base () {
  "$SBX_BIN" --json status "$1" | jpipe 'd["user_namespace"]["host_id"]'
}

# in_range ID HOSTID: HOSTID lies in the sandbox's range.
in_range () {
  local base
  base=$(host_base "$1") || return 1
  [ "$2" -ge "$base" ] && [ "$2" -lt $((base + 65536)) ] \
    || fail "host id $2 is not in the range of $1 ($base-$((base + 65535)))"
}

@test "userns: uid_map shows a non-zero host range, and status shows the same" {
  id=$(sbx create --runtime runc)
  run sbx exec "$id" -- cat /proc/self/uid_map /proc/self/gid_map
  expect_status 0
  base=$(host_base "$id")
  [ "$base" -ge 65536 ] || fail "host range starts at $base"
  # uid_map then gid_map: `0 BASE 65536`.
  expect_eq "$(printf '%s\n' "$output" | awk '{print $1, $2, $3}' | sort -u)" "0 $base 65536" "maps"
  run sbx status "$id"
  expect_status 0
  [[ "$output" == *"userns:     uid/gid 0-65535 -> $base-$((base + 65535)) on the host"* ]] || fail "$output"
  sbx rm -f "$id"
}

@test "userns: two sandboxes get different ranges; leases released after rm" {
  a=$(sbx create --runtime runc)
  b=$(sbx create --runtime runc)
  ba=$(host_base "$a")
  bb=$(host_base "$b")
  [ "$ba" != "$bb" ] || fail "both have $ba"
  [ "$(cut -d' ' -f1 "/run/sbx/userns/$ba")" = "$a" ] || fail "no lease $ba for $a"
  sbx rm -f "$a" "$b"
  [ ! -e "/run/sbx/userns/$ba" ] && [ ! -e "/run/sbx/userns/$bb" ] || fail "a lease outlived rm"
}

@test "userns: the writable layer holds the range's ids; the image layer is unchanged" {
  id=$(sbx create --runtime runc --disk 0)
  run sbx exec "$id" -- sh -c 'touch /made && chown 7:8 /made && echo x >>/etc/passwd && stat -c "%u:%g" /made /bin/sh'
  expect_status 0
  expect_eq "$output" "$(printf '7:8\n0:0')" "ids inside"
  base=$(host_base "$id")
  upper=$SBX_ROOT/sandboxes/$id/upper
  expect_eq "$(stat -c %u:%g "$upper/made")" "$((base + 7)):$((base + 8))" "made, on the host"
  # Copied up with the owner the sandbox saw, mapped.
  expect_eq "$(stat -c %u "$upper/etc/passwd")" "$base" "copied-up /etc/passwd"
  # The layers on the disk keep their own ids.
  for l in "$SBX_ROOT"/layers/sha256/*/rootfs; do
    run find "$l" -uid "$base"
    expect_eq "$output" "" "files of the range in a layer"
  done
  sbx rm -f "$id"
}

@test "userns: a volume is owned by the range that first wrote it, shared across ranges; host dirs are mapped" {
  mkdir "$SBX_TEST_DIR/hostdir"
  echo host >"$SBX_TEST_DIR/hostdir/f"
  id=$(sbx create --runtime runc --volume uvol:/vol --mount "$SBX_TEST_DIR/hostdir:/hd:rw")
  run sbx exec "$id" -- sh -c 'touch /vol/new /hd/new && stat -c "%u:%g" /vol /hd/f /vol/new /hd/new && echo ok >>/hd/f'
  expect_status 0
  expect_eq "$output" "$(printf '0:0\n0:0\n0:0\n0:0')" "ids inside"
  base=$(host_base "$id")
  # A new volume is the first sandbox's: what it makes there is owned by
  # its range, as in its writable layer; a host directory keeps the host's
  # ids (the sandbox's root is the host's root there, mapped).
  expect_eq "$(stat -c %u:%g "$SBX_ROOT/volumes/uvol/data/new")" "$base:$base" "volume file on the host"
  expect_eq "$(stat -c %u:%g "$SBX_TEST_DIR/hostdir/new")" "0:0" "host dir file on the host"
  # A second sandbox (another range, the first still running) sees the
  # volume's files as its root's and writes there; on the disk they stay
  # the volume's range.
  id2=$(sbx create --runtime runc --volume uvol:/vol)
  base2=$(host_base "$id2")
  [ "$base2" != "$base" ] || fail "two sandboxes share the range $base"
  run sbx exec "$id2" -- sh -c 'stat -c "%u:%g" /vol/new && touch /vol/second && stat -c "%u:%g" /vol/second'
  expect_status 0
  expect_eq "$output" "$(printf '0:0\n0:0')" "ids inside the second sandbox"
  expect_eq "$(stat -c %u:%g "$SBX_ROOT/volumes/uvol/data/second")" "$base:$base" "the second's file on the host"
  sbx rm -f "$id" "$id2"
}

@test "userns: the escape battery fails (keyctl, unshare, mount, ptrace, /proc and /sys writes)" {
  sbx_import_payload
  id=$(sbx create --runtime runc --image payload)
  for a in keyctl unshare-user unshare-mount mount ptrace-pid1; do
    run sbx exec "$id" -- /bin/sbx-testpayload "$a"
    [ "$status" -eq 1 ] && [[ "$(last_line)" == "$a: denied ("* ]] || fail "$a: exit $status: $output"
  done
  for f in /proc/sys/kernel/hostname /sys/kernel/mm/ksm/sleep_millisecs; do
    before=$(cat "$f")
    run sbx exec "$id" -- /bin/sbx-testpayload write "$f" 4321
    [ "$status" -eq 1 ] && [[ "$(last_line)" == "write: denied ("* ]] || fail "write $f: exit $status: $output"
    expect_eq "$(cat "$f")" "$before" "host's $f"
  done
  sbx rm -f "$id"
}

@test "userns: fs API and commit keep the ids the sandbox sees" {
  id=$(sbx create --runtime runc --disk 0)
  echo data | sbx fs "$id" write /w
  sbx fs "$id" mkdir /dir
  sbx exec "$id" -- sh -c 'touch /own && chown 5:6 /own'
  run sbx exec "$id" -- stat -c %u:%g /w /dir
  expect_eq "$output" "$(printf '0:0\n0:0')" "what the file API made, inside"
  base=$(host_base "$id")
  expect_eq "$(stat -c %u "$SBX_ROOT/sandboxes/$id/upper/w")" "$base" "/w on the host"
  run sbx --json fs "$id" stat /own
  expect_eq "$(printf '%s' "$output" | jpipe '"%d:%d" % (d["uid"], d["gid"])')" "5:6" "fs stat"
  sbx commit -t committed "$id"
  sbx terminate "$id"
  # An ended sandbox's files, mounted again with the same mapping.
  run sbx --json fs "$id" stat /own
  expect_eq "$(printf '%s' "$output" | jpipe '"%d:%d" % (d["uid"], d["gid"])')" "5:6" "fs stat after the end"
  # The committed layer has the ids inside, under runsc (no mapping) too.
  run sbx run --rm --runtime runsc --image committed -- stat -c %u:%g /own /w
  expect_eq "$output" "$(printf '5:6\n0:0')" "ids in the committed image"
  sbx rm -f "$id"
}

@test "userns: a lease left by a killed monitor is reaped by gc" {
  id=$(sbx create --runtime runc)
  base=$(host_base "$id")
  mp=$(monitor_pid "$id")
  kill -9 "$mp"
  for i in $(seq 50); do pid_alive "$mp" || break; sleep 0.1; done
  # Held by nobody now (any store's gc on the host may already have taken it).
  if [ -e "/run/sbx/userns/$base" ]; then
    flock -n "/run/sbx/userns/$base" true || fail "lease $base is still held"
  fi
  sbx gc
  [ ! -e "/run/sbx/userns/$base" ] || fail "lease $base outlived gc"
}

# A host that cannot idmap the store's filesystem: the store on an overlayfs
# (which has no idmapped mounts), the writable layer in the --disk image.
# Mounted in a mount namespace of the test's own, where every sbx call of
# the test runs: other sandboxes' monitors on the host never get a copy.
# on_unusable_store SCRIPT: runs SCRIPT (bash, $SBX_BIN as sbx) there.
on_unusable_store () {
  mkdir -p "$SBX_TEST_DIR/ovl/lower" "$SBX_TEST_DIR/ovl/upper" "$SBX_TEST_DIR/ovl/work" "$SBX_ROOT"
  run unshare -m --propagation private bash -euc '
    mount -t overlay overlay -o "lowerdir=$1/lower,upperdir=$1/upper,workdir=$1/work" "$SBX_ROOT"
    sbx () { "$SBX_BIN" "$@"; }
    '"$1" _ "$SBX_TEST_DIR/ovl"
}

@test "userns: runc is refused with RUNTIME_UNAVAILABLE where the store cannot be idmapped (required)" {
  on_unusable_store 'sbx create --runtime runc 2>&1 || echo "status $?"; sbx ls -q'
  expect_status 0
  [[ "$output" == *"RUNTIME_UNAVAILABLE"*"idmapped mounts"*"status 125" ]] || fail "$output"
}

@test "userns: runc_userns = optional runs without one there, and status says so" {
  sbx_write_conf "runc_userns = optional"
  on_unusable_store 'id=$(sbx create --runtime runc); sbx exec "$id" -- cat /proc/self/uid_map; sbx status "$id"
    sbx rm -f "$id" >/dev/null'
  expect_status 0
  expect_eq "$(printf '%s\n' "$output" | awk 'NR == 1 {print $1, $2}')" "0 0" "uid_map"
  [[ "$output" == *"userns:     none (runc_userns = optional): "*"idmapped mounts"* ]] || fail "$output"
}
