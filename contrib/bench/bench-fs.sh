#!/usr/bin/env bash
# bench-fs.sh: sbx's file API (`sbx fs`), side by side with plain cp on the
# same filesystem: upload and download of a large file, and one `ls` page of
# a 10,000-entry directory, under runsc and runc.
#
# Run as root.  See contrib/bench/README.md.  Only bash, coreutils and awk are
# needed besides sbx (no python, no compiler).

set -uo pipefail

SBX=${SBX:-sbx}
SIZE=1G
RUNS=3
N=20
ENTRIES=10000
LIMIT=200
RUNTIME=both
JSON=false
KEEP=false

usage ()
{
  cat <<EOF
Usage: ${0##*/} [--size SIZE] [-k K] [-n N] [--entries E] [--limit L]
       [--runtime runsc|runc|both] [--json] [--keep] [-h]

Measures, in one run, with the sandboxes' files (SBX_ROOT) and the host files
in one work directory on one filesystem:
  upload-RT     sbx fs ID upload FILE /tmp/big     (a SIZE file of random bytes)
  download-RT   sbx fs ID download /tmp/big OUT
  cp            cp FILE OUT2
K timed runs each, round-robin, after one untimed warm-up round; page cache
is left warm (nothing is dropped).  Before each timed copy, untimed: \`sync\`
(no run pays for another's writeback), then the removal of that case's
previous output, so that every copy reuses freshly freed page cache.
Target: each sbx throughput >= 0.8 x cp's.  Then N runs each of
  ls-RT         sbx fs ID ls /d --limit L          (one page; /d holds E files)
  host-ls-f     ls -f DIR      (a host directory of E empty files; reference)
  host-ls       ls DIR         (reference)
timing the whole command.  Target: sbx fs ls median < 20 ms.
RT is each runtime picked with --runtime (default: both, where available).

Options:
  --size SIZE        file size (default $SIZE; K/M/G = 1024^n)
  -k, --runs K       timed transfer runs per case (default $RUNS)
  -n N               timed ls runs per case (default $N)
  --entries E        files in the listed directory (default $ENTRIES)
  --limit L          ls page size (default $LIMIT, sbx's own default)
  --runtime RT       runsc, runc or both (default both, as \`sbx info\` offers)
  --json             JSON on stdout (the table then goes to stderr)
  --keep             keep the work directory instead of removing it
  -h, --help         show this help

Environment: SBX (sbx binary, default "sbx"), SBX_INIT (passed through to
sbx), TMPDIR (where the work directory goes; default /var/tmp, a disk).
EOF
}

die () { printf 'bench-fs: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-fs: %s\n' "$*" >&2; }

posint () { [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 wants a positive integer"; }
while (($#)); do
  case $1 in
    --size) SIZE=${2:-}; shift 2 || die "--size wants a value" ;;
    -k|--runs) posint "$1" "${2:-}"; RUNS=$2; shift 2 ;;
    -n) posint -n "${2:-}"; N=$2; shift 2 ;;
    -n[0-9]*) N=${1#-n}; posint -n "$N"; shift ;;
    --entries) posint "$1" "${2:-}"; ENTRIES=$2; shift 2 ;;
    --limit) posint "$1" "${2:-}"; LIMIT=$2; shift 2 ;;
    --runtime) RUNTIME=${2:-}; shift 2 || die "--runtime wants a value" ;;
    --json) JSON=true; shift ;;
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
  ((n > 0)) || die "bad size '$s'"
  printf '%s' "$n"
}
BYTES=$(size_bytes "$SIZE") || exit 2   # (die only ends the command substitution)
((LIMIT <= 10000)) || die "--limit: sbx takes 1..10000"

((EUID == 0)) || die "run me as root"
command -v "$SBX" >/dev/null || die "sbx not found (set SBX=/path/to/sbx)"
SBX=$(command -v "$SBX")
for t in awk sort cp cmp head df sync; do
  command -v $t >/dev/null || die "$t is needed"
done

# Which runtimes: what sbx itself says it can use.
INFO=$("$SBX" --json info 2>/dev/null) || die "sbx --json info failed"
rt_available ()
{
  awk -v rt="\"$1\"" '$1 == rt ":" { f = 1 } f && /"available"/ { print ($0 ~ /true/) ? "yes" : "no"; exit }' <<<"$INFO"
}
RTS=()
case $RUNTIME in
  both) for rt in runsc runc; do
          if [[ $(rt_available "$rt") == yes ]]; then RTS+=("$rt"); else note "$rt not available (sbx info): skipped"; fi
        done ;;
  runsc|runc) [[ $(rt_available "$RUNTIME") == yes ]] || die "$RUNTIME is not available (sbx --json info)"
              RTS=("$RUNTIME") ;;
  *) die "--runtime wants runsc, runc or both" ;;
esac
((${#RTS[@]})) || die "no runtime available (sbx --json info)"

# stamp, timed, umount_under, ours, others_using and the leaked_* checks.
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 2

# ---------------------------------------------------------------- cleanup
unset SBX_ROOT SBX_RUN_ROOT   # set again below, to throwaway dirs
WORK=
RUN_DIR=
CLEANED=false
declare -A SB=()   # runtime -> sandbox id


cleanup ()
{
  $CLEANED && return
  CLEANED=true
  trap '' INT TERM HUP
  local id
  if [[ -n $WORK ]]; then
    # Only ever the throwaway store: never a SBX_ROOT from the caller.
    if [[ ${SBX_ROOT:-} == "$WORK/sbx-root" && -d $SBX_ROOT ]]; then
      for id in "${SB[@]}" $("$SBX" ls -q 2>/dev/null); do
        "$SBX" terminate --rm "$id" >/dev/null 2>&1 || "$SBX" rm -f "$id" >/dev/null 2>&1
      done
      "$SBX" gc >/dev/null 2>&1
      [[ -n $("$SBX" ls -q 2>/dev/null) ]] && note "sbx still lists sandboxes after gc: $("$SBX" ls -q | tr '\n' ' ')"
    fi
    umount_under "$WORK"
    if $KEEP; then
      note "kept $WORK"
    else
      rm -rf --one-file-system "$WORK"
    fi
  fi
  if [[ -n $RUN_DIR ]]; then
    umount_under "$RUN_DIR"
    rm -rf --one-file-system "$RUN_DIR"
  fi
  check_leaks
}

# Says what cleanup missed: processes outside this script's own tree whose
# command line or environment names the work dirs (sbx monitors carry
# SBX_ROOT), mounts left under them.
check_leaks () { [[ -z $WORK ]] || leak_report "" "$WORK" "$RUN_DIR"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- setup
# On a disk, not a tmpfs: /var/tmp unless TMPDIR says otherwise.  The sbx
# store lives inside it, so sandbox files and host files share a filesystem.
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sbx-bench-fs.XXXXXX") || die "mktemp failed"
# The runtime directory is a tmpfs in real use (/run/sbx): keep that.
RUN_DIR=$(mktemp -d /run/sbx-bench-fs.XXXXXX 2>/dev/null) || RUN_DIR=$(mktemp -d "${TMPDIR:-/var/tmp}/sbx-bench-fs-run.XXXXXX")
export SBX_ROOT=$WORK/sbx-root SBX_RUN_ROOT=$RUN_DIR
LOG=$WORK/log
SAMPLES=$WORK/samples
mkdir -p "$SBX_ROOT" "$SAMPLES"
: >"$LOG"
FS_DESC=$(df --output=fstype,source "$WORK" 2>/dev/null | awk 'NR == 2 { print $1 " (" $2 ")" }')

# Space: the source file, a copy in each sandbox and two outputs, plus slack.
AVAIL=$(df --output=avail -B1 "$WORK" | awk 'NR == 2 { print $1 }')
NEED=$(((3 + ${#RTS[@]}) * BYTES + (256 << 20)))
((AVAIL >= NEED)) || die "$WORK has $((AVAIL >> 20)) MiB free; --size $SIZE needs about $((NEED >> 20)) MiB"

BENCH_T0=$SECONDS
declare -A FAILED=()

# The big file: one random chunk (at most 64 MiB, from /dev/urandom) repeated
# up to SIZE; random enough that no layer can compress or dedupe it cheaply.
BIG=$WORK/big
OUT=$WORK/out-sbx
OUT2=$WORK/out-cp
CHUNK=$((BYTES < (64 << 20) ? BYTES : (64 << 20)))
note "work dir $WORK ($FS_DESC); making a $SIZE file"
head -c "$CHUNK" /dev/urandom >"$WORK/chunk" || die "reading /dev/urandom failed"
for ((i = 0; i * CHUNK < BYTES; i++)); do cat "$WORK/chunk"; done | head -c "$BYTES" >"$BIG"
rm -f "$WORK/chunk"
[[ $(stat -c %s "$BIG") == "$BYTES" ]] || die "could not make $BIG"

for rt in "${RTS[@]}"; do
  if id=$("$SBX" create --runtime "$rt" --timeout 3600 2>>"$LOG"); then
    SB[$rt]=$id
  else
    note "sbx create --runtime $rt failed:"; tail -3 "$LOG" | sed 's/^/    /' >&2
    FAILED[upload-$rt]="sbx create failed"; FAILED[download-$rt]="sbx create failed"; FAILED[ls-$rt]="sbx create failed"
  fi
done

# ---------------------------------------------------------------- transfers
# One timed command, its stdout and stderr to the log; the elapsed us go to
# SAMPLES/NAME when RECORD.  A failure drops the case from the rest of the run.
XFER_CASES=(cp)
for rt in "${RTS[@]}"; do XFER_CASES+=("upload-$rt" "download-$rt"); done

# Every timed copy starts the same way: `sync` (no writeback left over from
# an earlier copy), then its own previous output is removed, then it runs at
# once.  The removal matters on a VM: memory left free for a second or two
# goes back to the hypervisor (virtio-balloon free page reporting), and a
# copy that has to fault it back in runs ~3x slower than one that reuses the
# page cache just freed (measured here: cp of 1 GiB 0.5 s against 1.3-2.3 s).
# So outputs stay until the same case's next run (the warm-up leaves them).
fresh ()  # CMD...: sync, then run CMD (the removal of the previous output)
{
  sync
  "$@" >/dev/null 2>&1
  return 0
}

xfer_round ()  # RECORD
{
  local record=$1 rt id
  for rt in "${RTS[@]}"; do
    id=${SB[$rt]:-}
    [[ -n $id ]] || continue
    fresh "$SBX" fs "$id" rm /tmp/big
    timed "upload-$rt" "$record" "$SBX" fs "$id" upload "$BIG" /tmp/big || continue
    fresh rm -f "$OUT"
    if timed "download-$rt" "$record" "$SBX" fs "$id" download /tmp/big "$OUT" && ! $record; then
      # The warm-up round checks the bytes: host -> sandbox -> host.
      cmp -s "$BIG" "$OUT" || { FAILED[download-$rt]="downloaded file differs from the uploaded one"
                                note "$rt: ${FAILED[download-$rt]}"; }
    fi
  done
  fresh rm -f "$OUT2"
  timed cp "$record" cp "$BIG" "$OUT2"
}

note "transfers: $SIZE, 1 warm-up + $RUNS timed rounds of ${XFER_CASES[*]}"
xfer_round false
for ((i = 1; i <= RUNS; i++)); do xfer_round true; done
for rt in "${RTS[@]}"; do [[ -n ${SB[$rt]:-} ]] && "$SBX" fs "${SB[$rt]}" rm /tmp/big >/dev/null 2>&1; done
rm -f "$OUT" "$OUT2"

# ---------------------------------------------------------------- ls
LS_CASES=()
for rt in "${RTS[@]}"; do LS_CASES+=("ls-$rt"); done
LS_CASES+=(host-ls-f host-ls)

# The directory inside each sandbox, made by the sandbox's own shell (one
# exec; the loop is all shell builtins), checked by count.
for rt in "${RTS[@]}"; do
  id=${SB[$rt]:-}
  [[ -n $id ]] || continue
  t0=$SECONDS
  if ! "$SBX" fs "$id" mkdir /d >>"$LOG" 2>&1 ||
     ! "$SBX" exec "$id" -- sh -c "cd /d && i=0 && while [ \$i -lt $ENTRIES ]; do : >f\$i; i=\$((i + 1)); done" \
       </dev/null >>"$LOG" 2>&1; then
    FAILED[ls-$rt]="making /d failed"; note "$rt: ${FAILED[ls-$rt]}"; continue
  fi
  got=$("$SBX" exec "$id" -- sh -c 'ls -A /d | grep -c "^f"' </dev/null 2>>"$LOG")
  if [[ $got != "$ENTRIES" ]]; then
    FAILED[ls-$rt]="/d holds ${got:-?} files, not $ENTRIES"; note "$rt: ${FAILED[ls-$rt]}"; continue
  fi
  note "$rt: /d with $ENTRIES files made in $((SECONDS - t0))s"
  # One page: LIMIT lines, and the cursor to the next page on stderr.
  lines=$("$SBX" fs "$id" ls /d --limit "$LIMIT" 2>"$WORK/ls-err" | wc -l)
  want=$((LIMIT < ENTRIES ? LIMIT : ENTRIES))
  if [[ $lines != "$want" ]]; then
    FAILED[ls-$rt]="one page printed $lines lines, not $want"; note "$rt: ${FAILED[ls-$rt]}"
  elif ((LIMIT < ENTRIES)) && ! grep -q -- '--cursor ' "$WORK/ls-err"; then
    note "$rt: ls printed no cursor to the next page: $(head -c 200 "$WORK/ls-err")"
  fi
done

HOSTDIR=$WORK/hostdir
mkdir -p "$HOSTDIR"
for ((i = 0; i < ENTRIES; i++)); do : >"$HOSTDIR/f$i"; done

ls_one ()  # NAME RECORD
{
  local name=$1 record=$2 t0 t1 rc
  [[ -n ${FAILED[$name]:-} ]] && return 1
  stamp t0
  case $name in
    ls-*) "$SBX" fs "${SB[${name#ls-}]}" ls /d --limit "$LIMIT" >/dev/null 2>>"$WORK/ls-err" ;;
    host-ls-f) ls -f "$HOSTDIR" >/dev/null 2>>"$LOG" ;;
    host-ls) ls "$HOSTDIR" >/dev/null 2>>"$LOG" ;;
  esac
  rc=$?
  stamp t1
  if ((rc != 0)); then
    FAILED[$name]="exit status $rc"; note "$name failed (exit status $rc); dropped"
    return 1
  fi
  $record && printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/$name"
  return 0
}
note "ls: 1 warm-up + $N timed rounds of ${LS_CASES[*]}"
for c in "${LS_CASES[@]}"; do ls_one "$c" false; done
for ((i = 1; i <= N; i++)); do
  for c in "${LS_CASES[@]}"; do ls_one "$c" true; done
done
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
for c in "${XFER_CASES[@]}" "${LS_CASES[@]}"; do
  read -r "NRUNS[$c]" "MED[$c]" "MIN[$c]" "MAX[$c]" <<<"$(stats "$c")"
done

ms () { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }
mbs () { awk -v b="$BYTES" -v u="$1" 'BEGIN { printf "%.0f", b / u }'; }   # MB/s, MB = 10^6 bytes

# Throughput ratios sbx/cp (= cp's time / sbx's time), target >= 0.8.
declare -A RVAL=() RMET=()
for rt in "${RTS[@]}"; do
  for v in upload download; do
    c=$v-$rt
    if [[ -n ${MED[$c]:-} && -n ${MED[cp]:-} ]]; then
      RVAL[$c]=$(awk -v a="${MED[cp]}" -v b="${MED[$c]}" 'BEGIN { printf "%.2f", a / b }')
      RMET[$c]=$(awk -v v="${RVAL[$c]}" 'BEGIN { print (v >= 0.8) ? "met" : "MISSED" }')
    fi
  done
done
declare -A LMET=()
for rt in "${RTS[@]}"; do
  [[ -n ${MED[ls-$rt]:-} ]] && LMET[ls-$rt]=$( ((MED[ls-$rt] < 20000)) && echo met || echo MISSED)
done

table ()
{
  local c rt v
  printf '\nsbx fs benchmark: %s file, %s timed runs per transfer; %s-entry directory, %s timed ls runs; %ss in all\n' \
    "$SIZE" "$RUNS" "$ENTRIES" "$N" "$ELAPSED"
  printf 'host: %s, %s CPUs; %s; runc %s; runsc %s; work dir on %s\n' \
    "$(uname -r)" "$(nproc)" "$("$SBX" version 2>/dev/null | head -1)" \
    "$(runc --version 2>/dev/null | awk 'NR==1{print $3}')" \
    "$(runsc --version 2>/dev/null | awk 'NR==1{print $3}')" "$FS_DESC"
  printf '\n%-18s %4s %10s %8s %9s %9s  %s\n' transfer runs "median ms" "MB/s" "min ms" "max ms" command
  for c in "${XFER_CASES[@]}"; do
    case $c in
      cp) v="cp FILE OUT" ;;
      upload-*) v="sbx fs ID upload FILE /tmp/big" ;;
      download-*) v="sbx fs ID download /tmp/big OUT" ;;
    esac
    if [[ -n ${MED[$c]:-} ]]; then
      printf '%-18s %4s %10s %8s %9s %9s  %s\n' "$c" "${NRUNS[$c]}" "$(ms "${MED[$c]}")" "$(mbs "${MED[$c]}")" \
        "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")" "$v"
    else
      printf '%-18s %4s %10s   (%s)\n' "$c" 0 - "${FAILED[$c]:-no samples}"
    fi
  done
  printf '(MB = 10^6 bytes; MB/s from the median)\n'
  printf '\n%-28s %7s %9s  %s\n' "throughput ratio" value target result
  for rt in "${RTS[@]}"; do
    for v in upload download; do
      printf '%-28s %7s %9s  %s\n' "$v-$rt/cp" "${RVAL[$v-$rt]:--}" ">= 0.8" "${RMET[$v-$rt]:-n/a}"
    done
  done
  printf '\n%-18s %4s %10s %9s %9s %9s  %s\n' ls runs "median ms" "min ms" "max ms" target result
  for c in "${LS_CASES[@]}"; do
    if [[ -n ${MED[$c]:-} ]]; then
      printf '%-18s %4s %10s %9s %9s %9s' "$c" "${NRUNS[$c]}" "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" \
        "$(ms "${MAX[$c]}")" "$( [[ $c == ls-* ]] && echo '< 20' || echo -)"
      [[ -n ${LMET[$c]:-} ]] && printf '  %s' "${LMET[$c]}"
      printf '\n'
    else
      printf '%-18s %4s %10s   (%s)\n' "$c" 0 - "${FAILED[$c]:-no samples}"
    fi
  done
  printf '(ls-RT: sbx fs ID ls /d --limit %s, one page of %s entries; host-ls-f / host-ls: ls -f DIR / ls DIR\n' "$LIMIT" "$ENTRIES"
  printf ' of all %s entries of a host directory, to /dev/null; the whole command is timed)\n' "$ENTRIES"
}

json_str () { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
json_case ()  # NAME [with MB/s]
{
  local c=$1
  if [[ -n ${MED[$c]:-} ]]; then
    printf '{"runs": %s, "median_ms": %s, "min_ms": %s, "max_ms": %s' "${NRUNS[$c]}" \
      "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")"
    [[ ${2:-} == mbs ]] && printf ', "mb_per_s": %s' "$(mbs "${MED[$c]}")"
    printf '}'
  else
    printf '{"runs": 0, "error": %s}' "$(json_str "${FAILED[$c]:-no samples}")"
  fi
}
# shellcheck disable=SC2015  # echo does not fail
json ()
{
  local sep c rt v
  printf '{\n  "size_bytes": %s,\n  "transfer_runs": %s,\n  "entries": %s,\n  "limit": %s,\n  "ls_runs": %s,\n' \
    "$BYTES" "$RUNS" "$ENTRIES" "$LIMIT" "$N"
  printf '  "elapsed_s": %s,\n  "runtimes": [' "$ELAPSED"
  sep=
  for rt in "${RTS[@]}"; do printf '%s%s' "$sep" "$(json_str "$rt")"; sep=", "; done
  printf '],\n  "transfers": {'
  sep=
  for c in "${XFER_CASES[@]}"; do
    printf '%s\n    %s: ' "$sep" "$(json_str "$c")"; sep=,
    json_case "$c" mbs
  done
  printf '\n  },\n  "ratios": {'
  sep=
  for rt in "${RTS[@]}"; do
    for v in upload download; do
      c=$v-$rt
      printf '%s\n    %s: {"value": %s, "target": ">= 0.8", "met": %s}' "$sep" "$(json_str "$c/cp")" "${RVAL[$c]:-null}" \
        "$( [[ -z ${RMET[$c]:-} ]] && echo null || { [[ ${RMET[$c]} == met ]] && echo true || echo false; })"
      sep=,
    done
  done
  printf '\n  },\n  "ls": {'
  sep=
  for c in "${LS_CASES[@]}"; do
    printf '%s\n    %s: ' "$sep" "$(json_str "$c")"; sep=,
    if [[ $c == ls-* && -n ${LMET[$c]:-} ]]; then
      json_case "$c" | sed 's/}$//'
      printf ', "target_ms": "< 20", "met": %s}' "$( [[ ${LMET[$c]} == met ]] && echo true || echo false)"
    else
      json_case "$c"
    fi
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
