"""Images: built from a blueprint by ``sbx build``, or named by id, tag or registry reference."""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Mapping, Optional, Sequence, Union

from . import _cli
from ._aio import AioDescriptor
from .errors import InvalidArgumentError

__all__ = ["Image", "Blueprint", "PYTHON_SUITES"]

#: The Debian suite whose ``python3`` is each Python version: ``python_version``
#: on an image without a ``base`` starts from ``debian:SUITE``.
PYTHON_SUITES: dict[str, str] = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}


def _python_version(v: str) -> str:
    import re

    m = re.match(r"^(?:python)?(3\.[0-9]{1,2})$", str(v).strip())
    if not m:
        raise InvalidArgumentError(f"python_version: {v!r} is not a version such as \"3.11\" or \"python3.11\"")
    return m.group(1)


class Image:
    """An image for ``Sandbox(image=...)``: a blueprint that ``sbx build`` builds, or an existing image.

    ``Image(python_version="3.11", apt_packages=[...], python_packages=[...])``
    describes a Debian image (the suite whose Python is that version, see
    :data:`PYTHON_SUITES`, unless ``base`` says otherwise); without any of
    them the base is sbx's built-in ``busybox``. The methods
    (``run_commands``, ``env``, ``workdir``, ``copy_local_file``,
    ``copy_local_dir``, ``with_docker``, ``apt_install``, ``pip_install``)
    return a new Image with one more step. The image is built on first use
    (``build()``), by ``sbx build``, whose cache makes a second build of the
    same blueprint immediate.
    """

    aio = AioDescriptor()

    def __init__(self, python_version: Optional[str] = None, python_packages: Optional[Sequence[str]] = None,
                 apt_packages: Optional[Sequence[str]] = None, base: Optional[str] = None) -> None:
        self._python = _python_version(python_version) if python_version is not None else None
        self._base = base
        self._steps: list[dict[str, Any]] = []
        self._files: list[tuple[str, str]] = []  # (host path, name in the context)
        self._ref: Optional[str] = None  # an existing image: id, tag or registry reference
        self._built: Optional[str] = None
        if apt_packages:
            self._steps.append({"apt_packages": [str(p) for p in apt_packages]})
        if self._python:
            self._steps.append({"python_version": self._python})
        if python_packages:
            self._steps.append({"python_packages": [str(p) for p in python_packages]})

    # -- existing images ------------------------------------------------------------------------
    @classmethod
    def from_id(cls, image_id: str) -> Image:
        """An image of the store by id (``sha256:...``) or tag, as ``sbx images`` lists it."""
        img = cls()
        img._ref = str(image_id)
        return img

    @classmethod
    def from_registry(cls, ref: str) -> Image:
        """An image of a registry (``docker.io/library/python:3.12-slim``), pulled as ``sbx create --image`` does."""
        img = cls()
        img._ref = str(ref)
        return img

    # -- steps ----------------------------------------------------------------------------------
    def _with(self, step: Optional[dict[str, Any]] = None) -> Image:
        img = Image.__new__(type(self))
        img.__dict__.update(self.__dict__)
        img._steps = list(self._steps) + ([step] if step else [])
        img._files = list(self._files)
        img._built = None
        if self._ref is not None and step is not None:
            img._base, img._ref = self._ref, None
        return img

    def run_commands(self, *commands: Union[str, Sequence[str]]) -> Image:
        """Add a step running shell COMMANDS one after the other (``/bin/sh -c`` each)."""
        cmds: list[str] = []
        for c in commands:
            cmds.extend([c] if isinstance(c, str) else list(c))
        if not cmds:
            raise InvalidArgumentError("run_commands: no command")
        return self._with({"run": cmds})

    def apt_install(self, *packages: str) -> Image:
        """Add a step installing Debian PACKAGES."""
        return self._with({"apt_packages": list(packages)})

    def pip_install(self, *packages: str) -> Image:
        """Add a step installing Python PACKAGES with pip."""
        return self._with({"python_packages": list(packages)})

    def env(self, variables: Mapping[str, str]) -> Image:
        """Set environment VARIABLES for later steps and for sandboxes of the image."""
        return self._with({"env": {str(k): str(v) for k, v in variables.items()}})

    def workdir(self, path: str) -> Image:
        """Set the working directory for later steps and for sandboxes of the image."""
        return self._with({"workdir": str(path)})

    def with_docker(self) -> Image:
        """Add a step installing Debian's docker.io (engine and client; nothing is started)."""
        return self._with({"with_docker": True})

    def copy_local_file(self, local_path: Union[str, "os.PathLike[str]"], remote_path: str,
                        mode: Optional[str] = None) -> Image:
        """Copy the host file LOCAL_PATH to REMOTE_PATH in the image (a path ending in ``/`` is a directory)."""
        return self._copy(local_path, remote_path, mode, want_dir=False)

    def copy_local_dir(self, local_path: Union[str, "os.PathLike[str]"], remote_path: str) -> Image:
        """Copy what the host directory LOCAL_PATH holds into the directory REMOTE_PATH of the image."""
        return self._copy(local_path, remote_path, None, want_dir=True)

    def _copy(self, local: Union[str, "os.PathLike[str]"], remote: str, mode: Optional[str], want_dir: bool) -> Image:
        local = os.path.abspath(os.fspath(local))
        if want_dir != os.path.isdir(local) or not os.path.lexists(local):
            kind = "directory" if want_dir else "file"
            raise InvalidArgumentError(f"copy_local_{'dir' if want_dir else 'file'}: {local} is not a {kind}")
        name = f"f{len(self._files)}"
        if not want_dir and remote.endswith("/"):
            name += "/" + os.path.basename(local)
        entry: dict[str, Any] = {"src": name, "dest": str(remote)}
        if mode is not None:
            entry["mode"] = str(mode)
        img = self._with({"files": [entry]})
        img._files.append((local, name))
        return img

    # -- building -------------------------------------------------------------------------------
    def blueprint(self) -> dict[str, Any]:
        """The blueprint (sbx-blueprint(5)) this image is built from, as a dict."""
        base = self._base
        if base is None:
            if self._python or any("apt_packages" in s or "with_docker" in s or "python_packages" in s
                                   for s in self._steps):
                suite = PYTHON_SUITES.get(self._python or "3.11")
                if suite is None:
                    raise InvalidArgumentError(
                        f"python_version {self._python}: no Debian suite has it (known: "
                        + ", ".join(f"{v} ({s})" for v, s in PYTHON_SUITES.items()) + "); give base=")
                base = "debian:" + suite
            else:
                base = "busybox"
        doc: dict[str, Any] = {"base": base}
        if self._steps:
            doc["steps"] = self._steps
        return doc

    def build(self, tag: Optional[str] = None, runtime: Optional[str] = None, no_cache: bool = False) -> str:
        """Build the image (or name the existing one) and return its id (or reference), usable as ``image=``."""
        if self._ref is not None and tag is None:
            return self._ref
        if self._built is not None and tag is None and not no_cache:
            return self._built
        import json
        import shutil
        import tempfile

        with tempfile.TemporaryDirectory(prefix="sbx-build-") as ctx:
            for src, name in self._files:
                dest = os.path.join(ctx, name)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                if os.path.isdir(src) and not os.path.islink(src):
                    shutil.copytree(src, dest, symlinks=True)
                else:
                    shutil.copy2(src, dest, follow_symlinks=False)
            bp = os.path.join(ctx, ".sbx-blueprint.json")
            doc = self.blueprint() if self._ref is None else {"base": self._ref}
            with open(bp, "w") as f:
                json.dump(doc, f)
            args = ["build", "--file", bp]
            if tag:
                args += ["--tag", tag]
            if runtime:
                args += ["--runtime", runtime]
            if no_cache:
                args.append("--no-cache")
            out = _cli.run_json([*args, ctx])
        self._built = str(out["id"])
        return self._built

    @property
    def object_id(self) -> Optional[str]:
        """The image's id once built (or its reference), else None."""
        return self._ref if self._ref is not None else self._built

    def __repr__(self) -> str:
        if self._ref is not None:
            return f"Image.from_id({self._ref!r})"
        return f"Image({self.blueprint()!r})"


class Blueprint(Image):
    """The same as :class:`Image` (the name sbx's own docs use: sbx-blueprint(5))."""
