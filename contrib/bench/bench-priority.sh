#!/usr/bin/env bash
# bench-priority.sh: how two CPU-bound sandboxes at different --priority
# split one core, under runc and runsc, side by side with the same split
# made by hand (two host busy loops in two sibling cgroups given the very
# cpu.shares / cpu.weight sbx gives those priorities): the kernel's own
# answer on this host at this moment, the reference sbx should match.
#
# Run as root.  See contrib/bench/README.md.  Only bash, coreutils, util-linux
# (taskset) and awk are needed besides sbx.

set -uo pipefail

SBX=${SBX:-sbx}
SECS=10
HIGH=8
LOW=2
CORE=0
RUNTIME=both

usage ()
{
  cat <<EOF
Usage: ${0##*/} [-t SECONDS] [--high P] [--low P] [--core N] [--runtime runsc|runc|both] [-h]

Per case, two busy loops (sh -c 'while :; do :; done') run at once, every
host process and thread of each pinned to core N (taskset), for SECONDS
after a one-second settling: one in a sandbox made with --priority P_HIGH
--cpu 0 (no quota: the weight alone decides), one with --priority P_LOW.
Their CPU time is read from their cgroups (cpuacct.usage, or cpu.stat's
usage_usec on cgroup v2) before and after.  Cases:
  host      the loops in two cgroups of this script's, given the weights
            sbx gives P_HIGH and P_LOW (the reference)
  sbx-runc, sbx-runsc   the loops as the sandboxes' initial commands
Prints each loop's CPU seconds, the high one's share of the two, and the
ratio high/low against the documented one (sbx-create(1): each priority
step is a factor of sqrt(2), so 8 and 2 split 8:1), "met" within +-15%.

Options:
  -t, --seconds S  the measured interval (default $SECS)
  --high P         the higher priority (default $HIGH)
  --low P          the lower priority (default $LOW)
  --core N         the core both loops are pinned to (default $CORE)
  --runtime RT     runsc, runc or both (default both)
  -h, --help       show this help

Environment: SBX (sbx binary, default "sbx"), SBX_INIT (passed through to
sbx), TMPDIR (where the throwaway store goes; default /var/tmp).
EOF
}

die () { printf 'bench-priority: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-priority: %s\n' "$*" >&2; }

num () { [[ ${2:-} =~ ^[0-9]+$ ]] || die "$1 wants a number"; }
while (($#)); do
  case $1 in
    -t|--seconds) num "$1" "${2:-}"; SECS=$2; shift 2 ;;
    --high) num "$1" "${2:-}"; HIGH=$2; shift 2 ;;
    --low) num "$1" "${2:-}"; LOW=$2; shift 2 ;;
    --core) num "$1" "${2:-}"; CORE=$2; shift 2 ;;
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
((HIGH <= 9 && LOW <= 9 && HIGH > LOW)) || die "priorities are 0-9, --high above --low"
((SECS >= 1)) || die "--seconds: at least 1"
((EUID == 0)) || die "run as root"

# shellcheck source=contrib/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# sbx's mapping (src/lib/priority.c), as sbx-create(1) documents it.
SHARES=(181 256 362 512 724 1024 1448 2048 2896 4096)
WEIGHTS=(18 25 35 50 71 100 141 200 283 400)
if [[ -d /sys/fs/cgroup/cpu && -f /sys/fs/cgroup/cpu/cpu.shares ]] || [[ -d /sys/fs/cgroup/cpuacct ]]; then
  CGV=1
else
  CGV=2
fi

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-priority.XXXXXX") || die "mktemp"
export SBX_ROOT=$WORK/root
export SBX_RUN_ROOT=/run/bench-priority.${WORK##*.}
HOSTCG=bench-priority-${WORK##*.}
LOG=$WORK/log
IDS=()
LOOPS=()

cleanup ()
{
  local id p d
  for p in "${LOOPS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  for id in "${IDS[@]}"; do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  "$SBX" gc >/dev/null 2>&1
  for d in /sys/fs/cgroup/cpu/"$HOSTCG" /sys/fs/cgroup/cpuacct/"$HOSTCG" /sys/fs/cgroup/"$HOSTCG"; do
    [[ -d $d ]] || continue
    rmdir "$d"/high "$d"/low "$d" 2>/dev/null
  done
  leak_report "" "$SBX_ROOT" "$SBX_RUN_ROOT"
  umount_under "$SBX_RUN_ROOT"
  rm -rf "$WORK" "$SBX_RUN_ROOT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# usage_ns DIR: the CPU time of cgroup DIR (its cpuacct dir on v1).
usage_ns ()
{
  if ((CGV == 1)); then
    cat "$1/cpuacct.usage"
  else
    awk '$1 == "usage_usec" { print $2 * 1000 }' "$1/cpu.stat"
  fi
}

# pin_all DIR: every thread of every process in cgroup DIR and below it (the
# runtime's REL/ctr) onto $CORE.
pin_all ()
{
  local p
  for p in $(find "$1" -name cgroup.procs -exec cat {} +); do taskset -a -c -p "$CORE" "$p" >/dev/null 2>&1; done
}

# measure CASE HIGH_DIR LOW_DIR: both loops run; their CPU time over $SECS.
measure ()
{
  local c=$1 hd=$2 ld=$3 h0 l0 h1 l1
  pin_all "$hd"
  pin_all "$ld"
  sleep 1
  # Anything started since (gVisor's stubs) is pinned too.
  pin_all "$hd"
  pin_all "$ld"
  h0=$(usage_ns "$hd") l0=$(usage_ns "$ld")
  sleep "$SECS"
  h1=$(usage_ns "$hd") l1=$(usage_ns "$ld")
  awk -v c="$c" -v h=$((h1 - h0)) -v l=$((l1 - l0)) -v want="$WANT" 'BEGIN {
    r = l > 0 ? h / l : 0
    ok = (r >= want * 0.85 && r <= want * 1.15) ? "met" : "MISSED"
    printf "%-10s %9.2f %9.2f %9.1f%% %8.2f %8.2f  %s\n", c, h / 1e9, l / 1e9, 100 * h / (h + l), r, want, ok }'
}

# The reference: two host busy loops in sibling cgroups with sbx's weights.
host_case ()
{
  local base pd p which
  if ((CGV == 1)); then base=/sys/fs/cgroup/cpu; else base=/sys/fs/cgroup; fi
  mkdir -p "$base/$HOSTCG/high" "$base/$HOSTCG/low" || { note "host: cannot make cgroups"; return 1; }
  ((CGV == 1)) && mkdir -p "/sys/fs/cgroup/cpuacct/$HOSTCG/high" "/sys/fs/cgroup/cpuacct/$HOSTCG/low"
  for which in high low; do
    p=$HIGH
    [[ $which == low ]] && p=$LOW
    if ((CGV == 1)); then
      echo "${SHARES[$p]}" >"$base/$HOSTCG/$which/cpu.shares"
    else
      echo "${WEIGHTS[$p]}" >"$base/$HOSTCG/$which/cpu.weight"
    fi
    sh -c 'while :; do :; done' &
    LOOPS+=($!)
    echo "$!" >"$base/$HOSTCG/$which/cgroup.procs"
    ((CGV == 1)) && echo "$!" >"/sys/fs/cgroup/cpuacct/$HOSTCG/$which/cgroup.procs"
  done
  if ((CGV == 1)); then pd=/sys/fs/cgroup/cpuacct/$HOSTCG; else pd=$base/$HOSTCG; fi
  measure host "$pd/high" "$pd/low"
  for p in "${LOOPS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  LOOPS=()
}

# cg_of ID: the sandbox's cgroup directory with its CPU time.
cg_of ()
{
  local d
  if ((CGV == 1)); then d=$(echo /sys/fs/cgroup/cpuacct/sbx-*/"$1"); else d=$(echo /sys/fs/cgroup/sbx-*/"$1"); fi
  [[ -d $d ]] && printf '%s\n' "$d"
}

sbx_case ()
{
  local rt=$1 hi lo
  hi=$("$SBX" create --runtime "$rt" --block-network --cpu 0 --priority "$HIGH" --keep-warm 600 \
    -- sh -c 'while :; do :; done' 2>>"$LOG") || { note "$rt: create failed (see $LOG)"; return 1; }
  IDS+=("$hi")
  lo=$("$SBX" create --runtime "$rt" --block-network --cpu 0 --priority "$LOW" --keep-warm 600 \
    -- sh -c 'while :; do :; done' 2>>"$LOG") || { note "$rt: create failed"; return 1; }
  IDS+=("$lo")
  measure "sbx-$rt" "$(cg_of "$hi")" "$(cg_of "$lo")"
  "$SBX" rm -f "$hi" "$lo" >/dev/null 2>&1
}

if ((CGV == 1)); then
  WANT=$(awk -v a="${SHARES[$HIGH]}" -v b="${SHARES[$LOW]}" 'BEGIN { printf "%.3f", a / b }')
else
  WANT=$(awk -v a="${WEIGHTS[$HIGH]}" -v b="${WEIGHTS[$LOW]}" 'BEGIN { printf "%.3f", a / b }')
fi
note "cgroup v$CGV, priorities $HIGH and $LOW on core $CORE for $SECS s each (load now: $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-10s %9s %9s %10s %8s %8s  %s\n' case "high-s" "low-s" "high-share" ratio want verdict
host_case
for rt in $RUNTIMES; do sbx_case "$rt"; done
