#!/usr/bin/env bats
# sbx update: a running sandbox's limits and lifetimes changed at once, seen
# in its cgroup and in status; and sbx run returning as soon as its command's
# status is known, its monitor tearing the sandbox down (and removing it with
# --rm) afterwards, never more than SBX_TEARDOWNS_MAX (4) at once.

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

# mem_limit ID: the memory limit in the sandbox's cgroup, in bytes ("max"
# or a huge number: none).
mem_limit () {
  local f
  f=$(cgroup_file memory "$1" memory.limit_in_bytes)
  [ -f "$f" ] || f=$(cgroup_file memory "$1" memory.max)
  cat "$f"
}

# cpu_quota ID: the CPU quota in microseconds per 100 ms ("max" or -1: none).
cpu_quota () {
  local f
  f=$(cgroup_file cpu "$1" cpu.cfs_quota_us)
  if [ -f "$f" ]; then
    cat "$f"
  else
    awk '{ print $1 }' "$(cgroup_file cpu "$1" cpu.max)"
  fi
}

# opt_of ID KEY: the sandbox's option KEY, as status --json shows it.
opt_of () {
  sbx --json status "$1" | jpipe "d['options']['$2']"
}

# --- limits ----------------------------------------------------------------------

update_limits () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --block-network --cpu 0.5 --memory 256Mi --pids 100)
  expect_eq "$(mem_limit "$id")" 268435456 "memory limit at create"
  expect_eq "$(cpu_quota "$id")" 50000 "cpu quota at create"
  run --separate-stderr sbx --json update "$id" --cpu 1.5 --memory 512Mi --keep-warm 900 --timeout 1800
  expect_status 0
  expect_eq "$(jget '[d["id"], d["cpu"], d["memory"], d["keep_warm"], d["timeout"]]')" \
    "[\"$id\", 1.5, 536870912, 900, 1800]" "the reply"
  expect_eq "$(mem_limit "$id")" 536870912 "memory limit in the cgroup"
  expect_eq "$(cpu_quota "$id")" 150000 "cpu quota in the cgroup"
  # status, in both forms, and the record itself.
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "cpu:        1.5 cores"
  expect_contains "$output" "memory:     512 MiB"
  expect_contains "$output" "keep-warm:  900 s"
  expect_contains "$output" "timeout:    1800 s"
  expect_eq "$(opt_of "$id" memory)" 536870912 "status --json memory"
  expect_eq "$(opt_of "$id" cpu)" 1.5 "status --json cpu"
  expect_eq "$(jpipe 'd["options"]["memory"]' <"$SBX_ROOT/sandboxes/$id/state.json")" 536870912 "state.json memory"
  if [ "$rt" = runsc ]; then
    # What runsc was shown of its memory follows.
    grep -qx 'MemTotal: *524288 kB' "$SBX_RUN_ROOT/sandboxes/$id/meminfo" \
      || fail "gVisor's meminfo: $(head -1 "$SBX_RUN_ROOT/sandboxes/$id/meminfo")"
    # gVisor's process limit is fixed at its start: refused, nothing changed.
    run --separate-stderr sbx --json update "$id" --pids 200 --cpu 1
    expect_status 125
    expect_eq "$(jget 'd["error"]["code"]')" RUNTIME_UNAVAILABLE "--pids under runsc"
    expect_eq "$(cpu_quota "$id")" 150000 "cpu quota after a refused update"
  else
    run --separate-stderr sbx update "$id" --pids 200
    expect_status 0
    expect_eq "$(cat "$(cgroup_file pids "$id" pids.max)")" 200 "pids.max"
    expect_eq "$(opt_of "$id" pids)" 200 "status --json pids"
  fi
  # 0: no limit, as at create.
  run --separate-stderr sbx update "$id" --cpu 0 --memory 0
  expect_status 0
  case $(mem_limit "$id") in max | 9223372036854*) ;; *) fail "memory limit after --memory 0: $(mem_limit "$id")" ;; esac
  case $(cpu_quota "$id") in max | -1) ;; *) fail "cpu quota after --cpu 0: $(cpu_quota "$id")" ;; esac
  expect_contains "$(sbx status "$id")" "memory:     unlimited"
  # The sandbox still runs its commands.
  run --separate-stderr sbx exec "$id" -- echo alive
  expect_eq "$output" alive "exec after update"
  sbx terminate "$id" >/dev/null
}

@test "update: cpu, memory and pids reach the cgroup, status and the record [runc]" { update_limits runc; }
@test "update: cpu and memory reach the cgroup and gVisor's meminfo; pids refused [runsc]" { update_limits runsc; }

# Memory below what the sandbox uses is refused with the figure, and nothing
# changes.
below_use () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --block-network --memory 512Mi)
  # 48 MiB in the sandbox's tmpfs: charged to it as long as the file lives.
  run --separate-stderr sbx exec "$id" -- sh -c 'head -c 50331648 /dev/zero >/dev/shm/fill && echo filled'
  expect_eq "$output" filled "filling /dev/shm"
  run --separate-stderr sbx --json update "$id" --memory 16Mi --cpu 0.25
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" INVALID_ARGUMENT "error code"
  expect_contains "$(jget 'd["error"]["message"]')" "below the"
  expect_contains "$(jget 'd["error"]["message"]')" "the sandbox uses now"
  # The figure: at least the 48 MiB written, in bytes and MiB.
  local used
  used=$(jget 'd["error"]["message"]' | sed -n 's/.*below the \([0-9]*\) bytes.*/\1/p')
  [ "$used" -ge 50331648 ] || fail "the figure in the message ($used) is below what was written"
  expect_eq "$(mem_limit "$id")" 536870912 "memory limit after the refusal"
  expect_eq "$(opt_of "$id" memory)" 536870912 "status after the refusal"
  case $(cpu_quota "$id") in 25000) fail "the cpu limit of a refused update was applied" ;; esac
  # Above what it uses: taken.
  run --separate-stderr sbx update "$id" --memory 256Mi
  expect_status 0
  expect_eq "$(mem_limit "$id")" 268435456 "memory limit above use"
  sbx terminate "$id" >/dev/null
}

@test "update: memory below current use is refused with the figure [runc]" { below_use runc; }
@test "update: memory below current use is refused with the figure [runsc]" { below_use runsc; }

@test "update: create's bounds, nothing to change, unknown and ended sandboxes [runc]" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload --block-network --cpu 0.5 --memory 128Mi --pids 100)
  local bad
  for bad in "--cpu 2000" "--cpu 0.001" "--cpu x" "--memory 1" "--memory 5Ti" "--pids 3" "--pids 99999999" \
    "--keep-warm 0" "--keep-warm 86401" "--timeout 0" "--timeout 86401" "--memory 64Mi --cpu -1"; do
    # shellcheck disable=SC2086
    run --separate-stderr sbx --json update "$id" $bad
    expect_status 125
    expect_eq "$(jget 'd["error"]["code"]')" INVALID_ARGUMENT "update $bad"
  done
  run --separate-stderr sbx --json update "$id"
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" INVALID_ARGUMENT "update with nothing to change"
  # Nothing of the refused ones was applied.
  expect_eq "$(mem_limit "$id")" 134217728 "memory limit"
  expect_eq "$(cpu_quota "$id")" 50000 "cpu quota"
  expect_eq "$(cat "$(cgroup_file pids "$id" pids.max)")" 100 "pids.max"
  run --separate-stderr sbx --json update sb-000000000000 --cpu 1
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" NOT_FOUND "unknown sandbox"
  sbx terminate "$id" >/dev/null
  run --separate-stderr sbx --json update "$id" --cpu 1
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" SANDBOX_NOT_RUNNING "ended sandbox"
}

# A paused sandbox takes an update (its cgroup is there, frozen); it applies
# when it is resumed.
@test "update: a paused sandbox is updated [runc]" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload --block-network --memory 128Mi)
  sbx pause "$id" >/dev/null
  run --separate-stderr sbx update "$id" --memory 192Mi
  expect_status 0
  expect_eq "$(mem_limit "$id")" 201326592 "memory limit while paused"
  sbx resume "$id" >/dev/null
  run --separate-stderr sbx exec "$id" -- echo resumed
  expect_eq "$output" resumed "exec after resume"
  sbx terminate "$id" >/dev/null
}

# --- lifetimes --------------------------------------------------------------------

lifetimes () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --block-network --keep-warm 600 --timeout 3600)
  run --separate-stderr sbx update "$id" --keep-warm 1
  expect_status 0
  run --separate-stderr sbx wait --timeout 60 "$id"
  expect_status 0
  expect_eq "$(sbx --json status "$id" | jpipe 'd["reason"]')" "keep-warm expired" "ended by the new keep-warm"
  id=$(sbx create --runtime "$rt" --image payload --block-network --keep-warm -1 --timeout 3600)
  local before=$SECONDS
  run --separate-stderr sbx --json update "$id" --timeout 2
  expect_status 0
  # The deadline counts from now, as sbx ttl's.
  local now
  now=$(date +%s)
  [ $(($(jget 'd["deadline"]') - now)) -le 2 ] || fail "deadline $(jget 'd["deadline"]') is not 2 s from $now"
  run --separate-stderr sbx wait --timeout 60 "$id"
  expect_status 0
  expect_eq "$(sbx --json status "$id" | jpipe 'd["reason"]')" timeout "ended by the new timeout"
  [ $((SECONDS - before)) -ge 1 ] || fail "ended before its new timeout"
  # sbx ttl still works.
  id=$(sbx create --runtime "$rt" --image payload --block-network)
  run --separate-stderr sbx ttl "$id" 1
  expect_status 0
  run --separate-stderr sbx wait --timeout 60 "$id"
  expect_eq "$(sbx --json status "$id" | jpipe 'd["reason"]')" timeout "ended by ttl"
}

@test "update: --keep-warm and --timeout change the lifetimes at once [runc]" { lifetimes runc; }
@test "update: --keep-warm and --timeout change the lifetimes at once [runsc]" { lifetimes runsc; }

# --- sbx run returns before the teardown ----------------------------------------------

# The monitor of a run --rm sandbox removes it at the end of its teardown; a
# file call holding the sandbox's files (its fs.lock) holds that removal up,
# which shows that run returned while the teardown was still under way.
run_early () {
  local rt=$1 id runpid st holder i
  require_runtime "$rt"
  sbx run --rm --runtime "$rt" --image payload --block-network --name early -- \
    sh -c 'while [ ! -e /go ]; do sleep 0.1; done; exit 7' &
  runpid=$!
  for i in $(seq 300); do
    id=$(readlink "$SBX_ROOT/names/early" 2>/dev/null) && [ "$(state_of "$id" 2>/dev/null)" = running ] && break
    sleep 0.1
  done
  [ -n "$id" ] || fail "the sandbox of run did not start"
  local lock=$SBX_ROOT/sandboxes/$id/fs.lock
  (
    flock -s 9
    exec sleep 60
  ) 9>>"$lock" &
  holder=$!
  for i in $(seq 100); do
    flock -n -x "$lock" true || break
    sleep 0.05
  done
  sbx exec "$id" -- touch /go
  st=0
  wait "$runpid" || st=$?
  expect_eq "$st" 7 "run's exit status"
  # run has returned; the teardown is under way (held at the removal).
  [ -e "$SBX_RUN_ROOT/ending/$id" ] || fail "no teardown under way after run returned"
  [ -d "$SBX_ROOT/sandboxes/$id" ] || fail "the sandbox was removed while its files were in use"
  kill "$holder"
  wait "$holder" 2>/dev/null || true
  sbx_wait_teardowns
  [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "run --rm left $(ls -A "$SBX_ROOT/sandboxes")"
  expect_eq "$(sbx ls -q)" "" "sandboxes after run --rm"
  [ ! -e "$SBX_ROOT/names/early" ] || fail "the name is still taken"
  # Without --rm: the record stays, with the exit status, once it is over.
  run --separate-stderr sbx run --runtime "$rt" --image payload --block-network -- sh -c 'exit 4'
  expect_status 4
  id=$(sbx ls -q)
  expect_eq "$(sbx wait "$id")" "terminated (exited, code 4)" "wait after run"
  # rm right after run waits for the teardown rather than refusing.
  run --separate-stderr sbx run --runtime "$rt" --image payload --block-network --name next -- true
  expect_status 0
  run --separate-stderr sbx rm next
  expect_status 0
  [ ! -e "$SBX_ROOT/names/next" ] || fail "rm right after run left the name"
}

@test "run: returns before the teardown, and --rm removes everything afterwards [runc]" { run_early runc; }
@test "run: returns before the teardown, and --rm removes everything afterwards [runsc]" { run_early runsc; }

# A loop of runs never has more than SBX_TEARDOWNS_MAX sandboxes tearing down.
run_loop () {
  local rt=$1 i n max=0 st
  require_runtime "$rt"
  for i in $(seq 30); do
    st=0
    "$SBX_BIN" run --rm --runtime "$rt" --image payload --block-network -- true || st=$?
    expect_eq "$st" 0 "run $i"
    n=$(ls "$SBX_ROOT/sandboxes" | wc -l)
    [ "$n" -le 4 ] || fail "run $i: $n sandboxes left (at most 4 may be tearing down)"
    [ "$n" -le "$max" ] || max=$n
  done
  echo "# at most $max sandboxes at once after a run" >&3
  sbx_wait_teardowns
  [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "the loop left $(ls -A "$SBX_ROOT/sandboxes")"
  expect_eq "$(sbx ls -q)" "" "sandboxes after the loop"
  # With 4 teardowns under way (held entries, as monitors hold theirs), a
  # run waits before it makes anything, and goes on when one is over.
  local holders=() f rp
  mkdir -p "$SBX_RUN_ROOT/ending"
  for i in 1 2 3 4; do
    f=$SBX_RUN_ROOT/ending/sb-00000000000$i
    (
      flock -x 9
      exec sleep 120
    ) 9>"$f" &
    holders+=($!)
  done
  for f in "$SBX_RUN_ROOT"/ending/sb-*; do
    for i in $(seq 100); do
      flock -n -s "$f" true || break
      sleep 0.05
    done
  done
  "$SBX_BIN" run --rm --runtime "$rt" --image payload --block-network -- true &
  rp=$!
  sleep 2
  kill -0 "$rp" 2>/dev/null || fail "run returned while 4 teardowns were under way"
  [ -z "$(ls -A "$SBX_ROOT/sandboxes" 2>/dev/null)" ] || fail "run made a sandbox while 4 teardowns were under way"
  kill "${holders[0]}"
  st=0
  wait "$rp" || st=$?
  expect_eq "$st" 0 "run once a teardown was over"
  kill "${holders[@]:1}"
  wait "${holders[@]}" 2>/dev/null || true
  sbx_wait_teardowns
  [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "the throttled run left $(ls -A "$SBX_ROOT/sandboxes")"
}

@test "run: a loop of 30 run --rm stays bounded and leaves nothing [runc]" { run_loop runc; }
@test "run: a loop of 30 run --rm stays bounded and leaves nothing [runsc]" { run_loop runsc; }
