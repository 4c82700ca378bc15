#!/usr/bin/env bats
# Crashes and races: a monitor killed with SIGKILL, a CLI killed in the
# middle of create, the sandbox's init killed from the host, and many
# sandboxes started at once. Whatever dies, `sbx gc` reaps the rest and the
# leak check (teardown) finds nothing.

load ../helpers/common

# leak_free: the leak check, here and now, with the details on failure.
leak_free () {
  local leaks
  leaks=$(sbx_leaks)
  [ -z "$leaks" ] || fail "LEAK: $leaks"
}

# pid_alive PID: running, not a zombie.
pid_alive () {
  local st
  st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# end_all: terminate what runs, then gc; both must succeed.
end_all () {
  local id
  for id in $(sbx ls -q); do
    case $(state_of "$id") in
      running | creating | terminating) sbx terminate "$id" >/dev/null || fail "terminate $id failed" ;;
    esac
  done
  run --separate-stderr sbx gc
  expect_status 0
}

# --- the monitor killed ------------------------------------------------------------

monitor_killed () {
  local rt=$1 id mp
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --name victim)
  mp=$(monitor_pid "$id")
  [ -n "$mp" ] && [ "$mp" -gt 1 ] || fail "no monitor_pid for $id"
  expect_eq "$(cat "/proc/$mp/comm")" sbx-monitor "monitor's name"
  expect_eq "$(readlink "/proc/$mp/cwd")" "$(realpath "$SBX_ROOT")" "monitor's cwd"
  # It runs in a cgroup of its own, which its death leaves for gc.
  grep -qx "$mp" "/sys/fs/cgroup/memory/sbx-$SBX_TAG/$id.monitor/cgroup.procs" \
    || fail "the monitor is not in its own cgroup: $(cat "/proc/$mp/cgroup")"
  kill -9 "$mp"
  local i
  for i in $(seq 50); do pid_alive "$mp" || break; sleep 0.1; done
  run --separate-stderr sbx --json status "$id"
  expect_status 0
  expect_eq "$(jget 'd["state"]')" failed "state"
  expect_eq "$(jget 'd["reason"]')" "monitor lost" "reason"
  # Every command answers, none hangs.
  expect_error SANDBOX_NOT_RUNNING exec "$id" -- true
  run timeout 20 "$SBX_BIN" wait "$id"
  expect_status 0
  expect_contains "$output" failed
  run timeout 20 "$SBX_BIN" ls
  expect_status 0
  expect_contains "$output" "monitor lost"
  run --separate-stderr sbx --json gc
  expect_status 0
  [ "$(jget 'd["reaped"]')" -ge 1 ] || fail "gc reaped nothing: $output"
  leak_free
  # The name is free again.
  run sbx run --runtime "$rt" --rm --name victim -- true
  expect_status 0
}

@test "crash: kill -9 of a monitor: status says monitor lost, gc reaps everything [runc]" {
  monitor_killed runc
}

@test "crash: kill -9 of a monitor: status says monitor lost, gc reaps everything [runsc]" {
  monitor_killed runsc
}

@test "crash: kill -9 of a monitor during an exec: the exec returns" {
  require_runtime runc
  local id mp pid rc
  id=$(sbx create --runtime runc)
  mp=$(monitor_pid "$id")
  sbx exec "$id" -- sleep 60 >/dev/null 2>&1 &
  pid=$!
  sleep 0.5
  kill -9 "$mp"
  local t0=$SECONDS
  wait "$pid" && rc=0 || rc=$?
  [ $((SECONDS - t0)) -le 10 ] || fail "exec took $((SECONDS - t0)) s to notice its monitor died"
  [ "$rc" -ne 0 ] || fail "exec succeeded although its monitor was killed"
  expect_eq "$(state_of "$id")" failed "state"
  end_all
  leak_free
}

@test "crash: SIGTERM to a monitor ends the sandbox cleanly" {
  require_runtime runc
  local id mp
  id=$(sbx create --runtime runc)
  mp=$(monitor_pid "$id")
  kill -TERM "$mp"
  wait_for_state "$id" terminated 15
  expect_eq "$(sbx --json status "$id" | jpipe 'd["reason"]')" killed "reason"
  # The monitor cleaned up itself: nothing for gc to reap.
  local i
  for i in $(seq 50); do pid_alive "$mp" || break; sleep 0.1; done
  ! pid_alive "$mp" || fail "the monitor outlived its sandbox"
  run --separate-stderr sbx --json gc
  expect_status 0
  expect_eq "$(jget 'd["reaped"]')" 0 "reaped"
  expect_eq "$(jget 'd["orphans"]')" 0 "orphans"
  leak_free
}

# --- the sandbox's init killed from the host ------------------------------------------

init_killed () {
  local rt=$1 id cpid mp
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  mp=$(monitor_pid "$id")
  cpid=$(container_pid "$rt" "$id")
  [ -n "$cpid" ] && [ "$cpid" -gt 1 ] || fail "no container pid for $id"
  kill -9 "$cpid"
  local i
  for i in $(seq 100); do pid_alive "$mp" || break; sleep 0.1; done
  ! pid_alive "$mp" || fail "the monitor did not notice its sandbox died"
  run --separate-stderr sbx --json status "$id"
  [[ "$(jget 'd["state"]')" =~ ^(terminated|failed)$ ]] || fail "state: $output"
  [ "$(jget 'd["reason"]')" != "monitor lost" ] || fail "the monitor died with its sandbox: $output"
  # The monitor tore down on its own.
  local leaks
  leaks=$(sbx_leaks | grep -v '^sandbox directory left' || true)
  [ -z "$leaks" ] || fail "left behind by the monitor: $leaks"
}

@test "crash: kill -9 of the sandbox's init: the monitor ends it and cleans up [runc]" { init_killed runc; }
@test "crash: kill -9 of the sandbox's init: the monitor ends it and cleans up [runsc]" { init_killed runsc; }

# --- the CLI killed during create ------------------------------------------------------

# cli_killed RT DELAY...: `sbx create` killed with SIGKILL after each DELAY.
cli_killed () {
  local rt=$1 d pid
  shift
  require_runtime "$rt"
  for d in "$@"; do
    "$SBX_BIN" create --runtime "$rt" >/dev/null 2>&1 & # the CLI itself: $! of a shell function is its subshell
    pid=$!
    sleep "$d"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # Monitors already forked finish starting on their own.
  sleep 2
  # Every record is readable and in a state that says what happened.
  local id st
  for id in $(sbx ls -q); do
    st=$(state_of "$id") || fail "status of $id failed"
    [[ "$st" =~ ^(creating|running|terminated|failed)$ ]] || fail "$id is $st"
  done
  end_all
  run --separate-stderr sbx ls -q
  expect_eq "$output" "" "sandboxes after terminate and gc"
  leak_free
  # The store still works.
  run sbx run --runtime "$rt" --rm -- true
  expect_status 0
}

@test "crash: kill -9 of the CLI during create leaves nothing gc does not reap [runc]" {
  cli_killed runc 0.002 0.01 0.02 0.03 0.04 0.05 0.07 0.1 0.15
}

@test "crash: kill -9 of the CLI during create leaves nothing gc does not reap [runsc]" {
  cli_killed runsc 0.01 0.03 0.05 0.1 0.2 0.35 0.5
}

# The monitor ends a `sbx run` sandbox when its command ends, and it kills
# the command of a caller that went away: nothing waits out keep-warm.
@test "crash: kill -9 of the CLI during run: the sandbox ends by itself" {
  require_runtime runc
  local pid id i
  "$SBX_BIN" run --runtime runc -- sleep 60 >/dev/null 2>&1 & # the CLI itself, not a shell function
  pid=$!
  for ((i = 0; i < 100; i++)); do
    id=$(sbx ls -q 2>/dev/null)
    [ -n "$id" ] && [ "$(state_of "$id" 2>/dev/null)" = running ] && break
    sleep 0.1
  done
  [ -n "$id" ] || fail "no sandbox from run"
  sleep 0.5 # its command started
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  wait_for_state "$id" terminated 10
  expect_eq "$(sbx --json status "$id" | jpipe 'd["reason"]')" killed "reason"
  sbx gc >/dev/null
  leak_free
}

# --- many at once -------------------------------------------------------------------------

# many RT N: N `sbx run --runtime RT -- true` at once, from one shell.
many () {
  local rt=$1 n=$2 i failed=0
  require_runtime "$rt"
  local pids=()
  for i in $(seq "$n"); do
    sbx run --runtime "$rt" -- sh -c "echo run-$i" >"$BATS_TEST_TMPDIR/out.$i" 2>&1 &
    pids+=($!)
  done
  for i in $(seq "$n"); do
    if ! wait "${pids[$((i - 1))]}"; then
      failed=$((failed + 1))
      echo "run $i failed: $(cat "$BATS_TEST_TMPDIR/out.$i")" >&2
    elif [ "$(cat "$BATS_TEST_TMPDIR/out.$i")" != "run-$i" ]; then
      failed=$((failed + 1))
      echo "run $i printed: $(cat "$BATS_TEST_TMPDIR/out.$i")" >&2
    fi
  done
  [ "$failed" -eq 0 ] || fail "$failed of $n concurrent runs failed"
  # All of them ended, each with its own id (once their monitors' teardowns,
  # which go on after run returns, are over).
  sbx_wait_teardowns
  run --separate-stderr sbx --json ls
  expect_eq "$(jget 'len(d)')" "$n" "sandboxes"
  expect_eq "$(jget 'len(set(s["id"] for s in d))')" "$n" "distinct ids"
  expect_eq "$(jget 'sorted(set(s["state"] for s in d))')" '["terminated"]' "states"
  end_all
  leak_free
}

@test "crash: 50 sbx run at once all succeed [runc]" {
  many runc 50
}

@test "crash: 10 sbx run at once all succeed [runsc]" {
  many runsc 10
}

@test "crash: concurrent creates with one --name: exactly one wins" {
  require_runtime runc
  local i pids=() ok=0 busy=0 rc
  for i in $(seq 8); do
    sbx --json create --runtime runc --name contested >"$BATS_TEST_TMPDIR/c.$i" 2>/dev/null &
    pids+=($!)
  done
  for i in $(seq 8); do
    wait "${pids[$((i - 1))]}" && rc=0 || rc=$?
    if [ "$rc" -eq 0 ]; then
      ok=$((ok + 1))
    elif [ "$(jget 'd["error"]["code"]' "$(cat "$BATS_TEST_TMPDIR/c.$i")")" = BUSY ]; then
      busy=$((busy + 1))
    else
      fail "create $i: exit $rc: $(cat "$BATS_TEST_TMPDIR/c.$i")"
    fi
  done
  expect_eq "$ok" 1 "creates that won the name"
  expect_eq "$busy" 7 "creates refused BUSY"
  expect_eq "$(sbx ls -q | wc -l)" 1 "sandboxes"
  end_all
  leak_free
}
