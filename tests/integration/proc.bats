#!/usr/bin/env bats
# Background processes and the process table, on both runtimes: exec -d,
# sbx ps, sbx proc ID PID status|wait|kill|logs [--follow], the bounded log
# that keeps the newest output, and the errors of each.

load ../helpers/common

# proc_field ID PID EXPR: a field of `sbx --json proc ID PID status`.
proc_field () {
  "$SBX_BIN" --json proc "$1" "$2" status | jpipe "$3"
}

background_case () {
  local rt=$1 id pid t0 t1
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  # -d returns at once with the pid; the command runs on without its caller.
  t0=$(date +%s%N)
  run --separate-stderr sbx exec -d "$id" -- sh -c 'echo out1; echo err1 >&2; sleep 2; echo out2; exit 3'
  t1=$(date +%s%N)
  expect_status 0
  pid=$output
  [[ $pid =~ ^[0-9]+$ ]] || fail "exec -d printed \`$pid\`, not a pid"
  [ $(((t1 - t0) / 1000000)) -lt 1500 ] || fail "exec -d took $(((t1 - t0) / 1000000)) ms: it waited for the command"
  expect_eq "$(proc_field "$id" "$pid" 'd["state"]')" running "state while it runs"
  expect_eq "$(proc_field "$id" "$pid" 'd["exit_code"]')" null "exit code while it runs"
  run --separate-stderr sbx ps "$id"
  expect_status 0
  expect_contains "$output" "PID"
  expect_contains "$output" "$pid"
  expect_contains "$output" "running"
  expect_contains "$output" "sh -c echo out1"
  # Reattach from later calls: what it wrote so far, stdout and stderr apart.
  run --separate-stderr sbx proc "$id" "$pid" logs
  expect_status 0
  expect_eq "$output" out1 "stdout so far"
  expect_eq "$stderr" err1 "stderr so far"
  # --follow prints the rest as it comes, and returns when it exits.
  run --separate-stderr sbx proc "$id" "$pid" logs --follow
  expect_status 0
  expect_eq "$output" "out1
out2" "followed stdout"
  # wait: the exit status, printed and returned, as the shell's wait does.
  run --separate-stderr sbx proc "$id" "$pid" wait
  expect_status 3
  expect_eq "$output" 3 "wait's output"
  run --separate-stderr sbx --json ps "$id"
  expect_status 0
  expect_eq "$(jget "[p['state'] for p in d if p['pid'] == $pid][0]")" exited "state in ps --json"
  expect_eq "$(jget "[p['exit_code'] for p in d if p['pid'] == $pid][0]")" 3 "exit code in ps --json"
  expect_eq "$(jget "[p['background'] for p in d if p['pid'] == $pid][0]")" true "background in ps --json"
  run --separate-stderr sbx ps -q "$id"
  expect_status 0
  expect_eq "$output" "$(sbx --json ps "$id" | jpipe '"\n".join(str(p["pid"]) for p in d)')" "ps -q: the pids"
  expect_contains "$output" "$pid"
  # The log outlives the process, in order, in one JSON document too.
  run --separate-stderr sbx --json proc "$id" "$pid" logs
  expect_status 0
  expect_eq "$(jget 'd["stdout"]')" "out1
out2" "stdout in logs --json"
  expect_eq "$(jget 'd["stderr"]')" err1 "stderr in logs --json"
  expect_eq "$(jget 'd["exit_code"]')" 3 "exit code in logs --json"
  sbx terminate --rm "$id" >/dev/null
}

@test "proc: exec -d starts a background command; ps, status, logs, logs --follow, wait [runc]" { background_case runc; }
@test "proc: exec -d starts a background command; ps, status, logs, logs --follow, wait [runsc]" { background_case runsc; }

kill_case () {
  local rt=$1 id a b
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  a=$(sbx exec -d "$id" -- sleep 1000)
  b=$(sbx exec -d "$id" -- sh -c 'sleep 1000; echo never')
  run --separate-stderr sbx proc "$id" "$a" kill --signal TERM
  expect_status 0
  run --separate-stderr sbx proc "$id" "$a" wait
  expect_status 143
  expect_eq "$(proc_field "$id" "$a" 'd["signal"]')" 15 "the signal that ended it"
  # The default is KILL, and it reaches what the command started (its group).
  run --separate-stderr sbx proc "$id" "$b" kill
  expect_status 0
  run --separate-stderr sbx proc "$id" "$b" wait --timeout 20
  expect_status 137
  run --separate-stderr sbx exec "$id" -- sh -c 'ps -o comm | grep -c "^sleep" || true'
  expect_eq "$output" 0 "sleep processes left"
  # A process that has ended cannot be signalled.
  expect_error INVALID_ARGUMENT proc "$id" "$a" kill --signal 9
  # wait --timeout gives up with TIMEOUT; the process is untouched.
  a=$(sbx exec -d "$id" -- sleep 1000)
  expect_error TIMEOUT proc "$id" "$a" wait --timeout 1
  expect_eq "$(proc_field "$id" "$a" 'd["state"]')" running "state after a timed-out wait"
  # exec -d --timeout: the background command is killed at its deadline.
  b=$(sbx exec -d --timeout 1 "$id" -- sleep 1000)
  run --separate-stderr sbx proc "$id" "$b" wait
  expect_status 124
  expect_eq "$(proc_field "$id" "$b" 'd["timed_out"]')" true "timed_out"
  sbx terminate --rm "$id" >/dev/null
}

@test "proc: kill --signal, wait --timeout, exec -d --timeout [runc]" { kill_case runc; }
@test "proc: kill --signal, wait --timeout, exec -d --timeout [runsc]" { kill_case runsc; }

bounded_case () {
  local rt=$1 id pid n
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  # 8 MiB of numbered lines: more than the log keeps (1 MiB).
  pid=$(sbx exec -d "$id" -- sh -c 'seq 1 1200000; echo last-line')
  run --separate-stderr sbx proc "$id" "$pid" wait --timeout 120
  expect_status 0
  sbx proc "$id" "$pid" logs >"$BATS_TEST_TMPDIR/log"
  n=$(wc -c <"$BATS_TEST_TMPDIR/log")
  [ "$n" -le 1048576 ] && [ "$n" -gt 900000 ] || fail "the log kept $n bytes, not about 1 MiB"
  expect_eq "$(tail -n 1 "$BATS_TEST_TMPDIR/log")" last-line "the newest output is kept"
  [ "$(proc_field "$id" "$pid" 'd["output_dropped"]')" -gt 7000000 ] || fail "output_dropped does not count the oldest"
  # `logs` says so, on stderr after the output.
  run --separate-stderr sbx proc "$id" "$pid" logs
  expect_status 0
  expect_contains "$stderr" "bytes of this process's output were dropped"
  # No line is torn in the middle except perhaps the first kept one.
  [ "$(tail -n +2 "$BATS_TEST_TMPDIR/log" | grep -cvE '^([0-9]+|last-line)$')" = 0 ] || fail "torn lines in the log"
  # A follower that comes late gets what is kept, then the end.
  n=$(sbx proc "$id" "$pid" logs --follow | wc -c)
  [ "$n" -le 1048576 ] || fail "logs --follow gave $n bytes"
  sbx terminate --rm "$id" >/dev/null
}

@test "proc: a background process's log keeps the newest 1 MiB [runc]" { bounded_case runc; }
@test "proc: a background process's log keeps the newest 1 MiB [runsc]" { bounded_case runsc; }

# budget_case RT N: N background processes print 1.2 MB each (more than
# each one's 1 MiB), and stay. Their logs share the sandbox's 16 MiB: the
# monitor's peak memory stays far below N MiB, each log says it dropped
# output, the newest output is there, and the monitor counts in a cgroup of
# its own under sbx's, which goes with the sandbox.
budget_case () {
  local rt=$1 n=$2 id mp hwm i k pid
  require_runtime "$rt"
  sbx_import_payload
  id=$(sbx create --runtime "$rt" --image payload)
  mp=$(monitor_pid "$id")
  [ -n "$mp" ] && [ "$mp" -gt 1 ] || fail "no monitor_pid for $id"
  seq "$n" | xargs -P 8 -I{} "$SBX_BIN" exec -d "$id" -- /bin/sbx-testpayload spew 1200000 600 >/dev/null \
    || fail "exec -d failed"
  # Every one has printed all within a minute (and each dropped some).
  for i in $(seq 120); do
    k=$("$SBX_BIN" --json ps "$id" \
      | jpipe 'sum(1 for p in d if p["output_bytes"] == 1200000 and p["output_dropped"] >= 1200000 - 1048576)')
    [ "$k" -ge "$n" ] && break
    sleep 0.5
  done
  [ "$k" -ge "$n" ] || fail "only $k of $n processes printed all their output"
  hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$mp/status")
  # 16 MiB of logs, the monitor's own few MiB, and slack; without the
  # budget it would pass $n MiB.
  [ "$hwm" -le $((40 * 1024)) ] || fail "the monitor's peak RSS is $hwm kB with $n printers"
  pid=$("$SBX_BIN" --json ps "$id" | jpipe 'd[-1]["pid"]')
  run --separate-stderr sbx proc "$id" "$pid" logs
  expect_status 0
  expect_eq "$(printf '%s\n' "$output" | tail -n 1)" "$(printf '%063d' 18749)" "the newest line of the last printer"
  expect_contains "$stderr" "output were dropped"
  # The monitor's own cgroup, beside the sandbox's.
  local cg=/sys/fs/cgroup/memory/sbx-$SBX_TAG/$id.monitor
  [ -d "$cg" ] || fail "no cgroup $cg"
  grep -qx "$mp" "$cg/cgroup.procs" || fail "the monitor $mp is not in $cg: $(cat "/proc/$mp/cgroup")"
  grep -qx "$mp" "/sys/fs/cgroup/pids/sbx-$SBX_TAG/$id.monitor/cgroup.procs" || fail "the monitor is not in its pids cgroup"
  [ "$(cat "$cg/memory.max_usage_in_bytes")" -gt $((8 << 20)) ] || fail "the monitor's memory is not counted in $cg"
  sbx terminate --rm "$id" >/dev/null
  [ ! -e "$cg" ] || fail "$cg is left after the sandbox ended"
  grep -q "sbx-$SBX_TAG" "/proc/self/cgroup" && fail "the test's shell moved?"
  return 0
}

@test "proc: 200 background printers share the sandbox's output budget; the monitor's memory is bounded [runc]" {
  budget_case runc 200
}

@test "proc: 100 background printers share the sandbox's output budget; the monitor's memory is bounded [runsc]" {
  budget_case runsc 100
}

@test "proc: a background process never waits for a reader; followers see the live stream [runc]" {
  require_runtime runc
  local id pid n
  id=$(sbx create --runtime runc)
  pid=$(sbx exec -d "$id" -- sh -c 'sleep 1; head -c 104857600 /dev/zero; echo done >&2')
  n=$(sbx proc "$id" "$pid" logs --follow 2>/dev/null | wc -c)
  # A reader that keeps up misses nothing; one that falls behind skips to the oldest kept.
  [ "$n" -le 104857600 ] && [ "$n" -ge 1048576 ] || fail "follower got $n bytes"
  run --separate-stderr sbx proc "$id" "$pid" wait --timeout 60
  expect_status 0
  sbx terminate --rm "$id" >/dev/null
}

@test "proc: a follower never times out on a quiet process" {
  require_runtime runc
  local id pid
  id=$(sbx create --runtime runc)
  pid=$(sbx exec -d "$id" -- sh -c 'sleep 4; echo late')
  run --separate-stderr timeout 30 "$SBX_BIN" proc "$id" "$pid" logs --follow
  expect_status 0
  expect_eq "$output" late "followed output"
  sbx terminate --rm "$id" >/dev/null
}

@test "proc: a running background process keeps a --keep-warm sandbox alive" {
  require_runtime runc
  local id pid
  id=$(sbx create --runtime runc --keep-warm 1)
  pid=$(sbx exec -d "$id" -- sleep 3)
  sleep 2
  expect_eq "$(state_of "$id")" running "state while the background process runs"
  run --separate-stderr sbx proc "$id" "$pid" wait
  expect_status 0
  sbx wait --timeout 20 "$id" >/dev/null
  expect_eq "$(state_of "$id")" terminated "state once idle"
  sbx rm "$id" >/dev/null
}

@test "proc: attached execs are in the table too, without a log" {
  require_runtime runc
  local id pid
  id=$(sbx create --runtime runc)
  sbx exec "$id" -- sh -c 'sleep 3' &
  sleep 1
  run --separate-stderr sbx --json ps "$id"
  expect_status 0
  pid=$(jget '[p["pid"] for p in d if p["command"] == "sh -c sleep 3"][0]')
  expect_eq "$(jget "[p['background'] for p in d if p['pid'] == $pid][0]")" false "background"
  expect_error INVALID_ARGUMENT proc "$id" "$pid" logs
  run --separate-stderr sbx proc "$id" "$pid" wait
  expect_status 0
  wait
  sbx terminate --rm "$id" >/dev/null
}

bad_input_case () {
  local rt=$1 id pid
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  pid=$(sbx exec -d "$id" -- sleep 1000)
  expect_error NOT_FOUND proc "$id" 99999 status
  expect_error NOT_FOUND proc "$id" 99999 kill
  expect_error NOT_FOUND proc "$id" 99999 logs
  expect_error INVALID_ARGUMENT proc "$id" "$pid" kill --signal SIGFOO
  expect_error INVALID_ARGUMENT proc "$id" "$pid" kill --signal 65
  expect_error INVALID_ARGUMENT proc "$id" "$pid" frob
  expect_error INVALID_ARGUMENT proc "$id" notapid status
  expect_error INVALID_ARGUMENT proc "$id" "$pid" status --follow
  expect_error INVALID_ARGUMENT proc "$id" "$pid" logs --signal TERM
  expect_error INVALID_ARGUMENT proc "$id" "$pid" wait --timeout 0
  expect_error INVALID_ARGUMENT exec -d -i "$id" -- cat
  expect_error INVALID_ARGUMENT exec -d --cwd /no/such/dir "$id" -- true
  # A command that is not found: 127 and a message, as for any exec.
  run -127 --separate-stderr sbx exec -d "$id" -- /no/such/command
  expect_status 127
  expect_contains "$stderr" "/no/such/command"
  # The sandbox and its background process are unharmed.
  expect_eq "$(proc_field "$id" "$pid" 'd["state"]')" running "background process after the errors"
  run --separate-stderr sbx exec "$id" -- echo alive
  expect_eq "$output" alive "exec after the errors"
  sbx terminate "$id" >/dev/null
  expect_error SANDBOX_NOT_RUNNING ps "$id"
  expect_error SANDBOX_NOT_RUNNING proc "$id" "$pid" status
  expect_error SANDBOX_NOT_RUNNING exec -d "$id" -- true
  expect_error NOT_FOUND ps sb-000000000000
  sbx rm "$id" >/dev/null
}

@test "proc: bad input is a clear error and harms nothing [runc]" { bad_input_case runc; }
@test "proc: bad input is a clear error and harms nothing [runsc]" { bad_input_case runsc; }
