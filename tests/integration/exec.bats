#!/usr/bin/env bats
# exec under load: many clients at once, and a large stream through one
# exec with the monitor's memory flat (backpressure, no unbounded buffers).

load ../helpers/common

monitor_rss_kb () {
  local pid
  pid=$(jget 'd["monitor_pid"]' "$(cat "$SBX_ROOT/sandboxes/$1/state.json")")
  awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"
}

concurrent_case () {
  local rt=$1 n=32 id i pids=()
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  for i in $(seq "$n"); do
    sbx exec "$id" -- sh -c "i=0; while [ \$i -lt 200 ]; do echo $i-\$i; i=\$((i+1)); done; echo err-$i >&2; exit $((i % 7))" \
      >"$BATS_TEST_TMPDIR/out.$i" 2>"$BATS_TEST_TMPDIR/err.$i" &
    pids+=($!)
  done
  for i in $(seq "$n"); do
    local rc=0
    wait "${pids[$((i - 1))]}" || rc=$?
    expect_eq "$rc" "$((i % 7))" "exit status of exec $i"
    expect_eq "$(wc -l <"$BATS_TEST_TMPDIR/out.$i")" 200 "lines of exec $i"
    expect_eq "$(grep -cv "^$i-" "$BATS_TEST_TMPDIR/out.$i")" 0 "foreign lines in exec $i"
    expect_eq "$(cat "$BATS_TEST_TMPDIR/err.$i")" "err-$i" "stderr of exec $i"
  done
  sbx terminate --rm "$id" >/dev/null
}

@test "exec: 32 concurrent execs into one sandbox each get their own output and status [runc]" { concurrent_case runc; }
@test "exec: 32 concurrent execs into one sandbox each get their own output and status [runsc]" { concurrent_case runsc; }

@test "exec: 1 GiB through one exec leaves the monitor's memory flat [runc]" {
  require_runtime runc
  local id before after n
  id=$(sbx create --runtime runc)
  sbx exec "$id" -- true
  before=$(monitor_rss_kb "$id")
  n=$(sbx exec "$id" -- sh -c 'head -c 1073741824 /dev/zero' | wc -c)
  expect_eq "$n" 1073741824 "bytes through the exec"
  after=$(monitor_rss_kb "$id")
  # The windows bound what is in flight (a few MiB), whatever went through.
  [ "$after" -lt $((before + 16384)) ] || fail "monitor RSS grew from ${before} kB to ${after} kB"
  sbx terminate --rm "$id" >/dev/null
}

@test "exec: a client that stops reading blocks only itself [runc]" {
  require_runtime runc
  local id slow
  id=$(sbx create --runtime runc)
  # A reader that never reads: its exec fills its window and waits.
  mkfifo "$BATS_TEST_TMPDIR/stuck"
  sbx exec "$id" -- sh -c 'head -c 67108864 /dev/zero' >"$BATS_TEST_TMPDIR/stuck" &
  slow=$!
  exec 9<>"$BATS_TEST_TMPDIR/stuck"   # keep the FIFO open, never read it
  sleep 1
  run --separate-stderr timeout 20 "$SBX_BIN" exec "$id" -- echo still-served
  expect_status 0
  expect_eq "$output" still-served "another client's exec"
  kill "$slow" 2>/dev/null || true
  wait "$slow" 2>/dev/null || true
  exec 9>&-
  sbx terminate --rm "$id" >/dev/null
}
