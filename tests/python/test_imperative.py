"""Shape C, the imperative handle (`sbx.Sandbox.create(image, ...)` as a
context manager), on runsc and runc: exec one-shot and streaming, stdin,
env and workdir, timeout (exit 124, the sandbox stays), files, ls pages,
tunnels (close_tunnel is `sbx unexpose`), poll and wait_for_running."""

from __future__ import annotations

import hashlib
import http.client
import socket
import time
import urllib.parse

import pytest

import sbx
from conftest import sbx_json


def test_exec_collected(sb):
    proc = sb.exec("sh", "-c", "echo hello; echo oops >&2; exit 3")
    assert proc.wait() == 3 and proc.returncode == 3
    assert proc.stdout.read() == b"hello\n"
    assert proc.stderr.read() == b"oops\n"
    assert proc.poll() == 3


def test_exec_stdin_bytes_env_workdir(sb):
    proc = sb.exec("sh", "-c", 'cat; echo "$K $(pwd)"', stdin=b"in\n", env={"K": "V"}, workdir="/tmp")
    assert proc.wait() == 0
    assert proc.stdout.read() == b"in\nV /tmp\n"


def test_exec_stream_stdin(sb):
    proc = sb.exec("sh", "-c", "cat; echo done", stream=True, env={"K": "V"}, workdir="/tmp")
    proc.stdin.write(b"in\n")
    proc.stdin.close()
    assert list(proc.stdout) == [b"in\n", b"done\n"]
    assert proc.wait() == 0


def test_exec_timeout_kills_the_process_not_the_sandbox(sb):
    t0 = time.monotonic()
    proc = sb.exec("sleep", "30", timeout=1)
    assert proc.wait() == 124
    assert time.monotonic() - t0 < 15
    assert sb.poll() is None and sb.status() == "running"


def test_exec_poll_and_kill(sb):
    proc = sb.exec("sleep", "31")  # not the command of another test: pid looks it up by its command line
    assert proc.poll() is None
    # Asked once it runs: `sbx ps` lists a process being started with pid 0.
    deadline = time.monotonic() + 10
    while not any(p["command"] == "sleep 31" and p["pid"] > 0 and p["state"] == "running"
                  for p in sbx_json("ps", sb.id)):
        assert time.monotonic() < deadline, "sleep 31 never ran"
        time.sleep(0.1)
    assert isinstance(proc.pid, int) and proc.pid > 0
    assert proc.status()["state"] == "running"
    proc.kill()
    rc = proc.wait(timeout=15)
    assert rc != 0 and proc.poll() == rc


def test_files_and_ls(sb):
    sb.write_file("/work/data.txt", b"hello")
    assert sb.read_file("/work/data.txt") == b"hello"
    sb.write_file("/work/t/a.txt", "text")
    assert sb.read_file("/work/t/a.txt") == b"text"
    for i in range(5):
        sb.write_file(f"/work/many/f{i}", b"x" * i)
    page = sb.ls("/work/many", limit=2, cursor=None)
    names = [e["name"] for e in page]
    assert len(page) == 2 and page.next_cursor
    for e in page:
        assert set(e) >= {"name", "path", "type", "size_bytes", "link_target"}
        assert e["type"] == "file" and e["path"] == "/work/many/" + e["name"]
    while page.next_cursor:
        page = sb.ls("/work/many", limit=2, cursor=page.next_cursor)
        names += [e["name"] for e in page]
    assert sorted(names) == [f"f{i}" for i in range(5)]
    with pytest.raises(sbx.NotFoundError):
        sb.read_file("/work/none")


def _get(url: str, token: str | None):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request("GET", "/", headers={"Authorization": "Bearer " + token} if token else {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def test_tunnels_and_close_tunnel(sb, sbx_root):
    assert sb.exec("sh", "-c", "mkdir -p /www && echo hi > /www/index.html").wait() == 0
    p = sb.process.exec("httpd", "-f", "-p", "8080", "-h", "/www")
    url = sb.tunnel(8080)
    token = open(sbx_root["SBX_ROOT"] + "/token").read().strip()
    assert url.startswith("http://127.0.0.1:") and url.port == 8080 and url.tunnel_id == 8080
    deadline = time.monotonic() + 10
    while True:  # until httpd listens (502 before)
        status, body = _get(url, token)
        if status != 502 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert (status, body) == (200, b"hi\n")
    assert _get(url, None)[0] == 401
    assert [t.port for t in sb.list_tunnels()] == [8080]
    assert sb.list_urls() == {8080: str(url)}
    sb.close_tunnel(url.tunnel_id)
    u = urllib.parse.urlsplit(url)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((u.hostname, u.port), timeout=5).close()
    assert sb.list_tunnels() == []
    assert not (sb.info().get("network") or {}).get("urls")
    with pytest.raises(sbx.NotFoundError):
        sb.close_tunnel(8080)
    again = sb.tunnel(8080)
    assert _get(again, token) == (200, b"hi\n")
    sb.close_tunnel(again)
    p.kill()


def test_poll_and_wait_for_running(sb):
    assert sb.poll() is None
    sb.wait_for_running(timeout=120)


def test_context_manager_terminates(runtime):
    with sbx.Sandbox.create("busybox", timeout=300, runtime=runtime, block_network=True) as box:
        assert box.exec("true").wait() == 0
        bid = box.id
    assert sbx.Sandbox.connect(bid).status() == "terminated"
    with pytest.raises(sbx.SandboxNotRunningError):
        box.exec("true").wait()


def test_stream_slow_producer_lines_arrive_before_the_end(sb):
    proc = sb.exec("sh", "-c", "for i in 1 2 3; do echo line$i; sleep 1; done", stream=True)
    proc.stdin.close()
    t0 = time.monotonic()
    got = []
    for line in proc.stdout:
        got.append((line, time.monotonic() - t0))
    assert [g[0] for g in got] == [b"line1\n", b"line2\n", b"line3\n"]
    # The first line came while the process still had two seconds to go.
    assert got[0][1] < got[2][1] - 1.5, got
    assert proc.wait() == 0


def test_stream_100_mb_checksum(sb):
    n = 100 * 1024 * 1024
    line = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n"
    want = hashlib.sha256((line * (n // len(line) + 1))[:n]).hexdigest()
    proc = sb.exec("sh", "-c", f"yes {line[:-1].decode()} | head -c {n}", stream=True)
    proc.stdin.close()
    h = hashlib.sha256()
    size = 0
    for line in proc.stdout:  # as a program reads it: line by line, as it comes
        h.update(line)
        size += len(line)
    assert proc.wait() == 0
    assert size == n and h.hexdigest() == want


def test_stream_chunks_are_the_bytes_as_they_come(sb):
    n = 20 * 1024 * 1024
    proc = sb.exec("head", "-c", str(n), "/dev/zero", stream=True)
    proc.stdin.close()
    sizes = [len(c) for c in proc.stdout.chunks()]
    assert proc.wait() == 0
    assert sum(sizes) == n and max(sizes) <= 65536 and len(sizes) >= n // 65536, (sum(sizes), max(sizes))
