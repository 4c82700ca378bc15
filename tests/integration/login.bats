#!/usr/bin/env bats
# sbx login and logout without a registry (sbx-pull(1)): the usage errors,
# the password never taken from argv, logout's NOT_FOUND and --all, the
# prompt with echo off, and a login that cannot reach its registry storing
# nothing. A login that succeeds needs a registry: registry.bats has it.

load ../helpers/common

# A loopback port nothing listens on (found free, then closed).
closed_port () {
  py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# ROOT/auth.json written by hand, as an earlier login would have: u:p for
# quay.io and localhost:5000.
write_auth () {
  mkdir -p "$SBX_ROOT"
  printf '{"auths": {"quay.io": {"auth": "dTpw"}, "localhost:5000": {"auth": "dTpw"}}}\n' >"$SBX_ROOT/auth.json"
  chmod 600 "$SBX_ROOT/auth.json"
}

@test "login: usage errors, and no password from argv" {
  expect_error INVALID_ARGUMENT login quay.io </dev/null
  expect_contains "$stderr" "--username is required"
  expect_error INVALID_ARGUMENT login -u me --password-stdin </dev/null
  expect_contains "$stderr" "expected REGISTRY"
  expect_error INVALID_ARGUMENT login -u me --password-stdin a.io b.io </dev/null
  local form
  for form in "--password" "--pass" "--password=SeCrEt1"; do
    expect_error INVALID_ARGUMENT login -u me "$form" SeCrEt1 quay.io </dev/null
    expect_contains "$stderr" "there is no --password option"
    expect_not_contains "$stderr$output" "SeCrEt1"
  done
  expect_error INVALID_ARGUMENT login -p SeCrEt1 -u me quay.io </dev/null
  expect_not_contains "$stderr$output" "SeCrEt1"
  # Not a terminal and no --password-stdin: no prompt, an error.
  expect_error INVALID_ARGUMENT login -u me quay.io </dev/null
  expect_contains "$stderr" "--password-stdin"
  # A password that is empty, or more than one line.
  run --separate-stderr sbx login -u me --password-stdin 127.0.0.1:1 </dev/null
  expect_status 125
  expect_contains "$stderr" "INVALID_ARGUMENT: login: the password is empty"
  run --separate-stderr sbx login -u me --password-stdin 127.0.0.1:1 <<<$'SeCrEt1\nmore'
  expect_status 125
  expect_contains "$stderr" "no control character"
  expect_not_contains "$stderr" "SeCrEt1"
  expect_error INVALID_ARGUMENT login -u 'me:you' --password-stdin quay.io <<<"pw"
  expect_contains "$stderr" "--username"
  [ ! -e "$SBX_ROOT/auth.json" ] || fail "a refused login wrote auth.json"
}

@test "login: an unreachable registry fails and writes nothing" {
  write_auth
  local before port
  before=$(cat "$SBX_ROOT/auth.json")
  port=$(closed_port)
  run --separate-stderr sbx login -u uSeRnAmE1 --password-stdin "127.0.0.1:$port" <<<"SeCrEt1"
  expect_status 125
  expect_contains "$stderr" "INTERNAL: login to 127.0.0.1:$port"
  expect_not_contains "$stderr$output" "SeCrEt1"
  expect_not_contains "$stderr$output" "uSeRnAmE1"
  expect_eq "$(cat "$SBX_ROOT/auth.json")" "$before" "auth.json after a failed login"
  expect_eq "$(stat -c %a "$SBX_ROOT/auth.json")" 600 "auth.json's mode"
  run ls -A "$SBX_ROOT"
  expect_not_contains "$output" ".tmp"
  # With none before, none after.
  rm "$SBX_ROOT/auth.json"
  run sbx login -u me --password-stdin "127.0.0.1:$port" <<<"SeCrEt1"
  expect_status 125
  [ ! -e "$SBX_ROOT/auth.json" ] || fail "a failed login wrote auth.json"
}

@test "login: a terminal prompts with echo off" {
  require_tools script
  local port
  port=$(closed_port)
  # The password arrives after the prompt: type-ahead is flushed, as getpass does.
  run bash -c '(sleep 2; printf "SeCrEt1\n"; sleep 1) | script -qec "$1 login -u me $2" /dev/null' _ "$SBX_BIN" \
    "127.0.0.1:$port"
  expect_contains "$output" "Password:"
  expect_contains "$output" "login to 127.0.0.1:$port"
  expect_not_contains "$output" "SeCrEt1"
  expect_not_contains "$output" "password is empty"
}

@test "logout: NOT_FOUND, one registry, --all" {
  expect_error NOT_FOUND logout quay.io
  expect_contains "$stderr" "not logged in to quay.io"
  # Entries in the files sbx only reads are not sbx's to remove.
  mkdir -p "$SBX_TEST_DIR/home/.docker"
  printf '{"auths": {"ghcr.io": {"auth": "dTpw"}}}\n' >"$SBX_TEST_DIR/home/.docker/config.json"
  HOME=$SBX_TEST_DIR/home expect_error NOT_FOUND logout ghcr.io
  expect_contains "$(cat "$SBX_TEST_DIR/home/.docker/config.json")" "ghcr.io"

  write_auth
  run --separate-stderr sbx logout https://quay.io/
  expect_status 0
  expect_eq "$output" "Removed login credentials for quay.io"
  expect_not_contains "$(cat "$SBX_ROOT/auth.json")" "quay.io"
  expect_contains "$(cat "$SBX_ROOT/auth.json")" "localhost:5000"
  expect_eq "$(stat -c %a "$SBX_ROOT/auth.json")" 600 "auth.json's mode"
  expect_error NOT_FOUND logout quay.io

  run --separate-stderr sbx --json logout localhost:5000
  expect_status 0
  expect_eq "$(jget 'd["registry"]')" localhost:5000
  expect_eq "$(jget 'd["logged_out"]')" true

  write_auth
  run --separate-stderr sbx logout --all
  expect_status 0
  expect_eq "$output" "Removed login credentials for all registries"
  [ ! -e "$SBX_ROOT/auth.json" ] || fail "logout --all left auth.json"
  run --separate-stderr sbx logout -a
  expect_status 0
  expect_error INVALID_ARGUMENT logout
  expect_error INVALID_ARGUMENT logout --all quay.io
  expect_error INVALID_ARGUMENT logout 'not a registry'
}

@test "logout: an auth.json that does not parse is named, not quoted, and kept" {
  mkdir -p "$SBX_ROOT"
  printf '{"auths": {"quay.io": {"auth": "SeCrEt1"' >"$SBX_ROOT/auth.json"
  expect_error INVALID_ARGUMENT logout quay.io
  expect_contains "$stderr" "$SBX_ROOT/auth.json: not valid JSON"
  expect_not_contains "$stderr$output" "SeCrEt1"
  expect_contains "$(cat "$SBX_ROOT/auth.json")" "SeCrEt1"
}
