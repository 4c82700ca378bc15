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

# podman's default capability set (DESIGN.md section 6): not NET_RAW (bit
# 13), MKNOD (27) or AUDIT_WRITE (29).
SBX_DEFAULT_CAPS=00000000800405fb

# Debian's python3 (CI installs it); only the standard library is used.
if [ -x /usr/bin/python3 ]; then
  PYTHON=/usr/bin/python3
else
  PYTHON=python3
fi

# --- tools --------------------------------------------------------------------

# What the helpers below run. A missing one must not weaken a check quietly
# (`for p in $(pgrep ...)` over nothing, `pgrep ... || return 0` taken as "no
# such process"), so a file that loads this one refuses to run without them.
SBX_TEST_TOOLS="$PYTHON pgrep pkill ip ss nft flock awk sed grep find tar comm sort cut tr seq sha256sum realpath mktemp
readlink stat umount"

# require_tools TOOL...: fails, naming each missing one (never a skip: a
# test's tools are installed by contrib/setup-debian.sh).
require_tools () {
  local t missing=
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
  done
  [ -z "$missing" ] && return 0
  printf 'missing tools:%s (contrib/setup-debian.sh installs them): refusing to run\n' "$missing" >&2
  return 1
}

# At load time: `load` ends the file's run with this failure.
# shellcheck disable=SC2086
require_tools $SBX_TEST_TOOLS || return 1
# The standard library only: no site packages, no environment.
py () {
  "$PYTHON" -I -S "$@"
}

sbx () {
  "$SBX_BIN" "$@"
}

# --- skips ----------------------------------------------------------------

# SBX_TEST_STRICT=1 (CI) turns every skip into a failure (skip.bash).
# shellcheck source=skip.bash
source "${BASH_SOURCE[0]%/*}/skip.bash"
# sbx_pids, _sbx_net_names and the leak scan.
# shellcheck source=leaks.bash
source "${BASH_SOURCE[0]%/*}/leaks.bash"

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
# see layer-internal.h, with this root's SBX_ROOT) has ended. Before a test
# writes a layer's pending mark. Other roots' sbx processes (tests running
# in parallel) do not count.
sbx_wait_settled () {
  local i p pids busy
  for i in $(seq 500); do
    pids=$(sbx_pids sbx) || return
    busy=
    for p in $pids; do
      tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SBX_ROOT=$SBX_ROOT" && busy=1
    done
    [ -z "$busy" ] && return 0
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

# sbx_wait_teardowns: waits until no sandbox of this test's root is still
# tearing down (sbx run returns as soon as its command's status is known and
# the monitor ends the sandbox, and removes it with --rm, afterwards). Each
# monitor holds a lock on RUN/ending/ID until its teardown is over.
sbx_wait_teardowns () {
  local f fd
  for f in "$SBX_RUN_ROOT"/ending/*; do
    # Opened without creating it (flock FILE would): one gone is over.
    { exec {fd}<"$f"; } 2>/dev/null || continue
    timeout 60 flock -s "$fd" || { exec {fd}<&-; fail "a teardown ($f) is still under way after 60 s"; return; }
    exec {fd}<&-
  done
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

# --- test networks ---------------------------------------------------------------

# Every network a test puts on a link or routes to is picked here at run
# time, never written into a test: a fixed range can be this host's own
# (on some hosts the uplink is 192.0.2.0/24, which once made network.bats
# take the route to the host's gateway). tests/helpers/netpick.py takes the
# first candidate that no host route (but the default and sbx's sandbox
# links), address, resolver or gateway covers and that `ip route get` sends
# to the default route; none free is a failure, never a host route touched.
# The picks are made once per file (BATS_FILE_TMPDIR) and exported:
#   SBX_NET_POOL4  sbx.conf's pool4 (sandboxes' gateways go on host links)
#   SBX_NET_POOL6  pool6, for the files that turn IPv6 on
#   SBX_NET_PRIV4  a private /16 "inside the company": its x.x.1.0/24 is the
#                  operator-opened range (sbx.conf `open = testsvc`)
#   SBX_NET_INET4, SBX_NET_INET6  "the internet": public to sbx's egress
#   SBX_NET_LINK4, SBX_NET_LINK6  the veth between the host and a test namespace
# The resolver every test's sbx.conf names is a loopback address nothing
# answers on (SBX_NET_DNS): a sandbox's lookup stays on this host.
SBX_NET_CANDIDATES=(
  SBX_NET_POOL4=16:10.201.0.0/16,10.204.0.0/14
  SBX_NET_POOL6=64:fd5b:5b::/64,fd5b:5c::/56
  SBX_NET_PRIV4=16:10.99.0.0/16,10.96.0.0/14
  SBX_NET_INET4=24:198.51.100.0/24,203.0.113.0/24,198.18.100.0/22
  SBX_NET_INET6=64:2001:db8:100::/56
  SBX_NET_LINK4=30:198.19.255.0/24
  SBX_NET_LINK6=64:2001:db8:ffff::/64,2001:db8:fff0::/60
)
SBX_NET_DNS=127.0.53.53

sbx_pick_test_nets () {
  local f=$BATS_FILE_TMPDIR/test-nets out k v
  if [ ! -s "$f" ]; then
    out=$(ss -Hlntu 'sport = :53' | awk -v d="$SBX_NET_DNS:53" '$5 == "0.0.0.0:53" || $5 == "*:53" || $5 == "[::]:53" || $5 == d { print $5 }')
    [ -z "$out" ] || fail "something listens on port 53 for $SBX_NET_DNS here ($out): the tests' resolver would not stay on this host" || return
    out=$(py "$SBX_TESTS_DIR/helpers/netpick.py" "${SBX_NET_CANDIDATES[@]}") \
      || fail "no test networks clear of this host's routes and addresses" || return
    printf '%s\n' "$out" >"$f.new" && mv "$f.new" "$f"
  fi
  while IFS='=' read -r k v; do
    case $k in
      SBX_NET_*) export "$k=$v" ;;
    esac
  done <"$f"
  export SBX_NET_DNS
}

# net_host NET N: the Nth address of network NET (IPv4 or IPv6).
net_host () {
  py -c 'import ipaddress, sys; print(ipaddress.ip_network(sys.argv[1])[int(sys.argv[2])])' "$1" "$2"
}

# sbx_check_test_addr CIDR...: addresses a test must use as they are (the
# metadata address, say) are clear of this host's routes, or it fails.
sbx_check_test_addr () {
  local a args=()
  for a in "$@"; do
    args+=("fixed=fixed:$a")
  done
  py "$SBX_TESTS_DIR/helpers/netpick.py" "${args[@]}" >/dev/null
}

# Serialises picking networks and putting them on links between concurrent
# runs on one host: hold it from sbx_pick_test_nets until the routes exist.
sbx_net_lock () {
  exec {_sbx_net_lock_fd}>/run/sbx-tests-net.lock
  flock -w 60 "$_sbx_net_lock_fd" || fail "could not take /run/sbx-tests-net.lock in 60 s"
}

sbx_net_unlock () {
  [ -n "${_sbx_net_lock_fd-}" ] && exec {_sbx_net_lock_fd}>&-
  _sbx_net_lock_fd=
  return 0
}

# --- the resolver guard ------------------------------------------------------------

# Test traffic goes to loopback and to test hosts in namespaces the tests
# made, nowhere else; a DNS query is the easy one to send by accident (a
# library's reverse lookup, a sandbox resolver whose upstream is routed out).
# Each test runs in a cgroup of its own (cgroup v2; the `unified` one of a
# hybrid host), and table inet sxt-guard-PID counts and drops every packet to
# port 53 that a process of that cgroup sends out of any link but loopback,
# the test namespaces' (sx*) and sbx's sandboxes' (sbx*): the test itself,
# what it runs, and the monitors of its sandboxes, whose resolvers forward
# from this namespace. It also counts and drops queries forwarded from a
# test namespace or a sandbox to such a link (these carry no cgroup: on a
# shared host another run's may show here). sbx_teardown fails the test
# when a counter moved.

_sbx_cg2_root () {
  if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
    echo /sys/fs/cgroup
  elif [ -d /sys/fs/cgroup/unified ] && [ "$(stat -fc %T /sys/fs/cgroup/unified)" = cgroup2fs ]; then
    echo /sys/fs/cgroup/unified
  else
    return 1
  fi
}

sbx_guard_start () {
  local root rel
  root=$(_sbx_cg2_root) || fail "no cgroup v2 hierarchy: the resolver guard cannot tell a test's processes" || return
  SBX_GUARD=sxt-guard-$BASHPID
  _sbx_guard_cg=$root/$SBX_GUARD
  rel=${_sbx_guard_cg#/sys/fs/cgroup/}
  _sbx_guard_prev=$(awk -F: '$1 == "0" { print $3 }' "/proc/$BASHPID/cgroup")
  mkdir -p "$_sbx_guard_cg" && echo "$BASHPID" >"$_sbx_guard_cg/cgroup.procs" \
    || fail "could not move the test into cgroup $_sbx_guard_cg" || return
  nft -f - <<-EOF || fail "could not install table inet $SBX_GUARD" || return
	table inet $SBX_GUARD {
	  counter sent {}
	  counter forwarded {}
	  chain out {
	    type filter hook output priority 100; policy accept;
	    socket cgroupv2 level 1 "$rel" oifname != "lo" oifname != "sx*" oifname != "sbx*" meta l4proto { tcp, udp } th dport 53 counter name sent log prefix "$SBX_GUARD sent: " drop
	  }
	  chain relayed {
	    type filter hook forward priority 100; policy accept;
	    iifname "sx*" oifname != "sx*" oifname != "sbx*" meta l4proto { tcp, udp } th dport 53 counter name forwarded log prefix "$SBX_GUARD forwarded: " drop
	    iifname "sbx*" oifname != "sx*" oifname != "sbx*" meta l4proto { tcp, udp } th dport 53 counter name forwarded log prefix "$SBX_GUARD forwarded: " drop
	  }
	}
	EOF
  export SBX_GUARD
}

# _sbx_guard_count NAME: packets counted by the guard's counter NAME.
_sbx_guard_count () {
  local out
  out=$(nft list counter inet "$SBX_GUARD" "$1") || return
  out=$(printf '%s\n' "$out" | awk '$1 == "packets" { print $2 }')
  [ -n "$out" ] || return 1
  echo "$out"
}

# sbx_guard_check: fails, saying what moved, when a test process sent a DNS
# query out of this host (or one was forwarded out of a test namespace).
sbx_guard_check () {
  [ -n "${SBX_GUARD-}" ] || return 0
  local sent fwd
  sent=$(_sbx_guard_count sent) && fwd=$(_sbx_guard_count forwarded) \
    || fail "cannot read the counters of table inet $SBX_GUARD" || return
  [ "$sent" = 0 ] && [ "$fwd" = 0 ] && return 0
  printf 'DNS QUERY LEFT THE TEST NAMESPACES: %s packet(s) to port 53 sent by this test, %s forwarded from a test namespace or sandbox (dropped by table inet %s; dmesg names them under "%s")\n' \
    "$sent" "$fwd" "$SBX_GUARD" "$SBX_GUARD" >&2
  return 1
}

sbx_guard_reset () {
  nft reset counters table inet "$SBX_GUARD" >/dev/null
}

# sbx_guard_off REASON: the one test that must reach the world (debian.bats:
# debootstrap and apt from the distribution's mirror) says why, visibly.
sbx_guard_off () {
  echo "# the resolver guard is off for this test: $*" >&3
  _sbx_guard_stop
}

# Removes the table and the cgroup; processes the test left in it (it had
# started them, they outlived sbx_teardown) are reported and killed.
_sbx_guard_stop () {
  [ -n "${SBX_GUARD-}" ] || return 0
  local rc=0 p
  nft delete table inet "$SBX_GUARD" 2>/dev/null
  echo "$BASHPID" >"$(_sbx_cg2_root)${_sbx_guard_prev%/}/cgroup.procs" || rc=1
  local i
  # A process killed just now (teardown's kill of a listener) takes a moment.
  for i in $(seq 40); do
    [ -n "$(cat "$_sbx_guard_cg/cgroup.procs" 2>/dev/null)" ] || break
    sleep 0.05
  done
  for p in $(cat "$_sbx_guard_cg/cgroup.procs" 2>/dev/null); do
    echo "LEAK: process $p ($(cat "/proc/$p/comm" 2>/dev/null)) the test started is still running" >&2
    kill -9 "$p" 2>/dev/null
    rc=1
  done
  for i in $(seq 50); do
    rmdir "$_sbx_guard_cg" 2>/dev/null && break
    sleep 0.1
  done
  [ ! -d "$_sbx_guard_cg" ] || { echo "cgroup $_sbx_guard_cg is left" >&2; rc=1; }
  SBX_GUARD=
  return $rc
}

# --- per-test root and leak check ---------------------------------------------

# The sbx.conf of every test: resolvers and an opened private range that
# only the network tests' own hosts answer (network.bats), never a real one.
sbx_write_conf () {
  sbx_pick_test_nets || return
  local opened
  opened=$(py -c 'import ipaddress, sys; print(list(ipaddress.ip_network(sys.argv[1]).subnets(new_prefix=24))[1])' \
    "$SBX_NET_PRIV4")
  cat >"$SBX_TEST_DIR/sbx.conf" <<-EOF2
	# written by tests/helpers/common.bash
	pool4 = $SBX_NET_POOL4
	dns = ${SBX_TEST_DNS:-$SBX_NET_DNS}
	open = testsvc $opened
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
  sbx_write_conf || return
  _sbx_net_before=$(_sbx_net_names)
  sbx_guard_start
}

# Everything of this root that survived, one line each (leaks.bash, run as
# a program of its own: bats traces every command of a test's shell, which
# made this scan take seconds a test under load).
sbx_leaks () {
  _SBX_NET_BEFORE=$_sbx_net_before SBX_TEST_DIR=$SBX_TEST_DIR SBX_ROOT=$SBX_ROOT SBX_RUN_ROOT=$SBX_RUN_ROOT SBX_TAG=$SBX_TAG \
    bash "$SBX_TESTS_DIR/helpers/leaks.bash"
}

# After a leak was reported: put the host back so the next tests start clean.
_sbx_force_cleanup () {
  local d=$SBX_TEST_DIR p c r id
  for p in $(find /proc/[0-9]*/cwd /proc/[0-9]*/root -maxdepth 0 \( -lname "$d" -o -lname "$d/*" \) 2>/dev/null); do
    p=${p#/proc/}
    kill -9 "${p%%/*}" 2>/dev/null
  done
  for p in $(sbx_pids sbx-monitor); do
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
  [ -n "${SBX_TEST_DIR-}" ] && [ -d "$SBX_TEST_DIR" ] || { _sbx_guard_stop; return; }
  local out rc=0 id leaks
  # A test that failed half-way may leave sandboxes running: end them the
  # way a user would, then let gc do the rest.
  # Warm pools keep their parked sandboxes: a test that failed half-way
  # may leave one.
  for id in $("$SBX_BIN" pool ls -q 2>/dev/null); do
    "$SBX_BIN" pool rm "$id" >/dev/null 2>&1
  done
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
  sbx_guard_check || rc=1
  _sbx_guard_stop || rc=1
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
