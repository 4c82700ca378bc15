#!/usr/bin/env bats
# Bad input: every one gets exit 125, a message that names the problem, the
# right error code, and leaves nothing behind (no sandbox directory, no name,
# no image, no layer, nothing written outside the store).
#
# An --env value with a NUL byte cannot be passed through argv at all, so it
# has no test here (the agent protocol's own checks are unit-tested).

load ../helpers/common

setup_file () {
  sbx_build_payload_tar
  # The host side of the escapes: a directory with one file the archives
  # aim at.
  local host=$BATS_FILE_TMPDIR/host
  mkdir -p "$host/dir"
  echo host >"$host/dir/target"
  local up=../../../../../../../../../../../../../../../../../../../../../../../..
  py - "$BATS_FILE_TMPDIR" "$host" "$up" <<'EOF'
import io, sys, tarfile
out, host, up = sys.argv[1], sys.argv[2], sys.argv[3]
def f(t, name, data=b"pwned\n"):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mode = 0o644
    t.addfile(ti, io.BytesIO(data))
def d(t, name):
    ti = tarfile.TarInfo(name); ti.type = tarfile.DIRTYPE; ti.mode = 0o755
    t.addfile(ti)
def ln(t, name, target, hard=False):
    ti = tarfile.TarInfo(name); ti.linkname = target
    ti.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    t.addfile(ti)
rel = up + host   # host is absolute: up/tmp/... climbs to the host's path
cases = {
    "dotdot":        lambda t: (d(t, "./"), f(t, "etc/ok"), f(t, rel + "/dotdot")),
    "dotdot-inner":  lambda t: (d(t, "./"), d(t, "bin"), f(t, "bin/" + rel + "/dotdot-inner")),
    "absolute":      lambda t: (d(t, "./"), f(t, host + "/absolute")),
    "symlink-abs":   lambda t: (d(t, "./"), ln(t, "esc", host + "/dir"), f(t, "esc/pwned-abs")),
    "symlink-rel":   lambda t: (d(t, "./"), ln(t, "esc", rel + "/dir"), f(t, "esc/pwned-rel")),
    "symlink-dir":   lambda t: (d(t, "./"), ln(t, "esc", host + "/dir"), d(t, "esc/sub"), f(t, "esc/sub/pwned")),
    "hardlink-abs":  lambda t: (d(t, "./"), ln(t, "hl", host + "/dir/target", True)),
    "hardlink-rel":  lambda t: (d(t, "./"), ln(t, "hl", rel + "/dir/target", True)),
    "hardlink-sym":  lambda t: (d(t, "./"), ln(t, "s", host + "/dir"), ln(t, "hl", "s/target", True)),
}
for name, build in cases.items():
    with tarfile.open("%s/%s.tar" % (out, name), "w", format=tarfile.GNU_FORMAT) as t:
        build(t)
EOF
}

setup () {
  sbx_setup
  sbx_import_payload
}

# nothing_left: no sandbox, no name, nothing half-made in the store.
nothing_left () {
  local what
  for what in sandboxes names layers/tmp; do
    if [ -d "$SBX_ROOT/$what" ] && [ -n "$(ls -A "$SBX_ROOT/$what")" ]; then
      fail "left in $what: $(ls -A "$SBX_ROOT/$what")"
    fi
  done
  if [ -d "$SBX_RUN_ROOT/sandboxes" ] && [ -n "$(ls -A "$SBX_RUN_ROOT/sandboxes")" ]; then
    fail "left in the run root: $(ls -A "$SBX_RUN_ROOT/sandboxes")"
  fi
}

# bad CODE WORD ARGS...: `sbx ARGS` fails with CODE, its message contains
# WORD, and nothing is left.
bad () {
  local code=$1 word=$2
  shift 2
  expect_error "$code" "$@"
  expect_contains "$(jget 'd["error"]["message"]')" "$word"
  nothing_left
}

# --- flags --------------------------------------------------------------------------

@test "badinput: malformed flags" {
  bad INVALID_ARGUMENT --memory create --runtime runc --memory
  bad INVALID_ARGUMENT ---x create ---x
  bad INVALID_ARGUMENT --nope create --runtime runc --nope=1
  bad INVALID_ARGUMENT "-" create --runtime runc -
  bad INVALID_ARGUMENT stray create --runtime runc stray
  bad INVALID_ARGUMENT --image run --runtime runc --image
}

@test "badinput: a value given to a flag that takes none names the flag" {
  bad INVALID_ARGUMENT --block-network create --runtime runc --block-network=1
  bad INVALID_ARGUMENT --json create --json=yes
  bad INVALID_ARGUMENT --rm run --rm=yes -- true
}

@test "badinput: --memory -1 and --timeout 99999999999" {
  bad INVALID_ARGUMENT -1 create --runtime runc --memory -1
  bad INVALID_ARGUMENT 99999999999 create --runtime runc --timeout 99999999999
  bad INVALID_ARGUMENT 99999999999 run --runtime runc --timeout 99999999999 -- true
  bad INVALID_ARGUMENT 99999999999 wait --timeout 99999999999999999999 sb-000000000000
  bad INVALID_ARGUMENT 99999999999 exec --timeout 99999999999999999999 sb-000000000000 -- true
}

@test "badinput: unknown image is NOT_FOUND" {
  bad NOT_FOUND no-such-image create --runtime runc --pull never --image no-such-image
  bad NOT_FOUND no-such-image run --runtime runc --pull never --image no-such-image -- true
  bad NOT_FOUND sha256:0000 create --runtime runc \
    --image sha256:0000000000000000000000000000000000000000000000000000000000000000
}

@test "badinput: an image reference that is a path is INVALID_ARGUMENT" {
  bad INVALID_ARGUMENT ../../etc create --runtime runc --image ../../etc
  bad INVALID_ARGUMENT /etc create --runtime runc --image /etc
  # a/b is a registry's repository (docker.io/a/b), never a path: with
  # --pull never it is looked up as that reference, and nothing is read.
  bad NOT_FOUND docker.io/a/b:latest create --runtime runc --pull never --image a/b
  bad INVALID_ARGUMENT a//b create --runtime runc --image a//b
  bad INVALID_ARGUMENT ../x import --tag ../x "$BATS_FILE_TMPDIR/payload.tar"
  [ ! -e "$SBX_ROOT/x" ] && [ ! -e "$SBX_ROOT/images/../x" ] || fail "a tag escaped the store"
}

# --- ids and names --------------------------------------------------------------------

@test "badinput: a --name outside [A-Za-z0-9][A-Za-z0-9_.+-]* is INVALID_ARGUMENT" {
  local long
  long=$(printf 'a%.0s' $(seq 65))
  local name
  for name in ../x a/b .hidden _x -x '' 'a b' 'a;b' 'a$b' "$long" "$(printf 'a\tb')" 'é' '..' '.'; do
    expect_error INVALID_ARGUMENT create --runtime runc --name="$name"
    nothing_left
  done
  [ ! -e "$SBX_ROOT/x" ] && [ ! -e "$SBX_TEST_DIR/x" ] || fail "a name escaped the store"
  # 64 characters is the most there is.
  run --separate-stderr sbx create --runtime runc --image payload --name "${long:1}"
  expect_status 0
  sbx terminate "${long:1}" >/dev/null
}

@test "badinput: a sandbox reference outside the pattern is INVALID_ARGUMENT on every command" {
  local long ref cmd
  long=$(printf 'a%.0s' $(seq 65))
  for ref in ../x a/b ../../sandboxes "$long" '' .x; do
    for cmd in status wait terminate rm logs; do
      expect_error INVALID_ARGUMENT "$cmd" "$ref"
    done
    expect_error INVALID_ARGUMENT exec "$ref" -- true
    expect_error INVALID_ARGUMENT ttl "$ref" 10
  done
  nothing_left
}

# --- environment, cwd, runtime ------------------------------------------------------------

@test "badinput: --env without = or with a bad key is INVALID_ARGUMENT" {
  bad INVALID_ARGUMENT FOO create --runtime runc --env FOO
  bad INVALID_ARGUMENT FOO run --runtime runc --env FOO -- true
  bad INVALID_ARGUMENT =x create --runtime runc --env =x
  bad INVALID_ARGUMENT 1A create --runtime runc --env 1A=x
  bad INVALID_ARGUMENT "A B" create --runtime runc --env 'A B=x'
  bad INVALID_ARGUMENT A-B create --runtime runc -e A-B=x
  bad INVALID_ARGUMENT FOO exec --env FOO sb-000000000000 -- true
}

@test "badinput: a relative --cwd is INVALID_ARGUMENT" {
  bad INVALID_ARGUMENT absolute create --runtime runc --cwd tmp
  bad INVALID_ARGUMENT absolute exec --cwd tmp sb-000000000000 -- true
}

@test "badinput: an unknown runtime is INVALID_ARGUMENT" {
  bad INVALID_ARGUMENT crun create --runtime crun
  bad INVALID_ARGUMENT crun run --runtime crun -- true
  bad INVALID_ARGUMENT /usr/sbin/runc create --runtime /usr/sbin/runc
  bad INVALID_ARGUMENT RUNC create --runtime RUNC
  expect_error INVALID_ARGUMENT create --runtime ''
  nothing_left
}

# --- tarballs -----------------------------------------------------------------------------

# bad_tar NAME WORD: importing NAME.tar is INVALID_ARGUMENT naming WORD, and
# nothing reached the host directory the archive aims at.
bad_tar () {
  local layers_before images_before
  layers_before=$(ls -A "$SBX_ROOT/layers/sha256" | wc -l)
  images_before=$(ls -A "$SBX_ROOT/images" | grep -c '\.json$' || true)
  bad INVALID_ARGUMENT "$2" import --tag "evil-$1" "$BATS_FILE_TMPDIR/$1.tar"
  local host=$BATS_FILE_TMPDIR/host
  expect_eq "$(cd "$host" && find . | sort | tr '\n' ' ')" ". ./dir ./dir/target " "the host directory"
  expect_eq "$(cat "$host/dir/target")" host "the host file"
  expect_eq "$(stat -c %h "$host/dir/target")" 1 "links to the host file"
  expect_eq "$(ls -A "$SBX_ROOT/layers/sha256" | wc -l)" "$layers_before" "layers"
  expect_eq "$(ls -A "$SBX_ROOT/images" | grep -c '\.json$' || true)" "$images_before" "images"
  run --separate-stderr sbx --json images
  expect_not_contains "$output" "evil-$1"
}

@test "badinput: a tarball with a ../ entry is refused" {
  bad_tar dotdot ..
  bad_tar dotdot-inner ..
}

@test "badinput: a tarball with an absolute path is refused" {
  bad_tar absolute absolute
}

@test "badinput: a tarball that writes through a symlink to the host is refused" {
  bad_tar symlink-abs esc
  bad_tar symlink-rel esc
  bad_tar symlink-dir esc
}

@test "badinput: a tarball with a hardlink out of the layer is refused" {
  bad_tar hardlink-abs hl
  bad_tar hardlink-rel hl
  bad_tar hardlink-sym hl
}

@test "badinput: an import error names the file once" {
  expect_error INVALID_ARGUMENT import "$BATS_FILE_TMPDIR/absolute.tar"
  local msg n
  msg=$(jget 'd["error"]["message"]')
  n=$(printf '%s' "$msg" | grep -o "absolute.tar" | wc -l)
  [ "$n" -eq 1 ] || fail "the file is named $n times: $msg"
}

@test "badinput: files that are not tarballs" {
  bad NOT_FOUND nonexistent import "$BATS_TEST_TMPDIR/nonexistent.tar"
  bad INVALID_ARGUMENT "" import "$BATS_TEST_TMPDIR"
  : >"$BATS_TEST_TMPDIR/empty.tar"
  bad INVALID_ARGUMENT empty import "$BATS_TEST_TMPDIR/empty.tar"
  head -c 4096 /dev/urandom >"$BATS_TEST_TMPDIR/garbage.tar"
  bad INVALID_ARGUMENT "" import "$BATS_TEST_TMPDIR/garbage.tar"
  head -c 5000 "$BATS_FILE_TMPDIR/payload.tar" >"$BATS_TEST_TMPDIR/truncated.tar"
  bad INVALID_ARGUMENT "" import "$BATS_TEST_TMPDIR/truncated.tar"
  printf 'not gzip at all' | gzip -c | head -c 20 >"$BATS_TEST_TMPDIR/truncated.tar.gz"
  bad INVALID_ARGUMENT "" import "$BATS_TEST_TMPDIR/truncated.tar.gz"
}

@test "badinput: a valid tarball still imports after the refused ones" {
  bad_tar dotdot ..
  run --separate-stderr sbx import --tag fine "$BATS_FILE_TMPDIR/payload.tar"
  expect_status 0
  run --separate-stderr sbx run --runtime runc --image fine -- /bin/sbx-testpayload echo ok
  expect_status 0
  expect_eq "$output" ok "output"
}
