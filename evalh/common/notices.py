"""Warnings for the user: located, shown once, and errors under ``--strict``.

Where promptfoo bends (an undefined template variable renders empty, an unknown config key is
ignored), evalh bends the same way but says so: each warning names its place, and is shown once per
(place, subject) through the sink the command line installs (stderr). ``--strict`` (or
``evaluateOptions.strict: true``) turns every warning into the located error it stands for.
A leaf module, like ``errors``: templating and config both report here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from evalh.errors import EvalhError, Where

__all__ = ["is_strict", "strict_mode", "warn", "warnings_muted", "warnings_shown", "warnings_to"]


@dataclass
class _Policy:
    strict: bool = False
    sink: Callable[[str], None] | None = None
    seen: set[tuple[str, str]] = field(default_factory=set)
    shown: list[str] = field(default_factory=list)


_policy = _Policy()
_lock = threading.Lock()  # grading renders templates in worker threads


def is_strict() -> bool:
    return _policy.strict


def warn(error: EvalhError, *, where: Where, subject: str) -> None:
    """Raise ``error`` under strict mode; else show its message once per (``where``, ``subject``)."""
    if _policy.strict:
        raise error
    key = (str(where), subject)
    with _lock:
        if key in _policy.seen:
            return
        _policy.seen.add(key)
        text = error.render()
        _policy.shown.append(text)
    if _policy.sink is not None:
        _policy.sink(text)


def warnings_shown() -> list[str]:
    """The warnings given since :func:`warnings_to` was entered (or since the process started)."""
    with _lock:
        return list(_policy.shown)


@contextmanager
def warnings_to(sink: Callable[[str], None] | None, *, strict: bool = False) -> Iterator[None]:
    """Within the block, warnings go to ``sink`` (each once) and ``strict`` makes them errors."""
    global _policy
    saved = _policy
    _policy = _Policy(strict=strict, sink=sink)
    try:
        yield
    finally:
        _policy = saved


@contextmanager
def strict_mode(enabled: bool) -> Iterator[None]:
    """Turn strict mode on within the block when ``enabled`` (a config's ``evaluateOptions.strict``)."""
    if not enabled or _policy.strict:
        yield
        return
    _policy.strict = True
    try:
        yield
    finally:
        _policy.strict = False


@contextmanager
def warnings_muted() -> Iterator[None]:
    """Within the block no warning is shown nor raised (strict mode off): for checks that cannot know
    yet, such as ``evalh validate`` on a test whose ``transformVars`` (not run there) defines vars."""
    global _policy
    saved = _policy
    _policy = _Policy(strict=False, sink=None)
    try:
        yield
    finally:
        _policy = saved
