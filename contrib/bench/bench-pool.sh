#!/usr/bin/env bash
# bench-pool.sh: warm pools against cold creates and the runtimes' own run,
# side by side in one run, on one busybox rootfs made from the host's
# busybox-static.
#
# Run as root.  See contrib/bench/README.md.  Only bash, coreutils, tar and
# awk are needed besides the tools under test.

set -uo pipefail

SBX=${SBX:-sbx}
N=100
SIZE=4
KEEP=false

usage ()
{
  cat <<EOF
Usage: ${0##*/} [-n N] [--size S] [--keep] [-h]

Times N rounds of each case, per runtime (runsc, runc), every sandbox with
--block-network, the pool's refills running in the background meanwhile:
  sbx-claim-RT     sbx create --pool P, then the first sbx exec ID -- /bin/true
  sbx-cold-RT      sbx create, then the first sbx exec ID -- /bin/true
  sbx-runpool-RT   sbx run --rm --pool P -- /bin/true
  RT-run           RT run of an OCI bundle running /bin/true
and prints p50 and p99 of each, and the ratios of the p50s (targets:
sbx-claim p50 <= 10 ms, p99 <= 25 ms; sbx-runpool <= 0.2x runsc-run).
Claimed and cold sandboxes are removed after each round, untimed.

Options:
  -n N        rounds per case (default $N)
  --size S    the pools' size (default $SIZE)
  --keep      keep the work directory (logs)
  -h, --help  show this help

Environment: SBX (sbx binary, default "sbx"), SBX_INIT (passed through to sbx).
EOF
}

die () { printf 'bench-pool: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-pool: %s\n' "$*" >&2; }

while (($#)); do
  case $1 in
    -n) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive integer"; N=$2; shift 2 ;;
    --size) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--size wants a positive integer"; SIZE=$2; shift 2 ;;
    --keep) KEEP=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done

((EUID == 0)) || die "run as root"
BUSYBOX=$(command -v busybox) || die "no busybox on PATH (Debian: busybox-static)"

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 2

unset SBX_ROOT SBX_RUN_ROOT
WORK='' RUN_DIR='' CLEANED=false
RUNC_ROOT='' RUNSC_ROOT=''
declare -A FAILED=()

cleanup ()
{
  $CLEANED && return
  CLEANED=true
  trap '' INT TERM HUP
  local id p
  if [[ -n $WORK && ${SBX_ROOT:-} == "$WORK/sbx-root" && -d $SBX_ROOT ]]; then
    for p in $("$SBX" pool ls -q 2>/dev/null); do "$SBX" pool rm "$p" >/dev/null 2>&1; done
    for id in $("$SBX" ls -q --all 2>/dev/null); do "$SBX" rm -f "$id" >/dev/null 2>&1; done
    "$SBX" gc >/dev/null 2>&1
  fi
  for p in runc runsc; do
    local root=$RUNC_ROOT
    [[ $p == runsc ]] && root=$RUNSC_ROOT
    [[ -n $root && -d $root ]] || continue
    for id in $("$p" --root "$root" list -q 2>/dev/null); do "$p" --root "$root" delete -f "$id" >/dev/null 2>&1; done
  done
  if [[ -n $WORK ]]; then
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

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench.XXXXXX") || die "mktemp failed"
RUN_DIR=$(mktemp -d /run/sbx-bench.XXXXXX 2>/dev/null) || RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench-run.XXXXXX")
export SBX_ROOT=$WORK/sbx-root SBX_RUN_ROOT=$RUN_DIR
RUNC_ROOT=$WORK/runc-root RUNSC_ROOT=$WORK/runsc-root
LOG=$WORK/log SAMPLES=$WORK/samples
mkdir -p "$SBX_ROOT" "$RUNC_ROOT" "$RUNSC_ROOT" "$SAMPLES"
: >"$LOG"
TAG=benchpool$$

ROOTFS=$WORK/rootfs
mkdir -p "$ROOTFS"/{bin,dev,proc,sys,tmp,etc,root,run}
cp "$BUSYBOX" "$ROOTFS/bin/busybox"
for a in $("$BUSYBOX" --list); do
  [[ -e $ROOTFS/bin/$a ]] || ln -s busybox "$ROOTFS/bin/$a"
done
chmod 1777 "$ROOTFS/tmp"
mkdir -p "$WORK/bundle"
(cd "$WORK/bundle" && runc spec) || die "runc spec failed"
sed -i -e 's/"terminal": true/"terminal": false/' -e 's|^\([[:space:]]*\)"sh"$|\1"/bin/true"|' \
  -e "s|\"path\": \"rootfs\"|\"path\": \"$ROOTFS\"|" "$WORK/bundle/config.json"
grep -qF '"/bin/true"' "$WORK/bundle/config.json" || die "could not adapt runc spec's config.json"
tar -C "$ROOTFS" -cf "$WORK/rootfs.tar" . || die "tar failed"
"$SBX" import --tag bench "$WORK/rootfs.tar" >>"$LOG" 2>&1 || die "sbx import failed (see --keep's log)"

RUNTIMES=(runc)
command -v runsc >/dev/null && RUNTIMES+=(runsc)
for rt in "${RUNTIMES[@]}"; do
  "$SBX" pool create "p-$rt" --size "$SIZE" --runtime "$rt" --image bench --block-network >>"$LOG" 2>&1 ||
    die "sbx pool create --runtime $rt failed (see --keep's log)"
done

# claim_exec ARGS...: sbx create ARGS then the first exec, the id to $WORK/id.
claim_exec ()
{
  local id
  id=$("$SBX" create "$@") || return 1
  printf '%s\n' "$id" >"$WORK/id"
  "$SBX" exec "$id" -- /bin/true
}
rm_last () { [[ -s $WORK/id ]] && "$SBX" rm -f "$(cat "$WORK/id")" >>"$LOG" 2>&1; : >"$WORK/id"; }

c_claim () { claim_exec --pool "p-$1"; }
c_cold () { claim_exec --runtime "$1" --image bench --block-network; }
c_runpool () { "$SBX" run --rm --pool "p-$1" -- /bin/true; }
c_rt_run ()
{
  local root=$RUNC_ROOT
  [[ $1 == runsc ]] && root=$RUNSC_ROOT
  if [[ $1 == runsc ]]; then
    runsc --root "$root" --network=none run --bundle "$WORK/bundle" "$TAG-$2"
  else
    runc --root "$root" run --bundle "$WORK/bundle" "$TAG-$2"
  fi
}

for ((i = 1; i <= N; i++)); do
  for rt in "${RUNTIMES[@]}"; do
    timed "sbx-claim-$rt" true c_claim "$rt"; rm_last
    timed "sbx-cold-$rt" true c_cold "$rt"; rm_last
    timed "sbx-runpool-$rt" true c_runpool "$rt"
    timed "$rt-run" true c_rt_run "$rt" "$i"
  done
done

pct ()  # NAME P: the P-th percentile of NAME's samples, in ms
{
  [[ -s $SAMPLES/$1 ]] || { printf -- '-'; return; }
  sort -n "$SAMPLES/$1" | awk -v p="$2" '{ v[NR] = $1 } END { i = int((NR - 1) * p / 100 + 0.5) + 1; printf "%.1f", v[i] / 1000 }'
}

printf '%-20s %8s %8s %6s\n' CASE P50_MS P99_MS N
for rt in "${RUNTIMES[@]}"; do
  for c in "sbx-claim-$rt" "sbx-cold-$rt" "sbx-runpool-$rt" "$rt-run"; do
    printf '%-20s %8s %8s %6s\n' "$c" "$(pct "$c" 50)" "$(pct "$c" 99)" \
      "$( [[ -s $SAMPLES/$c ]] && wc -l <"$SAMPLES/$c" || echo 0)"
  done
  printf '  %s: claim+exec / cold create+exec %s, claim+exec / %s run %s, run --pool / %s run %s (paired medians)\n' \
    "$rt" "$(paired_ratio "sbx-claim-$rt" "sbx-cold-$rt")" "$rt" "$(paired_ratio "sbx-claim-$rt" "$rt-run")" \
    "$rt" "$(paired_ratio "sbx-runpool-$rt" "$rt-run")"
done
((${#FAILED[@]} == 0)) || exit 1
