"""The core: runs the ``sbx`` binary and maps its errors to exceptions.

The binary is ``$SBX_BIN`` when set, else ``sbx`` on ``PATH``. ``SBX_ROOT``,
``SBX_RUN_ROOT``, ``SBX_CONF`` and ``SBX_INIT`` reach it through the
environment. Everything here imports lazily so that ``import sbx`` stays fast.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Optional, Sequence

from .errors import InternalError, SbxError, error_for
if TYPE_CHECKING:  # pragma: no cover
    import subprocess

#: The CLI's exit status for its own errors (sbx(1), EXIT STATUS).
EXIT_ERROR = 125

_bin_cache: Optional[str] = None


def sbx_bin() -> str:
    """Return the path of the ``sbx`` binary: ``$SBX_BIN``, else ``sbx`` on ``PATH``."""
    global _bin_cache
    env = os.environ.get("SBX_BIN")
    if env:
        return env
    if _bin_cache is None:
        for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
            p = os.path.join(d or ".", "sbx")
            if os.path.isfile(p) and os.access(p, os.X_OK):
                _bin_cache = p
                break
        else:
            from .errors import RuntimeUnavailableError

            raise RuntimeUnavailableError("the sbx binary is not on PATH (set SBX_BIN to its path)")
    return _bin_cache


def parse_error(stderr: bytes) -> Optional[SbxError]:
    """Return the error of the last ``sbx: CODE: message`` paragraph of STDERR, or None."""
    import re

    matches = list(re.finditer(rb"^sbx: ([A-Z][A-Z_]+): (.*)$", stderr, re.M))
    if not matches:
        return None
    m = matches[-1]
    rest = stderr[m.start(2):].decode("utf-8", "replace").rstrip("\n")
    return error_for(m.group(1).decode(), rest)


def _error_from(rc: int, stdout: bytes, stderr: bytes, doc: Any) -> SbxError:
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        e = doc["error"]
        return error_for(str(e.get("code", "INTERNAL")), str(e.get("message", "")))
    err = parse_error(stderr)
    if err is not None:
        return err
    text = (stderr or stdout).decode("utf-8", "replace").strip()
    if text.startswith("sbx: "):
        text = text[5:]
    if rc == 127:  # the command to start is not in the sandbox (as a shell says it)
        from .errors import NotFoundError

        return NotFoundError(text)
    if rc == 126:
        from .errors import PermissionDeniedError

        return PermissionDeniedError(text)
    return InternalError(f"sbx exited with status {rc}: {text}")


def argv(args: Sequence[str], json: bool = True) -> list[str]:
    """Return the command line that runs ``sbx`` with ARGS (with ``--json`` when JSON)."""
    return [sbx_bin(), "--json", *args] if json else [sbx_bin(), *args]


def run_json(args: Sequence[str], input: Optional[bytes] = None,
             ok_codes: Optional[Sequence[int]] = (0,)) -> Any:
    """Run ``sbx --json ARGS`` and return its parsed JSON document.

    Raises the :class:`~sbx.errors.SbxError` subclass of the CLI's error code
    when the document is an error, or when the exit status is not in OK_CODES
    (None: any status, for commands whose status is their command's).
    """
    import json as _json
    import subprocess

    p = subprocess.run(argv(args), input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=None if input is not None else subprocess.DEVNULL)
    doc: Any = None
    if p.stdout.strip():
        try:
            doc = _json.loads(p.stdout)
        except ValueError:
            doc = None
    if isinstance(doc, dict) and "error" in doc and isinstance(doc["error"], dict):
        raise _error_from(p.returncode, p.stdout, p.stderr, doc)
    if (doc is None and p.returncode != 0) or (ok_codes is not None and p.returncode not in ok_codes):
        raise _error_from(p.returncode, p.stdout, p.stderr, doc)
    return doc


def run_raw(args: Sequence[str], input: Optional[bytes] = None) -> bytes:
    """Run ``sbx ARGS`` (no ``--json``), return its standard output as bytes; raise on status 125."""
    import subprocess

    p = subprocess.run(argv(args, json=False), input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=None if input is not None else subprocess.DEVNULL)
    if p.returncode != 0:
        raise _error_from(p.returncode, p.stdout, p.stderr, None)
    return p.stdout


def popen(args: Sequence[str], json: bool = False, **kw: Any) -> subprocess.Popen[bytes]:
    """Start ``sbx ARGS`` as a child process (subprocess.Popen keyword arguments in KW)."""
    import subprocess

    return subprocess.Popen(argv(args, json=json), **kw)


def check_status(rc: int, stderr_tail: bytes) -> None:
    """Raise the CLI's error when RC is 125 and STDERR_TAIL ends with an ``sbx: CODE:`` line."""
    if rc == EXIT_ERROR:
        err = parse_error(stderr_tail)
        if err is not None:
            raise err


_help_cache: dict[str, str] = {}


def command_help(command: str) -> str:
    """Return ``sbx COMMAND --help`` (cached for the life of the process)."""
    if command not in _help_cache:
        import subprocess

        p = subprocess.run(argv([command, "--help"], json=False), stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        _help_cache[command] = p.stdout.decode("utf-8", "replace")
    return _help_cache[command]


def has_option(command: str, option: str) -> bool:
    """Whether ``sbx COMMAND --help`` lists the long option OPTION (such as ``--secret``)."""
    import re

    return re.search(r"(^|[\s,])" + re.escape(option) + r"([\s=]|$)", command_help(command), re.M) is not None
