#!/usr/bin/env bats
# sbx build: blueprints into layers, the cache, failed steps, bad blueprints.

load ../helpers/common

layer_count () {
  find "$SBX_ROOT/layers/sha256" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l
}

# A build context with a five-step blueprint.
make_context () {
  CTX=$BATS_TEST_TMPDIR/ctx
  mkdir -p "$CTX/app/sub"
  printf 'print("hi")\n' >"$CTX/app/main.py"
  printf 'nested\n' >"$CTX/app/sub/n.txt"
  ln -s main.py "$CTX/app/link.py"
  printf 'secret-ish\n' >"$CTX/top.txt"
  cat >"$CTX/blueprint.json" <<'JSON'
{
  "base": "busybox",
  "steps": [
    { "env": { "GREETING": "hello" } },
    { "workdir": "/srv/app" },
    { "run": ["echo $GREETING > greeting", "mkdir -p /opt/x && echo made > /opt/x/f", "rm /etc/hostname"] },
    { "files": [ { "src": "app", "dest": "/srv/app" }, { "src": "top.txt", "dest": "/etc/", "mode": "0600" } ] },
    { "cmd": ["sh", "-c", "cat greeting"] }
  ]
}
JSON
}

build_case () {
  local rt=$1 id
  require_runtime "$rt"
  make_context
  run --separate-stderr sbx --json build --runtime "$rt" --tag app "$CTX"
  expect_status 0
  expect_eq "$(jget 'd["steps"]')" 5 "steps"
  expect_eq "$(jget '[d["cached"], d["config"]]')" "[0, 3]" "cached and config steps of a first build"
  # A config step says so (not cached), a files mode is octal as written.
  expect_contains "$stderr" 'step 1/5 config {"env":["GREETING=hello"]}'
  expect_contains "$stderr" 'step 2/5 config {"workdir":"/srv/app"}'
  expect_contains "$stderr" 'step 3/5 run '
  expect_contains "$stderr" '{"src":"top.txt","dest":"/etc/","mode":"0600"}'
  expect_contains "$stderr" 'step 5/5 config {"cmd":["sh","-c","cat greeting"]}'
  expect_not_contains "$stderr" "cached"
  id=$(jget 'd["id"]')
  # What the image holds.
  run --separate-stderr sbx run --runtime runc --image app -- sh -c \
    'pwd; cat greeting /opt/x/f; stat -c %a /etc/top.txt; readlink link.py; cat sub/n.txt; test -e /etc/hostname || echo no-hostname; echo $GREETING'
  expect_status 0
  expect_eq "$output" "/srv/app
hello
made
600
main.py
nested
no-hostname
hello" "the built image"
  expect_eq "$(sbx --json images | jpipe '[i["layers"] for i in d if "app" in i["tags"]][0].__len__()')" 3 \
    "layers: base, run, files"
  # Without a command, run runs the blueprint's cmd, in its workdir.
  run --separate-stderr sbx run --rm --runtime runc --image app
  expect_status 0
  expect_eq "$output" hello "the image's cmd"
}

@test "build: a five-step blueprint (env, workdir, run, files, cmd) [runc]" { build_case runc; }
@test "build: a five-step blueprint (env, workdir, run, files, cmd) [runsc]" { build_case runsc; }

@test "build: the second build comes from the cache; a changed step rebuilds from there on" {
  require_runtime runc
  local first n
  make_context
  first=$(sbx build --runtime runc "$CTX" 2>/dev/null)
  n=$(layer_count)
  run --separate-stderr sbx --json build --runtime runc "$CTX"
  expect_status 0
  expect_eq "$(jget 'd["id"]')" "$first" "same image"
  expect_eq "$(jget '[d["cached"], d["config"]]')" "[2, 3]" "every layer cached, three config steps"
  expect_eq "$(layer_count)" "$n" "no new layer"
  # A file in the context changes: the files step and what follows run again.
  printf 'print("changed")\n' >"$CTX/app/main.py"
  run --separate-stderr sbx build --runtime runc "$CTX"
  expect_status 0
  expect_contains "$stderr" "step 3/5 cached"
  expect_contains "$stderr" "step 4/5 run"
  [ "$output" != "$first" ] || fail "a changed file made the same image"
  expect_eq "$(sbx run --runtime runc --image "$output" -- cat /srv/app/main.py)" 'print("changed")' "new content"
  # --no-cache runs every step.
  run --separate-stderr sbx build --no-cache --runtime runc "$CTX"
  expect_status 0
  expect_contains "$stderr" "step 3/5 run"
  expect_eq "$(sbx ls -q | wc -l)" 1 "only the sandbox of run is left (no build sandbox)"
}

@test "build: a cached step whose layer the host went down on is made again" {
  require_runtime runc
  local first layer
  make_context
  first=$(sbx build --runtime runc --tag app "$CTX" 2>/dev/null)
  # The run step's layer (the second: base, run, files), as if the host had
  # gone down before it reached the disk.
  layer=$(sbx --json images | jpipe '[i["layers"] for i in d if "app" in i["tags"]][0][1]')
  sbx_wait_settled
  printf '00000000-0000-4000-8000-000000000000' >"$SBX_ROOT/layers/sha256/${layer#sha256:}/pending"
  expect_error INTERNAL run --runtime runc --image app -- true
  run --separate-stderr sbx build --runtime runc --tag app "$CTX"
  expect_status 0
  expect_contains "$stderr" "step 2/5 config"
  expect_contains "$stderr" "step 3/5 run"
  expect_eq "$(sbx run --rm --runtime runc --image app -- cat greeting)" hello "the image built again"
}

@test "build: a failed step shows its output and leaves no layer, no tag, no sandbox" {
  require_runtime runc
  local n
  mkdir -p "$BATS_TEST_TMPDIR/ctx"
  sbx tag busybox base-only
  n=$(layer_count)
  cat >"$BATS_TEST_TMPDIR/ctx/blueprint.json" <<'JSON'
{ "base": "busybox", "steps": [ { "run": "echo made > /file; echo visible-output; echo to-stderr >&2; exit 3" } ] }
JSON
  run --separate-stderr sbx --json build --runtime runc --tag broken "$BATS_TEST_TMPDIR/ctx"
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" INVALID_ARGUMENT "code"
  expect_contains "$(jget 'd["error"]["message"]')" "exited with status 3"
  expect_contains "$stderr" visible-output
  expect_contains "$stderr" to-stderr
  expect_eq "$(layer_count)" "$n" "layers"
  expect_error NOT_FOUND create --pull never --image broken
  expect_eq "$(sbx ls -q | wc -l)" 0 "sandboxes left"
  # A step that needs a Debian base says so.
  printf '{"base":"busybox","steps":[{"apt_packages":["curl"]}]}' >"$BATS_TEST_TMPDIR/ctx/blueprint.json"
  run --separate-stderr sbx build --runtime runc "$BATS_TEST_TMPDIR/ctx"
  expect_status 125
  expect_contains "$stderr" "needs a Debian base"
}

@test "build: bad blueprints are errors naming the key; nothing is built" {
  local d=$BATS_TEST_TMPDIR/bp n
  mkdir -p "$d"
  sbx tag busybox base-only
  n=$(layer_count)
  bad () {
    printf '%s' "$1" >"$d/blueprint.json"
    expect_error INVALID_ARGUMENT build --runtime runc "$d" || return 1
    expect_contains "$output" "$2" || return 1
  }
  bad 'not json' 'blueprint'
  bad '[]' 'expected an object'
  bad '{"steps":[]}' 'base'
  bad '{"base":"busybox","extra":1}' 'unknown key `extra`'
  bad '{"base":"busybox","steps":[{"frobnicate":1}]}' 'steps[0].frobnicate'
  bad '{"base":"busybox","steps":[{"run":"a","env":{}}]}' 'exactly one key'
  bad '{"base":"busybox","steps":[{"run":5}]}' 'steps[0].run'
  bad '{"base":"busybox","steps":[{"apt_packages":["-o=APT::x"]}]}' 'steps[0].apt_packages[0]'
  bad '{"base":"busybox","steps":[{"python_packages":["--index-url=http://x"]}]}' 'steps[0].python_packages[0]'
  bad '{"base":"busybox","steps":[{"python_version":"2.7"}]}' 'steps[0].python_version'
  bad '{"base":"busybox","steps":[{"files":[{"src":"../etc/passwd","dest":"/x"}]}]}' 'steps[0].files[0].src'
  bad '{"base":"busybox","steps":[{"files":[{"src":"a","dest":"x"}]}]}' 'steps[0].files[0].dest'
  bad '{"base":"busybox","steps":[{"files":[{"src":"a","dest":"/x","mode":"999"}]}]}' 'steps[0].files[0].mode'
  bad '{"base":"busybox","steps":[{"files":[{"src":"a","dest":"/x","owner":"me"}]}]}' 'steps[0].files[0].owner'
  bad '{"base":"busybox","steps":[{"env":{"1BAD":"x"}}]}' 'steps[0].env.1BAD'
  bad '{"base":"busybox","steps":[{"workdir":"rel"}]}' 'steps[0].workdir'
  bad '{"base":"busybox","steps":[{"with_docker":"yes"}]}' 'steps[0].with_docker'
  bad '{"base":"not a base!"}' 'base'
  expect_error NOT_FOUND build --runtime runc "$d/nowhere"
  expect_error INVALID_ARGUMENT build --runtime kata "$d"
  expect_eq "$(layer_count)" "$n" "layers"
}

@test "build: a files step never reads outside its context" {
  require_runtime runc
  local d=$BATS_TEST_TMPDIR/ctx
  mkdir -p "$d"
  ln -s /etc "$d/hostetc"
  printf '{"base":"busybox","steps":[{"files":[{"src":"hostetc/passwd","dest":"/x"}]}]}' >"$d/blueprint.json"
  expect_error INVALID_ARGUMENT build --runtime runc "$d"
  # A link itself is copied as a link, not followed.
  printf '{"base":"busybox","steps":[{"files":[{"src":"hostetc","dest":"/hostetc"}]}]}' >"$d/blueprint.json"
  run --separate-stderr sbx build --runtime runc "$d"
  expect_status 0
  expect_eq "$(sbx run --runtime runc --image "$output" -- readlink /hostetc)" /etc "the link"
  expect_eq "$(sbx run --runtime runc --image "$output" -- sh -c 'test -L /hostetc && echo link')" link "kept a link"
}

@test "build: file modes up to 07777, and a workdir set last is made" {
  require_runtime runc
  local d=$BATS_TEST_TMPDIR/ctx id
  mkdir -p "$d"
  printf 'x\n' >"$d/tool"
  printf '{"base":"busybox","steps":[{"files":[{"src":"tool","dest":"/usr/local/bin/","mode":"4755"}]},{"workdir":"/late/dir"}]}' \
    >"$d/blueprint.json"
  run --separate-stderr sbx build --runtime runc "$d"
  expect_status 0
  id=$output
  expect_eq "$(sbx run --runtime runc --image "$id" -- sh -c 'pwd; stat -c %a /usr/local/bin/tool')" "/late/dir
4755" "workdir and mode"
}

# Names that are not ASCII (a UTF-8 name, a symlink to one, as Debian's
# ca-certificates makes) and one that is not UTF-8 at all: a layer keeps
# their bytes, whatever the locale (sbx runs under C).
@test "build: names that are not ASCII, or not UTF-8, survive a layer and an export" {
  require_runtime runc
  local d=$BATS_TEST_TMPDIR/ctx id
  mkdir -p "$d"
  cat >"$d/blueprint.json" <<'JSON'
{"base":"busybox","steps":[{"run":["mkdir -p /n && cd /n && echo a > 'Főtanúsítvány.pem' && ln -s 'Főtanúsítvány.pem' 988a38cb.0 && echo b > \"$(printf 'raw\\377name')\""]}]}
JSON
  run --separate-stderr env LC_ALL=C "$SBX_BIN" build --runtime runc --tag names "$d"
  expect_status 0
  expect_eq "$(sbx run --runtime runc --image names -- sh -c 'readlink /n/988a38cb.0; cat /n/988a38cb.0; for f in /n/*; do printf "%s\n" "${f#/n/}"; done | od -An -c | tr -s " " | tr -d "\n"')" \
    "Főtanúsítvány.pem
a
 9 8 8 a 3 8 c b . 0 \n F 305 221 t a n 303 272 s 303 255 t v 303 241 n y . p e m \n r a w 377 n a m e \n" "names in the image"
  run --separate-stderr sbx export names "$BATS_TEST_TMPDIR/names.tar"
  expect_status 0
  tar -tf "$BATS_TEST_TMPDIR/names.tar" >/dev/null || fail "the export is not a tar"
}

# Ctrl-C or a TERM: passed on to the step's command; the build ends with
# 128 + the signal, as a shell, with nothing tagged and no build sandbox
# left. (TERM here: a background job of a script ignores SIGINT.)
@test "build: interrupted by a signal exits 128+N, tags nothing, leaves no sandbox" {
  require_runtime runc
  local d=$BATS_TEST_TMPDIR/ctx pid rc=0
  mkdir -p "$d"
  printf '{"base":"busybox","steps":[{"run":"echo started; sleep 30"}]}' >"$d/blueprint.json"
  "$SBX_BIN" build --runtime runc --tag never "$d" >"$BATS_TEST_TMPDIR/out" 2>&1 &
  pid=$!
  local i
  for i in $(seq 100); do
    grep -qx started "$BATS_TEST_TMPDIR/out" && break
    sleep 0.1
  done
  grep -qx started "$BATS_TEST_TMPDIR/out" || fail "the step did not start: $(cat "$BATS_TEST_TMPDIR/out")"
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  expect_eq "$rc" 143 "exit status"
  expect_contains "$(cat "$BATS_TEST_TMPDIR/out")" "interrupted by signal 15"
  run sbx images
  expect_not_contains "$output" never
  expect_eq "$(sbx ls -q | wc -l)" 0 "sandboxes left"
}

# debian:SUITE runs debootstrap from PATH. A stand-in here (the real one
# fetches from the distribution's mirror, which only debian.bats reaches):
# it makes a small tree for the suite `good` and fails for any other.
@test "build: debian:SUITE runs debootstrap from PATH; its failure and its absence are errors with their codes" {
  local bin=$BATS_TEST_TMPDIR/bin nobin=$BATS_TEST_TMPDIR/nobin ctx=$BATS_TEST_TMPDIR/ctx saved=$PATH
  mkdir -p "$bin" "$nobin" "$ctx"
  cat >"$bin/debootstrap" <<'SH'
#!/bin/sh
# debootstrap --variant=minbase SUITE DIR
[ "$1" = --variant=minbase ] && [ "$2" = good ] || { echo "stand-in: no suite $2" >&2; exit 1; }
# No fd of the caller's but stdio: only 0, 1, 2 are open here.
ls /proc/self/fd | sort -n | tr '\n' ' ' >"$3/fds"
mkdir -p "$3/etc" && echo stand-in >"$3/etc/debian_version"
echo "stand-in: made $3"
SH
  chmod +x "$bin/debootstrap"
  printf '{ "base": "debian:good", "steps": [ { "env": { "A": "b" } } ] }\n' >"$ctx/blueprint.json"
  export PATH=$bin:$saved
  run --separate-stderr sbx --json build "$ctx"
  export PATH=$saved
  expect_status 0
  local files
  files=$(cat "$SBX_ROOT"/layers/sha256/*/rootfs/etc/debian_version 2>/dev/null)
  expect_eq "$files" stand-in "the tree debootstrap made, as a layer"
  # ls's own directory fd is the one above 2.
  expect_eq "$(cat "$SBX_ROOT"/layers/sha256/*/rootfs/fds 2>/dev/null)" "0 1 2 3 " "fds debootstrap inherited"
  printf '{ "base": "debian:bad", "steps": [ { "env": { "A": "b" } } ] }\n' >"$ctx/blueprint.json"
  export PATH=$bin:$saved
  expect_error INVALID_ARGUMENT build "$ctx"
  export PATH=$saved
  expect_contains "$stderr" "debootstrap of \`bad\` failed"
  # No debootstrap on PATH at all: NOT_FOUND.
  ln -s "$(command -v sh)" "$nobin/sh"
  run --separate-stderr env PATH="$nobin" "$SBX_BIN" --json build "$ctx"
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" NOT_FOUND "the code without debootstrap"
  [ -z "$(find "$SBX_ROOT/layers/tmp" -mindepth 1 -maxdepth 1 -name 'debootstrap-*' 2>/dev/null)" ] \
    || fail "debootstrap directories left: $(ls "$SBX_ROOT/layers/tmp")"
}
