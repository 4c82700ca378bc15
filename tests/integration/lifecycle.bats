#!/usr/bin/env bats
# The sandbox lifecycle on both runtimes: create, exec, status, ls, stats,
# wait, terminate, rm, logs, ttl; run's exit status and streams; lifetimes
# (--keep-warm, --timeout, ttl) with their states and reasons; names; import.

load ../helpers/common

setup () {
  sbx_setup
  sbx_import_payload
}

# status_field ID EXPR
status_field () {
  "$SBX_BIN" --json status "$1" | jpipe "$2"
}

# --- the whole round trip -----------------------------------------------------

round_trip () {
  local rt=$1 id
  require_runtime "$rt"
  run --separate-stderr sbx create --runtime "$rt" --image payload --name "box-$rt"
  expect_status 0
  id=$output
  [[ "$id" =~ ^sb-[0-9a-f]+$ ]] || fail "create printed [$id], not an id"
  [ -d "$SBX_ROOT/sandboxes/$id" ] || fail "no sandbox directory for $id"

  run --separate-stderr sbx --json status "$id"
  expect_status 0
  expect_eq "$(jget 'd["state"]')" running "state"
  expect_eq "$(jget 'd["reason"]')" null "reason while running"
  expect_eq "$(jget 'd["name"]')" "box-$rt" "name"
  expect_eq "$(jget 'd["options"]["runtime"]')" "$rt" "runtime"
  [ "$(jget 'd["started_at"]')" -gt 0 ] || fail "started_at: $output"
  [ "$(jget 'd["deadline"]')" -gt "$(date +%s)" ] || fail "deadline: $output"

  run sbx status "$id"
  expect_status 0
  expect_contains "$output" "state:      running"
  expect_contains "$output" "$rt"

  run --separate-stderr sbx ls
  expect_status 0
  expect_contains "$output" "$id"
  expect_contains "$output" "box-$rt"
  run --separate-stderr sbx ls -q
  expect_eq "$output" "$id" "ls -q"

  run --separate-stderr sbx --json stats
  expect_status 0
  expect_eq "$(jget 'd["running"]')" 1 "stats running"
  expect_eq "$(jget 'd["total"]')" 1 "stats total"

  run --separate-stderr sbx exec "$id" -- /bin/sbx-testpayload echo hello world
  expect_status 0
  expect_eq "$output" "hello world" "exec output"
  run sbx exec "$id" -- /bin/sbx-testpayload exit 7
  expect_status 7
  # State survives between commands.
  sbx exec "$id" -- sh -c 'echo kept > /tmp/state'
  run sbx exec "$id" -- cat /tmp/state
  expect_eq "$output" kept "file written by an earlier exec"

  run --separate-stderr sbx ttl "$id" 300
  expect_status 0
  local dl
  dl=$(status_field "$id" 'd["deadline"]')
  [ "$dl" -ge $(($(date +%s) + 290)) ] && [ "$dl" -le $(($(date +%s) + 310)) ] || fail "deadline after ttl 300: $dl"

  run --separate-stderr sbx logs "$id"
  expect_status 0
  expect_contains "$output" "running"

  run --separate-stderr sbx terminate "$id"
  expect_status 0
  expect_eq "$output" "$id" "terminate output"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["state"]')" terminated "state after terminate"
  [[ "$(jget 'd["reason"]')" =~ ^(killed|terminated)$ ]] || fail "reason after terminate: $(jget 'd["reason"]')"
  [ "$(jget 'd["ended_at"]')" -gt 0 ] || fail "ended_at: $output"
  run --separate-stderr sbx wait "$id"
  expect_status 0
  expect_contains "$output" terminated
  run --separate-stderr sbx --json stats
  expect_eq "$(jget 'd["terminated"]')" 1 "stats terminated"
  expect_eq "$(jget 'd["running"]')" 0 "stats running"
  # Terminating twice is harmless.
  run sbx terminate "$id"
  expect_status 0

  run --separate-stderr sbx rm "$id"
  expect_status 0
  [ ! -e "$SBX_ROOT/sandboxes/$id" ] || fail "rm left $SBX_ROOT/sandboxes/$id"
  expect_error NOT_FOUND status "$id"
  expect_error NOT_FOUND status "box-$rt"
  run --separate-stderr sbx ls -q
  expect_eq "$output" "" "ls -q after rm"
}

@test "lifecycle: create, status, ls, stats, exec, ttl, logs, terminate, wait, rm [runc]" {
  round_trip runc
}

@test "lifecycle: create, status, ls, stats, exec, ttl, logs, terminate, wait, rm [runsc]" {
  round_trip runsc
}

@test "lifecycle: the default runtime is runsc" {
  require_runtime runsc
  local id
  id=$(sbx create --image payload)
  expect_eq "$(status_field "$id" 'd["options"]["runtime"]')" runsc "runtime"
  # Under gVisor the kernel the sandbox sees is gVisor's, not the host's.
  run --separate-stderr sbx exec "$id" -- uname -r
  expect_status 0
  [ -n "$output" ] && [ "$output" != "$(uname -r)" ] || fail "sandbox kernel [$output] is the host's"
  sbx terminate "$id" >/dev/null
}

# --- sbx run ------------------------------------------------------------------

run_status () {
  local rt=$1
  require_runtime "$rt"
  run sbx run --runtime "$rt" --image payload -- /bin/sbx-testpayload exit 0
  expect_status 0
  run sbx run --runtime "$rt" --image payload -- /bin/sbx-testpayload exit 3
  expect_status 3
  run sbx run --runtime "$rt" --image payload -- sh -c 'exit 255'
  expect_status 255
  run sbx run --runtime "$rt" --image payload -- sh -c 'kill -TERM $$'
  expect_status $((128 + 15))
  run sbx run --runtime "$rt" --image payload -- sh -c 'kill -KILL $$'
  expect_status $((128 + 9))
  # Without --rm the sandbox stays, terminated (once its monitor's teardown,
  # which goes on after run returns, is over).
  sbx_wait_teardowns
  run --separate-stderr sbx --json ls
  expect_eq "$(jget 'len(d)')" 5 "sandboxes left by run"
  expect_eq "$(jget 'sorted(set(s["state"] for s in d))')" '["terminated"]' "their states"
  # They ended because their command exited, and say with what.
  expect_eq "$(jget 'sorted(set(s["reason"] for s in d))')" '["exited"]' "their reasons"
  expect_eq "$(jget 'sorted(s["exit_code"] for s in d)')" '[0, 3, 137, 143, 255]' "their exit codes"
  local id
  id=$(jget '[s["id"] for s in d if s["exit_code"] == 3][0]')
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "state:      terminated (exited, code 3)"
  expect_eq "$(sbx wait "$id")" "terminated (exited, code 3)" "wait"
  expect_contains "$(sbx ls)" "exited, code 3"
  # A sandbox ended by terminate has no exit code.
  id=$(sbx create --runtime "$rt" --image payload)
  sbx terminate "$id" >/dev/null
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget '[d["reason"], d["exit_code"]]')" '["killed", null]' "reason and exit code after terminate"
}

@test "lifecycle: run's exit status is the command's (0, 3, 255, 128+N) [runc]" {
  run_status runc
}

@test "lifecycle: run's exit status is the command's (0, 3, 255, 128+N) [runsc]" {
  run_status runsc
}

@test "lifecycle: run --image without a command runs the image's cmd; none is INVALID_ARGUMENT, nothing made" {
  require_runtime runc
  # busybox's cmd is /bin/sh, which reads an empty stdin and exits 0.
  run --separate-stderr sbx run --runtime runc --image busybox
  expect_status 0
  expect_eq "$(sbx --json ls | jpipe '[s["reason"] for s in d]')" '["exited"]' "the sandbox of busybox's cmd"
  # A rootfs tarball has no config: no cmd.
  sbx_import_payload
  expect_error INVALID_ARGUMENT run --runtime runc --image payload
  expect_contains "$stderr" "no command given and image \`payload\` has no cmd"
  expect_error INVALID_ARGUMENT run --runtime runc
  expect_contains "$stderr" "no command and no --image"
  expect_eq "$(sbx ls -q | wc -l)" 1 "sandboxes after the refused runs"
}

streams () {
  local rt=$1
  require_runtime "$rt"
  run --separate-stderr sbx run --runtime "$rt" --image payload -- sh -c 'echo to-out; echo to-err >&2; echo more-out'
  expect_status 0
  expect_eq "$output" "$(printf 'to-out\nmore-out')" "stdout"
  expect_eq "$stderr" "to-err" "stderr"
  # Binary-safe and complete: 1 MiB through stdout.
  local n
  n=$(sbx run --runtime "$rt" --image payload -- sh -c 'head -c 1048576 /dev/zero' | wc -c)
  expect_eq "$n" 1048576 "bytes of stdout"
  # exec, too.
  local id
  id=$(sbx create --runtime "$rt" --image payload)
  run --separate-stderr sbx exec "$id" -- sh -c 'echo x-out; echo x-err >&2; exit 4'
  expect_status 4
  expect_eq "$output" x-out "exec stdout"
  expect_eq "$stderr" x-err "exec stderr"
  sbx terminate "$id" >/dev/null
}

@test "lifecycle: stdout and stderr are separate [runc]" {
  streams runc
}

@test "lifecycle: stdout and stderr are separate [runsc]" {
  streams runsc
}

env_cwd () {
  local rt=$1
  require_runtime "$rt"
  run --separate-stderr sbx run --runtime "$rt" --image payload --env FOO=bar --env 'SPACED=a b  c' --cwd /tmp \
    -- sh -c 'echo "$FOO|$SPACED|$(pwd)"'
  expect_status 0
  expect_eq "$output" "bar|a b  c|/tmp" "run --env --cwd"
  # The image's PATH is there; the default cwd is /workspace (the image
  # has no WORKDIR of its own).
  run --separate-stderr sbx run --runtime "$rt" --image payload -- sh -c 'echo "$PATH|$(pwd)"'
  expect_contains "$output" "/bin"
  expect_contains "$output" "|/workspace"
  # exec's own --env and --cwd win over the sandbox's.
  local id
  id=$(sbx create --runtime "$rt" --image payload --env FOO=sandbox --env KEEP=yes --cwd /tmp)
  run --separate-stderr sbx exec "$id" -- sh -c 'echo "$FOO|$KEEP|$(pwd)"'
  expect_eq "$output" "sandbox|yes|/tmp" "sandbox env and cwd"
  run --separate-stderr sbx exec --env FOO=exec --cwd /root "$id" -- sh -c 'echo "$FOO|$KEEP|$(pwd)"'
  expect_eq "$output" "exec|yes|/root" "exec env and cwd"
  # A cwd that does not exist fails the command, not the sandbox.
  run sbx exec --cwd /no/such/dir "$id" -- true
  [ "$status" -ne 0 ] || fail "exec --cwd /no/such/dir succeeded"
  expect_eq "$(state_of "$id")" running "state after a failed exec"
  sbx terminate "$id" >/dev/null
}

@test "lifecycle: --env and --cwd reach the command [runc]" {
  env_cwd runc
}

@test "lifecycle: --env and --cwd reach the command [runsc]" {
  env_cwd runsc
}

run_rm () {
  local rt=$1
  require_runtime "$rt"
  run sbx run --rm --runtime "$rt" --image payload --name gone -- sh -c 'echo hi > /root/f; exit 5'
  expect_status 5
  # Its monitor removes it at the end of the teardown, after run returned.
  sbx_wait_teardowns
  run --separate-stderr sbx ls -q
  expect_eq "$output" "" "sandboxes after run --rm"
  [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "run --rm left $(ls -A "$SBX_ROOT/sandboxes")"
  # Its name is free again.
  run sbx run --rm --runtime "$rt" --image payload --name gone -- true
  expect_status 0
}

@test "lifecycle: run --rm leaves no sandbox [runc]" {
  run_rm runc
}

@test "lifecycle: run --rm leaves no sandbox [runsc]" {
  run_rm runsc
}

keeps_files () {
  local rt=$1 id
  require_runtime "$rt"
  # --disk 0: its writable layer a directory on the host, to look into.
  id=$(sbx create --runtime "$rt" --image payload --disk 0)
  sbx exec "$id" -- sh -c 'echo precious > /root/result.txt'
  sbx terminate "$id" >/dev/null
  expect_eq "$(state_of "$id")" terminated "state"
  [ -f "$SBX_ROOT/sandboxes/$id/upper/root/result.txt" ] || fail "upper/ lost the file after terminate"
  expect_eq "$(cat "$SBX_ROOT/sandboxes/$id/upper/root/result.txt")" precious "content in upper/"
  # Nothing is mounted any more.
  ! grep -qF "$SBX_ROOT/sandboxes/$id" /proc/mounts || fail "still mounted after terminate"
  run --separate-stderr sbx --json gc
  expect_status 0
  [ "$(jget 'd["removed"]')" -ge 1 ] || fail "gc removed nothing: $output"
  [ ! -e "$SBX_ROOT/sandboxes/$id" ] || fail "gc left $SBX_ROOT/sandboxes/$id"
  expect_error NOT_FOUND status "$id"
}

@test "lifecycle: a terminated sandbox keeps its files until gc or rm [runc]" {
  keeps_files runc
}

@test "lifecycle: a terminated sandbox keeps its files until gc or rm [runsc]" {
  keeps_files runsc
}

@test "lifecycle: gc leaves running sandboxes alone" {
  require_runtime runc
  local a b
  a=$(sbx create --runtime runc --image payload)
  b=$(sbx create --runtime runc --image payload)
  sbx terminate "$b" >/dev/null
  run --separate-stderr sbx --json gc
  expect_status 0
  expect_eq "$(state_of "$a")" running "state of the running one after gc"
  run sbx exec "$a" -- true
  expect_status 0
  [ ! -e "$SBX_ROOT/sandboxes/$b" ] || fail "gc kept the terminated one"
  sbx terminate "$a" >/dev/null
}

# --- lifetimes ----------------------------------------------------------------

keep_warm () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --keep-warm 2)
  expect_eq "$(state_of "$id")" running "state"
  run --separate-stderr sbx wait --timeout 15 "$id"
  expect_status 0
  expect_contains "$output" "keep-warm expired"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["state"]')" terminated "state"
  expect_eq "$(jget 'd["reason"]')" "keep-warm expired" "reason"
  local life=$(($(jget 'd["ended_at"]') - $(jget 'd["started_at"]')))
  [ "$life" -ge 1 ] && [ "$life" -le 6 ] || fail "lived ${life}s with --keep-warm 2"
}

@test "lifecycle: --keep-warm 2 expires when idle [runc]" {
  keep_warm runc
}

@test "lifecycle: --keep-warm 2 expires when idle [runsc]" {
  keep_warm runsc
}

@test "lifecycle: activity keeps a --keep-warm sandbox alive, a running exec too" {
  require_runtime runc
  local id i
  id=$(sbx create --runtime runc --image payload --keep-warm 2)
  for i in 1 2 3; do
    sleep 1
    sbx exec "$id" -- true
  done
  expect_eq "$(state_of "$id")" running "state after 3 s of activity"
  # A command that runs longer than the idle lifetime is activity.
  run sbx exec "$id" -- /bin/sbx-testpayload sleep 3
  expect_status 0
  expect_eq "$(state_of "$id")" running "state after a 3 s exec"
  wait_for_state "$id" terminated 10
  expect_eq "$(status_field "$id" 'd["reason"]')" "keep-warm expired" "reason"
}

@test "lifecycle: --keep-warm -1 never expires by idleness" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload --keep-warm -1 --timeout 60)
  sleep 3
  expect_eq "$(state_of "$id")" running "state"
  sbx terminate "$id" >/dev/null
}

hard_timeout () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --timeout 3)
  # Busy all along: the hard lifetime still ends it.
  run sbx exec "$id" -- /bin/sbx-testpayload sleep 30
  [ "$status" -ne 0 ] || fail "a 30 s command outlived --timeout 3"
  wait_for_state "$id" terminated 10
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["reason"]')" timeout "reason"
  local life=$(($(jget 'd["ended_at"]') - $(jget 'd["started_at"]')))
  [ "$life" -ge 2 ] && [ "$life" -le 7 ] || fail "lived ${life}s with --timeout 3"
}

@test "lifecycle: --timeout 3 ends a busy sandbox [runc]" {
  hard_timeout runc
}

@test "lifecycle: --timeout 3 ends a busy sandbox [runsc]" {
  hard_timeout runsc
}

ttl_shortens () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload)
  run --separate-stderr sbx --json ttl "$id" 1
  expect_status 0
  local dl
  dl=$(jget 'd["deadline"]')
  [ "$dl" -le $(($(date +%s) + 2)) ] || fail "deadline $dl after ttl 1"
  run --separate-stderr sbx wait --timeout 10 "$id"
  expect_status 0
  expect_contains "$output" terminated
  expect_eq "$(status_field "$id" 'd["reason"]')" timeout "reason"
}

@test "lifecycle: sbx ttl ID 1 shortens the lifetime [runc]" {
  ttl_shortens runc
}

@test "lifecycle: sbx ttl ID 1 shortens the lifetime [runsc]" {
  ttl_shortens runsc
}

@test "lifecycle: sbx ttl can lengthen a short lifetime" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload --timeout 2)
  sbx ttl "$id" 60 >/dev/null
  sleep 3.5
  expect_eq "$(state_of "$id")" running "state after the old deadline"
  sbx terminate "$id" >/dev/null
}

@test "lifecycle: ttl refuses bad values" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload)
  expect_error INVALID_ARGUMENT ttl "$id" 0
  expect_error INVALID_ARGUMENT ttl "$id" -5
  expect_error INVALID_ARGUMENT ttl "$id" 86401
  expect_error INVALID_ARGUMENT ttl "$id" soon
  expect_eq "$(state_of "$id")" running "state"
  sbx terminate "$id" >/dev/null
}

@test "lifecycle: wait blocks until the sandbox ends" {
  require_runtime runc
  local id t0
  id=$(sbx create --runtime runc --image payload --timeout 2)
  t0=$SECONDS
  run --separate-stderr sbx --json wait "$id"
  expect_status 0
  expect_eq "$(jget 'd["state"]')" terminated "state"
  expect_eq "$(jget 'd["reason"]')" timeout "reason"
  [ $((SECONDS - t0)) -ge 1 ] || fail "wait returned at once"
  # On a sandbox already ended it returns at once.
  run --separate-stderr sbx wait --timeout 1 "$id"
  expect_status 0
}

@test "lifecycle: terminate of several sandboxes, by id and name" {
  require_runtime runc
  local a b
  a=$(sbx create --runtime runc --image payload)
  b=$(sbx create --runtime runc --image payload --name second)
  run --separate-stderr sbx terminate "$a" second
  expect_status 0
  expect_eq "$output" "$(printf '%s\n%s' "$a" "$b")" "terminate output"
  expect_eq "$(state_of "$a")" terminated "state of a"
  expect_eq "$(state_of "$b")" terminated "state of b"
  run sbx terminate --rm "$a"
  expect_status 0
  [ ! -e "$SBX_ROOT/sandboxes/$a" ] || fail "terminate --rm left the sandbox"
}

@test "lifecycle: ls lists oldest first, --sort orders by another key, -q prints ids" {
  require_runtime runc
  local a b c
  # Made within a second or so: the order is still theirs.
  a=$(sbx create --runtime runc --name zed)
  b=$(sbx create --runtime runc --name alpha)
  c=$(sbx create --runtime runc --name mid)
  sbx terminate "$b" >/dev/null
  expect_eq "$(sbx ls -q | tr '\n' ' ')" "$a $b $c " "ls -q: creation order"
  expect_eq "$(sbx ls | awk 'NR > 1 { printf "%s ", $1 }')" "$a $b $c " "ls: creation order"
  expect_eq "$(sbx --json ls | jpipe '" ".join(s["id"] for s in d)')" "$a $b $c" "ls --json: creation order"
  expect_eq "$(sbx ls -q --sort name | tr '\n' ' ')" "$b $c $a " "--sort name"
  expect_eq "$(sbx ls -q --sort=id | tr '\n' ' ')" "$(printf '%s\n' "$a" "$b" "$c" | sort | tr '\n' ' ')" "--sort id"
  expect_eq "$(sbx ls -q --sort state | tr '\n' ' ')" "$a $c $b " "--sort state: running, then terminated"
  expect_eq "$(sbx ls -q --sort created | tr '\n' ' ')" "$a $b $c " "--sort created"
  expect_error INVALID_ARGUMENT ls --sort size
  expect_contains "$stderr" "size"
  expect_error INVALID_ARGUMENT ls --sort
  sbx terminate "$a" "$c" >/dev/null
}

# --- names, images ------------------------------------------------------------

@test "lifecycle: names resolve like ids" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload --name web.1_a+b-c)
  expect_eq "$(status_field web.1_a+b-c 'd["id"]')" "$id" "status by name"
  run --separate-stderr sbx exec web.1_a+b-c -- /bin/sbx-testpayload echo by-name
  expect_status 0
  expect_eq "$output" by-name "exec by name"
  run sbx ttl web.1_a+b-c 100
  expect_status 0
  run sbx logs web.1_a+b-c
  expect_status 0
  run sbx terminate web.1_a+b-c
  expect_status 0
  expect_eq "$(state_of web.1_a+b-c)" terminated "state by name"
  run sbx wait web.1_a+b-c
  expect_status 0
  run sbx rm web.1_a+b-c
  expect_status 0
  expect_error NOT_FOUND status web.1_a+b-c
  # The name is free again, for a new sandbox.
  local id2
  id2=$(sbx create --runtime runc --image payload --name web.1_a+b-c)
  [ "$id2" != "$id" ] || fail "same id twice"
  expect_eq "$(status_field web.1_a+b-c 'd["id"]')" "$id2" "name now points to"
  sbx terminate web.1_a+b-c >/dev/null
}

@test "lifecycle: a name may not look like an id" {
  expect_error INVALID_ARGUMENT create --runtime runc --image payload --name sb-0123456789ab
}

@test "lifecycle: import a rootfs tarball, then create --image TAG or ID" {
  require_runtime runc
  local tar=$BATS_TEST_TMPDIR/mini.tar stage=$BATS_TEST_TMPDIR/mini
  mkdir -p "$stage/bin" "$stage/etc"
  cp "$SBX_BUSYBOX" "$stage/bin/busybox"
  ln -s busybox "$stage/bin/sh"
  ln -s busybox "$stage/bin/cat"
  echo "imported image" >"$stage/etc/motd"
  tar --numeric-owner --owner=0 --group=0 -C "$stage" -cf "$tar" .
  run --separate-stderr sbx --json import --tag mini "$tar"
  expect_status 0
  local img
  img=$(jget 'd["id"]')
  [[ "$img" =~ ^sha256:[0-9a-f]{64}$ ]] || fail "image id: $img"
  run --separate-stderr sbx --json images
  expect_contains "$(jget '[i["id"] for i in d if "mini" in i["tags"]]')" "$img"
  run --separate-stderr sbx run --runtime runc --image mini -- cat /etc/motd
  expect_status 0
  expect_eq "$output" "imported image" "file from the imported image"
  run --separate-stderr sbx run --runtime runc --image "$img" -- cat /etc/motd
  expect_status 0
  expect_eq "$output" "imported image" "by image id"
  # Importing the same tarball again is the same image.
  run --separate-stderr sbx import "$tar"
  expect_status 0
  expect_eq "$output" "$img" "re-import id"
  # Compressed tarballs too.
  gzip -c "$tar" >"$tar.gz"
  run --separate-stderr sbx import --tag minigz "$tar.gz"
  expect_status 0
  run --separate-stderr sbx run --runtime runc --image minigz -- cat /etc/motd
  expect_eq "$output" "imported image" "from the .gz import"
}

@test "lifecycle: the built-in busybox image is the default" {
  require_runtime runc
  run --separate-stderr sbx run --runtime runc -- sh -c 'echo builtin; ls /bin | grep -c .'
  expect_status 0
  expect_contains "$output" builtin
  run --separate-stderr sbx --json images
  expect_contains "$output" busybox
}

@test "lifecycle: the sandbox's writes never reach the image" {
  require_runtime runc
  run sbx run --runtime runc --image payload -- sh -c 'echo changed > /etc/passwd; rm /bin/ls'
  expect_status 0
  run --separate-stderr sbx run --runtime runc --image payload -- sh -c 'cat /etc/passwd; ls / >/dev/null && echo ls-ok'
  expect_status 0
  expect_contains "$output" "root:x:0:0"
  expect_contains "$output" ls-ok
}

tty_case () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  run --separate-stderr sbx exec -t "$id" -- sh -c 'tty; stty size; echo to-stderr >&2; exit 5'
  expect_status 5
  expect_contains "$output" "/dev/pts/"
  expect_contains "$output" "to-stderr"
  # stdout and stderr share the terminal: nothing on our stderr
  expect_eq "$stderr" "" "stderr with -t"
  run --separate-stderr sbx exec "$id" -- sh -c 'tty'
  expect_contains "$output" "not a tty"
  sbx terminate --rm "$id" >/dev/null
}

@test "lifecycle: exec -t runs the command on a terminal [runc]" { tty_case runc; }
@test "lifecycle: exec -t runs the command on a terminal [runsc]" { tty_case runsc; }

run_code_case () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  run --separate-stderr sbx run-code --lang sh "$id" 'echo "$((6 * 7))"; exit 3'
  expect_status 3
  expect_eq "$output" 42 "snippet output"
  run --separate-stderr sbx run-code --lang sh "$id" - <<<'echo from-stdin'
  expect_status 0
  expect_eq "$output" from-stdin "snippet from stdin"
  # busybox has no python3: a clear error, not a shell's
  run --separate-stderr sbx --json run-code "$id" 'print(1)'
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" NOT_FOUND "error code"
  expect_contains "$output" "python3"
  run --separate-stderr sbx run-code --lang cobol "$id" 'x'
  expect_status 125
  expect_contains "$stderr" "INVALID_ARGUMENT"
  sbx terminate --rm "$id" >/dev/null
}

@test "lifecycle: run-code runs a snippet with the image's interpreter [runc]" { run_code_case runc; }
@test "lifecycle: run-code runs a snippet with the image's interpreter [runsc]" { run_code_case runsc; }
