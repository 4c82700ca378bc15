"""The three example programs of issue 19, as written there
(tests/python/examples/), each run by a Python of its own with the SDK on
its path, in this module's throwaway root.

Shapes A and B build Debian images (python_version 3.11: debian:bookworm,
apt_packages), which needs debootstrap and the distribution's mirror, as
tests/integration/debian.bats does; both share one base build (the build
cache of this module's root)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import HERE, SDK, require_runtime


def run_example(name: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = SDK
    return subprocess.run([sys.executable, os.path.join(HERE, "examples", name)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_example_c():
    require_runtime("runsc")
    out = run_example("example_c.py", 300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["b'in\\n'", "b'done\\n'", "example C done data.txt"]


def test_example_a():
    require_runtime("runsc")
    out = run_example("example_a.py")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "0"]


def test_example_b():
    require_runtime("runsc")
    out = run_example("example_b.py")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("0 Python 3.11."), out.stdout
