# Shared setup for the bats integration tests: a throwaway root per test,
# the payload image, JSON and error helpers, and the leak check that fails a
# test when anything of its root survives `sbx gc`.
#
# Loaded by every file with `load ../helpers/common`. A file that needs more
# setup defines its own setup()/teardown() and calls sbx_setup/sbx_teardown.

bats_require_minimum_version 1.5.0

: "${SBX_TESTS_DIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
: "${SBX_BIN:=$SBX_TESTS_DIR/../sbx}"
: "${SBX_INIT:=$SBX_TESTS_DIR/../sbx-init}"
: "${SBX_TESTPAYLOAD:=$SBX_TESTS_DIR/sbx-testpayload}"
: "${SBX_BUSYBOX:=/bin/busybox}"
export SBX_BIN SBX_INIT SBX_TESTPAYLOAD

# The container ecosystem's default capability set (DESIGN.md section 6).
SBX_DEFAULT_CAPS=00000000a80425fb

# Debian's python3 (CI installs it); only the standard library is used.
if [ -x /usr/bin/python3 ]; then
  PYTHON=/usr/bin/python3
else
  PYTHON=python3
fi
# The standard library only: no site packages, no environment.
py () {
  "$PYTHON" -I -S "$@"
}

sbx () {
  "$SBX_BIN" "$@"
}

# --- skips ----------------------------------------------------------------

# SBX_TEST_STRICT=1 (CI) turns every skip into a failure: a skip hides a
# missing runtime or kernel feature as well as it hides a bug.
eval "_sbx_bats_skip () $(declare -f skip | tail -n +2)"
skip () {
  if [ "${SBX_TEST_STRICT:-0}" = 1 ]; then
    echo "skip in strict mode (SBX_TEST_STRICT=1): $*" >&2
    return 1
  fi
  _sbx_bats_skip "$@"
}

# --- small assertions -------------------------------------------------------

fail () {
  printf '%s\n' "$*" >&2
  return 1
}

# expect_status N: after `run`, with the output shown on a mismatch.
expect_status () {
  if [ "$status" -ne "$1" ]; then
    printf 'expected exit status %s, got %s\noutput: %s\n' "$1" "$status" "$output" >&2
    [ -n "${stderr-}" ] && printf 'stderr: %s\n' "$stderr" >&2
    return 1
  fi
}

# expect_contains HAYSTACK NEEDLE
expect_contains () {
  case $1 in
    *"$2"*) return 0 ;;
  esac
  printf 'expected to find: %s\nin: %s\n' "$2" "$1" >&2
  return 1
}

expect_not_contains () {
  case $1 in
    *"$2"*)
      printf 'did not expect: %s\nin: %s\n' "$2" "$1" >&2
      return 1
      ;;
  esac
}

# expect_eq GOT WANT [WHAT]
expect_eq () {
  if [ "$1" != "$2" ]; then
    printf '%s: expected `%s`, got `%s`\n' "${3:-value}" "$2" "$1" >&2
    return 1
  fi
}

# --- JSON -------------------------------------------------------------------

# json_valid [TEXT]: TEXT (default $output) is exactly one JSON document.
json_valid () {
  printf '%s' "${1-$output}" | py -c '
import json, sys
raw = sys.stdin.buffer.read()
try:
    text = raw.decode("utf-8")   # JSON is UTF-8 (RFC 8259)
    json.loads(text)
except ValueError as e:
    text = raw.decode("utf-8", "replace")
    sys.stderr.write("not one JSON document (%s): %r\n" % (e, text[:2000]))
    sys.exit(1)
'
}

# jget EXPR [TEXT]: evaluates the Python expression EXPR over the document
# `d` parsed from TEXT (default $output); strings print raw, None as null,
# booleans as true/false, containers as JSON.
jget () {
  printf '%s' "${2-$output}" | jpipe "$1"
}

# jpipe EXPR: jget over the document on stdin.
jpipe () {
  py -c '
import json, sys
d = json.loads(sys.stdin.buffer.read().decode("utf-8"))
try:
    v = eval(sys.argv[1])
except (KeyError, IndexError, TypeError) as e:
    sys.stderr.write("jget %s: %r\n" % (sys.argv[1], e))
    sys.exit(1)
if isinstance(v, str):
    print(v)
elif isinstance(v, float) and v.is_integer():
    print(int(v))
else:
    print(json.dumps(v))
' "$1"
}

# expect_error CODE ARGS...: `sbx --json ARGS...` fails with exit 125, one
# JSON document {"error": {"code": CODE, "message": non-empty}} on stdout and
# a message naming the code on stderr.
expect_error () {
  local code=$1
  shift
  run --separate-stderr "$SBX_BIN" --json "$@"
  if [ "$status" -ne 125 ]; then
    printf 'sbx %s: expected exit 125 (%s), got %s\nstdout: %s\nstderr: %s\n' "$*" "$code" "$status" "$output" \
      "$stderr" >&2
    return 1
  fi
  local got
  got=$(printf '%s' "$output" | py -c '
import json, sys
raw = sys.stdin.buffer.read()
text = raw.decode("utf-8", "replace")
try:
    e = json.loads(raw.decode("utf-8"))["error"]
    print(e["code"] if e.get("message") else "(no message)")
except (ValueError, KeyError, TypeError) as x:
    print("(not one JSON error document: %r)" % text[:1000])
')
  if [ "$got" != "$code" ]; then
    printf 'sbx %s: expected code %s, got %s\nstdout: %s\nstderr: %s\n' "$*" "$code" "$got" "$output" "$stderr" >&2
    return 1
  fi
  expect_contains "$stderr" "$code"
}

# --- the sandbox payload ------------------------------------------------------

# A rootfs tarball: busybox with its applets, the test payload at
# /bin/sbx-testpayload, /etc/passwd. Built once per file.
sbx_build_payload_tar () {
  local out=$BATS_FILE_TMPDIR/payload.tar stage=$BATS_FILE_TMPDIR/payload-rootfs
  [ -s "$out" ] && return 0
  [ -x "$SBX_TESTPAYLOAD" ] || fail "no test payload at $SBX_TESTPAYLOAD (make tests/sbx-testpayload)"
  [ -x "$SBX_BUSYBOX" ] || fail "no busybox at $SBX_BUSYBOX (install busybox-static)"
  rm -rf "$stage"
  mkdir -p "$stage"/bin "$stage"/etc "$stage"/tmp "$stage"/root "$stage"/work
  chmod 1777 "$stage"/tmp
  cp "$SBX_BUSYBOX" "$stage"/bin/busybox
  local a
  for a in $("$SBX_BUSYBOX" --list); do
    [ "$a" = busybox ] || ln -s busybox "$stage/bin/$a"
  done
  cp "$SBX_TESTPAYLOAD" "$stage"/bin/sbx-testpayload
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$stage"/etc/passwd
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$stage"/etc/group
  tar --numeric-owner --owner=0 --group=0 -C "$stage" -cf "$out" . || return 1
  rm -rf "$stage"
}

# Waits (5 s at most) until no layer of this test's root is being settled
# on the disk: the process an import leaves behind (an `sbx` of its own,
# see layer.c) has ended. Before a test writes a layer's pending mark.
sbx_wait_settled () {
  local i
  for i in $(seq 500); do
    pgrep -x sbx >/dev/null || return 0
    sleep 0.01
  done
  fail "a layer is still being settled after 5 s"
}

# Imports the payload tarball into this test's root as image `payload`.
sbx_import_payload () {
  sbx_build_payload_tar || return 1
  local out
  out=$("$SBX_BIN" import --tag payload "$BATS_FILE_TMPDIR/payload.tar" 2>&1) || fail "import payload: $out"
}

# payload RUNTIME ACTION [ARGS...]: run the payload in a new sandbox.
payload () {
  local rt=$1
  shift
  run "$SBX_BIN" run --runtime "$rt" --image payload -- /bin/sbx-testpayload "$@"
}

# The last line of $output (the payload's verdict).
last_line () {
  printf '%s\n' "$output" | tail -n 1
}

# --- runtimes -----------------------------------------------------------------

SBX_RUNTIMES="runc runsc"

# require_runtime NAME: skip (fail under SBX_TEST_STRICT=1) when sbx cannot
# use NAME on this host.
require_runtime () {
  local avail
  avail=$("$SBX_BIN" --json info 2>/dev/null | jpipe "d['runtimes']['$1']['available']" 2>/dev/null)
  [ "$avail" = true ] || skip "runtime $1 is not available here"
}

# state_of ID: the state field of `sbx status --json ID`.
state_of () {
  "$SBX_BIN" --json status "$1" | jpipe 'd["state"]'
}

# wait_for_state ID STATE [SECONDS]
wait_for_state () {
  local id=$1 want=$2 secs=${3:-20} s=
  local until=$((SECONDS + secs))
  while [ $SECONDS -le $until ]; do
    s=$(state_of "$id" 2>/dev/null)
    [ "$s" = "$want" ] && return 0
    sleep 0.2
  done
  fail "sandbox $id: expected state $want within ${secs}s, last seen ${s:-?}"
}

# monitor_pid ID: from the sandbox's state.json.
monitor_pid () {
  jget 'd["monitor_pid"]' "$(cat "$SBX_ROOT/sandboxes/$1/state.json")"
}

# container_pid RUNTIME ID: the host pid the runtime reports for the
# sandbox (runc: its init; runsc: the gVisor sandbox process).
container_pid () {
  local rt=$1
  "$rt" --root "$SBX_RUN_ROOT/runtime/$rt" state "$2" | jpipe 'd["pid"]'
}

# --- per-test root and leak check ---------------------------------------------

# Network objects of any sbx root, by name: namespaces (ip's and sbx's),
# links, sbx's leases and its nftables chains, sets and counters.
_sbx_net_names () {
  { ip netns list 2>/dev/null | awk '{print "netns " $1}'
    ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print "link " $2}'
    ls -A /run/sbx/netns 2>/dev/null | sed 's/^/sbx netns /'
    ls -A /run/sbx/leases 2>/dev/null | sed 's/^/sbx lease /'
    nft -a list table inet sbx 2>/dev/null | awk '$1 == "chain" || $1 == "set" || $1 == "counter" { print "nft " $1 " " $2 }' \
      | grep -- '-'
  } | grep -i 'sbx\|sb-\|sandbox-' | sort
}

# The sbx.conf of every test: resolvers and an opened private range that
# only the network tests' own hosts answer (network.bats), never a real one.
sbx_write_conf () {
  cat >"$SBX_TEST_DIR/sbx.conf" <<-EOF2
	# written by tests/helpers/common.bash
	pool4 = 10.201.0.0/16
	dns = 198.51.100.53
	open = testsvc 10.99.1.0/24
	${1-}
	EOF2
  export SBX_CONF=$SBX_TEST_DIR/sbx.conf
}

sbx_setup () {
  SBX_TEST_DIR=$(mktemp -d /tmp/sbx-test.XXXXXX)
  export SBX_TEST_DIR
  export SBX_ROOT=$SBX_TEST_DIR/root
  export SBX_RUN_ROOT=$SBX_TEST_DIR/run
  # Everything sbx makes outside ROOT carries this tag (DESIGN.md section 3).
  SBX_TAG=$(printf '%s' "$(realpath -m "$SBX_ROOT")" | sha256sum | cut -c1-8)
  export SBX_TAG
  sbx_write_conf
  _sbx_net_before=$(_sbx_net_names)
}

# Everything of this root that survived, one line each.
sbx_leaks () {
  local d=$SBX_TEST_DIR p c r
  # Mounts in this namespace, and in any process's namespace (monitors use a
  # private one).
  grep -F "$d" /proc/mounts 2>/dev/null | sed 's/^/mount: /'
  local ours
  ours=$(readlink /proc/self/ns/mnt)
  grep -lF "$d" /proc/[0-9]*/mountinfo 2>/dev/null | while read -r p; do
    p=${p#/proc/}
    p=${p%/mountinfo}
    [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$ours" ] && continue
    echo "mount namespace of pid $p ($(cat "/proc/$p/comm" 2>/dev/null)) holds a mount under $d"
  done
  find /proc/[0-9]*/cwd /proc/[0-9]*/root -maxdepth 0 \( -lname "$d" -o -lname "$d/*" \) -printf '%p -> %l\n' \
    2>/dev/null | sed 's/^/process /'
  for p in $(pgrep -x sbx-monitor); do
    if tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SBX_ROOT=$SBX_ROOT" \
      || tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | grep -qF "$d"; then
      echo "sbx-monitor $p of this root is alive"
    fi
  done
  # Loop devices on a sandbox's disk image: cleared with their mount, which
  # the kernel finishes a moment after the namespace holding it is gone.
  for r in 1 2 3 4 5 6 7 8 9 10; do
    losetup -l -n -O BACK-FILE 2>/dev/null | grep -qF "$d" || break
    sleep 0.2
  done
  losetup -l -n -O NAME,BACK-FILE 2>/dev/null | grep -F "$d" | sed 's/^/loop device: /'
  # Runtime containers (only where the state root exists: listing creates it).
  if [ -d "$SBX_RUN_ROOT/runtime/runc" ]; then
    runc --root "$SBX_RUN_ROOT/runtime/runc" list -q 2>/dev/null | sed 's/^/runc container: /'
  fi
  if [ -d "$SBX_RUN_ROOT/runtime/runsc" ]; then
    runsc --root "$SBX_RUN_ROOT/runtime/runsc" list -quiet 2>/dev/null | sed 's/^/runsc container: /'
  fi
  # Cgroups, in every v1 controller, the unified hierarchy, or v2's root.
  for c in /sys/fs/cgroup/sbx-"$SBX_TAG" /sys/fs/cgroup/*/sbx-"$SBX_TAG"; do
    [ -e "$c" ] && echo "cgroup: $c"
  done
  # Network objects that appeared during the test.
  comm -13 <(printf '%s\n' "$_sbx_net_before") <(_sbx_net_names) | grep . | sed 's/^/network: /'
  # Sandboxes gc should have removed, and their runtime directories.
  if [ -d "$SBX_ROOT/sandboxes" ]; then
    for c in "$SBX_ROOT"/sandboxes/* "$SBX_ROOT"/sandboxes/.[!.]*; do
      [ -e "$c" ] && echo "sandbox directory left after gc: $c"
    done
  fi
  if [ -d "$SBX_RUN_ROOT/sandboxes" ]; then
    for c in "$SBX_RUN_ROOT"/sandboxes/*; do
      [ -e "$c" ] && echo "run directory left after gc: $c"
    done
  fi
  return 0
}

# After a leak was reported: put the host back so the next tests start clean.
_sbx_force_cleanup () {
  local d=$SBX_TEST_DIR p c r id
  for p in $(find /proc/[0-9]*/cwd /proc/[0-9]*/root -maxdepth 0 \( -lname "$d" -o -lname "$d/*" \) 2>/dev/null); do
    p=${p#/proc/}
    kill -9 "${p%%/*}" 2>/dev/null
  done
  for p in $(pgrep -x sbx-monitor); do
    tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SBX_ROOT=$SBX_ROOT" && kill -9 "$p" 2>/dev/null
  done
  if [ -d "$SBX_RUN_ROOT/runtime/runc" ]; then
    for id in $(runc --root "$SBX_RUN_ROOT/runtime/runc" list -q 2>/dev/null); do
      runc --root "$SBX_RUN_ROOT/runtime/runc" delete -f "$id" >/dev/null 2>&1
    done
  fi
  if [ -d "$SBX_RUN_ROOT/runtime/runsc" ]; then
    for id in $(runsc --root "$SBX_RUN_ROOT/runtime/runsc" list -quiet 2>/dev/null); do
      runsc --root "$SBX_RUN_ROOT/runtime/runsc" delete -force "$id" >/dev/null 2>&1
    done
  fi
  sleep 0.2
  grep -F "$d" /proc/mounts | awk '{print $2}' | sort -r | while read -r c; do umount -l "$c" 2>/dev/null; done
  losetup -l -n -O NAME,BACK-FILE 2>/dev/null | grep -F "$d" | awk '{print $1}' | while read -r c; do
    losetup -d "$c" 2>/dev/null
  done
  for c in /sys/fs/cgroup/sbx-"$SBX_TAG" /sys/fs/cgroup/*/sbx-"$SBX_TAG"; do
    [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}

sbx_teardown () {
  [ -n "${SBX_TEST_DIR-}" ] && [ -d "$SBX_TEST_DIR" ] || return 0
  local out rc=0 id leaks
  # A test that failed half-way may leave sandboxes running: end them the
  # way a user would, then let gc do the rest.
  if [ -d "$SBX_ROOT/sandboxes" ]; then
    for id in $("$SBX_BIN" ls -q 2>/dev/null); do
      case $(state_of "$id" 2>/dev/null) in
        running | creating | terminating) "$SBX_BIN" terminate "$id" >/dev/null 2>&1 ;;
      esac
    done
  fi
  if ! out=$("$SBX_BIN" gc 2>&1); then
    echo "sbx gc failed: $out" >&2
    rc=1
  fi
  leaks=$(sbx_leaks)
  if [ -n "$leaks" ]; then
    printf 'LEAK after sbx gc (root %s, tag %s):\n%s\n' "$SBX_ROOT" "$SBX_TAG" "$leaks" >&2
    rc=1
    _sbx_force_cleanup
  fi
  if grep -qF "$SBX_TEST_DIR" /proc/mounts; then
    echo "leaving $SBX_TEST_DIR in place: still mounted" >&2
    return 1
  fi
  rm -rf --one-file-system "$SBX_TEST_DIR"
  return $rc
}

setup_file () {
  sbx_build_payload_tar
}

setup () {
  sbx_setup
}

teardown () {
  sbx_teardown
}
