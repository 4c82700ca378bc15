"""Exceptions of the sbx SDK: one class per error code of the ``sbx`` CLI.

Every error the CLI reports carries a stable code (``INVALID_ARGUMENT``,
``NOT_FOUND``, ...; see sbx(1), EXIT STATUS). The SDK raises the subclass of
:class:`SbxError` that belongs to the code; ``.code`` holds the code's name and
``.message`` the CLI's message.
"""

from __future__ import annotations

import builtins

__all__ = [
    "SbxError",
    "InvalidArgumentError",
    "NotFoundError",
    "SandboxNotRunningError",
    "SandboxPathInvalidError",
    "RuntimeUnavailableError",
    "NetworkBlockUnavailableError",
    "SecretsNotAllowedError",
    "PolicyRefusedError",
    "BusyError",
    "TimeoutError",
    "ResourceExhaustedError",
    "PermissionDeniedError",
    "InternalError",
    "SandboxFailedError",
    "SandboxTerminatedError",
    "error_for",
]


class SbxError(Exception):
    """An error reported by sbx.

    ``code`` is the CLI's stable error code (such as ``"NOT_FOUND"``) and
    ``message`` its message.
    """

    code: str = "INTERNAL"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message: str = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class InvalidArgumentError(SbxError):
    """A bad argument or option (``INVALID_ARGUMENT``), including an option sbx does not have."""

    code = "INVALID_ARGUMENT"


class NotFoundError(SbxError):
    """No such sandbox, image, snapshot, process or file (``NOT_FOUND``)."""

    code = "NOT_FOUND"


class SandboxNotRunningError(SbxError):
    """The sandbox is not running (``SANDBOX_NOT_RUNNING``)."""

    code = "SANDBOX_NOT_RUNNING"


class SandboxPathInvalidError(SbxError):
    """A path in a sandbox that is refused: relative, through a link out of it, ... (``PATH_INVALID``)."""

    code = "PATH_INVALID"


class RuntimeUnavailableError(SbxError):
    """The runtime (runsc or runc) is missing or cannot run here (``RUNTIME_UNAVAILABLE``)."""

    code = "RUNTIME_UNAVAILABLE"


class NetworkBlockUnavailableError(SbxError):
    """The requested network restriction cannot be enforced here (``NETWORK_BLOCK_UNAVAILABLE``)."""

    code = "NETWORK_BLOCK_UNAVAILABLE"


class SecretsNotAllowedError(SbxError):
    """Secrets were asked for where they are not allowed (``SECRETS_NOT_ALLOWED``)."""

    code = "SECRETS_NOT_ALLOWED"


class PolicyRefusedError(SbxError):
    """The host's policy (sbx.conf) refused the request (``POLICY_REFUSED``)."""

    code = "POLICY_REFUSED"


class BusyError(SbxError):
    """The object is in use, or a limit of concurrent work is reached (``BUSY``)."""

    code = "BUSY"


class TimeoutError(SbxError, builtins.TimeoutError):
    """A wait ran out of time (``TIMEOUT``); also a builtin :class:`TimeoutError`."""

    code = "TIMEOUT"


class ResourceExhaustedError(SbxError):
    """A size or count limit was exceeded (``RESOURCE_EXHAUSTED``)."""

    code = "RESOURCE_EXHAUSTED"


class PermissionDeniedError(SbxError):
    """Credentials or permissions were refused (``PERMISSION_DENIED``)."""

    code = "PERMISSION_DENIED"


class InternalError(SbxError):
    """Anything else that went wrong (``INTERNAL``)."""

    code = "INTERNAL"


class SandboxFailedError(SandboxNotRunningError):
    """The sandbox ended in the state ``failed`` (it could not start, or its runtime failed)."""


class SandboxTerminatedError(SandboxNotRunningError):
    """The sandbox ended in the state ``terminated`` (terminated, timed out, idle)."""


_BY_CODE: dict[str, type[SbxError]] = {
    cls.code: cls
    for cls in (
        InvalidArgumentError,
        NotFoundError,
        SandboxNotRunningError,
        SandboxPathInvalidError,
        RuntimeUnavailableError,
        NetworkBlockUnavailableError,
        SecretsNotAllowedError,
        PolicyRefusedError,
        BusyError,
        TimeoutError,
        ResourceExhaustedError,
        PermissionDeniedError,
        InternalError,
    )
}


def error_for(code: str, message: str) -> SbxError:
    """Return the exception for the CLI's error CODE (a name such as ``"NOT_FOUND"``) and MESSAGE."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return SbxError(message, code)
    return cls(message)
