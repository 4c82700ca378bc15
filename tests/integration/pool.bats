#!/usr/bin/env bats
# Warm pools (sbx pool, create/run --pool): parked members hidden and cut
# off, claims that apply their options (cgroup, nftables, env) and never
# share a member, an empty pool made cold, pool rm leaving claimed ones
# alone, a killed fill settled, mismatched options refused; the teardown's
# leak check runs after each test.

load ../helpers/common

setup () {
  sbx_setup
  sbx_import_payload
}

# cgroup_file CONTROLLER ID FILE: the sandbox's cgroup file (v1 or v2).
cgroup_file () {
  if [ -d "/sys/fs/cgroup/$1/sbx-$SBX_TAG/$2" ]; then
    echo "/sys/fs/cgroup/$1/sbx-$SBX_TAG/$2/$3"
  else
    echo "/sys/fs/cgroup/sbx-$SBX_TAG/$2/$3"
  fi
}

mem_limit () {
  local f
  f=$(cgroup_file memory "$1" memory.limit_in_bytes)
  [ -f "$f" ] || f=$(cgroup_file memory "$1" memory.max)
  cat "$f"
}

cpu_quota () {
  local f
  f=$(cgroup_file cpu "$1" cpu.cfs_quota_us)
  if [ -f "$f" ]; then
    cat "$f"
  else
    awk '{ print $1 }' "$(cgroup_file cpu "$1" cpu.max)"
  fi
}

# pool_count POOL FIELD: parked or creating, as pool ls --json says.
pool_count () {
  sbx --json pool ls | jpipe "[p['$2'] for p in d if p['name'] == '$1'][0]"
}

# wait_parked POOL N: until the pool has N parked members (its fill done).
wait_parked () {
  local until=$((SECONDS + 60)) n=
  while [ $SECONDS -le $until ]; do
    n=$(pool_count "$1" parked)
    [ "$n" = "$2" ] && [ "$(pool_count "$1" creating)" = 0 ] && return 0
    sleep 0.2
  done
  fail "pool $1: expected $2 parked within 60 s, last seen ${n:-?}"
}

# parked_ids: the ids of the running parked sandboxes (ls --all).
parked_ids () {
  sbx --json ls --all | jpipe '"\n".join(s["id"] for s in d if s.get("parked") and s["state"] == "running")'
}

@test "pool: members are parked and hidden; a claim applies name, env, cwd, limits, allow-list, lifetimes (runc)" {
  require_runtime runc
  run --separate-stderr sbx pool create p1 --size 2 --runtime runc --image payload --memory 256Mi -e A=pool
  expect_status 0
  expect_eq "$output" p1 "pool create prints the name"
  expect_eq "$(pool_count p1 parked)" 2 "parked"
  expect_eq "$(sbx ls -q)" "" "sbx ls hides parked members"
  local parked one
  parked=$(parked_ids)
  expect_eq "$(printf '%s\n' "$parked" | grep -c .)" 2 "ls --all shows them"
  one=$(printf '%s\n' "$parked" | head -1)
  run --separate-stderr sbx --json status "$one"
  expect_eq "$(jget '[d["network"]["mode"], d["deadline"], d["options"]["pool"], d["parked"]]')" \
    '["block", 0, "p1", true]' "a parked member: network cut, no deadline"
  run --separate-stderr sbx ps -q "$one"
  expect_eq "$output" "" "a parked member has run nothing but sbx-init"
  expect_error BUSY exec "$one" -- true
  expect_error BUSY update "$one" --timeout 10

  local t0 id
  t0=$(date +%s)
  run --separate-stderr sbx create --pool p1 --name claimed -e FOO=bar --cwd /tmp --cpu 0.5 --memory 300Mi \
    --pids 200 --allow 198.51.100.7/32 --keep-warm 900 --timeout 1200
  expect_status 0
  id=$output
  expect_not_contains "$stderr" "cold"
  printf '%s\n' "$parked" | grep -qx "$id" || fail "$id was not one of the parked members"
  run --separate-stderr sbx --json status claimed
  expect_eq "$(jget '[d["id"], d["state"], d["parked"], d["options"]["pool"], d["network"]["mode"], d["network"]["allow"]]')" \
    "[\"$id\", \"running\", false, \"p1\", \"allow\", [\"198.51.100.7/32\"]]" "status after the claim"
  expect_eq "$(jget '[d["options"]["keep_warm"], d["options"]["timeout"]]')" "[900, 1200]" "lifetimes"
  local dl
  dl=$(jget 'd["deadline"]')
  [ "$dl" -ge $((t0 + 1200)) ] && [ "$dl" -le $((t0 + 1260)) ] || fail "deadline $dl is not claim time + 1200"
  expect_eq "$(mem_limit "$id")" 314572800 "memory limit in the cgroup"
  expect_eq "$(cpu_quota "$id")" 50000 "cpu quota in the cgroup"
  expect_eq "$(cat "$(cgroup_file pids "$id" pids.max)")" 200 "pids.max"
  nft list set inet sbx "sandbox-$id-v4" | grep -q 198.51.100.7 || fail "the allow-list is not in nftables"
  run --separate-stderr sbx exec claimed -- sh -c 'echo $A $FOO; pwd'
  expect_status 0
  expect_eq "$output" "$(printf 'pool bar\n/tmp')" "env and cwd in an exec"
  expect_eq "$(sbx ls -q)" "$id" "the claimed sandbox is listed"
  wait_parked p1 2

  # No trace of a previous claim: the next member has none of its files,
  # env or processes.
  sbx exec claimed -- sh -c 'echo x >/workspace/mark; echo y >/tmp/mark'
  sbx exec -d claimed -- sleep 300 >/dev/null
  sbx rm -f claimed >/dev/null
  run --separate-stderr sbx create --pool p1
  expect_status 0
  id=$output
  run --separate-stderr sbx ps -q "$id"
  expect_eq "$output" "" "no process of the previous claim"
  run --separate-stderr sbx exec "$id" -- sh -c 'cat /workspace/mark /tmp/mark 2>/dev/null; echo "[$FOO]"'
  expect_eq "$output" "[]" "no file or env of the previous claim"
  run --separate-stderr sbx --json status "$id"
  expect_eq "$(jget '[d.get("name"), d["network"]["mode"], d["options"]["memory"]]')" \
    '[null, "open", 268435456]' "the pool's options where the claim gave none"
  sbx rm -f "$id" >/dev/null
  wait_parked p1 2
  sbx pool rm p1
  expect_eq "$(parked_ids)" "" "pool rm ends the parked members"
}

@test "pool: 20 concurrent claims never share a sandbox" {
  require_runtime runc
  sbx pool create race --size 3 --runtime runc --image payload --block-network >/dev/null
  local i pids=
  for i in $(seq 20); do
    sbx create --pool race >"$SBX_TEST_DIR/claim.$i" 2>"$SBX_TEST_DIR/claim.$i.err" &
    pids="$pids $!"
  done
  local p rc=0
  for p in $pids; do wait "$p" || rc=1; done
  [ $rc = 0 ] || fail "a claim failed: $(cat "$SBX_TEST_DIR"/claim.*.err)"
  local all
  all=$(cat "$SBX_TEST_DIR"/claim.? "$SBX_TEST_DIR"/claim.?? | sort)
  expect_eq "$(printf '%s\n' "$all" | grep -c .)" 20 "20 sandboxes"
  expect_eq "$(printf '%s\n' "$all" | uniq | grep -c .)" 20 "all different"
  local warm
  warm=$(grep -L cold "$SBX_TEST_DIR"/claim.*.err | wc -l)
  [ "$warm" -ge 3 ] || fail "only $warm claims were served by the pool"
  for i in $all; do
    [ "$(state_of "$i")" = running ] || fail "$i is not running"
  done
  sbx rm -f $all >/dev/null
  wait_parked race 3
  sbx pool rm race >/dev/null
}

@test "pool: an empty pool makes the sandbox cold and says so; run --pool (runsc)" {
  require_runtime runsc
  sbx pool create e1 --size 1 --runtime runsc --image payload --block-network >/dev/null
  # The fill waits while the test holds its lock: the pool stays empty.
  local lockfd a b
  exec {lockfd}>>"$SBX_ROOT/pools/e1/fill.lock"
  flock "$lockfd"
  run --separate-stderr sbx create --pool e1 -e X=1
  expect_status 0
  a=$output
  expect_not_contains "$stderr" cold
  run --separate-stderr sbx create --pool e1 -e X=2
  expect_status 0
  b=$output
  expect_contains "$stderr" "pool e1 is empty"
  run --separate-stderr sbx --json status "$b"
  expect_eq "$(jget '[d["options"]["pool"], d["parked"], d["options"]["env"]]')" '["e1", false, ["X=2"]]' "cold"
  exec {lockfd}>&-
  wait_parked e1 1
  run --separate-stderr sbx run --rm --pool e1 -- sh -c 'echo hi; exit 3'
  expect_status 3
  expect_eq "$output" hi "run --pool"
  sbx rm -f "$a" "$b" >/dev/null
  wait_parked e1 1
  sbx pool rm e1 >/dev/null
}

@test "pool: rm removes parked members and leaves claimed ones alone" {
  require_runtime runc
  sbx pool create r1 --size 2 --runtime runc --image payload --block-network >/dev/null
  local id
  id=$(sbx create --pool r1)
  wait_parked r1 2
  run --separate-stderr sbx pool rm r1
  expect_status 0
  expect_eq "$(parked_ids)" "" "no parked member left"
  expect_eq "$(sbx pool ls -q)" "" "no pool"
  expect_eq "$(state_of "$id")" running "the claimed one runs"
  run --separate-stderr sbx exec "$id" -- echo ok
  expect_eq "$output" ok "and serves"
  expect_error NOT_FOUND pool rm r1
  expect_error NOT_FOUND create --pool r1
  sbx rm -f "$id" >/dev/null
}

@test "pool: a fill killed with -9 leaves nothing broken; fill and gc settle it" {
  require_runtime runc
  sbx pool create k1 --size 3 --runtime runc --image payload --block-network &
  local creator=$! until=$((SECONDS + 60))
  # Killed while it makes a member (an entry in creating/).
  while [ $SECONDS -le $until ]; do
    [ -n "$(ls "$SBX_ROOT/pools/k1/creating" 2>/dev/null)" ] && break
    sleep 0.02
  done
  [ -n "$(ls "$SBX_ROOT/pools/k1/creating" 2>/dev/null)" ] || fail "no member was being made"
  kill -9 "$creator"
  wait "$creator" || true
  run --separate-stderr sbx pool fill k1
  expect_status 0
  wait_parked k1 3
  expect_eq "$(parked_ids | sort)" "$(ls "$SBX_ROOT/pools/k1/parked" | sort)" "every running parked sandbox is listed"
  # A pool whose removal was cut short: gc finishes it.
  rm "$SBX_ROOT/pools/k1/pool.json"
  sbx gc >/dev/null
  expect_eq "$(parked_ids)" "" "gc ended the members"
  [ ! -e "$SBX_ROOT/pools/k1" ] || fail "gc left the pool's directory"
}

@test "pool: options a started sandbox cannot change must be the pool's (INVALID_ARGUMENT naming it)" {
  require_runtime runc
  sbx pool create m1 --size 1 --runtime runc --image payload --block-network --disk 64Mi >/dev/null
  local args
  for args in "--runtime runsc" "--image busybox" "--disk 128Mi" "--allow 198.51.100.7/32" "--volume v1:/v"; do
    # shellcheck disable=SC2086
    expect_error INVALID_ARGUMENT create --pool m1 $args
    expect_contains "$output" "${args%% *}"
  done
  expect_error INVALID_ARGUMENT create --pool m1 -- sleep 1
  expect_contains "$output" "initial command"
  # Given and equal is fine; nothing above touched the pool.
  expect_eq "$(pool_count m1 parked)" 1 "the member is still parked"
  run --separate-stderr sbx create --pool m1 --runtime runc --disk 64Mi --block-network
  expect_status 0
  sbx rm -f "$output" >/dev/null
  expect_error INVALID_ARGUMENT pool create m2 --runtime runc
  expect_error INVALID_ARGUMENT pool create m2 --size 1 --name x
  expect_error INVALID_ARGUMENT pool create 'bad/name' --size 1
  expect_error BUSY pool create m1 --size 1 --runtime runc --block-network
  expect_error NOT_FOUND create --pool nosuch
  wait_parked m1 1
  sbx pool rm m1 >/dev/null
}
