#!/usr/bin/env bash
# bench-domains.sh: what domain rules (--allow-domain, sbx-net(1)) cost, side
# by side in one run:
#  1. a lookup through a sandbox's resolver with a domain rule (the answer
#     read, its address put in the sandbox's nftables set before the answer
#     goes back) against the same lookup in --allow mode (forwarded as it
#     is), both against one test DNS server on this host. Target: at most
#     1 ms added (median).
#  2. TCP connection setup from a sandbox with a domain rule to an address a
#     listed name resolved to, with that one address in the sandbox's domain
#     set against 1,000 (999 more put there with nft). Target: within 5%.
#
# Run as root.  See contrib/bench/README.md.  Needs sbx built in this
# checkout (and tests/sbx-testpayload: `make check` builds it, or `make
# tests/sbx-testpayload`), runc or runsc, bash, coreutils, awk, ip, nft and
# python3 (standard library only).  No traffic leaves the host: the DNS
# server and the TCP server live in a network namespace this script makes
# (bench-dom), at 192.0.2.53 and 192.0.2.77 behind a veth pair on
# 198.19.253.0/30; the sandboxes' addresses come from a throwaway sbx.conf's
# pool (POOL4, default 10.203.0.0/16).  Note that sbx's nftables table is
# shared by every sbx on the host: a pool other than theirs makes their
# sandboxes' DNS rules follow this run's sbx.conf while it runs.

set -uo pipefail

SRC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." 2>/dev/null && pwd)
SBX=${SBX:-$SRC_TOP/sbx}
PAYLOAD=${PAYLOAD:-$SRC_TOP/tests/sbx-testpayload}
TESTNET=$SRC_TOP/tests/helpers/testnet.py
N=${N:-200}
ROUNDS=${ROUNDS:-5}
RUNTIME=${RUNTIME:-runc}
POOL4=${POOL4:-10.203.0.0/16}
CONF_EXTRA=${CONF_EXTRA:-}
NS=bench-dom
HOST_IF=bdom-h
NS_IF=bdom-n
DNS=192.0.2.53
TARGET=192.0.2.77

usage ()
{
  cat <<EOF
Usage: ${0##*/} [-n N] [--rounds R] [--runtime runc|runsc] [-h]

  -n N            lookups (and connections) per round (default $N)
  --rounds R      rounds; each measures both cases back to back (default $ROUNDS)
  --runtime RT    the sandboxes' runtime (default $RUNTIME)

Prints the median of each case in microseconds and the median of the
per-round ratios:
  lookup-allow    sbx-testpayload dns-time: A queries of bench.test, --allow mode
  lookup-domain   the same with --allow-domain bench.test
  connect-1       sbx-testpayload connect-time to $TARGET:80, 1 address in the set
  connect-1000    the same with 1,000 addresses in the set
Environment: SBX, PAYLOAD, POOL4, CONF_EXTRA (more sbx.conf lines).
EOF
}

while (($#)); do
  case $1 in
    -n) N=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --runtime) RUNTIME=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done

# shellcheck source=contrib/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

note () { printf '# %s\n' "$*" >&2; }
die () { note "$*"; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root"
[[ -x $SBX && -x $PAYLOAD ]] || die "build sbx and tests/sbx-testpayload first ($SBX, $PAYLOAD)"
for t in ip nft python3; do command -v "$t" >/dev/null || die "needs $t"; done

WORK=$(mktemp -d /tmp/sbx-bench-domains.XXXXXX)
SAMPLES=$WORK/samples
LOG=$WORK/log
mkdir -p "$SAMPLES"
export SBX_ROOT=$WORK/root SBX_RUN_ROOT=$WORK/run SBX_CONF=$WORK/sbx.conf
[[ -x $SRC_TOP/sbx-init ]] && export SBX_INIT=${SBX_INIT:-$SRC_TOP/sbx-init}
printf 'pool4 = %s\ndns = %s\ndomain_ttl_min = 3600\n%s\n' "$POOL4" "$DNS" "$CONF_EXTRA" >"$SBX_CONF"
SERVER=

cleanup ()
{
  local id
  for id in $("$SBX" ls -q 2>/dev/null); do "$SBX" terminate --rm "$id" >/dev/null 2>&1; done
  "$SBX" gc >/dev/null 2>&1
  [[ -n $SERVER ]] && kill "$SERVER" 2>/dev/null
  ip link del "$HOST_IF" 2>/dev/null
  ip netns del "$NS" 2>/dev/null
  umount_under "$WORK"
  leak_report "" "$WORK"
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT

# The test hosts: a namespace with the DNS server and a TCP server.
ip netns del "$NS" 2>/dev/null
ip link del "$HOST_IF" 2>/dev/null
ip netns add "$NS" &&
  ip link add "$HOST_IF" type veth peer name "$NS_IF" netns "$NS" &&
  ip addr add 198.19.253.1/30 dev "$HOST_IF" && ip link set "$HOST_IF" up &&
  ip -n "$NS" link set lo up && ip -n "$NS" addr add 198.19.253.2/30 dev "$NS_IF" &&
  ip -n "$NS" link set "$NS_IF" up && ip -n "$NS" route add "$POOL4" via 198.19.253.1 &&
  ip -n "$NS" addr add "$DNS/32" dev lo && ip -n "$NS" addr add "$TARGET/32" dev lo &&
  ip route add "$DNS/32" via 198.19.253.2 && ip route add "$TARGET/32" via 198.19.253.2 ||
  die "could not make the test namespace"
ip netns exec "$NS" python3 -I -S "$TESTNET" --dns "$DNS" --ttl 3600 --name "bench.test=$TARGET" "$TARGET" \
  >"$WORK/testnet.out" 2>&1 &
SERVER=$!
for _ in $(seq 100); do grep -q ready "$WORK/testnet.out" && break; sleep 0.05; done
grep -q ready "$WORK/testnet.out" || die "the test DNS server did not start: $(cat "$WORK/testnet.out")"

mk ()  # OPTIONS...: a sandbox with the payload in /bin; its id
{
  local id
  id=$("$SBX" create --runtime "$RUNTIME" "$@" 2>>"$LOG") || die "sbx create $*: $(tail -2 "$LOG")"
  "$SBX" cp "$PAYLOAD" "$id:/bin/sbx-testpayload" >>"$LOG" 2>&1 || die "sbx cp: $(tail -2 "$LOG")"
  printf '%s\n' "$id"
}

gw () { "$SBX" --json status "$1" | python3 -I -S -c 'import json,sys; print(json.load(sys.stdin)["network"]["gateway"])'; }

# median FILE: of one number a line.
median () { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR) printf "%d", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run_case NAME ID CMD...: the payload's per-operation times into
# $SAMPLES/NAME-all, the round's median into $SAMPLES/NAME.
run_case ()
{
  local name=$1 id=$2 out
  shift 2
  out=$("$SBX" exec "$id" -- /bin/sbx-testpayload "$@" 2>>"$LOG") || die "$name: $(tail -2 "$LOG")"
  printf '%s\n' "$out" >"$WORK/round"
  cat "$WORK/round" >>"$SAMPLES/$name-all"
  median "$WORK/round" >>"$SAMPLES/$name"
  printf '\n' >>"$SAMPLES/$name"
}

A=$(mk --allow "$TARGET/32")
D=$(mk --allow-domain bench.test)
GA=$(gw "$A")
GD=$(gw "$D")
# Warm up, and the address in the domain set for the connection cases.
run_case warm "$A" dns-time "$GA" bench.test 20
run_case warm "$D" dns-time "$GD" bench.test 20
# 999 more addresses (198.18.0.0/15, the benchmarking range), for an hour.
FILL=$WORK/fill.nft
python3 -I -S - "$D" >"$FILL" <<'EOF'
import sys
addrs = ", ".join("198.18.%d.%d" % (i // 250, 1 + i % 250) for i in range(999))
print("add element inet sbx sandbox-%s-dns4 { %s }" % (sys.argv[1], addrs))
EOF
sed 's/^add/delete/' "$FILL" >"$WORK/unfill.nft"

for r in $(seq "$ROUNDS"); do
  if ((r % 2)); then
    run_case lookup-allow "$A" dns-time "$GA" bench.test "$N"
    run_case lookup-domain "$D" dns-time "$GD" bench.test "$N"
  else
    run_case lookup-domain "$D" dns-time "$GD" bench.test "$N"
    run_case lookup-allow "$A" dns-time "$GA" bench.test "$N"
  fi
  run_case connect-1 "$D" connect-time "$TARGET" 80 "$N"
  nft -f "$FILL" || die "could not fill the set"
  n=$(nft list set inet sbx "sandbox-$D-dns4" | grep -o '198\.18\.' | wc -l)
  ((n == 999)) || note "the set holds $n fillers, not 999"
  run_case connect-1000 "$D" connect-time "$TARGET" 80 "$N"
  nft -f "$WORK/unfill.nft" || die "could not empty the set"
done

printf '%-16s %10s %10s\n' case median-us rounds
for c in lookup-allow lookup-domain connect-1 connect-1000; do
  printf '%-16s %10s %10s\n' "$c" "$(median "$SAMPLES/$c-all")" "$(wc -l <"$SAMPLES/$c")"
done
la=$(median "$SAMPLES/lookup-allow-all")
ld=$(median "$SAMPLES/lookup-domain-all")
printf 'lookup: domain rule adds %d us to the median (target <= 1000 us); per-round ratio domain/allow %s\n' \
  "$((ld - la))" "$(paired_ratio lookup-domain lookup-allow)"
printf 'connect: 1000 addresses / 1 address, per-round ratio of medians %s (target <= 1.05)\n' \
  "$(paired_ratio connect-1000 connect-1)"
