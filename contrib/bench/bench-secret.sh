#!/usr/bin/env bash
# bench-secret.sh: what a secret costs `sbx create`, side by side with a
# plain create, under runc and runsc (issue 20: a create with one secret
# within 5 ms of a plain one). Each round creates, in a random order, a
# plain sandbox, one with --secret, and one with --secret and --secret-file
# (the tmpfs mount and the file), each --block-network on the built-in
# busybox; only `sbx create` is timed, terminate and rm are not.
#
# Run as root. See contrib/bench/README.md. bash, coreutils and awk only.

set -uo pipefail

SBX=${SBX:-sbx}
N=10
RUNTIMES="runc runsc"
KEEP=false

usage ()
{
  cat <<EOF
Usage: ${0##*/} [-n N] [--runtime runc|runsc] [--keep] [-h]

Times N rounds (after one untimed warm-up) of, per runtime:
  plain-RT    sbx create --runtime RT --block-network
  secret-RT   the same with --secret bench-key --allow-secrets
  both-RT     the same with --secret bench-key --secret-file bench-key --allow-secrets
  volsec-RT   the same with --volume bench-vol:/data --secret bench-key --allow-secrets
and prints the medians, the paired per-round differences against plain-RT
in ms (target: secret-RT and volsec-RT, the issue's "one volume and one
secret", within +5 ms) and their ratios.

Options:
  -n N            rounds (default $N)
  --runtime RT    only this runtime (default: runc and runsc)
  --keep          keep the work directory (logs)
  -h, --help      show this help

Environment: SBX (sbx binary, default "sbx"), SBX_INIT (passed through to sbx).
EOF
}

die () { printf 'bench-secret: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-secret: %s\n' "$*" >&2; }

while (($#)); do
  case $1 in
    -n) N=${2:?}; shift 2 ;;
    --runtime) RUNTIMES=${2:?}; shift 2 ;;
    --keep) KEEP=true; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ $N =~ ^[1-9][0-9]*$ ]] || die "-n: not a positive number: $N"
((EUID == 0)) || die "run as root"
command -v "$SBX" >/dev/null || die "no sbx ($SBX): set SBX"

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

WORK=$(mktemp -d /tmp/bench-secret.XXXXXX)
export SBX_ROOT=$WORK/root SBX_RUN_ROOT=/run/bench-secret.${WORK##*.}
LOG=$WORK/log
SAMPLES=$WORK/samples
mkdir -p "$SAMPLES"
declare -A FAILED=()

cleanup ()
{
  local id
  for id in $("$SBX" ls -q 2>/dev/null); do
    "$SBX" terminate --rm "$id" >/dev/null 2>&1
  done
  "$SBX" gc >/dev/null 2>&1
  leak_report "" "$WORK" "$SBX_RUN_ROOT"
  umount_under "$WORK"
  umount_under "$SBX_RUN_ROOT"
  rm -rf --one-file-system "$SBX_RUN_ROOT"
  if $KEEP; then note "work directory kept: $WORK"; else rm -rf --one-file-system "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

printf 'bench-secret-value-%s' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" |
  "$SBX" secret create bench-key >>"$LOG" 2>&1 || die "sbx secret create failed (see $LOG)"

# create_one NAME ARGS...: one timed create (recorded unless WARM), then its
# sandbox ended and removed, untimed.
create_one ()
{
  local name=$1 record=$2 id
  shift 2
  timed "$name" "$record" "$SBX" create "$@" || return
  id=$(grep -o "sb-[0-9a-f]\{12\}" "$LOG" | tail -n 1)
  [[ $id == sb-* ]] || { note "$name: no id in the log"; return; }
  "$SBX" terminate --rm "$id" >>"$LOG" 2>&1
}

round ()  # RECORD
{
  local rt c
  for rt in $RUNTIMES; do
    for c in $(printf '%s\n' plain secret both volsec | shuf); do
      case $c in
        plain) create_one "plain-$rt" "$1" --runtime "$rt" --block-network ;;
        secret) create_one "secret-$rt" "$1" --runtime "$rt" --block-network --secret bench-key=BENCH_KEY \
          --allow-secrets ;;
        both) create_one "both-$rt" "$1" --runtime "$rt" --block-network --secret bench-key=BENCH_KEY \
          --secret-file bench-key --allow-secrets ;;
        volsec) create_one "volsec-$rt" "$1" --runtime "$rt" --block-network --volume bench-vol:/data \
          --secret bench-key=BENCH_KEY --allow-secrets ;;
      esac
    done
  done
}

median ()  # NAME: in ms
{
  [[ -s $SAMPLES/$1 ]] || { printf -- '-'; return; }
  sort -n "$SAMPLES/$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f", m / 1000 }'
}

# The median of the per-round differences A - B, in ms.
paired_diff ()  # A B
{
  [[ -s $SAMPLES/$1 && -s $SAMPLES/$2 ]] || return 0
  (($(wc -l <"$SAMPLES/$1") == $(wc -l <"$SAMPLES/$2"))) || return 0
  paste "$SAMPLES/$1" "$SAMPLES/$2" | awk '{ print ($1 - $2) / 1000 }' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) printf "%+.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

note "warm-up round"
round false
for ((i = 1; i <= N; i++)); do
  round true
done

printf '%-14s %10s %12s %8s %s\n' case median-ms vs-plain-ms ratio target
for rt in $RUNTIMES; do
  printf '%-14s %10s\n' "plain-$rt" "$(median "plain-$rt")"
  for c in secret both volsec; do
    d=$(paired_diff "$c-$rt" "plain-$rt")
    verdict=
    if [[ $c != both && -n $d ]]; then
      verdict=$(awk -v d="$d" 'BEGIN { print (d <= 5) ? "<= +5 ms: met" : "<= +5 ms: MISSED" }')
    fi
    printf '%-14s %10s %12s %8s %s\n' "$c-$rt" "$(median "$c-$rt")" "${d:--}" "$(paired_ratio "$c-$rt" "plain-$rt")" \
      "$verdict"
  done
done
((${#FAILED[@]} == 0))
