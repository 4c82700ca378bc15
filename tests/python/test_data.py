"""Data in through the SDK (issue 20): ``secrets`` (values as a dict, or the
names of sbx secrets), ``allow_secrets``, and ``volumes`` (named volumes and
host directories). Both runtimes."""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest

import sbx
from sbx import Sandbox
from sbx._cli import argv


def _secret_names() -> list[str]:
    out = subprocess.run(argv(["secret", "ls", "-q"], json=False), stdout=subprocess.PIPE, check=True)
    return out.stdout.decode().split()


def test_secret_values_reach_the_sandbox_and_leave_the_store(runtime):
    before = _secret_names()
    box = Sandbox(image="busybox", runtime=runtime, block_network=True,
                  secrets={"API_KEY": "s3cr3t-sdk"}, allow_secrets=True).create()
    try:
        r = box.process.exec("sh", "-c", "echo $API_KEY")
        assert r.wait(timeout=30) == 0 and r.stdout.read() == b"s3cr3t-sdk\n"
        assert "s3cr3t-sdk" not in str(box.info())
    finally:
        box.terminate()
    assert _secret_names() == before  # the SDK's own secret went with the create


def test_secrets_need_allow_secrets(runtime):
    with pytest.raises(sbx.SecretsNotAllowedError):
        Sandbox(image="busybox", runtime=runtime, block_network=True, secrets={"K": "v"}).create()
    assert not [n for n in _secret_names() if n.startswith("sdk-")]


def test_secret_names_and_bad_shapes():
    subprocess.run(argv(["secret", "create", "sdk-test-named"], json=False), input=b"named-value", check=True)
    try:
        box = Sandbox(image="busybox", runtime="runc", block_network=True, secrets=["sdk-test-named=TOKEN"],
                      allow_secrets=True).create()
        try:
            r = box.process.exec("sh", "-c", "echo $TOKEN")
            assert r.wait(timeout=30) == 0 and r.stdout.read() == b"named-value\n"
        finally:
            box.terminate()
    finally:
        subprocess.run(argv(["secret", "rm", "sdk-test-named"], json=False), check=True)
    with pytest.raises(sbx.InvalidArgumentError):
        Sandbox(image="busybox", secrets={"not a var": "v"}, allow_secrets=True)
    with pytest.raises(sbx.InvalidArgumentError):
        Sandbox(image="busybox", secrets="K=v", allow_secrets=True)
    with pytest.raises(sbx.InvalidArgumentError):
        Sandbox(image="busybox", volumes=["/data"])


def test_volumes_named_and_host(runtime):
    with tempfile.TemporaryDirectory(dir="/var/tmp") as host:
        with open(os.path.join(host, "f"), "w") as f:
            f.write("from the host\n")
        a = Sandbox(image="busybox", runtime=runtime, block_network=True,
                    volumes={"/data": "sdk-test-vol", "/h": host}).create()
        b = Sandbox(image="busybox", runtime=runtime, block_network=True,
                    volumes={"/data": "sdk-test-vol:ro"}).create()
        try:
            w = a.process.exec("sh", "-c", "echo shared > /data/x && cat /h/f && ! touch /h/g")
            assert w.wait(timeout=30) == 0 and w.stdout.read() == b"from the host\n"
            r = b.process.exec("sh", "-c", "cat /data/x && ! touch /data/y")
            assert r.wait(timeout=30) == 0 and r.stdout.read() == b"shared\n"
        finally:
            a.terminate(remove=True)
            b.terminate(remove=True)
            subprocess.run(argv(["volume", "rm", "sdk-test-vol"], json=False), check=True)
