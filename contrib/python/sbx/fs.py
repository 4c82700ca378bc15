"""Files of a sandbox, through ``sbx fs``."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Optional, Union

from . import _cli
from ._aio import AioDescriptor
from .errors import NotFoundError
if TYPE_CHECKING:  # pragma: no cover
    import os

    from .sandbox import SandboxInstance

__all__ = ["FileSystem", "Page"]

if TYPE_CHECKING:  # pragma: no cover
    PathLike = Union[str, "os.PathLike[str]"]


def _entry(e: dict[str, Any]) -> dict[str, Any]:
    """An entry of ``sbx fs ls/stat --json`` with the SDK's names added: size_bytes, link_target."""
    d = dict(e)
    d["size_bytes"] = d.get("size", 0)
    d["link_target"] = d.get("target")
    return d


class Page(list):  # type: ignore[type-arg]
    """One page of a directory listing: a list of entry dicts plus ``next_cursor`` (None on the last page).

    Each entry has ``name``, ``path``, ``type`` (file, dir, symlink, ...),
    ``size_bytes``, ``link_target`` (a symlink's target, else None), and the
    CLI's ``mode``, ``uid``, ``gid``, ``mtime``.
    """

    next_cursor: Optional[str] = None


class FileSystem:
    """``box.fs``: read, write, list and search the files of a sandbox (running or ended)."""

    aio = AioDescriptor()

    def __init__(self, sandbox: "SandboxInstance") -> None:
        self._sandbox = sandbox

    def _fs(self, verb: str, *args: str, input: Optional[bytes] = None) -> Any:
        return _cli.run_json(["fs", self._sandbox.id, verb, *args], input=input)

    def read_bytes(self, path: str) -> bytes:
        """The content of the file PATH."""
        return _cli.run_raw(["fs", self._sandbox.id, "read", path])

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """The content of the file PATH, decoded."""
        return self.read_bytes(path).decode(encoding)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write DATA to the file PATH (replacing it), making missing parent directories."""
        try:
            self._fs("write", path, input=bytes(data))
        except NotFoundError:
            parent = path.rstrip("/").rsplit("/", 1)[0]
            if not parent:
                raise
            self.create_directory(parent)
            self._fs("write", path, input=bytes(data))

    def write_text(self, path: str, text: str, encoding: str = "utf-8") -> None:
        """Write TEXT to the file PATH (replacing it), making missing parent directories."""
        self.write_bytes(path, text.encode(encoding))

    def upload_file(self, local_path: PathLike, remote_path: str) -> None:
        """Copy the host file LOCAL_PATH to REMOTE_PATH in the sandbox."""
        import os

        self._fs("upload", os.fspath(local_path), remote_path)

    def download_file(self, remote_path: str, local_path: PathLike) -> None:
        """Copy REMOTE_PATH of the sandbox to the host file LOCAL_PATH."""
        import os

        self._fs("download", remote_path, os.fspath(local_path))

    def ls(self, path: str, limit: int = 200, cursor: Optional[str] = None) -> Page:
        """One page of the directory PATH (at most LIMIT entries, after CURSOR): a :class:`Page`."""
        args = ["ls", path, "--limit", str(int(limit))]
        if cursor:
            args += ["--cursor", cursor]
        doc = self._fs(*args)
        page = Page(_entry(e) for e in doc.get("entries", []))
        page.next_cursor = doc.get("next_cursor")
        return page

    def list_files(self, path: str) -> list[dict[str, Any]]:
        """Every entry of the directory PATH (all pages), as dicts (see :class:`Page`)."""
        out: list[dict[str, Any]] = []
        cursor: Optional[str] = None
        while True:
            page = self.ls(path, limit=10000, cursor=cursor)
            out.extend(page)
            cursor = page.next_cursor
            if not cursor:
                return out

    def stat_file(self, path: str) -> dict[str, Any]:
        """The entry of PATH (not following a last symlink): name, path, type, size_bytes, link_target, mode, ..."""
        return _entry(self._fs("stat", path))

    def exists(self, path: str) -> bool:
        """Whether PATH exists in the sandbox."""
        try:
            self.stat_file(path)
            return True
        except NotFoundError:
            return False

    def create_directory(self, path: str, parents: bool = True) -> None:
        """Make the directory PATH (with PARENTS: its missing parents too, and no error if it exists)."""
        self._fs("mkdir", path, *(["--parents"] if parents else []))

    def delete_file(self, path: str) -> None:
        """Remove the file (or symlink) PATH."""
        self._fs("rm", path)

    def delete_directory(self, path: str, recursive: bool = False) -> None:
        """Remove the directory PATH: an empty one, or with RECURSIVE the whole tree."""
        self._fs("rmdir", path, *(["--recursive"] if recursive else []))

    def find_in_files(self, path: str, pattern: str, name: Optional[str] = None) -> list[dict[str, Any]]:
        """Lines containing PATTERN in the files under PATH (only names matching glob NAME): dicts path, line, text."""
        args = ["find", path, pattern]
        if name:
            args += ["--name", name]
        return list(self._fs(*args).get("matches", []))

    def replace_in_files(self, path: str, old: str, new: str, name: Optional[str] = None) -> list[dict[str, Any]]:
        """Replace OLD by NEW in the files under PATH (only names matching glob NAME): dicts path, count."""
        args = ["replace", path, old, new]
        if name:
            args += ["--name", name]
        return list(self._fs(*args).get("files", []))
