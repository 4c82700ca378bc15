"""Sandboxes: the spec (:class:`Sandbox`), the handle (:class:`SandboxInstance`) and :class:`App`."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable, Iterable, Mapping, Optional, Union

from . import _cli
from ._aio import AioDescriptor
from .errors import (InvalidArgumentError, NotFoundError, SandboxFailedError, SandboxNotRunningError, SandboxTerminatedError,
                     SbxError, TimeoutError)
from .fs import FileSystem, Page
from .image import Image
from .process import Process, ProcessAPI, Result, SandboxProcess, _env_args, _timeout_arg
if TYPE_CHECKING:  # pragma: no cover
    import subprocess

__all__ = ["Sandbox", "SandboxInstance", "App", "Tunnel"]

#: Options of hosted sandbox SDKs that map to an ``sbx create`` option once sbx has it:
#: SDK name -> (long option, how the value becomes arguments).
FUTURE_OPTIONS: dict[str, str] = {
    "gpu": "--gpu",
    "docker_enabled": "--docker",
    "namespace": "--namespace",
    "priority": "--priority",
    "pull": "--pull",
}

#: The directory every sandbox has, as hosted sandboxes have one: sbx makes it (``sbx-create(1)``,
#: WORKSPACE) and starts commands there; another ``workspace`` path is made by the SDK after create.
WORKSPACE = "/workspace"

_KNOWN = {"workspace", "image", "cpu", "memory", "runtime", "block_network", "allow_list", "ports", "authorized",
          "keep_warm_seconds", "timeout", "env", "name", "wait", "workdir", "workspace_token", "pids", "disk",
          "on_idle", "sync_local_dir", "command", "exit_with_command", "secrets", "allow_secrets", "volumes"}

_MILLI = r"^([0-9]+)m$"
_MEM = r"^[0-9]+(\.[0-9]+)?([KMGT]i?|[kmgt]i?)?[bB]?$"


def _secret_args(v: Any, names: Optional[dict[str, str]]) -> list[str]:
    """``secrets``: a dict {VAR: value} (each value an sbx secret for the time of the create: see
    ``Sandbox._create_with_values``), or a list of the names of sbx secrets (``sbx secret create``),
    each ``NAME`` or ``NAME=VAR``: ``--secret``. Either needs ``allow_secrets=True``."""
    import re

    if not v:
        return []
    a: list[str] = []
    if isinstance(v, dict):
        for var in v:
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", str(var)):
                raise InvalidArgumentError(f"option secrets: `{var}` is not a valid environment variable name")
            a += ["--secret", f"{(names or {}).get(str(var), 'sdk-pending')}={var}"]
        return a
    if isinstance(v, str) or not isinstance(v, (list, tuple)):
        raise InvalidArgumentError("option secrets: a dict {VAR: value} or a list of sbx secret names")
    for name in v:
        a += ["--secret", str(name)]
    return a


def _volume_args(v: Any) -> list[str]:
    """``volumes``: a dict {path in the sandbox: source}; a source that is an absolute host path is a
    host directory (``--mount``, read-only unless it ends in ``:rw``), any other a named volume
    (``--volume``, made if missing; ``:ro`` for read-only)."""
    if not v:
        return []
    if not isinstance(v, dict):
        raise InvalidArgumentError("option volumes: a dict {path in the sandbox: volume name or host directory}")
    a: list[str] = []
    for dest, src in v.items():
        src = str(src)
        mode = ""
        if src.endswith(":ro") or src.endswith(":rw"):
            src, mode = src[:-3], src[-3:]
        if src.startswith("/"):
            a += ["--mount", f"{src}:{dest}{mode}"]
        else:
            a += ["--volume", f"{src}:{dest}{mode}"]
    return a


def _local_dirs(v: Any) -> list[str]:
    """``sync_local_dir``: a directory (``True``: the current one), or a list of them, each copied into
    ``/workspace`` (or to ``"DIR:/dest"``) before the sandbox's first command (``sbx create --copy-in``)."""
    import os

    if v in (None, False):
        return []
    if v is True:
        return ["."]
    items = v if isinstance(v, (list, tuple)) else [v]
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, os.PathLike)) or not os.fspath(item):
            raise InvalidArgumentError(f"sync_local_dir: {item!r} is not a directory path")
        out.append(os.fspath(item))
    return out


def _cpu(v: Union[int, float, str]) -> str:
    if isinstance(v, bool):
        raise InvalidArgumentError(f"cpu: {v!r} is not a number of cores")
    if isinstance(v, str):
        import re

        m = re.match(_MILLI, v.strip())
        if m:
            return _cores(int(m.group(1)) / 1000)
        try:
            v = float(v)
        except ValueError:
            raise InvalidArgumentError(f"cpu: {v!r} is not cores (1.5) or millicores (\"500m\")") from None
    if float(v) < 0:
        raise InvalidArgumentError(f"cpu: {v!r} is negative")
    return _cores(float(v))


def _cores(v: float) -> str:
    """Cores to millicore precision, as sbx create --cpu takes them: 0.5, 1, 1.25."""
    return f"{v:.3f}".rstrip("0").rstrip(".")


def _memory(v: Union[int, str]) -> str:
    if isinstance(v, bool):
        raise InvalidArgumentError(f"memory: {v!r} is not a size")
    if isinstance(v, int):
        if v < 0:
            raise InvalidArgumentError(f"memory: {v!r} is negative")
        return str(v)
    s = str(v).strip()
    import re

    if not re.match(_MEM, s):
        raise InvalidArgumentError(f"memory: {v!r} is not MiB (1024) or a size with a unit (\"512Mi\", \"1Gi\")")
    return s


def _command(v: Union[str, Iterable[str]]) -> list[str]:
    """The initial command as ``sbx create -- CMD...`` takes it: a list of arguments, or a string run by ``sh -c``."""
    if isinstance(v, str):
        if not v.strip():
            raise InvalidArgumentError("command: an empty command line")
        return ["sh", "-c", v]
    if isinstance(v, (bytes, bytearray)) or not hasattr(v, "__iter__"):
        raise InvalidArgumentError(f"command: {v!r} is not a list of arguments or a shell command line")
    argv = list(v)
    if not argv or not all(isinstance(a, str) for a in argv) or not argv[0]:
        raise InvalidArgumentError(f"command: {v!r} is not a non-empty list of strings")
    return argv


def _seconds(name: str, v: Union[int, float]) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InvalidArgumentError(f"{name}: {v!r} is not a number of seconds")
    return str(int(v))


class _hybrid:
    """A method that is an instance method on a spec and a class method on the class."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, obj: Any, cls: Any = None) -> Callable[..., Any]:
        import types

        return types.MethodType(self.fn, obj if obj is not None else cls)


class Tunnel(str):
    """An exposed port: the URL (this string itself) with ``port`` and ``tunnel_id`` (the port)."""

    port: int
    url: str
    public: bool

    def __new__(cls, url: str, port: int, public: bool = False) -> Tunnel:
        t = super().__new__(cls, url)
        t.url = url
        t.port = int(port)
        t.public = bool(public)
        return t

    @property
    def tunnel_id(self) -> int:
        """What ``close_tunnel`` takes: the port."""
        return self.port


class Sandbox:
    """A sandbox spec: the options of ``sbx create``, then :meth:`create`.

    ``Sandbox(image=..., cpu=..., ...)`` holds options; ``.create()`` starts a
    sandbox and returns its :class:`SandboxInstance`. ``Sandbox.create(image,
    **options)`` does both at once (the class method form), as do
    ``connect``, ``create_from_memory_snapshot``, ``list`` and ``stats``.

    Options: ``image`` (a tag, an id, a registry reference, or an
    :class:`Image`/:class:`Blueprint`, built on the fly), ``cpu`` (cores, a
    float, or ``"500m"`` millicores), ``memory`` (MiB as an int, or
    ``"512Mi"``/``"1Gi"``), ``runtime`` (``"runsc"``, the default, or
    ``"runc"``), ``block_network``, ``allow_list`` (CIDRs), ``ports`` (exposed
    at create), ``authorized`` (False: exposed ports need no token, sbx's
    ``--public``), ``keep_warm_seconds``, ``timeout`` (hard lifetime, s),
    ``env``, ``name``, ``workdir``, ``pids``, ``disk``, ``on_idle``,
    ``command`` (the initial command, ``sbx create -- CMD``: a list of
    arguments, or a string run by ``sh -c``; started in the background before
    ``create`` returns, see :meth:`SandboxInstance.initial_process`),
    ``exit_with_command`` (True: the sandbox ends when that command does, its
    exit code in :meth:`SandboxInstance.poll`), ``wait``
    (False: return while the sandbox is still being created), ``workspace``
    (``/workspace``, the default, is every sandbox's own, made by sbx and
    the commands' default cwd; another path is made after create; None:
    nothing more), ``sync_local_dir`` (a local directory, ``True`` for the
    current one, or a list, copied into ``/workspace`` (or ``"DIR:/dest"``)
    before anything runs: ``sbx create --copy-in``, ``.sbxignore``
    honoured), ``secrets`` (a dict ``{VAR: value}``, each value an sbx
    secret for the time of the create, or a list of sbx secret names) with
    ``allow_secrets=True``, ``volumes`` (a dict ``{path in the sandbox:
    volume name or absolute host directory}``), ``gpu`` (``--gpu``),
    ``docker_enabled`` (``--docker``), ``namespace``, ``priority`` (0-9) and
    ``pull`` (``"missing"``/``"always"``/``"never"``), each passed to
    ``sbx create`` as its option (an sbx without it refuses them with
    :class:`InvalidArgumentError` naming them). ``workspace_token=False``
    is accepted; ``True`` is refused (sbx passes no host credential into a
    sandbox: use ``secrets`` when sbx has them).
    """

    aio = AioDescriptor()

    def __init__(self, image: Union[str, Image, None] = None, **options: Any) -> None:
        for k in options:
            if k in FUTURE_OPTIONS:
                if options[k] in (None, False) or options[k] == [] or options[k] == {}:
                    continue
                if not _cli.has_option("create", FUTURE_OPTIONS[k]):
                    raise InvalidArgumentError(f"option {k}: sbx does not have it yet (sbx create has no "
                                               f"{FUTURE_OPTIONS[k]})")
            elif k not in _KNOWN:
                raise InvalidArgumentError(f"option {k}: unknown (see help(sbx.Sandbox))")
        if options.get("workspace_token"):
            raise InvalidArgumentError("workspace_token=True: sbx never passes a host credential into a sandbox; "
                                       "give what the sandbox needs with secrets")
        self.image: Union[str, Image, None] = image
        self.options: dict[str, Any] = dict(options)
        self._create_args()  # validate now

    def __repr__(self) -> str:
        return f"Sandbox(image={self.image!r}, **{self.options!r})"

    def _create_args(self, image_id: Optional[str] = None) -> list[str]:
        o = self.options
        a: list[str] = []
        if image_id:
            a += ["--image", image_id]
        if o.get("name"):
            a += ["--name", str(o["name"])]
        if o.get("cpu") is not None:
            a += ["--cpu", _cpu(o["cpu"])]
        if o.get("memory") is not None:
            a += ["--memory", _memory(o["memory"])]
        if o.get("pids") is not None:
            a += ["--pids", str(int(o["pids"]))]
        if o.get("disk") is not None:
            a += ["--disk", _memory(o["disk"])]
        if o.get("runtime"):
            a += ["--runtime", str(o["runtime"])]
        if o.get("block_network"):
            a.append("--block-network")
        for c in o.get("allow_list") or []:
            a += ["--allow", str(c)]
        for p in o.get("ports") or []:
            a += ["--port", str(int(p))]
        if o.get("authorized") is False:
            a.append("--public")
        if o.get("keep_warm_seconds") is not None:
            a += ["--keep-warm", _seconds("keep_warm_seconds", o["keep_warm_seconds"])]
        if o.get("timeout") is not None:
            a += ["--timeout", _seconds("timeout", o["timeout"])]
        if o.get("on_idle"):
            a += ["--on-idle", str(o["on_idle"])]
        a += _env_args(o.get("env"))
        if o.get("workdir"):
            a += ["--cwd", str(o["workdir"])]
        for d in _local_dirs(o.get("sync_local_dir")):
            a += ["--copy-in", d]
        a += _secret_args(o.get("secrets"), getattr(self, "_secret_names", None))
        if o.get("allow_secrets"):
            a.append("--allow-secrets")
        a += _volume_args(o.get("volumes"))
        for k, opt in FUTURE_OPTIONS.items():
            v = o.get(k)
            if v in (None, False) or v == [] or v == {}:
                continue
            if v is True:
                a.append(opt)
            elif isinstance(v, dict):
                a += [x for kv in v.items() for x in (opt, f"{kv[0]}={kv[1]}" if k != "volumes" else
                                                       f"{kv[0]}:{kv[1]}")]
            elif isinstance(v, (list, tuple)):
                a += [x for item in v for x in (opt, str(item))]
            else:
                a += [opt, str(v)]
        if o.get("exit_with_command"):
            if o.get("command") is None:
                raise InvalidArgumentError("exit_with_command: needs a command (the sandbox ends when it ends)")
            a.append("--exit-with-cmd")
        if o.get("command") is not None:
            a += ["--", *_command(o["command"])]
        return a

    def _image_id(self) -> Optional[str]:
        img = self.image
        if img is None:
            return None
        if isinstance(img, Image):
            return img.build(runtime=self.options.get("runtime"))
        return str(img)

    @_hybrid
    def create(target: Any, image: Union[str, Image, None] = None, **options: Any) -> SandboxInstance:
        """Create the sandbox and return its :class:`SandboxInstance`.

        On a spec, ``spec.create()`` uses the spec's options (IMAGE and
        OPTIONS, if given, override them); on the class,
        ``Sandbox.create(image, **options)`` makes the spec first.
        """
        if isinstance(target, type):
            spec = target(image, **options)
        elif image is not None or options:
            merged = dict(target.options)
            merged.update(options)
            spec = type(target)(image if image is not None else target.image, **merged)
        else:
            spec = target
        instance: SandboxInstance = spec._create()
        return instance

    def _create(self) -> SandboxInstance:
        import subprocess

        values = self.options.get("secrets")
        if isinstance(values, dict) and values:
            return self._create_with_values(values)
        args = ["create", *self._create_args(self._image_id())]
        if self.options.get("wait", True) is False:
            p = _cli.popen(args, json=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
            return SandboxInstance(None, self, pending=p)
        doc = _cli.run_json(args)
        instance = SandboxInstance(str(doc["id"]), self, info=doc)
        instance._make_workspace()
        return instance

    def _create_with_values(self, values: dict[str, Any]) -> SandboxInstance:
        """``secrets={"VAR": "value"}``: each value becomes an sbx secret (``sbx secret create``, from
        stdin, never argv) for the time of the create, which hands it to the sandbox, then is removed."""
        import secrets as _random

        if self.options.get("wait", True) is False:
            raise InvalidArgumentError("option secrets: values (a dict) need wait=True; "
                                       "give the names of sbx secrets (a list) instead")
        tag = _random.token_hex(6)
        names: dict[str, str] = {}
        try:
            for var, value in values.items():
                name = f"sdk-{tag}-{var}"
                data = value if isinstance(value, bytes) else str(value).encode()
                _cli.run_json(["secret", "create", name], input=data)
                names[str(var)] = name
            self._secret_names = names
            args = ["create", *self._create_args(self._image_id())]
            doc = _cli.run_json(args)
        finally:
            self._secret_names = None
            if names:
                try:
                    _cli.run_json(["secret", "rm", *names.values()])
                except SbxError:
                    pass
        instance = SandboxInstance(str(doc["id"]), self, info=doc)
        instance._make_workspace()
        return instance

    @_hybrid
    def connect(target: Any, sandbox_id: str) -> SandboxInstance:
        """The handle of an existing sandbox SANDBOX_ID (an id or a name), made by any process."""
        doc = _cli.run_json(["status", str(sandbox_id)])
        spec = target if isinstance(target, Sandbox) else None
        return SandboxInstance(str(doc["id"]), spec, info=doc)

    @_hybrid
    def from_id(target: Any, sandbox_id: str) -> SandboxInstance:
        """The same as :meth:`connect`."""
        instance: SandboxInstance = Sandbox.connect(sandbox_id)
        return instance

    @_hybrid
    def create_from_memory_snapshot(target: Any, snapshot_id: str) -> SandboxInstance:
        """Start a new sandbox from the memory snapshot SNAPSHOT_ID (from :meth:`SandboxInstance.snapshot_memory`)."""
        ids = _cli.run_json(["restore", str(snapshot_id)])
        spec = target if isinstance(target, Sandbox) else None
        return SandboxInstance(str(ids[0]), spec)

    @_hybrid
    def list(target: Any) -> list[SandboxInstance]:
        """Every sandbox of the store (``sbx ls``), as handles (``.info()`` holds what ``sbx ls --json`` says)."""
        return [SandboxInstance(str(d["id"]), None, info=d) for d in _cli.run_json(["ls"]) or []]

    @_hybrid
    def stats(target: Any) -> dict[str, int]:
        """Sandboxes counted by state (``sbx stats --json``): creating, running, terminating, terminated, ..."""
        return dict(_cli.run_json(["stats"]))


class SandboxInstance:
    """A sandbox: run commands and code in it, use its files and ports, end it.

    Made by :meth:`Sandbox.create` or :meth:`Sandbox.connect`. ``id`` (also
    ``sandbox_id()`` and ``object_id``) is its sbx id. ``process`` and ``fs``
    group the process and file methods; the most used ones are also methods of
    the instance (``exec``, ``run``, ``read_file``, ``write_file``, ``ls``).
    As a context manager, it terminates the sandbox on exit.
    """

    aio = AioDescriptor()

    def __init__(self, sandbox_id: Optional[str], spec: Optional[Sandbox] = None,
                 info: Optional[Mapping[str, Any]] = None,
                 pending: Optional["subprocess.Popen[bytes]"] = None) -> None:
        self._id = sandbox_id
        self.spec: Optional[Sandbox] = spec
        self._info: Optional[dict[str, Any]] = dict(info) if info else None
        self._pending = pending
        self.process: ProcessAPI = ProcessAPI(self)
        self.fs: FileSystem = FileSystem(self)

    # -- identity ---------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """The sandbox's id (waits for the end of a create started with ``wait=False``)."""
        if self._id is None:
            self._finish_create()
        assert self._id is not None
        return self._id

    @property
    def object_id(self) -> str:
        """The same as ``id``."""
        return self.id

    def sandbox_id(self) -> str:
        """The sandbox's id."""
        return self.id

    def _finish_create(self) -> None:
        import json

        p = self._pending
        assert p is not None
        out, err = p.communicate()
        doc: Any = None
        try:
            doc = json.loads(out) if out.strip() else None
        except ValueError:
            pass
        if p.returncode != 0 or not isinstance(doc, dict) or isinstance(doc.get("error"), dict):
            raise _cli._error_from(p.returncode, out, err, doc)
        self._id = str(doc["id"])
        self._info = doc
        self._pending = None
        self._make_workspace()

    def _make_workspace(self) -> None:
        # /workspace is sbx's own (every sandbox has it): only another path is made here.
        ws = self.spec.options.get("workspace", WORKSPACE) if self.spec is not None else None
        if ws and str(ws).rstrip("/") != WORKSPACE and self._id is not None:
            try:
                self.fs.create_directory(str(ws))
            except SandboxNotRunningError:
                # Ended already by its initial command (exit_with_command): its end is its
                # result, kept for wait() and poll(), not a failed create.
                if self.spec is not None and self.spec.options.get("exit_with_command"):
                    return
                self.terminate(remove=True)
                raise
            except Exception:
                self.terminate(remove=True)
                raise

    def __repr__(self) -> str:
        return f"<sbx.SandboxInstance {self._id or '(creating)'}>"

    def __enter__(self) -> SandboxInstance:
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.terminate()
        except NotFoundError:  # removed meanwhile (terminate(remove=True), sbx rm)
            pass

    # -- state ------------------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        """The sandbox as ``sbx status --json`` prints it (state, reason, options, network, ...)."""
        self._info = dict(_cli.run_json(["status", self.id]))
        return self._info

    def initial_process(self) -> Optional[SandboxProcess]:
        """The initial command (the ``command`` option) as a :class:`SandboxProcess`, or None without one."""
        info = self._info if self._info and "cmd_pid" in self._info else self.info()
        pid = info.get("cmd_pid")
        return SandboxProcess(self.id, int(pid)) if pid else None

    def status(self) -> str:
        """The sandbox's state: ``creating``, ``running``, ``terminating``, ``terminated`` or ``failed``."""
        return str(self.info()["state"])

    def poll(self) -> Optional[int]:
        """None while the sandbox is creating or running; once it ended, its exit code (0 when it had none, 1 when it
        failed)."""
        d = self.info()
        if d["state"] in ("creating", "running"):
            return None
        if d.get("exit_code") is not None:
            return int(d["exit_code"])
        return 1 if d["state"] == "failed" else 0

    def wait(self, timeout: Optional[float] = None) -> str:
        """Block until the sandbox has ended and return its final state (``terminated`` or ``failed``)."""
        doc = _cli.run_json(["wait", *_timeout_arg(timeout), self.id])
        self._info = dict(doc)
        return str(doc["state"])

    def wait_for_running(self, timeout: Optional[float] = 120) -> None:
        """Return once the sandbox runs; raise :class:`SandboxFailedError`/:class:`SandboxTerminatedError` if it
        ended, :class:`sbx.TimeoutError` after TIMEOUT seconds."""
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        if self._pending is not None:
            try:
                self._pending.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
            except Exception:
                raise TimeoutError(f"sandbox not running after {timeout} s") from None
        delay = 0.05
        while True:
            d = self.info()
            state = d["state"]
            if state == "running":
                return
            if state == "failed":
                raise SandboxFailedError(f"sandbox {self.id} failed: {d.get('error') or d.get('reason')}")
            if state in ("terminated", "terminating"):
                raise SandboxTerminatedError(f"sandbox {self.id} is {state} ({d.get('reason')})")
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"sandbox {self.id} not running after {timeout} s (state {state})")
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def terminate(self, remove: bool = False) -> None:
        """End the sandbox (its files stay for ``fs`` until ``sbx rm``; REMOVE: remove them too). Idempotent."""
        try:
            _cli.run_json(["terminate", *(["--rm"] if remove else []), self.id])
        except SandboxNotRunningError:
            if remove:
                _cli.run_json(["rm", self.id])

    def update_ttl(self, seconds: int) -> None:
        """Set the sandbox's hard lifetime to SECONDS from now (``sbx ttl``)."""
        _cli.run_json(["ttl", self.id, _seconds("seconds", seconds)])

    def stats(self) -> dict[str, Any]:
        """What the sandbox uses now (``sbx stats ID --json``): cpu_time_ms, memory, pids, disk, net bytes."""
        return dict(_cli.run_json(["stats", self.id]))

    # -- commands ---------------------------------------------------------------------------------
    def run(self, command: str, cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
            timeout_seconds: Optional[float] = None) -> Result:
        """Run the shell command line COMMAND (``sh -c``) to its end; return its :class:`Result`.

        TIMEOUT_SECONDS kills it (exit code 124); the sandbox stays.
        """
        args = ["exec", *_env_args(env)]
        if cwd:
            args += ["--cwd", cwd]
        args += _timeout_arg(timeout_seconds, "timeout_seconds")
        doc = _cli.run_json([*args, self.id, "--", "/bin/sh", "-c", command], ok_codes=None)
        return Result._from_json(doc)

    def exec(self, *cmd: str, stdin: Union[bytes, str, None] = None, stream: bool = False,
             env: Optional[Mapping[str, str]] = None, workdir: Optional[str] = None, tty: bool = False,
             timeout: Optional[float] = None) -> Process:
        """Start CMD (an argument vector) in the sandbox, attached to this program; return its :class:`Process`.

        By default the output is collected (``proc.stdout.read()`` after or
        while it runs) and STDIN (bytes) is its input. With STREAM, ``proc.stdin``
        is a live pipe and ``proc.stdout`` yields output as it comes. ENV adds
        variables, WORKDIR is its directory, TTY gives it a terminal (output
        merged), TIMEOUT kills it after so many seconds (exit status 124).
        """
        import subprocess

        if not cmd:
            raise InvalidArgumentError("exec: no command")
        if isinstance(stdin, str):
            stdin = stdin.encode()
        if stream and stdin is not None:
            raise InvalidArgumentError("exec: stdin= and stream=True: write to proc.stdin instead")
        args = ["exec", *_env_args(env)]
        if workdir:
            args += ["--cwd", workdir]
        if tty:
            args.append("--tty")
        args += _timeout_arg(timeout)
        interactive = stream or stdin is not None
        if interactive:
            args.append("--interactive")
        p = _cli.popen([*args, self.id, "--", *cmd], stdin=subprocess.PIPE if interactive else subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return Process(self, cmd, p, stream, stdin)

    def list_processes(self) -> list[dict[str, Any]]:
        """The sandbox's processes (``sbx ps --json``)."""
        return self.process.list_processes()

    def run_code(self, code: str, language: str = "python", **kw: Any) -> Result:
        """The same as ``process.run_code``."""
        return self.process.run_code(code, language, **kw)

    # -- files ------------------------------------------------------------------------------------
    def read_file(self, path: str) -> bytes:
        """The content of the file PATH."""
        return self.fs.read_bytes(path)

    def write_file(self, path: str, data: Union[bytes, str]) -> None:
        """Write DATA (bytes, or text as UTF-8) to PATH, making missing parent directories."""
        self.fs.write_bytes(path, data.encode() if isinstance(data, str) else data)

    def ls(self, path: str, limit: int = 200, cursor: Optional[str] = None) -> Page:
        """One page of the directory PATH: a list of dicts (name, path, type, size_bytes, link_target) with
        ``next_cursor``."""
        return self.fs.ls(path, limit=limit, cursor=cursor)

    # -- network ----------------------------------------------------------------------------------
    @staticmethod
    def token() -> str:
        """The host's token for exposed ports (``ROOT/token``, readable by root): send it as
        ``Authorization: Bearer <token>`` to a URL of a sandbox made without ``authorized=False``."""
        import os

        root = os.environ.get("SBX_ROOT") or "/var/lib/sbx"
        with open(os.path.join(root, "token")) as f:
            return f.read().strip()

    def expose_port(self, port: int) -> str:
        """Publish PORT as a URL on the host and return it (it needs ``Authorization: Bearer <ROOT/token>`` unless
        the sandbox was made with ``authorized=False``)."""
        return self.tunnel(port).url

    def tunnel(self, port: int) -> Tunnel:
        """Publish PORT and return its :class:`Tunnel` (a str: the URL, with ``port`` and ``tunnel_id``)."""
        doc = _cli.run_json(["expose", self.id, str(int(port))])
        return Tunnel(str(doc["url"]), int(doc["port"]), bool(doc.get("public")))

    def list_tunnels(self) -> list[Tunnel]:
        """The exposed ports as :class:`Tunnel` objects."""
        doc = _cli.run_json(["urls", self.id])
        pub = bool(doc.get("public"))
        return [Tunnel(str(u["url"]), int(u["port"]), pub) for u in doc.get("urls", [])]

    def list_urls(self) -> dict[int, str]:
        """The exposed ports and their URLs, as ``{port: url}``."""
        return {t.port: t.url for t in self.list_tunnels()}

    def close_tunnel(self, tunnel_id: Union[int, Tunnel]) -> None:
        """Stop publishing a port (a :class:`Tunnel` or its port): its URL stops answering (``sbx unexpose``)."""
        port = tunnel_id.port if isinstance(tunnel_id, Tunnel) else int(tunnel_id)
        _cli.run_json(["unexpose", self.id, str(port)])

    def network_permissions(self) -> dict[str, Any]:
        """The egress now: ``{"block_network": bool, "allow_list": [CIDR...], "mode": "open"|"block"|"allow"|...}``."""
        net = self.info().get("network") or {}
        mode = str(net.get("mode", "open"))
        return {"block_network": mode in ("block", "none"), "allow_list": list(net.get("allow") or []),
                "mode": mode}

    def update_network_permissions(self, block_network: Optional[bool] = None,
                                   allow_list: Optional[Iterable[str]] = None) -> dict[str, Any]:
        """Change the egress (``sbx net``): block everything, allow only ALLOW_LIST (plus DNS), or open; returns
        :meth:`network_permissions`."""
        allow = list(allow_list or [])
        if block_network and allow:
            raise InvalidArgumentError("update_network_permissions: block_network=True and an allow_list")
        if block_network:
            args = ["--block"]
        elif allow:
            args = [x for c in allow for x in ("--allow", str(c))]
        else:
            args = ["--open"]
        _cli.run_json(["net", self.id, *args])
        return self.network_permissions()

    # -- images and snapshots ---------------------------------------------------------------------
    def snapshot_memory(self) -> str:
        """Save the running sandbox's processes, memory and files (runsc) and return the snapshot's id; the sandbox
        ends. :meth:`Sandbox.create_from_memory_snapshot` starts sandboxes from it."""
        return str(_cli.run_json(["snapshot", self.id])["id"])

    def create_image_from_filesystem(self, tag: Optional[str] = None) -> str:
        """Save the sandbox's files as a new image and return its id (usable as ``image=``)."""
        return str(_cli.run_json(["commit", *(["--tag", tag] if tag else []), self.id])["id"])


class App:
    """A named group of sandbox specs (the App/Image shape): ``App("agents").sandbox(image=..., cpu=...)``.

    sbx has no server-side apps; the name is kept for code that shows it.
    """

    aio = AioDescriptor()

    def __init__(self, name: str = "default") -> None:
        self.name: str = name

    @classmethod
    def lookup(cls, name: str, create_if_missing: bool = True) -> App:
        """The app NAME (sbx keeps no apps, so this is ``App(name)``)."""
        return cls(name)

    def sandbox(self, image: Union[str, Image, None] = None, **options: Any) -> Sandbox:
        """A :class:`Sandbox` spec with IMAGE and OPTIONS (see :class:`Sandbox`)."""
        return Sandbox(image, **options)

    def __repr__(self) -> str:
        return f"App({self.name!r})"


