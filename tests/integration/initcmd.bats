#!/usr/bin/env bats
# The initial command (issue 20, item 5): `sbx create [OPTIONS] -- CMD...`
# starts CMD at creation as a background process of the sandbox (listed by
# ps, its output in proc logs), `--run-cmd` takes the image's cmd, and
# `--exit-with-cmd` ends the sandbox with it (reason exited, its code). A
# command that cannot start fails the create and leaves nothing.

load ../helpers/common

proc_field () {
  "$SBX_BIN" --json proc "$1" "$2" status | jpipe "$3"
}

# wait_logs ID PID TEXT: until the process's stdout holds TEXT (20 s).
wait_logs () {
  local i out=
  for i in $(seq 100); do
    out=$("$SBX_BIN" proc "$1" "$2" logs 2>/dev/null)
    case $out in *"$3"*) return 0 ;; esac
    sleep 0.2
  done
  fail "process $2 of $1: no \`$3\` in its output after 20 s (got \`$out\`)"
}

initial_case () {
  local rt=$1 id pid
  require_runtime "$rt"
  run --separate-stderr sbx --json create --runtime "$rt" --env GREETING=hello --cwd /tmp -- \
    sh -c 'echo "out $GREETING $(pwd)"; echo err >&2; exec sleep 1000'
  expect_status 0
  id=$(jget 'd["id"]')
  pid=$(jget 'd["cmd_pid"]')
  [[ $pid =~ ^[0-9]+$ ]] || fail "create --json gave cmd_pid \`$pid\`"
  expect_eq "$(jget 'd["options"]["cmd"]')" '["sh", "-c", "echo \"out $GREETING $(pwd)\"; echo err >&2; exec sleep 1000"]' \
    "the command in the record"
  # Running as soon as create returned, in the background, a child of PID 1.
  expect_eq "$(proc_field "$id" "$pid" 'd["state"]')" running "state"
  expect_eq "$(proc_field "$id" "$pid" '[d["background"], d["initial"]]')" "[true, true]" "background, initial"
  expect_eq "$(sbx exec "$id" -- sh -c "awk '/^PPid:/ {print \$2}' /proc/$pid/status")" 1 "its parent"
  run --separate-stderr sbx ps "$id"
  expect_status 0
  expect_contains "$output" "$pid"
  expect_contains "$output" "background"
  expect_contains "$output" "sh -c echo"
  # Its output, with the sandbox's env and cwd.
  wait_logs "$id" "$pid" "out hello /tmp"
  run --separate-stderr sbx proc "$id" "$pid" logs
  expect_eq "$output" "out hello /tmp" "stdout"
  expect_eq "$stderr" err "stderr"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "command:    pid $pid: sh -c"
  expect_eq "$(sbx --json status "$id" | jpipe 'd["cmd_pid"]')" "$pid" "cmd_pid in status --json"
  # Without --exit-with-cmd the sandbox outlives it.
  sbx proc "$id" "$pid" kill >/dev/null
  run sbx proc "$id" "$pid" wait
  expect_status 137
  expect_eq "$(state_of "$id")" running "the sandbox after its initial command"
  sbx terminate --rm "$id" >/dev/null
  # A sandbox made without one has none.
  id=$(sbx create --runtime "$rt")
  expect_eq "$(sbx --json status "$id" | jpipe '[d["cmd_pid"], d["options"]["cmd"]]')" "[null, []]" "no command"
  expect_eq "$(sbx ps -q "$id")" "" "no process"
  expect_not_contains "$(sbx status "$id")" "command:"
  sbx terminate --rm "$id" >/dev/null
}

@test "initcmd: create -- CMD runs CMD in the background: ps, logs, env, cwd, parent [runc]" { initial_case runc; }
@test "initcmd: create -- CMD runs CMD in the background: ps, logs, env, cwd, parent [runsc]" { initial_case runsc; }

# ends_with ID CODE: the sandbox ends, reason exited with CODE.
ends_with () {
  local id=$1 code=$2
  run --separate-stderr sbx wait "$id"
  expect_status 0
  expect_eq "$output" "terminated (exited, code $code)" "wait"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget '[d["state"], d["reason"], d["exit_code"]]')" "[\"terminated\", \"exited\", $code]" "the end"
}

exit_case () {
  local rt=$1 id pid
  require_runtime "$rt"
  # 0 and non-zero; a command that is over before create returns too.
  id=$(sbx create --runtime "$rt" --exit-with-cmd -- true)
  ends_with "$id" 0
  id=$(sbx create --runtime "$rt" --exit-with-cmd -- sh -c 'sleep 1; exit 3')
  expect_eq "$(state_of "$id")" running "while the command runs"
  expect_contains "$(sbx status "$id")" "(--exit-with-cmd)"
  ends_with "$id" 3
  expect_contains "$(sbx status "$id")" "state:      terminated (exited, code 3)"
  # Killed by a signal: 128+N, as sbx run reports it; by itself or by sbx.
  id=$(sbx create --runtime "$rt" --exit-with-cmd -- sh -c 'kill -TERM $$')
  ends_with "$id" 143
  id=$(sbx create --runtime "$rt" --exit-with-cmd -- sleep 1000)
  pid=$(sbx --json status "$id" | jpipe 'd["cmd_pid"]')
  # Other processes do not end it; the initial one does.
  sbx exec "$id" -- true
  sbx exec -d "$id" -- sleep 1000 >/dev/null
  expect_eq "$(state_of "$id")" running "after another process"
  sbx proc "$id" "$pid" kill >/dev/null
  ends_with "$id" 137
  expect_eq "$(sbx ls -q | wc -l)" 4 "sandboxes"
  sbx rm $(sbx ls -q) >/dev/null
}

@test "initcmd: --exit-with-cmd ends the sandbox with the command's code (0, 3, 128+N) [runc]" { exit_case runc; }
@test "initcmd: --exit-with-cmd ends the sandbox with the command's code (0, 3, 128+N) [runsc]" { exit_case runsc; }

notfound_case () {
  local rt=$1
  require_runtime "$rt"
  expect_error NOT_FOUND create --runtime "$rt" --name box -- /no/such/command arg
  expect_contains "$stderr" "/no/such/command"
  # A file that is not executable cannot run either (126 for sbx run).
  expect_error INVALID_ARGUMENT create --runtime "$rt" --name box --exit-with-cmd -- /etc/hosts
  expect_eq "$(sbx ls -q)" "" "sandboxes left"
  expect_eq "$(find "$SBX_ROOT/sandboxes" -mindepth 1 | wc -l)" 0 "sandbox directories left"
  # The name was given back.
  run --separate-stderr sbx create --runtime "$rt" --name box -- sleep 1000
  expect_status 0
  sbx terminate --rm box >/dev/null
}

@test "initcmd: a command that cannot start fails the create and leaves nothing [runc]" { notfound_case runc; }
@test "initcmd: a command that cannot start fails the create and leaves nothing [runsc]" { notfound_case runsc; }

@test "initcmd: --run-cmd starts the image's cmd; an image without one is INVALID_ARGUMENT" {
  require_runtime runc
  local id pid
  sbx_import_payload
  mkdir -p "$BATS_TEST_TMPDIR/ctx"
  cat >"$BATS_TEST_TMPDIR/ctx/blueprint.json" <<'JSON'
{
  "base": "payload",
  "steps": [
    { "env": { "FROM_IMAGE": "yes" } },
    { "workdir": "/work" },
    { "cmd": ["sh", "-c", "echo \"image cmd $FROM_IMAGE $(pwd)\"; exit 5"] }
  ]
}
JSON
  run --separate-stderr sbx build --runtime runc --tag withcmd "$BATS_TEST_TMPDIR/ctx"
  expect_status 0
  run --separate-stderr sbx --json create --runtime runc --image withcmd --run-cmd --exit-with-cmd
  expect_status 0
  id=$(jget 'd["id"]')
  pid=$(jget 'd["cmd_pid"]')
  expect_eq "$(jget 'd["options"]["cmd"]')" '["sh", "-c", "echo \"image cmd $FROM_IMAGE $(pwd)\"; exit 5"]' "the image's cmd"
  ends_with "$id" 5
  sbx rm "$id" >/dev/null
  # Without --exit-with-cmd it stays, and its output is there.
  id=$(sbx create --runtime runc --image withcmd --run-cmd)
  pid=$(sbx --json status "$id" | jpipe 'd["cmd_pid"]')
  run sbx proc "$id" "$pid" wait
  expect_status 5
  expect_eq "$(sbx proc "$id" "$pid" logs)" "image cmd yes /work" "its output"
  sbx terminate --rm "$id" >/dev/null
  # A rootfs tarball has no config, hence no cmd: refused, nothing made.
  expect_error INVALID_ARGUMENT create --runtime runc --image payload --run-cmd
  expect_contains "$stderr" "image \`payload\` has no cmd"
  expect_eq "$(sbx ls -q)" "" "sandboxes left"
}

@test "initcmd: usage errors: --exit-with-cmd without a command, --run-cmd with one, run's refusal" {
  require_runtime runc
  expect_error INVALID_ARGUMENT create --runtime runc --exit-with-cmd
  expect_contains "$stderr" "--exit-with-cmd needs an initial command"
  expect_error INVALID_ARGUMENT create --runtime runc --run-cmd -- true
  expect_contains "$stderr" "--run-cmd"
  expect_error INVALID_ARGUMENT create --runtime runc -- ""
  expect_contains "$stderr" "empty"
  # The command follows --: a word alone might be meant as an image.
  expect_error INVALID_ARGUMENT create --runtime runc sleep 1000
  expect_contains "$stderr" "unexpected argument \`sleep\`"
  # They are create's: sbx run's command is already its foreground one,
  # and the sandbox already ends with it.
  expect_error INVALID_ARGUMENT run --runtime runc --exit-with-cmd -- true
  expect_contains "$stderr" "unknown option \`--exit-with-cmd\`"
  expect_error INVALID_ARGUMENT run --runtime runc --run-cmd
  expect_contains "$stderr" "unknown option \`--run-cmd\`"
  expect_eq "$(sbx ls -q)" "" "sandboxes made"
  # Options after the command are the command's.
  run --separate-stderr sbx create --runtime runc -- sh -c 'exit 0' --exit-with-cmd
  expect_status 0
  expect_eq "$(sbx --json status "$output" | jpipe 'd["options"]["exit_with_cmd"]')" false "an option after --"
  sbx terminate --rm "$output" >/dev/null
}

@test "initcmd: a restored sandbox's initial command runs on, not again, and still ends it [runsc]" {
  require_runtime runsc
  local id snap new pid n
  id=$(sbx create --block-network --exit-with-cmd -- sh -c 'i=0; while :; do i=$((i+1)); echo $i; sleep 0.2; done')
  pid=$(sbx --json status "$id" | jpipe 'd["cmd_pid"]')
  wait_logs "$id" "$pid" 3
  snap=$(sbx snapshot "$id")
  # The snapshot ended the source: its end is the snapshot's, not the command's.
  expect_eq "$(sbx --json status "$id" | jpipe '[d["reason"], d["exit_code"]]')" '["snapshot", null]' "the source's end"
  new=$(sbx restore "$snap")
  expect_eq "$(sbx --json status "$new" | jpipe 'd["cmd_pid"]')" "$pid" "the restored cmd_pid"
  run --separate-stderr sbx --json ps "$new"
  expect_eq "$(jget "len([p for p in d if p['initial']])")" 1 "initial processes after the restore"
  expect_eq "$(jget "[p['state'] for p in d if p['initial']][0]")" running "its state"
  # It counts on from where it was.
  sleep 1
  n=$(sbx proc "$new" "$pid" logs | tail -n 1)
  [ "$n" -gt 3 ] || fail "the restored counter printed \`$n\`"
  sbx proc "$new" "$pid" kill >/dev/null
  ends_with "$new" 137
  sbx rm "$id" "$new" >/dev/null
  sbx rmsnap "$snap" >/dev/null
}
