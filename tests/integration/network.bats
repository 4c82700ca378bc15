#!/usr/bin/env bats
# Network (DESIGN.md section 5): namespaces, egress rules, DNS, `sbx net`,
# exposed ports, on runc and runsc, against the tests' own hosts only.
#
# The hosts live in a namespace this file makes, behind a veth pair from the
# host: "the internet" (a public range, 198.51.100.0/24 and
# 2001:db8:100::/64 where the host leaves them free), "a private service"
# PRIVATE, an operator-opened one OPENED (sbx.conf `open`), "the metadata
# service" 169.254.169.254; the resolver's upstream is a DNS server there,
# DNS, set in the test sbx.conf. Every range is picked at run time clear of
# the host's routes and addresses (sbx_pick_test_nets); before anything is
# sent, every test address must route into that namespace, or the file
# stops. The namespace has no default route: it answers the host's side of
# its link and the sandboxes' pools, and reaches nothing else.

load ../helpers/common
load ../helpers/testhosts

METADATA=169.254.169.254
METADATA6=fd00:ec2::254

# The file's names and addresses, from the networks picked for it.
net_vars () {
  sbx_pick_test_nets || return
  NS=sxt-inet-$(printf '%s' "$BATS_FILE_TMPDIR" | sha256sum | cut -c1-6)
  HOST_IF=sxt-h${NS#sxt-inet-}
  NS_IF=sxt-n${NS#sxt-inet-}
  local v
  v=$(py - "$SBX_NET_INET4" "$SBX_NET_INET6" "$SBX_NET_PRIV4" "$SBX_NET_LINK4" "$SBX_NET_LINK6" <<-'EOF'
	import ipaddress, sys
	i4, i6, p4, l4, l6 = (ipaddress.ip_network(a) for a in sys.argv[1:])
	print("INET=%s INET2=%s DNS=%s INET6=%s INET6_2=%s PRIVATE=%s OPENED=%s LINK_HOST=%s LINK_NS=%s LINK_HOST6=%s LINK_NS6=%s"
	      % (i4[10], i4[20], i4[53], i6[0x10], i6[0x20], p4[10], p4[256 + 10], l4[1], l4[2], l6[1], l6[2]))
	EOF
  ) || return
  local kv
  for kv in $v; do
    printf -v "${kv%%=*}" '%s' "${kv#*=}"
  done
  SBX_TEST_DNS=$DNS
}

setup_file () {
  sbx_build_payload_tar
  sbx_net_lock || return
  local rc=0
  net_setup || rc=$?
  sbx_net_unlock
  [ $rc -eq 0 ] || return $rc
  testnet_start --dns "$DNS" --name "inet.test=$INET,$INET6" \
    $INET $INET2 $PRIVATE $OPENED $METADATA $INET6 $INET6_2 $METADATA6
}

net_setup () {
  net_vars || return
  # The two addresses that are what they are: no host route may cover them.
  sbx_check_test_addr "$METADATA/32" "$METADATA6/128" || return
  net_down
  net_link_up
  local a
  for a in $INET $INET2 $DNS $PRIVATE $OPENED $METADATA; do
    ip -n "$NS" addr add "$a/32" dev lo
  done
  ip -n "$NS" -6 addr add "$INET6/128" dev lo nodad
  ip -n "$NS" -6 addr add "$INET6_2/128" dev lo nodad
  ip -n "$NS" -6 addr add "$METADATA6/128" dev lo nodad
  ip route add "$SBX_NET_INET4" via "$LINK_NS" dev "$HOST_IF"
  ip route add "$SBX_NET_PRIV4" via "$LINK_NS" dev "$HOST_IF"
  ip route add "$METADATA/32" via "$LINK_NS" dev "$HOST_IF"
  ip -6 route add "$SBX_NET_INET6" via "$LINK_NS6" dev "$HOST_IF"
  ip -6 route add "$METADATA6/128" via "$LINK_NS6" dev "$HOST_IF"
  for a in $INET $INET2 $DNS $PRIVATE $OPENED $METADATA $INET6 $INET6_2 $METADATA6; do
    route_ok "$a" || { net_down; return 1; }
  done
}

teardown_file () {
  net_vars
  net_down
}

setup () {
  net_vars || return
  sbx_setup
  sbx_write_conf "pool6 = $SBX_NET_POOL6"
  sbx_import_payload
}

teardown () {
  [ -n "${HOST_LISTENER-}" ] && kill "$HOST_LISTENER" 2>/dev/null
  sbx_teardown
}

udp_echo () {
  in_sb "$1" "sbx-testpayload udp $2 7 ping"
}

resolves () {
  in_sb "$1" "nslookup inet.test"
}

# --- the default: the internet --------------------------------------------------

open_mode () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload)
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["network"]["mode"]')" open "mode"
  local addr gw
  addr=$(jget 'd["network"]["address"]')
  gw=$(jget 'd["network"]["gateway"]')
  expect_eq "$(py -c 'import ipaddress, sys; print(ipaddress.ip_address(sys.argv[1]) in ipaddress.ip_network(sys.argv[2]))' \
    "$addr" "$SBX_NET_POOL4")" True "the address $addr is in the pool $SBX_NET_POOL4"
  reaches "$id" "$INET"
  reaches "$id" "$INET2"
  reaches "$id" "[$INET6]"
  udp_echo "$id" "$INET"
  expect_status 0
  expect_eq "$output" "echo from $INET: ping" "udp"
  resolves "$id"
  expect_status 0
  expect_contains "$output" "$INET"
  # The operator opened OPENED's /24: reachable; the rest of PRIVATE's is not.
  reaches "$id" "$OPENED"
  refused "$id" "$PRIVATE"
  refused "$id" "$METADATA"
  # IPv6 gets the same policy: AWS's IPv6 metadata address is refused.
  refused "$id" "$METADATA6"
  udp_echo "$id" "$INET6"
  expect_status 0
  expect_eq "$output" "echo from $INET6: ping" "udp over ipv6"
  # The host itself: neither its gateway address nor its others (a port of
  # the kernel's choosing: another run on this host may hold any fixed one).
  "$PYTHON" -I -S -c 'import socket,sys
s=socket.socket(); s.bind(("0.0.0.0", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c,_=s.accept(); c.sendall(b"host\n"); c.close()' >"$SBX_TEST_DIR/host-port" &
  HOST_LISTENER=$!
  local port= i
  for i in $(seq 50); do
    port=$(cat "$SBX_TEST_DIR/host-port")
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || fail "the host listener did not start"
  refused "$id" "$gw" "$port"
  refused "$id" "$LINK_HOST" "$port"
  # The sandbox's interfaces: loopback and eth0.
  in_sb "$id" "ls /sys/class/net | sort | tr '\n' ' '"
  expect_eq "$output" "eth0 lo " "interfaces"
  kill "$HOST_LISTENER"
  HOST_LISTENER=
  sbx terminate "$id" >/dev/null
}

@test "network: the default reaches the internet (tcp, udp, ipv6, dns), never private, metadata or host (runc)" {
  open_mode runc
}

@test "network: the default reaches the internet (tcp, udp, ipv6, dns), never private, metadata or host (runsc)" {
  open_mode runsc
}

# Without CAP_NET_RAW, ping is an ICMP datagram socket (iputils' ping falls
# back to one; busybox's does not, hence the payload's).
@test "network: icmp goes where tcp goes (runc)" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload)
  in_sb "$id" "sbx-testpayload ping $INET"
  expect_status 0
  in_sb "$id" "sbx-testpayload ping $INET6"
  expect_status 0
  in_sb "$id" "sbx-testpayload ping $METADATA"
  [ "$status" -ne 0 ] || fail "ping reached the metadata address: $output"
  in_sb "$id" "sbx-testpayload ping $PRIVATE"
  [ "$status" -ne 0 ] || fail "ping reached a private address: $output"
}

# gVisor runs without raw sockets (--net-raw is off), and its host network
# stack opens no ICMP datagram sockets either: nothing in a runsc sandbox
# can send ICMP at all, to its gateway, an allowed destination or any other,
# nor forge a source.
@test "network: no icmp leaves a runsc sandbox (no raw sockets)" {
  require_runtime runsc
  local id gw
  id=$(sbx create --image payload)
  gw=$(sbx --json status "$id" | jpipe 'd["network"]["gateway"]')
  in_sb "$id" "ping -c 1 -W 2 $INET"
  [ "$status" -ne 0 ] || fail "ping worked under runsc: $output"
  expect_contains "$stderr" "raw socket"
  in_sb "$id" "sbx-testpayload ping $gw"
  expect_contains "$output" "ping: denied (EAFNOSUPPORT"
  in_sb "$id" "sbx-testpayload ping $INET"
  expect_contains "$output" "ping: denied (EAFNOSUPPORT"
  in_sb "$id" "sbx-testpayload rawudp 203.0.113.99 $INET 9999 forged"
  expect_contains "$output" "rawudp: denied (EAFNOSUPPORT"
  reaches "$id" "$INET"
}

# The host's resolver on its own loopback, out of the sandbox's reach: the
# monitor's resolver forwards to it.
@test "network: dns works when the host's resolver is on its loopback" {
  require_runtime runc
  "$PYTHON" -I -S "$SBX_TESTS_DIR/helpers/testnet.py" --dns 127.0.0.153 --name "inet.test=$INET,$INET6" \
    >"$SBX_TEST_DIR/dns.out" 2>&1 &
  HOST_LISTENER=$!
  local i id
  for i in $(seq 50); do
    grep -q ready "$SBX_TEST_DIR/dns.out" && break
    sleep 0.1
  done
  grep -q ready "$SBX_TEST_DIR/dns.out" || fail "the host's test resolver did not start: $(cat "$SBX_TEST_DIR/dns.out")"
  sed -i 's/^dns = .*/dns = 127.0.0.153/' "$SBX_CONF"
  id=$(sbx create --runtime runc --image payload)
  resolves "$id"
  expect_status 0
  expect_contains "$output" "$INET"
}

# --- --allow ----------------------------------------------------------------------

allow_mode () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --allow "$INET/32" --allow "$INET6/128" --allow "$SBX_NET_PRIV4")
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["network"]["mode"]')" allow "mode"
  reaches "$id" "$INET"
  reaches "$id" "[$INET6]"
  refused "$id" "$INET2"
  refused "$id" "$INET6_2"
  refused "$id" "$METADATA6"
  # Allow-listing a private range does not open it; the operator's opening does.
  refused "$id" "$PRIVATE"
  reaches "$id" "$OPENED"
  refused "$id" "$METADATA"
  udp_echo "$id" "$INET2"
  [ "$status" -ne 0 ] || [ -z "$output" ] || fail "udp reached $INET2: $output"
  resolves "$id"
  expect_status 0
  expect_contains "$output" "$INET"
}

@test "network: --allow reaches only its destinations, plus dns (runc)" {
  allow_mode runc
}

@test "network: --allow reaches only its destinations, plus dns (runsc)" {
  allow_mode runsc
}

# --- --block-network ----------------------------------------------------------------

block_mode () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --block-network)
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["network"]["mode"]')" none "mode"
  in_sb "$id" "nc -w 2 $INET 80 </dev/null"
  [ "$status" -ne 0 ] || fail "reached $INET: $output"
  resolves "$id"
  [ "$status" -ne 0 ] || fail "resolved with no network: $output"
  in_sb "$id" "ls /sys/class/net 2>/dev/null | grep -v '^lo$' || true"
  expect_eq "$output" "" "interfaces but loopback"
  # Loopback works.
  in_sb "$id" "(echo hi | nc -l -p 9000 >/dev/null &) ; sleep 0.5; nc -w 2 127.0.0.1 9000 </dev/null; echo rc=\$?"
  expect_contains "$output" "rc=0"
  # ping without CAP_NET_RAW, on loopback (runc: the namespace it made gets
  # net.ipv4.ping_group_range too).
  if [ "$rt" = runc ]; then
    in_sb "$id" "cat /proc/sys/net/ipv4/ping_group_range; sbx-testpayload ping 127.0.0.1"
    expect_status 0
    expect_contains "$output" "ping: ok"
  fi
  # No interface to open later.
  expect_error INVALID_ARGUMENT net "$id" --open
}

@test "network: --block-network has loopback only, no dns (runc)" {
  block_mode runc
}

@test "network: --block-network has loopback only, no dns (runsc)" {
  block_mode runsc
}

# --- sbx net on a running sandbox ---------------------------------------------------

net_changes () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload)
  reaches "$id" "$INET2"
  # A long-lived connection, refused by the next rules: cut at once.
  sbx exec -d "$id" -- sh -c "(while true; do echo tick; sleep 0.2; done) | nc $INET2 81 >/tmp/held 2>&1; echo ended >>/tmp/held" >/dev/null
  sleep 1
  in_sb "$id" "grep -c 'got tick' /tmp/held"
  [ "$output" -ge 1 ] || fail "the long-lived connection did not run: $output"
  run --separate-stderr sbx --json net "$id" --allow "$INET/32"
  expect_status 0
  expect_eq "$(jget 'd["mode"]')" allow
  sleep 1.5
  in_sb "$id" "cat /tmp/held | tail -n 1"
  expect_eq "$output" ended "the refused connection"
  reaches "$id" "$INET"
  refused "$id" "$INET2"
  run --separate-stderr sbx net "$id" --block
  expect_status 0
  in_sb "$id" "nc -w 2 $INET 80 </dev/null"
  [ "$status" -ne 0 ] || fail "reached $INET under --block: $output"
  resolves "$id"
  [ "$status" -ne 0 ] || fail "resolved under --block: $output"
  run --separate-stderr sbx net "$id" --open
  expect_status 0
  reaches "$id" "$INET2"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["network"]["mode"]')" open
  # Bad input changes nothing.
  expect_error INVALID_ARGUMENT net "$id" --allow 198.051.100.10
  expect_error INVALID_ARGUMENT net "$id" --allow "$INET/32" --block
  expect_error INVALID_ARGUMENT net "$id"
  reaches "$id" "$INET2"
}

@test "network: sbx net --allow/--block/--open changes a running sandbox at once and cuts refused connections (runc)" {
  net_changes runc
}

@test "network: sbx net --allow/--block/--open changes a running sandbox at once and cuts refused connections (runsc)" {
  net_changes runsc
}

# --- sandbox to sandbox ---------------------------------------------------------------

@test "network: no sandbox reaches another" {
  require_runtime runc
  require_runtime runsc
  local a b addr
  a=$(sbx create --runtime runc --image payload)
  b=$(sbx create --runtime runsc --image payload)
  sbx exec -d "$a" -- sh -c 'while true; do echo hi | nc -l -p 8080; done' >/dev/null
  sleep 0.5
  addr=$(sbx --json status "$a" | jpipe 'd["network"]["address"]')
  refused "$b" "$addr" 8080
  addr=$(sbx --json status "$b" | jpipe 'd["network"]["address"]')
  refused "$a" "$addr" 8080
}

# --- forged sources, raw sockets, other sandboxes' resolvers ------------------------------

# udp_listen PORT: records every UDP datagram to PORT in the test namespace,
# IPv4 and IPv6, as "SOURCE DATA" lines in $SBX_TEST_DIR/udp.log.
udp_listen () {
  : >"$SBX_TEST_DIR/udp.log"
  ip netns exec "$NS" "$PYTHON" -I -S -c 'import select, socket, sys
socks = []
for fam, any in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((any, int(sys.argv[1])))
    socks.append(s)
out = open(sys.argv[2], "a", buffering=1)
out.write("ready\n")
while True:
    for s in select.select(socks, [], [])[0]:
        d, a = s.recvfrom(2048)
        out.write("%s %s\n" % (a[0], d.decode(errors="replace")))' "$1" "$SBX_TEST_DIR/udp.log" &
  HOST_LISTENER=$!
  local i
  for i in $(seq 100); do
    grep -q ready "$SBX_TEST_DIR/udp.log" && return 0
    sleep 0.05
  done
  fail "the UDP listener did not start"
}

# in_netns ID CMD...: CMD as the host's root (every capability) in the
# network namespace of sandbox ID: what a sandbox holding CAP_NET_RAW could
# send, through the same interface and rules.
in_netns () {
  local id=$1
  shift
  [ -e "/run/sbx/netns/$id" ] || fail "no namespace for $id"
  nsenter --net="/run/sbx/netns/$id" "$@"
}

@test "network: a runc sandbox has no raw socket, and its interface drops forged sources (ipv4, ipv6)" {
  require_runtime runc
  local a b a4 a6 b4 b6 src
  a=$(sbx create --runtime runc --image payload)
  b=$(sbx create --runtime runc --image payload)
  run --separate-stderr sbx --json status "$a"
  a4=$(jget 'd["network"]["address"]')
  a6=$(jget 'd["network"]["address6"]')
  run --separate-stderr sbx --json status "$b"
  b4=$(jget 'd["network"]["address"]')
  b6=$(jget 'd["network"]["address6"]')
  [ -n "$a6" ] && [ -n "$b6" ] || fail "no IPv6 addresses: $a6 $b6"
  udp_listen 9999
  # Without CAP_NET_RAW no raw socket opens, whatever the source.
  in_sb "$a" "sbx-testpayload rawudp $a4 $INET 9999 raw-in-sandbox"
  [ "$status" -ne 0 ] || fail "a raw socket opened in the sandbox: $output"
  expect_contains "$output" "rawudp: denied (EPERM"
  # With it, the sandbox's own addresses pass and every other is dropped on
  # the sandbox's interface: a reflection victim, a public address, the
  # other sandbox's addresses (which would make a service answer into it).
  in_netns "$a" "$SBX_TESTPAYLOAD" rawudp "$a4" "$INET" 9999 genuine4 >/dev/null || fail "rawudp from $a4"
  in_netns "$a" "$SBX_TESTPAYLOAD" rawudp "$a6" "$INET6" 9999 genuine6 >/dev/null || fail "rawudp from $a6"
  for src in 203.0.113.99 8.8.8.8 "$b4"; do
    in_netns "$a" "$SBX_TESTPAYLOAD" rawudp "$src" "$INET" 9999 "forged-from-$src" >/dev/null || fail "rawudp from $src"
  done
  for src in 2001:db8:100::99 "$b6"; do
    in_netns "$a" "$SBX_TESTPAYLOAD" rawudp "$src" "$INET6" 9999 "forged-from-$src" >/dev/null || fail "rawudp from $src"
  done
  # The echo service: a forged request from B's address would send the
  # answer into B.
  in_netns "$a" "$SBX_TESTPAYLOAD" rawudp "$b4" "$INET" 7 forged-echo >/dev/null || fail "rawudp to the echo service"
  sleep 1
  grep -q ' genuine4$' "$SBX_TEST_DIR/udp.log" && grep -q ' genuine6$' "$SBX_TEST_DIR/udp.log" \
    || fail "the sandbox's own addresses did not get through: $(cat "$SBX_TEST_DIR/udp.log")"
  ! grep -q forged "$SBX_TEST_DIR/udp.log" || fail "forged datagrams arrived: $(cat "$SBX_TEST_DIR/udp.log")"
  # Ordinary traffic of both is untouched.
  udp_echo "$b" "$INET"
  expect_eq "$output" "echo from $INET: ping" "udp from $b"
  reaches "$a" "[$INET6]"
  # The source check goes with the sandbox.
  nft list chain inet sbx source | grep -q "sbx${a#sb-}" || fail "no source check for $a"
  sbx terminate "$a" >/dev/null
  ! nft list chain inet sbx source | grep -q "sbx${a#sb-}" || fail "the source check of $a outlived it"
}

@test "network: ping works without CAP_NET_RAW (runc): to its gateway and out, not to another sandbox's gateway" {
  require_runtime runc
  local a b gw gw6 gwb
  a=$(sbx create --runtime runc --image payload)
  b=$(sbx create --runtime runc --image payload)
  run --separate-stderr sbx --json status "$a"
  gw=$(jget 'd["network"]["gateway"]')
  gw6=$(jget 'd["network"]["gateway6"]')
  gwb=$(sbx --json status "$b" | jpipe 'd["network"]["gateway"]')
  in_sb "$a" "cat /proc/sys/net/ipv4/ping_group_range"
  # Every group: the whole range, which the sandbox's user namespace shows
  # as its overflow ids (the pings below prove it).
  case "$(echo $output)" in
    "0 2147483647" | "65534 65534") ;;
    *) fail "ping_group_range: $output" ;;
  esac
  in_sb "$a" "sbx-testpayload caps"
  [ $((0x$(echo "$output" | awk '$1 == "CapEff:" {print $2}') >> 13 & 1)) -eq 0 ] || fail "CAP_NET_RAW held: $output"
  in_sb "$a" "sbx-testpayload ping $gw"
  expect_status 0
  in_sb "$a" "sbx-testpayload ping $gw6"
  expect_status 0
  in_sb "$a" "sbx-testpayload ping $INET"
  expect_status 0
  in_sb "$a" "sbx-testpayload ping $gwb"
  [ "$status" -ne 0 ] || fail "$a pinged the gateway of $b: $output"
  # busybox's ping knows only raw sockets: refused, as for any process
  # without CAP_NET_RAW.
  in_sb "$a" "ping -c 1 -W 2 $gw"
  [ "$status" -ne 0 ] || fail "a raw-socket ping worked: $output"
}


# The resolver of each sandbox listens on its gateway; the input rule lets
# a query reach only the gateway of the interface it came in by.
@test "network: a sandbox's resolver answers only its own sandbox" {
  require_runtime runc
  require_runtime runsc
  local a b c gwa gwb gwb6
  a=$(sbx create --runtime runc --image payload)
  b=$(sbx create --runtime runc --image payload)
  c=$(sbx create --runtime runsc --image payload)
  gwa=$(sbx --json status "$a" | jpipe 'd["network"]["gateway"]')
  run --separate-stderr sbx --json status "$b"
  gwb=$(jget 'd["network"]["gateway"]')
  gwb6=$(jget 'd["network"]["gateway6"]')
  in_sb "$a" "nslookup inet.test $gwa"
  expect_status 0
  expect_contains "$output" "$INET"
  in_sb "$b" "nslookup inet.test $gwb"
  expect_status 0
  expect_contains "$output" "$INET"
  local id
  for id in "$a" "$c"; do
    in_sb "$id" "nslookup inet.test $gwb"
    [ "$status" -ne 0 ] || fail "$id used the resolver of $b: $output"
    expect_not_contains "$output" "$INET"
    in_sb "$id" "nslookup inet.test $gwb6"
    [ "$status" -ne 0 ] || fail "$id used the IPv6 resolver of $b: $output"
    in_sb "$id" "nc -w 3 $gwb 53 </dev/null; echo rc=\$?"
    expect_contains "$output" "rc=1"
  done
}

# --- bad input ------------------------------------------------------------------------

@test "network: a CIDR that does not parse exactly is INVALID_ARGUMENT, and nothing is made" {
  local c
  for c in 010.0.0.1/32 1.2.3.4/33 " 1.2.3.4/32" "1.2.3.4/32 " 1.2.3.4/24 1.2.3 ::1/129 "fe80::1%eth0" 1.2.3.4/ /8 0x1.2.3.4; do
    expect_error INVALID_ARGUMENT create --image payload --allow "$c"
  done
  expect_error INVALID_ARGUMENT create --image payload --block-network --allow "$SBX_NET_INET4"
  expect_error INVALID_ARGUMENT create --image payload --port 0
  run sbx ls -q
  expect_eq "$output" "" "sandboxes"
}

@test "network: an IPv6 --allow where IPv6 is off is INVALID_ARGUMENT" {
  sbx_write_conf
  expect_error INVALID_ARGUMENT create --image payload --allow "$SBX_NET_INET6"
  expect_contains "$output" "IPv6 is off"
}

@test "network: a broken sbx.conf is INVALID_ARGUMENT naming the line" {
  sbx_write_conf "pool4 = 10.0.0.0/33"
  expect_error INVALID_ARGUMENT create --image payload
  expect_contains "$output" "sbx.conf:"
}

# --- observe mode ----------------------------------------------------------------------

@test "network: observe mode lets private ranges through and counts them; metadata stays refused" {
  require_runtime runc
  sbx_write_conf "private_policy = observe"
  local id
  id=$(sbx create --runtime runc --image payload)
  reaches "$id" "$PRIVATE"
  refused "$id" "$METADATA"
  local n i
  for i in $(seq 30); do
    n=$(sbx --json status "$id" | jpipe 'd["network"]["private_connections_seen"]')
    [ "$n" -ge 1 ] && break
    sleep 0.2
  done
  [ "$n" -ge 1 ] || fail "observed connections: $n"
  run sbx status "$id"
  expect_contains "$output" "private ranges (observe mode)"
  sbx terminate "$id" >/dev/null
  # The next sandbox under the default policy puts the drop back.
  sbx_write_conf "pool6 = $SBX_NET_POOL6"
  id=$(sbx create --runtime runc --image payload)
  refused "$id" "$PRIVATE"
}

# --- exposed ports -------------------------------------------------------------------------

# http URL [TOKEN] [EXTRA]: status code and body, one line each.
http () {
  "$PYTHON" -I -S - "$@" <<'EOF'
import sys, urllib.request, urllib.error
url = sys.argv[1]
req = urllib.request.Request(url)
if len(sys.argv) > 2 and sys.argv[2]:
    req.add_header("Authorization", "Bearer " + sys.argv[2])
try:
    with urllib.request.urlopen(req, timeout=5) as r:
        print(r.status)
        print(r.read().decode().strip())
except urllib.error.HTTPError as e:
    print(e.code)
EOF
}

serve_http () {
  sbx exec "$1" -- sh -c 'mkdir -p /www && echo "hello from the sandbox" >/www/index.html'
  sbx exec -d "$1" -- httpd -f -p "${2:-127.0.0.1:8080}" -h /www >/dev/null
  sleep 0.5
}

expose_token () {
  local rt=$1 id url token
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload)
  serve_http "$id"
  run --separate-stderr sbx --json expose "$id" 8080
  expect_status 0
  url=$(jget 'd["url"]')
  expect_contains "$url" "http://127.0.0.1:"
  [ -f "$SBX_ROOT/token" ] || fail "no token file"
  expect_eq "$(stat -c %a "$SBX_ROOT/token")" 600 "token mode"
  token=$(cat "$SBX_ROOT/token")
  run http "$url"
  expect_eq "${lines[0]}" 401 "without the token"
  run http "$url" wrong-token
  expect_eq "${lines[0]}" 401 "with a wrong token"
  run http "${url}?token=$token"
  expect_eq "${lines[0]}" 401 "token in the query string"
  run http "$url" "$token"
  expect_eq "${lines[0]}" 200 "with the token"
  expect_eq "${lines[1]}" "hello from the sandbox"
  run --separate-stderr sbx --json urls "$id"
  expect_status 0
  expect_eq "$(jget 'd["urls"][0]["url"]')" "$url"
  expect_eq "$(jget 'd["urls"][0]["port"]')" 8080
  # The token never reaches the sandbox (httpd logs nothing, so ask the log
  # of the monitor instead: it never holds it either).
  run sbx logs "$id"
  expect_not_contains "$output" "$token"
}

@test "network: an exposed port answers 401 without the token and 200 with it (runc)" {
  expose_token runc
}

@test "network: an exposed port answers 401 without the token and 200 with it (runsc)" {
  expose_token runsc
}

@test "network: --port at create and --public" {
  require_runtime runc
  local id url
  id=$(sbx create --runtime runc --image payload --port 8080 --public)
  serve_http "$id" 0.0.0.0:8080
  url=$(sbx --json urls "$id" | jpipe 'd["urls"][0]["url"]')
  run http "$url"
  expect_eq "${lines[0]}" 200 "public, without a token"
  expect_eq "${lines[1]}" "hello from the sandbox"
  run sbx urls "$id"
  expect_contains "$output" "8080"
}

# Under runc the proxy enters the sandbox's namespace; under runsc, with no
# interface and no namespace of sbx's, the sandbox's init relays.
expose_blocked () {
  local rt=$1 id url token
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --block-network)
  serve_http "$id"
  head -c 2000000 /dev/urandom >"$SBX_TEST_DIR/big"
  sbx cp "$SBX_TEST_DIR/big" "$id:/www/big"
  url=$(sbx --json expose "$id" 8080 | jpipe 'd["url"]')
  token=$(cat "$SBX_ROOT/token")
  run http "$url" "$token"
  expect_eq "${lines[0]}" 200
  expect_eq "${lines[1]}" "hello from the sandbox"
  run http "$url"
  expect_eq "${lines[0]}" 401 "without the token"
  "$PYTHON" -I -S - "${url}big" "$token" "$SBX_TEST_DIR/big" <<'EOF2' || fail "2 MB through the tunnel differ"
import sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
with urllib.request.urlopen(req, timeout=20) as r:
    got = r.read()
sys.exit(0 if got == open(sys.argv[3], "rb").read() else 1)
EOF2
  # Nothing listens on 9999: 502.
  url=$(sbx --json expose "$id" 9999 | jpipe 'd["url"]')
  run http "$url" "$token"
  expect_eq "${lines[0]}" 502 "a port nothing listens on"
}

@test "network: a tunnel keeps working under --block-network (runc: the sandbox's namespace)" {
  expose_blocked runc
}

@test "network: a tunnel keeps working under --block-network (runsc: relayed by the sandbox's init)" {
  expose_blocked runsc
}

@test "network: expose and urls of a sandbox that is not running are SANDBOX_NOT_RUNNING" {
  local id
  id=$(sbx create --image payload)
  sbx terminate "$id" >/dev/null
  expect_error SANDBOX_NOT_RUNNING expose "$id" 8080
  expect_error SANDBOX_NOT_RUNNING urls "$id"
  expect_error SANDBOX_NOT_RUNNING net "$id" --block
  expect_error INVALID_ARGUMENT expose "$id" 70000
}

# --- crash and gc ----------------------------------------------------------------------------

@test "network: a monitor killed with SIGKILL leaves nothing after sbx gc" {
  require_runtime runc
  local id mp
  id=$(sbx create --runtime runc --image payload)
  [ -e "/run/sbx/netns/$id" ] || fail "no namespace for $id"
  mp=$(monitor_pid "$id")
  kill -9 "$mp"
  sleep 0.3
  run --separate-stderr sbx gc
  expect_status 0
  [ ! -e "/run/sbx/netns/$id" ] || fail "namespace left"
  [ ! -e "/run/sbx/leases/$id" ] || fail "lease left"
  ! ip link show "sbx${id#sb-}" 2>/dev/null || fail "veth left"
  ! nft list chain inet sbx "sandbox-$id" >/dev/null 2>&1 || fail "chain left"
  ! nft list chain inet sbx source 2>/dev/null | grep -q "sbx${id#sb-}" || fail "source check left"
}

@test "network: sbx info reports egress enforcement and the runsc stack" {
  run --separate-stderr sbx --json info
  expect_status 0
  expect_eq "$(jget 'd["egress_enforcement"]')" true
  expect_contains "$(jget 'd["runtimes"]["runsc"]["network"]')" "host stack"
  expect_eq "$(jget 'd["network"]["pool4"]')" "$SBX_NET_POOL4"
  local id
  id=$(sbx create --image payload)
  run sbx status "$id"
  expect_contains "$output" "net stack:  host"
}

# A host where sbx cannot install its rules: another process holds table
# inet sbx with the owner flag (tests/helpers/nft-owner.py), so nothing else
# may change it. A sandbox with a network is refused, never run open; one
# without needs no rules and still starts.
@test "network: where egress cannot be enforced, NETWORK_BLOCK_UNAVAILABLE, never an open sandbox" {
  require_runtime runc
  nft delete table inet sbx 2>/dev/null || true
  "$PYTHON" -I -S "$SBX_TESTS_DIR/helpers/nft-owner.py" >"$SBX_TEST_DIR/owner.out" 2>&1 &
  HOST_LISTENER=$!
  local i
  for i in $(seq 50); do
    grep -q ready "$SBX_TEST_DIR/owner.out" && break
    sleep 0.1
  done
  grep -q ready "$SBX_TEST_DIR/owner.out" || fail "could not hold the table: $(cat "$SBX_TEST_DIR/owner.out")"
  expect_error NETWORK_BLOCK_UNAVAILABLE create --runtime runc --image payload
  expect_error NETWORK_BLOCK_UNAVAILABLE create --runtime runc --image payload --allow "$INET/32"
  expect_error NETWORK_BLOCK_UNAVAILABLE create --image payload
  run sbx ls -q
  for i in $output; do
    expect_eq "$(state_of "$i")" failed "$i"
  done
  local id
  id=$(sbx create --runtime runc --image payload --block-network)
  expect_eq "$(state_of "$id")" running
  kill "$HOST_LISTENER"
  HOST_LISTENER=
  wait 2>/dev/null || true
  # The host can enforce again: a sandbox with a network starts.
  id=$(sbx create --runtime runc --image payload)
  reaches "$id" "$INET"
}

# What sbx made for sandboxes that share it (the table inet sbx, the bind
# mount of the namespace directory) goes with the last of them, at gc.
@test "network: with no sandbox left, gc leaves no table and no mount behind" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload)
  nft list table inet sbx >/dev/null || fail "no table while a sandbox runs"
  sbx terminate "$id" >/dev/null
  run --separate-stderr sbx gc
  expect_status 0
  if [ -z "$(ls -A /run/sbx/leases 2>/dev/null)" ]; then
    ! nft list table inet sbx >/dev/null 2>&1 || fail "table inet sbx left on an idle host"
    ! grep -q " /run/sbx/netns " /proc/mounts || fail "/run/sbx/netns still mounted on an idle host"
  fi
}
