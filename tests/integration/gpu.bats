#!/usr/bin/env bats
# GPUs (--gpu) with stand-ins the tests make, no GPU needed: character
# devices with NVIDIA's major (195) and an nvidia-uvm major (510) under a
# throwaway /dev (SBX_DEV_ROOT), the driver's information files under a
# throwaway /proc/driver/nvidia (SBX_NVIDIA_PROC) with made-up models, a
# fake library directory, a fake `ldconfig -p` and nvidia-smi, and CDI specs
# (YAML and JSON) naming them. Inside a runc sandbox: the device nodes (and
# the cgroup letting them open: ENXIO, not EPERM), the read-only mounts, the
# environment, the hook that ran; the same without a CDI spec, straight from
# the driver's nodes and ldconfig. Refused with nothing made: more GPUs than
# exist, a TYPE not found, none on the host, runsc without --nvproxy, a bad
# --gpu, a spec sbx cannot honour or that root did not write. sbx info lists
# the GPUs and how they would be passed.

load ../helpers/common

# The stand-in host: two GPUs, their nodes, the driver's files, libraries.
gpu_fixture () {
  local g=$SBX_TEST_DIR/gpu
  mkdir -p "$g/dev" "$g/proc/gpus/0000:01:00.0" "$g/proc/gpus/0000:02:00.0" "$g/lib" "$g/cdi" "$g/nocdi"
  mknod -m 666 "$g/dev/nvidia0" c 195 0
  mknod -m 666 "$g/dev/nvidia1" c 195 1
  mknod -m 666 "$g/dev/nvidiactl" c 195 255
  mknod -m 666 "$g/dev/nvidia-uvm" c 510 0
  mknod -m 666 "$g/dev/nvidia-uvm-tools" c 510 1
  printf 'Model: \t\t NVIDIA RTX A4500\nIRQ:   \t\t 42\nGPU UUID: \t GPU-11111111-2222-3333-4444-555555555555\nBus Location: \t 0000:01:00.0\nDevice Minor: \t 0\n' \
    >"$g/proc/gpus/0000:01:00.0/information"
  printf 'Model: \t\t NVIDIA A100-SXM4-80GB\nGPU UUID: \t GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\nDevice Minor: \t 1\n' \
    >"$g/proc/gpus/0000:02:00.0/information"
  echo "fake libcuda" >"$g/lib/libcuda.so.1"
  echo "fake libnvidia-ml" >"$g/lib/libnvidia-ml.so.1"
  echo "not the driver's" >"$g/lib/libfoo.so.1"
  cat >"$g/ldconfig" <<EOF
#!/bin/sh
printf '3 libs found in cache\n'
printf '\tlibcuda.so.1 (libc6,x86-64) => $g/lib/libcuda.so.1\n'
printf '\tlibnvidia-ml.so.1 (libc6,x86-64) => $g/lib/libnvidia-ml.so.1\n'
printf '\tlibfoo.so.1 (libc6,x86-64) => $g/lib/libfoo.so.1\n'
EOF
  cat >"$g/nvidia-smi" <<'EOF'
#!/bin/sh
echo "GPU-11111111-2222-3333-4444-555555555555, 20470"
echo "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee, 81920"
EOF
  # The hook runc runs at createRuntime, on the host: the state on its stdin.
  cat >"$g/hook" <<EOF
#!/bin/sh
cat >"$g/hook.out"
EOF
  chmod 755 "$g/ldconfig" "$g/nvidia-smi" "$g/hook"
  export SBX_DEV_ROOT=$g/dev SBX_NVIDIA_PROC=$g/proc SBX_CDI_DIRS=$g/cdi SBX_LDCONFIG=$g/ldconfig \
    SBX_NVIDIA_SMI=$g/nvidia-smi SBX_RUNSC_NVPROXY=0
  G=$g
}

cdi_yaml () {
  cat >"$G/cdi/nvidia.yaml" <<EOF
cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
  - name: "0"
    containerEdits:
      deviceNodes:
        - path: /dev/nvidia0
  - name: GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee
    containerEdits:
      deviceNodes:
        - path: /dev/nvidia1
          type: c
          major: 195
          minor: 1
containerEdits:
  env:
    - NVIDIA_VISIBLE_DEVICES=void
    - SBX_GPU_TEST=from-cdi
  deviceNodes:
    - path: /dev/nvidiactl
    - path: /dev/nvidia-uvm
      permissions: rw
  mounts:
    - hostPath: $G/lib/libcuda.so.1
      containerPath: /usr/lib/libcuda.so.1
      options: [ro, nosuid, nodev, bind]
  hooks:
    - hookName: createRuntime
      path: $G/hook
      args: [hook, create-runtime]
EOF
  chmod 644 "$G/cdi/nvidia.yaml"
}

setup () {
  sbx_setup
  gpu_fixture
}

@test "gpu: a CDI spec (YAML) gives the nodes, cgroup rules, mounts, env and hooks (runc)" {
  require_runtime runc
  cdi_yaml
  local id
  id=$(sbx create --runtime runc --block-network --gpu all)
  run --separate-stderr sbx exec "$id" -- sh -c '
    for d in nvidia0 nvidia1 nvidiactl nvidia-uvm; do stat -c "%n %F %t:%T" /dev/$d; done
    head -c1 /dev/nvidia0; head -c1 /dev/nvidia-uvm
    cat /usr/lib/libcuda.so.1; echo x >/usr/lib/libcuda.so.1; echo "write=$?"
    echo "env=$SBX_GPU_TEST $NVIDIA_VISIBLE_DEVICES"
    cat /sys/fs/cgroup/devices/devices.list'
  expect_status 0
  expect_contains "$output" "/dev/nvidia0 character special file c3:0"
  expect_contains "$output" "/dev/nvidia1 character special file c3:1"
  expect_contains "$output" "/dev/nvidiactl character special file c3:ff"
  expect_contains "$output" "/dev/nvidia-uvm character special file 1fe:0"
  # Opened past the device cgroup: no driver behind it (ENXIO), not EPERM.
  expect_contains "$stderr" "No such device or address"
  expect_not_contains "$stderr" "Operation not permitted"
  expect_contains "$output" "fake libcuda"
  expect_contains "$output" "write=1"
  expect_contains "$output" "env=from-cdi void"
  expect_contains "$output" "c 195:0 rwm"
  expect_contains "$output" "c 510:0 rw"
  expect_not_contains "$output" "/dev/nvidia-uvm-tools"
  # The hook ran, for this sandbox.
  [ -f "$G/hook.out" ] || fail "the createRuntime hook did not run"
  expect_contains "$(cat "$G/hook.out")" "\"id\":\"$id\""
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "gpu:        0 GPU-11111111-2222-3333-4444-555555555555 NVIDIA RTX A4500 (cdi)"
  expect_contains "$output" "gpu:        1 GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee NVIDIA A100-SXM4-80GB (cdi)"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["gpus"]["passed"]')" "cdi" "gpus.passed"
  expect_eq "$(jget 'd["options"]["gpus"]')" "all" "options.gpus"
  sbx terminate "$id" >/dev/null
}

@test "gpu: a JSON spec, one GPU by TYPE, runc from sbx.conf's gpu_runtime" {
  require_runtime runc
  sbx_write_conf "gpu_runtime = runc"
  cat >"$G/cdi/nvidia.json" <<EOF
{"cdiVersion": "0.6.0", "kind": "nvidia.com/gpu",
 "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}},
             {"name": "1", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia1"}]}}],
 "containerEdits": {"env": ["SBX_GPU_TEST=from-json"], "deviceNodes": [{"path": "/dev/nvidiactl"}]}}
EOF
  chmod 644 "$G/cdi/nvidia.json"
  local id
  id=$(sbx create --block-network --gpu A100)
  run --separate-stderr sbx exec "$id" -- sh -c 'ls /dev; echo "env=$SBX_GPU_TEST"'
  expect_status 0
  expect_contains "$output" "nvidia1"
  expect_not_contains "$output" "nvidia0"
  expect_contains "$output" "env=from-json"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "runtime:    runc"
  expect_contains "$output" "gpu:        1 GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee NVIDIA A100-SXM4-80GB (cdi)"
  sbx terminate "$id" >/dev/null
}

@test "gpu: without a CDI spec, the driver's nodes and ldconfig's libraries, read-only" {
  require_runtime runc
  export SBX_CDI_DIRS=$G/nocdi
  local id
  id=$(sbx create --runtime runc --block-network --gpu 0,)
  run --separate-stderr sbx exec "$id" -- sh -c "
    ls /dev; cat $G/lib/libcuda.so.1 $G/lib/libnvidia-ml.so.1; ls $G/lib
    echo x >$G/lib/libcuda.so.1; echo write=\$?
    /usr/bin/nvidia-smi"
  expect_status 0
  expect_contains "$output" "nvidia0"
  expect_not_contains "$output" "nvidia1"
  expect_contains "$output" "nvidiactl"
  expect_contains "$output" "nvidia-uvm-tools"
  expect_contains "$output" "fake libcuda"
  expect_contains "$output" "fake libnvidia-ml"
  expect_not_contains "$output" "libfoo"
  expect_contains "$output" "write=1"
  expect_contains "$output" "GPU-11111111-2222-3333-4444-555555555555, 20470"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["gpus"]["passed"]')" "direct" "gpus.passed"
  sbx terminate "$id" >/dev/null
}

# expect_refused CODE WHAT ARGS...: create fails with CODE naming WHAT, and
# nothing was made.
expect_refused () {
  local code=$1 what=$2
  shift 2
  expect_error "$code" create --block-network "$@"
  expect_contains "$output" "$what"
  run --separate-stderr sbx ls -q
  expect_eq "$output" "" "sandboxes after a refused --gpu"
}

@test "gpu: refused with what was found, and nothing made" {
  cdi_yaml
  expect_refused RUNTIME_UNAVAILABLE "3 GPUs were asked for: 2 GPUs found: 0 NVIDIA RTX A4500" --runtime runc --gpu 3
  expect_refused RUNTIME_UNAVAILABLE "GPU 5 was asked for" --runtime runc --gpu 5,1
  expect_refused RUNTIME_UNAVAILABLE "1 GPU of type H100 was asked for" --runtime runc --gpu H100
  expect_refused RUNTIME_UNAVAILABLE "2 GPUs of type A100 were asked for" --runtime runc --gpu A100:2
  # runsc without --nvproxy: both ways out are named; never a silent runc.
  expect_refused RUNTIME_UNAVAILABLE "pass --runtime runc, or set gpu_runtime = runc in sbx.conf" --gpu all
  expect_refused RUNTIME_UNAVAILABLE "needs its --nvproxy" --runtime runsc --gpu 1
  expect_refused INVALID_ARGUMENT "--gpu" --runtime runc --gpu 0
  expect_refused INVALID_ARGUMENT "--gpu" --runtime runc --gpu 1,1
  # A spec sbx cannot honour, or that not root alone may have written.
  printf 'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ncontainerEdits:\n  netDevices: [{name: x}]\n' >"$G/cdi/z.yaml"
  expect_refused INVALID_ARGUMENT "CDI spec $G/cdi/z.yaml: spec.containerEdits.netDevices" --runtime runc --gpu 1
  printf 'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n' >"$G/cdi/z.yaml"
  chmod 666 "$G/cdi/z.yaml"
  expect_refused INVALID_ARGUMENT "writable by root alone" --runtime runc --gpu 1
  rm "$G/cdi/z.yaml"
  # A spec that names no device for the GPU asked for.
  sed -i 's/name: "0"/name: "7"/' "$G/cdi/nvidia.yaml"
  expect_refused RUNTIME_UNAVAILABLE "GPU 0: no CDI spec" --runtime runc --gpu 0,
  # No GPU on the host at all.
  export SBX_NVIDIA_PROC=$G/none SBX_CDI_DIRS=$G/nocdi
  expect_refused RUNTIME_UNAVAILABLE "no GPU found" --runtime runc --gpu 1
}

@test "gpu: sbx info lists the GPUs and how they would be passed" {
  run --separate-stderr sbx info
  expect_status 0
  expect_contains "$output" "gpus.passed: direct"
  expect_contains "$output" "gpus.devices.0: index=0 model=NVIDIA RTX A4500 uuid=GPU-11111111-2222-3333-4444-555555555555 memory=21464350720 bus=0000:01:00.0"
  expect_contains "$output" "gpus.devices.1: index=1 model=NVIDIA A100-SXM4-80GB uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee memory=85899345920"
  expect_contains "$output" "runsc_nvproxy: no"
  expect_contains "$output" "gpu_runtime: runsc"
  cdi_yaml
  run --separate-stderr sbx --json info
  expect_status 0
  expect_eq "$(jget 'd["gpus"]["passed"]')" "cdi" "gpus.passed"
  expect_eq "$(jget 'd["gpus"]["cdi_specs"]')" "[\"$G/cdi/nvidia.yaml\"]" "gpus.cdi_specs"
  expect_eq "$(jget 'd["gpus"]["devices"][1]["memory"]')" "85899345920" "gpus.devices[1].memory"
  expect_eq "$(jget 'd["gpus"]["devices"][0]["model"]')" "NVIDIA RTX A4500" "gpus.devices[0].model"
}
