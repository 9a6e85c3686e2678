"""User Python (``python`` assertions, ``python:`` providers) runs in worker processes, with a deadline.

A worker is a ``python`` process of its own session (a Ctrl-C in the terminal reaches evalh, not the
user's code) that serves one call at a time (``runtimes/python_worker.py``). Workers are started on
demand, up to :data:`MAX_WORKERS` (``$EVALH_PYTHON_WORKERS``), and reused, so each loads a file once
and a call costs a round trip over a pipe (well under a millisecond), not a process start.

A call that outlives its timeout, or whose caller is cancelled (Ctrl-C, a provider timeout), kills
its worker's process group at once, never waiting on the user's code; the next call starts a fresh
worker. Idle workers exit when evalh closes their pipe, and any left are killed when evalh exits.

Any event loop may call: the pipes are plain descriptors watched with ``add_reader`` for the length of
one call, so workers outlive the ``asyncio.run`` that started them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalh.common.environment import environ, overlay_key
from evalh.runtimes.processes import TimedOut, forget_group, kill_group, remember_group
from evalh.runtimes.python_worker import (
    FileFunction,
    InlineCode,
    LoadProblem,
    Outcome,
    Raised,
    Returned,
    frame,
)

__all__ = [
    "MAX_WORKERS",
    "FileFunction",
    "InlineCode",
    "LoadProblem",
    "Raised",
    "Returned",
    "TimedOut",
    "WorkerLost",
    "call_python",
    "map_python",
    "shutdown_workers",
]


def _max_workers() -> int:
    configured = os.environ.get("EVALH_PYTHON_WORKERS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return max(4, min(8, os.cpu_count() or 1))


MAX_WORKERS = _max_workers()

# The worker finds evalh where this process found it, even when evalh is not installed (a checkout);
# -P keeps the working directory off sys.path, so a json.py or types.py there cannot break the worker.
_BOOT = (
    "import sys; sys.path.append(sys.argv[2]); "
    "from evalh.runtimes.python_worker import serve; serve(int(sys.argv[1]))"
)
_HEADER_SIZE = 8


class WorkerLost(Exception):
    """The worker process died during the call (``os._exit``, a crash, the OOM killer)."""


class _Worker:
    """One worker process and its two pipes (non-blocking on our side)."""

    def __init__(self) -> None:
        evalh_home = str(Path(__file__).resolve().parents[2])
        # the user's code reads the run's environment (.env, the config's env:): it is not os.environ's
        self.environment = overlay_key()
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-c", _BOOT, str(os.getpid()), evalh_home],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
            env=environ(),
        )
        remember_group(self.process.pid)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests = self.process.stdin.fileno()
        self.replies = self.process.stdout.fileno()
        os.set_blocking(self.requests, False)
        os.set_blocking(self.replies, False)
        self.buffer = bytearray()

    def alive(self) -> bool:
        return self.process.poll() is None

    async def exchange(self, request: bytes) -> bytes:
        loop = asyncio.get_running_loop()
        await self._write(loop, frame(request))
        return await self._read(loop)

    async def _write(self, loop: asyncio.AbstractEventLoop, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.requests, view) :]
            except BlockingIOError:
                await _ready(self.requests, loop.add_writer, loop.remove_writer)
            except (BrokenPipeError, ConnectionResetError):
                raise WorkerLost from None

    async def _read(self, loop: asyncio.AbstractEventLoop) -> bytes:
        while True:
            if len(self.buffer) >= _HEADER_SIZE:
                size = int.from_bytes(self.buffer[:_HEADER_SIZE], "big")
                if len(self.buffer) >= _HEADER_SIZE + size:
                    reply = bytes(self.buffer[_HEADER_SIZE : _HEADER_SIZE + size])
                    del self.buffer[: _HEADER_SIZE + size]
                    return reply
            try:
                chunk = os.read(self.replies, 1 << 20)
            except BlockingIOError:
                await _ready(self.replies, loop.add_reader, loop.remove_reader)
                continue
            if not chunk:
                raise WorkerLost
            self.buffer += chunk

    def kill(self) -> None:
        """Kill the worker's whole process group (what the user's code started too) and reap it."""
        kill_group(self.process.pid)
        self.close()

    def close(self) -> None:
        """Close the pipes: an idle worker reads end of file and exits."""
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=1.0)
        if self.process.returncode is not None:
            forget_group(self.process.pid)


async def _ready(
    fd: int,
    watch: Callable[[int, Callable[[], None]], Any],
    unwatch: Callable[[int], Any],
) -> None:
    """Until ``fd`` is readable (or writable, with add_writer)."""
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not waiter.done():
            waiter.set_result(None)

    watch(fd, wake)
    try:
        await waiter
    finally:
        unwatch(fd)


class _Pool:
    """At most ``size`` workers, started on demand; callers beyond that wait their turn in order."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.idle: list[_Worker] = []
        self.in_use = 0
        self.waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> _Worker:
        if self.in_use < self.size:
            self.in_use += 1
        else:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.waiting.append(turn)
            try:
                await turn  # the releasing caller handed its slot over
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._hand_over()
                else:
                    # a stop cancels every waiter at once: a release may have skipped this one already
                    with contextlib.suppress(ValueError):
                        self.waiting.remove(turn)
                raise
        reused = _take_idle(self.idle)
        if reused is not None:
            return reused
        try:
            return _Worker()
        except BaseException:
            self._hand_over()
            raise

    def release(self, worker: _Worker, reusable: bool) -> None:
        if reusable:
            self.idle.append(worker)
        else:
            worker.kill()
        self._hand_over()

    def _hand_over(self) -> None:
        """Give a finished caller's slot to the next waiting one, or free it."""
        while self.waiting:
            turn = self.waiting.popleft()
            if turn.done():
                continue
            try:
                turn.set_result(None)
                return
            except RuntimeError:  # its event loop is closed
                continue
        self.in_use -= 1

    def shutdown(self) -> None:
        idle, self.idle = self.idle, []
        for worker in idle:
            worker.kill()


class _Apart:
    """Workers for calls made from a thread of their own while the run's event loop waits for them (a
    template filter inside a render): they never queue behind the run's calls, which that blocked loop
    drives. Their callers (a few helper threads) are the bound; the lock guards the idle list."""

    def __init__(self) -> None:
        self.idle: list[_Worker] = []
        self.lock = threading.Lock()

    async def acquire(self) -> _Worker:
        with self.lock:
            reused = _take_idle(self.idle)
        return reused if reused is not None else _Worker()

    def release(self, worker: _Worker, reusable: bool) -> None:
        if reusable:
            with self.lock:
                self.idle.append(worker)
        else:
            worker.kill()

    def shutdown(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for worker in idle:
            worker.kill()


def _take_idle(idle: list[_Worker]) -> _Worker | None:
    """An idle live worker started under the current run's environment, if any. Without one, an idle
    worker of another environment (a concurrent run's) is ended, so the processes stay within bounds."""
    key = overlay_key()
    for index in range(len(idle) - 1, -1, -1):
        worker = idle[index]
        if not worker.alive():
            del idle[index]
            worker.kill()
        elif worker.environment == key:
            del idle[index]
            return worker
    if idle:
        idle.pop(0).kill()
    return None


_POOL = _Pool(MAX_WORKERS)
_APART = _Apart()


async def _run(request: tuple[Any, ...], timeout_s: float, pool: _Pool | _Apart = _POOL) -> Outcome:
    """Send one request to a worker and wait at most ``timeout_s`` for the outcome.

    Raises TimedOut or WorkerLost (the worker is then killed and replaced); a cancellation kills the
    worker too, so nothing keeps running the user's code after evalh stopped waiting for it."""
    payload = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
    worker = await pool.acquire()
    reusable = False
    try:
        async with asyncio.timeout(timeout_s):
            reply = await worker.exchange(payload)
        outcome: Outcome = pickle.loads(reply)
        reusable = True
        return outcome
    except TimeoutError:
        raise TimedOut(timeout_s) from None
    finally:
        pool.release(worker, reusable)


async def call_python(
    target: InlineCode | FileFunction, args: tuple[Any, ...], *, timeout_s: float, apart: bool = False
) -> Outcome:
    """Call the user's function once with ``args`` (plain data) in a worker. ``apart``: in a worker
    outside the run's pool, for a caller the run's event loop is blocked on (see :class:`_Apart`)."""
    return await _run(("call", target, args), timeout_s, _APART if apart else _POOL)


async def map_python(
    target: InlineCode | FileFunction, calls: Sequence[tuple[Any, ...]], *, timeout_s: float
) -> Outcome:
    """Call the user's function once per args in one worker; ``Returned`` holds a list of values."""
    return await _run(("map", target, list(calls)), timeout_s)


def shutdown_workers() -> None:
    """Stop every idle worker (busy ones are killed by their callers' cancellation)."""
    _POOL.shutdown()
    _APART.shutdown()
