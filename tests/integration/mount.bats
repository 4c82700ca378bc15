#!/usr/bin/env bats
# Host directories (--mount HOST:DEST[:ro|:rw]) under both runtimes: visible
# inside, read-only unless :rw (EROFS on the mount itself), :rw writes reach
# the host and the host's reach the sandbox, a relative HOST taken from the
# caller's directory, nothing mounted below HOST comes along, and the end
# of a sandbox never touches the host's files. Refused, with nothing made:
# every directory of the policy (sbx.conf(5)), sbx's ROOT and RUN and what
# holds them, a tree holding a docker.sock socket, sbx.conf's mount_deny and
# mount_allow, /etc reached through a bind mount elsewhere, a symlink
# anywhere on the path; and a component swapped for a symlink while
# `--mount` runs, again and again, never mounts the symlink's target.

load ../helpers/common

# A host directory of the test's own, with one file.
host_dir () {
  local d=$SBX_TEST_DIR/host/$1
  mkdir -p "$d"
  echo "from the host" >"$d/hello"
  echo "$d"
}

# expect_refused CODE WHAT ARGS...: `sbx create ARGS` fails with CODE, its
# message names WHAT, and nothing was made.
expect_refused () {
  local code=$1 what=$2
  shift 2
  expect_error "$code" create --runtime runc "$@"
  expect_contains "$output" "$what"
  run --separate-stderr sbx ls -q
  expect_status 0
  expect_eq "$output" "" "sandboxes after a refused --mount"
  if [ -d "$SBX_ROOT/sandboxes" ]; then
    expect_eq "$(ls -A "$SBX_ROOT/sandboxes")" "" "the store's sandboxes directory"
  fi
}

visible_ro () {
  local rt=$1 h
  require_runtime "$rt"
  h=$(host_dir data)
  run --separate-stderr sbx run --runtime "$rt" --block-network --mount "$h:/mnt/data" -- sh -c \
    'cat /mnt/data/hello; echo new >/mnt/data/new 2>&1; echo "write=$?"; rm /mnt/data/hello 2>&1; echo "rm=$?"
     mkdir /mnt/data/d 2>&1; echo "mkdir=$?"'
  expect_status 0
  expect_contains "$output" "from the host"
  expect_contains "$output" "write=1"
  expect_contains "$output" "rm=1"
  expect_contains "$output" "mkdir=1"
  expect_contains "$output" "Read-only file system"
  [ ! -e "$h/new" ] && [ ! -e "$h/d" ] && [ -f "$h/hello" ] || fail "the host's directory changed: $(ls -la "$h")"
  # :ro says the same; the record keeps the absolute path and the mode.
  local id
  id=$(sbx create --runtime "$rt" --block-network --mount "$h:/data:ro")
  run --separate-stderr sbx exec "$id" -- sh -c 'cat /data/hello; touch /data/x 2>&1; echo "touch=$?"'
  expect_status 0
  expect_contains "$output" "from the host"
  expect_contains "$output" "touch=1"
  expect_contains "$output" "Read-only file system"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["options"]["mounts"]')" "[\"$h:/data:ro\"]" "options.mounts"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "mount:      $h on /data (read-only)"
  sbx terminate "$id" >/dev/null
}

@test "mount: a host directory is visible inside and read-only by default (runc)" {
  visible_ro runc
}

@test "mount: a host directory is visible inside and read-only by default (runsc)" {
  visible_ro runsc
}

read_write () {
  local rt=$1 h id
  require_runtime "$rt"
  h=$(host_dir rw)
  id=$(sbx create --runtime "$rt" --block-network --mount "$h:/work/shared:rw")
  run --separate-stderr sbx exec "$id" -- sh -c 'echo "from $0" >/work/shared/out && mkdir /work/shared/sub && cat /work/shared/hello' "$rt"
  expect_status 0
  expect_contains "$output" "from the host"
  expect_eq "$(cat "$h/out")" "from $rt" "what the sandbox wrote, on the host"
  [ -d "$h/sub" ] || fail "the sandbox's mkdir did not reach the host"
  # The host's writes reach the sandbox at once.
  echo later >"$h/later"
  run --separate-stderr sbx exec "$id" -- cat /work/shared/later
  expect_status 0
  expect_eq "$output" "later" "a host write seen inside"
  sbx terminate "$id" >/dev/null
  sbx rm "$id" >/dev/null
  # The sandbox's end and its removal leave the host's files as they were
  # (its bind lived under RUN, on the same filesystem as this directory).
  [ -f "$h/hello" ] && [ -f "$h/out" ] && [ -f "$h/later" ] && [ -d "$h/sub" ] \
    || fail "the host's files changed after the sandbox ended: $(ls -la "$h")"
}

@test "mount: :rw writes reach the host and the host's reach the sandbox (runc)" {
  read_write runc
}

@test "mount: :rw writes reach the host and the host's reach the sandbox (runsc)" {
  read_write runsc
}

crash_keeps_host () {
  local rt=$1 h id pid
  require_runtime "$rt"
  h=$(host_dir crash)
  id=$(sbx create --runtime "$rt" --block-network --mount "$h:/w:rw")
  pid=$(monitor_pid "$id")
  kill -9 "$pid"
  local i
  for i in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget 'd["state"]')" failed "state after the monitor was killed"
  run --separate-stderr sbx rm "$id"
  expect_status 0
  run --separate-stderr sbx gc
  expect_status 0
  [ -f "$h/hello" ] || fail "the host's file is gone after the monitor was killed and gc ran"
}

@test "mount: a killed monitor and gc leave the host's files (runc)" {
  crash_keeps_host runc
}

@test "mount: a killed monitor and gc leave the host's files (runsc)" {
  crash_keeps_host runsc
}

@test "mount: a relative HOST is from the caller's directory; mounts below HOST stay out" {
  local h rt
  h=$(host_dir rel)
  mkdir -p "$h/sub"
  echo under >"$h/sub/underneath"
  for rt in runc runsc; do
    require_runtime "$rt"
    # A tmpfs over sub, in a mount namespace of the test's own: the bind is
    # not recursive, so the sandbox sees sub as it is on HOST's filesystem.
    run --separate-stderr unshare -m --propagation private sh -c \
      'mount -t tmpfs none "$1/sub" && echo over >"$1/sub/over" && cd "$1/.." && exec "$2" run --runtime "$3" --block-network --mount "rel:/r" -- sh -c "cat /r/hello; ls /r/sub"' \
      sh "$h" "$SBX_BIN" "$rt"
    expect_status 0
    expect_contains "$output" "from the host"
    expect_contains "$output" "underneath"
    expect_not_contains "$output" "over"
  done
}

@test "mount: inside, the mount is nosuid and nodev, read-only on the mount itself (runc)" {
  require_runtime runc
  local h
  h=$(host_dir opts)
  run --separate-stderr sbx run --runtime runc --block-network --mount "$h:/o" --mount "$h:/w:rw" -- sh -c 'grep " /o \| /w " /proc/mounts'
  expect_status 0
  local o w
  o=$(printf '%s\n' "$output" | grep ' /o ')
  w=$(printf '%s\n' "$output" | grep ' /w ')
  expect_contains "$o" "ro,"
  expect_contains "$o" "nosuid"
  expect_contains "$o" "nodev"
  expect_contains "$w" "rw,"
  expect_contains "$w" "nosuid"
  expect_contains "$w" "nodev"
}

@test "mount: the host's system directories are refused with POLICY_REFUSED" {
  local p
  for p in / /etc /etc/ssl /proc /proc/self /sys /sys/kernel /dev /dev/shm /boot /root /root/.ssh /run /var/run \
    /var/lib /var /var/lib/docker /var/lib/containerd /run/containerd /var/lib/sbx /run/sbx; do
    expect_refused POLICY_REFUSED "never mounted" --mount "$p:/x"
  done
}

@test "mount: sbx's ROOT and RUN, inside and above, are refused" {
  local p
  for p in "$SBX_ROOT" "$SBX_ROOT/layers" "$SBX_RUN_ROOT" "$SBX_RUN_ROOT/sandboxes" "$SBX_TEST_DIR" /tmp; do
    mkdir -p "$p"
    expect_refused POLICY_REFUSED "sbx's" --mount "$p:/x:rw"
  done
}

@test "mount: a tree holding a container engine's socket is refused" {
  local h
  h=$(host_dir engine)
  mkdir -p "$h/a/b"
  py -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$h/a/b/docker.sock"
  expect_refused POLICY_REFUSED "holds a container engine's socket (\`a/b/docker.sock\`)" --mount "$h:/x"
  expect_refused POLICY_REFUSED "holds a container engine's socket" --mount "$h/a:/x"
  # Below the socket's directory, or beside it, is fine.
  mkdir -p "$h/c"
  run --separate-stderr sbx run --runtime runc --block-network --mount "$h/c:/x" -- true
  expect_status 0
}

@test "mount: sbx.conf's mount_deny and mount_allow" {
  local a b c
  a=$(host_dir allowed)
  b=$(host_dir denied)
  c=$(host_dir other)
  mkdir -p "$a/secret"
  sbx_write_conf "mount_deny = $b $a/secret
mount_allow = $a $b"
  expect_refused POLICY_REFUSED "denied by sbx.conf's mount_deny" --mount "$b:/x"
  expect_refused POLICY_REFUSED "denied by sbx.conf's mount_deny" --mount "$a/secret:/x"
  expect_refused POLICY_REFUSED "not at or below a path of sbx.conf's mount_allow" --mount "$c:/x"
  run --separate-stderr sbx run --runtime runc --block-network --mount "$a:/x" -- cat /x/hello
  expect_status 0
  expect_eq "$output" "from the host"
  # A bad key value is refused as sbx.conf always is.
  sbx_write_conf "mount_deny = relative/path"
  expect_error INVALID_ARGUMENT create --runtime runc --mount "$a:/x"
  expect_contains "$output" "mount_deny"
}

@test "mount: a symlink anywhere on the path is refused, naming it" {
  local h
  h=$(host_dir real)
  mkdir -p "$h/sub"
  ln -s "$h" "$SBX_TEST_DIR/host/link"
  ln -s sub "$h/sublink"
  expect_refused POLICY_REFUSED "\`$SBX_TEST_DIR/host/link\` is a symbolic link" --mount "$SBX_TEST_DIR/host/link/sub:/x"
  expect_refused POLICY_REFUSED "\`$SBX_TEST_DIR/host/link\` is a symbolic link" --mount "$SBX_TEST_DIR/host/link:/x"
  expect_refused POLICY_REFUSED "\`$h/sublink\` is a symbolic link" --mount "$h/sublink:/x"
}

@test "mount: /etc reached through a bind mount elsewhere is /etc" {
  local h
  h=$(host_dir alias)
  run --separate-stderr unshare -m --propagation private sh -c \
    'mount --bind /etc "$1" && exec "$2" --json create --runtime runc --mount "$1/ssl:/x"' sh "$h" "$SBX_BIN"
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" POLICY_REFUSED "code"
  expect_contains "$output" "/etc"
}

@test "mount: bad values are refused with their code" {
  local h
  h=$(host_dir bad)
  echo x >"$SBX_TEST_DIR/host/file"
  expect_refused INVALID_ARGUMENT "is not HOST:DEST" --mount "$h"
  expect_refused INVALID_ARGUMENT "the mode is ro or rw" --mount "$h:/x:rx"
  expect_refused PATH_INVALID "a \`..\` component is not allowed" --mount "$h/../bad:/x"
  expect_refused PATH_INVALID "not absolute" --mount "$h:x"
  expect_refused PATH_INVALID "the sandbox's root cannot be a mount" --mount "$h:/"
  expect_refused PATH_INVALID "/proc is the runtime's" --mount "$h:/proc/x"
  expect_refused PATH_INVALID "is not a directory" --mount "$SBX_TEST_DIR/host/file:/x"
  expect_refused NOT_FOUND "does not exist" --mount "$h/missing:/x"
  expect_refused INVALID_ARGUMENT "the destination of two mounts" --mount "$h:/x" --mount "$h:/x/"
}

# race RT N: N creates with --mount race/a/b while race/a is swapped, as
# fast as renames go, between a directory and a symlink to race/evil; a
# sandbox that starts must show the real directory's marker, a refused one
# must be refused for the symlink (or the path's absence), never the
# symlink's target mounted.
race () {
  local rt=$1 n=$2 i good=0 refused=0 r=$SBX_TEST_DIR/host/race
  require_runtime "$rt"
  mkdir -p "$r/a/b" "$r/evil/b"
  echo good >"$r/a/b/marker"
  echo evil >"$r/evil/b/marker"
  ln -s "$r/evil" "$r/a.link"
  py -c '
import os, sys
r = sys.argv[1]
a, d, l = r + "/a", r + "/a.dir", r + "/a.link"
while not os.path.exists(r + "/stop"):
    os.rename(a, d); os.rename(l, a); os.rename(a, l); os.rename(d, a)
' "$r" &
  local swapper=$!
  for i in $(seq "$n"); do
    run --separate-stderr sbx run --runtime "$rt" --block-network --mount "$r/a/b:/m" -- cat /m/marker
    case $status in
      0)
        [ "$output" = good ] || { touch "$r/stop"; wait "$swapper"; fail "round $i mounted the wrong directory: $output"; }
        good=$((good + 1)) ;;
      125)
        case $stderr in
          "sbx: POLICY_REFUSED: "*"is a symbolic link"* | "sbx: NOT_FOUND: "*) refused=$((refused + 1)) ;;
          *) touch "$r/stop"; wait "$swapper"; fail "round $i: unexpected error: $stderr" ;;
        esac ;;
      *) touch "$r/stop"; wait "$swapper"; fail "round $i: status $status: $output $stderr" ;;
    esac
  done
  touch "$r/stop"
  wait "$swapper"
  echo "# $rt: $n rounds, $good mounted the directory, $refused refused" >&3
  [ "$good" -gt 0 ] || [ "$refused" -gt 0 ] || fail "no round ran"
}

@test "mount: a component swapped for a symlink during --mount never mounts its target (runc)" {
  race runc 30
}

@test "mount: a component swapped for a symlink during --mount never mounts its target (runsc)" {
  race runsc 12
}
