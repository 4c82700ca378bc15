#!/usr/bin/env bash
# bench-copyin.sh: `sbx create --copy-in TREE` side by side with `cp -a TREE`
# on the same filesystem, for a tree of 10,000 files and 200 MB (issue 20:
# the copy <= 1.3 x cp -a).
#
# Run as root.  See contrib/bench/README.md.  Only bash, coreutils and awk are
# needed besides sbx.

set -uo pipefail

SBX=${SBX:-sbx}
FILES=10000
SIZE=200M
RUNS=3
RUNTIME=runc
DISK=
KEEP=false

usage ()
{
  cat <<EOF
Usage: ${0##*/} [--files N] [--size SIZE] [-k K] [--runtime runsc|runc|both]
       [--disk SIZE] [--keep] [-h]

Makes a tree of N files (default $FILES) of SIZE bytes in all (default $SIZE,
random), in N/100 directories, in a work directory whose filesystem also holds
the throwaway sbx store, then times, in K rounds (default $RUNS) after one
untimed warm-up round, each after \`sync\`:
  cp            cp -a TREE OUT                    (the same filesystem)
  create-RT     sbx create --runtime RT --block-network
  copyin-RT     sbx create --runtime RT --block-network --copy-in TREE
(each sandbox terminated and removed, untimed).  The copy's own time is the
one the monitor logs ("copy-in TREE: ... in N ms"); the table also gives
copyin-RT - create-RT of the same round.  Target: copy <= 1.3 x cp -a.
--disk passes a --disk to both creates (default: sbx.conf's, 10Gi: the copy
lands in the sandbox's ext4 image on the same filesystem).

Environment: SBX (sbx binary, default "sbx"), SBX_INIT (passed through to
sbx), TMPDIR (where the work directory goes; default /var/tmp, a disk).
EOF
}

die () { printf 'bench-copyin: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-copyin: %s\n' "$*" >&2; }
posint () { [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 wants a positive integer"; }

while (($#)); do
  case $1 in
    --files) posint "$1" "${2:-}"; FILES=$2; shift 2 ;;
    --size) SIZE=${2:-}; shift 2 || die "--size wants a value" ;;
    -k|--runs) posint "$1" "${2:-}"; RUNS=$2; shift 2 ;;
    --runtime) RUNTIME=${2:-}; shift 2 || die "--runtime wants a value" ;;
    --disk) DISK=${2:-}; shift 2 || die "--disk wants a value" ;;
    --keep) KEEP=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done

[[ $SIZE =~ ^([0-9]+)([KMG]?)$ ]] || die "bad size '$SIZE' (want e.g. 200M)"
BYTES=${BASH_REMATCH[1]}
case ${BASH_REMATCH[2]} in K) BYTES=$((BYTES << 10)) ;; M) BYTES=$((BYTES << 20)) ;; G) BYTES=$((BYTES << 30)) ;; esac
((BYTES >= FILES)) || die "--size must give every file a byte at least"
((FILES >= 100)) || die "--files: 100 at least"

((EUID == 0)) || die "run me as root"
command -v "$SBX" >/dev/null || die "sbx not found (set SBX=/path/to/sbx)"
SBX=$(command -v "$SBX")
for t in awk sort cp head split df sync paste; do
  command -v $t >/dev/null || die "$t is needed"
done
case $RUNTIME in
  both) RTS=(runc runsc) ;;
  runc|runsc) RTS=("$RUNTIME") ;;
  *) die "--runtime wants runsc, runc or both" ;;
esac
DISK_ARGS=()
[[ -n $DISK ]] && DISK_ARGS=(--disk "$DISK")

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 2

# ---------------------------------------------------------------- cleanup
unset SBX_ROOT SBX_RUN_ROOT
WORK=
RUN_DIR=
CLEANED=false
cleanup ()
{
  $CLEANED && return
  CLEANED=true
  trap '' INT TERM HUP
  local id
  if [[ -n $WORK ]]; then
    if [[ ${SBX_ROOT:-} == "$WORK/sbx-root" && -d $SBX_ROOT ]]; then
      for id in $("$SBX" ls -q 2>/dev/null); do
        "$SBX" terminate --rm "$id" >/dev/null 2>&1 || "$SBX" rm -f "$id" >/dev/null 2>&1
      done
      "$SBX" gc >/dev/null 2>&1
    fi
    umount_under "$WORK"
    if $KEEP; then note "kept $WORK"; else rm -rf --one-file-system "$WORK"; fi
  fi
  if [[ -n $RUN_DIR ]]; then
    umount_under "$RUN_DIR"
    rm -rf --one-file-system "$RUN_DIR"
  fi
  [[ -z $WORK ]] || leak_report "" "$WORK" "$RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- setup
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sbx-bench-copyin.XXXXXX") || die "mktemp failed"
RUN_DIR=$(mktemp -d /run/sbx-bench-copyin.XXXXXX 2>/dev/null) || RUN_DIR=$(mktemp -d "$WORK/run.XXXXXX")
export SBX_ROOT=$WORK/sbx-root SBX_RUN_ROOT=$RUN_DIR
LOG=$WORK/log
SAMPLES=$WORK/samples
mkdir -p "$SBX_ROOT" "$SAMPLES"
: >"$LOG"
FS_DESC=$(df --output=fstype,source "$WORK" 2>/dev/null | awk 'NR == 2 { print $1 " (" $2 ")" }')
AVAIL=$(df --output=avail -B1 "$WORK" | awk 'NR == 2 { print $1 }')
((AVAIL >= 4 * BYTES + (512 << 20))) || die "$WORK has $((AVAIL >> 20)) MiB free; the tree needs about $(((4 * BYTES) >> 20)) MiB"
declare -A FAILED=()

# The tree: one random file split into FILES pieces (no fork per file), then
# moved 100 to a directory.
TREE=$WORK/tree
note "work dir $WORK ($FS_DESC); making $FILES files, $SIZE"
mkdir -p "$TREE"
head -c "$BYTES" /dev/urandom >"$WORK/blob" || die "reading /dev/urandom failed"
DIGITS=${#FILES}
(cd "$TREE" && split -n "$FILES" -a "$DIGITS" -d "$WORK/blob" f) || die "split failed"
rm -f "$WORK/blob"
for ((d = 0; d < FILES / 100; d++)); do
  dir=$(printf 'd%0*d' $((DIGITS - 2)) "$d")
  mkdir "$TREE/$dir" && mv "$TREE"/f"${dir#d}"?? "$TREE/$dir/" || die "making $TREE/$dir failed"
done
GOT=$(find "$TREE" -type f | wc -l)
((GOT == FILES)) || die "the tree holds $GOT files, not $FILES"
BENCH_T0=$SECONDS

# ---------------------------------------------------------------- rounds
CASES=(cp)
for rt in "${RTS[@]}"; do CASES+=("create-$rt" "copyin-$rt"); done

# CASE RECORD: one timed run, after sync and the removal of its last output.
one ()
{
  local c=$1 record=$2 id rt ms
  sync
  case $c in
    cp)
      rm -rf "$WORK/cp-out"
      sync
      timed cp "$record" cp -a "$TREE" "$WORK/cp-out"
      ;;
    create-*|copyin-*)
      rt=${c#*-}
      local args=(create --runtime "$rt" --block-network "${DISK_ARGS[@]}")
      [[ $c == copyin-* ]] && args+=(--copy-in "$TREE")
      timed "$c" "$record" "$SBX" "${args[@]}" || return
      id=$(tail -n 1 "$LOG")
      if [[ $c == copyin-* ]]; then
        ms=$(awk -v t="copy-in $TREE:" 'index($0, t) { for (i = 1; i < NF; i++) if ($(i + 1) == "ms;") v = $i } END { print v }' \
          "$SBX_ROOT/sandboxes/$id/log" 2>/dev/null)
        if [[ -z $ms ]]; then
          FAILED[$c]="no copy-in line in the sandbox's log"; note "$c: ${FAILED[$c]}"
        elif $record; then
          printf '%s\n' "$((ms * 1000))" >>"$SAMPLES/copy-$rt"
        fi
        # The warm-up round checks what arrived.
        if ! $record; then
          GOT=$("$SBX" exec "$id" -- sh -c 'find /workspace -type f | wc -l' 2>>"$LOG")
          [[ $GOT == "$FILES" ]] || { FAILED[$c]="the sandbox holds ${GOT:-?} files"; note "$c: ${FAILED[$c]}"; }
        fi
      fi
      "$SBX" terminate --rm "$id" >>"$LOG" 2>&1
      ;;
  esac
}

note "1 warm-up + $RUNS timed rounds of ${CASES[*]}"
for c in "${CASES[@]}"; do one "$c" false; done
for ((i = 1; i <= RUNS; i++)); do
  for c in "${CASES[@]}"; do one "$c" true; done
done
ELAPSED=$((SECONDS - BENCH_T0))

# ---------------------------------------------------------------- report
median ()  # FILE
{
  [[ -s $1 ]] || return 0
  sort -g "$1" | awk '{ v[NR] = $1 } END { printf "%.0f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ms () { awk -v u="$1" 'BEGIN { printf "%.0f", u / 1000 }'; }

for rt in "${RTS[@]}"; do
  # copyin - create, per round
  [[ -s $SAMPLES/copyin-$rt && -s $SAMPLES/create-$rt ]] &&
    paste "$SAMPLES/copyin-$rt" "$SAMPLES/create-$rt" | awk '{ print $1 - $2 }' >"$SAMPLES/delta-$rt"
done

printf '\nsbx --copy-in benchmark: %s files, %s, %s timed rounds; %ss in all (figures under load mean little)\n' \
  "$FILES" "$SIZE" "$RUNS" "$ELAPSED"
printf 'host: %s, %s CPUs; %s; work dir and store on %s\n\n' "$(uname -r)" "$(nproc)" \
  "$("$SBX" version 2>/dev/null | head -1)" "$FS_DESC"
printf '%-16s %10s  %s\n' case "median ms" what
for c in cp "${CASES[@]:1}"; do
  m=$(median "$SAMPLES/$c")
  printf '%-16s %10s  %s\n' "$c" "${m:+$(ms "$m")}" "${FAILED[$c]:-}"
done
for rt in "${RTS[@]}"; do
  m=$(median "$SAMPLES/copy-$rt")
  printf '%-16s %10s  %s\n' "copy-$rt" "${m:+$(ms "$m")}" "the copy, as the monitor logs it"
  m=$(median "$SAMPLES/delta-$rt")
  printf '%-16s %10s  %s\n' "delta-$rt" "${m:+$(ms "$m")}" "copyin-$rt - create-$rt, per round"
done
printf '\n%-28s %7s %9s  %s\n' ratio value target result
for rt in "${RTS[@]}"; do
  for k in copy delta; do
    r=$(paired_ratio "$k-$rt" cp)
    res=n/a
    [[ -n $r ]] && res=$(awk -v v="$r" 'BEGIN { print (v <= 1.3) ? "met" : "MISSED" }')
    printf '%-28s %7s %9s  %s\n' "$k-$rt / cp -a" "${r:--}" "<= 1.3" "$res"
  done
done
