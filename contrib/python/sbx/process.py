"""Processes in a sandbox: results, output streams and process handles."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import IO, Any, BinaryIO, Iterator, Mapping, Optional, Sequence, Union

from . import _cli
from ._aio import AioDescriptor
from .errors import InvalidArgumentError, TimeoutError
if TYPE_CHECKING:  # pragma: no cover
    import subprocess

    from .sandbox import SandboxInstance

__all__ = ["Result", "OutputStream", "Process", "SandboxProcess", "ProcessAPI"]


class Result:
    """The outcome of a command that ran to its end.

    ``exit_code`` is its exit status (124 when its timeout killed it),
    ``stdout`` and ``stderr`` its output as text, and ``result`` its standard
    output without the trailing newlines (what ``print`` in a snippet gave).
    """

    aio = AioDescriptor()

    def __init__(self, exit_code: int, stdout: str, stderr: str) -> None:
        self.exit_code: int = exit_code
        self.stdout: str = stdout
        self.stderr: str = stderr

    @property
    def result(self) -> str:
        """Standard output without its trailing newlines."""
        return self.stdout.rstrip("\n")

    @property
    def returncode(self) -> int:
        """The same as ``exit_code``."""
        return self.exit_code

    @property
    def ok(self) -> bool:
        """Whether the exit status is 0."""
        return self.exit_code == 0

    def __repr__(self) -> str:
        return f"Result(exit_code={self.exit_code!r}, stdout={self.stdout!r}, stderr={self.stderr!r})"

    @classmethod
    def _from_json(cls, doc: Mapping[str, Any]) -> Result:
        return cls(int(doc.get("exit_code") or 0), str(doc.get("stdout") or ""), str(doc.get("stderr") or ""))


def _env_args(env: Optional[Mapping[str, str]]) -> list[str]:
    out: list[str] = []
    for k, v in (env or {}).items():
        if not isinstance(k, str) or not k or "=" in k:
            raise InvalidArgumentError(f"env: bad variable name {k!r}")
        out += ["-e", f"{k}={v}"]
    return out


def _timeout_arg(timeout: Optional[float], what: str = "timeout") -> list[str]:
    if timeout is None:
        return []
    import math

    t = math.ceil(float(timeout))
    if t < 1 or t > 86400:
        raise InvalidArgumentError(f"{what}: {timeout!r} is not between 1 and 86400 seconds")
    return ["--timeout", str(t)]


class OutputStream:
    """Output of a process, as bytes: ``read()``, ``lines()`` and iteration (line by line).

    ``read()`` returns everything up to the end of the output, waiting for the
    process to end; iterating (or ``lines()``) yields lines (bytes, with their
    ``\\n``) as they come. ``read_text()`` decodes.
    """

    aio = AioDescriptor()

    def read(self) -> bytes:
        """Return all of the output (waits for its end)."""
        return b"".join(self._chunks())

    def read_text(self, encoding: str = "utf-8", errors: str = "replace") -> str:
        """Return all of the output decoded as text."""
        return self.read().decode(encoding, errors)

    def lines(self) -> Iterator[bytes]:
        """Yield the output line by line (bytes with the ``\\n``) as it comes."""
        pending = b""
        for chunk in self._chunks():
            pending += chunk
            while True:
                i = pending.find(b"\n")
                if i < 0:
                    break
                yield pending[: i + 1]
                pending = pending[i + 1:]
        if pending:
            yield pending

    def __iter__(self) -> Iterator[bytes]:
        return self.lines()

    def chunks(self) -> Iterator[bytes]:
        """Yield the output as it arrives, in pieces of at most 64 KiB, joining nothing.

        For large outputs consumed as they come (a hash, a file, a socket):
        ``read()`` must hold and copy all of it, which costs more than the
        transfer itself on a slow-memory host.
        """
        return self._chunks()

    def _chunks(self) -> Iterator[bytes]:  # pragma: no cover - abstract
        raise NotImplementedError


# Reads of output pipes: 64 KiB, what a pipe hands over at a time. A larger
# size costs a fresh buffer of that size per read (an mmap and munmap for 1
# MiB), which halved 200 MB streams against the CLI's own throughput.
_READ_SIZE = 65536


class _PipeStream(OutputStream):
    """A live pipe from ``sbx exec`` (read it, or the process may block)."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f

    def read(self) -> bytes:
        return b"".join(self._chunks())

    def lines(self) -> Iterator[bytes]:
        while not self._f.closed:
            line = self._f.readline()
            if not line:
                self._f.close()  # end of output
                return
            yield line

    def _chunks(self) -> Iterator[bytes]:
        while not self._f.closed:
            b = self._f.read1(_READ_SIZE)  # type: ignore[attr-defined]
            if not b:
                self._f.close()
                return
            yield b


class _BufferStream(OutputStream):
    """Output collected by a thread; readers wait for what they ask for."""

    def __init__(self) -> None:
        import threading

        self._cond = threading.Condition()
        self._parts: list[bytes] = []
        self._eof = False

    def _feed(self, f: BinaryIO) -> None:
        try:
            while True:
                b = f.read1(_READ_SIZE)  # type: ignore[attr-defined]
                if not b:
                    break
                with self._cond:
                    self._parts.append(b)
                    self._cond.notify_all()
        finally:
            with self._cond:
                self._eof = True
                self._cond.notify_all()

    def _set(self, data: bytes) -> None:
        with self._cond:
            self._parts = [data] if data else []
            self._eof = True
            self._cond.notify_all()

    def _tail(self, n: int = 65536) -> bytes:
        with self._cond:
            return b"".join(self._parts)[-n:]

    def _chunks(self) -> Iterator[bytes]:
        i = 0
        while True:
            with self._cond:
                while i >= len(self._parts) and not self._eof:
                    self._cond.wait()
                if i >= len(self._parts):
                    return
                part = self._parts[i]
            i += 1
            yield part


def _grow_pipe(f: IO[bytes]) -> None:
    """Make the pipe F 1 MiB (Linux F_SETPIPE_SZ): fewer wake-ups for large outputs; best effort."""
    try:
        import fcntl

        fcntl.fcntl(f.fileno(), 1031, 1 << 20)
    except (ImportError, OSError, ValueError):
        pass


class Process:
    """A command started with :meth:`SandboxInstance.exec`, attached to this program.

    ``wait()`` returns its exit status (also in ``returncode``), ``poll()``
    returns it or None while it runs, ``kill()`` ends it. ``stdout`` and
    ``stderr`` are :class:`OutputStream` objects (bytes); with ``stream=True``,
    ``stdin`` is a writable binary file (close it for end of input). A
    ``timeout`` given to ``exec`` kills the process with exit status 124 (the
    sandbox stays). Errors of sbx itself (such as a sandbox that is not
    running) are raised by ``wait()``.
    """

    aio = AioDescriptor()

    def __init__(self, sandbox: "SandboxInstance", cmd: Sequence[str], popen: "subprocess.Popen[bytes]",
                 stream: bool, stdin_data: Optional[bytes]) -> None:
        import threading
        import time

        self._sandbox = sandbox
        self.args: list[str] = list(cmd)
        self._popen = popen
        self._started = time.time()
        self._pid: Optional[int] = None
        self._returncode: Optional[int] = None
        self._threads: list[threading.Thread] = []
        self._stderr = _BufferStream()
        self.stdin: Optional[BinaryIO] = None
        assert popen.stderr is not None and popen.stdout is not None
        _grow_pipe(popen.stdout)
        t = threading.Thread(target=self._stderr._feed, args=(popen.stderr,), daemon=True)
        t.start()
        self._threads.append(t)
        self.stdout: OutputStream
        if stream:
            self.stdin = popen.stdin  # type: ignore[assignment]
            self.stdout = _PipeStream(popen.stdout)  # type: ignore[arg-type]
        else:
            out = _BufferStream()
            self.stdout = out
            t = threading.Thread(target=out._feed, args=(popen.stdout,), daemon=True)
            t.start()
            self._threads.append(t)
            if popen.stdin is not None:
                t = threading.Thread(target=self._feed_stdin, args=(popen.stdin, stdin_data or b""), daemon=True)
                t.start()
                self._threads.append(t)

    @staticmethod
    def _feed_stdin(f: BinaryIO, data: bytes) -> None:
        try:
            f.write(data)
        except (BrokenPipeError, OSError):
            pass
        finally:
            try:
                f.close()
            except OSError:
                pass

    @property
    def stderr(self) -> OutputStream:
        """Standard error (bytes), collected as it comes."""
        return self._stderr

    @property
    def pid(self) -> Optional[int]:
        """The process's pid in the sandbox (as ``sbx ps`` lists it), looked up on first use; None if not found."""
        if self._pid is None:
            cmdline = " ".join(self.args)
            try:
                procs = _cli.run_json(["ps", self._sandbox.id])
            except Exception:
                return None
            best = None
            for p in procs or []:
                pid = int(p.get("pid") or 0)  # 0: the process is still starting
                if pid > 0 and not p.get("background") and p.get("command") == cmdline and \
                        p.get("started_at", 0) >= int(self._started) - 1:
                    if best is None or pid > best:
                        best = pid
            self._pid = best
        return self._pid

    def wait(self, timeout: Optional[float] = None) -> int:
        """Wait for the end and return the exit status; raise :class:`sbx.TimeoutError` after TIMEOUT seconds."""
        import subprocess

        try:
            rc = self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"process {' '.join(self.args)!r} still running after {timeout} s") from None
        for t in self._threads:
            t.join()
        for f in (self._popen.stdin, self._popen.stderr,
                  None if isinstance(self.stdout, _PipeStream) else self._popen.stdout):
            if f is not None and not f.closed:
                f.close()
        _cli.check_status(rc, self._stderr._tail())
        self._returncode = rc
        return rc

    def poll(self) -> Optional[int]:
        """Return the exit status, or None while the process runs."""
        if self._returncode is not None:
            return self._returncode
        if self._popen.poll() is None:
            return None
        return self.wait()

    @property
    def returncode(self) -> Optional[int]:
        """The exit status once known (after ``wait()`` or ``poll()``), else None."""
        return self.poll()

    def kill(self) -> None:
        """End the process (SIGKILL to the process in the sandbox and what it started)."""
        if self._popen.poll() is not None:
            return
        pid = self.pid
        if pid is not None:
            try:
                _cli.run_json(["proc", self._sandbox.id, str(pid), "kill"])
                return
            except Exception:
                pass
        self._popen.kill()

    def status(self) -> dict[str, Any]:
        """The process as ``sbx proc ID PID status --json`` prints it (pid, command, state, exit_code, ...)."""
        pid = self.pid
        if pid is not None:
            return dict(_cli.run_json(["proc", self._sandbox.id, str(pid), "status"]))
        rc = self.poll()
        return {"pid": None, "command": " ".join(self.args), "state": "running" if rc is None else "exited",
                "exit_code": rc}

    @property
    def logs(self) -> OutputStream:
        """Standard output then standard error."""
        parts = self

        class _Logs(OutputStream):
            def _chunks(self) -> Iterator[bytes]:
                yield from parts.stdout._chunks()
                yield from parts._stderr._chunks()

        return _Logs()

    def __repr__(self) -> str:
        return f"<sbx.Process {' '.join(self.args)!r} in {self._sandbox.id} returncode={self._returncode}>"


class _LogStream(OutputStream):
    """The kept log of a background process, through ``sbx proc ID PID logs``."""

    def __init__(self, sandbox_id: str, pid: int, which: str) -> None:
        self._id = sandbox_id
        self._pid = pid
        self._which = which  # "stdout", "stderr" or "both"

    def read(self, follow: bool = True) -> bytes:
        """Return the output: all of it up to the process's end (FOLLOW), or only what is kept now."""
        if follow:
            return super().read()
        doc = _cli.run_json(["proc", self._id, str(self._pid), "logs"])
        if self._which == "both":
            return (str(doc.get("stdout") or "") + str(doc.get("stderr") or "")).encode()
        return str(doc.get(self._which) or "").encode()

    def _chunks(self) -> Iterator[bytes]:
        import subprocess
        import tempfile

        which = self._which
        errf = tempfile.TemporaryFile() if which == "stdout" else None
        p = _cli.popen(["proc", self._id, str(self._pid), "logs", "--follow"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL if which == "stderr" else subprocess.PIPE,
                       stderr=errf if errf is not None else (subprocess.STDOUT if which == "both" else subprocess.PIPE))
        f = p.stderr if which == "stderr" else p.stdout
        assert f is not None
        tail = b""
        try:
            while True:
                b = f.read1(65536)  # type: ignore[attr-defined]
                if not b:
                    break
                if errf is None:
                    tail = (tail + b)[-4096:]
                yield b
        except GeneratorExit:
            p.kill()
            raise
        finally:
            rc = p.wait()
            f.close()
            if errf is not None:
                errf.seek(0)
                tail = errf.read()[-4096:]
                errf.close()
        _cli.check_status(rc, tail)


class SandboxProcess:
    """A process of a sandbox known by its pid: started with ``box.process.exec`` or found with ``get_process``.

    It runs in the background inside the sandbox, with its output kept in a
    log (see ``sbx proc``): ``stdout``, ``stderr`` and ``logs`` read it
    (``read()`` waits for the process's end; iteration follows it).
    """

    aio = AioDescriptor()

    def __init__(self, sandbox_id: str, pid: int) -> None:
        self.sandbox_id: str = sandbox_id
        self.pid: int = int(pid)
        self._returncode: Optional[int] = None

    def status(self) -> dict[str, Any]:
        """The process as ``sbx proc ID PID status --json`` prints it (pid, command, state, exit_code, ...)."""
        doc = dict(_cli.run_json(["proc", self.sandbox_id, str(self.pid), "status"]))
        if doc.get("state") == "exited" and doc.get("exit_code") is not None:
            self._returncode = int(doc["exit_code"])
        return doc

    def wait(self, timeout: Optional[float] = None) -> int:
        """Wait for the end and return the exit status (137 when killed); :class:`sbx.TimeoutError` after TIMEOUT s."""
        if self._returncode is not None:
            return self._returncode
        doc = _cli.run_json(["proc", self.sandbox_id, str(self.pid), "wait", *_timeout_arg(timeout)],
                            ok_codes=None)
        self._returncode = int(doc.get("exit_code") if doc.get("exit_code") is not None else -1)
        return self._returncode

    def poll(self) -> Optional[int]:
        """Return the exit status, or None while the process runs."""
        if self._returncode is None:
            self.status()
        return self._returncode

    @property
    def returncode(self) -> Optional[int]:
        """The exit status once the process has ended, else None."""
        return self.poll()

    def kill(self, signal: Union[int, str, None] = None) -> None:
        """Send SIGNAL (default SIGKILL) to the process and what it started; returns without waiting."""
        args = ["proc", self.sandbox_id, str(self.pid), "kill"]
        if signal is not None:
            args += ["--signal", str(signal)]
        _cli.run_json(args)

    @property
    def stdout(self) -> OutputStream:
        """Its standard output (bytes)."""
        return _LogStream(self.sandbox_id, self.pid, "stdout")

    @property
    def stderr(self) -> OutputStream:
        """Its standard error (bytes)."""
        return _LogStream(self.sandbox_id, self.pid, "stderr")

    @property
    def logs(self) -> OutputStream:
        """Its standard output and standard error together (bytes)."""
        return _LogStream(self.sandbox_id, self.pid, "both")

    def __repr__(self) -> str:
        return f"<sbx.SandboxProcess {self.pid} in {self.sandbox_id}>"


class ProcessAPI:
    """``box.process``: run code and commands, list and find processes."""

    aio = AioDescriptor()

    def __init__(self, sandbox: "SandboxInstance") -> None:
        self._sandbox = sandbox

    def run_code(self, code: str, language: str = "python", env: Optional[Mapping[str, str]] = None,
                 cwd: Optional[str] = None, timeout: Optional[float] = None) -> Result:
        """Run a CODE snippet with the image's interpreter for LANGUAGE (python, sh, bash, node); return its Result."""
        args = ["run-code", "--lang", language, *_env_args(env)]
        if cwd:
            args += ["--cwd", cwd]
        args += _timeout_arg(timeout)
        args += [self._sandbox.id, "-"]
        return Result._from_json(_cli.run_json(args, input=code.encode(), ok_codes=None))

    def exec(self, *cmd: str, cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> SandboxProcess:
        """Start CMD in the background in the sandbox and return its :class:`SandboxProcess` (output kept in a log)."""
        if not cmd:
            raise InvalidArgumentError("exec: no command")
        args = ["exec", "--detach", *_env_args(env)]
        if cwd:
            args += ["--cwd", cwd]
        doc = _cli.run_json([*args, self._sandbox.id, "--", *cmd])
        return SandboxProcess(self._sandbox.id, int(doc["pid"]))

    def list_processes(self) -> list[dict[str, Any]]:
        """The sandbox's processes, running and recently ended, as ``sbx ps --json`` lists them."""
        return list(_cli.run_json(["ps", self._sandbox.id]) or [])

    def get_process(self, pid: int) -> SandboxProcess:
        """The process PID of the sandbox (raises :class:`NotFoundError` when there is none)."""
        p = SandboxProcess(self._sandbox.id, pid)
        p.status()
        return p

