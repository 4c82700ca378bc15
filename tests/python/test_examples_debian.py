"""Issue 19's examples of shapes A and B, as written there (A: the
package's contrib/python/examples copy; B: tests/python/examples), each
run by a Python of its own with the SDK on its path, in this module's throwaway root. Collected only with
SBX_TEST_DEBIAN=1 (conftest.py): they take ten minutes or more on a 2-CPU
host, past what `make check` may spend on the SDK.

Shapes A and B build Debian images (python_version 3.11: debian:bookworm,
apt_packages), which needs debootstrap and the distribution's mirror, as
tests/integration/debian.bats does (with its sbx.conf: the host's resolvers,
not the tests' silent one); both share one base build (the build cache of
this module's root)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import HERE, SDK, require_runtime


@pytest.fixture(scope="module", autouse=True)
def host_dns_conf(sbx_root):
    """The module's sbx.conf less its `dns` line: builds resolve the mirror."""
    path = sbx_root["SBX_CONF"]
    with open(path) as f:
        lines = f.read().splitlines()
    with open(path, "w") as f:
        f.write("# written by test_examples.py: the host's resolvers\n")
        f.write("\n".join(l for l in lines if l.startswith("pool4")) + "\n")
    yield


def run_example(path: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = SDK
    return subprocess.run([sys.executable, path], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_example_a():
    require_runtime("runsc")
    # The package's own copy: shape A needs no change to run here.
    out = run_example(os.path.join(SDK, "examples", "a_spec_then_create.py"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "0"]


def test_example_b():
    require_runtime("runsc")
    out = run_example(os.path.join(HERE, "examples", "example_b.py"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("0 Python 3.11."), out.stdout
