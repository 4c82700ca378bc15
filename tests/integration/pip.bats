#!/usr/bin/env bats
# python_packages: pip inside the build sandbox, against a package index of
# the tests' own (no PyPI here), on an image made from the host's python3 and
# pip (Debian's python3 and python3-pip, as the busybox image is made from
# busybox-static).
#
# The index is a plain HTTP server (tests/helpers/httpindex.py, which looks
# nothing up: http.server's log line asked the host's resolver for the
# client's name) in a namespace this file makes, behind a veth pair from the
# host, at an address of a public range picked clear of the host's routes
# (sbx_pick_test_nets), public to sbx's egress rules. The namespace has no
# default route and an empty resolv.conf of its own. The route to the index
# is checked to lead there before anything is sent.

load ../helpers/common

PORT=8080

net_vars () {
  sbx_pick_test_nets || return
  NS=sxt-pypi-$(printf '%s' "$BATS_FILE_TMPDIR" | sha256sum | cut -c1-6)
  HOST_IF=sxp-h${NS#sxt-pypi-}
  NS_IF=sxp-n${NS#sxt-pypi-}
  INDEX=$(net_host "$SBX_NET_INET4" 80) && LINK_HOST=$(net_host "$SBX_NET_LINK4" 1) \
    && LINK_NS=$(net_host "$SBX_NET_LINK4" 2)
}

net_down () {
  if [ -f "$BATS_FILE_TMPDIR/index.pid" ]; then
    kill "$(cat "$BATS_FILE_TMPDIR/index.pid")" 2>/dev/null || true
    rm -f "$BATS_FILE_TMPDIR/index.pid"
  fi
  ip link del "$HOST_IF" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "/etc/netns/$NS"
  return 0
}

# The python image's rootfs: the host's interpreter, its standard library
# (less tests and GUI), Debian's pip, the shared libraries they load, and
# busybox for a shell.
python_rootfs_tar () {
  local stage=$BATS_FILE_TMPDIR/py-rootfs lib so
  local py
  py=$(readlink -f /usr/bin/python3) || return 1
  [ -x "$py" ] || fail "no /usr/bin/python3 (install python3)"
  [ -d /usr/lib/python3/dist-packages/pip ] || fail "no Debian pip (install python3-pip)"
  rm -rf "$stage"
  mkdir -p "$stage"/bin "$stage"/tmp "$stage"/etc "$stage"/lib64 "$stage"/lib/x86_64-linux-gnu "$stage"/root
  chmod 1777 "$stage"/tmp
  tar -cf - --exclude=__pycache__ --exclude="/usr/lib/${py##*/}/test" --exclude="/usr/lib/${py##*/}/idlelib" \
    --exclude="/usr/lib/${py##*/}/tkinter" --exclude="/usr/lib/${py##*/}/ensurepip" \
    "$py" "/usr/lib/${py##*/}" /usr/lib/python3/dist-packages/pip 2>/dev/null | tar -C "$stage" -xf - || return 1
  ln -s "${py##*/}" "$stage/usr/bin/python3"
  for lib in $( { ldd "$py"; for so in "/usr/lib/${py##*/}"/lib-dynload/*.so; do ldd "$so"; done; } |
    awk '/=>/ { print $3 }' | sort -u); do
    cp -L "$lib" "$stage/lib/x86_64-linux-gnu/" || return 1
  done
  so=$(ldd "$py" | awk '/ld-linux/ { print $1 }')
  cp -L "$so" "$stage/lib64/" || return 1
  cp "$SBX_BUSYBOX" "$stage/bin/busybox"
  for lib in sh cat ls; do ln -s busybox "$stage/bin/$lib"; done
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
  tar --numeric-owner --owner=0 --group=0 -C "$stage" -cf "$BATS_FILE_TMPDIR/py.tar" . || return 1
  rm -rf "$stage"
}

setup_file () {
  [ "$(uname -m)" = x86_64 ] || skip "the python image is assembled for x86_64"
  python_rootfs_tar || return 1
  py "$SBX_TESTS_DIR/helpers/pyindex.py" "$BATS_FILE_TMPDIR/index" || return 1
  sbx_net_lock || return
  local rc=0
  net_setup || rc=$?
  sbx_net_unlock
  [ $rc -eq 0 ] || return $rc
  ip netns exec "$NS" "$PYTHON" -I -S "$SBX_TESTS_DIR/helpers/httpindex.py" "$INDEX" "$PORT" \
    "$BATS_FILE_TMPDIR/index" >"$BATS_FILE_TMPDIR/index.log" 2>&1 &
  echo $! >"$BATS_FILE_TMPDIR/index.pid"
  local i
  for ((i = 0; i < 100; i++)); do
    ip netns exec "$NS" "$PYTHON" -I -S -c "import urllib.request; urllib.request.urlopen('http://$INDEX:$PORT/simple/')" \
      2>/dev/null && return 0
    sleep 0.1
  done
  net_down
  fail "the test index did not come up: $(cat "$BATS_FILE_TMPDIR/index.log")"
}

net_setup () {
  net_vars || return
  net_down
  # `ip netns exec` puts this over /etc/resolv.conf: nothing to ask.
  mkdir -p "/etc/netns/$NS" && : >"/etc/netns/$NS/resolv.conf"
  ip netns add "$NS"
  ip link add "$HOST_IF" type veth peer name "$NS_IF" netns "$NS"
  ip addr add "$LINK_HOST/30" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  ip -n "$NS" link set lo up
  ip -n "$NS" addr add "$LINK_NS/30" dev "$NS_IF"
  ip -n "$NS" link set "$NS_IF" up
  ip -n "$NS" addr add "$INDEX/32" dev lo
  ip route add "$INDEX/32" via "$LINK_NS" dev "$HOST_IF"
  local r
  r=$(ip route get "$INDEX" 2>&1)
  case $r in
    *" dev $HOST_IF "*) ;;
    *) net_down; fail "the route to $INDEX does not lead into the test namespace ($r)" ;;
  esac
}

teardown_file () {
  net_vars
  net_down
}

setup () {
  net_vars || return
  sbx_setup
}

# A blueprint on the python image that points pip at the test index.
make_context () {
  local req=$1
  CTX=$BATS_TEST_TMPDIR/ctx
  mkdir -p "$CTX"
  cat >"$CTX/blueprint.json" <<JSON
{
  "base": "py",
  "steps": [
    { "env": { "PIP_INDEX_URL": "http://$INDEX:$PORT/simple/", "PIP_TRUSTED_HOST": "$INDEX",
               "PIP_DISABLE_PIP_VERSION_CHECK": "1" } },
    { "python_packages": ["$req"] }
  ]
}
JSON
}

import_py () {
  local out
  out=$(sbx import --tag py "$BATS_FILE_TMPDIR/py.tar" 2>&1) || fail "import the python image: $out"
}

pip_case () {
  local rt=$1 id n
  require_runtime "$rt"
  import_py
  make_context 'sbxdemo==1.0'
  run --separate-stderr sbx --json build --runtime "$rt" --tag withpkg "$CTX"
  expect_status 0
  expect_eq "$(jget 'd["steps"]')" 2 "steps"
  id=$(jget 'd["id"]')
  run --separate-stderr sbx run --runtime runc --block-network --image withpkg -- \
    python3 -c 'import sbxdemo, importlib.metadata as m; print(sbxdemo.VALUE, m.version("sbxdemo"))'
  expect_status 0
  expect_eq "$output" "42 1.0" "the installed package, in the built image"
  grep -q 'GET /packages/sbxdemo-1.0-py3-none-any.whl' "$BATS_FILE_TMPDIR/index.log" ||
    fail "pip did not fetch the wheel from the test index: $(cat "$BATS_FILE_TMPDIR/index.log")"
  # The second build is the cache's: pip does not run again.
  n=$(grep -c 'GET /packages/' "$BATS_FILE_TMPDIR/index.log")
  run --separate-stderr sbx --json build --runtime "$rt" --tag withpkg "$CTX"
  expect_status 0
  expect_eq "$(jget 'd["id"]')" "$id" "same image"
  expect_eq "$(jget '[d["cached"], d["config"]]')" "[1, 1]" "the layer cached, the env step config"
  expect_eq "$(grep -c 'GET /packages/' "$BATS_FILE_TMPDIR/index.log")" "$n" "downloads"
}

@test "pip: python_packages installs from the index the blueprint's env names, and caches [runc]" { pip_case runc; }
@test "pip: python_packages installs from the index the blueprint's env names, and caches [runsc]" { pip_case runsc; }

@test "pip: a requirement pip cannot satisfy fails the build with pip's message; no layer, no tag" {
  require_runtime runc
  local layers
  import_py
  layers=$(find "$SBX_ROOT/layers/sha256" -mindepth 1 -maxdepth 1 | wc -l)
  make_context 'sbxdemo==9.9'
  run --separate-stderr sbx --json build --runtime runc --tag nopkg "$CTX"
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" INVALID_ARGUMENT "code"
  expect_contains "$stderr" "No matching distribution found for sbxdemo==9.9"
  expect_eq "$(find "$SBX_ROOT/layers/sha256" -mindepth 1 -maxdepth 1 | wc -l)" "$layers" "layers"
  expect_error NOT_FOUND create --pull never --image nopkg
  expect_eq "$(sbx ls -q | wc -l)" 0 "sandboxes left"
}

@test "pip: python_packages on an image without python3 says so" {
  require_runtime runc
  mkdir -p "$BATS_TEST_TMPDIR/ctx"
  printf '{"base":"busybox","steps":[{"python_packages":["sbxdemo"]}]}' >"$BATS_TEST_TMPDIR/ctx/blueprint.json"
  run --separate-stderr sbx build --runtime runc "$BATS_TEST_TMPDIR/ctx"
  expect_status 125
  expect_contains "$stderr" "python_packages needs python3 in the image"
}
