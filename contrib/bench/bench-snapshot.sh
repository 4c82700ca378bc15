#!/usr/bin/env bash
# bench-snapshot.sh: sbx's memory snapshots, side by side with runsc's own
# checkpoint/restore: `sbx restore` against `runsc restore` of the same
# checkpoint (the one in sbx's snapshot, on the bundle sbx restores it with),
# and of the same kind of checkpoint (a busybox shell loop, with sbx's runsc
# flags, on a plain and on sbx's spec), and the
# restore of a python that has imported heavy modules against a cold
# `sbx create` plus the import.
#
# Run as root.  See contrib/bench/README.md.  Only bash, coreutils, tar and
# awk are needed besides sbx, runsc, runc (for `runc spec`) and
# busybox-static, and debootstrap to make the python rootfs (unless
# --rootfs-tar gives one, or --skip-python).

set -uo pipefail

# Default: the sbx built in this checkout (contrib/bench/../../sbx).
SRC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." 2>/dev/null && pwd)
SBX=${SBX:-$SRC_TOP/sbx}
N=10
SUITE=bookworm
ROOTFS_TAR=
CACHE_DIR=
JSON=false
KEEP=false
SKIP_PYTHON=false
MODULES='asyncio, email.mime.multipart, http.server, xml.dom.minidom, sqlite3, decimal, unittest, json, argparse, logging, ssl'
# sbx's own runsc global flags (src/lib/runtime.c), less --root; the ones
# sbx really uses are read from its restore's command line, when it runs.
RUNSC_FLAGS_DEFAULT=(--file-access=shared --overlay2=none --network=none --platform=ptrace)

usage ()
{
  cat <<EOF
Usage: ${0##*/} [-n N] [--skip-python] [--rootfs-tar FILE] [--cache-dir DIR]
       [--modules 'a, b.c, ...'] [--json] [--keep] [-h]

Measures, in one run, N timed runs of each case after one untimed warm-up
round, the compared cases interleaved (which goes first turns each round),
every restored sandbox or container removed untimed right after its run:
 1. on a busybox rootfs (from the host's busybox-static), a process
    sh -c 'while :; do sleep 1; done' checkpointed once, untimed:
    sbx-restore         sbx restore SNAP  (of \`sbx snapshot\` of a sandbox
                        running that loop with \`sbx exec -d\`)
    sbx-restore-exec    the same run, up to the end of sbx exec ID -- true
    runsc-restore-same  runsc restore --image-path SNAP's checkpoint --bundle
                        B ID in the foreground, B the bundle of a sandbox
                        sbx restored from SNAP, on an overlay of the
                        snapshot's layers that this script mounts (untimed),
                        its stdin and stdout a socketpair, up to the restored
                        agent's answer to a ping (restore-ping.pl): what sbx
                        restore runs, without sbx
    runsc-restore       runsc restore --detach --image-path DIR --bundle B ID
                        (of \`runsc checkpoint --image-path DIR\` of a plain
                        runsc container of that rootfs running that loop,
                        both with sbx's runsc global flags)
    runsc-restore-exec  the same run, up to the end of runsc exec ID /bin/true
    runsc-restore-sbxspec, runsc-restore-exec-sbxspec
                        the same on the hardened spec sbx generates (taken
                        from the sandbox snapshotted, its init replaced by
                        the loop): sbx's own overhead is the ratio to these
    Targets: sbx-restore <= 1.2 x runsc-restore-same (the issue's: the same
    checkpoint); for reference, the ratios to the runsc-restore and sbxspec
    cases, with exec too.  sbx restore's steps come from the
    restored sandbox's log (read untimed after each run).
 2. on a Debian rootfs with python3 (debootstrap --variant=minbase
    --include=python3 $SUITE, imported as an sbx image), with
      IMPORT = import $MODULES
    py-cold             sbx create --image py, then
                        sbx exec ID -- python3 -c 'IMPORT; print(1)'
    py-restore          sbx restore SNAP, of a snapshot of a sandbox whose
                        background python (sbx exec -d) did IMPORT and sleeps
    py-restore-exec     the same run, up to the end of sbx exec ID -- true
    Target: py-restore-exec <= 0.5 x py-cold.  The warm-up checks that the
    restored python is alive and answers (a SIGUSR1 makes it write how many
    modules it holds: as many as before the snapshot).

Options:
  -n N                  timed runs per case (default $N)
  --skip-python         run part 1 only
  --rootfs-tar FILE     a rootfs tarball with python3 instead of running
                        debootstrap
  --cache-dir DIR       keep the debootstrapped tarball in DIR and reuse it
                        on later runs (default: in the work dir, removed
                        with it)
  --modules LIST        the modules IMPORT imports (comma-separated)
  --json                JSON on stdout (the table then goes to stderr)
  --keep                keep the work directory instead of removing it
  -h, --help            show this help

Environment: SBX (the sbx binary; default this checkout's, $SBX),
SBX_INIT (passed through to sbx; default the sbx-init next to SBX), TMPDIR
(where the work directory goes; default /var/tmp).  Both binaries are
copied into the work directory first: a rebuild during the run changes
nothing.
EOF
}

die () { printf 'bench-snapshot: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-snapshot: %s\n' "$*" >&2; }

posint () { [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 wants a positive integer"; }
while (($#)); do
  case $1 in
    -n) posint -n "${2:-}"; N=$2; shift 2 ;;
    -n[0-9]*) N=${1#-n}; posint -n "$N"; shift ;;
    --skip-python) SKIP_PYTHON=true; shift ;;
    --rootfs-tar) ROOTFS_TAR=${2:-}; shift 2 || die "--rootfs-tar wants a file" ;;
    --cache-dir) CACHE_DIR=${2:-}; shift 2 || die "--cache-dir wants a directory" ;;
    --modules) MODULES=${2:-}; shift 2 || die "--modules wants a list" ;;
    --json) JSON=true; shift ;;
    --keep) KEEP=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
# Python module names, comma-separated: nothing a shell or python would read as more.
[[ $MODULES =~ ^[A-Za-z_][A-Za-z0-9_.]*(,\ *[A-Za-z_][A-Za-z0-9_.]*)*$ ]] ||
  die "--modules wants module names separated by commas (e.g. 'json, email.mime.text')"

((EUID == 0)) || die "run me as root"
command -v "$SBX" >/dev/null || die "sbx not found (set SBX=/path/to/sbx)"
SBX=$(realpath "$(command -v "$SBX")")
if [[ -z ${SBX_INIT:-} && -x ${SBX%/*}/sbx-init ]]; then
  export SBX_INIT=${SBX%/*}/sbx-init
fi
for t in runsc runc tar awk sort realpath perl; do
  command -v $t >/dev/null || die "$t is needed"
done
BUSYBOX=$(command -v busybox) || die "busybox is needed (apt-get install busybox-static)"
ldd "$BUSYBOX" >/dev/null 2>&1 && die "$BUSYBOX is dynamically linked (apt-get install busybox-static)"
if [[ -n $ROOTFS_TAR ]]; then
  [[ -f $ROOTFS_TAR && -r $ROOTFS_TAR ]] || die "--rootfs-tar: $ROOTFS_TAR is not a readable file"
  ROOTFS_TAR=$(realpath "$ROOTFS_TAR")
fi
if [[ -n $CACHE_DIR ]]; then
  mkdir -p "$CACHE_DIR" || die "--cache-dir: cannot make $CACHE_DIR"
  CACHE_DIR=$(realpath "$CACHE_DIR")
fi

# stamp, umount_under, ours, others_using and the leaked_* checks.
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 2

# ---------------------------------------------------------------- cleanup
unset SBX_ROOT SBX_RUN_ROOT   # set again below, to throwaway dirs
WORK=
RUNSC_ROOT=
CLEANED=false
TAG=bsnap$$

# The script's own stdout and stderr, for cleanup: a Ctrl-C during a timed
# command runs the traps inside that command's redirections (to the log).
exec {OUT_FD}>&1 {ERR_FD}>&2

cleanup ()
{
  $CLEANED && return
  CLEANED=true
  trap '' INT TERM HUP
  exec 1>&"$OUT_FD" 2>&"$ERR_FD"
  local id
  if [[ -n $WORK ]]; then
    # Only ever the throwaway store: never a SBX_ROOT from the caller.
    if [[ ${SBX_ROOT:-} == "$WORK/root" && -d $SBX_ROOT ]]; then
      for id in $("$SBX" ls -q 2>/dev/null); do
        "$SBX" terminate --rm "$id" >/dev/null 2>&1 || "$SBX" rm -f "$id" >/dev/null 2>&1
      done
      for id in $("$SBX" snapshots 2>/dev/null | awk 'NR > 1 { print $1 }'); do
        "$SBX" rmsnap "$id" >/dev/null 2>&1
      done
      "$SBX" gc >/dev/null 2>&1
      [[ -n $("$SBX" ls -q 2>/dev/null) ]] && note "sbx still lists sandboxes after gc: $("$SBX" ls -q | tr '\n' ' ')"
    fi
    if [[ -n $RUNSC_ROOT && -d $RUNSC_ROOT ]]; then
      for id in $(runsc --root "$RUNSC_ROOT" list -quiet 2>/dev/null); do
        runsc --root "$RUNSC_ROOT" kill "$id" KILL >/dev/null 2>&1
        runsc --root "$RUNSC_ROOT" delete -force "$id" >/dev/null 2>&1
      done
    fi
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
# SBX_ROOT; runsc's carry its root), mounts left under it.
check_leaks () { [[ -z $WORK ]] || leak_report "$TAG" "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- setup
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sbx-bench-snapshot.XXXXXX") || die "mktemp failed"
export SBX_ROOT=$WORK/root SBX_RUN_ROOT=$WORK/run
RUNSC_ROOT=$WORK/runsc-root
LOG=$WORK/log
SAMPLES=$WORK/samples
mkdir -p "$SBX_ROOT" "$SBX_RUN_ROOT" "$RUNSC_ROOT" "$SAMPLES" "$WORK/bin"
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
RUNSC_FLAGS=("${RUNSC_FLAGS_DEFAULT[@]}")
RUNSC_FLAGS_FROM="src/lib/runtime.c's list (sbx's own could not be read)"
rsc () { runsc --root "$RUNSC_ROOT" "${RUNSC_FLAGS[@]}" "$@"; }

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

# The id a command printed last (sbx create, restore, snapshot).
last_line () { tail -1 "$WORK/last-out" 2>/dev/null; }
sbxq ()  # ARGS...: sbx, stdout to last-out and the log, stderr to the log
{
  printf '== sbx %s\n' "$*" >>"$LOG"
  "$SBX" "$@" </dev/null >"$WORK/last-out" 2>>"$LOG"
  local rc=$?
  cat "$WORK/last-out" >>"$LOG"
  return $rc
}

# Waits until FILE exists in sandbox ID (sbx fs read), at most SECS seconds;
# prints its content.
wait_file ()  # ID FILE SECS
{
  local id=$1 f=$2 secs=$3 i out
  for ((i = 0; i < secs * 10; i++)); do
    if out=$("$SBX" fs "$id" read "$f" 2>/dev/null); then
      printf '%s' "$out"
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# Where the time of one `sbx restore` goes: the steps between the lifecycle
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

# ================================================================ part 1
P1_CASES=(sbx-restore sbx-restore-exec runsc-restore-same runsc-restore runsc-restore-exec runsc-restore-sbxspec runsc-restore-exec-sbxspec)
LOOP='while :; do sleep 1; done'

# The busybox rootfs, as a directory (runsc's bundle) and as an sbx image.
ROOTFS=$WORK/rootfs
mkdir -p "$ROOTFS"/{bin,dev,proc,sys,tmp,etc,root,run}
cp "$BUSYBOX" "$ROOTFS/bin/busybox"
for a in $("$BUSYBOX" --list); do
  [[ -e $ROOTFS/bin/$a ]] || ln -s busybox "$ROOTFS/bin/$a"
done
chmod 1777 "$ROOTFS/tmp"

BUNDLE=$WORK/bundle
mkdir -p "$BUNDLE"
(cd "$BUNDLE" && runc spec) >>"$LOG" 2>&1 || die "runc spec failed"
sed -i -e 's/"terminal": true/"terminal": false/' \
       -e "s|^\\([[:space:]]*\\)\"sh\"\$|\\1\"sh\", \"-c\", \"$LOOP\"|" \
       -e "s|\"path\": \"rootfs\"|\"path\": \"$ROOTFS\"|" "$BUNDLE/config.json"
if ! grep -qF -- "\"$LOOP\"" "$BUNDLE/config.json" || ! grep -q '"terminal": false' "$BUNDLE/config.json"; then
  die "could not adapt runc spec's config.json"
fi

# The same with the hardened spec sbx generates (seccomp profile, masked
# paths, device rules, its /tmp mount...): what runsc itself costs for
# the isolation sbx asks of it, so that the ratio against it is sbx's own
# overhead.  Taken from the sandbox that is snapshotted, pointed at the
# same rootfs directory, its init replaced by the loop.
SPEC_BUNDLE=$WORK/bundle-sbxspec
make_spec_bundle ()  # SANDBOX_ID
{
  copy_sbx_bundle "$1" "$SPEC_BUNDLE" "$ROOTFS" "$TAG-spec" -e "s|\"/.sbx/init\"|\"/bin/sh\", \"-c\", \"$LOOP\"|" &&
    grep -qF "\"$LOOP\"" "$SPEC_BUNDLE/config.json"
}

SNAP1=
CK1_SBX=''

# runsc-restore-same: sbx's own checkpoint restored by runsc alone, on the
# bundle sbx restores it with (taken from a sandbox sbx restored, in the
# warm-up) and on an overlay of the snapshot's layers under sbx's top layer,
# as sbx mounts it (volatile, a fresh upper dir each run, untimed).
SAME=$WORK/same
SAME_LOWER=
make_same_bundle ()  # SANDBOX_ID
{
  local d lower=top/v1
  mkdir -p "$SAME/rootfs"
  copy_sbx_bundle "$1" "$SAME/bundle" "$SAME/rootfs" "$TAG-same" && grep -qF '"/.sbx/init"' "$SAME/bundle/config.json" ||
    return 1
  # The snapshot's layers, base first; overlayfs wants the top first.
  # shellcheck disable=SC2013  # digests: no spaces
  for d in $(sed -n '/"layers"/,/]/p' "$SBX_ROOT/snapshots/$SNAP1/snapshot.json" | grep -o 'sha256:[0-9a-f]\{64\}'); do
    lower=${lower%%:*}:layers/sha256/${d#sha256:}/rootfs${lower#top/v1}
  done
  [[ $lower == top/v1:layers/* ]] || return 1
  SAME_LOWER=$lower
}
same_mount ()
{
  umount "$SAME/rootfs" 2>/dev/null
  rm -rf --one-file-system "$SAME/upper" "$SAME/work"
  mkdir -p "$SAME/upper" "$SAME/work" &&
    (cd "$SBX_ROOT" && mount -t overlay overlay -o nodev,nosuid \
       -o "lowerdir=$SAME_LOWER,upperdir=$SAME/upper,workdir=$SAME/work,volatile" "$SAME/rootfs") 2>>"$LOG"
}
runsc_same_run ()  # ROUND RECORD
{
  local c=runsc-restore-same record=$2 id=$TAG-same-$1 us rc
  [[ -n ${FAILED[$c]:-} ]] && return 1
  if [[ -z $SAME_LOWER ]]; then
    fail "$c" -- "no bundle of a sandbox sbx restored"
    return 1
  fi
  if ! same_mount; then
    fail "$c" -- "could not mount the overlay of the snapshot's layers on $SAME/rootfs"
    return 1
  fi
  printf '== runsc restore %s (of %s)\n' "$id" "$SNAP1" >>"$LOG"
  us=$(perl "$SRC_TOP/contrib/bench/restore-ping.pl" runsc --root "$RUNSC_ROOT" "${RUNSC_FLAGS[@]}" restore \
         --image-path "$SBX_ROOT/snapshots/$SNAP1/checkpoint" --bundle "$SAME/bundle" "$id" </dev/null 2>>"$LOG")
  rc=$?
  rsc delete -force "$id" >>"$LOG" 2>&1
  umount "$SAME/rootfs" 2>>"$LOG"
  if ((rc != 0)) || [[ ! $us =~ ^[0-9]+$ ]]; then
    fail "$c" -- "runsc restore of sbx's checkpoint, pinged through restore-ping.pl, failed (exit status $rc)"
    return 1
  fi
  $record && printf '%s\n' "$us" >>"$SAMPLES/$c"
  return 0
}
declare -A RS_BUNDLE=([runsc-restore]=$BUNDLE [runsc-restore-sbxspec]=$SPEC_BUNDLE)
declare -A RS_CKPT=([runsc-restore]=$WORK/checkpoint [runsc-restore-sbxspec]=$WORK/checkpoint-sbxspec)
declare -A RS_EXEC=([runsc-restore]=runsc-restore-exec [runsc-restore-sbxspec]=runsc-restore-exec-sbxspec)
declare -A RS_BYTES=()
# runsc's cases get sbx's own runsc flags, read from its running runsc.
use_sbx_flags ()  # VERB ID
{
  local flags=()
  if mapfile -d '' -t flags < <(sbx_runsc_flags "$1" "$2") && ((${#flags[@]})); then
    [[ "${flags[*]}" != "${RUNSC_FLAGS[*]}" ]] &&
      note "NOTE: sbx runs runsc with ${flags[*]} (src/lib/runtime.c had ${RUNSC_FLAGS[*]}); runsc's cases use sbx's"
    RUNSC_FLAGS=("${flags[@]}")
    RUNSC_FLAGS_FROM="read from sbx's own runsc $1"
  else
    note "could not read the flags of sbx's runsc $1; runsc's cases use ${RUNSC_FLAGS[*]}"
  fi
  return 0
}
# A runsc container of the bundle, running the loop, checkpointed.
runsc_checkpoint ()  # CASE
{
  local c=$1 ck=${RS_CKPT[$1]} id=$TAG-src-${1##*-}
  [[ -n ${FAILED[$c]:-} ]] && return 1
  mkdir -p "$ck"
  printf '== runsc run --detach --bundle %s %s; checkpoint\n' "${RS_BUNDLE[$c]}" "$id" >>"$LOG"
  if rsc run --detach --bundle "${RS_BUNDLE[$c]}" "$id" </dev/null >>"$LOG" 2>&1 && sleep 0.5 &&
     rsc checkpoint --image-path "$ck" "$id" </dev/null >>"$LOG" 2>&1; then
    rsc delete -force "$id" >>"$LOG" 2>&1
    RS_BYTES[$c]=$(du -sb "$ck" | awk '{ print $1 }')
    note "runsc checkpoint for $c: ${RS_BYTES[$c]} bytes"
  else
    rsc delete -force "$id" >>"$LOG" 2>&1
    fail "$c" "${RS_EXEC[$c]}" -- "runsc run --detach --bundle ${RS_BUNDLE[$c]} + checkpoint failed"
  fi
}
setup_part1 ()
{
  local id
  tar -C "$ROOTFS" -cf "$WORK/busybox.tar" . 2>>"$LOG" || { fail "${P1_CASES[@]}" -- "tar of the busybox rootfs failed"; return 1; }
  sbxq import --tag bench-busybox "$WORK/busybox.tar" ||
    { fail "${P1_CASES[@]}" -- "sbx import of the busybox rootfs failed"; return 1; }
  # sbx: a sandbox running the loop, snapshotted.
  if sbxq create --block-network --image bench-busybox && id=$(last_line) && [[ -n $id ]]; then
    make_spec_bundle "$id" ||
      fail runsc-restore-sbxspec runsc-restore-exec-sbxspec -- "could not adapt sbx's config.json (of $id) into $SPEC_BUNDLE"
  else
    id=''
  fi
  if [[ -n $id ]] && sbxq exec -d "$id" -- sh -c "$LOOP" && sleep 0.5 && use_sbx_flags run "$id" &&
     sbxq snapshot "$id" && SNAP1=$(last_line) && [[ $SNAP1 == snap-* ]]; then
    sbxq rm "$id" || note "sbx rm of the snapshotted sandbox $id failed"
    CK1_SBX=$(du -sb "$SBX_ROOT/snapshots/$SNAP1/checkpoint" | awk '{ print $1 }')
    note "sbx snapshot: $SNAP1 ($CK1_SBX bytes of checkpoint)"
  else
    fail sbx-restore sbx-restore-exec -- "making the sbx snapshot failed"
    [[ -f $SPEC_BUNDLE/config.json ]] ||
      fail runsc-restore-sbxspec runsc-restore-exec-sbxspec -- "no sbx sandbox to take the spec from"
  fi
  runsc_checkpoint runsc-restore
  runsc_checkpoint runsc-restore-sbxspec
}

# One run of each side: restore (t1), then exec true (t2); the removal after
# it is untimed.  The warm-up run (RECORD false) also checks that the loop
# is there again.
sbx_run ()  # ROUND RECORD
{
  local record=$2 t0 t1 t2 rc id=''
  [[ -n ${FAILED[sbx-restore]:-} ]] && return 1
  printf '== sbx restore %s (round %s)\n' "$SNAP1" "$1" >>"$LOG"
  stamp t0
  "$SBX" restore "$SNAP1" </dev/null >"$WORK/last-out" 2>>"$LOG"
  rc=$?
  stamp t1
  read -r id <"$WORK/last-out"
  if ((rc == 0)) && [[ -n $id ]]; then
    "$SBX" exec "$id" -- true </dev/null >>"$LOG" 2>&1
    rc=$?
    stamp t2
  fi
  if ((rc != 0)) || [[ -z $id ]]; then
    [[ -n $id ]] && "$SBX" terminate --rm "$id" >>"$LOG" 2>&1
    fail sbx-restore sbx-restore-exec -- "sbx restore $SNAP1 + exec ${id:-?} -- true failed (exit status $rc)"
    return 1
  fi
  if ! $record; then
    local flags=()
    if mapfile -d '' -t flags < <(sbx_runsc_flags restore "$id") && ((${#flags[@]})); then
      if [[ "${flags[*]}" != "${RUNSC_FLAGS[*]}" ]]; then
        note "WARNING: sbx restores with runsc ${flags[*]}, runsc's cases use ${RUNSC_FLAGS[*]}"
        RUNSC_FLAGS_FROM+="; WARNING: sbx's restore uses ${flags[*]}"
      else
        RUNSC_FLAGS_FROM+=", the same in its runsc restore"
      fi
    fi
    if ! "$SBX" exec "$id" -- ps 2>>"$LOG" | grep -qF "$LOOP"; then
      fail sbx-restore sbx-restore-exec -- "the sandbox restored by sbx does not run the loop (sbx exec $id -- ps)"
    fi
  fi
  $record && log_steps sbx-restore "$id" "$t0" "$t1"
  if ! $record && [[ -z $SAME_LOWER ]] && ! make_same_bundle "$id"; then
    SAME_LOWER=
    fail runsc-restore-same -- "could not adapt the bundle of $id (restored by sbx) into $SAME/bundle"
  fi
  "$SBX" terminate --rm "$id" >>"$LOG" 2>&1 || note "sbx terminate --rm $id failed"
  [[ -n ${FAILED[sbx-restore]:-} ]] && return 1
  if $record; then
    printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/sbx-restore"
    printf '%s\n' "$((t2 - t0))" >>"$SAMPLES/sbx-restore-exec"
  fi
}
runsc_side ()  # CASE ROUND RECORD
{
  local c=$1 ce=${RS_EXEC[$1]} record=$3 t0 t1 t2 rc id=$TAG-${1##*-}-$2
  [[ -n ${FAILED[$c]:-} ]] && return 1
  printf '== runsc restore %s\n' "$id" >>"$LOG"
  stamp t0
  rsc restore --detach --image-path "${RS_CKPT[$c]}" --bundle "${RS_BUNDLE[$c]}" "$id" </dev/null >>"$LOG" 2>&1
  rc=$?
  stamp t1
  if ((rc == 0)); then
    rsc exec "$id" /bin/true </dev/null >>"$LOG" 2>&1
    rc=$?
    stamp t2
  fi
  if ((rc == 0)) && ! $record && ! rsc exec "$id" ps 2>>"$LOG" | grep -qF "$LOOP"; then
    fail "$c" "$ce" -- "the container runsc restored does not run the loop (runsc exec $id ps)"
  fi
  rsc kill "$id" KILL >>"$LOG" 2>&1
  rsc delete -force "$id" >>"$LOG" 2>&1 || note "runsc delete -force $id failed"
  if ((rc != 0)); then
    fail "$c" "$ce" -- "runsc restore --detach + exec $id failed (exit status $rc)"
    return 1
  fi
  [[ -n ${FAILED[$c]:-} ]] && return 1
  if $record; then
    printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/$c"
    printf '%s\n' "$((t2 - t0))" >>"$SAMPLES/$ce"
  fi
}
runsc_run () { runsc_side runsc-restore "$@"; }
runsc_spec_run () { runsc_side runsc-restore-sbxspec "$@"; }

# Rounds: the sides take turns at going first (round i starts with side i,
# modulo their number), so that none always gets the memory another has
# just freed (on a VM with free page reporting, memory freed a while ago
# is slower to fault in again than memory freed just now).
rounds ()  # FUNCTION...: each taking ROUND RECORD
{
  local fns=("$@") k=$# i j
  for ((j = 0; j < k; j++)); do "${fns[j]}" 0 false; done   # warm-up, untimed; also the checks
  for ((i = 1; i <= N; i++)); do
    for ((j = 0; j < k; j++)); do "${fns[(i - 1 + j) % k]}" "$i" true; done
  done
}

note "work dir $WORK ($FS_DESC)"
note "part 1: busybox; 1 warm-up + $N timed rounds of sbx restore, runsc restore of its checkpoint, runsc restore and runsc restore on sbx's spec"
setup_part1
rounds sbx_run runsc_same_run runsc_run runsc_spec_run

# ================================================================ part 2
P2_CASES=(py-cold py-restore py-restore-exec)
TAR_DESC=
TAR_BYTES=0
SNAP2=
SNAP2_S=
NMODS=
IMPORT_S=
PY_CHECK=

skip_python ()  # REASON
{
  local c
  note "PART 2 SKIPPED: $1"
  for c in "${P2_CASES[@]}"; do SKIPPED[$c]=$1; done
}

# The tarball: --rootfs-tar, else the cached one, else debootstrap makes it
# (from debootstrap's own default mirror).  Device nodes are left out: sbx
# refuses them (a container gets its /dev from the runtime).
make_rootfs_tar ()
{
  local dir=${CACHE_DIR:-$WORK/cache} out t0 rc s
  out=$dir/debian-$SUITE-minbase-python3.tar
  mkdir -p "$dir"
  if [[ -s $out ]]; then
    note "reusing $out"
    ROOTFS_TAR=$out
    TAR_DESC="debootstrap --variant=minbase --include=python3 $SUITE (cached: $out)"
    return 0
  fi
  if ! command -v debootstrap >/dev/null; then
    skip_python "debootstrap is not installed (apt-get install debootstrap), and no --rootfs-tar given"
    return 1
  fi
  note "debootstrap --variant=minbase --include=python3 $SUITE (a minute or more; log: $WORK/debootstrap.log)"
  t0=$SECONDS
  debootstrap --variant=minbase --include=python3 "$SUITE" "$WORK/debootstrap" </dev/null >"$WORK/debootstrap.log" 2>&1
  rc=$?
  umount_under "$WORK/debootstrap"   # in case it left /proc or /sys mounted
  if ((rc != 0)); then
    note "debootstrap failed (exit status $rc; no mirror reachable?). Its log ends:"
    tail -5 "$WORK/debootstrap.log" | sed 's/^/    /' >&2
    cat "$WORK/debootstrap.log" >>"$LOG"
    skip_python "debootstrap --variant=minbase --include=python3 $SUITE failed (exit status $rc)"
    rm -rf --one-file-system "$WORK/debootstrap"
    return 1
  fi
  s=$((SECONDS - t0))
  if ! tar --numeric-owner -C "$WORK/debootstrap" --exclude='./dev/*' -cf "$out.tmp" . 2>>"$LOG"; then
    skip_python "tar -c of the debootstrapped rootfs failed"
    rm -f "$out.tmp"
    return 1
  fi
  mv "$out.tmp" "$out"
  rm -rf --one-file-system "$WORK/debootstrap"
  note "debootstrap took ${s}s; tarball $out"
  ROOTFS_TAR=$out
  TAR_DESC="debootstrap --variant=minbase --include=python3 $SUITE (made in ${s}s)"
  return 0
}

# The background python: imports, writes "PID MODULES" to /tmp/imported,
# sleeps; on SIGUSR1 it writes its module count to /tmp/pong (the restored
# one's proof of life).  Python resumes the sleep after the handler.
PY_WARM="import $MODULES
import os, signal, sys, time
def pong(*_):
    open('/tmp/pong.tmp', 'w').write('%d\\n' % len(sys.modules))
    os.rename('/tmp/pong.tmp', '/tmp/pong')
signal.signal(signal.SIGUSR1, pong)
open('/tmp/imported.tmp', 'w').write('%d %d\\n' % (os.getpid(), len(sys.modules)))
os.rename('/tmp/imported.tmp', '/tmp/imported')
time.sleep(100000)"
PY_COLD="import $MODULES; print(1)"
PY_PID=

setup_part2 ()
{
  local id t0 t1 got
  if [[ -n $ROOTFS_TAR ]]; then
    TAR_DESC="--rootfs-tar $ROOTFS_TAR"
  else
    make_rootfs_tar || return 1
  fi
  TAR_BYTES=$(stat -c %s "$ROOTFS_TAR")
  sbxq import --tag py "$ROOTFS_TAR" || { fail "${P2_CASES[@]}" -- "sbx import --tag py $ROOTFS_TAR failed"; return 1; }
  if ! "$SBX" run --image py -- python3 -c 'print(1)' </dev/null 2>>"$LOG" | grep -qx 1; then
    fail "${P2_CASES[@]}" -- "the py image has no working python3 (sbx run --image py -- python3 -c 'print(1)')"
    return 1
  fi
  "$SBX" gc >>"$LOG" 2>&1
  # The sandbox to snapshot: its python imports, then it is snapshotted.
  if ! sbxq create --block-network --image py || ! id=$(last_line) || [[ -z $id ]]; then
    fail py-restore py-restore-exec -- "sbx create --image py failed"; return 0
  fi
  stamp t0
  if ! sbxq exec -d "$id" -- python3 -c "$PY_WARM"; then
    fail py-restore py-restore-exec -- "sbx exec -d $id -- python3 ... failed"; return 0
  fi
  if ! got=$(wait_file "$id" /tmp/imported 120); then
    fail py-restore py-restore-exec -- "the background python did not write /tmp/imported in 120 s"; return 0
  fi
  stamp t1
  IMPORT_S=$(awk -v u="$((t1 - t0))" 'BEGIN { printf "%.2f", u / 1e6 }')
  read -r PY_PID NMODS <<<"$got"
  note "background python: pid $PY_PID, $NMODS modules, imported in ${IMPORT_S}s (incl. polling)"
  stamp t0
  if ! sbxq snapshot "$id" || ! SNAP2=$(last_line) || [[ $SNAP2 != snap-* ]]; then
    SNAP2=
    fail py-restore py-restore-exec -- "sbx snapshot $id failed"; return 0
  fi
  stamp t1
  SNAP2_S=$(awk -v u="$((t1 - t0))" 'BEGIN { printf "%.2f", u / 1e6 }')
  sbxq rm "$id" || note "sbx rm of the snapshotted sandbox $id failed"
  note "sbx snapshot: $SNAP2 in ${SNAP2_S}s ($(du -sh "$SBX_ROOT/snapshots/$SNAP2/checkpoint" | awk '{ print $1 }') checkpoint)"
}

py_cold_run ()  # ROUND RECORD
{
  local record=$2 t0 t1 t2 rc id='' out=''
  [[ -n ${FAILED[py-cold]:-} ]] && return 1
  printf '== py-cold (round %s)\n' "$1" >>"$LOG"
  stamp t0
  "$SBX" create --block-network --image py </dev/null >"$WORK/last-out" 2>>"$LOG"
  rc=$?
  read -r id <"$WORK/last-out"
  if ((rc == 0)) && [[ -n $id ]]; then
    stamp t1
    "$SBX" exec "$id" -- python3 -c "$PY_COLD" </dev/null >"$WORK/last-out" 2>>"$LOG"
    rc=$?
    stamp t2
    read -r out <"$WORK/last-out"
  fi
  [[ -n $id ]] && { "$SBX" terminate --rm "$id" >>"$LOG" 2>&1 || note "sbx terminate --rm $id failed"; }
  if ((rc != 0)) || [[ -z $id || $out != 1 ]]; then
    fail py-cold -- "sbx create --image py + exec ${id:-?} -- python3 -c 'import ...' failed (exit status $rc, printed '${out:-}')"
    return 1
  fi
  $record && printf '%s\n' "$((t2 - t0))" >>"$SAMPLES/py-cold"
  $record && printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/py-cold-create"
  return 0
}
py_restore_run ()  # ROUND RECORD
{
  local record=$2 t0 t1 t2 rc id='' got
  [[ -n ${FAILED[py-restore]:-} ]] && return 1
  printf '== py-restore %s (round %s)\n' "$SNAP2" "$1" >>"$LOG"
  stamp t0
  "$SBX" restore "$SNAP2" </dev/null >"$WORK/last-out" 2>>"$LOG"
  rc=$?
  stamp t1
  read -r id <"$WORK/last-out"
  if ((rc == 0)) && [[ -n $id ]]; then
    "$SBX" exec "$id" -- true </dev/null >>"$LOG" 2>&1
    rc=$?
    stamp t2
  fi
  if ((rc != 0)) || [[ -z $id ]]; then
    [[ -n $id ]] && "$SBX" terminate --rm "$id" >>"$LOG" 2>&1
    fail py-restore py-restore-exec -- "sbx restore $SNAP2 + exec ${id:-?} -- true failed (exit status $rc)"
    return 1
  fi
  if ! $record; then
    # The restored python: alive, and holding the modules it had.
    "$SBX" exec "$id" -- sh -c "kill -USR1 $PY_PID" </dev/null >>"$LOG" 2>&1
    if ! got=$(wait_file "$id" /tmp/pong 20); then
      PY_CHECK="FAILED: the restored python (pid $PY_PID) did not answer SIGUSR1"
      fail py-restore py-restore-exec -- "$PY_CHECK"
    elif [[ $got != "$NMODS" ]]; then
      PY_CHECK="FAILED: the restored python holds ${got:-?} modules, not $NMODS"
      fail py-restore py-restore-exec -- "$PY_CHECK"
    else
      PY_CHECK="the restored python (pid $PY_PID) answered SIGUSR1: $got modules, as before the snapshot"
      note "$PY_CHECK"
    fi
  fi
  $record && log_steps py-restore "$id" "$t0" "$t1"
  "$SBX" terminate --rm "$id" >>"$LOG" 2>&1 || note "sbx terminate --rm $id failed"
  [[ -n ${FAILED[py-restore]:-} ]] && return 1
  if $record; then
    printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/py-restore"
    printf '%s\n' "$((t2 - t0))" >>"$SAMPLES/py-restore-exec"
  fi
}

if $SKIP_PYTHON; then
  skip_python "--skip-python"
else
  note "part 2: python; 1 warm-up + $N timed rounds of a cold create + import and a restore"
  if setup_part2; then
    [[ -z $SNAP2 ]] && FAILED[py-restore]=${FAILED[py-restore]:-no snapshot}
    rounds py_cold_run py_restore_run
  fi
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
ALL_CASES=("${P1_CASES[@]}" py-cold py-cold-create py-restore py-restore-exec)
declare -A MED=() NRUNS=() MIN=() MAX=()
for c in "${ALL_CASES[@]}"; do
  read -r "NRUNS[$c]" "MED[$c]" "MIN[$c]" "MAX[$c]" <<<"$(stats "$c")"
done
# A failed case keeps no samples: a partial median would mislead.
for c in "${!FAILED[@]}"; do MED[$c]=; done
[[ -n ${FAILED[py-cold]:-} ]] && MED[py-cold-create]=

ms () { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }

# Steps of sbx restore: "median_us<TAB>runs<TAB>step" in event order.
STEP_CASES=()
declare -A STEPS=()
step_stats ()
{
  local f=$WORK/steps-$1 label
  [[ -s $f ]] || return 0
  awk -F'\t' '!seen[$1]++ { print $1 }' "$f" | while IFS= read -r label; do
    awk -F'\t' -v l="$label" '$1 == l { print $2 }' "$f" | sort -n | awk -v l="$label" '{ v[NR] = $1 }
      END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.0f\t%d\t%s\n", m, NR, l }'
  done
}
for c in sbx-restore py-restore; do
  [[ -n ${MED[$c]:-} ]] || continue
  STEPS[$c]=$(step_stats "$c")
  [[ -n ${STEPS[$c]} ]] && STEP_CASES+=("$c")
done

# name numerator denominator op target
RATIOS=(
  "sbx-restore/runsc-restore-same sbx-restore runsc-restore-same <= 1.2"
  "sbx-restore/runsc-restore sbx-restore runsc-restore <= 1.2"
  "sbx-restore-exec/runsc-restore-exec sbx-restore-exec runsc-restore-exec <= 1.2"
  "sbx-restore/runsc-restore-sbxspec sbx-restore runsc-restore-sbxspec <= 1.2"
  "sbx-restore-exec/runsc-restore-exec-sbxspec sbx-restore-exec runsc-restore-exec-sbxspec <= 1.2"
  "py-restore-exec/py-cold py-restore-exec py-cold <= 0.5"
  "py-restore/py-cold py-restore py-cold - -"
)
# The value judged is the median of the per-round ratios (paired_ratio,
# lib.sh; the py cases run in rounds too); the ratio of the two medians is
# shown beside it.
declare -A RVAL=() RMET=() RMED=()
for r in "${RATIOS[@]}"; do
  read -r rn num den op tgt <<<"$r"
  if [[ -n ${MED[$num]:-} && -n ${MED[$den]:-} && ${MED[$den]} != 0 ]]; then
    RMED[$rn]=$(awk -v a="${MED[$num]}" -v b="${MED[$den]}" 'BEGIN { printf "%.2f", a / b }')
    RVAL[$rn]=$(paired_ratio "$num" "$den")
    [[ -n ${RVAL[$rn]} ]] || RVAL[$rn]=${RMED[$rn]}
    [[ $op == - ]] && continue
    RMET[$rn]=$(awk -v v="${RVAL[$rn]}" -v t="$tgt" -v op="$op" \
      'BEGIN { ok = (op == "<=") ? (v <= t) : (v < t); print ok ? "met" : "MISSED" }')
  else
    for c in "$num" "$den"; do
      [[ -n ${SKIPPED[$c]:-} ]] && { RMET[$rn]=skipped; break; }
      [[ -n ${FAILED[$c]:-} ]] && { RMET[$rn]=failed; break; }
    done
  fi
done

declare -A DESC=(
  [sbx-restore]="sbx restore SNAP"
  [sbx-restore-exec]="sbx restore SNAP; sbx exec ID -- true"
  [runsc-restore-same]="runsc restore of sbx's checkpoint on its bundle, until the agent's PONG"
  [runsc-restore]="runsc restore --detach --image-path DIR --bundle B ID"
  [runsc-restore-exec]="the same; runsc exec ID /bin/true"
  [runsc-restore-sbxspec]="runsc restore of the same on sbx's spec (seccomp, masks...)"
  [runsc-restore-exec-sbxspec]="the same; runsc exec ID /bin/true"
  [py-cold]="sbx create --image py; sbx exec ID -- python3 -c 'IMPORT; print(1)'"
  [py-cold-create]="  of which sbx create --image py"
  [py-restore]="sbx restore SNAP  (python with IMPORT done, asleep)"
  [py-restore-exec]="sbx restore SNAP; sbx exec ID -- true"
)
row ()  # CASE
{
  local c=$1
  if [[ -n ${MED[$c]:-} ]]; then
    printf '%-26s %4s %10s %9s %9s  %s\n' "$c" "${NRUNS[$c]}" "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" \
      "$(ms "${MAX[$c]}")" "${DESC[$c]}"
  elif [[ -n ${SKIPPED[$c]:-} ]]; then
    printf '%-26s %4s %10s   (skipped: %s)\n' "$c" 0 - "${SKIPPED[$c]}"
  else
    printf '%-26s %4s %10s   (%s)\n' "$c" 0 - "${FAILED[$c]:-no samples}"
  fi
}

table ()
{
  local c r
  printf '\nsbx snapshot benchmark: %s timed runs per case; %ss in all\n' "$N" "$ELAPSED"
  printf 'host: %s, %s CPUs; %s (%s); runsc %s; work dir on %s\n' \
    "$(uname -r)" "$(nproc)" "$("$SBX" version 2>/dev/null | head -1)" "$SBX_SRC" \
    "$(runsc --version 2>/dev/null | awk 'NR==1{print $3}')" "$FS_DESC"
  printf 'runsc flags (both sides): %s (%s)\n' "${RUNSC_FLAGS[*]}" "$RUNSC_FLAGS_FROM"
  printf '\n%-26s %4s %10s %9s %9s  %s\n' "busybox loop" runs "median ms" "min ms" "max ms" command
  for c in "${P1_CASES[@]}"; do row "$c"; done
  printf 'checkpoints: sbx %s bytes, runsc %s bytes, runsc on sbx'"'"'s spec %s bytes\n' "${CK1_SBX:--}" \
    "${RS_BYTES[runsc-restore]:--}" "${RS_BYTES[runsc-restore-sbxspec]:--}"
  printf '\n%-26s %4s %10s %9s %9s  %s\n' "python" runs "median ms" "min ms" "max ms" command
  for c in py-cold py-cold-create py-restore py-restore-exec; do
    [[ $c == py-cold-create && -z ${MED[$c]:-} ]] && continue
    row "$c"
  done
  if [[ -n $TAR_DESC ]]; then
    printf 'IMPORT = import %s\n' "$MODULES"
    printf 'rootfs: %s; %s bytes\n' "$TAR_DESC" "$TAR_BYTES"
    [[ -n $SNAP2_S ]] && printf 'snapshot: %s modules loaded; sbx snapshot took %ss, checkpoint %s bytes\n' \
      "${NMODS:-?}" "$SNAP2_S" "$(du -sb "$SBX_ROOT/snapshots/$SNAP2/checkpoint" 2>/dev/null | awk '{ print $1 }')"
    [[ -n $PY_CHECK ]] && printf 'check: %s\n' "$PY_CHECK"
  fi
  local m n l sum
  for c in "${STEP_CASES[@]}"; do
    printf '\nsteps of %s, from the sandbox log (median ms; a step ends at the event named):\n' "$c"
    sum=0
    while IFS=$'\t' read -r m n l; do
      printf '  %-52s %8s  (%s runs)\n' "$l" "$(ms "$m")" "$n"
      sum=$((sum + m))
    done <<<"${STEPS[$c]}"
    printf '  %-52s %8s  (the case median: %s)\n' "sum of the step medians" "$(ms "$sum")" "$(ms "${MED[$c]:-0}")"
  done
  printf '\n%-44s %7s %8s %9s  %s\n' ratio value medians target result
  for r in "${RATIOS[@]}"; do
    read -r rn num den op tgt <<<"$r"
    if [[ $op == - ]]; then
      printf '%-44s %7s %8s %9s  %s\n' "$rn" "${RVAL[$rn]:--}" "${RMED[$rn]:--}" - "(information)"
    else
      printf '%-44s %7s %8s %9s  %s\n' "$rn" "${RVAL[$rn]:--}" "${RMED[$rn]:--}" "$op $tgt" "${RMET[$rn]:-n/a}"
    fi
  done
  printf '(value: the median of the per-round ratios; medians: the ratio of the two medians)\n'
}

json_str () { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; printf '"%s"' "$s"; }
json_case ()  # NAME
{
  local c=$1
  if [[ -n ${MED[$c]:-} ]]; then
    printf '{"runs": %s, "median_ms": %s, "min_ms": %s, "max_ms": %s}' "${NRUNS[$c]}" \
      "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")"
  elif [[ -n ${SKIPPED[$c]:-} ]]; then
    printf '{"runs": 0, "skipped": %s}' "$(json_str "${SKIPPED[$c]}")"
  else
    printf '{"runs": 0, "error": %s}' "$(json_str "${FAILED[$c]:-no samples}")"
  fi
}
# shellcheck disable=SC2015  # echo does not fail
json ()
{
  local sep c r
  printf '{\n  "runs": %s,\n  "elapsed_s": %s,\n' "$N" "$ELAPSED"
  printf '  "runsc_flags": %s,\n' "$(json_str "${RUNSC_FLAGS[*]}")"
  printf '  "checkpoint_bytes": {"sbx": %s, "runsc": %s, "runsc_sbxspec": %s},\n' "${CK1_SBX:-null}" \
    "${RS_BYTES[runsc-restore]:-null}" "${RS_BYTES[runsc-restore-sbxspec]:-null}"
  printf '  "python": {"modules": %s, "rootfs": %s, "modules_loaded": %s, "snapshot_s": %s, "check": %s},\n' \
    "$(json_str "$MODULES")" "$( [[ -n $TAR_DESC ]] && json_str "$TAR_DESC" || echo null)" \
    "${NMODS:-null}" "${SNAP2_S:-null}" "$( [[ -n $PY_CHECK ]] && json_str "$PY_CHECK" || echo null)"
  printf '  "cases": {'
  sep=
  for c in "${ALL_CASES[@]}"; do
    [[ $c == py-cold-create && -z ${MED[$c]:-} ]] && continue
    printf '%s\n    %s: ' "$sep" "$(json_str "$c")"; sep=,
    json_case "$c"
  done
  printf '\n  },\n  "steps": {'
  sep=
  local m n l sep2
  for c in "${STEP_CASES[@]}"; do
    printf '%s\n    %s: [' "$sep" "$(json_str "$c")"; sep=,
    sep2=
    while IFS=$'\t' read -r m n l; do
      printf '%s\n      {"step": %s, "median_ms": %s, "runs": %s}' "$sep2" "$(json_str "$l")" "$(ms "$m")" "$n"
      sep2=,
    done <<<"${STEPS[$c]}"
    printf '\n    ]'
  done
  printf '\n  },\n  "ratios": {'
  sep=
  for r in "${RATIOS[@]}"; do
    read -r rn num den op tgt <<<"$r"
    printf '%s\n    %s: {"value": %s, "ratio_of_medians": %s, "target": %s, "met": %s}' "$sep" "$(json_str "$rn")" \
      "${RVAL[$rn]:-null}" "${RMED[$rn]:-null}" "$( [[ $op == - ]] && echo null || json_str "$op $tgt")" \
      "$(case ${RMET[$rn]:-} in met) echo true ;; MISSED) echo false ;; *) echo null ;; esac)"
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

# A benchmark, not a test: missed targets and a skipped part 2 (--skip-python,
# no debootstrap, no mirror) do not fail it; a case that could not run does.
((${#FAILED[@]} == 0))
