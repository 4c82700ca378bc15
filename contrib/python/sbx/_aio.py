"""``.aio``: awaitable equivalents of every method, run in a worker thread.

``obj.aio.method(...)`` is ``await``-able and runs ``obj.method(...)`` with
:func:`asyncio.to_thread`, so the event loop never blocks on ``sbx``.
Attributes that are SDK objects themselves (``box.aio.fs``) give their own
``.aio``; iterable objects (streams) support ``async for``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable, Optional


class Aio:
    """The asynchronous view of an SDK object (or class): see the module's docstring."""

    __slots__ = ("_target",)

    def __init__(self, target: Any) -> None:
        self._target = target

    def __repr__(self) -> str:
        return f"<aio {self._target!r}>"

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if callable(attr) and not isinstance(attr, type):
            return _awaitable(attr)
        return Aio(attr) if _has_aio(attr) else attr

    def __aiter__(self) -> Aio:
        it = iter(self._target)
        return _AsyncIter(it)  # type: ignore[return-value]

    async def __aenter__(self) -> Any:
        import asyncio

        r = await asyncio.to_thread(self._target.__enter__)
        return Aio(r) if _has_aio(r) else r

    async def __aexit__(self, *exc: Any) -> Optional[bool]:
        import asyncio

        return await asyncio.to_thread(self._target.__exit__, *exc)


def _has_aio(obj: Any) -> bool:
    """Whether OBJ is an SDK object (its class has an ``aio`` descriptor)."""
    return not isinstance(obj, type) and any(isinstance(k.__dict__.get("aio"), AioDescriptor)
                                             for k in type(obj).__mro__)


class _AsyncIter:
    def __init__(self, it: Any) -> None:
        self._it = it

    def __aiter__(self) -> _AsyncIter:
        return self

    async def __anext__(self) -> Any:
        import asyncio

        sentinel = object()
        v = await asyncio.to_thread(lambda: next(self._it, sentinel))
        if v is sentinel:
            raise StopAsyncIteration
        return v


def _awaitable(fn: Callable[..., Any]) -> Callable[..., Any]:
    import functools

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        import asyncio

        r = await asyncio.to_thread(fn, *args, **kwargs)
        return r

    return call


class AioDescriptor:
    """Gives ``.aio`` on instances and on classes (``Sandbox.aio.create(...)``)."""

    def __get__(self, obj: Any, cls: Any = None) -> Aio:
        return Aio(obj if obj is not None else cls)
