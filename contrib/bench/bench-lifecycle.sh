#!/usr/bin/env bash
# bench-lifecycle.sh: sbx's sandbox lifecycle and exec path, side by side
# with the runtimes it drives (runc, runsc) and with podman and bubblewrap,
# all on one busybox rootfs made from the host's busybox-static.
#
# Run as root.  See contrib/bench/README.md.  Only bash, coreutils, tar and
# awk are needed besides the tools under test (no python, no compiler).

set -uo pipefail

SBX=${SBX:-sbx}
N=20
JSON=false
PHASES=false
STREAM_SIZE=1G
RUNSC_STREAM_SIZE=256M
STREAM_RUNS=3
KEEP=false
EXEC_ONLY=false

usage ()
{
  cat <<EOF
Usage: ${0##*/} [-n N] [--json] [--phases] [--stream-size SIZE]
       [--runsc-stream-size SIZE] [--stream-runs K] [--keep] [-h]

Times, in one run on one busybox rootfs, N rounds of every case (each round
in a new random order):
  sbx-run-runc    sbx run --runtime runc --block-network -- /bin/true
  runc-run        runc run of an OCI bundle running /bin/true
  sbx-run-runsc   sbx run --block-network -- /bin/true
  runsc-run       runsc --network=none run of the same bundle
  runc-run-sbxspec / runsc-run-sbxspec
                  the same runtimes on the hardened spec sbx generates
                  (seccomp profile, masks, device rules) and sbx's runsc
                  flags, read from sbx's runsc: sbx's own overhead is the
                  ratio against these
  podman-run      podman --runtime runc run --rm --network=none --rootfs DIR /bin/true
  bwrap-run       bwrap --ro-bind DIR / --unshare-all /bin/true
  sbx-exec-runc / sbx-exec-runsc   sbx exec ID -- /bin/true into a running sandbox
  runc-exec / runsc-exec / podman-exec   the same into a container running sleep
then the stream throughput of  sbx exec ID -- cat /dev/zero | head -c SIZE.

Options:
  -n N                    iterations per case (default $N)
  --json                  JSON on stdout (the table then goes to stderr)
  --phases                also time sbx create / exec / terminate / rm as
                          separate CLI calls (N each, per runtime)
  --stream-size SIZE      bytes per runc stream run (default $STREAM_SIZE; K/M/G = 1024^n)
  --runsc-stream-size SIZE  bytes per runsc stream run (default $RUNSC_STREAM_SIZE)
  --stream-runs K         timed stream runs per runtime (default $STREAM_RUNS)
  --exec-only             only the exec cases (sbx-exec-*, runc-exec,
                          runsc-exec), no streams: use a large -n
  --keep                  keep the work directory (logs) instead of removing it
  -h, --help              show this help

Environment: SBX (sbx binary, default "sbx"), SBX_INIT (passed through to sbx).
EOF
}

die () { printf 'bench-lifecycle: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-lifecycle: %s\n' "$*" >&2; }

while (($#)); do
  case $1 in
    -n) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive integer"; N=$2; shift 2 ;;
    -n[0-9]*) N=${1#-n}; [[ $N =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive integer"; shift ;;
    --json) JSON=true; shift ;;
    --phases) PHASES=true; shift ;;
    --stream-size) STREAM_SIZE=${2:-}; shift 2 || die "--stream-size wants a value" ;;
    --runsc-stream-size) RUNSC_STREAM_SIZE=${2:-}; shift 2 || die "--runsc-stream-size wants a value" ;;
    --stream-runs) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--stream-runs wants an integer"; STREAM_RUNS=$2; shift 2 ;;
    --exec-only) EXEC_ONLY=true; STREAM_RUNS=0; shift ;;
    --keep) KEEP=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done

size_bytes ()
{
  local s=$1 n u
  [[ $s =~ ^([0-9]+)([KMG]?)$ ]] || die "bad size '$s' (want e.g. 256M, 1G)"
  n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
  case $u in K) n=$((n << 10)) ;; M) n=$((n << 20)) ;; G) n=$((n << 30)) ;; esac
  printf '%s' "$n"
}
STREAM_BYTES=$(size_bytes "$STREAM_SIZE") || exit 2
RUNSC_STREAM_BYTES=$(size_bytes "$RUNSC_STREAM_SIZE") || exit 2

((EUID == 0)) || die "run me as root"
command -v "$SBX" >/dev/null || die "sbx not found (set SBX=/path/to/sbx)"
SBX=$(command -v "$SBX")
for t in runc tar awk sort; do
  command -v $t >/dev/null || die "$t is needed"
done
HAVE_RUNSC=false HAVE_PODMAN=false HAVE_BWRAP=false
command -v runsc >/dev/null && HAVE_RUNSC=true
command -v podman >/dev/null && ! $EXEC_ONLY && HAVE_PODMAN=true
command -v bwrap >/dev/null && ! $EXEC_ONLY && HAVE_BWRAP=true
$HAVE_RUNSC || note "runsc not installed: its cases are skipped"
BUSYBOX=$(command -v busybox) || die "busybox is needed (apt-get install busybox-static)"
ldd "$BUSYBOX" >/dev/null 2>&1 && die "$BUSYBOX is dynamically linked (apt-get install busybox-static)"

# stamp, umount_under, ours, others_using and the leaked_* checks.
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 2

# ---------------------------------------------------------------- cleanup
unset SBX_ROOT SBX_RUN_ROOT   # set again below, to throwaway dirs
WORK=
RUN_DIR=
SBX_IDS=()
PODMAN_ID=
RUNC_ROOT='' RUNSC_ROOT=''
PODMAN=()
SPEC_CGROUP_PROCS=() SPEC_CGROUP_DIRS=()
CLEANED=false


cleanup ()
{
  $CLEANED && return
  CLEANED=true
  trap '' INT TERM HUP
  local id
  if [[ -n $WORK ]]; then
    # Only ever the throwaway store: never a SBX_ROOT from the caller.
    if [[ ${SBX_ROOT:-} == "$WORK/sbx-root" && -d $SBX_ROOT ]]; then
      for id in "${SBX_IDS[@]}" $("$SBX" ls -q 2>/dev/null); do
        "$SBX" terminate "$id" >/dev/null 2>&1
        "$SBX" rm -f "$id" >/dev/null 2>&1
      done
      "$SBX" gc >/dev/null 2>&1
      [[ -n $("$SBX" ls -q 2>/dev/null) ]] && note "sbx still lists sandboxes after gc: $("$SBX" ls -q | tr '\n' ' ')"
    fi
    if [[ -n $RUNC_ROOT && -d $RUNC_ROOT ]]; then
      for id in $(runc --root "$RUNC_ROOT" list -q 2>/dev/null) "$TAG-rx"; do
        runc --root "$RUNC_ROOT" kill "$id" KILL >/dev/null 2>&1
        runc --root "$RUNC_ROOT" delete -f "$id" >/dev/null 2>&1
      done
    fi
    if [[ -n $RUNSC_ROOT && -d $RUNSC_ROOT ]]; then
      for id in $(runsc --root "$RUNSC_ROOT" list -quiet 2>/dev/null) "$TAG-sx"; do
        runsc --root "$RUNSC_ROOT" kill "$id" KILL >/dev/null 2>&1
        runsc --root "$RUNSC_ROOT" delete -force "$id" >/dev/null 2>&1
      done
    fi
    if ((${#PODMAN[@]})); then
      "${PODMAN[@]}" rm -a -f -t 0 >/dev/null 2>&1
      # conmon starts `podman container cleanup` when a container ends; one
      # still running would mount the store again behind our back.
      for ((id = 0; id < 50; id++)); do
        others_using "$WORK/podman-root" || break
        sleep 0.1
      done
    fi
    umount_under "$WORK"
    if $KEEP; then
      note "kept $WORK"
    else
      rm -rf --one-file-system "$WORK"
    fi
  fi
  for id in "${SPEC_CGROUP_DIRS[@]}"; do rmdir "$id" 2>/dev/null; done
  if [[ -n $RUN_DIR ]]; then
    umount_under "$RUN_DIR"
    rm -rf --one-file-system "$RUN_DIR"
  fi
  check_leaks
}

# Says what cleanup missed: processes outside this script's own tree whose
# command line or environment names the work dirs (sbx monitors carry
# SBX_ROOT), runtime cgroups named after this run's containers, mounts.
check_leaks () { [[ -z $WORK ]] || leak_report "$TAG" "$WORK" "$RUN_DIR"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- setup
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench.XXXXXX") || die "mktemp failed"
# The runtime directory is a tmpfs in real use (/run/sbx): keep that.
RUN_DIR=$(mktemp -d /run/sbx-bench.XXXXXX 2>/dev/null) || RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench-run.XXXXXX")
export SBX_ROOT=$WORK/sbx-root SBX_RUN_ROOT=$RUN_DIR
RUNC_ROOT=$WORK/runc-root
RUNSC_ROOT=$WORK/runsc-root
LOG=$WORK/log
SAMPLES=$WORK/samples
mkdir -p "$SBX_ROOT" "$RUNC_ROOT" "$RUNSC_ROOT" "$SAMPLES"
: >"$LOG"
TAG=bench$$

ROOTFS=$WORK/rootfs
busybox_rootfs "$ROOTFS" "$BUSYBOX" || die "cannot make the busybox rootfs in $ROOTFS"

# Two bundles on that rootfs: /bin/true, and a long sleep for the exec cases.
make_bundle ()
{
  local dir=$1 args=$2
  mkdir -p "$dir"
  (cd "$dir" && runc spec) || die "runc spec failed"
  sed -i -e 's/"terminal": true/"terminal": false/' \
         -e "s|^\\([[:space:]]*\\)\"sh\"\$|\\1$args|" \
         -e "s|\"path\": \"rootfs\"|\"path\": \"$ROOTFS\"|" "$dir/config.json"
  if ! grep -qF -- "$args" "$dir/config.json" || ! grep -q '"terminal": false' "$dir/config.json"; then
    die "could not adapt runc spec's config.json"
  fi
}
make_bundle "$WORK/bundle-true" '"/bin/true"'
make_bundle "$WORK/bundle-sleep" '"/bin/sleep", "1000"'

# The same rootfs as an sbx image (its built-in busybox is made the same way).
IMAGE=bench-busybox
tar -C "$ROOTFS" -cf "$WORK/rootfs.tar" . || die "tar failed"
if ! "$SBX" import --tag "$IMAGE" "$WORK/rootfs.tar" >>"$LOG" 2>&1; then
  note "sbx import failed (see below); using sbx's built-in busybox image"
  tail -3 "$LOG" >&2
  IMAGE=busybox
fi

# The same runtimes with the hardened spec sbx generates (seccomp profile,
# masked paths, device rules...): what the runtime itself costs for the
# isolation sbx asks of it, so that the ratio against it is sbx's own
# overhead. Taken from a real sandbox's bundle, pointed at the same rootfs.
# runsc's global flags for it are sbx's own, read from the runsc of that
# sandbox (--ignore-cgroups among them: sbx places runsc in the sandbox's
# cgroup itself, and that move is part of sbx's overhead).
RUNSC_SPEC_FLAGS=(--file-access=shared --overlay2=none --network=none --platform=ptrace)
sbx_spec_bundle ()
{
  local rt=$1 dir=$2 id flags=()
  local r=0
  id=$("$SBX" create --image "$IMAGE" --runtime "$rt" --block-network 2>>"$LOG") || return 1
  if [[ $rt == runsc ]]; then
    if mapfile -d '' -t flags < <(sbx_runsc_flags run "$id") && ((${#flags[@]})); then
      RUNSC_SPEC_FLAGS=("${flags[@]}")
    else
      note "could not read the flags of sbx's runsc; runsc-run-sbxspec uses ${RUNSC_SPEC_FLAGS[*]}"
    fi
  fi
  copy_sbx_bundle "$id" "$dir" "$ROOTFS" "$TAG-spec" -e 's|"/.sbx/init"|"/bin/true"|' || r=1
  "$SBX" terminate --rm "$id" >>"$LOG" 2>&1
  ((r == 0)) && grep -q '"/bin/true"' "$dir/config.json"
}
HAVE_SPEC_RUNC=false HAVE_SPEC_RUNSC=false
# The cgroup the runsc-run-sbxspec case runs in when sbx's flags say
# --ignore-cgroups: TAG-spec-place under the controllers sbx places runsc in
# (src/lib/cgroup.c), removed at the end.
spec_cgroup ()
{
  local c d
  if [[ -d /sys/fs/cgroup/memory ]]; then
    for c in memory pids cpu cpuacct devices; do SPEC_CGROUP_DIRS+=("/sys/fs/cgroup/$c/$TAG-spec-place"); done
  else
    SPEC_CGROUP_DIRS=("/sys/fs/cgroup/$TAG-spec-place")
  fi
  # v1: the subshell moves itself, a single thread, by `tasks`, as sbx's
  # runtime process does (no global lock there).
  for d in "${SPEC_CGROUP_DIRS[@]}"; do
    mkdir -p "$d" || return 1
    if [[ -e $d/tasks ]]; then SPEC_CGROUP_PROCS+=("$d/tasks"); else SPEC_CGROUP_PROCS+=("$d/cgroup.procs"); fi
  done
}
! $EXEC_ONLY && sbx_spec_bundle runc "$WORK/bundle-sbxspec-runc" && HAVE_SPEC_RUNC=true
$HAVE_RUNSC && ! $EXEC_ONLY && sbx_spec_bundle runsc "$WORK/bundle-sbxspec-runsc" && HAVE_SPEC_RUNSC=true
if $HAVE_SPEC_RUNSC && [[ " ${RUNSC_SPEC_FLAGS[*]} " == *" --ignore-cgroups "* ]] && ! spec_cgroup; then
  note "cannot make the cgroup for runsc-run-sbxspec; dropped"
  HAVE_SPEC_RUNSC=false
fi

if $HAVE_PODMAN; then
  # Its own throwaway store; the host's nofile hard limit may be below
  # podman's default rlimits, so they are pinned.
  PODMAN=(podman --root "$WORK/podman-root" --runroot "$WORK/podman-run" --runtime runc)
  PODMAN_RUN_OPTS=(--network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --rootfs "$ROOTFS")
fi

# ---------------------------------------------------------------- cases
# Each case runs one iteration ($1 = iteration number); stdout and stderr go
# to the log.  A case that fails once is dropped from the rest of the run.
c_sbx_run_runc () { "$SBX" run --image "$IMAGE" --runtime runc --block-network -- /bin/true; }
c_runc_run () { runc --root "$RUNC_ROOT" run --bundle "$WORK/bundle-true" "$TAG-r$1"; }
c_sbx_run_runsc () { "$SBX" run --image "$IMAGE" --block-network -- /bin/true; }
c_runsc_run () { runsc --root "$RUNSC_ROOT" --network=none run --bundle "$WORK/bundle-true" "$TAG-s$1"; }
c_runc_run_sbxspec () { runc --root "$RUNC_ROOT" run --bundle "$WORK/bundle-sbxspec-runc" "$TAG-R$1"; }
# With --ignore-cgroups, as sbx does, runsc is first moved into a cgroup of
# the same controllers, as sbx moves it into the sandbox's (SPEC_CGROUP_PROCS).
c_runsc_run_sbxspec () {
  (
    for f in "${SPEC_CGROUP_PROCS[@]}"; do echo "$BASHPID" >"$f" || exit 1; done
    exec runsc --root "$RUNSC_ROOT" "${RUNSC_SPEC_FLAGS[@]}" run --bundle "$WORK/bundle-sbxspec-runsc" "$TAG-S$1"
  )
}
c_podman_run () { "${PODMAN[@]}" run --rm "${PODMAN_RUN_OPTS[@]}" /bin/true; }
c_bwrap_run () { bwrap --ro-bind "$ROOTFS" / --unshare-all /bin/true; }
c_sbx_exec_runc () { "$SBX" exec "$SB_RUNC" -- /bin/true; }
c_sbx_exec_runsc () { "$SBX" exec "$SB_RUNSC" -- /bin/true; }
c_runc_exec () { runc --root "$RUNC_ROOT" exec "$TAG-rx" /bin/true; }
c_runsc_exec () { runsc --root "$RUNSC_ROOT" --network=none exec "$TAG-sx" /bin/true; }
c_podman_exec () { "${PODMAN[@]}" exec "$PODMAN_ID" /bin/true; }

CASES=()
if ! $EXEC_ONLY; then
  CASES+=(sbx-run-runc runc-run)
  $HAVE_SPEC_RUNC && CASES+=(runc-run-sbxspec)
  $HAVE_RUNSC && CASES+=(sbx-run-runsc runsc-run)
  $HAVE_SPEC_RUNSC && CASES+=(runsc-run-sbxspec)
  $HAVE_PODMAN && CASES+=(podman-run)
  $HAVE_BWRAP && CASES+=(bwrap-run)
fi
CASES+=(sbx-exec-runc runc-exec)
$HAVE_RUNSC && CASES+=(sbx-exec-runsc runsc-exec)
$HAVE_PODMAN && CASES+=(podman-exec)

declare -A FAILED=()

run_case ()  # NAME ITERATION RECORD
{
  local name=$1 i=$2 record=$3 fn=c_${1//-/_} t0 t1 rc try
  [[ -n ${FAILED[$name]:-} ]] && return 1
  # A failure gets one retry (a binary being rebuilt under us, say); a
  # second failure drops the case from the rest of the run.
  for try in 1 b; do
    printf '== %s #%s\n' "$name" "$i" >>"$LOG"
    stamp t0
    "$fn" "$i${try#1}" </dev/null >>"$LOG" 2>&1
    rc=$?
    stamp t1
    ((rc == 0)) && break
    printf '== %s #%s: exit status %s\n' "$name" "$i" "$rc" >>"$LOG"
    [[ $try == 1 ]] && sleep 1
  done
  if ((rc != 0)); then
    FAILED[$name]="exit status $rc"
    note "$name failed twice (exit status $rc); dropped. Log tail:"
    tail -5 "$LOG" | sed 's/^/    /' >&2
    return 1
  fi
  $record && printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/$name"
  $record && $PHASES && [[ $name == sbx-run-* ]] && log_steps "$name" "$t0" "$t1"
  return 0
}

# --phases: the steps of one `sbx run`, from the sandbox's own log (the
# monitor stamps each lifecycle event to the millisecond), bracketed by the
# CLI's start and exit.  Each new sandbox is found by its id not being seen
# before; each step is the time from the previous event to this one.
declare -A SEEN=()
mark_seen () { local id; for id in $("$SBX" ls -q 2>/dev/null); do SEEN[$id]=1; done; }
log_steps ()  # CASE T0_US T1_US
{
  local name=$1 id day=86400000000
  for id in $("$SBX" ls -q 2>>"$LOG"); do
    [[ -n ${SEEN[$id]:-} ]] && continue
    SEEN[$id]=1
    "$SBX" logs "$id" 2>>"$LOG" | awk -v t0="$(($2 % day))" -v t1="$(($3 % day))" -v day="$day" '
      function tod(ts) {  # 2026-11-29T10:25:53.899Z -> microseconds of the day, UTC
        return ((substr(ts, 12, 2) * 60 + substr(ts, 15, 2)) * 60 + substr(ts, 18, 6)) * 1000000 }
      BEGIN { prev = t0 }
      $1 ~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9:.]+Z$/ {
        t = tod($1); if (t < prev - day / 2) t += day
        ev = $0; sub(/^[^ ]+ /, "", ev); sub(/^sbx: /, "", ev)
        gsub(/sb-[0-9a-f]+/, "ID", ev); gsub(/[0-9]+/, "N", ev); gsub(/\t/, " ", ev)
        printf "-> %s\t%.0f\n", ev, t - prev; prev = t }
      END { t = t1; if (t < prev - day / 2) t += day; printf "-> CLI exit\t%.0f\n", t - prev }
    ' >>"$WORK/steps-$name"
  done
}

# Long-running targets for the exec cases.
start_targets ()
{
  local id
  if id=$("$SBX" create --image "$IMAGE" --runtime runc --block-network --timeout 1800 2>>"$LOG"); then
    SB_RUNC=$id; SBX_IDS+=("$id")
  else
    FAILED[sbx-exec-runc]="sbx create failed"
  fi
  runc --root "$RUNC_ROOT" run -d --bundle "$WORK/bundle-sleep" "$TAG-rx" </dev/null >>"$LOG" 2>&1 \
    || FAILED[runc-exec]="runc run -d failed"
  if $HAVE_RUNSC; then
    if id=$("$SBX" create --image "$IMAGE" --block-network --timeout 1800 2>>"$LOG"); then
      SB_RUNSC=$id; SBX_IDS+=("$id")
    else
      FAILED[sbx-exec-runsc]="sbx create failed"
    fi
    runsc --root "$RUNSC_ROOT" --network=none run -detach --bundle "$WORK/bundle-sleep" "$TAG-sx" \
      </dev/null >>"$LOG" 2>&1 || FAILED[runsc-exec]="runsc run -detach failed"
  fi
  if $HAVE_PODMAN; then
    PODMAN_ID=$("${PODMAN[@]}" run -d "${PODMAN_RUN_OPTS[@]}" /bin/sleep 1000 2>>"$LOG") \
      || FAILED[podman-exec]="podman run -d failed"
  fi
  for id in "${!FAILED[@]}"; do note "$id: ${FAILED[$id]}; dropped"; done
}

# ---------------------------------------------------------------- run
BENCH_T0=$SECONDS
note "work dir $WORK; $N iterations of ${#CASES[@]} cases"
start_targets
for c in "${CASES[@]}"; do run_case "$c" 0 false; done   # warm-up, untimed
$PHASES && mark_seen
# Each round in a new random order: no case always runs right after the
# same neighbour (podman's exec leaves its cleanup running behind it, and
# whatever came next paid for it).
for ((i = 1; i <= N; i++)); do
  mapfile -t ORDER < <(shuf -e -- "${CASES[@]}")
  for c in "${ORDER[@]}"; do run_case "$c" "$i" true; done
done

# Phases: the CLI calls that sbx run does in one process, one by one.
PHASE_CASES=()
t0='' t1='' t2='' t3='' t4=''
if $PHASES; then
  for rt in runc runsc; do
    [[ $rt == runsc ]] && ! $HAVE_RUNSC && continue
    PHASE_CASES+=("phase-$rt-create" "phase-$rt-exec" "phase-$rt-terminate" "phase-$rt-rm")
    for ((i = 0; i <= N; i++)); do
      stamp t0
      id=$("$SBX" create --image "$IMAGE" --runtime "$rt" --block-network 2>>"$LOG") || { note "phase create failed"; break; }
      stamp t1; SBX_IDS+=("$id")
      "$SBX" exec "$id" -- /bin/true >>"$LOG" 2>&1; stamp t2
      "$SBX" terminate "$id" >>"$LOG" 2>&1; stamp t3
      "$SBX" rm "$id" >>"$LOG" 2>&1; stamp t4
      if ((i > 0)); then
        printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/phase-$rt-create"
        printf '%s\n' "$((t2 - t1))" >>"$SAMPLES/phase-$rt-exec"
        printf '%s\n' "$((t3 - t2))" >>"$SAMPLES/phase-$rt-terminate"
        printf '%s\n' "$((t4 - t3))" >>"$SAMPLES/phase-$rt-rm"
      fi
    done
  done
fi

# Streams: sbx exec ID -- cat /dev/zero | head -c SIZE.  A first, small run
# checks that the bytes arrive; sbx then dies of SIGPIPE (or reports EPIPE):
# an exit status of 0 means the stream ended early and the run is void.
STREAMS=()
declare -A STREAM_SZ=() STREAM_NOTE=()
stream_case ()  # NAME ID BYTES
{
  local name=$1 id=$2 bytes=$3 got k t0 t1 st
  STREAMS+=("$name"); STREAM_SZ[$name]=$bytes
  [[ -z $id ]] && { STREAM_NOTE[$name]="no sandbox"; return; }
  got=$("$SBX" exec "$id" -- cat /dev/zero 2>>"$LOG" | head -c 16777216 | wc -c)
  if [[ $got != 16777216 ]]; then
    STREAM_NOTE[$name]="check run got $got of 16777216 bytes"
    note "$name: ${STREAM_NOTE[$name]}"
    return
  fi
  for ((k = 1; k <= STREAM_RUNS; k++)); do
    stamp t0
    "$SBX" exec "$id" -- cat /dev/zero 2>>"$LOG" | head -c "$bytes" >/dev/null
    st=("${PIPESTATUS[@]}")
    stamp t1
    if ((st[0] == 0 || st[1] != 0)); then
      STREAM_NOTE[$name]="run $k: sbx exit ${st[0]}, head exit ${st[1]}"
      note "$name: ${STREAM_NOTE[$name]}"
      return
    fi
    printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/$name"
  done
}
if ((STREAM_RUNS > 0)); then
  stream_case stream-runc "${SB_RUNC:-}" "$STREAM_BYTES"
  $HAVE_RUNSC && stream_case stream-runsc "${SB_RUNSC:-}" "$RUNSC_STREAM_BYTES"
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
declare -A MED=() RUNS=() MIN=() MAX=()
for c in "${CASES[@]}" "${PHASE_CASES[@]}" "${STREAMS[@]}"; do
  read -r "RUNS[$c]" "MED[$c]" "MIN[$c]" "MAX[$c]" <<<"$(stats "$c")"
done

ms () { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }

# Steps of sbx run (--phases): "median_us<TAB>runs<TAB>step" in event order.
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
for c in sbx-run-runc sbx-run-runsc; do
  STEPS[$c]=$(step_stats "$c")
  [[ -n ${STEPS[$c]} ]] && STEP_CASES+=("$c")
done

# name numerator denominator op target
RATIOS=(
  "sbx-run-runc/runc-run sbx-run-runc runc-run <= 1.5"
  "sbx-run-runsc/runsc-run sbx-run-runsc runsc-run <= 1.2"
  "sbx-run-runc/runc-run-sbxspec sbx-run-runc runc-run-sbxspec <= 1.5"
  "sbx-run-runsc/runsc-run-sbxspec sbx-run-runsc runsc-run-sbxspec <= 1.2"
  "sbx-run-runc/podman-run sbx-run-runc podman-run < 1.0"
  "sbx-run-runsc/podman-run sbx-run-runsc podman-run < 1.0"
  "sbx-exec-runc/runc-exec sbx-exec-runc runc-exec <= 0.15"
  "sbx-exec-runsc/runsc-exec sbx-exec-runsc runsc-exec <= 0.3"
  "sbx-exec-runc/podman-exec sbx-exec-runc podman-exec < 1.0"
)
# --exec-only: only the exec ratios that ran.
$EXEC_ONLY && RATIOS=("${RATIOS[@]:6:2}")
# The value judged is the median of the per-round ratios (paired_ratio,
# lib.sh: both cases ran in the same round, in a random order); the ratio
# of the two medians is shown beside it.
declare -A RVAL=() RMET=() RMED=()
for r in "${RATIOS[@]}"; do
  read -r rn num den op tgt <<<"$r"
  if [[ -n ${MED[$num]:-} && -n ${MED[$den]:-} && ${MED[$den]} != 0 ]]; then
    RMED[$rn]=$(awk -v a="${MED[$num]}" -v b="${MED[$den]}" 'BEGIN { printf "%.2f", a / b }')
    RVAL[$rn]=$(paired_ratio "$num" "$den")
    [[ -n ${RVAL[$rn]} ]] || RVAL[$rn]=${RMED[$rn]}
    RMET[$rn]=$(awk -v v="${RVAL[$rn]}" -v t="$tgt" -v op="$op" \
      'BEGIN { ok = (op == "<=") ? (v <= t) : (v < t); print ok ? "met" : "MISSED" }')
  fi
done
declare -A MBS=()
for s in "${STREAMS[@]}"; do
  [[ -n ${MED[$s]:-} ]] && MBS[$s]=$(awk -v b="${STREAM_SZ[$s]}" -v u="${MED[$s]}" 'BEGIN { printf "%.0f", b / u }')
done

table ()
{
  printf '\nsbx lifecycle benchmark: %s iterations per case, %ss in all\n' "$N" "$ELAPSED"
  printf 'host: %s, %s CPUs; %s; runc %s; runsc %s; podman %s; bwrap %s\n' \
    "$(uname -r)" "$(nproc)" "$("$SBX" version 2>/dev/null | head -1)" \
    "$(runc --version 2>/dev/null | awk 'NR==1{print $3}')" \
    "$(runsc --version 2>/dev/null | awk 'NR==1{print $3}')" \
    "$(podman --version 2>/dev/null | awk '{print $3}')" \
    "$(bwrap --version 2>/dev/null | awk '{print $2}')"
  printf '\n%-22s %5s %10s %9s %9s\n' case runs "median ms" "min ms" "max ms"
  for c in "${CASES[@]}" "${PHASE_CASES[@]}"; do
    if [[ -n ${MED[$c]:-} ]]; then
      printf '%-22s %5s %10s %9s %9s\n' "$c" "${RUNS[$c]}" "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")"
    else
      printf '%-22s %5s %10s   (%s)\n' "$c" 0 - "${FAILED[$c]:-no samples}"
    fi
  done
  local c m r l sum
  for c in "${STEP_CASES[@]}"; do
    printf '\nsteps of %s, from the sandbox log (median ms; a step ends at the event named):\n' "$c"
    sum=0
    while IFS=$'\t' read -r m r l; do
      printf '  %-52s %8s  (%s runs)\n' "$l" "$(ms "$m")" "$r"
      sum=$((sum + m))
    done <<<"${STEPS[$c]}"
    printf '  %-52s %8s  (the case median: %s)\n' "sum of the step medians" "$(ms "$sum")" "$(ms "${MED[$c]:-0}")"
  done
  printf '\n%-32s %7s %8s %9s  %s\n' ratio value medians target result
  for r in "${RATIOS[@]}"; do
    read -r rn num den op tgt <<<"$r"
    printf '%-32s %7s %8s %9s  %s\n' "$rn" "${RVAL[$rn]:--}" "${RMED[$rn]:--}" "$op $tgt" "${RMET[$rn]:-n/a}"
  done
  printf '(value: the median of the per-round ratios; medians: the ratio of the two medians)\n'
  if ((${#STREAMS[@]})); then
    printf '\n%-22s %8s %5s %10s %8s  %s\n' stream bytes runs "median ms" "MB/s" "target"
    for s in "${STREAMS[@]}"; do
      local tgt="-" res=""
      [[ $s == stream-runc ]] && tgt=">= 500"
      if [[ -n ${MBS[$s]:-} && $tgt != - ]]; then
        ((MBS[$s] >= 500)) && res=met || res=MISSED
      fi
      [[ -n ${STREAM_NOTE[$s]:-} ]] && res="${STREAM_NOTE[$s]}"
      printf '%-22s %8s %5s %10s %8s  %s %s\n' "$s" "$( [[ $s == stream-runc ]] && echo "$STREAM_SIZE" || echo "$RUNSC_STREAM_SIZE")" \
        "${RUNS[$s]:-0}" "$( [[ -n ${MED[$s]:-} ]] && ms "${MED[$s]}" || echo -)" "${MBS[$s]:--}" "$tgt" "$res"
    done
    printf '(MB = 10^6 bytes; runsc streams %s rather than %s to keep the run short)\n' "$RUNSC_STREAM_SIZE" "$STREAM_SIZE"
  fi
}

json_str () { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
# shellcheck disable=SC2015  # echo does not fail
json ()
{
  local sep c r s
  printf '{\n  "iterations": %s,\n  "elapsed_s": %s,\n  "cases": {' "$N" "$ELAPSED"
  sep=
  for c in "${CASES[@]}" "${PHASE_CASES[@]}"; do
    printf '%s\n    %s: ' "$sep" "$(json_str "$c")"; sep=,
    if [[ -n ${MED[$c]:-} ]]; then
      printf '{"runs": %s, "median_ms": %s, "min_ms": %s, "max_ms": %s}' "${RUNS[$c]}" \
        "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")"
    else
      printf '{"runs": 0, "error": %s}' "$(json_str "${FAILED[$c]:-no samples}")"
    fi
  done
  printf '\n  },\n  "steps": {'
  sep=
  local m r l sep2
  for c in "${STEP_CASES[@]}"; do
    printf '%s\n    %s: [' "$sep" "$(json_str "$c")"; sep=,
    sep2=
    while IFS=$'\t' read -r m r l; do
      printf '%s\n      {"step": %s, "median_ms": %s, "runs": %s}' "$sep2" "$(json_str "$l")" "$(ms "$m")" "$r"
      sep2=,
    done <<<"${STEPS[$c]}"
    printf '\n    ]'
  done
  printf '\n  },\n  "ratios": {'
  sep=
  for r in "${RATIOS[@]}"; do
    read -r rn num den op tgt <<<"$r"
    printf '%s\n    %s: {"value": %s, "ratio_of_medians": %s, "target": %s, "met": %s}' "$sep" "$(json_str "$rn")" \
      "${RVAL[$rn]:-null}" "${RMED[$rn]:-null}" "$(json_str "$op $tgt")" \
      "$( [[ -z ${RMET[$rn]:-} ]] && echo null || { [[ ${RMET[$rn]} == met ]] && echo true || echo false; })"
    sep=,
  done
  printf '\n  },\n  "streams": {'
  sep=
  for s in "${STREAMS[@]}"; do
    printf '%s\n    %s: {"bytes": %s, "runs": %s, "median_ms": %s, "mb_per_s": %s' "$sep" "$(json_str "$s")" \
      "${STREAM_SZ[$s]}" "${RUNS[$s]:-0}" "$( [[ -n ${MED[$s]:-} ]] && ms "${MED[$s]}" || echo null)" "${MBS[$s]:-null}"
    [[ $s == stream-runc ]] && printf ', "target_mb_per_s": 500, "met": %s' \
      "$( [[ -z ${MBS[$s]:-} ]] && echo null || { ((MBS[$s] >= 500)) && echo true || echo false; })"
    [[ -n ${STREAM_NOTE[$s]:-} ]] && printf ', "error": %s' "$(json_str "${STREAM_NOTE[$s]}")"
    printf '}'
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

# A benchmark, not a test: missed targets do not fail it; a case that could
# not run does.
((${#FAILED[@]} == 0))
