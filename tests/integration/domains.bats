#!/usr/bin/env bats
# Egress by domain name (DESIGN.md section 5, sbx-net(1)): --allow-domain on
# create and `sbx net`, on runc and runsc, against the tests' own hosts and
# DNS server only.
#
# As in network.bats, the hosts live in a namespace this file makes behind a
# veth pair: "the internet" (INET, INET2, INET3, INET4 in a public test
# range), a private service PRIVATE, the metadata address 169.254.169.254,
# and DNS, the resolvers' upstream, that answers with a TTL of 2 s:
#   www.listed.test        A INET, AAAA INET6
#   alias.listed.test      CNAME target.elsewhere.test, A INET2
#   api.wild.test, wild.test  A INET3
#   unlisted.test          A INET4 (never listed: INET4 is never resolved
#                          through a rule)
#   meta.listed.test       A 169.254.169.254 (metadata)
#   priv.listed.test       A PRIVATE
# and logs every query it gets (name and type). sbx.conf sets
# domain_ttl_grace = 1, domain_ttl_min = 1, domain_ttl_max = 30: an address
# is allowed for 3 s after each answer (the first test, which reads them
# back, takes a grace of 30 s).

load ../helpers/common
load ../helpers/testhosts

METADATA=169.254.169.254

net_vars () {
  sbx_pick_test_nets || return
  NS=sxt-dom-$(printf '%s' "$BATS_FILE_TMPDIR" | sha256sum | cut -c1-6)
  HOST_IF=sxt-h${NS#sxt-dom-}
  NS_IF=sxt-n${NS#sxt-dom-}
  local v
  v=$(py - "$SBX_NET_INET4" "$SBX_NET_INET6" "$SBX_NET_PRIV4" "$SBX_NET_LINK4" "$SBX_NET_LINK6" <<-'EOF2'
	import ipaddress, sys
	i4, i6, p4, l4, l6 = (ipaddress.ip_network(a) for a in sys.argv[1:])
	print("INET=%s INET2=%s INET3=%s INET4=%s DNS=%s INET6=%s PRIVATE=%s LINK_HOST=%s LINK_NS=%s LINK_HOST6=%s LINK_NS6=%s"
	      % (i4[10], i4[20], i4[30], i4[40], i4[53], i6[0x10], p4[10], l4[1], l4[2], l6[1], l6[2]))
	EOF2
  ) || return
  local kv
  for kv in $v; do
    printf -v "${kv%%=*}" '%s' "${kv#*=}"
  done
  SBX_TEST_DNS=$DNS
  DNS_LOG=$BATS_FILE_TMPDIR/dns.log
}

net_setup () {
  net_vars || return
  sbx_check_test_addr "$METADATA/32" || return
  net_down
  net_link_up
  local a
  for a in $INET $INET2 $INET3 $INET4 $DNS $PRIVATE $METADATA; do
    ip -n "$NS" addr add "$a/32" dev lo
  done
  ip -n "$NS" -6 addr add "$INET6/128" dev lo nodad
  ip route add "$SBX_NET_INET4" via "$LINK_NS" dev "$HOST_IF"
  ip route add "$SBX_NET_PRIV4" via "$LINK_NS" dev "$HOST_IF"
  ip route add "$METADATA/32" via "$LINK_NS" dev "$HOST_IF"
  ip -6 route add "$SBX_NET_INET6" via "$LINK_NS6" dev "$HOST_IF"
  for a in $INET $INET2 $INET3 $INET4 $DNS $PRIVATE $METADATA $INET6; do
    route_ok "$a" || { net_down; return 1; }
  done
}

setup_file () {
  sbx_build_payload_tar
  sbx_net_lock || return
  local rc=0
  net_setup || rc=$?
  sbx_net_unlock
  [ $rc -eq 0 ] || return $rc
  : >"$DNS_LOG"
  testnet_start --dns "$DNS" --ttl 2 --log "$DNS_LOG" \
    --name "www.listed.test=$INET,$INET6" --cname alias.listed.test=target.elsewhere.test \
    --name "target.elsewhere.test=$INET2" --name "api.wild.test=$INET3" --name "wild.test=$INET3" \
    --name "unlisted.test=$INET4" --name "meta.listed.test=$METADATA" --name "priv.listed.test=$PRIVATE" \
    $INET $INET2 $INET3 $INET4 $PRIVATE $METADATA $INET6
}

teardown_file () {
  net_vars
  net_down
}

setup () {
  net_vars || return
  sbx_setup
  sbx_write_conf "pool6 = $SBX_NET_POOL6
domain_ttl_grace = 1
domain_ttl_min = 1
domain_ttl_max = 30"
  sbx_import_payload
}

teardown () {
  sbx_teardown
}

# lookup ID NAME [TYPE [tcp]]: the answer of the sandbox's resolver, as
# sbx-testpayload dns prints it.
lookup () {
  local gw
  gw=$(sbx --json status "$1" | jpipe 'd["network"]["gateway"]')
  in_sb "$1" "sbx-testpayload dns $gw $2 ${3:-A} ${4-}"
  [ "$status" -eq 0 ] || fail "the lookup of $2 failed: $output ${stderr-} $(sbx logs "$1" | tail -n 5)"
}

# The upstream's log: whether it ever got a query for NAME.
upstream_saw () {
  grep -q "^$1 " "$DNS_LOG"
}

# --- listed names, unlisted names, addresses --------------------------------------

domain_rules () {
  local rt=$1 id
  require_runtime "$rt"
  # A longer grace here: the addresses must still be there for status.
  sbx_write_conf "pool6 = $SBX_NET_POOL6
domain_ttl_grace = 30
domain_ttl_min = 1
domain_ttl_max = 60"
  id=$(sbx create --runtime "$rt" --image payload --allow-domain www.listed.test --allow-domain alias.listed.test \
    --allow-domain '*.wild.test' --allow-domain meta.listed.test --allow-domain priv.listed.test)
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["network"]["mode"]')" allow "mode"
  expect_eq "$(jget '" ".join(d["network"]["domains"])')" "www.listed.test alias.listed.test *.wild.test meta.listed.test priv.listed.test" "domains"
  expect_eq "$(jget 'len(d["network"]["domain_addresses"])')" 0 "addresses before any lookup"
  # Nothing resolved yet: no address is reachable, whatever the protocol.
  refused "$id" "$INET"
  in_sb "$id" "sbx-testpayload udp $INET 7 ping"
  [ "$status" -ne 0 ] || fail "udp to $INET before any lookup: $output"

  # A listed name: answered, and its addresses reachable over tcp and udp.
  lookup "$id" www.listed.test
  expect_contains "$output" "rcode 0"
  expect_contains "$output" "A $INET 2"
  reaches "$id" "$INET"
  in_sb "$id" "sbx-testpayload udp $INET 7 ping"
  expect_eq "$output" "echo from $INET: ping" "udp after the lookup"
  # Another port of the same address is as reachable (the rule is by address).
  reaches "$id" "$INET" 81
  # Another type of a listed name: answered; over TCP too.
  lookup "$id" www.listed.test TXT
  expect_contains "$output" "rcode 0"
  expect_contains "$output" "TXT hello www.listed.test"
  # Over TCP, twice (the second on a new connection).
  lookup "$id" www.listed.test A tcp
  expect_contains "$output" "A $INET 2"
  lookup "$id" www.listed.test TXT tcp
  expect_contains "$output" "TXT hello www.listed.test"
  # nslookup as programs do it.
  in_sb "$id" "nslookup www.listed.test"
  expect_contains "$output" "$INET"

  # An unlisted name: REFUSED, and never sent upstream (UDP, TCP, any type).
  lookup "$id" unlisted.test
  expect_contains "$output" "rcode 5"
  lookup "$id" unlisted.test A tcp
  expect_contains "$output" "rcode 5"
  lookup "$id" unlisted.test TXT
  expect_contains "$output" "rcode 5"
  lookup "$id" secret-data-here.www.listed.test
  expect_contains "$output" "rcode 5"
  ! upstream_saw unlisted.test || fail "the upstream saw unlisted.test: $(cat "$DNS_LOG")"
  ! upstream_saw secret-data-here.www.listed.test || fail "the upstream saw a name under a listed one"
  refused "$id" "$INET4"

  # A CNAME chain: the target's address is allowed through the listed name.
  refused "$id" "$INET2"
  lookup "$id" alias.listed.test
  expect_contains "$output" "CNAME target.elsewhere.test"
  expect_contains "$output" "A $INET2"
  reaches "$id" "$INET2"
  # The chain's target asked for itself is not listed.
  lookup "$id" target.elsewhere.test
  expect_contains "$output" "rcode 5"

  # A wildcard: names under it, not the name itself.
  lookup "$id" api.wild.test
  expect_contains "$output" "A $INET3"
  reaches "$id" "$INET3"
  lookup "$id" wild.test
  expect_contains "$output" "rcode 5"

  # Names that resolve into the always-refused and private ranges: the
  # answer comes back, the address stays refused, the log says why.
  lookup "$id" meta.listed.test
  expect_contains "$output" "A $METADATA"
  refused "$id" "$METADATA"
  lookup "$id" priv.listed.test
  expect_contains "$output" "A $PRIVATE"
  refused "$id" "$PRIVATE"
  run sbx logs "$id"
  expect_contains "$output" "meta.listed.test resolves to $METADATA"
  expect_contains "$output" "priv.listed.test resolves to $PRIVATE"

  # Status: the rules, and the addresses allowed through them with their
  # time left (TTL 2 s + grace 30 s).
  run --separate-stderr sbx --json status "$id"
  local addrs
  addrs=$(jget '" ".join(sorted(a["address"] + "=" + a["name"] for a in d["network"]["domain_addresses"]))')
  expect_contains "$addrs" "$INET=www.listed.test"
  expect_contains "$addrs" "$INET2=alias.listed.test"
  expect_contains "$addrs" "$INET3=api.wild.test"
  expect_not_contains "$addrs" "$METADATA"
  expect_not_contains "$addrs" "$PRIVATE="
  expect_eq "$(jget 'all(0 < a["expires_in_ms"] <= 32000 for a in d["network"]["domain_addresses"])')" true "time left"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "network:    allow www.listed.test, alias.listed.test, *.wild.test"
  expect_contains "$output" "allowed:    $INET (www.listed.test, "
  sbx terminate "$id" >/dev/null
}

@test "domains: only listed names resolve, and only their addresses are reachable (runc)" {
  domain_rules runc
}

@test "domains: only listed names resolve, and only their addresses are reachable (runsc)" {
  domain_rules runsc
}

# --- expiry ---------------------------------------------------------------------------

expiry () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --allow-domain www.listed.test)
  lookup "$id" www.listed.test
  expect_contains "$output" "A $INET"
  # A long-lived connection, opened while the address is allowed.
  sbx exec -d "$id" -- sh -c "(while true; do echo tick; sleep 0.2; done) | nc $INET 81 >/tmp/held 2>&1; echo ended >>/tmp/held" >/dev/null
  sleep 1
  in_sb "$id" "grep -c 'got tick' /tmp/held"
  [ "$output" -ge 1 ] || fail "the long-lived connection did not run: $output"
  # TTL 2 s + grace 1 s: expired for new connections after 3 s.
  sleep 3.5
  refused "$id" "$INET"
  local before after
  in_sb "$id" "grep -c 'got tick' /tmp/held"
  before=$output
  sleep 1
  in_sb "$id" "grep -c 'got tick' /tmp/held; tail -n 1 /tmp/held"
  after=${lines[0]}
  [ "$after" -gt "$before" ] || fail "the established connection stopped at expiry ($before, then $after)"
  expect_not_contains "$output" ended
  # A new lookup allows it again.
  lookup "$id" www.listed.test
  reaches "$id" "$INET"
  sbx terminate "$id" >/dev/null
}

@test "domains: an address expires after its TTL plus grace for new connections, an open one lives on (runc)" {
  expiry runc
}

@test "domains: an address expires after its TTL plus grace for new connections, an open one lives on (runsc)" {
  expiry runsc
}

# --- sbx net ---------------------------------------------------------------------------

live_change () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload)
  # Open: every name resolves.
  lookup "$id" unlisted.test
  expect_contains "$output" "A $INET4"
  run --separate-stderr sbx --json net "$id" --allow-domain www.listed.test
  expect_status 0
  expect_eq "$(jget 'd["mode"]')" allow
  expect_eq "$(jget '" ".join(d["domains"])')" www.listed.test
  refused "$id" "$INET4"
  lookup "$id" unlisted.test
  expect_contains "$output" "rcode 5"
  lookup "$id" www.listed.test
  reaches "$id" "$INET"
  # Another rule in its place: the old name's addresses go at once.
  run --separate-stderr sbx net "$id" --allow-domain '*.wild.test'
  expect_status 0
  refused "$id" "$INET"
  lookup "$id" www.listed.test
  expect_contains "$output" "rcode 5"
  lookup "$id" api.wild.test
  reaches "$id" "$INET3"
  # A rule kept across a change keeps its addresses; CIDRs and names together.
  run --separate-stderr sbx --json net "$id" --allow "$INET4/32" --allow-domain '*.wild.test'
  expect_status 0
  expect_eq "$(jget 'd["allow"][0]')" "$INET4/32"
  reaches "$id" "$INET3"
  reaches "$id" "$INET4"
  refused "$id" "$INET"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget '" ".join(d["network"]["allow"] + d["network"]["domains"])')" "$INET4/32 *.wild.test"
  # Back to open: no rule, every name again.
  run --separate-stderr sbx net "$id" --open
  expect_status 0
  lookup "$id" unlisted.test
  expect_contains "$output" "A $INET4"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'len(d["network"].get("domains") or [])')" 0 "domain rules after --open"
  # Bad input changes nothing.
  expect_error INVALID_ARGUMENT net "$id" --allow-domain 'bad name'
  expect_error INVALID_ARGUMENT net "$id" --allow-domain x.test --block
  expect_error INVALID_ARGUMENT net "$id" --allow-domain x.test --open
  lookup "$id" unlisted.test
  expect_contains "$output" "A $INET4"
  sbx terminate "$id" >/dev/null
}

@test "domains: sbx net --allow-domain changes a running sandbox at once (runc)" {
  live_change runc
}

@test "domains: sbx net --allow-domain changes a running sandbox at once (runsc)" {
  live_change runsc
}

# --- bad input, cleanup ------------------------------------------------------------------

@test "domains: a rule that is not NAME or *.NAME is INVALID_ARGUMENT, and nothing is made" {
  local n
  for n in '' '*' '*.com' 'a..b' '.a.b' '-a.test' 'a-.test' 'a b.test' 'a*.test' 'x.*.test' '1.2.3.4' '::1' \
    "$(printf 'a%.0s' $(seq 64)).test" 'caf\xc3\xa9.test'; do
    expect_error INVALID_ARGUMENT create --image payload --allow-domain "$n"
  done
  expect_error INVALID_ARGUMENT create --image payload --block-network --allow-domain www.listed.test
  run --separate-stderr sbx ls -q
  expect_eq "$output" "" "sandboxes made"
}

@test "domains: a killed monitor leaves no domain set behind after sbx gc" {
  require_runtime runc
  local id mpid
  id=$(sbx create --runtime runc --image payload --allow-domain www.listed.test)
  lookup "$id" www.listed.test
  nft list set inet sbx "sandbox-$id-dns4" | grep -q "$INET" || fail "no element for $INET: $(nft list set inet sbx "sandbox-$id-dns4")"
  mpid=$(monitor_pid "$id")
  kill -9 "$mpid"
  sbx gc >/dev/null
  ! nft list set inet sbx "sandbox-$id-dns4" 2>/dev/null || fail "the domain set survived gc"
}
