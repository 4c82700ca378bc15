#!/usr/bin/env bats
# Resource limits: --pids against a fork bomb, --memory against a memory hog,
# --cpu, and the values sbx must refuse. A limit hit stays inside: the host is
# fine, the command fails, and status says what happened.

load ../helpers/common

setup () {
  sbx_setup
  sbx_import_payload
}

# cgroup_file CONTROLLER ID FILE: the sandbox's cgroup file (v1 or v2).
cgroup_file () {
  if [ -d "/sys/fs/cgroup/$1/sbx-$SBX_TAG/$2" ]; then
    echo "/sys/fs/cgroup/$1/sbx-$SBX_TAG/$2/$3"
  else
    echo "/sys/fs/cgroup/sbx-$SBX_TAG/$2/$3"
  fi
}

# The host can still start processes.
host_fine () {
  local out
  out=$(for i in 1 2 3 4 5 6 7 8; do sh -c 'echo $$' & done; wait) || fail "the host cannot fork"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 8 ] || fail "the host forked: $out"
}

# --- pids -----------------------------------------------------------------------

forkbomb () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --pids 64)
  # Under runc the pids cgroup is the limit; gVisor counts its own processes
  # (each costs it several host tasks), so there only the effect counts.
  [ "$rt" != runc ] || expect_eq "$(cat "$(cgroup_file pids "$id" pids.max)")" 64 "pids.max"
  run --separate-stderr sbx exec "$id" -- /bin/sbx-testpayload forkbomb 500
  host_fine
  expect_status 1
  expect_contains "$output" "forkbomb: denied"
  local n
  n=$(printf '%s\n' "$output" | awk '$1 == "forked:" { print $2 }')
  [ -n "$n" ] || fail "no count from the fork bomb: $output"
  [ "$n" -lt 64 ] || fail "forked $n processes under --pids 64"
  # The sandbox lives on, and can fork again once they are gone.
  run --separate-stderr sbx exec "$id" -- /bin/sbx-testpayload forkbomb 8
  expect_status 0
  expect_eq "$(state_of "$id")" running "state after the fork bomb"
  sbx terminate "$id" >/dev/null
}

@test "limits: --pids 64 holds a fork bomb of 500 inside [runc]" { forkbomb runc; }
@test "limits: --pids 64 holds a fork bomb of 500 inside [runsc]" { forkbomb runsc; }

# The counter is on the sandbox's status while it runs, and kept at the end.
@test "limits: status counts pids limit hits, live and after the end [runc]" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload --pids 32)
  run sbx exec "$id" -- /bin/sbx-testpayload forkbomb 100
  expect_status 1
  local live
  live=$(sbx --json status "$id" | jpipe 'd["pids_limit_hits"]')
  sbx terminate "$id" >/dev/null
  local final
  final=$(sbx --json status "$id" | jpipe 'd["pids_limit_hits"]')
  [ "$final" -gt 0 ] || fail "pids_limit_hits after the end: $final"
  [ "$live" -gt 0 ] || fail "pids_limit_hits while running, after the fork bomb: $live (after the end: $final)"
}

@test "limits: the default pids limit is in the spec" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload)
  expect_eq "$(sbx --json status "$id" | jpipe 'd["options"]["pids"]')" 1024 "default pids"
  expect_eq "$(cat "$(cgroup_file pids "$id" pids.max)")" 1024 "pids.max"
  sbx terminate "$id" >/dev/null
}

# --- memory ---------------------------------------------------------------------

memhog () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --memory 64Mi)
  local f
  f=$(cgroup_file memory "$id" memory.limit_in_bytes)
  [ -f "$f" ] || f=$(cgroup_file memory "$id" memory.max)
  expect_eq "$(cat "$f")" 67108864 "memory limit ($f)"
  run --separate-stderr sbx exec "$id" -- /bin/sbx-testpayload memhog 512
  host_fine
  [ "$status" -ne 0 ] || fail "memhog 512 under --memory 64Mi succeeded: $output"
  expect_not_contains "$output" "memhog: ok"
  expect_not_contains "$output" "allocated: 512 MiB"
  run --separate-stderr sbx --json status "$id"
  expect_status 0
  local state
  state=$(jget 'd["state"]')
  if [ "$state" = running ]; then
    # The sandbox survived: the kill is counted, now or at the end.
    run sbx exec "$id" -- true
    expect_status 0
    sbx terminate "$id" >/dev/null
    run --separate-stderr sbx --json status "$id"
    [ "$(jget 'd["oom_kills"]')" -ge 1 ] || fail "oom_kills after the end: $output"
  else
    # The sandbox died of it: it says so.
    run --separate-stderr sbx --json wait --timeout 15 "$id"
    expect_status 0
    expect_eq "$(jget 'd["state"]')" failed "state of a sandbox killed by its memory limit"
    [ "$(jget 'd["oom_kills"]')" -ge 1 ] || fail "oom_kills: $output"
    expect_contains "$(jget 'd["error"]')" "memory"
  fi
  [ "$(jget 'd["memory_peak"]')" -le 67108864 ] || fail "memory_peak above the limit: $output"
}

@test "limits: --memory 64Mi stops a 512 MiB memory hog [runc]" { memhog runc; }
@test "limits: --memory 64Mi stops a 512 MiB memory hog [runsc]" { memhog runsc; }

@test "limits: status counts OOM kills while the sandbox runs [runc]" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload --memory 64Mi)
  run sbx exec "$id" -- /bin/sbx-testpayload memhog 256
  [ "$status" -ne 0 ] || fail "memhog succeeded"
  local live
  live=$(sbx --json status "$id" | jpipe 'd["oom_kills"]')
  sbx terminate "$id" >/dev/null
  [ "$live" -ge 1 ] || fail "oom_kills while running, after an OOM kill: $live"
}

@test "limits: memory under the limit is usable [runc]" {
  require_runtime runc
  run sbx run --runtime runc --image payload --memory 128Mi -- /bin/sbx-testpayload memhog 32
  expect_status 0
  expect_contains "$output" "memhog: ok"
}

@test "limits: memory units (MiB number, Mi, Gi)" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload --memory 100)
  expect_eq "$(sbx --json status "$id" | jpipe 'd["options"]["memory"]')" 104857600 "--memory 100"
  sbx terminate "$id" >/dev/null
  id=$(sbx create --runtime runc --image payload --memory 1Gi)
  expect_eq "$(sbx --json status "$id" | jpipe 'd["options"]["memory"]')" 1073741824 "--memory 1Gi"
  sbx terminate "$id" >/dev/null
}

# --- cpu ------------------------------------------------------------------------

cpu_half () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --cpu 0.5)
  expect_eq "$(sbx --json status "$id" | jpipe 'd["options"]["cpu"]')" 0.5 "options.cpu"
  local q
  if [ -f "$(cgroup_file cpu "$id" cpu.cfs_quota_us)" ]; then
    q=$(cat "$(cgroup_file cpu "$id" cpu.cfs_quota_us)")/$(cat "$(cgroup_file cpu "$id" cpu.cfs_period_us)")
  else
    q=$(tr ' ' / <"$(cgroup_file cpu "$id" cpu.max)")
  fi
  expect_eq "$q" 50000/100000 "cpu quota/period"
  run sbx exec "$id" -- true
  expect_status 0
  sbx terminate "$id" >/dev/null
}

@test "limits: --cpu 0.5 is accepted and applied [runc]" { cpu_half runc; }
@test "limits: --cpu 0.5 is accepted and applied [runsc]" { cpu_half runsc; }

# --- where runsc runs -------------------------------------------------------------

# runsc_pids ID: the host processes of runsc for sandbox ID (runsc run, its
# gofer, gVisor's sandbox and its stubs: their command lines name ID).
runsc_pids () {
  local rc=0
  pgrep -f -- "runsc.*$1" || rc=$?
  [ "$rc" -le 1 ] || fail "pgrep -f runsc.*$1 failed (status $rc)"
}

@test "limits: without --memory, sbx puts runsc and all it starts in the sandbox's cgroup [runsc]" {
  require_runtime runsc
  local id pid procs f n=0
  id=$(sbx create --image payload --block-network)
  # runsc was told to leave cgroups alone: sbx placed it.
  for pid in $(runsc_pids "$id"); do
    if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- " run .*--bundle"; then
      tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--ignore-cgroups" || fail "runsc run without --ignore-cgroups"
    fi
  done
  if [ -d /sys/fs/cgroup/memory ]; then
    for ctl in memory pids cpu cpuacct devices; do
      f=/sys/fs/cgroup/$ctl/sbx-$SBX_TAG/$id/ctr/cgroup.procs
      procs=$(cat "$f") || fail "no $f"
      for pid in $(runsc_pids "$id"); do
        # A stub may have just exited: only live processes count.
        [ -d "/proc/$pid" ] || continue
        printf '%s\n' "$procs" | grep -qx "$pid" || [ ! -d "/proc/$pid" ] || fail "$ctl: runsc process $pid is not in $f"
        n=$((n + 1))
      done
    done
    [ "$n" -ge 15 ] || fail "expected runsc run, its gofer and gVisor's sandbox in 5 cgroups, saw $n"
    # The device list holds for gVisor's own host processes.
    expect_eq "$(tr '\n' ' ' <"/sys/fs/cgroup/devices/sbx-$SBX_TAG/$id/devices.list")" \
      "c 1:3 rwm c 1:5 rwm c 1:7 rwm c 1:8 rwm c 1:9 rwm c 5:0 rwm c 5:2 rwm c 136:* rwm " "devices.list"
    expect_eq "$(cat "/sys/fs/cgroup/pids/sbx-$SBX_TAG/$id/pids.max")" $((1024 * 8 + 1024)) "pids.max"
  else
    procs=$(cat "/sys/fs/cgroup/sbx-$SBX_TAG/$id/ctr/cgroup.procs")
    for pid in $(runsc_pids "$id"); do
      printf '%s\n' "$procs" | grep -qx "$pid" || [ ! -d "/proc/$pid" ] || fail "runsc process $pid is not in the sandbox's cgroup"
    done
  fi
  run sbx exec "$id" -- true
  expect_status 0
  sbx terminate "$id" >/dev/null
  [ ! -e "/sys/fs/cgroup/memory/sbx-$SBX_TAG/$id" ] || fail "cgroup left after terminate"
}

@test "limits: with --memory, gVisor shows the limit as the sandbox's memory [runsc]" {
  require_runtime runsc
  local id kb
  id=$(sbx create --image payload --block-network --memory 128Mi)
  run --separate-stderr sbx exec "$id" -- cat /proc/meminfo
  expect_status 0
  kb=$(printf '%s\n' "$output" | awk '$1 == "MemTotal:" { print $2 }')
  # The limit, plus the 16 MiB sbx gives gVisor over it (spec.c).
  [ "$kb" -ge $((128 * 1024)) ] && [ "$kb" -le $((145 * 1024)) ] || fail "MemTotal ${kb} kB under --memory 128Mi"
  sbx terminate "$id" >/dev/null
}

# --- refused values -------------------------------------------------------------

# refused ARGS...: create with ARGS is INVALID_ARGUMENT and leaves nothing.
refused () {
  expect_error INVALID_ARGUMENT create --runtime runc --image payload "$@"
  [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "create $* left $(ls -A "$SBX_ROOT/sandboxes")"
}

@test "limits: bad --memory values are refused" {
  refused --memory -1
  refused --memory 0
  refused --memory abc
  refused --memory 1
  refused --memory 5Ti
  refused --memory ''
  refused --memory 64Qi
  refused --memory 99999999999999999999999
}

@test "limits: bad --timeout and --keep-warm values are refused" {
  refused --timeout 99999999999
  refused --timeout 86401
  refused --timeout 0
  refused --timeout -1
  refused --timeout 1.5
  refused --timeout ''
  refused --keep-warm 0
  refused --keep-warm -2
  refused --keep-warm 86401
  refused --keep-warm soon
}

@test "limits: bad --cpu values are refused" {
  refused --cpu abc
  refused --cpu 0
  refused --cpu -1
  refused --cpu nan
  refused --cpu inf
  refused --cpu 1e999
  refused --cpu 0.5x
  refused --cpu ''
}

@test "limits: bad --pids values are refused" {
  refused --pids 0
  refused --pids -1
  refused --pids abc
  refused --pids 1.5
  refused --pids 99999999999999999999
}

@test "limits: the same values are refused by run" {
  expect_error INVALID_ARGUMENT run --runtime runc --memory -1 -- true
  expect_error INVALID_ARGUMENT run --runtime runc --pids 0 -- true
  expect_error INVALID_ARGUMENT run --runtime runc --cpu abc -- true
  expect_error INVALID_ARGUMENT run --runtime runc --timeout 99999999999 -- true
  [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "run left $(ls -A "$SBX_ROOT/sandboxes")"
}
