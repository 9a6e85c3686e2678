"""Warnings for the user: located, shown once, and errors under ``--strict``.

Where promptfoo bends (an undefined template variable renders empty, an unknown config key is
ignored), evalh bends the same way but says so: each warning names its place, and is shown once per
(place, subject) through the sink the command line installs (stderr). ``--strict`` (or
``evaluateOptions.strict: true``) turns every warning into the located error it stands for; a
:func:`notice` (what a run learns only as it ends) is shown the same way and never raised. The policy
(strict, sink, what was shown) is a context variable, set per run (:func:`run_policy`), never changed in
place: two runs in one process never see each other's.
A leaf module, like ``errors``: templating and config both report here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from evalh.errors import EvalhError, Where

__all__ = [
    "is_strict",
    "notice",
    "run_policy",
    "strict_mode",
    "warn",
    "warnings_muted",
    "warnings_shown",
    "warnings_to",
]


@dataclass(frozen=True)
class _Policy:
    """One run's policy. Strict mode entered within a run is a new policy sharing the run's record of
    what was shown (and its lock: grading renders templates in worker threads)."""

    strict: bool = False
    sink: Callable[[str], None] | None = None
    seen: set[tuple[str, str]] = field(default_factory=set)
    shown: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


# A run's own (asyncio tasks and asyncio.to_thread carry it): two runs in one process never share it.
_PROCESS = _Policy()
_POLICY: ContextVar[_Policy] = ContextVar("evalh_notice_policy", default=_PROCESS)


def is_strict() -> bool:
    return _POLICY.get().strict


def warn(error: EvalhError, *, where: Where, subject: str) -> None:
    """Raise ``error`` under strict mode; else show its message once per (``where``, ``subject``)."""
    if _POLICY.get().strict:
        raise error
    notice(error, where=where, subject=subject)


def notice(error: EvalhError, *, where: Where, subject: str) -> None:
    """Show ``error``'s message once per (``where``, ``subject``), even under strict mode: for what a
    run learns only as it ends (its results are written; an error then would lose them)."""
    policy = _POLICY.get()
    key = (str(where), subject)
    with policy.lock:
        if key in policy.seen:
            return
        policy.seen.add(key)
        text = error.render()
        policy.shown.append(text)
    if policy.sink is not None:
        policy.sink(text)


def warnings_shown() -> list[str]:
    """The warnings given since :func:`warnings_to` was entered (or since the process started)."""
    policy = _POLICY.get()
    with policy.lock:
        return list(policy.shown)


@contextmanager
def _policy(policy: _Policy) -> Iterator[None]:
    token = _POLICY.set(policy)
    try:
        yield
    finally:
        _POLICY.reset(token)


def warnings_to(sink: Callable[[str], None] | None, *, strict: bool = False) -> AbstractContextManager[None]:
    """Within the block (this context: not another thread's or task's), warnings go to ``sink`` (each
    once) and ``strict`` makes them errors."""
    return _policy(_Policy(strict=strict, sink=sink))


@contextmanager
def strict_mode(enabled: bool) -> Iterator[None]:
    """Turn strict mode on within the block when ``enabled`` (a config's ``evaluateOptions.strict``)."""
    policy = _POLICY.get()
    if not enabled or policy.strict:
        yield
        return
    with _policy(replace(policy, strict=True)):
        yield


def run_policy() -> AbstractContextManager[None]:
    """Within the block (a run), the policy is the run's own: a concurrent run's strict mode or sink
    never reaches it (each is set in the context, never changed in place). A run outside any command
    (the Python API) gets a record of what it showed of its own, not the process's; a run within a
    command (``evalh run``) shares the command's, so a warning is still shown once per command."""
    policy = _POLICY.get()
    return _policy(_Policy()) if policy is _PROCESS else nullcontext()


def warnings_muted() -> AbstractContextManager[None]:
    """Within the block no warning is shown nor raised (strict mode off): for checks that cannot know
    yet, such as ``evalh validate`` on a test whose ``transformVars`` (not run there) defines vars."""
    return _policy(_Policy(strict=False, sink=None))
