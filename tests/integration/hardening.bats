#!/usr/bin/env bats
# Isolation (DESIGN.md section 6), on both runtimes, with the hostile payload.
# Where sbx's own spec is what holds (runc), the payload's verdict must be
# `denied`; where gVisor answers for itself (runsc: synthetic /proc, its own
# kernel), the test judges by effects on the host.

load ../helpers/common

setup () {
  sbx_setup
  sbx_import_payload
}

teardown () {
  # A write that reached the host is put back before anything else.
  if [ -n "${restore_file-}" ] && [ "$(cat "$restore_file" 2>/dev/null)" != "$restore_value" ]; then
    printf '%s\n' "$restore_value" >"$restore_file"
  fi
  sbx_teardown
}

# probe RT ACTION [ARGS...]: the payload in a new sandbox.
probe () {
  require_runtime "$1"
  payload "$@"
}

# expect_denied ACTION: the payload's verdict is `ACTION: denied (...)`, exit 1.
expect_denied () {
  local last
  last=$(last_line)
  if [ "$status" -ne 1 ] || [[ "$last" != "$1: denied ("* ]]; then
    printf 'expected `%s: denied (...)` and exit 1, got exit %s:\n%s\n' "$1" "$status" "$output" >&2
    return 1
  fi
}

# --- syscalls the profile denies ----------------------------------------------

# check_denied RT ACTION: the call is refused inside the sandbox.
check_denied () {
  probe "$1" "$2"
  expect_denied "$2"
}

@test "hardening: mount is denied [runc]" { check_denied runc mount; }
@test "hardening: mount is denied [runsc]" { check_denied runsc mount; }
@test "hardening: unshare(CLONE_NEWUSER) is denied [runc]" { check_denied runc unshare-user; }
@test "hardening: unshare(CLONE_NEWUSER) is denied [runsc]" { check_denied runsc unshare-user; }
@test "hardening: unshare(CLONE_NEWNET) is denied [runc]" { check_denied runc unshare-net; }
@test "hardening: unshare(CLONE_NEWNET) is denied [runsc]" { check_denied runsc unshare-net; }
@test "hardening: unshare(CLONE_NEWNS) is denied [runc]" { check_denied runc unshare-mount; }
@test "hardening: unshare(CLONE_NEWNS) is denied [runsc]" { check_denied runsc unshare-mount; }
@test "hardening: setns into PID 1's namespace is denied [runc]" { check_denied runc setns; }
@test "hardening: setns into PID 1's namespace is denied [runsc]" { check_denied runsc setns; }
@test "hardening: keyctl (add_key) is denied [runc]" { check_denied runc keyctl; }
@test "hardening: keyctl (add_key) is denied [runsc]" { check_denied runsc keyctl; }
@test "hardening: bpf is denied [runc]" { check_denied runc bpf; }
@test "hardening: bpf is denied [runsc]" { check_denied runsc bpf; }
@test "hardening: io_uring is denied [runc]" { check_denied runc io_uring; }
@test "hardening: io_uring is denied [runsc]" { check_denied runsc io_uring; }
@test "hardening: AF_ALG sockets are denied [runc]" { check_denied runc af-alg; }
@test "hardening: AF_ALG sockets are denied [runsc]" { check_denied runsc af-alg; }
@test "hardening: AF_VSOCK sockets are denied [runc]" { check_denied runc af-vsock; }
@test "hardening: AF_VSOCK sockets are denied [runsc]" { check_denied runsc af-vsock; }
@test "hardening: ptrace of PID 1 is denied [runc]" { check_denied runc ptrace-pid1; }
@test "hardening: ptrace of PID 1 is denied [runsc]" { check_denied runsc ptrace-pid1; }

# check_errno RT ACTION ERRNO: the call is refused with that errno.
check_errno () {
  probe "$1" "$2"
  expect_denied "$2"
  expect_contains "$(last_line)" "$3"
}

@test "hardening: clone3 answers ENOSYS [runc]" { check_errno runc clone3 ENOSYS; }
@test "hardening: clone3 answers ENOSYS [runsc]" { check_errno runsc clone3 ENOSYS; }

# sbx-init loads the profile itself: under gVisor, which implements syslog,
# only the profile makes it fail, and with EPERM (the default action).
@test "hardening: syslog (in no rule) answers EPERM: the profile is loaded [runc]" { check_errno runc syslog EPERM; }
@test "hardening: syslog (in no rule) answers EPERM: the profile is loaded [runsc]" { check_errno runsc syslog EPERM; }

# A syscall newer than the profile answers ENOSYS (libc falls back), not EPERM.
@test "hardening: a syscall numbered above the profile answers ENOSYS [runc]" { check_errno runc nosys ENOSYS; }
@test "hardening: a syscall numbered above the profile answers ENOSYS [runsc]" { check_errno runsc nosys ENOSYS; }

# An init that did not load the profile (the test payload standing in for
# sbx-init: a current HELLO without the flag) is refused, and nothing stays.
check_unfiltered_init () {
  require_runtime "$1"
  SBX_INIT=$SBX_TESTPAYLOAD expect_error INTERNAL create --runtime "$1" --block-network
  expect_contains "$(jget 'd["error"]["message"]')" "did not load the seccomp profile"
  expect_eq "$(sbx ls -q | wc -l)" 0 "sandboxes left by the failed create"
}

@test "hardening: an init that did not load the seccomp profile is refused [runc]" { check_unfiltered_init runc; }
@test "hardening: an init that did not load the seccomp profile is refused [runsc]" { check_unfiltered_init runsc; }

@test "hardening: the bundle has no seccomp section; PID 1 (sbx-init) runs under the filter [runc]" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --block-network)
  run grep -c '"seccomp"' "$SBX_ROOT/sandboxes/$id/bundle/config.json"
  expect_eq "$output" 0 "seccomp sections in config.json"
  run sbx exec "$id" -- sh -c 'grep "^Seccomp:" /proc/1/status'
  expect_status 0
  expect_contains "$output" "2"
}

# The 32-bit entry point: no 32-bit syscall may run at all, whatever answers.
check_socketcall () {
  probe "$1" "$2"
  expect_denied "$2"
  expect_not_contains "$output" ": ok"
}

@test "hardening: AF_ALG through 32-bit socketcall is refused [runc]" { check_socketcall runc af-alg-socketcall; }
@test "hardening: AF_ALG through 32-bit socketcall is refused [runsc]" { check_socketcall runsc af-alg-socketcall; }
@test "hardening: AF_INET through 32-bit socketcall is refused [runc]" { check_socketcall runc inet-socketcall; }
@test "hardening: AF_INET through 32-bit socketcall is refused [runsc]" { check_socketcall runsc inet-socketcall; }

# --- devices and host files ------------------------------------------------------

# A /dev/mem node made inside: the open must fail or read nothing.
check_mknod_mem () {
  probe "$1" mknod-open /tmp/mem
  expect_denied mknod-open
  expect_not_contains "$output" "mknod-open: ok"
}

@test "hardening: a planted /dev/mem node cannot be read [runc]" { check_mknod_mem runc; }
@test "hardening: a planted /dev/mem node cannot be read [runsc]" { check_mknod_mem runsc; }

# check_host_write RT FILE VALUE: writing FILE inside leaves the host's FILE
# as it was; under runc (sbx's read-only paths) the write is refused.
check_host_write () {
  local rt=$1 file=$2 value=$3 before
  [ -r "$file" ] || skip "no $file on this host"
  before=$(cat "$file")
  restore_file=$file
  restore_value=$before
  [ "$before" != "$value" ] || fail "test value equals the host's"
  probe "$rt" write "$file" "$value"
  expect_eq "$(cat "$file")" "$before" "host's $file after the sandbox wrote it"
  if [ "$rt" = runc ]; then
    expect_denied write
  else
    [ "$status" -le 1 ] || fail "payload exit $status: $output"
  fi
}

@test "hardening: /proc/sys/kernel/hostname of the host is unchanged [runc]" {
  check_host_write runc /proc/sys/kernel/hostname sbx-evil-host
}
@test "hardening: /proc/sys/kernel/hostname of the host is unchanged [runsc]" {
  check_host_write runsc /proc/sys/kernel/hostname sbx-evil-host
}
@test "hardening: /proc/sys/kernel/core_pattern of the host is unchanged [runc]" {
  check_host_write runc /proc/sys/kernel/core_pattern '|/tmp/sbx-evil-core'
}
@test "hardening: /proc/sys/kernel/core_pattern of the host is unchanged [runsc]" {
  check_host_write runsc /proc/sys/kernel/core_pattern '|/tmp/sbx-evil-core'
}
@test "hardening: /sys of the host is unchanged (ksm sleep_millisecs) [runc]" {
  check_host_write runc /sys/kernel/mm/ksm/sleep_millisecs 4321
}
@test "hardening: /sys of the host is unchanged (ksm sleep_millisecs) [runsc]" {
  check_host_write runsc /sys/kernel/mm/ksm/sleep_millisecs 4321
}

# check_masked RT FILE: the read is denied or empty (runc: sbx's masked
# paths); under runsc gVisor's /proc is its own: never the host's content.
check_masked () {
  local rt=$1 file=$2 host=
  host=$(head -n 1 "$file" 2>/dev/null) || host=
  probe "$rt" read "$file"
  [ "$status" -le 1 ] || fail "payload exit $status: $output"
  if [ "$status" -eq 0 ]; then
    local data
    data=$(printf '%s\n' "$output" | sed '$d')
    if [ "$rt" = runc ]; then
      expect_eq "$data" "" "content of masked $file"
    elif [ -n "$host" ]; then
      [ "$data" != "$host" ] || fail "$file shows the host's content: $data"
    fi
  fi
}

@test "hardening: masked /proc/kcore [runc]" { check_masked runc /proc/kcore; }
@test "hardening: masked /proc/kcore [runsc]" { check_masked runsc /proc/kcore; }
@test "hardening: masked /proc/keys [runc]" { check_masked runc /proc/keys; }
@test "hardening: masked /proc/keys [runsc]" { check_masked runsc /proc/keys; }
@test "hardening: masked /proc/timer_list [runc]" { check_masked runc /proc/timer_list; }
@test "hardening: masked /proc/timer_list [runsc]" { check_masked runsc /proc/timer_list; }
@test "hardening: masked /proc/interrupts [runc]" { check_masked runc /proc/interrupts; }
@test "hardening: masked /proc/interrupts [runsc]" { check_masked runsc /proc/interrupts; }

check_chroot_escape () {
  # A path only the host has: this test's own directory.
  probe "$1" chroot-escape "$SBX_TEST_DIR"
  expect_denied chroot-escape
  expect_not_contains "$output" "escaped:"
}

@test "hardening: chroot .. does not climb out of the root [runc]" { check_chroot_escape runc; }
@test "hardening: chroot .. does not climb out of the root [runsc]" { check_chroot_escape runsc; }

# --- what the process is given -----------------------------------------------------

# cap_field NAME: the hex value of NAME: in the caps output.
cap_field () {
  printf '%s\n' "$output" | awk -v k="$1:" '$1 == k { print $2 }'
}

# hex_subset A B: every bit of A is in B.
hex_subset () {
  [ $((0x$1 & ~0x$2)) -eq 0 ]
}

@test "hardening: capabilities are the default set, none inheritable or ambient, no_new_privs [runc]" {
  probe runc caps
  expect_status 0
  expect_eq "$(cap_field CapInh)" 0000000000000000 CapInh
  expect_eq "$(cap_field CapAmb)" 0000000000000000 CapAmb
  expect_eq "$(cap_field CapBnd)" "$SBX_DEFAULT_CAPS" CapBnd
  hex_subset "$(cap_field CapEff)" "$SBX_DEFAULT_CAPS" || fail "CapEff $(cap_field CapEff) beyond the default set"
  hex_subset "$(cap_field CapPrm)" "$SBX_DEFAULT_CAPS" || fail "CapPrm $(cap_field CapPrm) beyond the default set"
  # Not NET_RAW (forged sources), MKNOD, AUDIT_WRITE: podman's set.
  local bit
  for bit in 13 27 29; do
    [ $((0x$(cap_field CapBnd) >> bit & 1)) -eq 0 ] || fail "capability $bit in CapBnd $(cap_field CapBnd)"
  done
  expect_eq "$(cap_field NoNewPrivs)" 1 NoNewPrivs
  expect_eq "$(cap_field Seccomp)" 2 "Seccomp (filter mode)"
}

@test "hardening: capabilities are at most the default set, none inheritable, no_new_privs [runsc]" {
  require_runtime runsc
  local id
  id=$(sbx create --runtime runsc --image payload)
  run sbx exec "$id" -- /bin/sbx-testpayload caps
  expect_status 0
  expect_eq "$(cap_field CapInh)" 0000000000000000 CapInh
  local amb
  amb=$(cap_field CapAmb)
  [ -z "$amb" ] || expect_eq "$amb" 0000000000000000 CapAmb
  [ -n "$(cap_field CapBnd)" ] || fail "no CapBnd: $output"
  hex_subset "$(cap_field CapBnd)" "$SBX_DEFAULT_CAPS" || fail "CapBnd $(cap_field CapBnd) beyond the default set"
  hex_subset "$(cap_field CapEff)" "$SBX_DEFAULT_CAPS" || fail "CapEff $(cap_field CapEff) beyond the default set"
  # gVisor's /proc/self/status has no NoNewPrivs line: the spec sbx gave it
  # must ask for it, and for nothing ambient or inheritable.
  local nnp
  nnp=$(cap_field NoNewPrivs)
  [ -z "$nnp" ] || expect_eq "$nnp" 1 NoNewPrivs
  local spec=$SBX_ROOT/sandboxes/$id/bundle/config.json
  [ -f "$spec" ] || fail "no bundle spec at $spec"
  expect_eq "$(jget 'd["process"]["noNewPrivileges"]' "$(cat "$spec")")" true "spec noNewPrivileges"
  expect_eq "$(jget 'd["process"]["capabilities"].get("ambient") or []' "$(cat "$spec")")" "[]" "spec ambient"
  expect_eq "$(jget 'd["process"]["capabilities"].get("inheritable") or []' "$(cat "$spec")")" "[]" "spec inheritable"
  sbx terminate "$id" >/dev/null
}

check_fds () {
  probe "$1" fds
  expect_status 0
  expect_eq "$output" "fds: ok" "fds beyond 0, 1, 2"
  # And what 0, 1, 2 are: never a host file.
  run sbx run --runtime "$1" --image payload -- sh -c 'for f in 0 1 2; do readlink /proc/self/fd/$f; done'
  expect_status 0
  expect_not_contains "$output" "$SBX_TEST_DIR"
  expect_not_contains "$output" "/tmp/sbx-test"
}

@test "hardening: a command holds only fds 0, 1, 2 [runc]" { check_fds runc; }
@test "hardening: a command holds only fds 0, 1, 2 [runsc]" { check_fds runsc; }

@test "hardening: the sandbox's init holds no fd to a host file [runc]" {
  require_runtime runc
  local id pid fd target bad=
  id=$(sbx create --runtime runc --image payload)
  pid=$(container_pid runc "$id")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || fail "no container pid for $id"
  expect_eq "$(tr -d '\0' <"/proc/$pid/cmdline")" /.sbx/init "container pid's command"
  for fd in /proc/"$pid"/fd/*; do
    target=$(readlink "$fd") || continue
    case $target in
      # No pipe either: the runtime's stderr (into the host's log) is closed
      # before any process of the sandbox starts.
      /dev/null | socket:* | anon_inode:*) ;;
      *) bad="$bad fd ${fd##*/} -> $target;" ;;
    esac
  done
  sbx terminate "$id" >/dev/null
  [ -z "$bad" ] || fail "the sandbox's PID 1 holds host files:$bad"
}

# check_pid1_fds RT: a process of the sandbox writes to every fd of PID 1
# it can open through /proc/1/fd (gVisor lets root reopen them, whatever
# PR_SET_DUMPABLE says; runc's kernel does not): nothing reaches the host,
# not the sandbox's log (once a pipe into it: 300 MB went there), not any
# file of the test's directory, and the log keeps its bound and its form.
check_pid1_fds () {
  local rt=$1 id log mark
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload)
  mark="forged-$RANDOM$RANDOM"
  log=$SBX_ROOT/sandboxes/$id/log
  run --separate-stderr sbx exec "$id" -- sh -c '
    for n in $(seq 0 1100); do
      [ -e /proc/1/fd/$n ] || [ $n -lt 3 ] || continue
      (printf "%s\n2026-01-01T00:00:00.000Z sbx: terminated (exit)\n" "$1-$n" >>/proc/1/fd/$n) 2>/dev/null
    done
    echo checked' sh "$mark"
  expect_status 0
  expect_contains "$output" checked
  # The sandbox's log and every other file of the test's root are clean.
  if grep -rlF "$mark" "$SBX_TEST_DIR" 2>/dev/null | grep .; then
    fail "a write to /proc/1/fd reached a host file ($output)"
  fi
  [ "$(stat -c %s "$log")" -lt $((1 << 20)) ] || fail "the log grew to $(stat -c %s "$log") bytes"
  grep -q "sbx: running" "$log" || fail "the log lost its own lines: $(head -c 2000 "$log")"
  sbx terminate "$id" >/dev/null
  [ "$(stat -c %s "$log")" -le $((1 << 20)) ] || fail "the log grew to $(stat -c %s "$log") bytes"
  # Every line says which side wrote it.
  if grep -vE '^[0-9T:.-]+Z (sbx|runtime|sandbox): |^[0-9T:.-]+Z \[sbx: log truncated' "$log" | grep .; then
    fail "unmarked lines in the log"
  fi
}

@test "hardening: writes to PID 1's fds from inside reach no host file; the log stays bounded [runc]" {
  check_pid1_fds runc
}

@test "hardening: writes to PID 1's fds from inside reach no host file; the log stays bounded [runsc]" {
  check_pid1_fds runsc
}

check_nofile () {
  probe "$1" rlimit-nofile
  expect_status 0
  local hard soft host
  host=$(ulimit -Hn)
  hard=$(printf '%s\n' "$output" | awk '$1 == "hard:" { print $2 }')
  soft=$(printf '%s\n' "$output" | awk '$1 == "soft:" { print $2 }')
  [ -n "$hard" ] && [ -n "$soft" ] || fail "no limits in: $output"
  if [ "$host" != unlimited ]; then
    [ "$hard" != unlimited ] && [ "$hard" -le "$host" ] || fail "hard limit $hard above the host's $host"
  fi
  if [ "$hard" != unlimited ]; then
    [ "$soft" != unlimited ] && [ "$soft" -le "$hard" ] || fail "soft limit $soft above the hard $hard"
  fi
}

@test "hardening: RLIMIT_NOFILE is not above the host's hard limit [runc]" { check_nofile runc; }
@test "hardening: RLIMIT_NOFILE is not above the host's hard limit [runsc]" { check_nofile runsc; }

# --- namespaces ---------------------------------------------------------------------

check_namespaces () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload)
  # pid: PID 1 is the agent, few processes, no host process visible.
  run --separate-stderr sbx exec "$id" -- sh -c 'tr "\0" " " </proc/1/cmdline; echo; ls -d /proc/[0-9]* | wc -l'
  expect_status 0
  expect_eq "$(printf '%s\n' "$output" | sed -n 1p | sed 's/ *$//')" /.sbx/init "PID 1's command"
  local n
  n=$(printf '%s\n' "$output" | sed -n 2p)
  [ "$n" -le 6 ] || fail "$n processes visible in the sandbox"
  run --separate-stderr sbx exec "$id" -- ps
  expect_status 0
  expect_not_contains "$output" bats
  expect_not_contains "$output" sbx-monitor
  [ "$(printf '%s\n' "$output" | wc -l)" -le 6 ] || fail "ps shows: $output"
  # uts: its own hostname.
  run --separate-stderr sbx exec "$id" -- /bin/sbx-testpayload hostname
  expect_status 0
  [ "$output" != "$(cat /proc/sys/kernel/hostname)" ] || fail "the sandbox has the host's hostname"
  expect_eq "$output" "$id" "hostname"
  # net: its own namespace: loopback and its one veth end, none of the
  # host's interfaces (network.bats tests what it reaches).
  run --separate-stderr sbx exec "$id" -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\n" " "'
  expect_status 0
  expect_eq "$output" "eth0 lo " "interfaces in /proc/net/dev"
  # mount: the host's mounts are not there.
  run --separate-stderr sbx exec "$id" -- cat /proc/self/mounts
  expect_status 0
  expect_not_contains "$output" "$SBX_TEST_DIR"
  sbx terminate "$id" >/dev/null
  # --block-network: loopback only.
  id=$(sbx create --runtime "$rt" --image payload --block-network)
  run --separate-stderr sbx exec "$id" -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
  expect_status 0
  expect_eq "$output" lo "interfaces in /proc/net/dev under --block-network"
  sbx terminate "$id" >/dev/null
}

@test "hardening: own pid, uts, net and mount namespaces [runc]" { check_namespaces runc; }
@test "hardening: own pid, uts, net and mount namespaces [runsc]" { check_namespaces runsc; }

# --- an image that points /dev, /proc, /sys at host paths ------------------------------

# The targets: one that does not exist (must not be created) and one empty
# directory (must stay empty and unmounted).
symlink_image () {
  local stage=$BATS_TEST_TMPDIR/evil
  host_missing=/tmp/sbx-evil-target.$$.$RANDOM
  host_dir=$(mktemp -d /tmp/sbx-evil-dir.XXXXXX)
  mkdir -p "$stage/bin" "$stage/etc"
  cp "$SBX_BUSYBOX" "$stage/bin/busybox"
  cp "$SBX_TESTPAYLOAD" "$stage/bin/sbx-testpayload"
  local a
  for a in sh cat ls echo true; do ln -s busybox "$stage/bin/$a"; done
  ln -s "$host_missing" "$stage/dev"
  ln -s "$host_dir" "$stage/proc"
  ln -s "$host_missing-sys" "$stage/sys"
  ln -s "$host_missing-resolv" "$stage/etc/resolv.conf"
  ln -s "$host_dir/hosts" "$stage/etc/hosts"
  tar --numeric-owner --owner=0 --group=0 -C "$stage" -cf "$BATS_TEST_TMPDIR/evil.tar" .
  sbx import --tag evil "$BATS_TEST_TMPDIR/evil.tar" >/dev/null
}

check_symlink_image () {
  local rt=$1
  require_runtime "$rt"
  symlink_image
  run --separate-stderr sbx run --runtime "$rt" --image evil -- sh -c \
    'echo x >/dev/null && tr "\0" " " </proc/1/cmdline && ls /dev/null /sys >/dev/null && echo fine'
  local st=$status out=$output err=$stderr
  # Whatever happened inside, nothing on the host.
  local leaked=
  for p in "$host_missing" "$host_missing-sys" "$host_missing-resolv"; do
    [ -e "$p" ] || [ -L "$p" ] && leaked="$leaked created $p;" && rm -rf "$p"
  done
  [ -z "$(ls -A "$host_dir")" ] || leaked="$leaked wrote into $host_dir: $(ls -A "$host_dir");"
  grep -qF "$host_dir" /proc/mounts && leaked="$leaked mounted on $host_dir;" && umount -l "$host_dir"
  rm -rf "$host_dir"
  [ -z "$leaked" ] || fail "the image redirected the runtime onto the host:$leaked"
  # And the sandbox ran normally.
  if [ "$st" -ne 0 ]; then
    printf 'sandbox failed (exit %s)\nstdout: %s\nstderr: %s\n' "$st" "$out" "$err" >&2
    return 1
  fi
  expect_contains "$out" "/.sbx/init"
  expect_contains "$out" fine
}

@test "hardening: an image whose /dev, /proc, /sys are host symlinks touches nothing on the host [runc]" {
  check_symlink_image runc
}

@test "hardening: an image whose /dev, /proc, /sys are host symlinks touches nothing on the host [runsc]" {
  check_symlink_image runsc
}

# --- the store's own files ----------------------------------------------------------------

@test "hardening: the store, sandbox directories, state, token and control socket are private" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload)
  expect_eq "$(stat -c %a "$SBX_ROOT")" 700 "mode of ROOT"
  expect_eq "$(stat -c %a "$SBX_ROOT/sandboxes/$id")" 700 "mode of the sandbox directory"
  expect_eq "$(stat -c %a "$SBX_ROOT/sandboxes/$id/state.json")" 600 "mode of state.json"
  [ ! -e "$SBX_ROOT/token" ] || expect_eq "$(stat -c %a "$SBX_ROOT/token")" 600 "mode of the token"
  local sock=$SBX_RUN_ROOT/sandboxes/$id/control.sock
  [ -S "$sock" ] || fail "no control socket at $sock"
  [ $((0$(stat -c %a "$sock") & 077)) -eq 0 ] || fail "control socket mode $(stat -c %a "$sock")"
  expect_eq "$(stat -c %a "$SBX_RUN_ROOT/sandboxes/$id")" 700 "mode of the run directory"
  sbx terminate "$id" >/dev/null
}

@test "hardening: the agent is not dumpable: its fds and environment are closed to the sandbox [runc]" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc --image payload)
  run --separate-stderr sbx exec "$id" -- sh -c 'cat /proc/1/environ; readlink /proc/1/fd/0 /proc/1/cwd /proc/1/exe'
  [ "$status" -ne 0 ] || fail "PID 1's environment and fds are readable: $output"
  expect_eq "$output" "" "what the sandbox read of PID 1"
  sbx terminate "$id" >/dev/null
}
