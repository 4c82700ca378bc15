#!/usr/bin/env bash
# bench-images.sh: sbx's images, side by side with plain tar: `sbx import` of
# a Debian minbase rootfs tarball against `tar -x` of the same tarball on the
# same disk, and a fully cached five-step `sbx build`.
#
# Run as root.  See contrib/bench/README.md.  Only bash, coreutils, tar and
# awk are needed besides sbx, and debootstrap to make the tarball (unless
# --rootfs-tar gives one).

set -uo pipefail

# Default: the sbx built in this checkout (contrib/bench/../../sbx).
SRC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." 2>/dev/null && pwd)
SBX=${SBX:-$SRC_TOP/sbx}
N_IMPORT=5
N_BUILD=20
SUITE=bookworm
ROOTFS_TAR=
CACHE_DIR=
JSON=false
KEEP=false
DROP_CACHES=true

usage ()
{
  cat <<EOF
Usage: ${0##*/} [-k K] [-n N] [--rootfs-tar FILE] [--cache-dir DIR]
       [--json] [--keep] [--no-drop-caches] [-h]

Measures, in one run, with the sbx stores and the host files in one work
directory on one filesystem:
 1. import      sbx import ROOTFS.tar --tag x   (into a fresh, empty SBX_ROOT)
    tar-x       tar --numeric-owner -xpf ROOTFS.tar -C DIR   (into a fresh DIR)
    tar-x-sync  the same, then sync -f DIR (reference: what waiting for the
                disk costs; sbx import, like tar -x, returns before its
                files are on the disk and syncs in a process of its own)
    ROOTFS.tar: debootstrap --variant=minbase $SUITE DIR, then
    tar --numeric-owner --exclude=./dev/* -C DIR -cf ROOTFS.tar .
    K timed rounds of the three, in a new random order each round, after
    one untimed warm-up round (which also checks that sbx's layer holds
    what tar -x made).  Each run writes to a fresh directory or store,
    after a sync; outputs stay to the end (removal between runs slows the
    next ones down on ext4 without journal).  Target: the median of the
    per-round ratios import/tar-x <= 1.1 (the ratio of the two medians is
    printed too: it takes runs from different rounds, and this disk drifts).
 2. build-cached-runc   sbx build --runtime runc CONTEXT, every step cached
    (a five-step blueprint on busybox: env, workdir, run, files, cmd), N
    timed runs after the first build and one more untimed.  Target < 100 ms.
    build-uncached-RT   the first build of the same blueprint in a store
    that holds only the busybox base, once per runtime (information).

Options:
  -k, --import-runs K   timed runs per import case (default $N_IMPORT)
  -n N                  timed cached builds (default $N_BUILD)
  --rootfs-tar FILE     use this rootfs tarball instead of running debootstrap
  --cache-dir DIR       keep the debootstrapped tarball in DIR and reuse it on
                        later runs (default: inside the work dir, removed
                        with it)
  --json                JSON on stdout (the table then goes to stderr)
  --keep                keep the work directory instead of removing it
  --no-drop-caches      do not drop the clean page cache once before the
                        import runs (see README.md)
  -h, --help            show this help

Environment: SBX (the sbx binary; default this checkout's, $SBX),
SBX_INIT (passed through to sbx; default the sbx-init next to SBX), TMPDIR
(where the work directory goes; default /var/tmp, a disk).  Both binaries
are copied into the work directory first: a rebuild during the run changes
nothing.
EOF
}

die () { printf 'bench-images: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-images: %s\n' "$*" >&2; }

posint () { [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 wants a positive integer"; }
while (($#)); do
  case $1 in
    -k|--import-runs) posint "$1" "${2:-}"; N_IMPORT=$2; shift 2 ;;
    -n) posint -n "${2:-}"; N_BUILD=$2; shift 2 ;;
    -n[0-9]*) N_BUILD=${1#-n}; posint -n "$N_BUILD"; shift ;;
    --rootfs-tar) ROOTFS_TAR=${2:-}; shift 2 || die "--rootfs-tar wants a file" ;;
    --cache-dir) CACHE_DIR=${2:-}; shift 2 || die "--cache-dir wants a directory" ;;
    --json) JSON=true; shift ;;
    --keep) KEEP=true; shift ;;
    --no-drop-caches) DROP_CACHES=false; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done

((EUID == 0)) || die "run me as root"
command -v "$SBX" >/dev/null || die "sbx not found (set SBX=/path/to/sbx)"
SBX=$(command -v "$SBX")
SBX=$(realpath "$SBX")
if [[ -z ${SBX_INIT:-} && -x ${SBX%/*}/sbx-init ]]; then
  export SBX_INIT=${SBX%/*}/sbx-init
fi
for t in tar awk sort sync df du find; do
  command -v $t >/dev/null || die "$t is needed"
done
if [[ -n $ROOTFS_TAR ]]; then
  [[ -f $ROOTFS_TAR && -r $ROOTFS_TAR ]] || die "--rootfs-tar: $ROOTFS_TAR is not a readable file"
  ROOTFS_TAR=$(realpath "$ROOTFS_TAR")
fi
if [[ -n $CACHE_DIR ]]; then
  mkdir -p "$CACHE_DIR" || die "--cache-dir: cannot make $CACHE_DIR"
  CACHE_DIR=$(realpath "$CACHE_DIR")
fi

# Which runtimes: what sbx itself says it can use.
INFO=$("$SBX" --json info 2>/dev/null) || die "$SBX --json info failed"
rt_available ()
{
  awk -v rt="\"$1\"" '$1 == rt ":" { f = 1 } f && /"available"/ { print ($0 ~ /true/) ? "yes" : "no"; exit }' <<<"$INFO"
}
RTS=()
for rt in runc runsc; do
  if [[ $(rt_available "$rt") == yes ]]; then RTS+=("$rt"); else note "$rt not available (sbx info)"; fi
done
[[ $(rt_available runc) == yes ]] || note "runc not available: the cached build (--runtime runc) cannot run"

# stamp, umount_under, ours, others_using and the leaked_* checks.
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 2

# ---------------------------------------------------------------- cleanup
unset SBX_ROOT SBX_RUN_ROOT   # set again below, to throwaway dirs
WORK=
CLEANED=false
STORES=()   # every SBX_ROOT this script made (all under $WORK)


# The script's own stdout and stderr, for cleanup: a Ctrl-C during a timed
# command runs the traps inside that command's redirections (to the log).
exec {OUT_FD}>&1 {ERR_FD}>&2

cleanup ()
{
  $CLEANED && return
  CLEANED=true
  trap '' INT TERM HUP
  exec 1>&"$OUT_FD" 2>&"$ERR_FD"
  local id root
  if [[ -n $WORK ]]; then
    # Only ever the throwaway stores: never a SBX_ROOT from the caller.  A
    # build interrupted by Ctrl-C may leave its build sandbox behind.
    for root in "${STORES[@]}"; do
      [[ $root == "$WORK"/* && -d $root ]] || continue
      for id in $(SBX_ROOT=$root "$SBX" ls -q 2>/dev/null); do
        SBX_ROOT=$root "$SBX" terminate --rm "$id" >/dev/null 2>&1 || SBX_ROOT=$root "$SBX" rm -f "$id" >/dev/null 2>&1
      done
      SBX_ROOT=$root "$SBX" gc >/dev/null 2>&1
      [[ -n $(SBX_ROOT=$root "$SBX" ls -q 2>/dev/null) ]] &&
        note "sbx still lists sandboxes in $root after gc: $(SBX_ROOT=$root "$SBX" ls -q | tr '\n' ' ')"
    done
    umount_under "$WORK"
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
# SBX_ROOT), mounts left under it.
check_leaks () { [[ -z $WORK ]] || leak_report "" "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- setup
# On a disk, not a tmpfs: /var/tmp unless TMPDIR says otherwise.  Every sbx
# store lives inside it, so layers and tar's output share a filesystem.
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sbx-bench-images.XXXXXX") || die "mktemp failed"
export SBX_ROOT=$WORK/root SBX_RUN_ROOT=$WORK/run
LOG=$WORK/log
SAMPLES=$WORK/samples
mkdir -p "$SAMPLES" "$SBX_RUN_ROOT" "$WORK/bin"
: >"$LOG"
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
FS_DESC=$(df --output=fstype,source "$WORK" 2>/dev/null | awk 'NR == 2 { print $1 " (" $2 ")" }')
BENCH_T0=$SECONDS
declare -A FAILED=() SKIPPED=()

# One timed command, its stdout and stderr to the log (stdout also to
# $WORK/last-out); the elapsed us go to SAMPLES/NAME when RECORD.  A failure
# drops the case from the rest of the run.
timed ()  # NAME RECORD CMD...
{
  local name=$1 record=$2 t0 t1 rc
  shift 2
  [[ -n ${FAILED[$name]:-} ]] && return 1
  printf '== %s: %s\n' "$name" "$*" >>"$LOG"
  stamp t0
  "$@" </dev/null >"$WORK/last-out" 2>>"$LOG"
  rc=$?
  stamp t1
  cat "$WORK/last-out" >>"$LOG"
  if ((rc != 0)); then
    FAILED[$name]="exit status $rc"
    note "$name failed (exit status $rc): $*"
    note "log tail:"; tail -4 "$LOG" | sed 's/^/    /' >&2
    return 1
  fi
  $record && printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/$name"
  return 0
}

# ================================================================ part 1
IMPORT_CASES=(import tar-x tar-x-sync)
TAR_DESC=
TAR_BYTES=0
TAR_ENTRIES=0
DEBOOTSTRAP_S=

skip_import ()  # REASON
{
  local c
  note "PART 1 SKIPPED: $1"
  for c in "${IMPORT_CASES[@]}"; do SKIPPED[$c]=$1; done
}

# The tarball: --rootfs-tar, else the cached one, else debootstrap makes it
# (with debootstrap's own default mirror).  Device nodes are left out: sbx
# refuses them (a container gets its /dev from the runtime).
make_rootfs_tar ()
{
  local dir=${CACHE_DIR:-$WORK/cache} out t0 rc
  out=$dir/debian-$SUITE-minbase.tar
  mkdir -p "$dir"
  if [[ -s $out ]]; then
    note "reusing $out"
    ROOTFS_TAR=$out
    TAR_DESC="debootstrap --variant=minbase $SUITE (cached: $out)"
    return 0
  fi
  if ! command -v debootstrap >/dev/null; then
    skip_import "debootstrap is not installed (apt-get install debootstrap), and no --rootfs-tar given"
    return 1
  fi
  note "debootstrap --variant=minbase $SUITE (a few minutes; log: $WORK/debootstrap.log)"
  t0=$SECONDS
  debootstrap --variant=minbase "$SUITE" "$WORK/debootstrap" </dev/null >"$WORK/debootstrap.log" 2>&1
  rc=$?
  umount_under "$WORK/debootstrap"   # in case it left /proc or /sys mounted
  if ((rc != 0)); then
    note "debootstrap failed (exit status $rc; no mirror reachable?). Its log ends:"
    tail -5 "$WORK/debootstrap.log" | sed 's/^/    /' >&2
    cat "$WORK/debootstrap.log" >>"$LOG"
    skip_import "debootstrap --variant=minbase $SUITE failed (exit status $rc)"
    rm -rf --one-file-system "$WORK/debootstrap"
    return 1
  fi
  DEBOOTSTRAP_S=$((SECONDS - t0))
  if ! tar --numeric-owner --exclude='./dev/*' -C "$WORK/debootstrap" -cf "$out.tmp" . 2>>"$LOG"; then
    skip_import "tar -c of the debootstrapped rootfs failed"
    rm -f "$out.tmp"
    return 1
  fi
  mv "$out.tmp" "$out"
  # The tree stays until the end, with the work dir: removing it now would
  # slow the import runs down (see below).
  note "debootstrap took ${DEBOOTSTRAP_S}s; tarball $out"
  ROOTFS_TAR=$out
  TAR_DESC="debootstrap --variant=minbase $SUITE (made in ${DEBOOTSTRAP_S}s)"
  return 0
}

HAVE_TAR=false
if [[ -n $ROOTFS_TAR ]]; then
  TAR_DESC="--rootfs-tar $ROOTFS_TAR"
  HAVE_TAR=true
elif make_rootfs_tar; then
  HAVE_TAR=true
fi

# Every run writes into a fresh directory (tar) or a fresh, empty SBX_ROOT
# (sbx import: a store that already holds the layer would reuse it), all on
# the work dir's filesystem, and nothing is removed until the end.  Removal
# between runs would measure the filesystem rather than the import: ext4
# without a journal (as on this kind of VM) skips inodes deleted in the last
# 60 s (360 s while their inode table block is dirty) when it allocates new
# ones, checking each of them, so that 6,000 files extracted right after
# 6,000 were removed took 8 s instead of 0.6-1 s (measured here, tar -x
# alone).  For the same reason the clean caches are dropped once, before
# the warm-up (unless --no-drop-caches): that forgets deletions made before
# this run started (a previous run's cleanup, say), and the tarball is then
# read back into the page cache, which every run then reads warm.
IMP=$WORK/imp
out_of ()  # CASE ROUND
{
  case $1 in
    import) echo "$IMP/sbx-root.$2" ;;
    tar-x) echo "$IMP/tar-x.$2" ;;
    tar-x-sync) echo "$IMP/tar-x-sync.$2" ;;
  esac
}
c_import () { SBX_ROOT=$(out_of import "$1") "$SBX" import "$ROOTFS_TAR" --tag x; }
c_tar_x () { local d; d=$(out_of tar-x "$1"); mkdir "$d" && tar --numeric-owner -xpf "$ROOTFS_TAR" -C "$d"; }
c_tar_x_sync () { local d; d=$(out_of tar-x-sync "$1"); mkdir "$d" && tar --numeric-owner -xpf "$ROOTFS_TAR" -C "$d" && sync -f "$d"; }

# Each timed run starts the same way: sync (no run pays for the writeback of
# another, nor for the sync sbx import leaves running), then the run at once.
# Every run writes into page cache that it allocates afresh, sbx as much as
# tar (on a VM with virtio-balloon free page reporting, reusing memory just
# freed is cheaper than memory left free for a while: no case gets that).
import_round ()  # ROUND RECORD
{
  local round=$1 record=$2 c order
  # A new order each round: the cost of making inodes grows as a run fills
  # the disk, and no case should always come first.
  mapfile -t order < <(shuf -e -- "${IMPORT_CASES[@]}")
  for c in "${order[@]}"; do
    [[ -n ${FAILED[$c]:-} ]] && continue
    sync
    timed "$c" "$record" "c_${c//-/_}" "$round"
  done
}

# The warm-up's check: the layer sbx made holds what tar -x made (entries,
# types, modes, owners, file sizes, link targets; not times).
listing ()
{
  (cd "$1" && find . \( -type d -printf '%y %m %U:%G - %p\n' \) -o -printf '%y %m %U:%G %s %p -> %l\n' |
    LC_ALL=C sort)
}
check_import ()
{
  local layer
  [[ -z ${FAILED[import]:-} && -z ${FAILED[tar-x]:-} ]] || return 0
  layer=$(find "$(out_of import 0)/layers/sha256" -mindepth 2 -maxdepth 2 -name rootfs -type d 2>/dev/null | head -2)
  if [[ -z $layer || $layer == *$'\n'* ]]; then
    FAILED[import]="sbx import did not leave exactly one layer in its store"
    note "${FAILED[import]}"
    return
  fi
  listing "$layer" >"$WORK/list-sbx"
  listing "$(out_of tar-x 0)" >"$WORK/list-tar"
  if ! cmp -s "$WORK/list-sbx" "$WORK/list-tar"; then
    note "WARNING: sbx's layer and tar -x's directory differ ($(diff "$WORK/list-tar" "$WORK/list-sbx" | grep -c '^[<>]') lines of"
    note "  find -printf '%y %m %U:%G %s %p -> %l', no directory sizes; first ones, < tar, > sbx):"
    diff "$WORK/list-tar" "$WORK/list-sbx" | grep '^[<>]' | head -6 | sed 's/^/    /' >&2
  fi
}

if $HAVE_TAR; then
  TAR_BYTES=$(stat -c %s "$ROOTFS_TAR")
  # Space: every output stays to the end: per round, the tarball's size
  # once for each case.
  AVAIL=$(df --output=avail -B1 "$WORK" | awk 'NR == 2 { print $1 }')
  NEED=$(((N_IMPORT + 1) * 3 * TAR_BYTES + (512 << 20)))
  if ((AVAIL < NEED)); then
    skip_import "$WORK has $((AVAIL >> 20)) MiB free; $((N_IMPORT + 1)) rounds need about $((NEED >> 20)) MiB (try a smaller -k)"
    HAVE_TAR=false
  fi
fi
if $HAVE_TAR; then
  mkdir -p "$IMP"
  sync
  if $DROP_CACHES; then
    echo 1 >/proc/sys/vm/drop_caches 2>/dev/null || note "could not drop the page cache (/proc/sys/vm/drop_caches)"
  fi
  TAR_ENTRIES=$(tar -tf "$ROOTFS_TAR" 2>>"$LOG" | wc -l)   # also reads it back into the page cache
  note "import: $((TAR_BYTES >> 20)) MiB, $TAR_ENTRIES entries; 1 warm-up + $N_IMPORT timed rounds of ${IMPORT_CASES[*]}"
  import_round 0 false
  check_import
  for ((i = 1; i <= N_IMPORT; i++)); do import_round "$i" true; done
  sync   # (the outputs go with the work dir, at the end)
fi

# ================================================================ part 2
BUILD_CASES=()
for rt in "${RTS[@]}"; do BUILD_CASES+=("build-uncached-$rt"); done
BUILD_CASES+=(build-cached-runc)
[[ $(rt_available runc) == yes ]] || SKIPPED[build-cached-runc]="runc not available"

CTX=$WORK/ctx
mkdir -p "$CTX/app/lib"
printf 'hello\n' >"$CTX/app/hello.txt"
# shellcheck disable=SC2016  # a script for the image: expanded there
printf '#!/bin/sh\necho "A=$A in $(pwd): $(cat f)"\n' >"$CTX/app/run.sh"
chmod 755 "$CTX/app/run.sh"
head -c 65536 /dev/urandom >"$CTX/app/lib/data.bin"
cat >"$CTX/blueprint.json" <<'EOF'
{"base":"busybox","steps":[{"env":{"A":"1"}},{"workdir":"/app"},{"run":"echo hi > f"},{"files":[{"src":"app","dest":"/app"}]},{"cmd":["sh","-c","cat f"]}]}
EOF

# A store per runtime for the uncached builds, each holding only the busybox
# base (made untimed, by naming it); runc's is then the cached builds' store.
build_store () { [[ $1 == runc ]] && echo "$WORK/root" || echo "$WORK/root-$1"; }
c_build () { SBX_ROOT=$1 "$SBX" build --runtime "$2" "$CTX"; }

BUILD_ID=
for rt in "${RTS[@]}"; do
  root=$(build_store "$rt")
  STORES+=("$root")
  if ! SBX_ROOT=$root "$SBX" tag busybox bench-base >>"$LOG" 2>&1; then
    note "sbx tag busybox (making the busybox base) failed in $root:"; tail -3 "$LOG" | sed 's/^/    /' >&2
    FAILED[build-uncached-$rt]="making the busybox base failed"
    [[ $rt == runc ]] && FAILED[build-cached-runc]="making the busybox base failed"
    continue
  fi
  sync
  note "build: the first (uncached) build under $rt"
  timed "build-uncached-$rt" true c_build "$root" "$rt" || {
    [[ $rt == runc ]] && FAILED[build-cached-runc]="the first build failed"; continue; }
  id=$(tail -1 "$WORK/last-out")
  [[ $rt == runc ]] && BUILD_ID=$id
done

# The cached builds: one more untimed build (--json: every step must come
# from the cache, and the image must be the first build's), then N timed.
if [[ -z ${FAILED[build-cached-runc]:-} && -z ${SKIPPED[build-cached-runc]:-} ]]; then
  root=$(build_store runc)
  js=$(SBX_ROOT=$root "$SBX" --json build --runtime runc "$CTX" 2>>"$LOG")
  printf '%s\n' "$js" >>"$LOG"
  steps=$(awk -F'[:,]' '/"steps"/ { gsub(/ /, "", $2); print $2 }' <<<"$js")
  cached=$(awk -F'[:,]' '/"cached"/ { gsub(/ /, "", $2); print $2 }' <<<"$js")
  if [[ $steps != 5 || $cached != 5 ]]; then
    note "WARNING: the warm build reports steps=${steps:-?} cached=${cached:-?} (want 5 and 5)"
  fi
  [[ $js == *"\"$BUILD_ID\""* ]] || note "WARNING: the warm build's image is not the first build's ($BUILD_ID): $js"
  # What the image holds: env, workdir, the run step's file, the copied files.
  got=$(SBX_ROOT=$root "$SBX" run --runtime runc --image "$BUILD_ID" -- sh -c './run.sh; cat hello.txt' </dev/null 2>>"$LOG")
  SBX_ROOT=$root "$SBX" gc >>"$LOG" 2>&1   # removes that ended sandbox (its record names the image)
  [[ $got == $'A=1 in /app: hi\nhello' ]] || note "WARNING: the built image does not hold what the blueprint says; it gave: ${got:-(nothing)}"
  note "build: $N_BUILD timed cached builds under runc"
  for ((i = 1; i <= N_BUILD; i++)); do
    timed build-cached-runc true c_build "$root" runc || break
    id=$(tail -1 "$WORK/last-out")
    if [[ $id != "$BUILD_ID" ]]; then
      FAILED[build-cached-runc]="run $i gave image ${id:-(none)}, not $BUILD_ID"
      note "${FAILED[build-cached-runc]}"
      break
    fi
  done
fi
ELAPSED=$((SECONDS - BENCH_T0))

# ---------------------------------------------------------------- report
# stats NAME -> "runs median_us min_us max_us" (empty when no samples)
stats ()
{
  local f=$SAMPLES/$1
  [[ -s $f ]] || return 0
  sort -n "$f" | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%d %.0f %d %d", NR, m, v[1], v[NR] }'
}
declare -A MED=() NRUNS=() MIN=() MAX=()
for c in "${IMPORT_CASES[@]}" "${BUILD_CASES[@]}"; do
  read -r "NRUNS[$c]" "MED[$c]" "MIN[$c]" "MAX[$c]" <<<"$(stats "$c")"
done
# A failed case keeps no samples: a partial median would mislead.
for c in "${!FAILED[@]}"; do MED[$c]=; done

ms () { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }
mbs () { awk -v b="$TAR_BYTES" -v u="$1" 'BEGIN { printf "%.0f", b / u }'; }   # MB/s, MB = 10^6 bytes

# The targets.
IMPORT_RATIO='' IMPORT_MET='' BUILD_MET='' IMPORT_RATIO_SYNC='' IMPORT_RATIO_MEDIANS=''
if [[ -n ${MED[import]:-} && -n ${MED[tar-x]:-} ]]; then
  IMPORT_RATIO=$(paired_ratio import tar-x)
  IMPORT_RATIO_MEDIANS=$(awk -v a="${MED[import]}" -v b="${MED[tar-x]}" 'BEGIN { printf "%.2f", a / b }')
  IMPORT_MET=$(awk -v v="$IMPORT_RATIO" 'BEGIN { print (v <= 1.1) ? "met" : "MISSED" }')
  IMPORT_RATIO_SYNC=$(paired_ratio import tar-x-sync)
fi
if [[ -n ${MED[build-cached-runc]:-} ]]; then
  BUILD_MET=$( ((MED[build-cached-runc] < 100000)) && echo met || echo MISSED)
fi
result_of ()  # CASE... -> met/MISSED/skipped/failed
{
  local c
  for c in "$@"; do
    [[ -n ${SKIPPED[$c]:-} ]] && { echo skipped; return; }
    [[ -n ${FAILED[$c]:-} ]] && { echo failed; return; }
  done
  echo n/a
}

row ()  # CASE WITH_MBS COMMAND
{
  local c=$1 with=$2 cmd=$3
  if [[ -n ${MED[$c]:-} ]]; then
    printf '%-20s %4s %10s %7s %9s %9s  %s\n' "$c" "${NRUNS[$c]}" "$(ms "${MED[$c]}")" \
      "$($with && mbs "${MED[$c]}" || echo -)" "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")" "$cmd"
  elif [[ -n ${SKIPPED[$c]:-} ]]; then
    printf '%-20s %4s %10s   (skipped: %s)\n' "$c" 0 - "${SKIPPED[$c]}"
  else
    printf '%-20s %4s %10s   (%s)\n' "$c" 0 - "${FAILED[$c]:-no samples}"
  fi
}

table ()
{
  printf '\nsbx images benchmark: %s timed runs per import case, %s cached builds; %ss in all\n' \
    "$N_IMPORT" "$N_BUILD" "$ELAPSED"
  printf 'host: %s, %s CPUs; %s (%s); %s; runc %s; runsc %s; work dir on %s\n' \
    "$(uname -r)" "$(nproc)" "$("$SBX" version 2>/dev/null | head -1)" "$SBX_SRC" "$(tar --version | head -1)" \
    "$(runc --version 2>/dev/null | awk 'NR==1{print $3}')" \
    "$(runsc --version 2>/dev/null | awk 'NR==1{print $3}')" "$FS_DESC"
  if [[ -n $TAR_DESC ]]; then
    printf 'rootfs tarball: %s; %s bytes (%.0f MB), %s entries\n' "$TAR_DESC" "$TAR_BYTES" \
      "$(awk -v b="$TAR_BYTES" 'BEGIN { print b / 1e6 }')" "$TAR_ENTRIES"
  fi
  printf '\n%-20s %4s %10s %7s %9s %9s  %s\n' import runs "median ms" "MB/s" "min ms" "max ms" command
  row import true "sbx import ROOTFS.tar --tag x  (fresh SBX_ROOT)"
  row tar-x true "tar --numeric-owner -xpf ROOTFS.tar -C DIR  (fresh DIR)"
  row tar-x-sync true "the same, then sync -f DIR  (reference)"
  printf '(MB = 10^6 bytes of tarball; MB/s from the median)\n'
  printf '\n%-20s %4s %10s %9s %9s  %s\n' build runs "median ms" "min ms" "max ms" command
  local c
  for c in "${BUILD_CASES[@]}"; do
    if [[ -n ${MED[$c]:-} ]]; then
      printf '%-20s %4s %10s %9s %9s  %s\n' "$c" "${NRUNS[$c]}" "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" \
        "$(ms "${MAX[$c]}")" "sbx build --runtime ${c##*-} CONTEXT$([[ $c == *-uncached-* ]] && echo '  (first build: base only in the store)' || echo '  (5 of 5 steps cached)')"
    elif [[ -n ${SKIPPED[$c]:-} ]]; then
      printf '%-20s %4s %10s   (skipped: %s)\n' "$c" 0 - "${SKIPPED[$c]}"
    else
      printf '%-20s %4s %10s   (%s)\n' "$c" 0 - "${FAILED[$c]:-no samples}"
    fi
  done
  printf '\n%-28s %7s %9s  %s\n' target value target result
  printf '%-28s %7s %9s  %s\n' "import/tar-x" "${IMPORT_RATIO:--}" "<= 1.1" "${IMPORT_MET:-$(result_of import tar-x)}"
  [[ -n ${IMPORT_RATIO_MEDIANS:-} ]] &&
    printf '%-28s %7s %9s  %s\n' "import/tar-x, of medians" "$IMPORT_RATIO_MEDIANS" "-" "(reference)"
  [[ -n ${IMPORT_RATIO_SYNC:-} ]] &&
    printf '%-28s %7s %9s  %s\n' "import/tar-x-sync" "$IMPORT_RATIO_SYNC" "-" "(reference)"
  printf '%-28s %7s %9s  %s\n' "build-cached-runc ms" "$( [[ -n ${MED[build-cached-runc]:-} ]] && ms "${MED[build-cached-runc]}" || echo -)" \
    "< 100" "${BUILD_MET:-$(result_of build-cached-runc)}"
}

json_str () { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
json_case ()  # NAME [mbs]
{
  local c=$1
  if [[ -n ${MED[$c]:-} ]]; then
    printf '{"runs": %s, "median_ms": %s, "min_ms": %s, "max_ms": %s' "${NRUNS[$c]}" \
      "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")"
    [[ ${2:-} == mbs ]] && printf ', "mb_per_s": %s' "$(mbs "${MED[$c]}")"
    printf '}'
  elif [[ -n ${SKIPPED[$c]:-} ]]; then
    printf '{"runs": 0, "skipped": %s}' "$(json_str "${SKIPPED[$c]}")"
  else
    printf '{"runs": 0, "error": %s}' "$(json_str "${FAILED[$c]:-no samples}")"
  fi
}
json_met () { case $1 in met) echo true ;; MISSED) echo false ;; *) echo null ;; esac; }
json ()
{
  local sep c
  printf '{\n  "import_runs": %s,\n  "build_runs": %s,\n  "elapsed_s": %s,\n' "$N_IMPORT" "$N_BUILD" "$ELAPSED"
  printf '  "rootfs_tar": {"source": %s, "bytes": %s, "entries": %s},\n' \
    "$( [[ -n $TAR_DESC ]] && json_str "$TAR_DESC" || echo null)" "$TAR_BYTES" "$TAR_ENTRIES"
  printf '  "import": {'
  sep=
  for c in "${IMPORT_CASES[@]}"; do
    printf '%s\n    %s: ' "$sep" "$(json_str "$c")"; sep=,
    json_case "$c" mbs
  done
  printf '\n  },\n  "build": {'
  sep=
  for c in "${BUILD_CASES[@]}"; do
    printf '%s\n    %s: ' "$sep" "$(json_str "$c")"; sep=,
    json_case "$c"
  done
  printf '\n  },\n  "targets": {\n'
  printf '    "import/tar-x": {"value": %s, "target": "<= 1.1", "met": %s%s},\n' "${IMPORT_RATIO:-null}" \
    "$(json_met "$IMPORT_MET")" "$( [[ -n ${SKIPPED[import]:-} ]] && printf ', "skipped": %s' "$(json_str "${SKIPPED[import]}")")"
  printf '    "build-cached-runc": {"value_ms": %s, "target": "< 100", "met": %s}\n' \
    "$( [[ -n ${MED[build-cached-runc]:-} ]] && ms "${MED[build-cached-runc]}" || echo null)" "$(json_met "$BUILD_MET")"
  printf '  }\n}\n'
}

if $JSON; then
  table >&2
  json
else
  table
fi

# A benchmark, not a test: missed targets and a skipped part 1 (no
# debootstrap, no mirror) do not fail it; a case that could not run does.
((${#FAILED[@]} == 0))
