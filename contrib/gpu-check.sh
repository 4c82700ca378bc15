#!/bin/bash
# contrib/gpu-check.sh: on a host with an NVIDIA GPU (driver loaded, as
# root), checks what a GPU sandbox can do under each runtime that may have
# one: runc always, runsc when it has --nvproxy (sbx info). In each it runs
# nvidia-smi, then loads libcuda through python3's ctypes, and prints one
# line per check: ok, or FAIL with the last line of what it said. It prints
# sbx info's GPU lines first (how the GPUs are passed: cdi or direct).
#
#   contrib/gpu-check.sh [IMAGE]     # IMAGE: one with python3 (default python:3.12-slim)
#
# Exit status: 0 when every check ran and passed, 1 when one failed, 2 when
# the host has no GPU sbx can see. No test here fakes a GPU: the stand-ins
# are tests/integration/gpu.bats'.
set -u
image=${1:-python:3.12-slim}
sbx=${SBX_BIN:-sbx}

info=$("$sbx" info) || { echo "gpu-check: sbx info failed" >&2; exit 1; }
printf '%s\n' "$info" | grep -E '^(gpus|gpu_|runsc_nvproxy)'
if ! printf '%s\n' "$info" | grep -q '^gpus\.devices\.0:'; then
  echo "gpu-check: no GPU found on this host (see gpus.* above)" >&2
  exit 2
fi

runtimes=(runc)
printf '%s\n' "$info" | grep -q '^runsc_nvproxy: yes' && runtimes=(runsc runc)
"$sbx" pull "$image" >/dev/null || { echo "gpu-check: cannot pull $image" >&2; exit 1; }

failed=0
check () {  # RUNTIME NAME COMMAND...
  local rt=$1 name=$2 out
  shift 2
  if out=$("$sbx" run --rm --runtime "$rt" --gpu all --image "$image" -- "$@" 2>&1); then
    printf '%-6s %-8s ok    %s\n' "$rt" "$name" "$(printf '%s\n' "$out" | grep -m1 -E 'Driver Version|CUDA|loaded' || true)"
  else
    failed=1
    printf '%-6s %-8s FAIL  %s\n' "$rt" "$name" "$(printf '%s\n' "$out" | tail -n 1)"
  fi
}

for rt in "${runtimes[@]}"; do
  check "$rt" nvidia-smi nvidia-smi
  check "$rt" libcuda python3 -c "import ctypes; c = ctypes.CDLL('libcuda.so.1'); n = ctypes.c_int();
r = c.cuInit(0); r2 = c.cuDeviceGetCount(ctypes.byref(n)); print('libcuda loaded: cuInit', r, 'devices', n.value)
raise SystemExit(0 if r == 0 and r2 == 0 and n.value > 0 else 1)"
done
exit "$failed"
