#!/usr/bin/env bats
# Capabilities (src/lib/caps.c): a caller without the privileges sbx needs is
# refused up front with PERMISSION_DENIED naming what it lacks, before
# anything is made; a running sandbox's monitor holds only the capabilities
# its loop, its teardown and the runtime commands it runs still use, and
# teardown still leaves nothing behind (sbx_teardown's leak check).

load ../helpers/common

setup () {
  sbx_setup
}

teardown () {
  sbx_teardown
}

# The monitor's set (sbx_caps_monitor_mask): CHOWN, DAC_OVERRIDE,
# DAC_READ_SEARCH, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP (bits 0-8),
# NET_BIND_SERVICE (10), NET_ADMIN (12), SYS_CHROOT (18), SYS_PTRACE (19),
# SYS_ADMIN (21); of them, those the test itself holds.
MONITOR_CAPS=0x2c15ff

# as_nobody ARGS...: sbx --json ARGS... as uid and gid 65534, no groups.
as_nobody () {
  run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    "$SBX_BIN" --json "$@"
}

# expect_denied VERB NAMES...: after as_nobody or the like, exit 125, code
# PERMISSION_DENIED, a message naming each capability, and nothing made.
expect_denied () {
  local verb=$1 cap
  shift
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]' "$output")" PERMISSION_DENIED "error code"
  expect_contains "$stderr" "PERMISSION_DENIED"
  expect_contains "$stderr" "$verb: sbx needs "
  for cap in "$@"; do
    expect_contains "$stderr" "$cap"
  done
  expect_not_contains "$stderr" "Operation not permitted"
  [ ! -e "$SBX_ROOT/sandboxes" ] || [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] \
    || fail "a refused $verb left $(ls -A "$SBX_ROOT/sandboxes") in the store"
}

@test "caps: create as an unprivileged user names the capabilities it lacks" {
  as_nobody create --runtime runc
  expect_denied create CAP_SYS_ADMIN CAP_NET_ADMIN CAP_SYS_CHROOT "(run as root)"
}

@test "caps: run as an unprivileged user is refused before anything starts" {
  as_nobody run --runtime runc -- true
  expect_denied run CAP_SYS_ADMIN CAP_NET_ADMIN
}

@test "caps: build, restore and gc as an unprivileged user are refused" {
  mkdir -m 0755 "$SBX_TEST_DIR/ctx"
  printf '{"base": "busybox", "steps": []}\n' >"$SBX_TEST_DIR/ctx/blueprint.json"
  chmod 0755 "$SBX_TEST_DIR"
  as_nobody build "$SBX_TEST_DIR/ctx"
  expect_denied build CAP_SYS_ADMIN
  as_nobody restore snap-0123456789ab
  expect_denied restore CAP_SYS_ADMIN
  as_nobody gc
  expect_denied gc CAP_SYS_ADMIN
}

@test "caps: root without CAP_NET_ADMIN is refused, naming only what it lacks" {
  run --separate-stderr setpriv --bounding-set=-net_admin --inh-caps=-all "$SBX_BIN" --json create --runtime runc
  expect_denied create CAP_NET_ADMIN
  expect_not_contains "$stderr" CAP_SYS_ADMIN
}

# check_monitor RT: the running sandbox's monitor holds MONITOR_CAPS in its
# effective, permitted and bounding sets, and everything still works after
# the drop: exec, pause and resume (runtime commands the monitor runs), a
# change of egress rules, and teardown.
check_monitor () {
  require_runtime "$1"
  run sbx create --runtime "$1"
  expect_status 0
  local id=$output pid want set
  pid=$(monitor_pid "$id")
  [ -n "$pid" ] || fail "no monitor pid for $id"
  want=$(printf '%016x' $((MONITOR_CAPS & 0x$(awk '$1 == "CapBnd:" { print $2 }' /proc/self/status))))
  for set in CapEff CapPrm CapBnd; do
    expect_eq "$(awk -v k="$set:" '$1 == k { print $2 }' "/proc/$pid/status")" "$want" "monitor $set"
  done
  expect_eq "$(awk '$1 == "CapInh:" { print $2 }' "/proc/$pid/status")" 0000000000000000 "monitor CapInh"
  run sbx exec "$id" -- echo hello
  expect_status 0
  expect_eq "$output" hello
  run sbx pause "$id"
  expect_status 0
  run sbx resume "$id"
  expect_status 0
  run sbx net "$id" --block
  expect_status 0
  run sbx net "$id" --open
  expect_status 0
  run sbx terminate "$id"
  expect_status 0
  expect_eq "$(state_of "$id")" terminated
  run sbx rm "$id"
  expect_status 0
  # This sandbox's own host objects, by name, whatever other roots on the
  # host do meanwhile (sbx_teardown's check covers the rest).
  local mine
  mine=$(_sbx_net_names | grep -F -e "${id#sb-}") || true
  [ -z "$mine" ] || fail "$id: left behind: $mine"
}

@test "caps: a running sandbox's monitor keeps only what it needs [runc]" { check_monitor runc; }
@test "caps: a running sandbox's monitor keeps only what it needs [runsc]" { check_monitor runsc; }
