#!/usr/bin/env bats
# Secrets and the audit log (sbx-secret(1)): sbx secret create|ls|rm, the
# values from stdin and --from-file, the refusals; --secret, --secret-file
# and --allow-secrets on create and run under both runtimes: the variable
# and the file inside, the warning, SECRETS_NOT_ALLOWED, NOT_FOUND; the value
# nowhere in the store but ROOT/secrets (after create, exec, commit, export
# and a runsc snapshot), not in the host's ps, not in sbx status; the audit
# record and sbx audit.

load ../helpers/common

# A value no test, image or tool has by chance.
new_value () {
  printf 'val-%s-%s' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" "$1"
}

# Every file of this test's store (ROOT and RUN) that holds $1, one a line,
# sorted. Sockets and FIFOs are skipped, not read.
store_files_with () {
  { grep -rlF --devices=skip -- "$1" "$SBX_ROOT" "$SBX_RUN_ROOT" 2>/dev/null || true; } | LC_ALL=C sort
}

# The value is in ROOT/secrets/NAME and nowhere else of the store, except
# what $3 allows (a pattern of paths: a snapshot's checkpoint).
expect_only_in_store () {
  local value=$1 name=$2 allow=${3-} f fail=0
  local files
  files=$(store_files_with "$value")
  expect_contains "$files" "$SBX_ROOT/secrets/$name"
  while read -r f; do
    [ -n "$f" ] || continue
    [ "$f" = "$SBX_ROOT/secrets/$name" ] && continue
    [ -n "$allow" ] && [[ $f == $allow ]] && continue
    echo "the value is in $f" >&2
    fail=1
  done <<<"$files"
  [ "$fail" -eq 0 ]
}

# The value is in no process's argv on the host (ps runs before grep reads
# its output, so grep's own argv is not in it).
expect_not_in_ps () {
  local out=$BATS_TEST_TMPDIR/ps
  ps -eo args >"$out"
  if grep -qF -- "$1" "$out"; then
    grep -F -- "$1" "$out" >&2
    fail "the value is in the argv of a host process"
  fi
}

@test "secret: create from stdin and --from-file, ls (names, dates, --json, -q), rm" {
  local v1 v2 f
  v1=$(new_value one)
  v2=$(new_value two)
  run --separate-stderr sbx secret create db-pass <<<"$v1"
  expect_status 0
  expect_eq "$output" db-pass "create prints the name"
  f=$BATS_TEST_TMPDIR/value
  printf '%s' "$v2" >"$f"
  run --separate-stderr sbx --json secret create --from-file "$f" api_key
  expect_status 0
  expect_eq "$(jget 'd["name"]')" api_key "create --json"
  # Stored as given: stdin's value keeps its newline, the file's has none.
  expect_eq "$(tail -c 1 "$SBX_ROOT/secrets/db-pass" | od -An -tx1 | tr -d ' ')" 0a "stdin's newline, kept"
  expect_eq "$(cat "$SBX_ROOT/secrets/api_key")" "$v2" "the file's value"
  expect_eq "$(stat -c %a "$SBX_ROOT/secrets")" 700 "the store's mode"
  expect_eq "$(stat -c %a "$SBX_ROOT/secrets/api_key")" 600 "a value's mode"
  run --separate-stderr sbx secret ls
  expect_status 0
  expect_contains "$output" NAME
  expect_contains "$output" db-pass
  [[ $output != *"$v1"* && $output != *"$v2"* ]] || fail "ls shows a value"
  [[ $output =~ api_key\ +20[0-9]{2}-[0-9]{2}-[0-9]{2}T ]] || fail "no creation date: $output"
  run --separate-stderr sbx --json secret ls
  expect_status 0
  expect_eq "$(jget '[s["name"] for s in d]')" '["api_key", "db-pass"]' "ls --json, sorted"
  expect_eq "$(jget 'sorted(d[0].keys())')" '["created", "name"]' "names and dates only"
  [ "$(jget 'd[0]["created"]')" -gt 1700000000 ] || fail "created: $output"
  expect_eq "$(sbx secret ls -q)" "api_key
db-pass" "ls -q"
  run --separate-stderr sbx secret rm db-pass api_key
  expect_status 0
  expect_eq "$(sbx secret ls -q)" "" "all removed"
  expect_eq "$(sbx --json secret ls | jpipe "len(d)")" 0 "an empty list"
}

@test "secret: a secret that exists is BUSY unless --replace, which changes its value" {
  local v1 v2
  v1=$(new_value first)
  v2=$(new_value second)
  printf '%s' "$v1" | sbx secret create tok >/dev/null
  run --separate-stderr sh -c 'printf "%s" "$1" | "$SBX_BIN" --json secret create tok' _ "$v2"
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" BUSY "create over an existing secret"
  expect_eq "$(cat "$SBX_ROOT/secrets/tok")" "$v1" "the value is unchanged"
  printf '%s' "$v2" | sbx secret create --replace tok >/dev/null
  expect_eq "$(cat "$SBX_ROOT/secrets/tok")" "$v2" "the replaced value"
  # No temp file is left behind.
  expect_eq "$(ls -A "$SBX_ROOT/secrets")" tok "the store's files"
}

@test "secret: sbx gc removes the temp file of a killed create, not one being written" {
  printf 'v' | sbx secret create kept >/dev/null
  printf 'half' >"$SBX_ROOT/secrets/.tmp-0123456789abcdef"
  touch -d '1 hour ago' "$SBX_ROOT/secrets/.tmp-0123456789abcdef"
  printf 'half' >"$SBX_ROOT/secrets/.tmp-fedcba9876543210"
  expect_eq "$(sbx secret ls -q)" kept "temp files are not listed"
  sbx gc >/dev/null
  expect_eq "$(ls -A "$SBX_ROOT/secrets" | LC_ALL=C sort)" ".tmp-fedcba9876543210
kept" "after gc"
  rm -f "$SBX_ROOT/secrets/.tmp-fedcba9876543210"
}

@test "secret: bad names, empty, long and NUL values, values on the command line, a missing one are refused" {
  local f=$BATS_TEST_TMPDIR/v name
  printf 'x' >"$f"
  for name in .hidden -dash 'a/b' 'a b' "$(printf 'n%.0s' {1..65})" ''; do
    expect_error INVALID_ARGUMENT secret create --from-file "$f" "$name"
  done
  : >"$f"
  expect_error INVALID_ARGUMENT secret create --from-file "$f" empty
  head -c 65537 /dev/zero | tr '\0' 'a' >"$f"
  expect_error INVALID_ARGUMENT secret create --from-file "$f" long
  head -c 65536 /dev/zero | tr '\0' 'a' >"$f"
  run --separate-stderr sbx secret create --from-file "$f" exactly-64k
  expect_status 0
  printf 'a\0b' >"$f"
  expect_error INVALID_ARGUMENT secret create --from-file "$f" nul
  # A value is never an operand: there is no way to give one in argv.
  expect_error INVALID_ARGUMENT secret create name value
  expect_error NOT_FOUND secret create --from-file "$BATS_TEST_TMPDIR/none" missing
  expect_error NOT_FOUND secret rm missing
  expect_error INVALID_ARGUMENT secret rename x
  expect_error INVALID_ARGUMENT secret ls --replace
  run --separate-stderr sbx secret create from-stdin </dev/null
  expect_status 125
  expect_contains "$stderr" "the value is empty"
  expect_eq "$(sbx secret ls -q)" exactly-64k "only the good one is stored"
}

@test "secret: --secret needs --allow-secrets (SECRETS_NOT_ALLOWED), names are checked, a missing one is NOT_FOUND" {
  printf 'v' | sbx secret create tok >/dev/null
  printf 'v' | sbx secret create dotted.name >/dev/null
  expect_error SECRETS_NOT_ALLOWED create --runtime runc --block-network --secret tok
  expect_error SECRETS_NOT_ALLOWED create --runtime runc --block-network --secret-file tok
  expect_error SECRETS_NOT_ALLOWED run --runtime runc --block-network --secret tok -- true
  expect_contains "$stderr" "--allow-secrets"
  # A name that is no variable name needs NAME=VAR.
  expect_error INVALID_ARGUMENT create --runtime runc --block-network --allow-secrets --secret dotted.name
  expect_contains "$output" "NAME=VAR"
  expect_error INVALID_ARGUMENT create --runtime runc --block-network --allow-secrets --secret tok=1BAD
  expect_error INVALID_ARGUMENT create --runtime runc --block-network --allow-secrets --secret tok=A-B
  expect_error INVALID_ARGUMENT create --runtime runc --block-network --allow-secrets --secret tok=X --secret dotted.name=X
  expect_error INVALID_ARGUMENT create --runtime runc --block-network --allow-secrets --secret-file tok --secret-file tok
  expect_error INVALID_ARGUMENT create --runtime runc --block-network --allow-secrets --secret-file ../tok
  expect_error NOT_FOUND create --runtime runc --block-network --allow-secrets --secret absent
  expect_error NOT_FOUND create --runtime runc --block-network --allow-secrets --secret-file absent
  # Nothing was made, nothing was audited.
  expect_eq "$(sbx ls -q)" "" "no sandbox"
  expect_eq "$(sbx --json audit | jpipe "len(d)")" 0 "no audit record"
}

# The whole path on RUNTIME: the variable and the file inside, the warning,
# the secret over --env, nowhere in the store, ps or status, the audit
# record, and commit/export without it.
secrets_inside () {
  local rt=$1 v1 v2 id out img tar
  require_runtime "$rt"
  v1=$(new_value env)
  v2=$(new_value file)
  printf '%s' "$v1" | sbx secret create api >/dev/null
  printf '%s' "$v2" | sbx secret create tls.key >/dev/null
  run --separate-stderr sbx create --runtime "$rt" --block-network --allow-secrets \
    --secret api --secret api=API_TOKEN --secret-file tls.key -e API_TOKEN=from-env
  expect_status 0
  id=$output
  expect_contains "$stderr" "warning: --allow-secrets"
  expect_contains "$stderr" "can read"
  [[ $stderr != *"$v1"* && $stderr != *"$v2"* ]] || fail "the warning shows a value"
  expect_eq "$(sbx exec "$id" -- sh -c 'printf %s "$api"')" "$v1" "the variable (default name)"
  expect_eq "$(sbx exec "$id" -- sh -c 'printf %s "$API_TOKEN"')" "$v1" "the renamed variable, over create's --env"
  expect_eq "$(sbx exec -e API_TOKEN=from-exec "$id" -- sh -c 'printf %s "$API_TOKEN"')" "$v1" "over an exec's --env"
  expect_eq "$(sbx exec "$id" -- cat /run/secrets/tls.key)" "$v2" "the file"
  expect_eq "$(sbx exec "$id" -- stat -c '%a %u' /run/secrets/tls.key)" "400 0" "the file's mode and owner"
  expect_eq "$(sbx exec "$id" -- sh -c 'grep " /run/secrets " /proc/mounts | cut -d" " -f3')" tmpfs "a tmpfs"
  # Written by a command too, the sandbox's own files stay apart from it.
  sbx exec "$id" -- sh -c 'echo MARKER-kept > /root/marker'
  # Not on the host: the store, the argv of any process, the record.
  expect_only_in_store "$v1" api
  expect_only_in_store "$v2" tls.key
  expect_not_in_ps "$v1"
  expect_not_in_ps "$v2"
  run --separate-stderr sbx --json status "$id"
  expect_status 0
  [[ $output != *"$v1"* && $output != *"$v2"* ]] || fail "sbx status --json shows a value"
  expect_eq "$(jget 'd["options"]["secrets"]')" '["api", "api=API_TOKEN"]' "the names in the record"
  expect_eq "$(jget 'd["options"]["secret_files"]')" '["tls.key"]' "the files' names"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "api (env api), api (env API_TOKEN), tls.key (file)"
  [[ $output != *"$v1"* && $output != *"$v2"* ]] || fail "sbx status shows a value"
  run --separate-stderr sbx logs "$id"
  [[ $output != *"$v1"* && $output != *"$v2"* ]] || fail "the log shows a value"
  # The audit record.
  run --separate-stderr sbx --json audit
  expect_status 0
  expect_eq "$(jget 'len(d)')" 1 "one record"
  expect_eq "$(jget 'd[0]["event"]')" sandbox.secrets_attached "the event"
  expect_eq "$(jget 'd[0]["sandbox"]')" "$id" "the sandbox"
  expect_eq "$(jget 'd[0]["secrets"]')" '["api", "tls.key"]' "the names, each once"
  expect_eq "$(jget 'd[0]["uid"]')" "$(id -u)" "the caller's uid"
  expect_eq "$(stat -c %a "$SBX_ROOT/audit.log")" 600 "the log's mode"
  run --separate-stderr sbx audit
  expect_contains "$output" "$id"
  expect_contains "$output" "api,tls.key"
  # A commit and its export: the sandbox's files, without the value.
  img=$(sbx commit "$id")
  tar=$BATS_TEST_TMPDIR/img.tar
  sbx export --compression none "$img" "$tar" >/dev/null
  grep -qF MARKER-kept "$tar" || fail "the export lacks the sandbox's own file (the check would prove nothing)"
  ! grep -qF -- "$v1" "$tar" || fail "the value is in the export"
  ! grep -qF -- "$v2" "$tar" || fail "the file's value is in the export"
  sbx terminate "$id" >/dev/null
  expect_only_in_store "$v1" api
  expect_only_in_store "$v2" tls.key
  # sbx run: the command has it too.
  run --separate-stderr sbx run --rm --runtime "$rt" --block-network --allow-secrets --secret api=K -- sh -c 'printf %s "$K"'
  expect_status 0
  expect_eq "$output" "$v1" "sbx run's command"
  expect_eq "$(sbx --json audit | jpipe 'len(d)')" 2 "a record per create"
}

@test "secret: runsc: the variable and the file inside, in nothing else of the host" {
  secrets_inside runsc
}

@test "secret: runc: the variable and the file inside, in nothing else of the host" {
  secrets_inside runc
}

# Secrets of up to 32 KiB in all are written to the agent while the runtime
# starts, larger ones after its HELLO: both ways, each value whole.
secrets_both_ways () {
  local rt=$1 small big id
  require_runtime "$rt"
  small=$(new_value small)
  big=$(head -c 49152 /dev/zero | tr '\0' 'b')
  printf '%s' "$small" | sbx secret create small >/dev/null
  printf '%s' "$big" | sbx secret create big >/dev/null
  id=$(sbx create --runtime "$rt" --block-network --allow-secrets --secret small 2>/dev/null)
  expect_eq "$(sbx exec "$id" -- sh -c 'printf %s "$small"')" "$small" "a small secret (written ahead)"
  sbx terminate "$id" >/dev/null
  id=$(sbx create --runtime "$rt" --block-network --allow-secrets --secret small --secret big --secret-file big 2>/dev/null)
  expect_eq "$(sbx exec "$id" -- sh -c 'printf %s "$small"')" "$small" "the small one beside 96 KiB"
  expect_eq "$(sbx exec "$id" -- sh -c 'printf %s "$big" | wc -c')" 49152 "the big variable's length"
  expect_eq "$(sbx exec "$id" -- sh -c 'printf %s "$big" | tr -d b | wc -c')" 0 "the big variable's bytes"
  expect_eq "$(sbx exec "$id" -- cat /run/secrets/big | cksum)" "$(printf '%s' "$big" | cksum)" "the big file"
  sbx terminate "$id" >/dev/null
}

@test "secret: runc: small secrets written ahead and large ones after HELLO arrive whole" {
  secrets_both_ways runc
}

@test "secret: runsc: small secrets written ahead and large ones after HELLO arrive whole" {
  secrets_both_ways runsc
}

@test "secret: runsc snapshot: names only in snapshot.json and its layer, values again at restore, refused once removed" {
  require_runtime runsc
  local v v2 id snap r
  v=$(new_value snap)
  printf '%s' "$v" | sbx secret create tok >/dev/null
  id=$(sbx create --block-network --allow-secrets --secret tok=TOK --secret-file tok 2>/dev/null)
  sbx exec "$id" -- sh -c 'echo MARKER-snap > /root/marker; printf %s "$TOK" > /dev/null'
  snap=$(sbx snapshot "$id")
  grep -qF '"tok=TOK"' "$SBX_ROOT/snapshots/$snap/snapshot.json" || fail "the names are not in snapshot.json"
  ! grep -qF -- "$v" "$SBX_ROOT/snapshots/$snap/snapshot.json" || fail "the value is in snapshot.json"
  # The snapshot's layer (the sandbox's writable layer) is in the store: the
  # marker is in it, the value is not (store_files_with covers the layers).
  [ -n "$(store_files_with MARKER-snap)" ] || fail "no layer holds the sandbox's own file"
  # runsc's checkpoint is an image of the sandbox's memory, which holds the
  # values (sbx-secret(1)): the one other place allowed.
  expect_only_in_store "$v" tok "$SBX_ROOT/snapshots/$snap/checkpoint/*"
  # A restore reads the values from the store again: a replaced one is new.
  v2=$(new_value replaced)
  printf '%s' "$v2" | sbx secret create --replace tok >/dev/null
  r=$(sbx restore "$snap")
  expect_eq "$(sbx exec "$r" -- sh -c 'printf %s "$TOK"')" "$v2" "the variable after restore"
  expect_eq "$(sbx exec "$r" -- cat /run/secrets/tok)" "$v2" "the file after restore"
  expect_eq "$(sbx --json audit | jpipe 'd[-1]["sandbox"]')" "$r" "the restore is audited"
  sbx terminate "$r" >/dev/null
  sbx secret rm tok >/dev/null
  expect_error NOT_FOUND restore "$snap"
  expect_contains "$output" tok
  sbx rmsnap "$snap" >/dev/null
}

@test "audit: --since filters, --json is an array, a bad --since or a damaged log is refused" {
  printf 'v' | sbx secret create tok >/dev/null
  expect_eq "$(sbx --json audit | jpipe "len(d)")" 0 "no log yet"
  run --separate-stderr sbx audit
  expect_status 0
  expect_contains "$output" SANDBOX
  local id
  id=$(sbx create --runtime runc --block-network --allow-secrets --secret tok 2>/dev/null)
  sbx terminate "$id" >/dev/null
  expect_eq "$(sbx --json audit --since 1h | jpipe 'len(d)')" 1 "--since 1h"
  expect_eq "$(sbx --json audit --since 2000-01-01T00:00:00Z | jpipe 'len(d)')" 1 "--since a date"
  expect_eq "$(sbx --json audit --since "$(($(date +%s) + 3600))" | jpipe 'len(d)')" 0 "--since the future"
  for bad in yesterday 1w -5m 2026-13-01T00:00:00Z ''; do
    expect_error INVALID_ARGUMENT audit --since "$bad"
  done
  echo 'not json' >>"$SBX_ROOT/audit.log"
  expect_error INTERNAL audit
  expect_contains "$output" "line 2"
}
