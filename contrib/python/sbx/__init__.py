"""sbx: local sandboxes (gVisor runsc or runc) from Python, in the shapes hosted sandbox SDKs have.

The package drives the ``sbx`` binary (``$SBX_BIN``, else ``sbx`` on
``PATH``); ``SBX_ROOT``, ``SBX_RUN_ROOT`` and ``SBX_CONF`` reach it through
the environment. Three ways to write the same program:

A. spec, then create::

    box = Sandbox(image="busybox", cpu=1, memory="1Gi").create()
    print(box.process.run_code("echo 3", language="sh").result)
    box.terminate()

B. app and image::

    instance = App("agents").sandbox(image=Image(python_version="3.11"), memory=1024).create()
    print(instance.run("python3 --version").stdout)

C. imperative handle::

    with Sandbox.create("busybox", runtime="runc") as sb:
        assert sb.exec("sh", "-c", "exit 3").wait() == 3

Every object has ``.aio`` with awaitable equivalents of its methods. Errors
are :class:`SbxError` subclasses named after the CLI's error codes.
"""

from __future__ import annotations

from .errors import (BusyError, InternalError, InvalidArgumentError, NetworkBlockUnavailableError, NotFoundError,
                     PermissionDeniedError, PolicyRefusedError, ResourceExhaustedError, RuntimeUnavailableError,
                     SandboxFailedError, SandboxNotRunningError, SandboxPathInvalidError, SandboxTerminatedError,
                     SbxError, SecretsNotAllowedError, TimeoutError)
from .fs import FileSystem, Page
from .image import Blueprint, Image
from .process import OutputStream, Process, ProcessAPI, Result, SandboxProcess
from .sandbox import App, Sandbox, SandboxInstance, Tunnel

__version__ = "0.1.0"

__all__ = [
    "App",
    "Blueprint",
    "BusyError",
    "FileSystem",
    "Image",
    "InternalError",
    "InvalidArgumentError",
    "NetworkBlockUnavailableError",
    "NotFoundError",
    "OutputStream",
    "Page",
    "PermissionDeniedError",
    "PolicyRefusedError",
    "Process",
    "ProcessAPI",
    "ResourceExhaustedError",
    "Result",
    "RuntimeUnavailableError",
    "Sandbox",
    "SandboxFailedError",
    "SandboxInstance",
    "SandboxNotRunningError",
    "SandboxPathInvalidError",
    "SandboxProcess",
    "SandboxTerminatedError",
    "SbxError",
    "SecretsNotAllowedError",
    "TimeoutError",
    "Tunnel",
]
