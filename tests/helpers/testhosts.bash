# Test hosts in a network namespace of the test file's own, reached from the
# sandboxes through a veth and host routes (network.bats, domains.bats).
# The file sets NS, HOST_IF, NS_IF and the LINK_* addresses in its
# net_vars, adds its own addresses and routes after net_link_up, and checks
# each route with route_ok before anything is sent.

# net_down: the test hosts, the link (the routes go with it), the namespace.
net_down () {
  if [ -f "$BATS_FILE_TMPDIR/testnet.pid" ]; then
    kill "$(cat "$BATS_FILE_TMPDIR/testnet.pid")" 2>/dev/null || true
    rm -f "$BATS_FILE_TMPDIR/testnet.pid"
  fi
  ip link del "$HOST_IF" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  return 0
}

# route_ok ADDR: the host's route to ADDR leads into the test namespace.
route_ok () {
  local r
  r=$(ip route get "$1" 2>&1) || fail "no route to $1: $r"
  case $r in
    *" dev $HOST_IF "*) return 0 ;;
  esac
  fail "the route to $1 does not lead into the test namespace ($r): stopping before sending anything"
}

# net_link_up: the namespace and its veth, the link addresses, and the
# routes back to the sandboxes' pools (never a default one), should their
# traffic arrive unmasqueraded.
net_link_up () {
  ip netns add "$NS"
  ip link add "$HOST_IF" type veth peer name "$NS_IF" netns "$NS"
  ip addr add "$LINK_HOST/30" dev "$HOST_IF"
  ip -6 addr add "$LINK_HOST6/64" dev "$HOST_IF" nodad
  ip link set "$HOST_IF" up
  ip -n "$NS" link set lo up
  ip -n "$NS" addr add "$LINK_NS/30" dev "$NS_IF"
  ip -n "$NS" -6 addr add "$LINK_NS6/64" dev "$NS_IF" nodad
  ip -n "$NS" link set "$NS_IF" up
  ip -n "$NS" route add "$SBX_NET_POOL4" via "$LINK_HOST"
  ip -n "$NS" -6 route add "$SBX_NET_POOL6" via "$LINK_HOST6"
}

# testnet_start ARG...: tests/helpers/testnet.py in the namespace with ARGs,
# waited for until it says ready.
testnet_start () {
  ip netns exec "$NS" "$PYTHON" -I -S "$SBX_TESTS_DIR/helpers/testnet.py" "$@" \
    >"$BATS_FILE_TMPDIR/testnet.out" 2>&1 &
  echo $! >"$BATS_FILE_TMPDIR/testnet.pid"
  local i
  for i in $(seq 100); do
    grep -q ready "$BATS_FILE_TMPDIR/testnet.out" && return 0
    sleep 0.05
  done
  cat "$BATS_FILE_TMPDIR/testnet.out" >&2
  net_down
  fail "the test hosts did not start"
}

# in_sb ID SCRIPT: runs SCRIPT under sh in the sandbox.
in_sb () {
  local id=$1
  shift
  run --separate-stderr sbx exec "$id" -- sh -c "$*"
}

# reaches ID ADDR [PORT]: a TCP connection to ADDR:PORT (80) is answered.
reaches () {
  local a=${2#[}
  a=${a%]}
  in_sb "$1" "nc -w 3 $2 ${3:-80} </dev/null"
  [ "$status" -eq 0 ] && [ "$output" = "hello from $a" ] \
    || fail "$1 could not reach $2:${3:-80} (status $status): $output ${stderr-}"
}

# refused ID ADDR [PORT]: a TCP connection fails, and fast (a reset or an
# ICMP error, not a timeout).
refused () {
  local t0=$SECONDS
  in_sb "$1" "nc -w 5 $2 ${3:-80} </dev/null"
  [ "$status" -ne 0 ] && [ -z "$output" ] || fail "$1 reached $2:${3:-80}: $output"
  [ $((SECONDS - t0)) -lt 4 ] || fail "$1 -> $2: refused only by a timeout"
}
