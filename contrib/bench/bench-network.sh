#!/usr/bin/env bash
# bench-network.sh: what a sandbox's network costs, side by side in one run
# on both runtimes: `sbx create` with a network (its own namespace, veth,
# nftables chain, resolver) against `sbx create --block-network` (with
# podman's bridge against --network=none as peers), and HTTP through an
# exposed port (the monitor's relay) against the same requests straight to
# the sandbox's address, with one python client for both.
#
# Run as root.  See contrib/bench/README.md.  Besides sbx and its runtimes,
# bash, coreutils, awk, ip and python3 (standard library only, run as
# `python3 -I -S`) are needed; podman and busybox-static for podman's cases.
# No traffic leaves the host: every request goes from the host to a sandbox
# on it (its veth, or the relay on 127.0.0.1), and every sandbox address
# comes from a throwaway sbx.conf's pool (10.202.0.0/16).

set -uo pipefail

# Default: the sbx built in this checkout (contrib/bench/../../sbx).
SRC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." 2>/dev/null && pwd)
SBX=${SBX:-$SRC_TOP/sbx}
N=${N:-10}
RUNTIME=both
PODMAN_RUNS=3
HTTP_ROUNDS=3
HTTP_SECONDS=3
WORKERS=4
DL_RUNS=5
SMALL_SIZE=64K
BIG_SIZE=16M
POOL4=10.202.0.0/16
JSON=false
KEEP=false

usage ()
{
  cat <<EOF
Usage: ${0##*/} [-n N] [--runtime runsc|runc|both] [--podman-runs K]
       [--http-rounds K] [--http-seconds S] [--workers W] [--dl-runs K]
       [--small-size SIZE] [--big-size SIZE] [--json] [--keep] [-h]

Measures, in one run, on each runtime RT (runsc, runc):
 1. sbx create, after one untimed warm-up round, N timed rounds, one
    runtime after the other (each round runs both cases back to back; which
    goes first turns each round); every sandbox is terminated and removed
    right after, untimed:
      create-net-RT     sbx create --runtime RT  (the default network: its
                        own netns, veth, nftables chain, resolver)
      create-nonet-RT   sbx create --runtime RT --block-network
    and their difference (target: the network adds at most 5 ms), with the
    steps of each create from the sandbox log (the events the monitor
    stamps, to the millisecond).  As peers, when podman is installed, K
    rounds of podman --runtime runc run --rm --rootfs DIR /bin/true (a
    busybox rootfs from the host's busybox-static, a throwaway store):
      podman-bridge     its default bridge network
      podman-none       --network=none
 2. HTTP from busybox httpd in a sandbox (the built-in busybox image, its
    default network) serving /www/small (SMALL_SIZE) and /www/big
    (BIG_SIZE) of random bytes, to one python client (python3 -I -S), both
    ways in turns:
      direct            http://ADDRESS:8080/, ADDRESS from sbx --json status
      proxied           the URL of sbx --json expose ID 8080 (the relay in
                        the monitor, on 127.0.0.1), with the token of
                        \$SBX_ROOT/token (Authorization: Bearer)
    rate-*-RT           requests per second for /www/small, W workers for S
                        seconds, a new connection per request (the relay
                        closes each after one request; direct does the same)
    dl-*-RT             one download of /www/big, connect to last byte
    Target: proxied >= 0.7 x direct.  The warm-up checks both ways: the same
    bytes, 401 without the token or with a wrong one, Connection: close.
    Busybox httpd under runsc (gVisor on the host's network stack) now and
    then sends a file short of its Content-Length, or closes a connection
    unanswered (which the relay answers with 502), either way: such answers
    are counted and reported, left out of req/s (more than 2% of a round
    fail it), and a download is asked again (9 times at most).

The exit status is 0 unless a case could not run (a runtime or podman that
is not there is skipped); missed targets do not fail it.

Options:
  -n N                  timed rounds of the sbx create cases (default $N)
  --runtime RT          runsc, runc or both (default both, as sbx info offers)
  --podman-runs K       timed rounds of the podman cases (default $PODMAN_RUNS; 0: none)
  --http-rounds K       timed rate rounds each way (default $HTTP_ROUNDS)
  --http-seconds S      seconds a rate round lasts (default $HTTP_SECONDS)
  --workers W           concurrent connections of a rate round (default $WORKERS)
  --dl-runs K           timed downloads each way (default $DL_RUNS)
  --small-size SIZE     the rate file (default $SMALL_SIZE; K/M = 1024^n)
  --big-size SIZE       the download file (default $BIG_SIZE)
  --json                JSON on stdout (the table then goes to stderr)
  --keep                keep the work directory instead of removing it
  -h, --help            show this help

Environment: SBX (the sbx binary; default this checkout's, $SBX),
SBX_INIT (default the sbx-init next to SBX), N (as -n), TMPDIR (where the
work directory goes; default /var/tmp).  Both binaries are copied into the
work directory first: a rebuild during the run changes nothing.  SBX_CONF
is set to a throwaway sbx.conf (pool4 = $POOL4, expose_address =
127.0.0.1); SBX_ROOT and SBX_RUN_ROOT to throwaway directories.
EOF
}

die () { printf 'bench-network: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-network: %s\n' "$*" >&2; }

posint () { [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 wants a positive integer"; }
while (($#)); do
  case $1 in
    -n) posint -n "${2:-}"; N=$2; shift 2 ;;
    -n[0-9]*) N=${1#-n}; posint -n "$N"; shift ;;
    --runtime) RUNTIME=${2:-}; shift 2 || die "--runtime wants a value" ;;
    --podman-runs) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--podman-runs wants an integer"; PODMAN_RUNS=$2; shift 2 ;;
    --http-rounds) posint --http-rounds "${2:-}"; HTTP_ROUNDS=$2; shift 2 ;;
    --http-seconds) posint --http-seconds "${2:-}"; HTTP_SECONDS=$2; shift 2 ;;
    --workers) posint --workers "${2:-}"; WORKERS=$2; shift 2 ;;
    --dl-runs) posint --dl-runs "${2:-}"; DL_RUNS=$2; shift 2 ;;
    --small-size) SMALL_SIZE=${2:-}; shift 2 || die "--small-size wants a value" ;;
    --big-size) BIG_SIZE=${2:-}; shift 2 || die "--big-size wants a value" ;;
    --json) JSON=true; shift ;;
    --keep) KEEP=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
posint "-n (or N)" "$N"
case $RUNTIME in runsc|runc|both) ;; *) die "--runtime wants runsc, runc or both" ;; esac

size_bytes ()
{
  local s=$1 n u
  [[ $s =~ ^([0-9]+)([KMG]?)$ ]] || die "bad size '$s' (want e.g. 64K, 16M)"
  n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
  case $u in K) n=$((n << 10)) ;; M) n=$((n << 20)) ;; G) n=$((n << 30)) ;; esac
  ((n > 0)) || die "bad size '$s' (want more than 0 bytes)"
  printf '%s' "$n"
}
SMALL_BYTES=$(size_bytes "$SMALL_SIZE") || exit 2
BIG_BYTES=$(size_bytes "$BIG_SIZE") || exit 2

((EUID == 0)) || die "run me as root"
command -v "$SBX" >/dev/null || die "sbx not found (set SBX=/path/to/sbx)"
SBX=$(realpath "$(command -v "$SBX")")
if [[ -z ${SBX_INIT:-} && -x ${SBX%/*}/sbx-init ]]; then
  export SBX_INIT=${SBX%/*}/sbx-init
fi
for t in awk sort realpath ip tar; do
  command -v $t >/dev/null || die "$t is needed"
done
# The system python, as the tests use it (a pyenv shim would cost a shell
# per start and could pick another python).
if [[ -x /usr/bin/python3 ]]; then PY=/usr/bin/python3; else PY=$(command -v python3) || die "python3 is needed"; fi
# The pool's gateways go on this host's links: no host route or address may
# cover it (the tests' check, tests/helpers/netpick.py).
"$PY" -I -S "$SRC_TOP/tests/helpers/netpick.py" "pool4=fixed:$POOL4" >/dev/null ||
  die "pool4 $POOL4 overlaps a route or address of this host: nothing done"
"$PY" -I -S -c 'import hashlib, socket, threading' 2>/dev/null || die "$PY -I -S cannot import hashlib, socket, threading"
HAVE_PODMAN=false PODMAN_WHY=
if ((PODMAN_RUNS == 0)); then
  PODMAN_WHY="--podman-runs 0"
elif ! command -v podman >/dev/null; then
  PODMAN_WHY="podman is not installed"
elif ! BUSYBOX=$(command -v busybox); then
  PODMAN_WHY="busybox is not installed (apt-get install busybox-static): no rootfs for podman"
elif ldd "$BUSYBOX" >/dev/null 2>&1; then
  PODMAN_WHY="$BUSYBOX is dynamically linked (apt-get install busybox-static): no rootfs for podman"
else
  HAVE_PODMAN=true
fi
$HAVE_PODMAN || note "podman's cases skipped: $PODMAN_WHY"

# stamp, umount_under, ours, others_using and the leaked_* checks.
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 2

# ---------------------------------------------------------------- cleanup
unset SBX_ROOT SBX_RUN_ROOT SBX_CONF   # set again below, to throwaway ones
NETNS_DIR=${SBX_NETNS_DIR:-/run/sbx/netns}
LEASE_DIR=/run/sbx/leases
WORK=
PODMAN=()
CLEANED=false
TAG=bnet$$


# The script's own stdout and stderr, for cleanup: a Ctrl-C during a timed
# command runs the traps inside that command's redirections (to the log).
exec {OUT_FD}>&1 {ERR_FD}>&2

cleanup ()
{
  $CLEANED && return
  CLEANED=true
  trap '' INT TERM HUP
  exec 1>&"$OUT_FD" 2>&"$ERR_FD"
  local id i
  if [[ -n $WORK ]]; then
    # Only ever the throwaway store: never a SBX_ROOT from the caller.
    if [[ ${SBX_ROOT:-} == "$WORK/root" && -d $SBX_ROOT ]]; then
      for id in $("$SBX" ls -q 2>/dev/null); do
        "$SBX" terminate --rm "$id" >/dev/null 2>&1 || "$SBX" rm -f "$id" >/dev/null 2>&1
      done
      "$SBX" gc >/dev/null 2>&1
      [[ -n $("$SBX" ls -q 2>/dev/null) ]] && note "sbx still lists sandboxes after gc: $("$SBX" ls -q | tr '\n' ' ')"
    fi
    if ((${#PODMAN[@]})); then
      "${PODMAN[@]}" rm -a -f -t 0 >/dev/null 2>&1
      # conmon starts `podman container cleanup` when a container ends; one
      # still running would mount the store again behind our back.
      for ((i = 0; i < 50; i++)); do
        others_using "$WORK/podman-root" || break
        sleep 0.1
      done
    fi
    umount_under "$WORK"
    check_net_leaks
    if $KEEP; then
      note "kept $WORK"
    else
      rm -rf --one-file-system "$WORK"
    fi
  fi
  check_leaks
}

# Says what cleanup missed: processes outside this script's own tree whose
# command line or environment names the work dir (sbx monitors carry
# SBX_ROOT), mounts left under it, and the host-wide network state of the
# sandboxes this run made (netns, lease, veth, nftables sets and chain).
check_net_leaks ()
{
  local id left=() links nft
  [[ -s $WORK/ids ]] || return 0
  links=$(ip -o link show 2>/dev/null)
  nft=$(nft list table inet sbx 2>/dev/null)
  while read -r id; do
    [[ $id == sb-* ]] || continue
    [[ -e $NETNS_DIR/$id ]] && left+=("$NETNS_DIR/$id")
    [[ -e $LEASE_DIR/$id ]] && left+=("$LEASE_DIR/$id")
    [[ $links == *" sbx${id#sb-}"[@:]* ]] && left+=("veth sbx${id#sb-}")
    [[ $nft == *"$id"* ]] && left+=("nftables of $id")
  done < <(sort -u "$WORK/ids")
  ((${#left[@]})) && note "LEAK: network state left: ${left[*]}"
}
check_leaks () { [[ -z $WORK ]] || leak_report "$TAG" "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- setup
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sbx-bench-network.XXXXXX") || die "mktemp failed"
export SBX_ROOT=$WORK/root SBX_RUN_ROOT=$WORK/run SBX_CONF=$WORK/sbx.conf
LOG=$WORK/log
SAMPLES=$WORK/samples
mkdir -p "$SBX_ROOT" "$SBX_RUN_ROOT" "$SAMPLES" "$WORK/bin"
: >"$LOG"
: >"$WORK/ids"
# Its own pool, so that the run depends on no /etc/sbx/sbx.conf (and stays
# out of the tests' 10.201.0.0/16); exposed ports on loopback only.
printf '# bench-network.sh\npool4 = %s\nexpose_address = 127.0.0.1\n' "$POOL4" >"$SBX_CONF"
# A snapshot of the binaries under test: a rebuild of the tree during the
# run (make replaces ./sbx) would otherwise fail a run or mix versions.
SBX_SRC=$SBX
cp "$SBX" "$WORK/bin/sbx" || die "cannot copy $SBX"
SBX=$WORK/bin/sbx
if [[ -n ${SBX_INIT:-} ]]; then
  cp "$SBX_INIT" "$WORK/bin/sbx-init" || die "cannot copy $SBX_INIT"
  export SBX_INIT=$WORK/bin/sbx-init
fi
"$SBX" version >/dev/null 2>&1 || die "$SBX_SRC (copied to $SBX) does not run"

# pyj EXPR: EXPR of the JSON document d read on stdin (a str, or '' for None).
pyj () { "$PY" -I -S -c 'import json, sys; d = json.load(sys.stdin); v = eval(sys.argv[1]); print("" if v is None else v)' "$1"; }

INFO=$("$SBX" --json info 2>>"$LOG") || die "sbx --json info failed (see $LOG)"
[[ $(pyj 'd["egress_enforcement"]' <<<"$INFO") == True ]] ||
  die "sbx info: egress_enforcement is not true: sandboxes with a network are refused on this host"
[[ $(pyj 'd["network"]["pool4"]' <<<"$INFO") == "$POOL4" ]] ||
  die "sbx info does not show the throwaway sbx.conf's pool4 ($POOL4): $(pyj 'd["network"]' <<<"$INFO")"
RTS=()
declare -A FAILED=() SKIPPED=()
for rt in runsc runc; do
  [[ $RUNTIME == both || $RUNTIME == "$rt" ]] || continue
  if [[ $(pyj "d['runtimes']['$rt']['available']" <<<"$INFO") == True ]]; then
    RTS+=("$rt")
  else
    [[ $RUNTIME == both ]] || die "$rt is not available (sbx --json info)"
    note "$rt is not available (sbx --json info): its cases are skipped"
    for c in create-net create-nonet rate-direct rate-proxied dl-direct dl-proxied; do SKIPPED[$c-$rt]="$rt not available"; done
  fi
done
((${#RTS[@]})) || die "no runtime available (sbx --json info)"
FS_DESC=$(df --output=fstype,source "$WORK" 2>/dev/null | awk 'NR == 2 { print $1 " (" $2 ")" }')
BENCH_T0=$SECONDS

# A failed setup step or check: the cases it drops, and why (with the log's tail).
fail ()  # CASE... -- MESSAGE
{
  local cases=() c
  while (($#)) && [[ $1 != -- ]]; do cases+=("$1"); shift; done
  shift
  for c in "${cases[@]}"; do [[ -z ${FAILED[$c]:-} ]] && FAILED[$c]=$*; done
  note "$*; log tail:"
  tail -4 "$LOG" | sed 's/^/    /' >&2
}

# The last line a command printed (sbx create's id).
last_line () { tail -1 "$WORK/last-out" 2>/dev/null; }
sbxq ()  # ARGS...: sbx, stdout to last-out and the log, stderr to the log
{
  printf '== sbx %s\n' "$*" >>"$LOG"
  "$SBX" "$@" </dev/null >"$WORK/last-out" 2>>"$LOG"
  local rc=$?
  cat "$WORK/last-out" >>"$LOG"
  return $rc
}

# Where the time of one `sbx create` goes: the steps between the lifecycle
# events its monitor stamps in the sandbox log (to the millisecond),
# bracketed by the CLI's start and exit; each step is the time from the
# previous event to this one.  Appended to WORK/steps-CASE.
log_steps ()  # CASE ID T0_US T1_US
{
  local day=86400000000
  "$SBX" logs "$2" 2>>"$LOG" | awk -v t0="$(($3 % day))" -v t1="$(($4 % day))" -v day="$day" '
    function tod(ts) {  # 2026-11-29T10:25:53.899Z -> microseconds of the day, UTC
      return ((substr(ts, 12, 2) * 60 + substr(ts, 15, 2)) * 60 + substr(ts, 18, 6)) * 1000000 }
    BEGIN { prev = t0 }
    $1 ~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9:.]+Z$/ {
      t = tod($1); if (t < prev - day / 2) t += day
      ev = $0; sub(/^[^ ]+ /, "", ev); sub(/^sbx: /, "", ev)
      gsub(/sb-[0-9a-f]+/, "ID", ev); gsub(/[0-9]+/, "N", ev); gsub(/\t/, " ", ev)
      printf "-> %s\t%.0f\n", ev, t - prev; prev = t }
    END { t = t1; if (t < prev - day / 2) t += day; printf "-> CLI exit\t%.0f\n", t - prev }
  ' >>"$WORK/steps-$1"
}

# Rounds: the cases take turns at going first (round i starts with case i,
# modulo their number), so that none always gets the memory, the cache or
# the CPU another has just left.
rounds ()  # COUNT FUNCTION...: each function taking ROUND RECORD
{
  local count=$1 k i j
  shift
  k=$#
  local fns=("$@")
  for ((j = 0; j < k; j++)); do "${fns[j]}" 0 false; done   # warm-up, untimed; also the checks
  for ((i = 1; i <= count; i++)); do
    for ((j = 0; j < k; j++)); do "${fns[(i - 1 + j) % k]}" "$i" true; done
  done
}

# ================================================================ part 1
# One sbx create, timed to the CLI's exit; the sandbox's log is read and
# the sandbox terminated and removed, untimed, right after.  The warm-up
# run also checks the network the sandbox got.
create_case ()  # RT KIND(net|nonet) ROUND RECORD
{
  local rt=$1 kind=$2 record=$4 c=create-$2-$1 t0 t1 rc id='' mode want opts=(--runtime "$1")
  [[ $kind == nonet ]] && opts+=(--block-network)
  [[ -n ${FAILED[$c]:-} ]] && return 1
  printf '== sbx create %s (round %s)\n' "${opts[*]}" "$3" >>"$LOG"
  stamp t0
  "$SBX" create "${opts[@]}" </dev/null >"$WORK/last-out" 2>>"$LOG"
  rc=$?
  stamp t1
  id=$(last_line)
  [[ -n $id ]] && printf '%s\n' "$id" >>"$WORK/ids"
  if ((rc != 0)) || [[ $id != sb-* ]]; then
    [[ $id == sb-* ]] && "$SBX" terminate --rm "$id" >>"$LOG" 2>&1
    fail "$c" -- "sbx create ${opts[*]} failed (exit status $rc)"
    return 1
  fi
  if ! $record; then
    mode=$("$SBX" --json status "$id" 2>>"$LOG" | pyj 'd["network"]["mode"] + " " + (d["network"]["address"] or "-")')
    [[ $kind == net ]] && want="open 10.202." || want="none -"
    if [[ $mode != "$want"* ]]; then
      fail "$c" -- "sbx create ${opts[*]}: the sandbox's network is '$mode', not '$want...'"
    fi
  fi
  $record && log_steps "$c" "$id" "$t0" "$t1"
  "$SBX" terminate --rm "$id" >>"$LOG" 2>&1 || note "sbx terminate --rm $id failed"
  [[ -n ${FAILED[$c]:-} ]] && return 1
  $record && printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/$c"
  return 0
}
net_runsc () { create_case runsc net "$@"; }
nonet_runsc () { create_case runsc nonet "$@"; }
net_runc () { create_case runc net "$@"; }
nonet_runc () { create_case runc nonet "$@"; }

# podman's peers: the same /bin/true from a busybox rootfs, with its default
# bridge network (netavark: a veth on the podman0 bridge, firewall rules)
# and with none.
podman_case ()  # KIND(bridge|none) ROUND RECORD
{
  local c=podman-$1 record=$3 t0 t1 rc net=()
  [[ $1 == none ]] && net=(--network=none)
  [[ -n ${FAILED[$c]:-} ]] && return 1
  printf '== podman run %s (round %s)\n' "${net[*]}" "$2" >>"$LOG"
  stamp t0
  "${PODMAN[@]}" run --rm "${net[@]}" "${PODMAN_RUN_OPTS[@]}" /bin/true </dev/null >>"$LOG" 2>&1
  rc=$?
  stamp t1
  if ((rc != 0)); then
    fail "$c" -- "podman run --rm ${net[*]} ... /bin/true failed (exit status $rc)"
    return 1
  fi
  $record && printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/$c"
  return 0
}
podman_bridge () { podman_case bridge "$@"; }
podman_none () { podman_case none "$@"; }

note "work dir $WORK ($FS_DESC); runtimes: ${RTS[*]}"
# One runtime after the other: each round's two creates run back to back.
for rt in "${RTS[@]}"; do
  note "part 1: $rt: 1 warm-up + $N timed rounds of sbx create with and without a network"
  rounds "$N" "net_$rt" "nonet_$rt"
done

if $HAVE_PODMAN; then
  ROOTFS=$WORK/rootfs
  mkdir -p "$ROOTFS"/{bin,dev,proc,sys,tmp,etc,root,run}
  cp "$BUSYBOX" "$ROOTFS/bin/busybox"
  for a in $("$BUSYBOX" --list); do
    [[ -e $ROOTFS/bin/$a ]] || ln -s busybox "$ROOTFS/bin/$a"
  done
  chmod 1777 "$ROOTFS/tmp"
  # Its own throwaway store; the host's nofile hard limit may be below
  # podman's default rlimits, so they are pinned (as in bench-lifecycle.sh).
  PODMAN=(podman --root "$WORK/podman-root" --runroot "$WORK/podman-run" --runtime runc)
  PODMAN_RUN_OPTS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --rootfs "$ROOTFS")
  note "part 1: 1 warm-up + $PODMAN_RUNS timed rounds of podman run with its bridge and with --network=none"
  rounds "$PODMAN_RUNS" podman_bridge podman_none
else
  SKIPPED[podman-bridge]=$PODMAN_WHY SKIPPED[podman-none]=$PODMAN_WHY
fi

# ================================================================ part 2
# The client, for both ways: raw HTTP/1.1 on a new connection per request,
# Connection: close, read to EOF; the body counted (and hashed for check).
# A 200 whose body ends before its Content-Length is "short": busybox httpd
# under runsc (gVisor's host network stack) sends some large files short,
# whichever way they are asked for; short answers are counted apart (rate)
# or asked again (get, check), and reported.  So are failed ones (no
# answer, or not a 200: busybox httpd under runsc now and then closes a
# connection without one, which the relay answers with 502), up to 2% of a
# rate round's requests and 9 tries of a download; more fail the case.
cat >"$WORK/httpc.py" <<'EOF'
import hashlib, socket, sys, threading, time

class Short(Exception):
    pass

def target(url):
    if not url.startswith("http://"):
        sys.exit("httpc: not an http:// URL: %r" % url)
    host, _, port = url[7:].split("/", 1)[0].rpartition(":")
    return host.strip("[]"), int(port)

def request(addr, path, tokenfile):
    h = "GET %s HTTP/1.1\r\nHost: %s:%d\r\n" % (path, addr[0], addr[1])
    if tokenfile != "-":
        with open(tokenfile) as f:
            h += "Authorization: Bearer %s\r\n" % f.read().strip()
    return (h + "Connection: close\r\n\r\n").encode("ascii")

def fetch(addr, req, digest=False):
    s = socket.create_connection(addr, timeout=30)
    head, body, done = b"", 0, False
    h = hashlib.sha256() if digest else None
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(req)
        buf = bytearray(1 << 20)
        mv = memoryview(buf)
        while True:
            n = s.recv_into(buf)
            if not n:
                break
            if done:
                body += n
                if h:
                    h.update(mv[:n])
                continue
            head += bytes(mv[:n])
            i = head.find(b"\r\n\r\n")
            if i < 0:
                if len(head) > 65536:
                    raise ValueError("a response head of more than 64 KiB")
                continue
            head, rest, done = head[:i], head[i + 4:], True
            body += len(rest)
            if h:
                h.update(rest)
    finally:
        s.close()
    if not done:
        raise ValueError("no complete response head")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    hdrs = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    cl = hdrs.get("content-length")
    if status == 200 and cl is not None and int(cl) != body:
        if body < int(cl):
            raise Short("%d bytes of body, Content-Length %s" % (body, cl))
        raise ValueError("%d bytes of body, Content-Length %s" % (body, cl))
    return status, hdrs, body, (h.hexdigest() if h else "-")

def main():
    mode, url, path, tokenfile = sys.argv[1:5]
    addr = target(url)
    req = request(addr, path, tokenfile)
    if mode == "check":   # STATUS BYTES SHA256 CONNECTION-HEADER SHORT FAILED
        short = failed = 0
        while True:
            try:
                st, hdrs, n, dg = fetch(addr, req, True)
                if st < 500:
                    break
                print("httpc: status %d" % st, file=sys.stderr)
                failed += 1
            except Short:
                short += 1
            except Exception as e:
                print("httpc: %r" % e, file=sys.stderr)
                failed += 1
            if short + failed == 10:
                sys.exit("httpc: 10 tries in a row failed or were short")
        print(st, n, dg, hdrs.get("connection", "-").lower().replace(" ", ""), short, failed)
    elif mode == "get":   # microseconds from connect to the last byte; exit 3: short
        size = int(sys.argv[5])
        t0 = time.perf_counter()
        try:
            st, _, n, _ = fetch(addr, req)
        except Short as e:
            print("httpc: short: %s" % e, file=sys.stderr)
            sys.exit(3)
        except Exception as e:
            print("httpc: %r" % e, file=sys.stderr)
            sys.exit(4)
        t1 = time.perf_counter()
        if st != 200 or n != size:
            print("httpc: status %d, %d bytes" % (st, n), file=sys.stderr)
            sys.exit(4)
        print(int((t1 - t0) * 1e6))
    elif mode == "rate":  # OK SHORT ERRORS SECONDS REQUESTS-PER-SECOND (of the OK ones)
        secs, workers, size = float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
        ok, short, errs, first = [0] * workers, [0] * workers, [0] * workers, []
        def work(k, deadline):
            while time.perf_counter() < deadline:
                try:
                    st, _, n, _ = fetch(addr, req)
                    if st == 200 and n == size:
                        ok[k] += 1
                        continue
                    why = "status %d, %d bytes" % (st, n)
                except Short:
                    short[k] += 1
                    continue
                except Exception as e:
                    why = repr(e)
                errs[k] += 1
                if not first:
                    first.append(why)
        t0 = time.perf_counter()
        ts = [threading.Thread(target=work, args=(k, t0 + secs)) for k in range(workers)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        el = time.perf_counter() - t0
        print(sum(ok), sum(short), sum(errs), "%.3f" % el, "%.1f" % (sum(ok) / el))
        if first:
            print("httpc: %d of %d requests failed; the first: %s"
                  % (sum(errs), sum(ok) + sum(short) + sum(errs), first[0]), file=sys.stderr)
    else:
        sys.exit("httpc: unknown mode " + mode)

main()
EOF
httpc () { "$PY" -I -S "$WORK/httpc.py" "$@"; }

declare -A URL_DIRECT=() URL_PROXIED=() HTTP_ID=() CHECKS=() SHORTS=() BADS=() BADWHY=()
for rt in runsc runc; do SHORTS[direct-$rt]=0 SHORTS[proxied-$rt]=0 BADS[direct-$rt]=0 BADS[proxied-$rt]=0; done
TOKEN_FILE=$SBX_ROOT/token
# A sandbox serving /www over busybox httpd, exposed; its two URLs; checks.
http_setup ()  # RT
{
  local rt=$1 id addr url route got d p cs=("rate-direct-$1" "rate-proxied-$1" "dl-direct-$1" "dl-proxied-$1") i
  if ! sbxq create --runtime "$rt" --timeout 1800 || ! id=$(last_line) || [[ $id != sb-* ]]; then
    fail "${cs[@]}" -- "sbx create --runtime $rt failed"; return 1
  fi
  printf '%s\n' "$id" >>"$WORK/ids"
  HTTP_ID[$rt]=$id
  if ! sbxq exec "$id" -- sh -c "mkdir -p /www && head -c $SMALL_BYTES /dev/urandom >/www/small && head -c $BIG_BYTES /dev/urandom >/www/big && wc -c /www/small /www/big"; then
    fail "${cs[@]}" -- "writing /www/small and /www/big in $id failed"; return 1
  fi
  if ! sbxq exec -d "$id" -- httpd -f -p 0.0.0.0:8080 -h /www; then
    fail "${cs[@]}" -- "sbx exec -d $id -- httpd failed"; return 1
  fi
  addr=$("$SBX" --json status "$id" 2>>"$LOG" | pyj 'd["network"]["address"]')
  # Nothing may leave the host: the sandbox's address must be routed into
  # its own veth (sbx + the id's 12 hex digits) before anything is sent.
  route=$(ip route get "$addr" 2>&1)
  if [[ $addr != 10.202.* || $route != *" dev sbx${id#sb-} "* ]]; then
    fail "${cs[@]}" -- "the sandbox's address '$addr' is not routed into its veth sbx${id#sb-} ($route): nothing sent"
    return 1
  fi
  if ! sbxq --json expose "$id" 8080 || ! url=$(pyj 'd["url"]' <"$WORK/last-out"); then
    fail "${cs[@]}" -- "sbx expose $id 8080 failed"; return 1
  fi
  if [[ $url != http://127.0.0.1:*/ ]]; then
    fail "${cs[@]}" -- "sbx expose gave $url, not a URL on 127.0.0.1: nothing sent"; return 1
  fi
  [[ -f $TOKEN_FILE ]] || { fail "${cs[@]}" -- "no token file $TOKEN_FILE after sbx expose"; return 1; }
  URL_DIRECT[$rt]=http://$addr:8080/ URL_PROXIED[$rt]=$url
  # httpd was started in the background: wait until it answers.
  for ((i = 0; i < 50; i++)); do
    got=$(httpc check "${URL_DIRECT[$rt]}" /small - 2>>"$LOG") && [[ $got == 200\ * ]] && break
    sleep 0.1
  done
  # Checks: both ways give the same bytes; the relay refuses a request
  # without the token or with a wrong one, and answers with Connection: close.
  printf 'wrong-token-%s\n' "$TAG" >"$WORK/wrong-token"
  local st n dg sh bad pst pn pdg pconn psh pbad
  for p in small big; do
    d=$(httpc check "${URL_DIRECT[$rt]}" "/$p" - 2>>"$LOG")
    got=$(httpc check "$url" "/$p" "$TOKEN_FILE" 2>>"$LOG")
    printf '== check /%s: direct %s; proxied %s\n' "$p" "$d" "$got" >>"$LOG"
    read -r st n dg _ sh bad <<<"$d"
    read -r pst pn pdg pconn psh pbad <<<"$got"
    SHORTS[direct-$rt]=$((SHORTS[direct-$rt] + ${sh:-0})) BADS[direct-$rt]=$((BADS[direct-$rt] + ${bad:-0}))
    SHORTS[proxied-$rt]=$((SHORTS[proxied-$rt] + ${psh:-0})) BADS[proxied-$rt]=$((BADS[proxied-$rt] + ${pbad:-0}))
    [[ $p == small ]] && i=$SMALL_BYTES || i=$BIG_BYTES
    if [[ ${st:-} != 200 || ${n:-} != "$i" ]]; then
      fail "${cs[@]}" -- "direct GET /$p: '$d', not 200 and $i bytes"; return 1
    fi
    if [[ ${pst:-} != 200 || ${pn:-} != "$i" || ${pdg:-} != "$dg" ]]; then
      fail "${cs[@]}" -- "proxied GET /$p: '$got', not the direct answer '$d'"; return 1
    fi
    if [[ ${pconn:-} != *close* ]]; then
      fail "${cs[@]}" -- "proxied GET /$p: the answer's Connection header is '${pconn:-}', not close"; return 1
    fi
  done
  got=$(httpc check "$url" /small - 2>>"$LOG")
  d=$(httpc check "$url" /small "$WORK/wrong-token" 2>>"$LOG")
  if [[ $got != 401\ * || $d != 401\ * ]]; then
    fail "${cs[@]}" -- "the relay answered '${got%% *}' without the token and '${d%% *}' with a wrong one, not 401"; return 1
  fi
  CHECKS[$rt]="same bytes both ways (sha256 of /small and /big); proxied: 401 without the token and with a wrong one, 200 with it, Connection: close"
  note "$rt: $id serves $SMALL_BYTES + $BIG_BYTES bytes; direct ${URL_DIRECT[$rt]}, proxied $url; checks passed"
  return 0
}

# One rate round (RECORD false: a 1-second warm-up) or one download.
rate_case ()  # RT WAY(direct|proxied) ROUND RECORD
{
  local rt=$1 way=$2 record=$4 c=rate-$2-$1 url tok=- out secs ok sh errs why
  [[ -n ${FAILED[$c]:-} ]] && return 1
  if [[ $way == direct ]]; then url=${URL_DIRECT[$rt]}; else url=${URL_PROXIED[$rt]} tok=$TOKEN_FILE; fi
  $record && secs=$HTTP_SECONDS || secs=1
  printf '== rate %s %ss x %s workers (round %s)\n' "$c" "$secs" "$WORKERS" "$3" >>"$LOG"
  out=$(httpc rate "$url" /small "$tok" "$secs" "$WORKERS" "$SMALL_BYTES" 2>"$WORK/httpc-err")
  why=$(tail -1 "$WORK/httpc-err")
  cat "$WORK/httpc-err" >>"$LOG"
  printf '%s\n' "$out" >>"$LOG"
  if ! read -r ok sh errs _ <<<"$out" || [[ ! $ok =~ ^[0-9]+$ || ! $sh =~ ^[0-9]+$ || ! $errs =~ ^[0-9]+$ ]]; then
    fail "$c" -- "$c: the client failed: $why"; return 1
  fi
  SHORTS[$way-$rt]=$((SHORTS[$way-$rt] + sh))
  if ((errs)); then
    BADS[$way-$rt]=$((BADS[$way-$rt] + errs))
    [[ -z ${BADWHY[$way-$rt]:-} ]] && BADWHY[$way-$rt]=${why##*the first: }
  fi
  if ((ok == 0 || errs * 50 > ok + sh + errs)); then
    fail "$c" -- "$c: $errs of $((ok + sh + errs)) requests failed (more than 2%): $why"; return 1
  fi
  $record && printf '%s\n' "${out##* }" >>"$SAMPLES/$c"
  return 0
}
dl_case ()  # RT WAY ROUND RECORD
{
  local rt=$1 way=$2 record=$4 c=dl-$2-$1 url tok=- out rc try why
  [[ -n ${FAILED[$c]:-} ]] && return 1
  if [[ $way == direct ]]; then url=${URL_DIRECT[$rt]}; else url=${URL_PROXIED[$rt]} tok=$TOKEN_FILE; fi
  # A short (exit status 3) or failed (4) answer is asked again, 9 times at most.
  for ((try = 1; try <= 10; try++)); do
    printf '== get %s (round %s, try %s)\n' "$c" "$3" "$try" >>"$LOG"
    out=$(httpc get "$url" /big "$tok" "$BIG_BYTES" 2>"$WORK/httpc-err")
    rc=$?
    why=$(tail -1 "$WORK/httpc-err")
    cat "$WORK/httpc-err" >>"$LOG"
    case $rc in
      3) SHORTS[$way-$rt]=$((SHORTS[$way-$rt] + 1)) ;;
      4) BADS[$way-$rt]=$((BADS[$way-$rt] + 1))
         [[ -z ${BADWHY[$way-$rt]:-} ]] && BADWHY[$way-$rt]=${why#httpc: } ;;
      *) break ;;
    esac
  done
  if ((rc != 0)) || [[ ! $out =~ ^[0-9]+$ ]]; then
    fail "$c" -- "$c: the download failed (exit status $rc after $((try - 1)) tries): $why"; return 1
  fi
  printf '%s us\n' "$out" >>"$LOG"
  $record && printf '%s\n' "$out" >>"$SAMPLES/$c"
  return 0
}
rate_direct () { rate_case "$HRT" direct "$@"; }
rate_proxied () { rate_case "$HRT" proxied "$@"; }
dl_direct () { dl_case "$HRT" direct "$@"; }
dl_proxied () { dl_case "$HRT" proxied "$@"; }

note "part 2: HTTP, per runtime: 1 warm-up + $HTTP_ROUNDS rounds of ${HTTP_SECONDS}s x $WORKERS workers each way, 1 warm-up + $DL_RUNS downloads each way"
for HRT in "${RTS[@]}"; do
  if http_setup "$HRT"; then
    rounds "$HTTP_ROUNDS" rate_direct rate_proxied
    rounds "$DL_RUNS" dl_direct dl_proxied
  fi
  if [[ -n ${HTTP_ID[$HRT]:-} ]]; then
    sbxq terminate --rm "${HTTP_ID[$HRT]}" || note "sbx terminate --rm ${HTTP_ID[$HRT]} failed"
  fi
done
"$SBX" gc >>"$LOG" 2>&1
ELAPSED=$((SECONDS - BENCH_T0))

# ---------------------------------------------------------------- report
# stats NAME -> "runs median min max" of its samples (empty when none)
stats ()
{
  local f=$SAMPLES/$1
  [[ -s $f ]] || return 0
  sort -g "$f" | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%d %s %s %s", NR, m, v[1], v[NR] }'
}
CREATE_CASES=()
for rt in runsc runc; do CREATE_CASES+=("create-net-$rt" "create-nonet-$rt"); done
PODMAN_CASES=(podman-bridge podman-none)
RATE_CASES=() DL_CASES=()
for rt in runsc runc; do
  RATE_CASES+=("rate-direct-$rt" "rate-proxied-$rt")
  DL_CASES+=("dl-direct-$rt" "dl-proxied-$rt")
done
ALL_CASES=("${CREATE_CASES[@]}" "${PODMAN_CASES[@]}" "${RATE_CASES[@]}" "${DL_CASES[@]}")
declare -A MED=() NRUNS=() MIN=() MAX=()
for c in "${ALL_CASES[@]}"; do
  read -r "NRUNS[$c]" "MED[$c]" "MIN[$c]" "MAX[$c]" <<<"$(stats "$c")"
done
# A failed case keeps no samples: a partial median would mislead.
for c in "${!FAILED[@]}"; do MED[$c]=; done
# A case never run because its runtime is not in --runtime: left out.
declare -A OMIT=()
for rt in runsc runc; do
  [[ $RUNTIME == both || $RUNTIME == "$rt" ]] && continue
  for c in create-net create-nonet rate-direct rate-proxied dl-direct dl-proxied; do OMIT[$c-$rt]=1; done
done

fmt () { awk -v v="$1" -v d="$2" -v f="$3" 'BEGIN { printf "%." f "f", v / d }'; }
ms () { fmt "$1" 1000 1; }
mbs () { awk -v b="$BIG_BYTES" -v u="$1" 'BEGIN { printf "%.0f", b / u }'; }   # MB/s, MB = 10^6 bytes

# The network's cost in sbx create, per runtime (and podman's): the
# difference of the medians, and the median of the differences of each
# round (round i's two creates ran back to back, so the host's load weighs
# on both).
paired_diff ()  # CASE_A CASE_B -> median of (a_i - b_i) in us
{
  local a=$SAMPLES/$1 b=$SAMPLES/$2
  [[ -s $a && -s $b ]] || return 0
  paste "$a" "$b" | awk 'NF == 2 { print $1 - $2 }' | sort -g | awk '{ v[NR] = $1 } END {
    if (NR) printf "%s", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
declare -A NETDIFF=() NETPAIRED=() NETMET=()
COST_ROWS=()
for rt in runsc runc; do
  [[ -n ${OMIT[create-net-$rt]:-} ]] && continue
  COST_ROWS+=("$rt")
  if [[ -n ${MED[create-net-$rt]:-} && -n ${MED[create-nonet-$rt]:-} ]]; then
    NETDIFF[$rt]=$(awk -v a="${MED[create-net-$rt]}" -v b="${MED[create-nonet-$rt]}" 'BEGIN { printf "%.1f", (a - b) / 1000 }')
    NETPAIRED[$rt]=$(ms "$(paired_diff "create-net-$rt" "create-nonet-$rt")")
    NETMET[$rt]=$(awk -v v="${NETDIFF[$rt]}" 'BEGIN { r = (v <= 5) ? "met" : "MISSED"; print r }')
  fi
done
if [[ -n ${MED[podman-bridge]:-} && -n ${MED[podman-none]:-} ]]; then
  NETDIFF[podman]=$(awk -v a="${MED[podman-bridge]}" -v b="${MED[podman-none]}" 'BEGIN { printf "%.1f", (a - b) / 1000 }')
  NETPAIRED[podman]=$(ms "$(paired_diff podman-bridge podman-none)")
fi

# proxied/direct, per runtime: requests per second, and MB/s (the inverse
# of the download times' ratio).
declare -A RVAL=() RMET=()
RATIO_ROWS=()
for rt in runsc runc; do
  [[ -n ${OMIT[rate-direct-$rt]:-} ]] && continue
  RATIO_ROWS+=("rate-$rt" "dl-$rt")
  if [[ -n ${MED[rate-direct-$rt]:-} && -n ${MED[rate-proxied-$rt]:-} ]]; then
    RVAL[rate-$rt]=$(awk -v p="${MED[rate-proxied-$rt]}" -v d="${MED[rate-direct-$rt]}" 'BEGIN { r = (d > 0) ? p / d : 0; printf "%.2f", r }')
  fi
  if [[ -n ${MED[dl-direct-$rt]:-} && -n ${MED[dl-proxied-$rt]:-} ]]; then
    RVAL[dl-$rt]=$(awk -v p="${MED[dl-proxied-$rt]}" -v d="${MED[dl-direct-$rt]}" 'BEGIN { r = (p > 0) ? d / p : 0; printf "%.2f", r }')
  fi
  for r in "rate-$rt" "dl-$rt"; do
    [[ -n ${RVAL[$r]:-} ]] && RMET[$r]=$(awk -v v="${RVAL[$r]}" 'BEGIN { r = (v >= 0.7) ? "met" : "MISSED"; print r }')
  done
done
declare -A RDESC=()
for rt in runsc runc; do
  RDESC[rate-$rt]="req/s proxied/direct, $rt"
  RDESC[dl-$rt]="MB/s proxied/direct, $rt"
done

# Steps of sbx create: "median_us<TAB>runs<TAB>step" in event order.
step_stats ()
{
  local f=$WORK/steps-$1 label
  [[ -s $f ]] || return 0
  awk -F'\t' '!seen[$1]++ { print $1 }' "$f" | while IFS= read -r label; do
    awk -F'\t' -v l="$label" '$1 == l { print $2 }' "$f" | sort -g | awk -v l="$label" '{ v[NR] = $1 }
      END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.0f\t%d\t%s\n", m, NR, l }'
  done
}
STEP_RTS=()
declare -A STEPS_NET=() STEPS_NONET=()
for rt in runsc runc; do
  [[ -n ${MED[create-net-$rt]:-} && -n ${MED[create-nonet-$rt]:-} ]] || continue
  STEPS_NET[$rt]=$(step_stats "create-net-$rt")
  STEPS_NONET[$rt]=$(step_stats "create-nonet-$rt")
  [[ -n ${STEPS_NET[$rt]} && -n ${STEPS_NONET[$rt]} ]] && STEP_RTS+=("$rt")
done
# step_rows RT -> "label<TAB>net_us<TAB>nonet_us" for every step of either side, net's order first
step_rows ()
{
  awk -F'\t' 'FNR == 1 { f++ } f == 1 { if (!($3 in a)) o[++n] = $3; a[$3] = $1 }
    f == 2 { if (!($3 in a) && !($3 in b)) o[++n] = $3; b[$3] = $1 }
    END { for (i = 1; i <= n; i++) printf "%s\t%s\t%s\n", o[i], (o[i] in a) ? a[o[i]] : "", (o[i] in b) ? b[o[i]] : "" }' \
    <(printf '%s\n' "${STEPS_NET[$1]}") <(printf '%s\n' "${STEPS_NONET[$1]}")
}

declare -A DESC=(
  [create-net-runsc]="sbx create --runtime runsc  (netns, veth, nftables, resolver)"
  [create-nonet-runsc]="sbx create --runtime runsc --block-network"
  [create-net-runc]="sbx create --runtime runc  (netns, veth, nftables, resolver)"
  [create-nonet-runc]="sbx create --runtime runc --block-network"
  [podman-bridge]="podman --runtime runc run --rm --rootfs DIR /bin/true  (default bridge)"
  [podman-none]="podman --runtime runc run --rm --network=none --rootfs DIR /bin/true"
)
for rt in runsc runc; do
  DESC[rate-direct-$rt]="GET /small straight to the sandbox's address"
  DESC[rate-proxied-$rt]="GET /small through the exposed port, with the token"
  DESC[dl-direct-$rt]="GET /big straight to the sandbox's address"
  DESC[dl-proxied-$rt]="GET /big through the exposed port, with the token"
done
nodata ()  # CASE -> the reason a case has no median
{
  if [[ -n ${SKIPPED[$1]:-} ]]; then printf 'skipped: %s' "${SKIPPED[$1]}"; else printf '%s' "${FAILED[$1]:-no samples}"; fi
}
row_ms ()  # CASE
{
  local c=$1
  if [[ -n ${MED[$c]:-} ]]; then
    printf '%-20s %4s %10s %9s %9s  %s\n' "$c" "${NRUNS[$c]}" "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" \
      "$(ms "${MAX[$c]}")" "${DESC[$c]}"
  else
    printf '%-20s %4s %10s   (%s)\n' "$c" 0 - "$(nodata "$c")"
  fi
}
row_rate ()  # CASE
{
  local c=$1
  if [[ -n ${MED[$c]:-} ]]; then
    printf '%-20s %4s %10s %9s %9s  %s\n' "$c" "${NRUNS[$c]}" "$(fmt "${MED[$c]}" 1 0)" "$(fmt "${MIN[$c]}" 1 0)" \
      "$(fmt "${MAX[$c]}" 1 0)" "${DESC[$c]}"
  else
    printf '%-20s %4s %10s   (%s)\n' "$c" 0 - "$(nodata "$c")"
  fi
}
row_dl ()  # CASE
{
  local c=$1
  if [[ -n ${MED[$c]:-} ]]; then
    printf '%-20s %4s %10s %9s %9s %6s  %s\n' "$c" "${NRUNS[$c]}" "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" \
      "$(ms "${MAX[$c]}")" "$(mbs "${MED[$c]}")" "${DESC[$c]}"
  else
    printf '%-20s %4s %10s   (%s)\n' "$c" 0 - "$(nodata "$c")"
  fi
}

table ()
{
  local c rt r l a b
  printf '\nsbx network benchmark: %s timed rounds of each sbx create, %s of each podman run; %s rate rounds of %ss and %s downloads each way; %ss in all\n' \
    "$N" "$( $HAVE_PODMAN && echo "$PODMAN_RUNS" || echo 0)" "$HTTP_ROUNDS" "$HTTP_SECONDS" "$DL_RUNS" "$ELAPSED"
  printf 'host: %s, %s CPUs; %s (%s); runc %s; runsc %s; podman %s; %s\n' \
    "$(uname -r)" "$(nproc)" "$("$SBX" version 2>/dev/null | head -1)" "$SBX_SRC" \
    "$(runc --version 2>/dev/null | awk 'NR==1{print $3}')" \
    "$(runsc --version 2>/dev/null | awk 'NR==1{print $3}')" \
    "$(podman --version 2>/dev/null | awk '{print $3}')" "$("$PY" -I -S -V 2>&1)"
  printf 'sbx.conf: %s (pool4 = %s, expose_address = 127.0.0.1); work dir on %s\n' "$SBX_CONF" "$POOL4" "$FS_DESC"
  printf '\n%-20s %4s %10s %9s %9s  %s\n' create runs "median ms" "min ms" "max ms" command
  for c in "${CREATE_CASES[@]}" "${PODMAN_CASES[@]}"; do
    [[ -n ${OMIT[$c]:-} ]] || row_ms "$c"
  done
  printf '\n%-28s %12s %14s %9s  %s\n' "what the network adds" "diff of" "median of" target result
  printf '%-28s %12s %14s\n' "" medians "paired diffs"
  for rt in "${COST_ROWS[@]}"; do
    printf '%-28s %12s %14s %9s  %s\n' "sbx create, $rt" "${NETDIFF[$rt]:--} ms" "${NETPAIRED[$rt]:--} ms" "<= 5 ms" \
      "${NETMET[$rt]:-n/a}"
  done
  printf '%-28s %12s %14s %9s  %s\n' "podman run (bridge - none)" "${NETDIFF[podman]:--} ms" "${NETPAIRED[podman]:--} ms" - \
    "$(if [[ -n ${NETDIFF[podman]:-} ]]; then echo "(peer, information)"; else nodata podman-bridge; fi)"
  for rt in "${STEP_RTS[@]}"; do
    printf '\nsteps of sbx create, %s, from the sandbox log (median ms; a step ends at the event named):\n' "$rt"
    printf '  %-50s %8s %8s %8s\n' "" network "--block-" diff
    printf '  %-50s %8s %8s %8s\n' "" "" network ""
    while IFS=$'\t' read -r l a b; do
      printf '  %-50s %8s %8s %8s\n' "$l" "$( [[ -n $a ]] && ms "$a" || echo -)" "$( [[ -n $b ]] && ms "$b" || echo -)" \
        "$( [[ -n $a && -n $b ]] && awk -v a="$a" -v b="$b" 'BEGIN { printf "%+.1f", (a - b) / 1000 }' || echo -)"
    done < <(step_rows "$rt")
  done
  printf '\nHTTP: busybox httpd in the sandbox; one client (python3 -I -S, raw HTTP/1.1, a new connection per request,\n'
  printf 'Connection: close, read to EOF) both ways; direct = http://ADDRESS:8080/ over the sandbox'"'"'s veth, proxied =\n'
  printf 'the URL of sbx expose (the relay in the monitor, on 127.0.0.1).\n'
  printf '\n%-20s %4s %10s %9s %9s  %s\n' "rate ($WORKERS workers)" runs "median/s" "min/s" "max/s" "request ($SMALL_BYTES bytes)"
  for c in "${RATE_CASES[@]}"; do [[ -n ${OMIT[$c]:-} ]] || row_rate "$c"; done
  printf '\n%-20s %4s %10s %9s %9s %6s  %s\n' download runs "median ms" "min ms" "max ms" "MB/s" "request ($BIG_BYTES bytes; MB/s from the median, MB = 10^6 bytes)"
  for c in "${DL_CASES[@]}"; do [[ -n ${OMIT[$c]:-} ]] || row_dl "$c"; done
  printf '\n%-28s %7s %9s  %s\n' ratio value target result
  for r in "${RATIO_ROWS[@]}"; do
    printf '%-28s %7s %9s  %s\n' "${RDESC[$r]}" "${RVAL[$r]:--}" ">= 0.7" "${RMET[$r]:-n/a}"
  done
  printf '\nEvery proxied request is authorized: it carries Authorization: Bearer TOKEN (%s), which the\n' 'SBX_ROOT/token'
  printf 'relay checks before it connects to the sandbox, and it goes with Connection: close (one request per\n'
  printf 'connection, as the relay does).  The direct requests are the same but for the token.\n'
  for rt in "${RTS[@]}"; do
    [[ -n ${CHECKS[$rt]:-} ]] && printf 'checked, %s: %s\n' "$rt" "${CHECKS[$rt]}"
  done
  local w
  for rt in "${RTS[@]}"; do
    ((SHORTS[direct-$rt] + SHORTS[proxied-$rt] + BADS[direct-$rt] + BADS[proxied-$rt] > 0)) || continue
    printf 'answers not counted, %s (warm-up included):' "$rt"
    for w in direct proxied; do
      printf ' %s: %s short, %s failed%s;' "$w" "${SHORTS[$w-$rt]}" "${BADS[$w-$rt]}" \
        "$( [[ -n ${BADWHY[$w-$rt]:-} ]] && printf ' (the first: %s)' "${BADWHY[$w-$rt]}")"
    done
    printf '\n'
  done
  for rt in "${RTS[@]}"; do
    if ((SHORTS[direct-$rt] + SHORTS[proxied-$rt] + BADS[direct-$rt] + BADS[proxied-$rt] > 0)); then
      printf '  (short: a 200 whose body ended before its Content-Length; failed: no answer, or not a 200.  Busybox httpd\n'
      printf '  under runsc'"'"'s host network stack does both now and then, either way; the relay answers the second with\n'
      printf '  502.  They are left out of req/s; a download is asked again.)\n'
      break
    fi
  done
  return 0
}

json_str () { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; printf '"%s"' "$s"; }
json_case ()  # NAME UNIT
{
  local c=$1
  if [[ -n ${MED[$c]:-} ]]; then
    case $2 in
      ms) printf '{"runs": %s, "median_ms": %s, "min_ms": %s, "max_ms": %s}' "${NRUNS[$c]}" \
            "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")" ;;
      rate) printf '{"runs": %s, "median_per_s": %s, "min_per_s": %s, "max_per_s": %s, "bytes": %s}' "${NRUNS[$c]}" \
            "$(fmt "${MED[$c]}" 1 1)" "$(fmt "${MIN[$c]}" 1 1)" "$(fmt "${MAX[$c]}" 1 1)" "$SMALL_BYTES" ;;
      dl) printf '{"runs": %s, "median_ms": %s, "min_ms": %s, "max_ms": %s, "mb_per_s": %s, "bytes": %s}' "${NRUNS[$c]}" \
            "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")" "$(mbs "${MED[$c]}")" "$BIG_BYTES" ;;
    esac
  elif [[ -n ${SKIPPED[$c]:-} ]]; then
    printf '{"runs": 0, "skipped": %s}' "$(json_str "${SKIPPED[$c]}")"
  else
    printf '{"runs": 0, "error": %s}' "$(json_str "${FAILED[$c]:-no samples}")"
  fi
}
json ()
{
  local sep c r rt
  printf '{\n  "rounds": {"create": %s, "podman": %s, "rate": %s, "rate_seconds": %s, "workers": %s, "downloads": %s},\n' \
    "$N" "$( $HAVE_PODMAN && echo "$PODMAN_RUNS" || echo 0)" "$HTTP_ROUNDS" "$HTTP_SECONDS" "$WORKERS" "$DL_RUNS"
  printf '  "elapsed_s": %s,\n  "pool4": %s,\n  "cases": {' "$ELAPSED" "$(json_str "$POOL4")"
  sep=
  for c in "${ALL_CASES[@]}"; do
    [[ -n ${OMIT[$c]:-} ]] && continue
    printf '%s\n    %s: ' "$sep" "$(json_str "$c")"; sep=,
    case $c in rate-*) json_case "$c" rate ;; dl-*) json_case "$c" dl ;; *) json_case "$c" ms ;; esac
  done
  printf '\n  },\n  "network_cost_ms": {'
  sep=
  for rt in "${COST_ROWS[@]}" podman; do
    printf '%s\n    %s: {"diff_of_medians": %s, "median_of_paired_diffs": %s, "target": %s, "met": %s}' "$sep" \
      "$(json_str "$rt")" "${NETDIFF[$rt]:-null}" "${NETPAIRED[$rt]:-null}" \
      "$(if [[ $rt == podman ]]; then echo null; else json_str "<= 5"; fi)" \
      "$(case ${NETMET[$rt]:-} in met) echo true ;; MISSED) echo false ;; *) echo null ;; esac)"
    sep=,
  done
  printf '\n  },\n  "ratios": {'
  sep=
  for r in "${RATIO_ROWS[@]}"; do
    printf '%s\n    %s: {"proxied_over_direct": %s, "target": ">= 0.7", "met": %s}' "$sep" "$(json_str "$r")" \
      "${RVAL[$r]:-null}" "$(case ${RMET[$r]:-} in met) echo true ;; MISSED) echo false ;; *) echo null ;; esac)"
    sep=,
  done
  printf '\n  },\n  "answers_not_counted": {'
  sep=
  for rt in "${RTS[@]}"; do
    printf '%s\n    %s: {"direct": {"short": %s, "failed": %s}, "proxied": {"short": %s, "failed": %s}}' "$sep" "$(json_str "$rt")" \
      "${SHORTS[direct-$rt]}" "${BADS[direct-$rt]}" "${SHORTS[proxied-$rt]}" "${BADS[proxied-$rt]}"
    sep=,
  done
  printf '\n  },\n  "checks": {'
  sep=
  for rt in "${RTS[@]}"; do
    printf '%s\n    %s: %s' "$sep" "$(json_str "$rt")" "$( [[ -n ${CHECKS[$rt]:-} ]] && json_str "${CHECKS[$rt]}" || echo null)"
    sep=,
  done
  printf '\n  }\n}\n'
}

if $JSON; then
  table >&2
  json
else
  table
fi

# A benchmark, not a test: missed targets and skipped cases (a runtime or
# podman not there) do not fail it; a case that could not run does.
((${#FAILED[@]} == 0))
