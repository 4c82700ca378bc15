#!/usr/bin/env bats
# The resolver guard of tests/helpers/common.bash, proved without sending
# anything off this host: every packet these tests send goes to loopback or
# into a namespace this file makes. That namespace has two links from the
# host: one named like a test namespace's (sxg-*), which the guard lets
# through, and one named like nothing of the tests' (tgp-*), which stands
# for the host's uplink: a query routed out of it is what the guard must
# count, drop and fail the test for. A UDP and TCP listener on port 53 in
# the namespace writes down every packet that reaches it.

load ../helpers/common

guard_vars () {
  local h
  h=$(printf '%s' "$BATS_FILE_TMPDIR" | sha256sum | cut -c1-6)
  NS=sxt-guard-ns-$h
  OUT_IF=tgp-h$h
  OUT_NS_IF=tgp-n$h
  TEST_IF=sxg-h$h
  TEST_NS_IF=sxg-n$h
  local f=$BATS_FILE_TMPDIR/guard-nets
  if [ ! -s "$f" ]; then
    py "$SBX_TESTS_DIR/helpers/netpick.py" G_OUTLINK=30:198.19.254.0/24 G_TESTLINK=30:198.19.254.0/24 \
      G_ADDRS=30:198.18.200.0/22,203.0.113.0/24 >"$f" || { rm -f "$f"; fail "no networks for the guard's tests"; return; }
  fi
  local k v
  while IFS='=' read -r k v; do
    printf -v "$k" '%s' "$v"
  done <"$f"
  OUT_HOST=$(net_host "$G_OUTLINK" 1) && OUT_NS=$(net_host "$G_OUTLINK" 2) \
    && TEST_HOST=$(net_host "$G_TESTLINK" 1) && TEST_NS=$(net_host "$G_TESTLINK" 2) \
    && RESOLVER_OUT=$(net_host "$G_ADDRS" 1) && RESOLVER_TEST=$(net_host "$G_ADDRS" 2)
}

net_down () {
  if [ -f "$BATS_FILE_TMPDIR/listener.pid" ]; then
    kill "$(cat "$BATS_FILE_TMPDIR/listener.pid")" 2>/dev/null || true
    rm -f "$BATS_FILE_TMPDIR/listener.pid"
  fi
  ip link del "$OUT_IF" 2>/dev/null || true
  ip link del "$TEST_IF" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  return 0
}

# route_via ADDR IF: the host's route to ADDR leaves by IF.
route_via () {
  local r
  r=$(ip route get "$1" 2>&1)
  case $r in
    *" dev $2 "*) return 0 ;;
  esac
  fail "the route to $1 does not leave by $2 ($r): stopping before sending anything"
}

net_setup () {
  guard_vars || return
  net_down
  ip netns add "$NS"
  ip -n "$NS" link set lo up
  ip link add "$OUT_IF" type veth peer name "$OUT_NS_IF" netns "$NS"
  ip link add "$TEST_IF" type veth peer name "$TEST_NS_IF" netns "$NS"
  ip addr add "$OUT_HOST/30" dev "$OUT_IF"
  ip addr add "$TEST_HOST/30" dev "$TEST_IF"
  ip link set "$OUT_IF" up
  ip link set "$TEST_IF" up
  ip -n "$NS" addr add "$OUT_NS/30" dev "$OUT_NS_IF"
  ip -n "$NS" addr add "$TEST_NS/30" dev "$TEST_NS_IF"
  ip -n "$NS" link set "$OUT_NS_IF" up
  ip -n "$NS" link set "$TEST_NS_IF" up
  ip -n "$NS" addr add "$RESOLVER_OUT/32" dev lo
  ip -n "$NS" addr add "$RESOLVER_TEST/32" dev lo
  ip route add "$RESOLVER_OUT/32" via "$OUT_NS" dev "$OUT_IF"
  ip route add "$RESOLVER_TEST/32" via "$TEST_NS" dev "$TEST_IF"
  route_via "$RESOLVER_OUT" "$OUT_IF" && route_via "$RESOLVER_TEST" "$TEST_IF" || { net_down; return 1; }
}

setup_file () {
  sbx_build_payload_tar
  sbx_net_lock || return
  local rc=0
  net_setup || rc=$?
  sbx_net_unlock
  [ $rc -eq 0 ] || return $rc
  # Writes "udp ADDR" or "tcp ADDR" for each query that reaches it, with the
  # address it was sent to.
  ip netns exec "$NS" "$PYTHON" -I -S - "$RESOLVER_OUT" "$RESOLVER_TEST" >"$BATS_FILE_TMPDIR/listener.out" 2>&1 <<-'EOF' &
	import selectors, socket, sys
	sel = selectors.DefaultSelector()
	for a in sys.argv[1:]:
	    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	    u.bind((a, 53))
	    sel.register(u, selectors.EVENT_READ, ("udp", a))
	    t = socket.socket()
	    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	    t.bind((a, 53))
	    t.listen(8)
	    sel.register(t, selectors.EVENT_READ, ("tcp", a))
	print("ready", flush=True)
	while True:
	    for key, _ in sel.select():
	        kind, a = key.data
	        if kind == "udp":
	            key.fileobj.recvfrom(4096)
	        else:
	            key.fileobj.accept()[0].close()
	        print(kind, a, flush=True)
	EOF
  echo $! >"$BATS_FILE_TMPDIR/listener.pid"
  local i
  for i in $(seq 100); do
    grep -q ready "$BATS_FILE_TMPDIR/listener.out" && return 0
    sleep 0.05
  done
  net_down
  fail "the listener did not start: $(cat "$BATS_FILE_TMPDIR/listener.out")"
}

teardown_file () {
  guard_vars
  net_down
}

setup () {
  guard_vars || return
  sbx_setup
}

# query ADDR: one UDP packet and one TCP connection attempt to ADDR:53.
query () {
  py - "$1" <<-'EOF'
	import socket, sys
	u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	try:
	    u.sendto(b"\0\1\1\0\0\1\0\0\0\0\0\0\7invalid\0\0\1\0\1", (sys.argv[1], 53))
	except OSError:
	    pass
	try:
	    socket.create_connection((sys.argv[1], 53), timeout=1).close()
	except OSError:
	    pass
	EOF
}

# heard KIND ADDR: how many KIND queries to ADDR reached the listener.
heard () {
  sleep 0.3
  grep -cx "$1 $2" "$BATS_FILE_TMPDIR/listener.out" || true
}

@test "guard: a test's query out of a link that is not a test namespace's is counted, dropped, and fails the test" {
  local udp0 tcp0
  udp0=$(heard udp "$RESOLVER_OUT")
  tcp0=$(heard tcp "$RESOLVER_OUT")
  query "$RESOLVER_OUT"
  run sbx_guard_check
  expect_status 1
  expect_contains "$output" "DNS QUERY LEFT THE TEST NAMESPACES"
  expect_not_contains "$output" ": 0 packet(s) to port 53 sent by this test"
  expect_eq "$(heard udp "$RESOLVER_OUT")" "$udp0" "udp queries that got through"
  expect_eq "$(heard tcp "$RESOLVER_OUT")" "$tcp0" "tcp connections that got through"
  # What the teardown would have said; the test ends clean.
  sbx_guard_reset
  sbx_guard_check
}

@test "guard: loopback, a test namespace's link and a process outside the test are not counted" {
  local root udp0 tcp0
  query 127.0.0.1
  udp0=$(heard udp "$RESOLVER_TEST")
  query "$RESOLVER_TEST"
  expect_eq "$(heard udp "$RESOLVER_TEST")" "$((udp0 + 1))" "udp queries into the test namespace"
  # A process of someone else's (here: moved out of the test's cgroup)
  # sending out of the non-test link is none of the guard's business.
  root=$(_sbx_cg2_root)
  udp0=$(heard udp "$RESOLVER_OUT")
  tcp0=$(heard tcp "$RESOLVER_OUT")
  sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -I -S -c "
import socket, sys
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"x\", (sys.argv[1], 53))
socket.create_connection((sys.argv[1], 53), timeout=2).close()" "$3"' sh "$root" "$PYTHON" "$RESOLVER_OUT"
  expect_eq "$(heard udp "$RESOLVER_OUT")" "$((udp0 + 1))" "udp from outside the test"
  expect_eq "$(heard tcp "$RESOLVER_OUT")" "$((tcp0 + 1))" "tcp from outside the test"
  run sbx_guard_check
  expect_status 0
}

# The case that matters most: sbx's resolver runs in the sandbox's monitor,
# on the host side, and forwards to sbx.conf's upstream from there.
@test "guard: a sandbox's lookup that its monitor forwards out of a non-test link fails the test" {
  require_runtime runc
  local id udp0
  SBX_TEST_DNS=$RESOLVER_OUT sbx_write_conf
  sbx_import_payload
  id=$(sbx create --runtime runc --image payload)
  udp0=$(heard udp "$RESOLVER_OUT")
  run sbx exec "$id" -- nslookup example.invalid
  [ "$status" -ne 0 ] || fail "the lookup was answered: $output"
  run sbx_guard_check
  expect_status 1
  expect_contains "$output" "DNS QUERY LEFT THE TEST NAMESPACES"
  expect_eq "$(heard udp "$RESOLVER_OUT")" "$udp0" "queries that got through"
  sbx terminate "$id" >/dev/null
  sbx_guard_reset
  # Through a test namespace's link the same lookup is the tests' business.
  SBX_TEST_DNS=$RESOLVER_TEST sbx_write_conf
  id=$(sbx create --runtime runc --image payload)
  udp0=$(heard udp "$RESOLVER_TEST")
  run sbx exec "$id" -- nslookup example.invalid
  [ "$(heard udp "$RESOLVER_TEST")" -gt "$udp0" ] || fail "the monitor did not forward to $RESOLVER_TEST: $output; heard: $(cat "$BATS_FILE_TMPDIR/listener.out"); conf: $(cat "$SBX_CONF")"
  sbx_guard_check
}
