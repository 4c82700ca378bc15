#!/bin/bash
# contrib/bench/bench-sdk.sh: the Python SDK (contrib/python) against the CLI
# it drives, side by side in one run, on the targets of issue 19:
#   exec-RT     sb.exec("/bin/true").wait() vs `sbx exec ID -- /bin/true` from
#               a shell loop, runc and runsc: SDK/CLI <= 1.3
#   stream-RT   SIZE bytes through sb.exec(..., stream=True).stdout vs the
#               same `sbx exec` into a pipe: SDK/CLI throughput >= 0.8
#   import      `import sbx` in a fresh python3: < 50 ms
#
#   sudo SBX=./sbx SBX_INIT=$PWD/sbx-init contrib/bench/bench-sdk.sh [-n 30] [-k 3] [--size 200M] [--runtime runc|runsc|both] [--sdk DIR]
#
# Everything lives in a throwaway store; the sandboxes are ended and removed
# on every exit path, and what is left behind is reported as LEAK:.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

N=30 K=3 SIZE=200M RTS="runc runsc" SDK=$here/../python
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
while (($#)); do
  case $1 in
    -n) N=$2; shift 2 ;;
    -k) K=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --runtime) RTS=$2; [ "$RTS" = both ] && RTS="runc runsc"; shift 2 ;;
    --sdk) SDK=$2; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-sdk.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
SBX=${SBX:-sbx}
SBX=$(command -v "$SBX") || { echo "bench-sdk.sh: no sbx (set SBX=path/to/sbx)" >&2; exit 1; }
[ -d "$SDK/sbx" ] || { echo "bench-sdk.sh: no SDK at $SDK (--sdk DIR: the directory holding sbx/)" >&2; exit 1; }
bytes=$(numfmt --from=iec "$SIZE") || exit 2

note () { printf '%s\n' "$*" >&2; }
WORK=$(mktemp -d /var/tmp/sbx-bench-sdk.XXXXXX)
RUN=$(mktemp -d /run/sbx-bench-sdk.XXXXXX)
export SBX_ROOT=$WORK/root SBX_RUN_ROOT=$RUN PYTHONPATH=$SDK SBX_BIN=$SBX
LOG=$WORK/log
SAMPLES=$WORK/samples
mkdir -p "$SAMPLES"
TAG=sbx-$(printf '%s' "$(realpath -m "$SBX_ROOT")" | sha256sum | cut -c1-8)

cleanup () {
  trap '' INT TERM HUP
  local id
  for id in $("$SBX" ls -q 2>/dev/null); do "$SBX" terminate --rm "$id" >/dev/null 2>&1; done
  "$SBX" gc >/dev/null 2>&1
  leak_report "$TAG" "$WORK" "$RUN"
  umount_under "$WORK"
  rm -rf --one-file-system "$WORK" "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

median () { sort -g "$SAMPLES/$1" | awk '{ v[NR] = $1 } END { if (NR) printf "%.0f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The SDK's side, in one python3 per case (its import not timed): prints
# one sample a line.
sdk_exec () {  # ID N
  "$PY" - "$1" "$2" <<'PY'
import sys, time
import sbx
sb = sbx.Sandbox.connect(sys.argv[1])
sb.exec("/bin/true").wait()  # warm-up
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    sb.exec("/bin/true").wait()
    print(int((time.perf_counter() - t) * 1e6))
PY
}

sdk_stream () {  # ID BYTES: microseconds for BYTES through stream=True
  "$PY" - "$1" "$2" <<'PY'
import sys, time
import sbx
sb = sbx.Sandbox.connect(sys.argv[1])
n = int(sys.argv[2])
t = time.perf_counter()
p = sb.exec("head", "-c", str(n), "/dev/zero", stream=True)
p.stdin.close()
# Consumed as it comes, as the CLI's side is (into wc -c): read() would
# hold and copy all SIZE bytes, which is not streaming.
got = sum(len(c) for c in p.stdout.chunks())
assert p.wait() == 0 and got == n, (got, n)
print(int((time.perf_counter() - t) * 1e6))
PY
}

cli_stream () {  # ID BYTES
  local t0 t1 got
  stamp t0
  got=$("$SBX" exec "$1" -- head -c "$2" /dev/zero | wc -c)
  stamp t1
  [ "$got" = "$2" ] || { note "cli stream: got $got of $2 bytes"; return 1; }
  echo $((t1 - t0))
}

rows=()
row () { rows+=("$(printf '%-14s %12s %12s %8s  %s' "$@")"); }

for rt in $RTS; do
  id=$("$SBX" create --runtime "$rt" --block-network 2>>"$LOG") || { note "create --runtime $rt failed (log: $LOG)"; cat "$LOG" >&2; exit 1; }
  "$SBX" exec "$id" -- /bin/true >/dev/null 2>>"$LOG"
  note "exec-$rt: $N rounds each"
  : >"$SAMPLES/cli-exec-$rt"
  for ((i = 0; i < N; i++)); do
    stamp t0
    "$SBX" exec "$id" -- /bin/true
    stamp t1
    echo $((t1 - t0)) >>"$SAMPLES/cli-exec-$rt"
  done
  sdk_exec "$id" "$N" >"$SAMPLES/sdk-exec-$rt" 2>>"$LOG" || { note "sdk exec failed (log: $LOG)"; exit 1; }
  c=$(median "cli-exec-$rt") s=$(median "sdk-exec-$rt")
  r=$(awk -v a="$s" -v b="$c" 'BEGIN { printf "%.2f", a / b }')
  row "exec-$rt" "$((c / 1000)).$(((c % 1000) / 100)) ms" "$((s / 1000)).$(((s % 1000) / 100)) ms" "$r" \
    "$(awk -v r="$r" 'BEGIN { print (r <= 1.3) ? "met (<= 1.3)" : "MISSED (<= 1.3)" }')"

  note "stream-$rt: $SIZE, $K rounds each"
  : >"$SAMPLES/cli-stream-$rt"
  : >"$SAMPLES/sdk-stream-$rt"
  for ((i = 0; i < K; i++)); do
    cli_stream "$id" "$bytes" >>"$SAMPLES/cli-stream-$rt" || exit 1
    sdk_stream "$id" "$bytes" >>"$SAMPLES/sdk-stream-$rt" 2>>"$LOG" || { note "sdk stream failed (log: $LOG)"; exit 1; }
  done
  c=$(median "cli-stream-$rt") s=$(median "sdk-stream-$rt")
  cm=$(awk -v b="$bytes" -v t="$c" 'BEGIN { printf "%.0f", b / t }')  # bytes/us = MB/s
  sm=$(awk -v b="$bytes" -v t="$s" 'BEGIN { printf "%.0f", b / t }')
  r=$(awk -v a="$c" -v b="$s" 'BEGIN { printf "%.2f", a / b }')
  row "stream-$rt" "$cm MB/s" "$sm MB/s" "$r" \
    "$(awk -v r="$r" 'BEGIN { print (r >= 0.8) ? "met (>= 0.8)" : "MISSED (>= 0.8)" }')"
  "$SBX" terminate --rm "$id" >/dev/null 2>>"$LOG"
done

note "import: $N fresh python3 processes"
for ((i = 0; i < N; i++)); do
  "$PY" -c 'import time; t = time.perf_counter(); import sbx; print(int((time.perf_counter() - t) * 1e6))'
done >"$SAMPLES/import" 2>>"$LOG" || { note "import sbx failed"; cat "$LOG" >&2; exit 1; }
s=$(median import)
row "import" "-" "$((s / 1000)).$(((s % 1000) / 100)) ms" "-" \
  "$(awk -v s="$s" 'BEGIN { print (s < 50000) ? "met (< 50 ms)" : "MISSED (< 50 ms)" }')"

printf '%-14s %12s %12s %8s  %s\n' case cli sdk ratio target
printf '%s\n' "${rows[@]}"
printf '(medians; exec: %d rounds, stream: %s x %d, MB = 10^6 bytes; ratio: sdk/cli time for exec, sdk/cli throughput for stream)\n' \
  "$N" "$SIZE" "$K"
