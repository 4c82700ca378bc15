#!/usr/bin/env bats
# sbx commit (a sandbox's files as a new image), sbx pause / resume, and
# --on-idle pause, on both runtimes.

load ../helpers/common

commit_case () {
  local rt=$1 id img
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --env FROM_SANDBOX=yes)
  # The last write lands a moment before the commit: it must be in.
  sbx exec "$id" -- sh -c 'echo kept > /root/f; rm /etc/hostname; mkdir -p /d/e; echo deep > /d/e/x; echo last > /root/last'
  run --separate-stderr sbx --json commit --tag snap "$id"
  expect_status 0
  img=$(jget 'd["id"]')
  # The sandbox runs on, unpaused.
  expect_eq "$(sbx exec "$id" -- echo still)" still "sandbox after commit"
  expect_eq "$(sbx --json status "$id" | jpipe 'd["paused"]')" false "paused after commit"
  run --separate-stderr sbx run --runtime runc --image snap -- sh -c \
    'cat /root/f /d/e/x /root/last; test -e /etc/hostname || echo no-hostname; echo $FROM_SANDBOX'
  expect_status 0
  expect_eq "$output" "kept
deep
last
no-hostname
yes" "the committed image"
  # An ended sandbox commits the same way, and a committed image's sandbox
  # can be committed again.
  sbx exec "$id" -- sh -c 'echo more >> /root/f'
  sbx terminate "$id" >/dev/null
  run --separate-stderr sbx commit "$id"
  expect_status 0
  expect_eq "$(sbx run --runtime runc --image "$output" -- cat /root/f)" "kept
more" "commit of an ended sandbox"
  local id2
  id2=$(sbx create --runtime "$rt" --image snap)
  sbx exec "$id2" -- sh -c 'echo second > /root/g'
  run --separate-stderr sbx commit --tag snap2 "$id2"
  expect_status 0
  expect_eq "$(sbx run --runtime runc --image snap2 -- cat /root/f /root/g)" "kept
second" "commit of a committed image's sandbox"
  sbx terminate --rm "$id2" >/dev/null
  expect_error BUSY rmi snap
  sbx rm "$id" >/dev/null
}

@test "commit: a running and an ended sandbox's files become an image [runc]" { commit_case runc; }
@test "commit: a running and an ended sandbox's files become an image [runsc]" { commit_case runsc; }

pause_case () {
  local rt=$1 id a b c
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  sbx exec -d "$id" -- sh -c 'while :; do echo x >> /tmp/ticks; sleep 0.1; done' >/dev/null
  sleep 1
  run --separate-stderr sbx pause "$id"
  expect_status 0
  expect_eq "$(sbx --json status "$id" | jpipe 'd["paused"]')" true "paused"
  expect_contains "$(sbx status "$id")" "running (paused)"
  a=$(sbx fs "$id" read /tmp/ticks | wc -l)
  sleep 1
  b=$(sbx fs "$id" read /tmp/ticks | wc -l)
  expect_eq "$b" "$a" "ticks while paused"
  expect_error SANDBOX_NOT_RUNNING exec "$id" -- true
  # Pausing twice is fine; files stay readable.
  sbx pause "$id" >/dev/null
  run --separate-stderr sbx resume "$id"
  expect_status 0
  sleep 1
  c=$(sbx fs "$id" read /tmp/ticks | wc -l)
  [ "$c" -gt "$b" ] || fail "no ticks after resume ($b then $c)"
  expect_eq "$(sbx exec "$id" -- echo back)" back "exec after resume"
  # A paused sandbox still ends when asked.
  sbx pause "$id" >/dev/null
  sbx terminate "$id" >/dev/null
  expect_eq "$(state_of "$id")" terminated "state"
  expect_error SANDBOX_NOT_RUNNING pause "$id"
  sbx rm "$id" >/dev/null
}

@test "pause: a paused sandbox stops, refuses exec, resumes where it was [runc]" { pause_case runc; }
@test "pause: a paused sandbox stops, refuses exec, resumes where it was [runsc]" { pause_case runsc; }

@test "pause: the idle clock stops while paused; --on-idle pause pauses instead of ending" {
  require_runtime runc
  local a b
  a=$(sbx create --runtime runc --keep-warm 1)
  sbx pause "$a" >/dev/null
  sleep 3
  expect_eq "$(state_of "$a")" running "a paused sandbox past its keep-warm"
  sbx resume "$a" >/dev/null
  sbx wait --timeout 20 "$a" >/dev/null
  expect_eq "$(sbx --json status "$a" | jpipe 'd["reason"]')" "keep-warm expired" "after resume, idle again"
  b=$(sbx create --runtime runc --keep-warm 1 --on-idle pause)
  sleep 3
  expect_eq "$(state_of "$b")" running "--on-idle pause"
  expect_eq "$(sbx --json status "$b" | jpipe 'd["paused"]')" true "paused by idleness"
  sbx resume "$b" >/dev/null
  expect_eq "$(sbx exec "$b" -- echo up)" up "exec after an idle pause"
  sbx terminate --rm "$b" >/dev/null
  sbx rm "$a" >/dev/null
  expect_error INVALID_ARGUMENT create --on-idle sleep
}

stats_case () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  sbx exec "$id" -- sh -c 'head -c 3000000 /dev/zero > /root/big; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
  run --separate-stderr sbx --json stats "$id"
  expect_status 0
  [ "$(jget 'd["cpu_time_ms"]')" -gt 0 ] || fail "cpu time: $output"
  [ "$(jget 'd["memory"]')" -gt 0 ] || fail "memory: $output"
  [ "$(jget 'd["memory_peak"]')" -ge "$(jget 'd["memory"]')" ] || fail "memory peak: $output"
  [ "$(jget 'd["pids"]')" -ge 1 ] || fail "pids: $output"
  [ "$(jget 'd["disk"]')" -ge 3000000 ] || fail "disk: $output"
  # Network bytes count its interface (not loopback): a refused connection
  # to its gateway goes out and a reset comes back.
  local tx rx gw
  tx=$(jget 'd["net_tx_bytes"]')
  rx=$(jget 'd["net_rx_bytes"]')
  gw=$(sbx --json status "$id" | jpipe 'd["network"]["gateway"]')
  sbx exec "$id" -- sh -c "nc -w 1 $gw 80 </dev/null" >/dev/null 2>&1 || true
  run --separate-stderr sbx --json stats "$id"
  [ "$(jget 'd["net_tx_bytes"]')" -gt "$tx" ] || fail "bytes out did not grow from $tx: $output"
  [ "$(jget 'd["net_rx_bytes"]')" -gt "$rx" ] || fail "bytes in did not grow from $rx: $output"
  run --separate-stderr sbx stats "$id"
  expect_contains "$output" "MiB written"
  sbx terminate "$id" >/dev/null
  run --separate-stderr sbx --json stats "$id"
  expect_status 0
  expect_eq "$(jget 'd["cpu_time_ms"]')" null "cpu time once ended"
  [ "$(jget 'd["disk"]')" -ge 3000000 ] || fail "disk once ended: $output"
  expect_error NOT_FOUND stats sb-000000000000
  expect_error INVALID_ARGUMENT stats "$id" "$id"
  sbx rm "$id" >/dev/null
}

@test "stats ID: cpu, memory now and peak, pids, disk, network [runc]" { stats_case runc; }
@test "stats ID: cpu, memory now and peak, pids, disk, network [runsc]" { stats_case runsc; }

@test "commit: kill -9 in the middle leaves no half-made image" {
  require_runtime runc
  local id pid i n
  id=$(sbx create --runtime runc)
  sbx exec "$id" -- sh -c 'head -c 50000000 /dev/urandom > /root/big'
  for i in 1 2 3; do
    "$SBX_BIN" commit "$id" >/dev/null 2>&1 &
    pid=$!
    sleep "0.0$((i * 3))"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # Every image listed is whole: its layers are all there and it starts.
  run --separate-stderr sbx --json images
  expect_status 0
  n=$(jget 'len(d)')
  for i in $(seq 0 $((n - 1))); do
    local img
    img=$(jget "d[$i]['id']")
    expect_eq "$(sbx run --rm --runtime runc --image "$img" -- echo ok)" ok "image $img"
  done
  # A commit killed while the sandbox was paused for the copy leaves it
  # paused: resume brings it back.
  sbx resume "$id" >/dev/null
  expect_eq "$(sbx exec "$id" -- echo alive)" alive "sandbox after killed commits"
  sbx terminate --rm "$id" >/dev/null
}
