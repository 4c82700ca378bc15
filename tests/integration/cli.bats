#!/usr/bin/env bats
# The command-line contract (DESIGN.md section 1): --help and --json on every
# command, exit status 125 for sbx's own errors, and every error code the
# lifecycle can produce.

load ../helpers/common

# Every command `sbx --help` lists.
commands () {
  "$SBX_BIN" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }'
}

@test "cli: sbx --help lists the commands and exits 0" {
  run --separate-stderr sbx --help
  expect_status 0
  expect_contains "$output" "Usage: sbx"
  local c
  for c in create run exec ls status wait terminate rm logs ttl stats images import info gc version; do
    expect_contains "$(commands)" "$c"
  done
}

@test "cli: --help on every command exits 0 and prints Usage on stdout" {
  local c n=0
  for c in $(commands); do
    run --separate-stderr sbx "$c" --help
    expect_status 0
    expect_contains "$output" "Usage: sbx $c"
    expect_eq "$stderr" "" "stderr of sbx $c --help"
    run --separate-stderr sbx "$c" -h
    expect_status 0
    expect_contains "$output" "Usage: sbx $c"
    n=$((n + 1))
  done
  [ "$n" -ge 16 ] || fail "only $n commands listed"
}

@test "cli: --help creates nothing" {
  sbx create --help >/dev/null
  sbx run --help >/dev/null
  [ ! -d "$SBX_ROOT/sandboxes" ] || [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "sandbox made by --help"
}

@test "cli: no command is a usage error (exit 125)" {
  run --separate-stderr sbx
  expect_status 125
  expect_contains "$stderr" "Usage: sbx"
  expect_eq "$output" "" "stdout"
}

@test "cli: sbx help [COMMAND] prints what --help prints, on stdout" {
  run --separate-stderr sbx help
  expect_status 0
  expect_eq "$output" "$("$SBX_BIN" --help)" "sbx help"
  expect_eq "$stderr" "" "stderr of sbx help"
  local c
  for c in $(commands); do
    run --separate-stderr sbx help "$c"
    expect_status 0
    expect_eq "$output" "$("$SBX_BIN" "$c" --help)" "sbx help $c"
  done
  expect_error INVALID_ARGUMENT help no-such-command
  expect_contains "$stderr" "no-such-command"
  expect_error INVALID_ARGUMENT help ls ps
}

@test "cli: unknown command is INVALID_ARGUMENT, exit 125" {
  expect_error INVALID_ARGUMENT no-such-command
  expect_contains "$stderr" "no-such-command"
}

@test "cli: unknown global option is INVALID_ARGUMENT" {
  expect_error INVALID_ARGUMENT --no-such-option ls
}

@test "cli: unknown option of every command is INVALID_ARGUMENT" {
  local c
  for c in $(commands); do
    expect_error INVALID_ARGUMENT "$c" --no-such-option
    expect_contains "$stderr" "--no-such-option"
    expect_error INVALID_ARGUMENT "$c" -Z
  done
}

# usage_error WANT ARGS...: `sbx ARGS...` fails as a usage error, exit 125,
# stdout empty and stderr exactly `sbx: INVALID_ARGUMENT: WANT`; with
# --json the same message in the error document.
usage_error () {
  local want=$1
  shift
  run --separate-stderr "$SBX_BIN" "$@" </dev/null
  [ "$status" -eq 125 ] || fail "sbx $*: exit $status, not 125 (stderr: $stderr)"
  expect_eq "$output" "" "stdout of sbx $*"
  expect_eq "$stderr" "sbx: INVALID_ARGUMENT: $want" "stderr of sbx $*"
  run --separate-stderr "$SBX_BIN" --json "$@" </dev/null
  [ "$status" -eq 125 ] || fail "sbx --json $*: exit $status, not 125"
  # One parse for both fields: this runs some 450 times.
  expect_eq "$(jget '"%s: %s" % (d["error"]["code"], d["error"]["message"])')" "INVALID_ARGUMENT: $want" \
    "code and message of sbx --json $*"
}

@test "cli: usage errors of every command come in one format" {
  local c usage args see opt n=0
  for c in $(commands); do
    see="(see \`sbx $c --help\`)"
    usage_error "$c: unknown option \`--no-such-option\` $see" "$c" --no-such-option
    usage_error "$c: unknown option \`-Z\` $see" "$c" -Z
    usage_error "$c: option \`--help\` takes no value $see" "$c" --help=yes
    # An option of the command's own that takes a value, given none.
    opt=$("$SBX_BIN" "$c" --help | awk '$1 ~ /^--[a-z-]+$/ && $2 ~ /^[A-Z]/ { print $1; exit }
      $1 ~ /^-[a-zA-Z],$/ && $2 ~ /^--/ && $3 ~ /^[A-Z]/ { print $2; exit }')
    if [ -n "$opt" ]; then
      usage_error "$c: option \`$opt\` needs a value $see" "$c" "$opt"
      n=$((n + 1))
    fi
    # The operands: what follows [OPTIONS] on the usage line.
    usage=$("$SBX_BIN" "$c" --help | head -n 1)
    args=${usage#"Usage: sbx $c [OPTIONS]"}
    args=${args# }
    if [ -z "$args" ]; then
      usage_error "$c: unexpected argument \`extra\` $see" "$c" extra
    elif [[ $args != \[* ]]; then
      usage_error "$c: expected $args $see" "$c"
    fi
  done
  [ "$n" -ge 10 ] || fail "only $n commands with an option that takes a value"
  # Past the most operands a command takes: the first one too many is named.
  usage_error "status: unexpected argument \`b\` (see \`sbx status --help\`)" status a b
  usage_error "stats: unexpected argument \`b\` (see \`sbx stats --help\`)" stats a b
  usage_error "build: unexpected argument \`b\` (see \`sbx build --help\`)" build a b
  usage_error "help: unexpected argument \`ps\` (see \`sbx help --help\`)" help ls ps
  usage_error "tag: unexpected argument \`c\` (see \`sbx tag --help\`)" tag a b c
  usage_error "proc: unexpected argument \`d\` (see \`sbx proc --help\`)" proc a b c d
}

@test "cli: a missing option value is INVALID_ARGUMENT" {
  expect_error INVALID_ARGUMENT create --memory
  expect_error INVALID_ARGUMENT wait sb-000000000000 --timeout
}

@test "cli: missing or extra operands are INVALID_ARGUMENT" {
  expect_error INVALID_ARGUMENT status
  expect_error INVALID_ARGUMENT status a b
  expect_error INVALID_ARGUMENT ttl sb-000000000000
  expect_error INVALID_ARGUMENT exec
  expect_error INVALID_ARGUMENT run
  expect_error INVALID_ARGUMENT run --runtime runc
  expect_error INVALID_ARGUMENT import
  expect_error INVALID_ARGUMENT ls extra
  expect_error INVALID_ARGUMENT create extra
}

@test "cli: sbx version and --version" {
  run --separate-stderr sbx version
  expect_status 0
  [[ "$output" =~ ^sbx\ [0-9]+\.[0-9]+ ]] || fail "version: $output"
  local v=$output
  run sbx --version
  expect_status 0
  expect_eq "$output" "$v" "sbx --version"
  run --separate-stderr sbx version --json
  expect_status 0
  json_valid
  expect_eq "sbx $(jget 'd["version"]')" "$v" "version --json"
}

@test "cli: sbx info --json reports runtimes and cgroup version" {
  run --separate-stderr sbx --json info
  expect_status 0
  json_valid
  local rt
  for rt in runsc runc; do
    [ "$(jget "type(d['runtimes']['$rt']['available']).__name__")" = bool ] || fail "runtimes.$rt.available"
    jget "d['runtimes']['$rt']" >/dev/null
  done
  [[ "$(jget 'd["cgroup_version"]')" =~ ^[12]$ ]] || fail "cgroup_version: $(jget 'd["cgroup_version"]')"
  expect_eq "$(jget 'd["default_runtime"]')" runsc "default_runtime"
  # The human form says the same.
  run --separate-stderr sbx info
  expect_status 0
  expect_contains "$output" "runtimes.runsc"
  expect_contains "$output" "runtimes.runc"
  expect_contains "$output" "cgroup_version"
}

@test "cli: sbx info reports the runtime actually found" {
  SBX_RUNC=/nonexistent run --separate-stderr sbx --json info
  expect_status 0
  expect_eq "$(jget 'd["runtimes"]["runc"]["available"]')" false "runc available with SBX_RUNC=/nonexistent"
}

# --json: one JSON document on stdout, nothing else, for every command.

json_ok () {
  run --separate-stderr sbx "$@"
  if [ "$status" -ne 0 ]; then
    printf 'sbx %s: exit %s\nstdout: %s\nstderr: %s\n' "$*" "$status" "$output" "$stderr" >&2
    return 1
  fi
  json_valid "$output" || fail "sbx $*: stdout is not one JSON document"
}

@test "cli: --json gives one JSON document for the store commands" {
  sbx_import_payload
  json_ok ls --json
  [ "$(jget 'len(d)')" = 0 ] || fail "ls: $output"
  json_ok stats --json
  jget 'd["running"]' >/dev/null
  json_ok images --json
  expect_contains "$(jget '[t for i in d for t in i["tags"]]')" payload
  json_ok import --json --tag again "$BATS_FILE_TMPDIR/payload.tar"
  expect_eq "$(jget 'd["tag"]')" again "import tag"
  json_ok info --json
  json_ok gc --json
  jget 'd["removed"]' >/dev/null
  json_ok version --json
  # The global flag means the same.
  json_ok --json images
}

@test "cli: --json gives one JSON document for the sandbox commands" {
  require_runtime runc
  json_ok create --json --runtime runc --name jsonbox
  local id
  id=$(jget 'd["id"]')
  [[ "$id" =~ ^sb-[0-9a-f]+$ ]] || fail "create --json id: $id"
  json_ok status --json "$id"
  expect_eq "$(jget 'd["state"]')" running "state"
  json_ok ls --json
  expect_eq "$(jget 'd[0]["id"]')" "$id" "ls id"
  json_ok ttl --json "$id" 600
  [ "$(jget 'd["deadline"]')" -gt "$(date +%s)" ] || fail "ttl deadline: $output"
  json_ok logs --json "$id"
  jget 'd["log"]' >/dev/null
  json_ok terminate --json "$id"
  expect_eq "$(jget 'd["ids"][0]')" "$id" "terminate ids"
  json_ok wait --json "$id"
  expect_eq "$(jget 'd["state"]')" terminated "wait state"
  json_ok rm --json jsonbox
  expect_eq "$(jget 'd["ids"][0]')" "$id" "rm ids"
}

@test "cli: exec --json gives one JSON document" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc)
  json_ok exec --json "$id" -- true
  sbx terminate "$id" >/dev/null
}

@test "cli: run --json gives one JSON document" {
  require_runtime runc
  json_ok run --json --runtime runc --rm -- true
}

@test "cli: --json errors are one JSON document with code and message" {
  run --separate-stderr sbx status --json nosuchbox
  expect_status 125
  json_valid
  expect_eq "$(jget 'd["error"]["code"]')" NOT_FOUND "code"
  expect_contains "$(jget 'd["error"]["message"]')" nosuchbox
  # Diagnostics go to stderr, never to stdout, without --json too.
  run --separate-stderr sbx status nosuchbox
  expect_status 125
  expect_eq "$output" "" "stdout of a failing command"
  expect_contains "$stderr" NOT_FOUND
}

# --- every error code the lifecycle produces -----------------------------------

@test "errors: INVALID_ARGUMENT for a bad option value" {
  expect_error INVALID_ARGUMENT create --runtime crun
  expect_error INVALID_ARGUMENT create --memory lots
}

@test "errors: NOT_FOUND for an unknown image" {
  expect_error NOT_FOUND create --runtime runc --pull never --image no-such-image
  expect_contains "$stderr" no-such-image
  expect_error NOT_FOUND run --runtime runc --pull never --image no-such-image -- true
}

@test "errors: NOT_FOUND for an unknown sandbox, on every sandbox command" {
  expect_error NOT_FOUND status sb-000000000000
  expect_error NOT_FOUND status no-such-name
  expect_error NOT_FOUND exec sb-000000000000 -- true
  expect_error NOT_FOUND wait sb-000000000000
  expect_error NOT_FOUND terminate sb-000000000000
  expect_error NOT_FOUND rm sb-000000000000
  expect_error NOT_FOUND logs sb-000000000000
  expect_error NOT_FOUND ttl sb-000000000000 10
}

@test "errors: SANDBOX_NOT_RUNNING for exec into a terminated sandbox" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc)
  sbx terminate "$id" >/dev/null
  expect_error SANDBOX_NOT_RUNNING exec "$id" -- true
  expect_error SANDBOX_NOT_RUNNING ttl "$id" 10
}

@test "errors: RUNTIME_UNAVAILABLE when runc is missing" {
  SBX_RUNC=/nonexistent expect_error RUNTIME_UNAVAILABLE create --runtime runc
  expect_contains "$stderr" runc
  [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "a refused create left $(ls -A "$SBX_ROOT/sandboxes")"
}

@test "errors: RUNTIME_UNAVAILABLE when runsc does not work" {
  SBX_RUNSC=/bin/false expect_error RUNTIME_UNAVAILABLE create
  SBX_RUNSC=/bin/false expect_error RUNTIME_UNAVAILABLE create --runtime runsc
  SBX_RUNSC=/bin/false expect_error RUNTIME_UNAVAILABLE run -- true
  [ -z "$(ls -A "$SBX_ROOT/sandboxes")" ] || fail "a refused create left $(ls -A "$SBX_ROOT/sandboxes")"
}

@test "errors: BUSY for a duplicate --name" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --name dup)
  expect_error BUSY create --runtime runc --name dup
  expect_contains "$stderr" dup
  # The first one keeps its name.
  expect_eq "$(sbx --json status dup | jpipe 'd["id"]')" "$id" "owner of the name"
  expect_eq "$(sbx ls -q | wc -l)" 1 "sandboxes"
  sbx terminate "$id" >/dev/null
}

@test "errors: BUSY for rm of a running sandbox" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc)
  expect_error BUSY rm "$id"
  expect_eq "$(state_of "$id")" running "state after a refused rm"
  run sbx rm --force "$id"
  expect_status 0
  [ ! -e "$SBX_ROOT/sandboxes/$id" ] || fail "rm --force left the sandbox"
}

@test "errors: TIMEOUT for wait --timeout on a running sandbox" {
  require_runtime runc
  local id t0
  id=$(sbx create --runtime runc)
  t0=$SECONDS
  expect_error TIMEOUT wait --timeout 1 "$id"
  [ $((SECONDS - t0)) -le 5 ] || fail "wait --timeout 1 took $((SECONDS - t0)) s"
  expect_eq "$(state_of "$id")" running "state after wait timed out"
  sbx terminate "$id" >/dev/null
}
