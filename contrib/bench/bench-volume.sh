#!/usr/bin/env bash
# bench-volume.sh: a named volume's read and write throughput inside a
# sandbox, side by side with the same I/O on the sandbox's own root, under
# runc and runsc: a plain volume (a directory on the store's filesystem) and
# a sized one (--size: an ext4 image through a loop device).
#
# Run as root.  See contrib/bench/README.md.  Only bash, coreutils and awk are
# needed besides sbx.

set -uo pipefail

SBX=${SBX:-sbx}
MIB=256
RUNS=3
RUNTIME=both

usage ()
{
  cat <<EOF
Usage: ${0##*/} [--mib M] [-k K] [--runtime runsc|runc|both] [-h]

In one sandbox per runtime, with a plain volume at /vol (one for both)
and a sized one at /svol (--size 2x M + 64 MiB, one per runtime: a
filesystem near full makes ext4 write through, which would be timed as the
volume's cost), K rounds (after one untimed warm-up), each case in
a new random order, each timed from the host as one \`sbx exec\`:
  write-root, write-vol, write-svol   dd if=/dev/zero of=DIR/f bs=1M count=M
  read-root,  read-vol,  read-svol    dd if=DIR/f of=/dev/null bs=1M (page cache warm,
                                      as the sandbox left it)
DIR is the sandbox's own root (/root-bench, on its --disk image, as every
sandbox's by default), /vol or /svol.  No fsync: the root's overlay is
mounted volatile (its fsync costs nothing), a volume's is real, so a write
is timed as a program sees it, into the page cache; \`sync\` (untimed) runs
before each.  Prints MB/s (10^6 bytes) per case and
the throughput ratios volume/root, each the median of the per-round ratios.
Targets: >= 0.9 under runc, >= 0.8 under runsc.

Options:
  --mib M        MiB per file (default $MIB)
  -k, --runs K   timed rounds (default $RUNS)
  --runtime RT   runsc, runc or both (default both)
  -h, --help     show this help

Environment: SBX (sbx binary, default "sbx"), SBX_INIT (passed through to
sbx), TMPDIR (where the throwaway store goes; default /var/tmp, a disk).
EOF
}

die () { printf 'bench-volume: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-volume: %s\n' "$*" >&2; }

posint () { [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 wants a positive integer"; }
while (($#)); do
  case $1 in
    --mib) posint "$1" "${2:-}"; MIB=$2; shift 2 ;;
    -k|--runs) posint "$1" "${2:-}"; RUNS=$2; shift 2 ;;
    --runtime) RUNTIME=${2:-}; shift 2 || die "--runtime wants a value" ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
case $RUNTIME in
  both) RUNTIMES="runc runsc" ;;
  runc|runsc) RUNTIMES=$RUNTIME ;;
  *) die "--runtime: runsc, runc or both" ;;
esac
((EUID == 0)) || die "run as root"

# shellcheck source=contrib/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-volume.XXXXXX") || die "mktemp"
export SBX_ROOT=$WORK/root
export SBX_RUN_ROOT=/run/bench-volume.${WORK##*.}
SAMPLES=$WORK/samples
LOG=$WORK/log
mkdir -p "$SAMPLES"
declare -A FAILED=()
IDS=()

cleanup ()
{
  local id
  for id in "${IDS[@]}"; do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  "$SBX" gc >/dev/null 2>&1
  leak_report "" "$SBX_ROOT" "$SBX_RUN_ROOT"
  umount_under "$SBX_RUN_ROOT"
  rm -rf "$WORK" "$SBX_RUN_ROOT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$SBX" volume create vol >>"$LOG" 2>&1 || die "volume create failed (see the log)"

declare -A DIRS=([root]=/root-bench [vol]=/vol [svol]=/svol)
CASES=()
for rt in $RUNTIMES; do
  "$SBX" volume create --size "$((MIB * 2 + 64))Mi" "svol-$rt" >>"$LOG" 2>&1 || die "volume create --size failed"
  id=$("$SBX" create --runtime "$rt" --block-network --keep-warm 3600 --volume vol:/vol --volume "svol-$rt:/svol" 2>>"$LOG") ||
    { note "create under $rt failed: skipped"; continue; }
  IDS+=("$id")
  "$SBX" exec "$id" -- mkdir -p /root-bench /vol/"$rt" /svol/"$rt" >>"$LOG" 2>&1
  declare -g "ID_$rt=$id"
  for d in root vol svol; do CASES+=("write-$d-$rt" "read-$d-$rt"); done
done
((${#CASES[@]})) || die "no runtime could run a sandbox"

# run_case CASE RECORD: one timed exec.
run_case ()
{
  local c=$1 op d rt id dir
  IFS=- read -r op d rt <<<"$c"
  id=ID_$rt
  id=${!id}
  dir=${DIRS[$d]}
  [[ $d != root ]] && dir=$dir/$rt
  if [[ $op == write ]]; then
    "$SBX" exec "$id" -- rm -f "$dir/f" >>"$LOG" 2>&1
    sync
    timed "$c" "$2" "$SBX" exec "$id" -- dd if=/dev/zero of="$dir/f" bs=1M count="$MIB"
  else
    timed "$c" "$2" "$SBX" exec "$id" -- dd if="$dir/f" of=/dev/null bs=1M
  fi
}

for round in $(seq 0 "$RUNS"); do
  record=false
  ((round > 0)) && record=true
  # Writes before reads in a round (a read needs its file), each half shuffled.
  for c in $(printf '%s\n' "${CASES[@]}" | grep '^write-' | shuf) $(printf '%s\n' "${CASES[@]}" | grep '^read-' | shuf); do
    run_case "$c" "$record"
  done
done

mbps ()  # CASE: median MB/s
{
  [[ -s $SAMPLES/$1 ]] || { printf -- '-'; return; }
  sort -n "$SAMPLES/$1" | awk -v b="$((MIB * 1048576))" '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.0f", b / m }'
}

printf '%-8s %-6s %10s %10s %10s %12s %12s\n' runtime op root vol svol vol/root svol/root
for rt in $RUNTIMES; do
  target=0.9
  [[ $rt == runsc ]] && target=0.8
  for op in write read; do
    [[ -s $SAMPLES/$op-root-$rt ]] || continue
    # Throughput ratio volume/root = time(root) / time(volume).
    rv=$(paired_ratio "$op-root-$rt" "$op-vol-$rt")
    rs=$(paired_ratio "$op-root-$rt" "$op-svol-$rt")
    verdict ()
    {
      [[ -n $1 ]] || { printf -- '-'; return; }
      awk -v r="$1" -v t="$target" 'BEGIN { printf "%s %s", r, (r >= t) ? "met" : "MISSED" }'
    }
    printf '%-8s %-6s %10s %10s %10s %12s %12s\n' "$rt" "$op" "$(mbps "$op-root-$rt")" "$(mbps "$op-vol-$rt")" \
      "$(mbps "$op-svol-$rt")" "$(verdict "$rv")" "$(verdict "$rs")"
  done
done
printf '(MB/s, medians of %d rounds of %d MiB; ratios: throughput on the volume / on the root, target >= 0.9 runc, >= 0.8 runsc)\n' \
  "$RUNS" "$MIB"
((${#FAILED[@]} == 0))
