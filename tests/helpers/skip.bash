# bats' skip, made strict: SBX_TEST_STRICT=1 (CI) turns every skip into a
# failure, since a skip hides a missing tool, runtime or kernel feature as
# well as it hides a bug. Loaded by common.bash, and on its own by the files
# that need neither root nor a store (docs.bats).
#
# A check whose tool is missing says so with `command -v TOOL >/dev/null ||
# skip "..."`; never `return 0` or `if command -v TOOL; then ...; fi`, which
# pass without checking anything.

eval "_sbx_bats_skip () $(declare -f skip | tail -n +2)"
skip () {
  if [ "${SBX_TEST_STRICT:-0}" = 1 ]; then
    echo "skip in strict mode (SBX_TEST_STRICT=1): $*" >&2
    return 1
  fi
  _sbx_bats_skip "$@"
}
