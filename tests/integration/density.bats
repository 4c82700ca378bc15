#!/usr/bin/env bats
# Density: an idle sandbox costs no CPU (its monitor sleeps until the kernel
# or a client has something for it, docs/design.md), the limit events still
# reach the record, and 200 idle sandboxes all start, list, count and go
# without a leak.

load ../helpers/common

setup () {
  sbx_setup
  sbx_import_payload
}

# ctx_switches PID: every context switch of PID's threads so far.
ctx_switches () {
  cat /proc/"$1"/task/*/status | awk '/ctxt_switches:/ { n += $2 } END { print n }'
}

# idle_monitor CREATE ARGS...: the monitor of an idle sandbox is not woken
# in 3 s (a tick would wake it 3 times; one wake is allowed for a deadline
# that happens to fall in them).
idle_monitor () {
  local id pid a b
  id=$(sbx create --image payload "$@")
  pid=$(monitor_pid "$id")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || fail "no monitor for $id"
  a=$(ctx_switches "$pid")
  sleep 3
  b=$(ctx_switches "$pid")
  [ $((b - a)) -le 1 ] || fail "the idle monitor was woken $((b - a)) times in 3 s"
  # It still answers at once.
  run sbx exec "$id" -- true
  expect_status 0
  sbx terminate "$id" >/dev/null
}

@test "density: an idle monitor sleeps [runc --block-network]" {
  require_runtime runc
  idle_monitor --runtime runc --block-network
}
@test "density: an idle monitor sleeps [runc, network]" {
  require_runtime runc
  idle_monitor --runtime runc
}
@test "density: an idle monitor sleeps [runsc --block-network]" {
  require_runtime runsc
  idle_monitor --runtime runsc --block-network
}

# The kernel's OOM event (v1: an eventfd; v2: memory.events) wakes the
# monitor, which writes the count to the record: state.json, not status's
# live read of the cgroup.
@test "density: the monitor records an OOM kill when the kernel reports it [runc]" {
  require_runtime runc
  local id n i
  id=$(sbx create --runtime runc --image payload --block-network --memory 64Mi)
  run sbx exec "$id" -- /bin/sbx-testpayload memhog 256
  [ "$status" -ne 0 ] || fail "memhog 256 under --memory 64Mi succeeded"
  for i in $(seq 50); do
    n=$(jget 'd["oom_kills"]' "$(cat "$SBX_ROOT/sandboxes/$id/state.json")")
    [ "$n" -ge 1 ] && break
    sleep 0.1
  done
  [ "$n" -ge 1 ] || fail "oom_kills in the record after an OOM kill: $n"
  sbx terminate "$id" >/dev/null
}

# create_many N: N idle runc sandboxes, created 10 at a time; their ids in
# $SBX_TEST_DIR/ids.
create_many () {
  local n=$1 i j
  : >"$SBX_TEST_DIR/ids"
  for ((i = 0; i < n; i += 10)); do
    for ((j = i; j < i + 10 && j < n; j++)); do
      sbx create --runtime runc --image payload --block-network --memory 16Mi >>"$SBX_TEST_DIR/ids" \
        2>>"$SBX_TEST_DIR/create.err" &
    done
    wait
  done
}

@test "density: 200 idle sandboxes start, list, count and go [runc]" {
  require_runtime runc
  create_many 200
  local ids
  ids=$(wc -l <"$SBX_TEST_DIR/ids")
  [ "$ids" -eq 200 ] || fail "$ids of 200 created: $(head -5 "$SBX_TEST_DIR/create.err")"
  run sbx ls -q
  expect_status 0
  expect_eq "$(printf '%s\n' "$output" | grep -c .)" 200 "sandboxes listed"
  run --separate-stderr sbx --json stats
  expect_status 0
  expect_eq "$(jget 'd["running"]')" 200 "running sandboxes counted"
  run sbx gc
  expect_status 0
  expect_eq "$(sbx ls -q | grep -c .)" 200 "sandboxes after gc"
  # shellcheck disable=SC2046
  run sbx terminate $(cat "$SBX_TEST_DIR/ids")
  expect_status 0
  # shellcheck disable=SC2046
  run sbx rm $(cat "$SBX_TEST_DIR/ids")
  expect_status 0
  expect_eq "$(sbx ls -q | grep -c . || true)" 0 "sandboxes left"
}

@test "density: sbx info reports the host limits on idle sandboxes" {
  run --separate-stderr sbx --json info
  expect_status 0
  local pid_max pool
  pid_max=$(cat /proc/sys/kernel/pid_max)
  expect_eq "$(jget 'd["limits"]["pid_max"]["value"]')" "$pid_max" "pid_max"
  expect_eq "$(jget 'd["limits"]["pid_max"]["runc_sandboxes"]')" $((pid_max / 2)) "runc sandboxes pid_max allows"
  expect_eq "$(jget 'd["limits"]["pid_max"]["runsc_sandboxes"]')" $((pid_max / 37)) "runsc sandboxes pid_max allows"
  expect_eq "$(jget 'd["limits"]["threads_max"]["value"]')" "$(cat /proc/sys/kernel/threads-max)" "threads-max"
  # One slot of 4 addresses per sandbox with a network, less slot 0.
  pool=$(py -c 'import ipaddress, sys; print(ipaddress.ip_network(sys.argv[1]).num_addresses // 4 - 1)' \
    "$(jget 'd["network"]["pool4"]')")
  expect_eq "$(jget 'd["limits"]["address_pool"]["value"]')" "$pool" "address pool"
  run sbx info
  expect_status 0
  expect_contains "$output" "limits.pid_max: source=/proc/sys/kernel/pid_max value=$pid_max runc_sandboxes=$((pid_max / 2)) runsc_sandboxes=$((pid_max / 37))"
}
