"""The initial command through the SDK: `Sandbox(command=[...])` is
`sbx create -- CMD`, started in the background before create returns, and
`exit_with_command=True` is `--exit-with-cmd`. Both runtimes."""

from __future__ import annotations

import time

import pytest

import sbx
from sbx import Sandbox


def _wait_output(proc, want: bytes, secs: float = 20) -> bytes:
    until = time.monotonic() + secs
    out = b""
    while time.monotonic() < until:
        out = proc.stdout.read(follow=False)
        if want in out:
            return out
        time.sleep(0.2)
    return out


def test_command_runs_in_the_background(runtime):
    box = Sandbox(image="busybox", runtime=runtime, env={"GREETING": "hi"}, workdir="/tmp",
                  command=["sh", "-c", "echo $GREETING $(pwd); exec sleep 600"]).create()
    try:
        p = box.initial_process()
        assert p is not None and isinstance(p.pid, int)
        assert p.status()["state"] == "running" and p.status()["initial"] is True
        assert any(q["pid"] == p.pid and q["initial"] for q in box.process.list_processes())
        assert b"hi /tmp\n" in _wait_output(p, b"hi /tmp")
        assert box.info()["options"]["cmd"] == ["sh", "-c", "echo $GREETING $(pwd); exec sleep 600"]
        p.kill()
        assert p.wait(timeout=30) == 137
        assert box.status() == "running"  # without exit_with_command it outlives the command
    finally:
        box.terminate()


def test_exit_with_command_ends_the_sandbox_with_its_code(runtime):
    box = Sandbox.create("busybox", runtime=runtime, command="sleep 1; exit 3", exit_with_command=True,
                         workspace=None)
    assert box.wait(timeout=60) == "terminated"
    assert box.poll() == 3
    info = box.info()
    assert (info["reason"], info["exit_code"]) == ("exited", 3)
    # A command over before create is done: the sandbox's end is its result, not an error.
    box = Sandbox.create("busybox", runtime=runtime, command=["sh", "-c", "exit 4"], exit_with_command=True)
    assert box.wait(timeout=60) == "terminated" and box.poll() == 4


def test_a_command_that_cannot_start_fails_the_create(runtime):
    with pytest.raises(sbx.NotFoundError):
        Sandbox(image="busybox", runtime=runtime, command=["/no/such/command"]).create()
    assert not [s for s in Sandbox.list() if s.info().get("options", {}).get("cmd") == ["/no/such/command"]]


def test_bad_command_options_are_refused_before_anything_runs():
    for bad in ([], [""], "", "  ", [1, 2], b"true", 3):
        with pytest.raises(sbx.InvalidArgumentError) as e:
            Sandbox(image="busybox", command=bad)
        assert "command" in str(e.value)
    with pytest.raises(sbx.InvalidArgumentError) as e:
        Sandbox(image="busybox", exit_with_command=True)
    assert "exit_with_command" in str(e.value)
    # The command goes last, after --.
    assert Sandbox(image="busybox", command=["true"])._create_args()[-2:] == ["--", "true"]
