"""Issue 19's example of shape C, as written there
(tests/python/examples/example_c.py), run by a Python of its own with the
SDK on its path, in this module's throwaway root. Shapes A and B build
Debian images: test_examples_debian.py, run with SBX_TEST_DEBIAN=1."""

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
