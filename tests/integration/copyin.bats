#!/usr/bin/env bats
# --copy-in HOSTDIR[:/DEST] and /workspace, on both runtimes: 10,000 files
# copied whole, symlinks pointing out of the tree copied as links and never
# followed (a host canary proves nothing was read), .sbxignore honoured, a
# tree over --disk refused with nothing left, bad HOSTDIRs refused with
# their codes; /workspace in every image and the default cwd, an image's own
# WORKDIR kept, an image's /workspace that is a file or a symlink neither
# used nor followed, and a commit that never touched /workspace not gaining it.

load ../helpers/common

setup () {
  sbx_setup || return
  sbx_import_payload
}

# A host directory the tree's symlinks aim at: never read or changed.
make_canary () {
  CANARY=$BATS_TEST_TMPDIR/host-secret
  mkdir -p "$CANARY"
  printf 'host-secret-data\n' >"$CANARY/secret"
  CANARY_SUM=$(cd "$CANARY" && find . -printf '%p %m %s %T@\n' | sort | sha256sum)
}

canary_intact () {
  local now
  now=$(cd "$CANARY" && find . -printf '%p %m %s %T@\n' | sort | sha256sum)
  [ "$now" = "$CANARY_SUM" ] || fail "the host directory $CANARY changed"
}

# --- 10,000 files ----------------------------------------------------------

many_case () {
  local rt=$1 id src=$BATS_TEST_TMPDIR/many
  require_runtime "$rt"
  mkdir -p "$src"
  # 100 directories of 100 files, each file its own content.
  py -c '
import os, sys
top = sys.argv[1]
for d in range(100):
    os.mkdir(f"{top}/d{d:03}")
    for f in range(100):
        with open(f"{top}/d{d:03}/f{f:03}.txt", "w") as o:
            o.write(f"file {d} {f}\n")
os.chmod(f"{top}/d007/f007.txt", 0o751)
os.utime(f"{top}/d007/f007.txt", (1234567890, 1234567890))
' "$src"
  local want
  want=$(cd "$src" && find . -type f | sort | xargs cat | md5sum | cut -d' ' -f1)
  id=$(sbx create --runtime "$rt" --image payload --copy-in "$src")
  run --separate-stderr sbx exec "$id" -- sh -c \
    'find /workspace -type f | wc -l; cd /workspace && find . -type f | sort | xargs cat | md5sum | cut -d" " -f1;
     stat -c "%a %Y %u:%g" d007/f007.txt'
  expect_status 0
  expect_eq "$output" "10000
$want
751 1234567890 0:0" "10,000 files, their contents, a mode, an mtime and the owner inside"
  expect_contains "$(cat "$SBX_ROOT/sandboxes/$id/log")" "copy-in $src: 10000 files, 100 directories"
  sbx terminate --rm "$id" >/dev/null
}

@test "copyin: 10,000 files, their contents, modes and mtimes [runc]" { many_case runc; }
@test "copyin: 10,000 files, their contents, modes and mtimes [runsc]" { many_case runsc; }

# --- symlinks out of the tree --------------------------------------------------

links_case () {
  local rt=$1 id src=$BATS_TEST_TMPDIR/links
  require_runtime "$rt"
  make_canary
  mkdir -p "$src/sub"
  printf 'in the tree\n' >"$src/sub/real.txt"
  ln -s "$CANARY/secret" "$src/abs-out"
  ln -s ../../../../../../../.. "$src/sub/up"
  ln -s real.txt "$src/sub/rel"
  ln -s "$CANARY" "$src/dir-out"
  id=$(sbx create --runtime "$rt" --image payload --copy-in "$src:/data")
  run --separate-stderr sbx exec "$id" -- sh -c \
    'cd /data; for l in abs-out sub/up sub/rel dir-out; do printf "%s -> %s\n" "$l" "$(readlink "$l")"; done;
     cat sub/rel; cat abs-out >/dev/null 2>&1 && echo abs-out-read || echo abs-out-unreadable;
     test -d dir-out && echo dir-out-followed || echo dir-out-missing'
  expect_status 0
  expect_eq "$output" "abs-out -> $CANARY/secret
sub/up -> ../../../../../../../..
sub/rel -> real.txt
dir-out -> $CANARY
in the tree
abs-out-unreadable
dir-out-missing" "links copied as links, resolving inside the sandbox"
  expect_not_contains "$output" host-secret-data
  canary_intact
  sbx terminate --rm "$id" >/dev/null
}

@test "copyin: symlinks pointing out of the tree are copied as links, never followed [runc]" { links_case runc; }
@test "copyin: symlinks pointing out of the tree are copied as links, never followed [runsc]" { links_case runsc; }

# --- .sbxignore --------------------------------------------------------------------

ignore_case () {
  local rt=$1 id src=$BATS_TEST_TMPDIR/proj
  require_runtime "$rt"
  mkdir -p "$src/node_modules/pkg" "$src/src/build" "$src/build" "$src/docs/a/b"
  for f in main.py notes.log keep.log src/app.c src/app.o src/build/out docs/a/b/x.md node_modules/pkg/i.js \
    build/artifact "#hash" .env; do
    printf 'x\n' >"$src/$f"
  done
  cat >"$src/.sbxignore" <<'EOF'
# dependencies and outputs
node_modules/
*.o
*.log
!keep.log
/build/
docs/**/*.md
\#hash
.env
EOF
  mkfifo "$src/pipe"
  id=$(sbx create --runtime "$rt" --image payload --copy-in "$src")
  run --separate-stderr sbx exec "$id" -- sh -c 'cd /workspace && find . | sort'
  expect_status 0
  expect_eq "$output" ".
./.sbxignore
./docs
./docs/a
./docs/a/b
./keep.log
./main.py
./src
./src/app.c
./src/build
./src/build/out" "what .sbxignore let through (the fifo skipped)"
  expect_contains "$(cat "$SBX_ROOT/sandboxes/$id/log")" "1 skipped (device nodes, fifos, sockets)"
  sbx terminate --rm "$id" >/dev/null
}

@test "copyin: .sbxignore rules are honoured, a fifo skipped [runc]" { ignore_case runc; }
@test "copyin: .sbxignore rules are honoured, a fifo skipped [runsc]" { ignore_case runsc; }

# --- refusals ------------------------------------------------------------------------

nothing_left () {
  expect_eq "$(sbx ls -q)" "" "sandboxes after a refused create"
  expect_eq "$(find "$SBX_ROOT/sandboxes" -mindepth 1 | wc -l)" 0 "files of sandboxes after a refused create"
}

over_disk_case () {
  local rt=$1 src=$BATS_TEST_TMPDIR/big
  require_runtime "$rt"
  mkdir -p "$src"
  head -c $((24 << 20)) /dev/urandom >"$src/a.bin"
  head -c $((24 << 20)) /dev/urandom >"$src/b.bin"
  expect_error RESOURCE_EXHAUSTED create --runtime "$rt" --image payload --disk 32Mi --copy-in "$src"
  expect_contains "$output" "does not fit in the sandbox's disk"
  nothing_left
}

@test "copyin: a tree larger than --disk is RESOURCE_EXHAUSTED and leaves nothing [runc]" { over_disk_case runc; }
@test "copyin: a tree larger than --disk is RESOURCE_EXHAUSTED and leaves nothing [runsc]" { over_disk_case runsc; }

@test "copyin: a missing HOSTDIR, a file, a relative or .. destination are refused with their codes" {
  require_runtime runc
  printf 'x\n' >"$BATS_TEST_TMPDIR/file"
  mkdir -p "$BATS_TEST_TMPDIR/dir"
  expect_error NOT_FOUND create --runtime runc --image payload --copy-in "$BATS_TEST_TMPDIR/missing"
  expect_error INVALID_ARGUMENT create --runtime runc --image payload --copy-in "$BATS_TEST_TMPDIR/file"
  expect_contains "$output" "not a directory"
  expect_error INVALID_ARGUMENT create --runtime runc --image payload --copy-in "$BATS_TEST_TMPDIR/dir:rel/dest"
  expect_contains "$output" "not an absolute path"
  expect_error INVALID_ARGUMENT create --runtime runc --image payload --copy-in "$BATS_TEST_TMPDIR/dir:/a/../b"
  expect_error INVALID_ARGUMENT run --runtime runc --image payload --copy-in "$BATS_TEST_TMPDIR/dir:" -- true
  nothing_left
  # A relative HOSTDIR is the caller's: `.` is its working directory.
  printf 'from dot\n' >"$BATS_TEST_TMPDIR/dir/f"
  run --separate-stderr bash -c 'cd "$1" && "$SBX_BIN" run --rm --runtime runc --image payload --copy-in .:/dot -- cat /dot/f' \
    _ "$BATS_TEST_TMPDIR/dir"
  expect_status 0
  expect_eq "$output" "from dot" "--copy-in ."
}

# --- /workspace ------------------------------------------------------------------------

workspace_case () {
  local rt=$1 id
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload --disk 0)
  run --separate-stderr sbx exec "$id" -- sh -c 'pwd; stat -c "%a %u:%g %F" /workspace; ls -A /workspace | wc -l'
  expect_status 0
  expect_eq "$output" "/workspace
755 0:0 directory
0" "/workspace, empty, and the default cwd"
  # --cwd of exec still wins.
  expect_eq "$(sbx exec --cwd /tmp "$id" -- pwd)" /tmp "exec --cwd"
  # The sandbox never touched /workspace: its writable layer has no entry.
  [ ! -e "$SBX_ROOT/sandboxes/$id/upper/workspace" ] || fail "/workspace is in the upper dir"
  run --separate-stderr sbx --json commit --tag ws-untouched "$id"
  expect_status 0
  sbx terminate "$id" >/dev/null
  run --separate-stderr sbx export --compression none ws-untouched "$BATS_TEST_TMPDIR/ws.tar"
  expect_status 0
  mkdir -p "$BATS_TEST_TMPDIR/ws"
  tar --warning=no-unknown-keyword -C "$BATS_TEST_TMPDIR/ws" -xf "$BATS_TEST_TMPDIR/ws.tar"
  # The image's layers (as the export has them) name no workspace entry but
  # the base's: the commit added none.
  local found=0 blob
  for blob in "$BATS_TEST_TMPDIR"/ws/blobs/sha256/*; do
    if tar --warning=no-unknown-keyword -tf "$blob" 2>/dev/null | grep -q '^\(\./\)\?workspace/\?$'; then
      found=$((found + 1))
    fi
  done
  expect_eq "$found" 0 "layers holding workspace"
  sbx rm "$id" >/dev/null
}

@test "copyin: every image has an empty /workspace, the default cwd; a commit does not gain it [runc]" {
  workspace_case runc
}
@test "copyin: every image has an empty /workspace, the default cwd; a commit does not gain it [runsc]" {
  workspace_case runsc
}

# Builds TAG from the payload with the blueprint steps STEPS (JSON).
build_image () {
  local tag=$1 steps=$2 ctx=$BATS_TEST_TMPDIR/ctx-$1
  mkdir -p "$ctx"
  printf '{"base":"payload","steps":%s}\n' "$steps" >"$ctx/blueprint.json"
  run --separate-stderr sbx build --runtime runc --tag "$tag" "$ctx"
  expect_status 0
}

image_case () {
  local rt=$1 id
  require_runtime "$rt"
  mkdir -p "$BATS_TEST_TMPDIR/src"
  printf 'copied\n' >"$BATS_TEST_TMPDIR/src/f"
  # An image with its own WORKDIR keeps it; copy-in still goes to /workspace.
  build_image wd '[{"workdir":"/srv/app"}]'
  id=$(sbx create --runtime "$rt" --image wd --copy-in "$BATS_TEST_TMPDIR/src")
  expect_eq "$(sbx exec "$id" -- sh -c 'pwd; cat /workspace/f')" "/srv/app
copied" "the image's WORKDIR, and the copy"
  sbx terminate --rm "$id" >/dev/null
  # An image whose /workspace is a file: not the cwd, and no copy into it.
  build_image wsfile '[{"run":["rmdir /workspace && echo a-file > /workspace"]}]'
  id=$(sbx create --runtime "$rt" --image wsfile)
  expect_eq "$(sbx exec "$id" -- sh -c 'pwd; cat /workspace')" "/
a-file" "a /workspace file: cwd /"
  sbx terminate --rm "$id" >/dev/null
  expect_error INVALID_ARGUMENT create --runtime "$rt" --image wsfile --copy-in "$BATS_TEST_TMPDIR/src"
  # An image whose /workspace is a symlink (to /etc): not followed.
  build_image wslink '[{"run":["rmdir /workspace && ln -s /etc /workspace"]}]'
  id=$(sbx create --runtime "$rt" --image wslink)
  expect_eq "$(sbx exec "$id" -- pwd)" / "a /workspace symlink: cwd /"
  sbx terminate --rm "$id" >/dev/null
  expect_error PATH_INVALID create --runtime "$rt" --image wslink --copy-in "$BATS_TEST_TMPDIR/src"
  nothing_left
}

@test "copyin: an image's WORKDIR wins; its /workspace file or symlink is not used nor followed [runc]" {
  image_case runc
}
@test "copyin: an image's WORKDIR wins; its /workspace file or symlink is not used nor followed [runsc]" {
  image_case runsc
}
