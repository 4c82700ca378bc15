#!/usr/bin/env bash
# bench-density.sh: what idle sandboxes cost and how sbx's commands scale
# with their number, side by side at 5 and at N sandboxes, for each runtime
# and network mode asked for.
#
# Run as root.  See contrib/bench/README.md.  Besides sbx and its runtimes,
# bash, coreutils and awk.  Every sandbox is sbx's built-in busybox image,
# idle (no command), --memory 32Mi; with a network, its address comes from
# a throwaway sbx.conf's pool (10.203.0.0/16); no traffic is sent.

set -uo pipefail

SRC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." 2>/dev/null && pwd)
SBX=${SBX:-$SRC_TOP/sbx}
N=200
K=5
IDLE=30
RUNTIMES=(runc runsc)
NETS=(block net)
BATCH=10
POOL4=10.203.0.0/16

usage ()
{
  cat <<EOF
Usage: ${0##*/} [N] [--runtime runc|runsc|both] [--network block|net|both]
       [-k K] [--idle S] [-h]

For each runtime RT and network mode NET (block: --block-network; net: the
default network), in one throwaway store:
 1. 5 idle sandboxes; K timed runs of each command (untimed warm-up first):
      create     sbx create (+ terminate --rm, untimed)
      exec       sbx exec ID -- true
      status     sbx status ID
      ls         sbx ls
      stats      sbx stats
      gc         sbx gc
 2. N idle sandboxes (made $BATCH at a time, in the background), then:
      pss-sbx       PSS of each sandbox's monitor (sbx's own part), mean
      pss-runtime   PSS of the processes in its container's cgroup (runc:
                    sbx-init; runsc: gVisor's sandbox and gofer), mean
      cpu-idle      CPU time of all monitors over S seconds idle (default
                    $IDLE), in % of one core
    and the commands of step 1 again, K times each.
 3. One line per command: median at 5, median at N, ratio N/5
    (target: <= 1.2), and ls/stats/gc at N (target: < 100 ms at 1,000);
    PSS (target: sbx's part <= 2 MiB) and idle CPU (target: < 1% of one
    core at 1,000).
Everything is terminated and removed at the end; leaks are reported.
Default N: $N.  Figures measured on a shared host are noisy.
EOF
}

die () { printf 'bench-density: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-density: %s\n' "$*" >&2; }
posint () { [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 wants a positive integer"; }

while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --runtime)
      case ${2:-} in
        both) RUNTIMES=(runc runsc) ;; runc | runsc) RUNTIMES=("$2") ;; *) die "--runtime: runc, runsc or both" ;;
      esac
      shift 2 ;;
    --network)
      case ${2:-} in
        both) NETS=(block net) ;; block | net) NETS=("$2") ;; *) die "--network: block, net or both" ;;
      esac
      shift 2 ;;
    -k) posint -k "${2:-}"; K=$2; shift 2 ;;
    --idle) posint --idle "${2:-}"; IDLE=$2; shift 2 ;;
    [0-9]*) posint N "$1"; N=$1; shift ;;
    *) die "unknown argument $1 (see -h)" ;;
  esac
done
((N > 5)) || die "N must be above 5"
[[ $EUID == 0 ]] || die "run as root"
[[ -x $SBX ]] || die "no sbx at $SBX (set SBX)"
# shellcheck source=contrib/bench/lib.sh
. "$SRC_TOP/contrib/bench/lib.sh"

unset SBX_ROOT SBX_RUN_ROOT SBX_CONF
WORK=$(mktemp -d /tmp/bench-density.XXXXXX) || die "mktemp"
export SBX_ROOT=$WORK/root SBX_RUN_ROOT=$WORK/run SBX_CONF=$WORK/sbx.conf
printf 'pool4 = %s\n' "$POOL4" >"$SBX_CONF"
LOG=$WORK/log
SAMPLES=$WORK/samples
mkdir -p "$SAMPLES"
declare -A FAILED=()
CLEANED=false

remove_all ()
{
  local ids
  ids=$("$SBX" ls -q 2>/dev/null)
  [[ -z $ids ]] && return 0
  # shellcheck disable=SC2086
  "$SBX" terminate --rm $ids >>"$LOG" 2>&1 || "$SBX" rm -f $ids >>"$LOG" 2>&1
}

cleanup ()
{
  $CLEANED && return
  CLEANED=true
  trap '' INT TERM HUP
  remove_all
  "$SBX" gc >>"$LOG" 2>&1
  [[ -n $("$SBX" ls -q 2>/dev/null) ]] && note "LEAK: sbx still lists sandboxes after gc"
  local tag
  tag=$(printf '%s' "$(realpath -m "$SBX_ROOT")" | sha256sum | cut -c1-8)
  leak_report "sbx-$tag" "$WORK"
  umount_under "$WORK"
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

median ()  # FILE: the median of its lines, in ms
{
  sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", ((NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) / 1000 }'
}

# create_many COUNT OPTS...: COUNT more sandboxes, BATCH at a time.
create_many ()
{
  local n=$1 i j
  shift
  for ((i = 0; i < n; i += BATCH)); do
    for ((j = i; j < i + BATCH && j < n; j++)); do
      "$SBX" create "$@" >>"$WORK/ids" 2>>"$LOG" &
    done
    wait
  done
}

# commands TAG OPTS...: K timed runs of each command, into $SAMPLES/CMD-TAG.
commands ()
{
  local tag=$1 r id one
  shift
  one=$("$SBX" ls -q | head -1)
  for r in $(seq 0 "$K"); do
    local rec=true
    ((r == 0)) && rec=false
    timed "create-$tag" $rec "$SBX" create "$@"
    id=$(tail -1 "$LOG")
    [[ $id == sb-* ]] && "$SBX" terminate --rm "$id" >>"$LOG" 2>&1
    timed "exec-$tag" $rec "$SBX" exec "$one" -- true
    timed "status-$tag" $rec "$SBX" status "$one"
    timed "ls-$tag" $rec "$SBX" ls
    timed "stats-$tag" $rec "$SBX" stats
    timed "gc-$tag" $rec "$SBX" gc
  done
}

# The PSS of PIDs, summed, in KiB.
pss_kib ()
{
  local p sum=0 v
  for p in "$@"; do
    v=$(awk '/^Pss:/ { print $2; exit }' "/proc/$p/smaps_rollup" 2>/dev/null)
    sum=$((sum + ${v:-0}))
  done
  printf '%s\n' "$sum"
}

monitor_pids ()
{
  local id
  for id in $("$SBX" ls -q); do
    awk -F'"monitor_pid":' 'NF > 1 { split($2, a, /[,}]/); print a[1] + 0 }' "$SBX_ROOT/sandboxes/$id/state.json"
  done
}

# The processes in every sandbox's container cgroup (v1: the memory
# hierarchy; v2: the unified one).
runtime_pids ()
{
  local tag base
  tag=$(printf '%s' "$(realpath -m "$SBX_ROOT")" | sha256sum | cut -c1-8)
  base=/sys/fs/cgroup/memory/sbx-$tag
  [[ -d $base ]] || base=/sys/fs/cgroup/sbx-$tag
  cat "$base"/sb-*/ctr/cgroup.procs 2>/dev/null
}

cpu_ticks ()  # PIDS...: utime + stime, summed
{
  local p sum=0 s
  for p in "$@"; do
    read -r s <"/proc/$p/stat" 2>/dev/null || continue
    s=${s##*) }
    # shellcheck disable=SC2086
    set -- $s
    sum=$((sum + ${12} + ${13}))
  done
  printf '%s\n' "$sum"
}

RESULTS=()
result () { RESULTS+=("$(printf '%-28s %s' "$1" "$2")"); }

one_case ()  # RT NET
{
  local rt=$1 net=$2 opts=(--runtime "$1" --memory 32Mi) tag="$1-$2"
  [[ $net == block ]] && opts+=(--block-network)
  note "$tag: 5 sandboxes"
  : >"$WORK/ids"
  create_many 5 "${opts[@]}"
  commands "$tag-5" "${opts[@]}"
  note "$tag: $N sandboxes"
  create_many $((N - 5)) "${opts[@]}"
  local have
  have=$("$SBX" ls -q | wc -l)
  ((have == N)) || note "$tag: $have of $N sandboxes are running (see $LOG)"
  local mons rts t0 t1 hz
  mapfile -t mons < <(monitor_pids)
  mapfile -t rts < <(runtime_pids)
  result "pss-sbx-$tag" "$(($(pss_kib "${mons[@]}") / ${#mons[@]})) KiB per sandbox (monitor; target <= 2048)"
  result "pss-runtime-$tag" "$(($(pss_kib "${rts[@]}") / ${#mons[@]})) KiB per sandbox (container cgroup)"
  hz=$(getconf CLK_TCK)
  t0=$(cpu_ticks "${mons[@]}")
  sleep "$IDLE"
  t1=$(cpu_ticks "${mons[@]}")
  result "cpu-idle-$tag" "$(awk -v d=$((t1 - t0)) -v hz="$hz" -v s="$IDLE" 'BEGIN { printf "%.3f%% of one core (%d monitors, %d s)", 100 * d / hz / s, '"${#mons[@]}"', s }')"
  commands "$tag-$N" "${opts[@]}"
  local c a b
  for c in create exec status ls stats gc; do
    a=$(median "$SAMPLES/$c-$tag-5")
    b=$(median "$SAMPLES/$c-$tag-$N")
    result "$c-$tag" "$a ms at 5, $b ms at $N: $(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.2fx", b / a }')"
  done
  remove_all
  "$SBX" gc >>"$LOG" 2>&1
}

for rt in "${RUNTIMES[@]}"; do
  command -v "$rt" >/dev/null || { note "$rt not installed: skipped"; continue; }
  for net in "${NETS[@]}"; do
    one_case "$rt" "$net"
  done
done
printf '%s\n' "${RESULTS[@]}"
