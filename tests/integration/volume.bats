#!/usr/bin/env bats
# Named volumes: sbx volume create/ls/inspect/rm/export/import and --volume
# NAME:/path[:ro] on create and run, under both runtimes: shared by every
# sandbox that mounts it (writes seen at once), :ro really read-only, --size
# enforced with ENOSPC through one loop device per volume, BUSY on rm while
# a sandbox uses it, data outliving sandboxes, tar round trips with every
# entry checked, bad names and paths refused, nothing leaked.

load ../helpers/common

setup () {
  sbx_setup
}

MiB=1048576

# vexec ID CMD: a shell command in sandbox ID; its stdout and stderr in $output.
vexec () {
  local id=$1
  shift
  run sbx exec "$id" -- sh -c "$*"
}

# The loop devices bound to volume NAME's image.
vol_loops () {
  losetup -l -n -O NAME,BACK-FILE 2>/dev/null | grep -cF "$SBX_ROOT/volumes/$1/disk.img" || true
}

@test "volume: create, ls, inspect, rm, and their errors" {
  run --separate-stderr sbx volume create data
  expect_status 0
  expect_eq "$output" "data" "create prints the name"
  run --separate-stderr sbx volume create --size 32Mi small
  expect_status 0
  [ -f "$SBX_ROOT/volumes/small/disk.img" ] || fail "no image for a sized volume"
  [ -d "$SBX_ROOT/volumes/data/data" ] || fail "no directory for a plain volume"
  run --separate-stderr sbx volume ls
  expect_status 0
  expect_contains "$output" "NAME"
  expect_contains "$output" "data"
  expect_contains "$output" "32.0 MiB"
  run --separate-stderr sbx volume ls -q
  expect_status 0
  expect_eq "$output" "$(printf 'data\nsmall')" "ls -q"
  run --separate-stderr sbx --json volume ls
  expect_status 0
  expect_eq "$(printf '%s' "$output" | jget '" ".join(v["name"] for v in d)')" "data small" "ls --json names"
  expect_eq "$(printf '%s' "$output" | jget 'd[1]["size"]')" $((32 * MiB)) "ls --json size"
  run --separate-stderr sbx volume inspect data small
  expect_status 0
  expect_eq "$(printf '%s' "$output" | jget '"%s %d %d" % (d[0]["name"], d[0]["size"], len(d[0]["sandboxes"]))')" \
    "data 0 0" "inspect data"
  local used
  used=$(printf '%s' "$output" | jget 'd[1]["used"]')
  [ "$used" -ge 0 ] && [ "$used" -lt $((32 * MiB)) ] || fail "inspect small: used $used"
  [ "$(printf '%s' "$output" | jget 'd[1]["created"]')" -gt 0 ] || fail "no creation time"
  expect_error BUSY volume create data
  expect_error INVALID_ARGUMENT volume create 'bad/name'
  expect_error INVALID_ARGUMENT volume create .hidden
  expect_error INVALID_ARGUMENT volume create --size 1Ki tiny
  expect_error INVALID_ARGUMENT volume create --size lots tiny
  expect_error INVALID_ARGUMENT volume frob data
  expect_error INVALID_ARGUMENT volume inspect
  expect_error INVALID_ARGUMENT volume ls --size 32Mi
  expect_error NOT_FOUND volume inspect nope
  expect_error NOT_FOUND volume rm nope
  expect_error NOT_FOUND volume export nope "$BATS_TEST_TMPDIR/x.tar"
  run --separate-stderr sbx volume rm data small
  expect_status 0
  run --separate-stderr sbx volume ls -q
  expect_eq "$output" "" "ls after rm"
  [ ! -e "$SBX_ROOT/volumes/data" ] || fail "the volume's directory is left"
}

shared () {
  local rt=$1 a b c
  require_runtime "$rt"
  sbx volume create --size 32Mi sized >/dev/null
  # "data" does not exist: the first create makes it, as podman does.
  a=$(sbx create --runtime "$rt" --volume data:/data --volume sized:/sized)
  b=$(sbx create --runtime "$rt" --volume data:/mnt/shared/ --volume sized:/s)
  run --separate-stderr sbx volume inspect data
  expect_status 0
  expect_eq "$(printf '%s' "$output" | jget '" ".join(sorted(d[0]["sandboxes"]))')" \
    "$(printf '%s\n' "$a" "$b" | sort | tr '\n' ' ' | sed 's/ $//')" "the users of data"
  vexec "$a" 'echo one >/data/f && echo big >/sized/g'
  expect_status 0
  # Seen at once in the other, without a sync: one file, not a copy.
  vexec "$b" 'cat /mnt/shared/f /s/g'
  expect_status 0
  expect_eq "$output" "$(printf 'one\nbig')" "b reads a's writes"
  vexec "$b" 'echo two >>/mnt/shared/f && rm /s/g'
  expect_status 0
  vexec "$a" 'cat /data/f; ls /sized'
  expect_status 0
  expect_eq "$output" "$(printf 'one\ntwo\nlost+found')" "a reads b's writes"
  # One loop device for the sized volume, however many mount it.
  expect_eq "$(vol_loops sized)" 1 "loop devices on the sized volume"
  # The data outlives both sandboxes.
  sbx rm -f "$a" "$b" >/dev/null
  expect_eq "$(cat "$SBX_ROOT/volumes/data/data/f")" "$(printf 'one\ntwo')" "the file on the host"
  run --separate-stderr sbx run --rm --runtime "$rt" --volume data:/d -- cat /d/f
  expect_status 0
  expect_eq "$output" "$(printf 'one\ntwo')" "a later sandbox reads it"
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ "$(vol_loops sized)" = 0 ] && break
    sleep 0.2
  done
  expect_eq "$(vol_loops sized)" 0 "loop devices left on the sized volume"
}

@test "volume: shared by two sandboxes, writes seen at once, data outlives them [runc]" { shared runc; }
@test "volume: shared by two sandboxes, writes seen at once, data outlives them [runsc]" { shared runsc; }

readonly_vol () {
  local rt=$1 id
  require_runtime "$rt"
  sbx volume create --size 32Mi sized >/dev/null
  sbx volume create plain >/dev/null
  echo keep >"$SBX_ROOT/volumes/plain/data/f"
  id=$(sbx create --runtime "$rt" --volume plain:/ro:ro --volume sized:/sro:ro --volume sized:/srw)
  vexec "$id" 'cat /ro/f; echo x >/ro/f; echo "w=$?"; touch /ro/new; echo "t=$?"; mkdir /sro/d; echo "m=$?"'
  expect_contains "$output" "keep"
  expect_contains "$output" "Read-only file system"
  expect_contains "$output" "w=1"
  expect_contains "$output" "t=1"
  expect_contains "$output" "m=1"
  # The same volume writable at another path: the read-only one is the
  # mount's flag, not the filesystem's.
  vexec "$id" 'echo y >/srw/y && cat /sro/y'
  expect_status 0
  expect_eq "$output" "y" "read-only view of a writable mount"
  expect_eq "$(cat "$SBX_ROOT/volumes/plain/data/f")" "keep" "the file on the host"
  [ ! -e "$SBX_ROOT/volumes/plain/data/new" ] || fail "a file was made through :ro"
  sbx rm -f "$id" >/dev/null
}

@test "volume: :ro is really read-only (EROFS inside) [runc]" { readonly_vol runc; }
@test "volume: :ro is really read-only (EROFS inside) [runsc]" { readonly_vol runsc; }

size_limit () {
  local rt=$1 id
  require_runtime "$rt"
  sbx volume create --size 32Mi small >/dev/null
  id=$(sbx create --runtime "$rt" --volume small:/small)
  vexec "$id" 'dd if=/dev/zero of=/small/big bs=1M count=256 2>&1; echo "dd=$?"; ls -l /small/big'
  expect_contains "$output" "No space left on device"
  expect_contains "$output" "dd=1"
  local size
  size=$(printf '%s\n' "$output" | awk '/big$/ {print $5}')
  [ -n "$size" ] && [ "$size" -le $((32 * MiB)) ] || fail "/small/big is $size bytes under a 32 MiB limit"
  # The host gives it at most its size.
  local host=$(($(stat -c %b "$SBX_ROOT/volumes/small/disk.img") * 512))
  [ "$host" -le $((33 * MiB)) ] || fail "the host gave $host bytes to a 32 MiB volume"
  run --separate-stderr sbx volume inspect small
  [ "$(printf '%s' "$output" | jget 'd[0]["used"]')" -ge $((16 * MiB)) ] || fail "used after filling: $output"
  sbx rm -f "$id" >/dev/null
}

@test "volume: --size is enforced, ENOSPC inside [runc]" { size_limit runc; }
@test "volume: --size is enforced, ENOSPC inside [runsc]" { size_limit runsc; }

busy_rm () {
  local rt=$1 id
  require_runtime "$rt"
  sbx volume create v >/dev/null
  id=$(sbx create --runtime "$rt" --volume v:/v)
  expect_error BUSY volume rm v
  expect_contains "$stderr" "$id"
  run --separate-stderr sbx status "$id"
  expect_contains "$output" "volume:     v:/v"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget '" ".join(d["options"]["volumes"])')" "v:/v" "options.volumes"
  # Ended but not removed: still its.
  sbx terminate "$id" >/dev/null
  expect_error BUSY volume rm v
  sbx rm "$id" >/dev/null
  run --separate-stderr sbx volume rm v
  expect_status 0
  [ ! -e "$SBX_ROOT/volumes/v" ] || fail "the volume is left"
}

@test "volume: rm is BUSY while a sandbox uses it, works once it is removed [runc]" { busy_rm runc; }
@test "volume: rm is BUSY while a sandbox uses it, works once it is removed [runsc]" { busy_rm runsc; }

@test "volume: run --rm with a volume, and sbx gc leaves volumes alone" {
  require_runtime runc
  run --separate-stderr sbx run --rm --runtime runc --volume keep:/k -- sh -c 'echo kept >/k/f'
  expect_status 0
  local id
  id=$(sbx create --runtime runc --volume keep:/k)
  run --separate-stderr sbx gc
  expect_status 0
  [ -f "$SBX_ROOT/volumes/keep/data/f" ] || fail "gc removed a volume's files"
  vexec "$id" 'cat /k/f'
  expect_eq "$output" "kept" "the volume after gc"
  sbx rm -f "$id" >/dev/null
  run --separate-stderr sbx gc
  expect_status 0
  run --separate-stderr sbx volume ls -q
  expect_eq "$output" "keep" "volumes after gc"
  # What a killed create or rm left: a volume renamed away, and one half
  # made an hour ago, go; one being made now stays.
  mkdir -p "$SBX_ROOT/volumes/.rm-dead/data" "$SBX_ROOT/volumes/.tmp-old/data" "$SBX_ROOT/volumes/.tmp-new"
  touch -d '2 hours ago' "$SBX_ROOT/volumes/.tmp-old"
  run --separate-stderr sbx gc
  expect_status 0
  [ ! -e "$SBX_ROOT/volumes/.rm-dead" ] && [ ! -e "$SBX_ROOT/volumes/.tmp-old" ] || fail "gc left debris"
  [ -d "$SBX_ROOT/volumes/.tmp-new" ] || fail "gc removed a volume being made"
  [ -f "$SBX_ROOT/volumes/keep/data/f" ] || fail "gc removed a volume"
}

crash () {
  local rt=$1 id mon
  require_runtime "$rt"
  sbx volume create --size 32Mi sized >/dev/null
  id=$(sbx create --runtime "$rt" --volume sized:/s)
  vexec "$id" 'echo before >/s/f && sync'
  expect_eq "$(vol_loops sized)" 1 "loop devices while it runs"
  mon=$(monitor_pid "$id")
  kill -9 "$mon"
  run --separate-stderr sbx gc
  expect_status 0
  run --separate-stderr sbx rm -f "$id"
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ "$(vol_loops sized)" = 0 ] && break
    sleep 0.2
  done
  expect_eq "$(vol_loops sized)" 0 "loop devices after the monitor was killed"
  # The volume is whole and usable again.
  run --separate-stderr sbx run --rm --runtime "$rt" --volume sized:/s -- cat /s/f
  expect_status 0
  expect_eq "$output" "before" "the volume after a crash"
  run --separate-stderr sbx volume rm sized
  expect_status 0
}

@test "volume: a killed monitor leaves no mount and no loop device [runc]" { crash runc; }
@test "volume: a killed monitor leaves no mount and no loop device [runsc]" { crash runsc; }

@test "volume: export and import round trip (files, stdin, stdout, sized)" {
  sbx volume create src >/dev/null
  local d=$SBX_ROOT/volumes/src/data
  mkdir -p "$d/dir/sub"
  echo hello >"$d/dir/sub/f"
  printf 'x%.0s' $(seq 1 5000) >"$d/big"
  ln -s /etc/passwd "$d/link"
  chmod 0751 "$d/dir"
  run --separate-stderr sbx volume export src "$BATS_TEST_TMPDIR/src.tar"
  expect_status 0
  run --separate-stderr tar -tf "$BATS_TEST_TMPDIR/src.tar"
  expect_contains "$output" "dir/sub/f"
  expect_contains "$output" "link"
  # Into a new volume (made by the import), and into a sized one.
  run --separate-stderr sbx volume import copy "$BATS_TEST_TMPDIR/src.tar"
  expect_status 0
  diff -r --no-dereference "$d" "$SBX_ROOT/volumes/copy/data" || fail "the copy differs"
  expect_eq "$(stat -c %a "$SBX_ROOT/volumes/copy/data/dir")" 751 "mode kept"
  expect_eq "$(readlink "$SBX_ROOT/volumes/copy/data/link")" /etc/passwd "symlink kept as a link"
  sbx volume create --size 32Mi sized >/dev/null
  run --separate-stderr sbx volume import sized - <"$BATS_TEST_TMPDIR/src.tar"
  expect_status 0
  sbx volume export sized - >"$BATS_TEST_TMPDIR/sized.tar"
  run --separate-stderr tar -xOf "$BATS_TEST_TMPDIR/sized.tar" dir/sub/f
  expect_eq "$output" "hello" "a file through a sized volume"
  run --separate-stderr tar -tf "$BATS_TEST_TMPDIR/sized.tar"
  expect_contains "$output" "big"
}

@test "volume: import refuses what a layer refuses, and changes nothing outside" {
  py - "$BATS_TEST_TMPDIR" <<'EOF'
import io, sys, tarfile
d = sys.argv[1]
def mk(name, entries):
    with tarfile.open("%s/%s.tar" % (d, name), "w", format=tarfile.GNU_FORMAT) as t:
        for e in entries:
            t.addfile(*e)
def f(name, data=b"x"):
    i = tarfile.TarInfo(name)
    i.size = len(data)
    return (i, io.BytesIO(data))
def special(name, kind, target=""):
    i = tarfile.TarInfo(name)
    i.type = kind
    i.linkname = target
    if kind == tarfile.CHRTYPE:
        i.devmajor, i.devminor = 1, 3
    return (i,)
mk("dotdot", [f("../../escape")])
mk("abs", [f("/abs-escape")])
mk("dev", [special("null", tarfile.CHRTYPE)])
mk("fifo", [special("fifo", tarfile.FIFOTYPE)])
mk("hardlink", [special("h", tarfile.LNKTYPE, "../../../etc/passwd")])
mk("through", [special("l", tarfile.SYMTYPE, "/tmp"), f("l/through-escape")])
EOF
  sbx volume create v >/dev/null
  local t
  for t in dotdot abs dev fifo hardlink through; do
    expect_error INVALID_ARGUMENT volume import v "$BATS_TEST_TMPDIR/$t.tar"
  done
  [ ! -e /abs-escape ] && [ ! -e /tmp/through-escape ] && [ ! -e "$SBX_ROOT/escape" ] \
    && [ ! -e "$SBX_ROOT/volumes/escape" ] || fail "an entry escaped the volume"
  [ ! -e "$SBX_ROOT/volumes/v/data/null" ] || fail "a device node was made"
  # A refused import that would have made the volume leaves none.
  expect_error INVALID_ARGUMENT volume import fresh "$BATS_TEST_TMPDIR/dev.tar"
  [ ! -e "$SBX_ROOT/volumes/fresh" ] || fail "a refused import left its volume"
  expect_error NOT_FOUND volume import v "$BATS_TEST_TMPDIR/none.tar"
}

@test "volume: bad --volume values are refused with their codes, nothing made" {
  local v
  for v in data nodest: 'bad/name:/x' ':/x' 'data:/x:rx' ; do
    expect_error INVALID_ARGUMENT create --volume "$v"
  done
  for v in data:relative data:/ 'data:/a/../b' 'data:/./a' data:/proc data:/proc/x data:/sys/fs data:/dev \
    data:/dev/shm data:/.sbx data:/.sbx/init; do
    expect_error PATH_INVALID create --volume "$v"
  done
  expect_error INVALID_ARGUMENT create --volume data:/x --volume other:/x/
  expect_error PATH_INVALID run --rm --volume data:/proc -- true
  run --separate-stderr sbx volume ls -q
  expect_eq "$output" "" "volumes after refused creates"
  run --separate-stderr sbx ls -q
  expect_eq "$output" "" "sandboxes after refused creates"
}
