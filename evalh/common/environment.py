"""The environment a run sees: its overlay (``.env``, ``--env-file``, a config's ``env:``) over the process's.

A run never writes ``os.environ``: two runs in one process (``evalh.aevaluate`` gathered, two threads, a
notebook) would read each other's API keys from it. Instead the run's values are an overlay held in a
context variable, entered by :func:`overlaid` (asyncio tasks and ``asyncio.to_thread`` carry it along; a
plain thread pool needs ``contextvars.copy_context().run``), and every read made while loading or running
goes through :func:`getenv` or :func:`environ`. A subprocess no longer inherits the overlay from the
process: it is given ``env=environ()``.

One setting stays a read of ``os.environ``: ``EVALH_PYTHON_WORKERS``, the size of the process's one pool
of Python workers, read when evalh is imported, before any run exists.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import overload

__all__ = ["RUN_ENVIRON", "environ", "getenv", "overlaid", "overlay", "overlay_key"]


class _Overlay:
    """One run's values over the process environment (immutable; a nested overlay is a new one)."""

    __slots__ = ("key", "values")

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = dict(values)
        self.key = tuple(sorted(self.values.items()))  # equal overlays share reusable subprocesses


_OVERLAY: ContextVar[_Overlay | None] = ContextVar("evalh_environment_overlay", default=None)


@overload
def getenv(name: str) -> str | None: ...
@overload
def getenv(name: str, default: str) -> str: ...
def getenv(name: str, default: str | None = None) -> str | None:
    """The value of environment variable ``name`` as the current run sees it."""
    layer = _OVERLAY.get()
    if layer is not None and name in layer.values:
        return layer.values[name]
    return os.environ.get(name, default)


def environ() -> dict[str, str]:
    """The whole environment as the current run sees it (a copy: for a subprocess's ``env=``)."""
    layer = _OVERLAY.get()
    return {**os.environ, **layer.values} if layer is not None else dict(os.environ)


def overlay() -> Mapping[str, str]:
    """The current run's values over the process environment (empty outside any run)."""
    layer = _OVERLAY.get()
    return layer.values if layer is not None else {}


def overlay_key() -> tuple[tuple[str, str], ...]:
    """A hashable identity of :func:`overlay`: a worker process started under one serves only it."""
    layer = _OVERLAY.get()
    return layer.key if layer is not None else ()


@contextmanager
def overlaid(values: Mapping[str, str]) -> Iterator[None]:
    """Within the block (this context only: not another thread's, not another task's), the environment
    the run sees has ``values`` over the current one."""
    if not values:
        yield
        return
    token = _OVERLAY.set(_Overlay({**overlay(), **{str(key): str(value) for key, value in values.items()}}))
    try:
        yield
    finally:
        _OVERLAY.reset(token)


class _RunEnviron(Mapping[str, str]):
    """A live read-only view of :func:`environ` (what ``os.environ`` was for templates that read it)."""

    def __getitem__(self, name: str) -> str:
        value = getenv(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and getenv(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(environ())

    def __len__(self) -> int:
        return len(environ())


RUN_ENVIRON: Mapping[str, str] = _RunEnviron()
