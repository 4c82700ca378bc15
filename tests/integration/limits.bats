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

# gVisor refuses the forks itself (RLIMIT_NPROC): the host sees none, and
# status says so rather than count 0.
@test "limits: status says pid limit hits are not counted under runsc [runsc]" {
  require_runtime runsc
  local id
  id=$(sbx create --image payload --block-network --pids 32)
  run --separate-stderr sbx exec "$id" -- /bin/sbx-testpayload forkbomb 100
  expect_status 1
  expect_contains "$output" "forkbomb: denied"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "pid limit:  not counted"
  expect_not_contains "$output" "pid limit:  0 hits"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["pids_limit_hits"]')" null "pids_limit_hits while running"
  sbx terminate "$id" >/dev/null
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["pids_limit_hits"]')" null "pids_limit_hits after the end"
  expect_eq "$(jget 'd["state"]')" terminated "state"
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

# memhog RUNTIME [CREATE ARGS...]: a 64 MiB limit (--memory 64Mi, or the
# default of the test's sbx.conf) stops a 512 MiB memory hog.
memhog () {
  local rt=$1 id
  shift
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload "$@")
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

@test "limits: --memory 64Mi stops a 512 MiB memory hog [runc]" { memhog runc --memory 64Mi; }
@test "limits: --memory 64Mi stops a 512 MiB memory hog [runsc]" { memhog runsc --memory 64Mi; }
@test "limits: the default memory limit stops a memory hog [runc]" {
  sbx_write_conf "default_memory = 64Mi"
  memhog runc
}
@test "limits: the default memory limit stops a memory hog [runsc]" {
  sbx_write_conf "default_memory = 64Mi"
  memhog runsc
}

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

@test "limits: with the default limits, sbx puts runsc and all it starts in the sandbox's cgroup [runsc]" {
  require_runtime runsc
  local id pid procs f n=0
  id=$(sbx create --image payload --block-network)
  expect_eq "$(sbx --json status "$id" | jpipe 'd["options"]["memory_default"]')" true "memory_default"
  # runsc was told to leave cgroups alone: sbx placed it.
  ignores_cgroups "$id"
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

# memtotal ID: the MemTotal the sandbox's /proc/meminfo shows, in kB.
memtotal () {
  run --separate-stderr sbx exec "$1" -- cat /proc/meminfo
  expect_status 0
  printf '%s\n' "$output" | awk '$1 == "MemTotal:" { print $2 }'
}

# ignores_cgroups ID: runsc run of ID was told to leave cgroups to sbx.
ignores_cgroups () {
  local pid n=0
  for pid in $(runsc_pids "$1"); do
    if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- " run .*--bundle"; then
      tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--ignore-cgroups" || fail "runsc run without --ignore-cgroups"
      n=$((n + 1))
    fi
  done
  [ "$n" -eq 1 ] || fail "expected one runsc run of $1, saw $n"
}

@test "limits: with --memory, gVisor shows the limit as the sandbox's memory [runsc]" {
  require_runtime runsc
  local id kb
  id=$(sbx create --image payload --block-network --memory 128Mi)
  expect_eq "$(memtotal "$id")" $((128 * 1024)) "MemTotal under --memory 128Mi"
  # runsc does not make a cgroup of its own for it: sbx placed it.
  ignores_cgroups "$id"
  sbx terminate "$id" >/dev/null
}

@test "limits: gVisor shows the default memory limit, and the host's with --memory 0 [runsc]" {
  require_runtime runsc
  sbx_write_conf "default_memory = 200Mi"
  local id host
  id=$(sbx create --image payload --block-network)
  expect_eq "$(memtotal "$id")" $((200 * 1024)) "MemTotal under the default of 200Mi"
  ignores_cgroups "$id"
  sbx terminate "$id" >/dev/null
  id=$(sbx create --image payload --block-network --memory 0)
  host=$(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo)
  expect_eq "$(memtotal "$id")" "$host" "MemTotal under --memory 0"
  sbx terminate "$id" >/dev/null
}

# --- defaults ---------------------------------------------------------------------

# cgroup_memory ID: the memory limit of the sandbox's cgroup ("max": none).
cgroup_memory () {
  local f v
  f=$(cgroup_file memory "$1" memory.limit_in_bytes)
  [ -f "$f" ] || f=$(cgroup_file memory "$1" memory.max)
  v=$(cat "$f") || fail "no $f"
  # v1 writes "no limit" as the largest page-aligned number.
  [ "$v" -lt 4611686018427387904 ] 2>/dev/null || v=max
  echo "$v"
}

# cgroup_cpu ID: the cpu quota/period of the sandbox's cgroup ("max/..": none).
cgroup_cpu () {
  local q
  if [ -f "$(cgroup_file cpu "$1" cpu.cfs_quota_us)" ]; then
    q=$(cat "$(cgroup_file cpu "$1" cpu.cfs_quota_us)")
    [ "$q" != -1 ] || q=max
    echo "$q/$(cat "$(cgroup_file cpu "$1" cpu.cfs_period_us)")"
  else
    tr ' ' / <"$(cgroup_file cpu "$1" cpu.max)"
  fi
}

defaults () {
  local rt=$1 id
  require_runtime "$rt"
  sbx_write_conf "$(printf 'default_memory = 96Mi\ndefault_cpu = 0.25')"
  id=$(sbx create --runtime "$rt" --image payload --block-network)
  expect_eq "$(cgroup_memory "$id")" $((96 << 20)) "the default memory limit"
  expect_eq "$(cgroup_cpu "$id")" 25000/100000 "the default cpu quota/period"
  run --separate-stderr sbx --json status "$id"
  expect_status 0
  expect_eq "$(jget 'd["options"]["memory"]')" $((96 << 20)) "options.memory"
  expect_eq "$(jget 'd["options"]["memory_default"]')" true "options.memory_default"
  expect_eq "$(jget 'd["options"]["cpu"]')" 0.25 "options.cpu"
  expect_eq "$(jget 'd["options"]["cpu_default"]')" true "options.cpu_default"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "cpu:        0.25 cores (default)"
  expect_contains "$output" "memory:     96 MiB (default)"
  run sbx exec "$id" -- true
  expect_status 0
  sbx terminate "$id" >/dev/null
  # An option given wins, and is not the default.
  id=$(sbx create --runtime "$rt" --image payload --block-network --memory 80Mi --cpu 0.5)
  expect_eq "$(cgroup_memory "$id")" $((80 << 20)) "--memory 80Mi"
  expect_eq "$(cgroup_cpu "$id")" 50000/100000 "--cpu 0.5"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["options"]["memory_default"]')" false "options.memory_default with --memory"
  expect_eq "$(jget 'd["options"]["cpu_default"]')" false "options.cpu_default with --cpu"
  sbx terminate "$id" >/dev/null
}

@test "limits: without --memory and --cpu, sbx.conf's defaults apply [runc]" { defaults runc; }
@test "limits: without --memory and --cpu, sbx.conf's defaults apply [runsc]" { defaults runsc; }

@test "limits: with no sbx.conf keys, the defaults are 1 CPU and 1 GiB" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload --block-network)
  expect_eq "$(cgroup_memory "$id")" $((1 << 30)) "the built-in default memory limit"
  expect_eq "$(cgroup_cpu "$id")" 100000/100000 "the built-in default cpu quota/period"
  sbx terminate "$id" >/dev/null
}

no_limits () {
  local rt=$1 id
  require_runtime "$rt"
  sbx_write_conf "$(printf 'default_memory = 96Mi\ndefault_cpu = 0.25')"
  id=$(sbx create --runtime "$rt" --image payload --block-network --memory 0 --cpu 0)
  expect_eq "$(cgroup_memory "$id")" max "memory limit under --memory 0"
  expect_eq "$(cgroup_cpu "$id" | cut -d/ -f1)" max "cpu quota under --cpu 0"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["options"]["memory"]')" 0 "options.memory"
  expect_eq "$(jget 'd["options"]["memory_default"]')" false "options.memory_default"
  expect_eq "$(jget 'd["options"]["cpu"]')" 0 "options.cpu"
  expect_eq "$(jget 'd["options"]["cpu_default"]')" false "options.cpu_default"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "cpu:        unlimited (--cpu 0)"
  expect_contains "$output" "memory:     unlimited (--memory 0)"
  # Past what the default would have allowed.
  run --separate-stderr sbx exec "$id" -- /bin/sbx-testpayload memhog 160
  expect_status 0
  expect_contains "$output" "memhog: ok"
  sbx terminate "$id" >/dev/null
}

@test "limits: --memory 0 --cpu 0 turn the defaults off [runc]" { no_limits runc; }
@test "limits: --memory 0 --cpu 0 turn the defaults off [runsc]" { no_limits runsc; }

@test "limits: sbx.conf's default_memory 0 and default_cpu 0 mean no default limit" {
  require_runtime runc
  sbx_write_conf "$(printf 'default_memory = 0\ndefault_cpu = 0')"
  local id
  id=$(sbx create --runtime runc --image payload --block-network)
  expect_eq "$(cgroup_memory "$id")" max "memory limit"
  expect_eq "$(cgroup_cpu "$id" | cut -d/ -f1)" max "cpu quota"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "memory:     unlimited (default)"
  sbx terminate "$id" >/dev/null
}

@test "limits: a bad default in sbx.conf refuses create and leaves nothing" {
  sbx_write_conf "default_memory = 1Ki"
  expect_error INVALID_ARGUMENT create --runtime runc --image payload
  expect_contains "$output" "default_memory"
  [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "create left $(ls -A "$SBX_ROOT/sandboxes")"
}

# --- refused values -------------------------------------------------------------

# refused ARGS...: create with ARGS is INVALID_ARGUMENT and leaves nothing.
refused () {
  expect_error INVALID_ARGUMENT create --runtime runc --image payload "$@"
  [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "create $* left $(ls -A "$SBX_ROOT/sandboxes")"
}

@test "limits: bad --memory values are refused" {
  refused --memory -1
  refused --memory 0Mi
  refused --memory 00
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
  refused --cpu 0.0
  refused --cpu 0.001
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
