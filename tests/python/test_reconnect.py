"""A sandbox made in one process is picked up in another: Sandbox.connect
in a subprocess (its own Python, the SDK imported afresh) runs commands and
writes files this process then sees; what it starts outlives it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import sbx
from conftest import SDK

CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import sbx
    box = sbx.Sandbox.connect(sys.argv[2])
    assert box.status() == "running"
    box.write_file("/from-child", b"child was here")
    p = box.exec("sh", "-c", "echo $((6 * 7))")
    assert p.wait() == 0
    print(p.stdout.read().decode().strip())
    bg = box.process.exec("sleep", "300")
    print(bg.pid)
""")


def test_connect_from_a_second_process(sb):
    out = subprocess.run([sys.executable, "-c", CHILD, SDK, sb.id], capture_output=True, text=True, timeout=120,
                         env=os.environ)
    assert out.returncode == 0, out.stderr
    answer, pid = out.stdout.split()
    assert answer == "42"
    assert sb.read_file("/from-child") == b"child was here"
    p = sb.process.get_process(int(pid))
    assert p.status()["state"] == "running"
    p.kill()
    assert p.wait(timeout=15) != 0
