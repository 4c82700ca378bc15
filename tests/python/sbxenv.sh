#!/bin/bash
# The throwaway sbx root of one pytest module, made and checked by the same
# code as the bats tests' (tests/helpers/common.bash), so that the Python
# suite leaks nothing the bats suite would not let pass.
#
#   sbxenv.sh setup STATEDIR     prints KEY=VALUE lines (SBX_TEST_DIR,
#                                SBX_ROOT, SBX_RUN_ROOT, SBX_CONF, SBX_TAG)
#   sbxenv.sh teardown TESTDIR   ends what is left, sbx gc, then the leak
#                                check; prints the leaks and exits 1 if any
#
# STATEDIR keeps what common.bash keeps per bats file (the test networks).
# SBX_BIN, SBX_INIT and SBX_TESTS_DIR come from the environment.
set -u
bats_require_minimum_version () { :; }
skip () { echo "skip: $*" >&2; return 1; }
BATS_TEST_DIRNAME=${SBX_TESTS_DIR:?}/integration
# shellcheck source=../helpers/common.bash
source "$SBX_TESTS_DIR/helpers/common.bash" || exit 1

case ${1-} in
setup)
  export BATS_FILE_TMPDIR=${2:?}
  mkdir -p "$BATS_FILE_TMPDIR"
  SBX_TEST_DIR=$(mktemp -d /tmp/sbx-test.XXXXXX) || exit 1
  export SBX_TEST_DIR SBX_ROOT=$SBX_TEST_DIR/root SBX_RUN_ROOT=$SBX_TEST_DIR/run
  SBX_TAG=$(printf '%s' "$(realpath -m "$SBX_ROOT")" | sha256sum | cut -c1-8)
  sbx_write_conf || exit 1
  _sbx_net_names >"$SBX_TEST_DIR/net-before"
  printf 'SBX_TEST_DIR=%s\nSBX_ROOT=%s\nSBX_RUN_ROOT=%s\nSBX_CONF=%s\nSBX_TAG=%s\n' \
    "$SBX_TEST_DIR" "$SBX_ROOT" "$SBX_RUN_ROOT" "$SBX_CONF" "$SBX_TAG"
  ;;
teardown)
  export SBX_TEST_DIR=${2:?}
  [ -d "$SBX_TEST_DIR" ] || exit 0
  export SBX_ROOT=$SBX_TEST_DIR/root SBX_RUN_ROOT=$SBX_TEST_DIR/run SBX_CONF=$SBX_TEST_DIR/sbx.conf
  SBX_TAG=$(printf '%s' "$(realpath -m "$SBX_ROOT")" | sha256sum | cut -c1-8)
  _sbx_net_before=$(cat "$SBX_TEST_DIR/net-before")
  SBX_GUARD=
  # An `sbx` the SDK started (an exec, a create) that outlived the tests.
  stray=
  for p in $(sbx_pids sbx); do
    tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SBX_ROOT=$SBX_ROOT" && stray="$stray $p"
  done
  [ -z "$stray" ] || echo "sbx processes of this root still running:$stray"
  # The sandboxes this root ever had: on a shared host, network objects of
  # other roots' sandboxes come and go during a module's minutes, so the
  # network part of the leak check keeps only this root's (by the sandbox
  # id in the name, or in an address lease).
  ids=$(ls -A "$SBX_ROOT/sandboxes" 2>/dev/null | sed -n 's/^sb-//p' | paste -sd'|')
  for id in $("$SBX_BIN" ls -q 2>/dev/null); do
    case $(state_of "$id" 2>/dev/null) in
      running | creating | terminating) "$SBX_BIN" terminate "$id" >/dev/null 2>&1 ;;
    esac
  done
  rc=0
  out=$("$SBX_BIN" gc 2>&1) || { echo "sbx gc failed: $out"; rc=1; }
  leaks=$(sbx_leaks | while IFS= read -r l; do
    case $l in
      "network: sbx lease addr-"*)
        # The lease names its sandbox.
        [ -n "$ids" ] && grep -Eqs "$ids" "/run/sbx/leases/${l#network: sbx lease }" && echo "$l" ;;
      "network: "*) [ -n "$ids" ] && grep -Eq "$ids" <<<"$l" && echo "$l" ;;
      *) echo "$l" ;;
    esac
  done)
  if [ -n "$leaks" ]; then
    printf 'LEAK after sbx gc (root %s, tag %s):\n%s\n' "$SBX_ROOT" "$SBX_TAG" "$leaks"
    rc=1
    _sbx_force_cleanup
  fi
  if grep -qF "$SBX_TEST_DIR" /proc/mounts; then
    echo "leaving $SBX_TEST_DIR in place: still mounted"
    exit 1
  fi
  rm -rf --one-file-system "$SBX_TEST_DIR"
  [ -z "$stray" ] || rc=1
  exit "$rc"
  ;;
*)
  echo "usage: sbxenv.sh setup STATEDIR | teardown TESTDIR" >&2
  exit 2
  ;;
esac
