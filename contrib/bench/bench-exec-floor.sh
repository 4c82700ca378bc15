#!/usr/bin/env bash
# bench-exec-floor.sh: where the time of `sbx exec ID -- /bin/true` goes,
# per runtime: the CLI's own start, the whole exec of a command that exits
# at once (exec-exit.c) and of busybox's true, and, measured inside the sandbox by
# exec-floor.c, what starting a command costs the agent there: vfork +
# execve + waitpid (what sbx-init does) against a child forked ahead and
# waiting on a pipe (the fork off the critical path).
#
# Run as root.  See contrib/bench/README.md.  Needs a C compiler (static
# libc) and busybox-static besides bash, coreutils, tar and awk.

set -uo pipefail

SBX=${SBX:-sbx}
CC=${CC:-cc}
N=200
RUNTIMES=both

usage ()
{
  cat <<EOF
Usage: ${0##*/} [-n N] [--runtime runsc|runc|both] [-h]

Per runtime, one sandbox (--block-network) on a busybox rootfs that also
holds /bin/exec-floor and /bin/exec-exit (contrib/bench/exec-floor.c and
exec-exit.c, built static here):
  cli              sbx --version (the CLI's start and exit)
  exec-exit        sbx exec ID -- /bin/exec-exit (no libc: exits at once)
  exec-true        sbx exec ID -- /bin/true
N rounds of those three, in a new random order each round, then, inside
the sandbox, N rounds of exec-floor against /bin/true and against
/bin/exec-exit: vfork+execve+wait, split at vfork's return, and a
pre-forked child's execve+wait with the fork ahead timed apart. Medians.

Options:
  -n N                 rounds (default $N)
  --runtime RT         runsc, runc or both (default $RUNTIMES)
  -h, --help           show this help

Environment: SBX (sbx binary, default "sbx"), SBX_INIT (passed through to
sbx), CC (default cc).
EOF
}

die () { printf 'bench-exec-floor: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-exec-floor: %s\n' "$*" >&2; }

while (($#)); do
  case $1 in
    -n) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive integer"; N=$2; shift 2 ;;
    --runtime) [[ ${2:-} =~ ^(runsc|runc|both)$ ]] || die "--runtime wants runsc, runc or both"; RUNTIMES=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
[[ $RUNTIMES == both ]] && RUNTIMES="runc runsc"

((EUID == 0)) || die "run me as root"
command -v "$SBX" >/dev/null || die "sbx not found (set SBX=/path/to/sbx)"
SBX=$(command -v "$SBX")
for t in "$CC" tar awk sort shuf; do
  command -v "$t" >/dev/null || die "$t is needed"
done
BUSYBOX=$(command -v busybox) || die "busybox is needed (apt-get install busybox-static)"
ldd "$BUSYBOX" >/dev/null 2>&1 && die "$BUSYBOX is dynamically linked (apt-get install busybox-static)"

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

unset SBX_ROOT SBX_RUN_ROOT   # set again below, to throwaway dirs
WORK='' RUN_DIR='' CLEANED=false
SBX_IDS=()
cleanup ()
{
  $CLEANED && return
  CLEANED=true
  trap '' INT TERM HUP
  local id
  if [[ -n $WORK && ${SBX_ROOT:-} == "$WORK/sbx-root" && -d $SBX_ROOT ]]; then
    for id in "${SBX_IDS[@]}"; do "$SBX" terminate --rm "$id" >/dev/null 2>&1; done
    "$SBX" gc >/dev/null 2>&1
  fi
  [[ -n $WORK ]] && { umount_under "$WORK"; rm -rf --one-file-system "$WORK"; }
  [[ -n $RUN_DIR ]] && { umount_under "$RUN_DIR"; rm -rf --one-file-system "$RUN_DIR"; }
  [[ -z $WORK ]] || leak_report "" "$WORK" "$RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench.XXXXXX") || die "mktemp failed"
RUN_DIR=$(mktemp -d /run/sbx-bench.XXXXXX 2>/dev/null) || RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench-run.XXXXXX")
export SBX_ROOT=$WORK/sbx-root SBX_RUN_ROOT=$RUN_DIR
LOG=$WORK/log SAMPLES=$WORK/samples
mkdir -p "$SBX_ROOT" "$SAMPLES"
: >"$LOG"

ROOTFS=$WORK/rootfs
busybox_rootfs "$ROOTFS" "$BUSYBOX" || die "cannot make the busybox rootfs in $ROOTFS"
"$CC" -O2 -static -o "$ROOTFS/bin/exec-floor" "$HERE/exec-floor.c" >>"$LOG" 2>&1 ||
  die "$CC -static exec-floor.c failed (a static libc is needed: libc6-dev)"
"$CC" -O2 -nostdlib -static -fno-stack-protector -o "$ROOTFS/bin/exec-exit" "$HERE/exec-exit.c" >>"$LOG" 2>&1 ||
  die "$CC -nostdlib -static exec-exit.c failed"
tar -C "$ROOTFS" -cf "$WORK/rootfs.tar" . || die "tar failed"
"$SBX" import --tag exec-floor "$WORK/rootfs.tar" >>"$LOG" 2>&1 || die "sbx import failed (see $LOG)"

c_cli () { "$SBX" --version; }
c_exec_exit () { "$SBX" exec "$1" -- /bin/exec-exit; }
c_exec_true () { "$SBX" exec "$1" -- /bin/true; }

median_of ()  # FILE
{
  sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", ((NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) / 1000 }'
}

t0=0 t1=0
printf '\nsbx exec floor: %s rounds; host: %s, %s CPUs, load %s\n' "$N" "$(uname -r)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
for rt in $RUNTIMES; do
  id=$("$SBX" create --image exec-floor --runtime "$rt" --block-network --timeout 3600 2>>"$LOG") ||
    { note "sbx create --runtime $rt failed (see $LOG); skipped"; continue; }
  SBX_IDS+=("$id")
  for c in cli exec_exit exec_true; do "c_$c" "$id" >>"$LOG" 2>&1 || die "$c failed under $rt (see $LOG)"; done
  for ((i = 1; i <= N; i++)); do
    mapfile -t order < <(shuf -e cli exec_exit exec_true)
    for c in "${order[@]}"; do
      stamp t0
      "c_$c" "$id" >>"$LOG" 2>&1 || die "$c failed under $rt (see $LOG)"
      stamp t1
      printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/$rt-$c"
    done
  done
  printf '\n%s, medians in ms, from the host:\n' "$rt"
  printf '  %-44s %8s\n' "sbx --version" "$(median_of "$SAMPLES/$rt-cli")" \
    "sbx exec ID -- /bin/exec-exit" "$(median_of "$SAMPLES/$rt-exec_exit")" \
    "sbx exec ID -- /bin/true" "$(median_of "$SAMPLES/$rt-exec_true")"
  printf '%s, medians in ms, inside the sandbox (exec-floor):\n' "$rt"
  for target in /bin/true /bin/exec-exit; do
    line=$("$SBX" exec "$id" -- /bin/exec-floor "$N" "$target" 2>>"$LOG") || die "exec-floor failed under $rt (see $LOG)"
    printf '  %-24s %s\n' "$target" "$line"
  done
done
