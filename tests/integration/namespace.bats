#!/usr/bin/env bats
# Namespaces and their quotas (sbx.conf namespace_max_*), and --priority:
# the namespace in status, ls and stats and their --namespace filters; every
# quota refused with POLICY_REFUSED naming it and its use, create and update
# alike, and exactly max_sandboxes of 20 concurrent creates; the priority's
# CPU weight in the cgroup and its oom_score_adj on the sandbox's processes
# under both runtimes. The runtime matters only to the priority tests: the
# rest run on runc with no network.

load ../helpers/common

# quota_conf LINES: this test's sbx.conf with LINES (namespace keys) added.
quota_conf () {
  sbx_write_conf "$1"
}

# cgroup_file CONTROLLER ID FILE: the sandbox's cgroup file (v1 or v2).
cgroup_file () {
  if [ -d "/sys/fs/cgroup/$1/sbx-$SBX_TAG/$2" ]; then
    echo "/sys/fs/cgroup/$1/sbx-$SBX_TAG/$2/$3"
  else
    echo "/sys/fs/cgroup/sbx-$SBX_TAG/$2/$3"
  fi
}

mk () {
  sbx create --runtime runc --block-network "$@"
}

@test "namespace: shown by status and ls, filtered by ls and stats --namespace" {
  a=$(mk)
  b=$(mk --namespace team-a --name in-a)
  run --separate-stderr sbx status "$b"
  expect_contains "$output" "namespace:  team-a"
  expect_contains "$(sbx status "$a")" "namespace:  default"
  expect_eq "$(sbx --json status "$b" | jpipe 'd["namespace"]')" team-a "status --json"
  expect_eq "$(sbx --json status "$a" | jpipe 'd["namespace"]')" default "status --json of a default one"
  expect_eq "$(sbx ls -q --namespace team-a)" "$b" "ls --namespace team-a"
  expect_eq "$(sbx ls -q --namespace default)" "$a" "ls --namespace default"
  expect_eq "$(sbx ls -q --namespace nobody)" "" "ls --namespace of an empty one"
  run --separate-stderr sbx ls
  expect_contains "$output" "NAMESPACE"
  expect_contains "$(printf '%s\n' "$output" | grep "$b")" "in-a             team-a"
  expect_eq "$(sbx --json ls --namespace team-a | jpipe '[s["namespace"] for s in d]')" '["team-a"]' "ls --json"
  # stats: the counts of one namespace, and a row for each.
  expect_eq "$(sbx --json stats --namespace team-a | jpipe '[d["running"], d["total"], [(n["name"], n["sandboxes"]) for n in d["namespaces"]]]')" \
    '[1, 1, [["team-a", 1]]]' "stats --namespace team-a"
  expect_eq "$(sbx --json stats | jpipe '[d["total"], [(n["name"], n["sandboxes"], n["cpu"], n["memory"]) for n in d["namespaces"]]]')" \
    '[2, [["default", 1, 1.0, 1073741824], ["team-a", 1, 1.0, 1073741824]]]' "stats per namespace"
  run --separate-stderr sbx stats
  expect_contains "$output" "NAMESPACE"
  expect_contains "$(printf '%s\n' "$output" | grep '^team-a ')" "1 "
  # An ended sandbox is no longer counted, though listed until removed.
  sbx terminate "$b" >/dev/null
  expect_eq "$(sbx --json stats --namespace team-a | jpipe '[d["terminated"], d["namespaces"][0]["sandboxes"]]')" \
    "[1, 0]" "stats after terminate"
  expect_eq "$(sbx ls -q --namespace team-a)" "$b" "ls lists the ended one"
  sbx rm -f "$a" "$b" >/dev/null
}

@test "namespace: every quota refused with POLICY_REFUSED, its use named, nothing made" {
  quota_conf "namespace_max_sandboxes = q 1
namespace_max_cpu = c 1.5
namespace_max_memory = m 512Mi
namespace_max_cpu = m 64"
  q=$(mk --namespace q)
  expect_error POLICY_REFUSED create --runtime runc --block-network --namespace q
  expect_contains "$output" "namespace q: quota max_sandboxes = 1 reached (in use: 1 sandboxes"
  # CPU: the sum of --cpu; an unlimited one counts as the host's cores.
  c=$(mk --namespace c --cpu 1)
  expect_error POLICY_REFUSED create --runtime runc --block-network --namespace c --cpu 1
  expect_contains "$output" "namespace c: quota max_cpu = 1.5 reached (in use: 1 cores; asked: 1 cores)"
  expect_error POLICY_REFUSED create --runtime runc --block-network --namespace c --cpu 0
  expect_contains "$output" "(--cpu 0: the host's)"
  c2=$(mk --namespace c --cpu 0.5)
  # Memory: the sum of --memory.
  m=$(mk --namespace m --memory 256Mi)
  expect_error POLICY_REFUSED create --runtime runc --block-network --namespace m --memory 512Mi
  expect_contains "$output" "namespace m: quota max_memory = 512 MiB reached (in use: 256 MiB; asked: 512 MiB)"
  expect_eq "$(sbx ls -q | wc -l)" 4 "sandboxes after the refusals"
  # update: raising past a quota is refused and changes nothing; lowering is not.
  expect_error POLICY_REFUSED update "$c" --cpu 1.5
  expect_contains "$output" "quota max_cpu = 1.5 reached (in use: 0.5 cores; asked: 1.5 cores)"
  expect_eq "$(sbx --json status "$c" | jpipe 'd["options"]["cpu"]')" 1 "cpu after a refused update"
  expect_eq "$(cat "$(cgroup_file cpu "$c" cpu.cfs_quota_us)" 2>/dev/null || awk '{print $1}' "$(cgroup_file cpu "$c" cpu.max)")" \
    100000 "cpu quota in the cgroup after a refused update"
  expect_error POLICY_REFUSED update "$m" --memory 768Mi
  expect_contains "$output" "quota max_memory = 512 MiB reached"
  run --separate-stderr sbx update "$c" --cpu 0.25
  expect_status 0
  run --separate-stderr sbx update "$m" --memory 512Mi
  expect_status 0
  # An ended sandbox frees its place.
  sbx terminate "$q" >/dev/null
  q2=$(mk --namespace q)
  # The quota's use, in stats.
  expect_eq "$(sbx --json stats --namespace c | jpipe '[(n["sandboxes"], n["cpu"], n["max_cpu"], n["max_sandboxes"]) for n in d["namespaces"]]')" \
    '[[2, 0.75, 1.5, null]]' "stats of namespace c"
  sbx rm -f "$q" "$q2" "$c" "$c2" "$m" >/dev/null
}

@test "namespace: 20 concurrent creates against max_sandboxes = 5 make exactly 5" {
  quota_conf "namespace_max_sandboxes = burst 5"
  local i
  for i in $(seq 20); do
    "$SBX_BIN" --json create --runtime runc --block-network --namespace burst --keep-warm 60 \
      >"$BATS_TEST_TMPDIR/out.$i" 2>"$BATS_TEST_TMPDIR/err.$i" &
  done
  wait
  local made=0 refused=0
  for i in $(seq 20); do
    if jpipe 'd["id"]' <"$BATS_TEST_TMPDIR/out.$i" >/dev/null 2>&1; then
      made=$((made + 1))
    elif [ "$(jpipe 'd["error"]["code"]' <"$BATS_TEST_TMPDIR/out.$i")" = POLICY_REFUSED ]; then
      refused=$((refused + 1))
    else
      fail "create $i: $(cat "$BATS_TEST_TMPDIR/out.$i" "$BATS_TEST_TMPDIR/err.$i")"
    fi
  done
  expect_eq "$made $refused" "5 15" "made and refused"
  expect_eq "$(sbx ls -q --namespace burst | wc -l)" 5 "sandboxes in the namespace"
  expect_eq "$(sbx --json stats --namespace burst | jpipe 'd["running"]')" 5 "running"
  sbx rm -f $(sbx ls -q) >/dev/null
}

# check_priority RT ID P SHARES WEIGHT ADJ: the priority's CPU weight in the
# sandbox's cgroup, and its oom_score_adj on every host process of the
# sandbox (runc: the container's; runsc: gVisor's sandbox, gofer and runsc
# itself).
check_priority () {
  local rt=$1 id=$2 p=$3 shares=$4 weight=$5 adj=$6 f pids pid
  f=$(cgroup_file cpu "$id" cpu.shares)
  if [ -f "$f" ]; then
    expect_eq "$(cat "$f")" "$shares" "cpu.shares at priority $p"
  else
    expect_eq "$(cat "$(cgroup_file cpu "$id" cpu.weight)")" "$weight" "cpu.weight at priority $p"
  fi
  f=$(cgroup_file cpu "$id" ctr/cgroup.procs)
  pids=$(cat "$f")
  [ -n "$pids" ] || fail "no process in $f"
  for pid in $pids; do
    expect_eq "$(cat "/proc/$pid/oom_score_adj")" "$adj" "oom_score_adj of $pid ($(cat "/proc/$pid/comm"))"
  done
  if [ "$rt" = runc ]; then
    expect_eq "$(cat "/proc/$(container_pid runc "$id")/oom_score_adj")" "$adj" "the container's init"
  fi
  expect_contains "$(sbx status "$id")" "priority:   $p ("
  expect_eq "$(sbx --json status "$id" | jpipe 'd["options"]["priority"]')" "$p" "status --json priority"
}

# Priority 8 at create, 2 by sbx update: both reach the cgroup and every
# process, and a process started after the update has the new value.
priority_test () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --block-network --priority 8)
  check_priority "$rt" "$id" 8 2896 283 200
  run --separate-stderr sbx --json update "$id" --priority 2
  expect_status 0
  expect_eq "$(jget 'd["priority"]')" 2 "update --json priority"
  check_priority "$rt" "$id" 2 362 35 800
  if [ "$rt" = runc ]; then
    expect_eq "$(sbx exec "$id" -- cat /proc/self/oom_score_adj)" 800 "a process exec'd after the update"
  fi
  expect_error INVALID_ARGUMENT update "$id" --priority 10
  check_priority "$rt" "$id" 2 362 35 800
  sbx rm -f "$id" >/dev/null
}

@test "priority: cpu weight and oom_score_adj of priority 8, and 2 by update [runc]" { priority_test runc; }
@test "priority: cpu weight and oom_score_adj of priority 8, and 2 by update [runsc]" { priority_test runsc; }

@test "priority and namespace: invalid values refused, nothing made" {
  local v
  for v in 10 -1 x; do
    expect_error INVALID_ARGUMENT create --runtime runc --block-network --priority "$v"
  done
  expect_contains "$stderr" "priority"
  for v in "bad name" -x "$(printf 'x%.0s' $(seq 65))"; do
    expect_error INVALID_ARGUMENT create --runtime runc --block-network --namespace "$v"
    expect_contains "$stderr" "namespace"
  done
  expect_error INVALID_ARGUMENT ls --namespace "bad name"
  expect_error INVALID_ARGUMENT stats --namespace "bad name"
  expect_error INVALID_ARGUMENT stats --namespace x sb-000000000000
  # sbx.conf: a quota that is not one is refused by the create that reads it
  # (the grammar's every case: test-conf).
  for v in "namespace_max_cpu = q 0" "namespace_max_gpus = q x" "namespace_max_sandboxes = 5"; do
    quota_conf "$v"
    expect_error INVALID_ARGUMENT create --runtime runc --block-network --namespace q
    expect_contains "$stderr" "namespace_max_"
  done
  expect_eq "$(sbx ls -q)" "" "sandboxes after the refusals"
}
