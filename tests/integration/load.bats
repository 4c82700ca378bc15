#!/usr/bin/env bats
# Load: many sequential `sbx run --rm` leave the root's disk, the host's
# open files and sbx's processes where they were; many concurrent creates
# each succeed or fail with a clear code; a sandbox flooding its output does
# not tear the output of 32 execs running beside it.
#
# The counts are parameters: SBX_LOAD_RUNS (sequential runs, 100 in
# `make check` and CI, 1000 in the README's Proof), SBX_LOAD_RUNC and
# SBX_LOAD_RUNSC (concurrent creates, 20 and 10 in `make check` and CI, 100
# and 50 in the Proof), SBX_LOAD_EXECS (execs beside the flood, 32).

load ../helpers/common

# Kilobytes under this test's ROOT and RUN.
disk_kb () {
  du -sk "$SBX_ROOT" "$SBX_RUN_ROOT" 2>/dev/null | awk '{ n += $1 } END { print n + 0 }'
}

# Open files on the host (allocated file handles, /proc/sys/fs/file-nr).
host_files () {
  awk '{ print $1 }' /proc/sys/fs/file-nr
}

# Unreclaimable kernel memory in kB: what netns, cgroups, mounts and their
# leftovers cost.
host_sunreclaim_kb () {
  awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

@test "load: sequential sbx run --rm: disk, open files and kernel memory flat, nothing left [runc]" {
  require_runtime runc
  local n=${SBX_LOAD_RUNS:-100} i disk0 files0 slab0 disk1 files1 slab1 out
  # Warm up: the store's first files (top layers, disk templates) are made
  # once, by the first run.
  for i in 1 2 3; do
    sbx run --rm --runtime runc -- true >/dev/null
  done
  sbx_wait_teardowns
  disk0=$(disk_kb) files0=$(host_files) slab0=$(host_sunreclaim_kb)
  for i in $(seq "$n"); do
    out=$(sbx run --rm --runtime runc -- echo "run $i" 2>&1) || fail "run $i of $n failed: $out"
    [ "$out" = "run $i" ] || fail "run $i of $n printed: $out"
  done
  sbx_wait_teardowns
  disk1=$(disk_kb) files1=$(host_files) slab1=$(host_sunreclaim_kb)
  printf '# %s runs: disk %s -> %s kB, open files %s -> %s, SUnreclaim %s -> %s kB\n' \
    "$n" "$disk0" "$disk1" "$files0" "$files1" "$slab0" "$slab1" >&3
  expect_eq "$(sbx ls -q | wc -l)" 0 "sandboxes left"
  # Flat: the root's disk to a few kB (directories' sizes), the host's
  # handles and kernel memory within what other tests running at the same
  # time move them by, far below one a run.
  [ "$disk1" -le $((disk0 + 64)) ] || fail "the root grew by $((disk1 - disk0)) kB over $n runs"
  [ "$files1" -le $((files0 + 2000)) ] || fail "open files grew by $((files1 - files0)) over $n runs"
  [ "$slab1" -le $((slab0 + 65536)) ] || fail "SUnreclaim grew by $((slab1 - slab0)) kB over $n runs"
  # And nothing of the root is left, before gc reaps anything.
  out=$(sbx_leaks)
  [ -z "$out" ] || fail "left before gc: $out"
}

# concurrent_creates RT N: N `sbx create` at once; each prints an id, or
# fails with exit 125 and one of the codes that say "not now".
concurrent_creates () {
  local rt=$1 n=$2 i pids=() rc ok=0 refused=0 code
  require_runtime "$rt"
  for i in $(seq "$n"); do
    "$SBX_BIN" --json create --runtime "$rt" --block-network >"$BATS_TEST_TMPDIR/c.$i" 2>"$BATS_TEST_TMPDIR/e.$i" &
    pids+=($!)
  done
  for i in $(seq "$n"); do
    rc=0
    wait "${pids[$((i - 1))]}" || rc=$?
    if [ "$rc" -eq 0 ]; then
      ok=$((ok + 1))
      continue
    fi
    [ "$rc" -eq 125 ] || fail "create $i: exit $rc: $(cat "$BATS_TEST_TMPDIR/e.$i")" || return
    code=$(jpipe 'd["error"]["code"]' <"$BATS_TEST_TMPDIR/c.$i") || return
    case $code in
      RESOURCE_EXHAUSTED | BUSY) refused=$((refused + 1)) ;;
      *) fail "create $i: $code: $(cat "$BATS_TEST_TMPDIR/e.$i")" || return ;;
    esac
  done
  printf '# %s concurrent creates [%s]: %s made, %s refused\n' "$n" "$rt" "$ok" "$refused" >&3
  expect_eq "$(sbx ls -q | wc -l)" "$ok" "sandboxes listed"
  # shellcheck disable=SC2046
  sbx terminate --rm $(sbx ls -q) >/dev/null
  sbx_wait_teardowns
}

@test "load: concurrent creates all succeed or fail with a clear code [runc]" {
  concurrent_creates runc "${SBX_LOAD_RUNC:-20}"
}

@test "load: concurrent creates all succeed or fail with a clear code [runsc]" {
  concurrent_creates runsc "${SBX_LOAD_RUNSC:-10}"
}

@test "load: a sandbox flooding its output keeps every concurrent exec's output whole [runc]" {
  require_runtime runc
  local n=${SBX_LOAD_EXECS:-32} id i pids=() rc
  id=$(sbx create --runtime runc -- sh -c 'yes flood-flood-flood-flood-flood-flood')
  for i in $(seq "$n"); do
    sbx exec "$id" -- sh -c "seq 1 2000 | sed 's/^/$i-/'" >"$BATS_TEST_TMPDIR/out.$i" 2>"$BATS_TEST_TMPDIR/err.$i" &
    pids+=($!)
  done
  for i in $(seq "$n"); do
    rc=0
    wait "${pids[$((i - 1))]}" || rc=$?
    expect_eq "$rc" 0 "exit status of exec $i ($(cat "$BATS_TEST_TMPDIR/err.$i"))"
    seq 1 2000 | sed "s/^/$i-/" | cmp -s - "$BATS_TEST_TMPDIR/out.$i" \
      || fail "exec $i: output not whole ($(wc -l <"$BATS_TEST_TMPDIR/out.$i") lines)"
  done
  expect_eq "$(state_of "$id")" running "the flooding sandbox's state"
  sbx terminate --rm "$id" >/dev/null
}
