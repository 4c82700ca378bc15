"""Shape A, spec then create (`Sandbox(options).create()`), with the
`process` and `fs` groups, network, lifetime and images; shape B (App and
Image) on the same sandboxes. Both runtimes; memory snapshots on runsc."""

from __future__ import annotations

import os
import time

import pytest

import sbx
from sbx import App, Image, Sandbox


@pytest.fixture(scope="module")
def box(runtime):
    b = Sandbox(image="busybox", cpu="500m", memory="256Mi", runtime=runtime, keep_warm_seconds=600,
                env={"GREETING": "hi"}).create()
    yield b
    b.terminate()


def test_identity_and_connect(box):
    assert box.sandbox_id() == box.id == box.object_id
    same = Sandbox.connect(box.id)
    assert same.id == box.id and same.status() == "running"
    assert Sandbox(image="busybox").connect(box.id).id == box.id


def test_run_code_and_result(box):
    r = box.process.run_code("echo $((1 + 2)); echo $GREETING", language="sh")
    assert (r.result, r.exit_code) == ("3\nhi\n", 0) or (r.result.strip(), r.exit_code) == ("3\nhi", 0)
    r = box.process.run_code("exit 4", language="sh")
    assert r.exit_code == 4


def test_background_process(box):
    p = box.process.exec("sh", "-c", "echo out; echo err >&2; sleep 1; exit 5", cwd="/tmp", env={"A": "1"})
    assert isinstance(p.pid, int)
    assert p.wait(timeout=30) == 5
    assert p.status()["state"] == "exited" and p.returncode == 5 and p.poll() == 5
    assert p.stdout.read() == b"out\n"
    assert p.stderr.read() == b"err\n"
    assert sorted(p.logs.read().splitlines()) == [b"err", b"out"]
    assert list(p.stdout.lines()) == [b"out\n"]
    assert [x for x in p.stdout] == [b"out\n"]
    got = box.process.get_process(p.pid)
    assert got.status()["pid"] == p.pid
    assert any(q["pid"] == p.pid for q in box.process.list_processes())
    assert any(q["pid"] == p.pid for q in box.list_processes())
    with pytest.raises(sbx.NotFoundError):
        box.process.get_process(99999)


def test_kill_background_process(box):
    p = box.process.exec("sleep", "60")
    p.kill()
    rc = p.wait(timeout=15)
    assert rc != 0 and p.status()["state"] in ("exited", "killed", "signaled")


def test_fs_methods(box, tmp_path):
    fs = box.fs
    fs.write_text("/workspace/notes.md", "# hello")
    assert fs.read_text("/workspace/notes.md") == "# hello"
    fs.write_bytes("/workspace/b.bin", b"\x00\x01")
    assert fs.read_bytes("/workspace/b.bin") == b"\x00\x01"
    local = tmp_path / "up.txt"
    local.write_bytes(b"uploaded")
    fs.upload_file(str(local), "/workspace/up.txt")
    fs.download_file("/workspace/up.txt", str(tmp_path / "down.txt"))
    assert (tmp_path / "down.txt").read_bytes() == b"uploaded"
    names = {e["name"] for e in fs.list_files("/workspace")}
    assert {"notes.md", "b.bin", "up.txt"} <= names
    st = fs.stat_file("/workspace/up.txt")
    assert st["size_bytes"] == 8 and st["type"] == "file"
    fs.create_directory("/workspace/d/e")
    assert fs.stat_file("/workspace/d/e")["type"] == "dir"
    fs.write_text("/workspace/d/e/x.txt", "needle here\nno\n")
    found = fs.find_in_files("/workspace/d", "needle")
    assert [f["path"] for f in found] == ["/workspace/d/e/x.txt"]
    fs.replace_in_files("/workspace/d", "needle", "pin")
    assert fs.read_text("/workspace/d/e/x.txt") == "pin here\nno\n"
    fs.delete_file("/workspace/d/e/x.txt")
    with pytest.raises(sbx.NotFoundError):
        fs.stat_file("/workspace/d/e/x.txt")
    fs.delete_directory("/workspace/d", recursive=True)
    with pytest.raises(sbx.NotFoundError):
        fs.stat_file("/workspace/d")
    with pytest.raises(sbx.SandboxPathInvalidError):
        fs.read_text("relative/path")


def test_sync_local_dir_and_workspace(runtime, tmp_path):
    # sync_local_dir is sbx create --copy-in; /workspace is sbx's own, the default cwd.
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print(42)\n")
    (tmp_path / "src" / "skip.log").write_text("x")
    (tmp_path / "src" / ".sbxignore").write_text("*.log\n")
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "data.txt").write_text("d")
    with Sandbox.create("busybox", runtime=runtime,
                        sync_local_dir=[tmp_path / "src", f"{tmp_path / 'more'}:/data"]) as sb:
        assert sb.fs.read_text("/workspace/main.py") == "print(42)\n"
        assert sb.fs.read_text("/data/data.txt") == "d"
        with pytest.raises(sbx.NotFoundError):
            sb.fs.stat_file("/workspace/skip.log")
        assert sb.run("pwd").stdout.strip() == "/workspace"
    with Sandbox.create("busybox", runtime=runtime, workspace="/work/space") as sb:
        assert sb.fs.stat_file("/work/space")["type"] == "dir"
        assert sb.fs.stat_file("/workspace")["type"] == "dir"


def test_network_methods(box):
    perms = box.network_permissions()
    assert perms["block_network"] is False
    perms = box.update_network_permissions(block_network=True)
    assert perms["block_network"] is True
    perms = box.update_network_permissions(allow_list=["198.51.100.0/24"])
    assert perms["allow_list"] == ["198.51.100.0/24"] and perms["block_network"] is False
    perms = box.update_network_permissions(block_network=False)
    assert perms["mode"] == "open"
    url = box.expose_port(8000)
    assert box.list_urls() == {8000: url}
    box.close_tunnel(8000)
    assert box.list_urls() == {}


def test_lifetime(runtime):
    b = Sandbox(image="busybox", runtime=runtime, timeout=600).create()
    try:
        assert b.status() == "running" and b.poll() is None
        b.update_ttl(1)
        assert b.wait(timeout=60) == "terminated"
        assert b.poll() is not None
    finally:
        b.terminate()
    b.terminate()  # idempotent


def test_wait_false_returns_while_creating(runtime):
    b = Sandbox(image="busybox", runtime=runtime, wait=False).create()
    try:
        b.wait_for_running(timeout=120)
        assert b.status() == "running"
    finally:
        b.terminate()


def test_image_from_filesystem_and_app(box, runtime):
    box.fs.write_text("/marker", "from the filesystem")
    image_id = box.create_image_from_filesystem()
    assert image_id.startswith("sha256:")
    app = App("agents")
    spec = app.sandbox(image=Image.from_id(image_id), cpu=1.0, memory=256, runtime=runtime)
    again = spec.create()
    try:
        r = again.run("cat /marker")
        assert (r.exit_code, r.stdout) == (0, "from the filesystem")
        r = again.run("pwd; echo $V", cwd="/tmp", env={"V": "w"}, timeout_seconds=30)
        assert r.stdout == "/tmp\nw\n"
        r = again.run("sleep 20", timeout_seconds=1)
        assert r.exit_code == 124
        same = spec.connect(again.sandbox_id())
        assert same.id == again.id
        again.update_ttl(1800)
        assert again.id in [s.id for s in spec.list()]
        counts = spec.stats()
        assert counts.get("running", 0) >= 2
        assert "memory" in str(again.stats())
        p = again.process.exec("sh", "-c", "echo bg")
        assert p.wait(timeout=30) == 0
        assert again.fs.read_text("/marker") == "from the filesystem"
        assert again.list_urls() == {} and again.network_permissions()["block_network"] is False
    finally:
        again.terminate()


def test_memory_snapshot(runtime):
    if runtime != "runsc":
        with Sandbox(image="busybox", runtime=runtime).create() as b:
            with pytest.raises(sbx.RuntimeUnavailableError):
                b.snapshot_memory()
        return
    # This runsc checkpoints only sandboxes without an interface.
    b = Sandbox(image="busybox", runtime=runtime, block_network=True).create()
    try:
        b.fs.write_text("/state", "kept")
        snap = b.snapshot_memory()
        restored = Sandbox.create_from_memory_snapshot(snap)
        try:
            assert restored.fs.read_text("/state") == "kept"
            assert restored.exec("true").wait() == 0
        finally:
            restored.terminate()
    finally:
        b.terminate()
    sbx_rmsnap(snap)


def sbx_rmsnap(snap):
    from conftest import sbx_cli

    sbx_cli("rmsnap", snap)


def test_aio(box):
    import asyncio

    async def main():
        r = await box.aio.run("echo async")
        assert r.stdout == "async\n"
        proc = await box.aio.exec("sh", "-c", "echo a; sleep 0.5; echo b", stream=True)
        proc.stdin.close()
        lines = [line async for line in proc.aio.stdout]
        assert lines == [b"a\n", b"b\n"]
        assert await proc.aio.wait() == 0
        await box.aio.fs.write_text("/aio.txt", "x")
        assert await box.aio.fs.read_text("/aio.txt") == "x"
        a = await Sandbox.aio.connect(box.id)
        assert a.id == box.id
        r = await box.process.aio.run_code("echo 7", language="sh")
        assert r.result.strip() == "7"

    asyncio.run(main())
