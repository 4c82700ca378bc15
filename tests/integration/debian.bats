#!/usr/bin/env bats
# Blueprints on a Debian base: debian:SUITE made by debootstrap from its
# default mirror, then apt_packages and python_version run by apt-get inside
# the build sandbox, through sbx's network (its resolver forwards to the
# host's). This needs the distribution's package mirror, which CI has; it
# takes about two and a half minutes, most of it debootstrap and apt.

load ../helpers/common

# The host's own resolvers (no test DNS server here), the usual test pool.
# The one test that reaches past the test namespaces, and says so: the
# resolver guard would drop its lookups of the mirror.
host_dns_conf () {
  sbx_pick_test_nets || return
  cat >"$SBX_TEST_DIR/sbx.conf" <<-EOF
	# written by debian.bats: the host's resolvers
	pool4 = $SBX_NET_POOL4
	EOF
  sbx_guard_off "debootstrap and apt fetch from the distribution's mirror"
}

@test "debian: debian:bookworm + apt_packages + python_version builds, runs, and an unknown version is a clear error" {
  require_runtime runsc
  command -v debootstrap >/dev/null || fail "no debootstrap (install it)"
  host_dns_conf
  local ctx=$BATS_TEST_TMPDIR/ctx layers
  mkdir -p "$ctx"
  cat >"$ctx/blueprint.json" <<'JSON'
{ "base": "debian:bookworm", "steps": [ { "apt_packages": ["jq"] }, { "python_version": "3.11" } ] }
JSON
  run --separate-stderr sbx --json build --tag deb "$ctx"
  expect_status 0
  expect_eq "$(jget 'd["steps"]')" 2 "steps"
  run --separate-stderr sbx run --runtime runc --block-network --image deb -- sh -c \
    'echo "{\"a\":[1,2]}" | jq -c .a; python3 -c "import sys; print(sys.version_info[:2])"; python3 -m pip --version >/dev/null && echo pip; test -e /var/lib/apt/lists/lock || echo lists-cleaned'
  expect_status 0
  expect_eq "$output" "[1,2]
(3, 11)
pip
lists-cleaned" "jq, python 3.11 and pip in the built image"
  # The base is cached now: an unavailable version fails at once, by name,
  # and leaves nothing.
  layers=$(find "$SBX_ROOT/layers/sha256" -mindepth 1 -maxdepth 1 | wc -l)
  cat >"$ctx/blueprint.json" <<'JSON'
{ "base": "debian:bookworm", "steps": [ { "python_version": "3.9" } ] }
JSON
  run --separate-stderr sbx --json build --tag old "$ctx"
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" INVALID_ARGUMENT "code"
  expect_contains "$stderr" "python_version 3.9: no package python3.9 in this base"
  expect_eq "$(find "$SBX_ROOT/layers/sha256" -mindepth 1 -maxdepth 1 | wc -l)" "$layers" "layers"
  expect_error NOT_FOUND create --pull never --image old
}
