"""When the cyclic garbage collector runs during a run's bulk phases: the one place that decides.

A run allocates millions of objects that live until it ends (the loaded suite: tests, specs, their
dicts; then the rows it keeps) and, as evalh's own code makes no reference cycles, next to no cyclic
garbage (a test guards it). CPython's collector scans the young objects every 700 allocations and,
every so often, every object; on a 5,000-test run its passes found nothing and cost about 0.45 s of
7.5 s of CPU. Reference counting frees every acyclic object as usual, whatever the collector does.

- :func:`loading`: the collector is paused while a config is loaded, and what loading built is
  frozen (``gc.freeze``) when it ends, so no later pass scans it again (the run unfreezes it).
- :func:`running`: what exists when the run starts is frozen, and the young objects are collected
  every :data:`RUN_THRESHOLD` allocations instead of 700, so that the cycles a user's code makes
  (``python`` assertions, providers, HTTP clients: ~70 objects per HTTP request) are still collected.
- :func:`paused`: no collection while reports are written (millions of short-lived, acyclic dicts).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RUN_THRESHOLD", "loading", "paused", "running"]

RUN_THRESHOLD = 50_000  # young objects between collections during a run (CPython's default: 700)


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside; the collector is on again after it if it was before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def loading() -> Iterator[None]:
    """Paused while loading; on success, what was built is frozen before the collector runs again
    (its first pass would otherwise scan the whole suite, and the next ones again: 0.17 s of
    5,000 tests). Inside another pause (a nested load), the outer one decides."""
    outermost = gc.isenabled()
    with paused():
        yield
        if outermost:
            gc.freeze()


# Runs under way in this process (evaluate in threads): the first to start sets the run's policy and
# the last to end restores the host's, else a run ending inside another restored the raised threshold.
_runs_lock = threading.Lock()
_runs = 0
_host_threshold: tuple[int, ...] = ()


@contextmanager
def running() -> Iterator[None]:
    """The suite frozen and collections rarer for the run; both undone when the last run ends."""
    global _runs, _host_threshold
    with _runs_lock:
        if _runs == 0:
            _host_threshold = gc.get_threshold()
            gc.set_threshold(RUN_THRESHOLD, *_host_threshold[1:])
        _runs += 1
        gc.freeze()
    try:
        yield
    finally:
        with _runs_lock:
            _runs -= 1
            if _runs == 0:
                gc.set_threshold(*_host_threshold)
                gc.unfreeze()
