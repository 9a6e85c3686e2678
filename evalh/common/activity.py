"""What the providers of a run are doing right now, for the progress display: calls in flight per
provider (and how long the oldest has waited), calls done and failed, retries and the last reason.

A leaf module (stdlib only): the runner marks each provider call (:func:`calling`), the HTTP layer
reports each retry (:func:`note_retry`, attributed to the provider whose call is running in this
task), and the console reads :func:`snapshot` a few times a second. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = [
    "CallMark",
    "ProviderActivity",
    "called_at_once",
    "calling",
    "describe",
    "note_retry",
    "reset",
    "snapshot",
]

_current: ContextVar[str | None] = ContextVar("evalh_activity_provider", default=None)


@dataclass(frozen=True)
class ProviderActivity:
    name: str
    in_flight: int
    done: int
    failed: int
    retries: int
    last_retry: str | None
    oldest_wait_s: float | None  # how long the oldest call in flight has been running


@dataclass
class _State:
    starts: dict[int, float] = field(default_factory=dict)
    done: int = 0
    failed: int = 0
    retries: int = 0
    last_retry: str | None = None


@dataclass
class CallMark:
    """One call in flight; set ``failed`` before it ends when the call failed."""

    failed: bool = False


_lock = threading.Lock()
_states: dict[str, _State] = {}
_ids = iter(range(1 << 62))


def reset() -> None:
    """Forget every provider (a new run starts)."""
    with _lock:
        _states.clear()


def _state_of(name: str) -> _State:
    """Provider ``name``'s state, made on its first call (the caller holds ``_lock``): once per provider,
    not a _State built and dropped for every call."""
    state = _states.get(name)
    if state is None:
        state = _states[name] = _State()
    return state


def calling(name: str) -> _Calling:
    """Mark one call of provider ``name`` as in flight for the ``with`` block; the block gets the
    call's :class:`CallMark`."""
    return _Calling(name)


class _Calling:
    """The context manager of :func:`calling`: a class rather than a generator, as every provider
    call of a run enters one (a generator's context manager costs about three times as much)."""

    __slots__ = ("_call_id", "_mark", "_name", "_state", "_token")

    def __init__(self, name: str) -> None:
        self._name = name

    def __enter__(self) -> CallMark:
        self._mark = CallMark()
        with _lock:
            state = self._state = _state_of(self._name)
            self._call_id = next(_ids)
            state.starts[self._call_id] = time.monotonic()
        self._token = _current.set(self._name)
        return self._mark

    def __exit__(self, kind: type[BaseException] | None, error: object, trace: object) -> None:
        mark = self._mark
        if kind is not None:
            mark.failed = True
        _current.reset(self._token)
        with _lock:
            self._state.starts.pop(self._call_id, None)
            self._state.done += 1
            self._state.failed += mark.failed


def called_at_once(name: str, failed: bool) -> None:
    """One call of provider ``name`` that was over as it began (it waits on nothing, as the echo's):
    counted done (and failed) as :func:`calling` counts a call, without its in-flight mark, which no
    one could see while the call runs."""
    with _lock:
        state = _state_of(name)
        state.done += 1
        state.failed += failed


def note_retry(reason: str) -> None:
    """The call running in this task is being retried because of ``reason`` (e.g. ``HTTP 429``)."""
    name = _current.get()
    if name is None:
        return
    with _lock:
        state = _state_of(name)
        state.retries += 1
        state.last_retry = reason


def snapshot() -> list[ProviderActivity]:
    now = time.monotonic()
    with _lock:
        return [
            ProviderActivity(
                name,
                len(state.starts),
                state.done,
                state.failed,
                state.retries,
                state.last_retry,
                now - min(state.starts.values()) if state.starts else None,
            )
            for name, state in _states.items()
        ]


def describe(item: ProviderActivity) -> str:
    """One line: ``openai:gpt-4o: 4 in flight (oldest 31 s), 12 done, 1 failed, 2 retries (HTTP 429)``."""
    parts = [f"{item.in_flight} in flight"]
    if item.oldest_wait_s is not None and item.oldest_wait_s >= 1:
        parts[0] += f" (oldest {item.oldest_wait_s:.0f} s)"
    parts.append(f"{item.done} done")
    if item.failed:
        parts.append(f"{item.failed} failed")
    if item.retries:
        parts.append(f"{item.retries} retries" + (f" (last: {item.last_retry})" if item.last_retry else ""))
    return f"{item.name}: " + ", ".join(parts)
