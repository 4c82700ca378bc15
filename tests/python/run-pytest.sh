#!/bin/sh
# The Python SDK's pytest suite (tests/python) as one `make check` entry,
# reported as TAP (one line per pytest test) for automake's TAP driver.
# Debian's python3-pytest under the system python3 runs it against the
# build (SBX_BIN, SBX_INIT, SBX_SRCDIR from AM_TESTS_ENVIRONMENT) and the
# SDK in contrib/python. A missing python3 or pytest is a SKIP, a failure
# under SBX_TEST_STRICT=1. Extra arguments go to pytest (-k EXPR, a file).
# SBX_TEST_DEBIAN=1 adds issue 19's examples A and B, which build Debian
# images from the mirror (test_examples_debian.py: ten minutes or more).
set -u
: "${SBX_SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
export SBX_SRCDIR
: "${SBX_TESTS_DIR:=$SBX_SRCDIR/tests}"
export SBX_TESTS_DIR
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)

missing () {
  if [ "${SBX_TEST_STRICT:-0}" = 1 ]; then
    echo "1..1"
    echo "not ok 1 - $1 (SBX_TEST_STRICT=1: contrib/setup-debian.sh installs it)"
    exit 1
  fi
  echo "1..0 # SKIP $1"
  exit 0
}

[ -n "$py" ] || missing "no python3"
"$py" -c 'import pytest' 2>/dev/null || missing "no pytest for $py (Debian: python3-pytest)"

xml=$(mktemp /tmp/sbx-pytest.XXXXXX.xml) || exit 1
trap 'rm -f "$xml"' EXIT
# pytest's own report goes to stderr (the log), the TAP lines to stdout.
"$py" -m pytest -q -p no:cacheprovider --junitxml="$xml" "$SBX_SRCDIR/tests/python" "$@" >&2
rc=$?
"$py" - "$xml" "$rc" <<'PY'
import sys
import xml.etree.ElementTree as ET

path, rc = sys.argv[1], int(sys.argv[2])
try:
    cases = list(ET.parse(path).getroot().iter("testcase"))
except (OSError, ET.ParseError) as e:
    cases = []
n = 0
lines = []
for c in cases:
    n += 1
    name = "%s::%s" % (c.get("classname", "").rsplit(".", 1)[-1], c.get("name"))
    bad = c.find("failure") if c.find("failure") is not None else c.find("error")
    skip = c.find("skipped")
    if bad is not None:
        lines.append("not ok %d - %s" % (n, name))
        lines += ["# " + l for l in (bad.get("message") or "").splitlines()[:20]]
    elif skip is not None:
        lines.append("ok %d - %s # SKIP %s" % (n, name, (skip.get("message") or "").splitlines()[0:1] and
                                             (skip.get("message") or "").splitlines()[0]))
    else:
        lines.append("ok %d - %s" % (n, name))
# pytest's status: 0 all passed, 1 some failed, 5 none collected; any other
# (2 interrupted, 3 internal, 4 usage) is one more failure.
if rc not in (0, 1) or n == 0:
    n += 1
    lines.append("not ok %d - pytest exited %d%s" % (n, rc, " (no test collected)" if rc == 5 else ""))
print("1..%d" % n)
print("\n".join(lines))
PY
