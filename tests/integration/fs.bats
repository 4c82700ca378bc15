#!/usr/bin/env bats
# The file API (sbx fs, sbx cp) on both runtimes, on running and on ended
# sandboxes, and against everything a sandbox can plant: symlinks and chains
# of them to host paths, a symlink swapped in a loop while calls run, FIFOs
# and devices, 10,000-entry directories, names that are not UTF-8. Each
# adversarial case proves on the host that no host file was read or changed.

load ../helpers/common

# A host directory the sandbox's symlinks aim at, with a file whose content
# and checksum are known: it must never be read, changed or removed.
make_canary () {
  CANARY=$BATS_TEST_TMPDIR/host-secret
  mkdir -p "$CANARY/sub"
  printf 'host-secret-data\n' >"$CANARY/secret"
  printf 'host-secret-data\n' >"$CANARY/sub/secret"
  chmod 0600 "$CANARY/secret"
  CANARY_SUM=$(cd "$CANARY" && find . -printf '%p %m %s %T@\n' | sort | sha256sum)
}

canary_intact () {
  [ -d "$CANARY" ] || fail "the host directory $CANARY was removed"
  local now
  now=$(cd "$CANARY" && find . -printf '%p %m %s %T@\n' | sort | sha256sum)
  [ "$now" = "$CANARY_SUM" ] || fail "the host directory $CANARY changed: $(ls -laR "$CANARY")"
  expect_eq "$(cat "$CANARY/secret")" host-secret-data "host secret"
}

# --- every verb, running then ended ------------------------------------------

verbs_case () {
  local rt=$1 id out
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")

  # write / read, both ways visible
  printf 'line one\nline two\n' | sbx fs "$id" write /tmp/a.txt
  run --separate-stderr sbx exec "$id" -- cat /tmp/a.txt
  expect_eq "$output" "line one
line two" "the sandbox sees the host's write"
  sbx exec "$id" -- sh -c 'echo from-inside > /root/in.txt; mkdir -p /work/sub; echo TODO here > /work/sub/x.py'
  run --separate-stderr sbx fs "$id" read /root/in.txt
  expect_status 0
  expect_eq "$output" from-inside "the host sees the sandbox's write"
  # a rewrite keeps the mode, and the sandbox sees the new content
  sbx exec "$id" -- chmod 0751 /tmp/a.txt
  printf 'v2\n' | sbx fs "$id" write /tmp/a.txt
  expect_eq "$(sbx --json fs "$id" stat /tmp/a.txt | jpipe 'd["mode"]')" 0751 "mode after write"
  expect_eq "$(sbx exec "$id" -- cat /tmp/a.txt)" v2 "content after write"

  # upload / download: any bytes, mode kept
  head -c 3000000 /dev/urandom >"$BATS_TEST_TMPDIR/blob"
  chmod 0750 "$BATS_TEST_TMPDIR/blob"
  sbx fs "$id" upload "$BATS_TEST_TMPDIR/blob" /work/blob
  expect_eq "$(sbx exec "$id" -- stat -c %a /work/blob)" 750 "uploaded mode"
  expect_eq "$(sbx exec "$id" -- md5sum /work/blob | cut -d' ' -f1)" "$(md5sum <"$BATS_TEST_TMPDIR/blob" | cut -d' ' -f1)" \
    "uploaded content"
  sbx fs "$id" download /work/blob "$BATS_TEST_TMPDIR/back"
  cmp "$BATS_TEST_TMPDIR/blob" "$BATS_TEST_TMPDIR/back" || fail "download differs"
  expect_eq "$(stat -c %a "$BATS_TEST_TMPDIR/back")" 750 "downloaded mode"
  # cp both ways, into directories
  mkdir "$BATS_TEST_TMPDIR/outdir"
  sbx cp "$id:/root/in.txt" "$BATS_TEST_TMPDIR/outdir"
  expect_eq "$(cat "$BATS_TEST_TMPDIR/outdir/in.txt")" from-inside "cp out"
  sbx cp "$BATS_TEST_TMPDIR/blob" "$id:/root"
  cmp "$BATS_TEST_TMPDIR/blob" <(sbx fs "$id" read /root/blob) || fail "cp in"

  # ls / stat: types, symlink targets never followed
  sbx exec "$id" -- sh -c 'ln -s /root/in.txt /work/link'
  run --separate-stderr sbx --json fs "$id" ls /work
  expect_status 0
  expect_eq "$(jget '[e["name"] for e in d["entries"]]')" '["blob", "link", "sub"]' "ls names, sorted"
  expect_eq "$(jget '[e["type"] for e in d["entries"]]')" '["file", "symlink", "dir"]' "ls types"
  expect_eq "$(jget 'd["entries"][1]["target"]')" /root/in.txt "symlink target"
  expect_eq "$(jget 'd["next_cursor"]')" null "one page"
  expect_eq "$(sbx --json fs "$id" stat /work/link | jpipe 'd["type"]')" symlink "stat does not follow"
  run --separate-stderr sbx fs "$id" ls /work
  expect_contains "$output" "link -> /root/in.txt"

  # mkdir, rm, rmdir
  sbx fs "$id" mkdir -p /work/a/b/c
  sbx fs "$id" mkdir -p /work/a/b/c
  sbx fs "$id" mkdir /work/a/d
  expect_eq "$(sbx exec "$id" -- sh -c 'test -d /work/a/b/c && test -d /work/a/d && echo yes')" yes "mkdir"
  sbx fs "$id" rm /work/link
  expect_eq "$(sbx exec "$id" -- sh -c 'test -e /root/in.txt && ! test -L /work/link && echo yes')" yes \
    "rm removes the link, not its target"
  sbx fs "$id" rmdir /work/a/d
  sbx fs "$id" rmdir -r /work/a
  expect_eq "$(sbx exec "$id" -- sh -c 'test -e /work/a || echo gone')" gone "rmdir -r"

  # find and replace
  sbx exec "$id" -- sh -c 'printf "a TODO\nnothing\nTODO b TODO\n" > /work/sub/y.txt; chmod 0604 /work/sub/y.txt'
  run --separate-stderr sbx fs "$id" find /work 'TO+DO'
  expect_status 0
  expect_eq "$output" "/work/sub/x.py:1:TODO here
/work/sub/y.txt:1:a TODO
/work/sub/y.txt:3:TODO b TODO" "find output"
  run --separate-stderr sbx fs "$id" find --name '*.py' /work TODO
  expect_eq "$output" "/work/sub/x.py:1:TODO here" "find --name"
  run --separate-stderr sbx fs "$id" replace /work/sub TODO DONE
  expect_status 0
  expect_eq "$output" "/work/sub/x.py: 1
/work/sub/y.txt: 3" "replace counts"
  expect_eq "$(sbx exec "$id" -- cat /work/sub/y.txt)" "a DONE
nothing
DONE b DONE" "replaced content"
  expect_eq "$(sbx exec "$id" -- stat -c %a /work/sub/y.txt)" 604 "replace keeps the mode"

  # The same verbs once the sandbox has ended: its files stay reachable.
  sbx terminate "$id" >/dev/null
  run --separate-stderr sbx fs "$id" read /root/in.txt
  expect_status 0
  expect_eq "$output" from-inside "read after the end"
  printf 'after\n' | sbx fs "$id" write /root/after.txt
  expect_eq "$(sbx fs "$id" read /root/after.txt)" after "write after the end"
  expect_eq "$(sbx fs "$id" find /work DONE | wc -l)" 3 "find after the end"
  sbx fs "$id" replace /work/sub DONE FIN >/dev/null
  sbx fs "$id" mkdir -p /z/y
  sbx fs "$id" rmdir -r /z
  sbx fs "$id" rm /root/after.txt
  run --separate-stderr sbx --json fs "$id" ls /root
  expect_eq "$(jget '[e["name"] for e in d["entries"]]')" '["blob", "in.txt"]' "ls after the end"
  sbx cp "$id:/work/sub/y.txt" "$BATS_TEST_TMPDIR/y.txt"
  expect_contains "$(cat "$BATS_TEST_TMPDIR/y.txt")" "a FIN"
  sbx rm "$id" >/dev/null
}

@test "fs: every verb on a running and then an ended sandbox [runc]" { verbs_case runc; }
@test "fs: every verb on a running and then an ended sandbox [runsc]" { verbs_case runsc; }

watch_case () {
  local rt=$1 id w
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  sbx exec "$id" -- mkdir -p /tmp/w/sub
  "$SBX_BIN" --json fs "$id" watch -r /tmp/w >"$BATS_TEST_TMPDIR/events" &
  w=$!
  sleep 1
  sbx exec "$id" -- sh -c 'echo 1 > /tmp/w/new; echo 2 >> /tmp/w/new; rm /tmp/w/new; mkdir /tmp/w/sub/d; sleep 0.5; echo x > /tmp/w/sub/d/deep'
  printf 'h\n' | sbx fs "$id" write /tmp/w/from-host
  sleep 1
  # The sandbox's end ends the watch.
  sbx terminate "$id" >/dev/null
  local i
  for i in $(seq 50); do kill -0 "$w" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$w" 2>/dev/null && { kill "$w"; fail "watch outlived its sandbox"; }
  wait "$w" || true
  local ev
  ev=$(py -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    print(d["event"], d["path"])' "$BATS_TEST_TMPDIR/events")
  expect_contains "$ev" "create /tmp/w/new"
  expect_contains "$ev" "modify /tmp/w/new"
  expect_contains "$ev" "delete /tmp/w/new"
  expect_contains "$ev" "create /tmp/w/sub/d"
  expect_contains "$ev" "create /tmp/w/sub/d/deep"
  expect_contains "$ev" "create /tmp/w/from-host"
  expect_not_contains "$ev" ".sbx-write-"
  sbx rm "$id" >/dev/null
}

@test "fs: watch -r reports the sandbox's and the host's changes and ends with the sandbox [runc]" { watch_case runc; }
@test "fs: watch -r reports the sandbox's and the host's changes and ends with the sandbox [runsc]" { watch_case runsc; }

# --- what a sandbox can plant ----------------------------------------------------

symlinks_case () {
  local rt=$1 id
  require_runtime "$rt"
  make_canary
  id=$(sbx create --runtime "$rt")
  # Links to the host directory by its absolute host path, by climbing, to
  # /proc magic links, and a chain of links.
  sbx exec "$id" -- sh -c "
    mkdir -p /x
    ln -s '$CANARY' /x/abs
    ln -s '$CANARY/secret' /x/abs-file
    ln -s ../../../../../../../../..$CANARY /x/climb
    ln -s /proc/1/root$CANARY /x/magic
    ln -s /proc/self/root /x/self
    ln -s /x/c2 /x/c1; ln -s /x/c3 /x/c2; ln -s $CANARY /x/c3"
  local p
  for p in /x/abs/secret /x/abs-file /x/climb/secret /x/magic/secret /x/self$CANARY/secret /x/c1/secret; do
    expect_error NOT_FOUND fs "$id" read "$p"
    run sbx fs "$id" download "$p" "$BATS_TEST_TMPDIR/got"
    [ ! -e "$BATS_TEST_TMPDIR/got" ] || fail "download of $p produced a file"
    run sbx fs "$id" find "$p" host
    expect_not_contains "$output" host-secret-data
  done
  # Writes and removals through the links land inside the sandbox or nowhere.
  printf 'evil\n' | sbx fs "$id" write /x/abs-file
  run sbx fs "$id" write /x/abs/secret <<<evil
  run sbx fs "$id" write /x/climb/secret <<<evil
  run sbx fs "$id" write /x/c1/new <<<evil
  run sbx fs "$id" upload "$BATS_TEST_TMPDIR/../../../../etc/hostname" /x/abs/uploaded
  run sbx fs "$id" rm /x/abs/secret
  run sbx fs "$id" rm /x/c1/secret
  run sbx fs "$id" rmdir -r /x/abs/sub
  run sbx fs "$id" rmdir -r /x/climb
  run sbx fs "$id" replace /x/abs host-secret evil
  run sbx fs "$id" replace /x host-secret evil
  run sbx fs "$id" mkdir -p /x/abs/made
  run sbx fs "$id" mkdir -p /x/c1/made
  canary_intact
  # The write replaced the link itself (inside), never its target.
  expect_eq "$(sbx exec "$id" -- sh -c 'test -L /x/abs-file || cat /x/abs-file')" evil "write replaced the link"
  # ls and stat describe links without following them.
  run --separate-stderr sbx --json fs "$id" ls /x
  expect_status 0
  expect_not_contains "$output" host-secret-data
  sbx terminate --rm "$id" >/dev/null
  canary_intact
}

@test "fs: symlinks and chains to host paths resolve inside the sandbox [runc]" { symlinks_case runc; }
@test "fs: symlinks and chains to host paths resolve inside the sandbox [runsc]" { symlinks_case runsc; }

swap_case () {
  local rt=$1 id i
  require_runtime "$rt"
  make_canary
  id=$(sbx create --runtime "$rt")
  # The sandbox flips /w/d between a real directory and a link to the host
  # directory as fast as it can, for the whole test.
  sbx exec -d "$id" -- sh -c "mkdir -p /w; while :; do
      rm -rf /w/d; mkdir /w/d; echo host-secret-data > /w/d/secret; mkdir /w/d/sub
      rm -rf /w/d; ln -s '$CANARY' /w/d
    done" >/dev/null
  sleep 0.5
  for i in $(seq 40); do
    sbx fs "$id" download /w/d/secret "$BATS_TEST_TMPDIR/dl" 2>/dev/null || true
    printf 'evil\n' | sbx fs "$id" write /w/d/secret 2>/dev/null || true
    sbx fs "$id" replace /w host-secret evil >/dev/null 2>&1 || true
    sbx fs "$id" rmdir -r /w/d/sub 2>/dev/null || true
    sbx fs "$id" rm /w/d/secret 2>/dev/null || true
    sbx cp "$BATS_TEST_TMPDIR/dl" "$id:/w/d/secret" 2>/dev/null || true
  done
  # The swapping loop ran the whole time.
  expect_eq "$(sbx --json ps "$id" | jpipe '[p["state"] for p in d if p["background"]][0]')" running "swap loop"
  canary_intact
  # What was downloaded, if anything, was the sandbox's own file.
  if [ -e "$BATS_TEST_TMPDIR/dl" ]; then
    [ "$(stat -c %a "$BATS_TEST_TMPDIR/dl")" != 600 ] || fail "a download carried the host file's mode"
  fi
  sbx terminate --rm "$id" >/dev/null
  canary_intact
}

@test "fs: a symlink swapped in a loop while download, write, replace and rmdir -r run [runc]" { swap_case runc; }
@test "fs: a symlink swapped in a loop while download, write, replace and rmdir -r run [runsc]" { swap_case runsc; }

fifo_device_case () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt")
  sbx exec "$id" -- mkfifo /tmp/fifo
  # runc makes the FIFO in the sandbox's files (gVisor keeps its own FIFOs
  # in the sandbox's memory: nothing reaches the host there).
  if [ "$rt" = runc ]; then
    # Refused at once, never opened (an open for reading would block).
    run --separate-stderr timeout 10 "$SBX_BIN" --json fs "$id" read /tmp/fifo
    expect_status 125
    expect_eq "$(jget 'd["error"]["code"]')" PATH_INVALID "FIFO read"
  fi
  sbx terminate "$id" >/dev/null
  # A FIFO and device nodes in the sandbox's files (as a layer or a root
  # process in it can plant them): the host's /dev/zero and /dev/mem.
  mkfifo "$SBX_ROOT/sandboxes/$id/upper/planted-fifo"
  mknod "$SBX_ROOT/sandboxes/$id/upper/zero" c 1 5
  mknod "$SBX_ROOT/sandboxes/$id/upper/mem" c 1 1
  run --separate-stderr timeout 10 "$SBX_BIN" --json fs "$id" read /planted-fifo
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" PATH_INVALID "FIFO read"
  run --separate-stderr timeout 10 "$SBX_BIN" fs "$id" download /planted-fifo "$BATS_TEST_TMPDIR/f"
  expect_status 125
  [ ! -e "$BATS_TEST_TMPDIR/f" ] || fail "download of a FIFO made a file"
  run --separate-stderr timeout 10 "$SBX_BIN" fs "$id" find / .
  expect_status 0
  run --separate-stderr timeout 10 "$SBX_BIN" --json fs "$id" read /zero
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" PATH_INVALID "device read"
  run --separate-stderr timeout 10 "$SBX_BIN" --json fs "$id" read /mem
  expect_eq "$(jget 'd["error"]["code"]')" PATH_INVALID "device read"
  run --separate-stderr timeout 10 "$SBX_BIN" fs "$id" replace / x y
  expect_not_contains "$stderr" "zero"
  expect_eq "$(sbx --json fs "$id" stat /zero | jpipe 'd["type"]')" other "a device is listed as other"
  sbx rm "$id" >/dev/null
}

@test "fs: FIFOs and devices are refused and never block [runc]" { fifo_device_case runc; }
@test "fs: FIFOs and devices are refused and never block [runsc]" { fifo_device_case runsc; }

@test "fs: a 10,000-entry directory pages to the end, sorted, nothing twice" {
  require_runtime runc
  local id cur out total=0 pages=0
  id=$(sbx create --runtime runc)
  sbx exec "$id" -- sh -c 'mkdir /big; cd /big; i=0; while [ $i -lt 10000 ]; do : > "f$i"; i=$((i+1)); done'
  : >"$BATS_TEST_TMPDIR/names"
  cur=
  while :; do
    out=$(sbx --json fs "$id" ls ${cur:+--cursor "$cur"} /big)
    jget '"\n".join(e["name"] for e in d["entries"])' "$out" >>"$BATS_TEST_TMPDIR/names"
    pages=$((pages + 1))
    cur=$(jget 'd["next_cursor"]' "$out")
    [ "$cur" = null ] && break
    [ "$pages" -lt 100 ] || fail "more than 100 pages"
  done
  expect_eq "$pages" 50 "pages of 200"
  expect_eq "$(wc -l <"$BATS_TEST_TMPDIR/names")" 10000 "entries"
  expect_eq "$(sort -u "$BATS_TEST_TMPDIR/names" | wc -l)" 10000 "distinct entries"
  LC_ALL=C sort -c "$BATS_TEST_TMPDIR/names" || fail "pages are not in name order"
  run --separate-stderr sbx --json fs "$id" ls --limit 10000 /big
  expect_eq "$(jget 'len(d["entries"])')" 10000 "one page of 10000"
  sbx terminate --rm "$id" >/dev/null
}

@test "fs: names that are not UTF-8, and control characters, survive and are shown safely" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc)
  sbx exec "$id" -- sh -c "mkdir /n; printf data > /n/\$(printf 'bin\\377\\376'); printf x > /n/\$(printf 'nl\\nname'); printf y > /n/\$(printf 'esc\\033[31m')"
  run --separate-stderr sbx --json fs "$id" ls /n
  expect_status 0
  json_valid
  expect_eq "$(jget '[e.get("name_hex") for e in d["entries"]]')" '["62696efffe", null, null]' \
    "exact bytes of names that are not UTF-8 (and none for valid ones)"
  expect_eq "$(jget 'd["entries"][2]["name"]')" "nl
name" "a newline in a name, as JSON"
  # Human output never sends control characters to the terminal.
  run --separate-stderr sbx fs "$id" ls /n
  expect_contains "$output" 'esc\x1b[31m'
  expect_contains "$output" 'nl\x0aname'
  [[ $output != *$'\033'* ]] || fail "an escape character reached stdout"
  # The raw name works as an argument.
  run --separate-stderr sbx fs "$id" read "/n/bin"$'\377\376'
  expect_eq "$output" data "read by a raw name"
  run --separate-stderr sbx --json fs "$id" read "/n/bin"$'\377\376'
  json_valid
  sbx terminate --rm "$id" >/dev/null
}

@test "fs: a failed write leaves the old file intact" {
  require_runtime runc
  local id pid
  id=$(sbx create --runtime runc)
  printf 'old content\n' | sbx fs "$id" write /data.txt
  # A writer killed half-way through its stream.
  { printf 'partial'; sleep 30; } | "$SBX_BIN" fs "$id" write /data.txt &
  pid=$!
  sleep 1
  local rc=0
  pkill -9 -f "fs $id write /data.txt" || rc=$?
  [ "$rc" -le 1 ] || fail "pkill failed (status $rc)"
  wait "$pid" 2>/dev/null || true
  expect_eq "$(sbx fs "$id" read /data.txt)" "old content" "after a killed write"
  # A host file that cannot be read: nothing changes.
  expect_error NOT_FOUND fs "$id" upload /no/such/host/file /data.txt
  expect_eq "$(sbx fs "$id" read /data.txt)" "old content" "after a failed upload"
  sbx terminate --rm "$id" >/dev/null
}

@test "fs: sbx rm waits for no file call: BUSY while one has the files mounted" {
  require_runtime runc
  local id w
  id=$(sbx create --runtime runc)
  sbx exec "$id" -- mkdir /w
  sbx terminate "$id" >/dev/null
  "$SBX_BIN" fs "$id" watch /w >/dev/null &
  w=$!
  sleep 1
  expect_error BUSY rm "$id"
  kill "$w"
  wait "$w" 2>/dev/null || true
  sbx rm "$id" >/dev/null
}

@test "fs: bad input is a clear error and changes nothing" {
  require_runtime runc
  local id
  id=$(sbx create --runtime runc)
  sbx exec "$id" -- sh -c 'mkdir -p /d/full; echo x > /d/full/f; echo keep > /d/file'
  expect_error PATH_INVALID fs "$id" read d/file
  expect_error PATH_INVALID fs "$id" read /d/../etc/passwd
  expect_error PATH_INVALID fs "$id" write ../x
  expect_error PATH_INVALID fs "$id" rm /
  expect_error PATH_INVALID fs "$id" rmdir /
  expect_error PATH_INVALID fs "$id" read /d
  expect_error PATH_INVALID fs "$id" rm /d/full
  expect_error PATH_INVALID fs "$id" write /d/full
  expect_error NOT_FOUND fs "$id" read /no/such/file
  expect_error NOT_FOUND fs "$id" ls /no/such/dir
  expect_error NOT_FOUND fs "$id" rm /no/such/file
  expect_error INVALID_ARGUMENT fs "$id" rmdir /d/full
  expect_error INVALID_ARGUMENT fs "$id" mkdir /d
  expect_error INVALID_ARGUMENT fs "$id" frobnicate /d
  expect_error INVALID_ARGUMENT fs "$id" read
  expect_error INVALID_ARGUMENT fs "$id" read /a /b
  expect_error INVALID_ARGUMENT fs "$id" ls --limit 0 /d
  expect_error INVALID_ARGUMENT fs "$id" ls --limit 10001 /d
  expect_error INVALID_ARGUMENT fs "$id" ls --cursor zz /d
  expect_error INVALID_ARGUMENT fs "$id" read --recursive /d/file
  expect_error INVALID_ARGUMENT fs "$id" find /d '('
  expect_error INVALID_ARGUMENT fs "$id" replace /d '' x
  expect_error INVALID_ARGUMENT cp /a /b
  expect_error INVALID_ARGUMENT cp "$id:/a" "$id:/b"
  expect_error NOT_FOUND fs sb-000000000000 read /etc/passwd
  expect_error NOT_FOUND cp sb-000000000000:/etc/passwd "$BATS_TEST_TMPDIR/x"
  # Nothing changed.
  expect_eq "$(sbx exec "$id" -- sh -c 'cat /d/file /d/full/f; ls /d | tr "\n" " "')" "keep
x
file full " "the sandbox's files"
  sbx terminate --rm "$id" >/dev/null
}
