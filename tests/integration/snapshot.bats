#!/usr/bin/env bats
# Memory snapshots under runsc: snapshot, restore [--count N], snapshots,
# rmsnap; a counter keeps counting from where it was, forks are
# independent, files are all there, a restored sandbox snapshots again, and
# runc is refused with its code. Snapshots are of sandboxes made with
# --block-network: this runsc cannot checkpoint one on the host network
# stack (DESIGN.md section 8).

load ../helpers/common

lines_of () {
  sbx exec "$1" -- sh -c "wc -l < $2"
}

@test "snapshot: a counter resumes where it was, N forks run apart, files come along, snapshots again" {
  require_runtime runsc
  local id snap a b n0 snap2 c
  id=$(sbx create --block-network)
  sbx exec -d "$id" -- sh -c 'i=0; while :; do i=$((i+1)); echo $i >> /tmp/count; sleep 0.1; done' >/dev/null
  # A file written a moment before the snapshot must be in it.
  sbx exec "$id" -- sh -c 'sleep 1; echo before > /root/f'
  n0=$(lines_of "$id" /tmp/count)
  run --separate-stderr sbx --json snapshot "$id"
  expect_status 0
  snap=$(jget 'd["id"]')
  [[ $snap =~ ^snap-[0-9a-f]{12}$ ]] || fail "snapshot id \`$snap\`"
  expect_eq "$(sbx --json status "$id" | jpipe 'd["reason"]')" snapshot "the source's end"
  run --separate-stderr sbx --json snapshots
  expect_eq "$(jget '[s["sandbox"] for s in d if s["id"] == "'"$snap"'"][0]')" "$id" "listed"
  expect_eq "$(sbx snapshots -q)" "$snap" "snapshots -q"
  run --separate-stderr sbx --json restore --count 2 "$snap"
  expect_status 0
  a=$(jget 'd[0]')
  b=$(jget 'd[1]')
  expect_eq "$(sbx exec "$a" -- cat /root/f)" before "file in the first fork"
  expect_eq "$(sbx exec "$b" -- cat /root/f)" before "file in the second fork"
  # The counter goes on from its saved value, not from 1.
  sleep 1
  local ca cb first
  first=$(sbx exec "$a" -- head -n 1 /tmp/count)
  expect_eq "$first" 1 "the counter's history"
  ca=$(lines_of "$a" /tmp/count)
  [ "$ca" -gt "$n0" ] || fail "fork a counted $ca lines, the source had $n0"
  # Line N holds N throughout: one read of the file, as the counter goes on
  # appending (two execs, one counting lines and one reading the last, raced it).
  expect_eq "$(sbx exec "$a" -- awk '$0 != NR { print "line " NR ": " $0; exit } END { print "in order" }' /tmp/count | head -n 1)" \
    "in order" "no restart from 1"
  # Independent: what one writes the other does not see.
  sbx exec "$a" -- sh -c 'echo only-a > /root/a'
  expect_eq "$(sbx exec "$b" -- sh -c 'test -e /root/a && echo shared || echo apart')" apart "forks"
  # Execs work (channel ids do not collide with the restored agent's).
  for c in 1 2 3; do
    expect_eq "$(sbx exec "$a" -- echo "exec-$c")" "exec-$c" "exec $c into a restored sandbox"
  done
  # The process table came along: the counter is a running background
  # process there, which proc kill and proc wait reach.
  local cpid
  run --separate-stderr sbx --json ps "$a"
  expect_status 0
  expect_eq "$(jget '[p["state"] for p in d if "while" in p["command"]][0]')" running "the counter in sbx ps"
  expect_eq "$(jget '[p["background"] for p in d if "while" in p["command"]][0]')" true "in the background"
  cpid=$(jget '[p["pid"] for p in d if "while" in p["command"]][0]')
  run --separate-stderr sbx proc "$b" "$cpid" kill --signal KILL
  expect_status 0
  run --separate-stderr sbx proc "$b" "$cpid" wait --timeout 10
  expect_status 137
  expect_eq "$(sbx --json ps "$b" | jpipe '[p["state"] for p in d if p["pid"] == '"$cpid"'][0]')" exited "killed in fork b"
  expect_eq "$(sbx --json ps "$a" | jpipe '[p["state"] for p in d if p["pid"] == '"$cpid"'][0]')" running "still running in fork a"
  # A restored sandbox can be snapshotted again.
  run --separate-stderr sbx snapshot "$a"
  expect_status 0
  snap2=$output
  c=$(sbx restore "$snap2")
  expect_eq "$(sbx exec "$c" -- cat /root/a /root/f)" "only-a
before" "second-generation files"
  # A restored sandbox commits: its image counts every layer below it (it has
  # no source image of its own) and starts.
  local img base
  img=$(sbx commit "$c")
  base=$(sbx --json images | jpipe '[i["size"] for i in d if "busybox" in i["tags"]][0]')
  expect_eq "$(sbx --json images | jpipe '[i["size"] >= '"$base"' for i in d if i["id"] == "'"$img"'"][0]')" true \
    "a restored sandbox's commit is at least its base's size"
  expect_eq "$(sbx run --rm --image "$img" -- cat /root/a)" "only-a" "the commit of a restored sandbox runs"
  sbx terminate --rm "$b" "$c" >/dev/null
  sbx rm "$id" "$a" >/dev/null
  run --separate-stderr sbx rmsnap "$snap" "$snap2"
  expect_status 0
  run --separate-stderr sbx --json snapshots
  expect_eq "$(jget "len(d)")" 0 "no snapshot left"
}

@test "snapshot: refusals carry their code" {
  require_runtime runc
  require_runtime runsc
  local id
  id=$(sbx create --runtime runc)
  expect_error RUNTIME_UNAVAILABLE snapshot "$id"
  expect_eq "$(state_of "$id")" running "a refused snapshot leaves it running"
  sbx terminate "$id" >/dev/null
  expect_error RUNTIME_UNAVAILABLE snapshot "$id"
  # A sandbox with a network runs on the host stack: runsc cannot checkpoint it.
  id=$(sbx create)
  expect_error RUNTIME_UNAVAILABLE snapshot "$id"
  expect_eq "$(state_of "$id")" running "a refused snapshot leaves it running"
  sbx terminate "$id" >/dev/null
  id=$(sbx create --block-network)
  sbx terminate "$id" >/dev/null
  expect_error SANDBOX_NOT_RUNNING snapshot "$id"
  expect_error NOT_FOUND restore snap-000000000000
  expect_error INVALID_ARGUMENT restore not-a-snapshot
  expect_error INVALID_ARGUMENT restore --count 0 snap-000000000000
  expect_error NOT_FOUND rmsnap snap-000000000000
  expect_error NOT_FOUND snapshot sb-000000000000
  # Nothing half-made is listed.
  run --separate-stderr sbx --json snapshots
  expect_eq "$(jget "len(d)")" 0 "snapshots"
  # A snapshot whose files' layer the host went down on is not restored.
  local snap layer before
  before=$(sbx ls -q | wc -l)
  id=$(sbx create --block-network)
  snap=$(sbx snapshot "$id" | tail -n 1)
  sbx terminate --rm "$id" >/dev/null
  layer=$(jget 'd["layers"][-1]' "$(cat "$SBX_ROOT/snapshots/$snap/snapshot.json")")
  sbx_wait_settled
  printf '00000000-0000-4000-8000-000000000000' >"$SBX_ROOT/layers/sha256/${layer#sha256:}/pending"
  expect_error INTERNAL restore "$snap"
  expect_contains "$stderr" "may be incomplete"
  expect_eq "$(sbx ls -q | wc -l)" "$before" "no sandbox from the refused restore"
  sbx rmsnap "$snap" >/dev/null
}

@test "snapshot: restore holds stored options to create's limits and refuses oversized metadata" {
  require_runtime runsc
  local id snap doc before
  id=$(sbx create --block-network)
  snap=$(sbx snapshot "$id" | tail -n 1)
  sbx terminate --rm "$id" >/dev/null
  doc="$SBX_ROOT/snapshots/$snap/snapshot.json"
  cp "$doc" "$BATS_TEST_TMPDIR/orig.json"
  before=$(sbx ls -q | wc -l)
  # Each edit is one create would refuse (sbx-limits.h); on restore it is
  # the same INVALID_ARGUMENT, and nothing is made.
  local edit
  for edit in 'o["pids"] = 3' 'o["pids"] = 1 << 23' 'o["memory"] = 4096' 'o["memory"] = 1 << 43' \
    'o["cpu"] = 5000' 'o["cpu"] = 0.001' 'o["disk"] = 4096' 'o["ports"] = [str(p) for p in range(1000, 1065)]'; do
    py -c 'import json, sys
d = json.load(open(sys.argv[1])); o = d["options"]
'"$edit"'
json.dump(d, open(sys.argv[1], "w"))' "$doc"
    expect_error INVALID_ARGUMENT restore "$snap"
    expect_eq "$(sbx ls -q | wc -l)" "$before" "no sandbox from a restore with $edit"
    cp "$BATS_TEST_TMPDIR/orig.json" "$doc"
  done
  expect_error INVALID_ARGUMENT restore "$snap" --count 65
  # Metadata past SBX_SNAPSHOT_JSON_MAX (1 MiB) is not read at all.
  py -c 'import json, sys
d = json.load(open(sys.argv[1])); d["pad"] = "x" * (1 << 20)
json.dump(d, open(sys.argv[1], "w"))' "$doc"
  expect_error INVALID_ARGUMENT restore "$snap"
  expect_contains "$stderr" "larger than"
  expect_eq "$(sbx ls -q | wc -l)" "$before" "no sandbox from oversized metadata"
  # The file as it was restores: the edits were what was refused.
  cp "$BATS_TEST_TMPDIR/orig.json" "$doc"
  id=$(sbx restore "$snap")
  expect_eq "$(sbx exec "$id" -- echo alive)" alive "the unedited snapshot restores"
  sbx terminate --rm "$id" >/dev/null
  sbx rmsnap "$snap" >/dev/null
}

@test "snapshot: kill -9 in the middle leaves no half-made snapshot; gc clears what it left" {
  require_runtime runsc
  local id pid n
  id=$(sbx create --block-network)
  sbx exec -d "$id" -- sh -c 'while :; do sleep 1; done' >/dev/null
  "$SBX_BIN" snapshot "$id" >/dev/null 2>&1 &
  pid=$!
  sleep 0.2
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # Whatever is listed is whole: it restores.
  run --separate-stderr sbx --json snapshots
  expect_status 0
  n=$(jget 'len(d)')
  [ "$n" -le 1 ] || fail "one snapshot was asked for, $n are listed"
  if [ "$n" = 1 ]; then
    local snap c
    snap=$(jget 'd[0]["id"]')
    c=$(sbx restore "$snap")
    expect_eq "$(sbx exec "$c" -- echo alive)" alive "a listed snapshot restores"
    sbx terminate --rm "$c" >/dev/null
    sbx rmsnap "$snap" >/dev/null
  fi
  sbx terminate "$id" >/dev/null 2>&1 || true
  sbx gc >/dev/null
  [ -z "$(find "$SBX_ROOT/snapshots" -mindepth 1 -maxdepth 1 -name '.*' 2>/dev/null)" ] || fail "leftovers: $(ls -a "$SBX_ROOT/snapshots")"
}
