"""Fixtures of the SDK's pytest suite (tests/python): a throwaway sbx root per
test module, made and leak-checked by sbxenv.sh (the bats helpers' code),
the SDK imported from contrib/python, and the runtimes to test.

Run through run-pytest.sh (make check), which sets SBX_BIN, SBX_INIT,
SBX_TESTS_DIR and SBX_SRCDIR to the build; SBX_TEST_STRICT=1 makes a
missing runtime a failure instead of a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("SBX_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
os.environ.setdefault("SBX_TESTS_DIR", os.path.join(SRCDIR, "tests"))
os.environ.setdefault("SBX_BIN", os.path.join(SRCDIR, "sbx"))
os.environ.setdefault("SBX_INIT", os.path.join(SRCDIR, "sbx-init"))
SDK = os.environ.get("SBX_SDK_PATH") or os.path.join(SRCDIR, "contrib", "python")
if SDK not in sys.path:
    sys.path.insert(0, SDK)

RUNTIMES = ("runsc", "runc")

# Shapes A and B build Debian images from the distribution's mirror (minutes
# of debootstrap and apt): only when asked for.
collect_ignore = [] if os.environ.get("SBX_TEST_DEBIAN") == "1" else ["test_examples_debian.py"]
STRICT = os.environ.get("SBX_TEST_STRICT") == "1"


def sbx_cli(*args: str, check: bool = True, input: bytes | None = None) -> subprocess.CompletedProcess:
    """Runs the sbx binary of the build (not through the SDK), in this module's root."""
    return subprocess.run([os.environ["SBX_BIN"], *args], capture_output=True, check=check, input=input)


def sbx_json(*args: str):
    return json.loads(sbx_cli("--json", *args).stdout)


def _runtime_available(name: str) -> bool:
    try:
        return bool(sbx_json("info")["runtimes"][name]["available"])
    except (subprocess.CalledProcessError, KeyError, ValueError):
        return False


def require_runtime(name: str) -> None:
    if not _runtime_available(name):
        if STRICT:
            pytest.fail(f"runtime {name} is not available here (SBX_TEST_STRICT=1)")
        pytest.skip(f"runtime {name} is not available here")


@pytest.fixture(scope="module", autouse=True)
def sbx_root(tmp_path_factory):
    """A throwaway SBX_ROOT (and run root, sbx.conf) for the module; at its end,
    every sandbox is ended, `sbx gc` runs and nothing of the root may be left:
    no mount, netns, veth, nft object, cgroup, runtime container, monitor, nor
    an sbx process the SDK started."""
    state = tmp_path_factory.mktemp("sbxenv")
    out = subprocess.run(["bash", os.path.join(HERE, "sbxenv.sh"), "setup", str(state)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        pytest.fail("sbxenv.sh setup failed: " + out.stderr + out.stdout)
    env = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    saved = {k: os.environ.get(k) for k in ("SBX_ROOT", "SBX_RUN_ROOT", "SBX_CONF")}
    for k in saved:
        os.environ[k] = env[k]
    yield env
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    out = subprocess.run(["bash", os.path.join(HERE, "sbxenv.sh"), "teardown", env["SBX_TEST_DIR"]],
                         capture_output=True, text=True)
    if out.returncode != 0:
        pytest.fail("LEAK after the module (sbxenv.sh teardown):\n" + out.stdout + out.stderr)


@pytest.fixture(scope="module", params=RUNTIMES)
def runtime(request, sbx_root):
    require_runtime(request.param)
    return request.param


@pytest.fixture(scope="module")
def sb(runtime):
    """One busybox sandbox per runtime, shared by the tests of a module that
    do not change it."""
    import sbx

    box = sbx.Sandbox.create("busybox", runtime=runtime)
    yield box
    box.terminate()
