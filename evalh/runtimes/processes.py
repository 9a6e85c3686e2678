"""Programs evalh starts, each in a process group of its own, and killing them (timeout, cancellation, exit).

Each program evalh runs (an ``exec:`` provider, a Python worker) leads a new session, so a Ctrl-C in the
terminal reaches evalh alone (which then decides to stop them), and killing the group also kills whatever
the program started (a ``sleep 1000 &`` still holding its stdout).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from evalh.common.environment import environ
from evalh.runtimes.timeouts import TimedOut

__all__ = [
    "Finished",
    "OutputTooLarge",
    "TimedOut",
    "forget_group",
    "kill_all_groups",
    "kill_group",
    "remember_group",
    "run_program",
]

_LIVE: set[int] = set()


def remember_group(pid: int) -> None:
    """``pid`` leads a process group that must not outlive evalh."""
    _LIVE.add(pid)


def forget_group(pid: int) -> None:
    _LIVE.discard(pid)


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (gone already is fine)."""
    _LIVE.discard(pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_all_groups() -> None:
    """Kill every group still alive: evalh is exiting, however it got there."""
    for pid in list(_LIVE):
        kill_group(pid)


atexit.register(kill_all_groups)


class OutputTooLarge(Exception):
    """The program wrote more than ``limit`` bytes to stdout; it was killed and its output dropped."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"wrote more than {limit} bytes to stdout")
        self.limit = limit


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: bytes
    stderr: bytes


class _Collect(asyncio.SubprocessProtocol):
    """Gathers a program's output; ``exited`` resolves when the program itself ends (not its pipes)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int | None) -> None:
        self.output = {1: bytearray(), 2: bytearray()}
        self.limit = limit
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.overflowed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if self.overflowed.done():
            return
        kept = self.output[fd]
        kept += data.encode() if isinstance(data, str) else data
        if self.limit is None or len(kept) <= self.limit:
            return
        if fd == 1:  # stdout is the result: past the cap it is dropped, and the caller kills the program
            kept.clear()
            self.overflowed.set_result(None)
        else:  # stderr only explains a failure: its end is enough
            del kept[: len(kept) - _STDERR_TAIL]

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


_DRAIN_S = 1.0  # after the program exits, the output still in its pipes is read within this
_STDERR_TAIL = 64 * 1024  # of a program's stderr past the output cap, the last bytes are kept


async def _start(
    argv: Sequence[str], cwd: str | None, limit: int | None
) -> tuple[asyncio.SubprocessTransport, _Collect]:
    """``loop.subprocess_exec`` in a new session, shielded from cancellation: cancelled while it connects
    the pipes, asyncio would wait for them to close, forever if a child holds them. Cancelled, it lets
    the start finish, kills the group and re-raises."""
    loop = asyncio.get_running_loop()
    starting = asyncio.ensure_future(
        loop.subprocess_exec(
            lambda: _Collect(loop, limit),
            *argv,
            cwd=cwd,
            env=environ(),  # the run's environment (.env, the config's env:), not only the process's
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    )
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await _end(*await starting)
        raise


async def _end(transport: asyncio.SubprocessTransport, protocol: _Collect) -> None:
    """Kill the program's group and wait (briefly) for the loop to hear of its exit before closing the
    transport: closed first, asyncio's watcher thread would report the exit to a loop that may be closed
    by then, and a stopped run would print its warnings."""
    kill_group(transport.get_pid())
    if not protocol.exited.done():
        await asyncio.wait([protocol.exited], timeout=_DRAIN_S)
    transport.close()


async def run_program(
    argv: Sequence[str], *, cwd: str | None, timeout_s: float, max_output_bytes: int | None = None
) -> Finished:
    """Run ``argv`` (no shell, stdin empty) in its own process group, at most ``timeout_s`` in all.

    When the program exits, what it left running in its group is killed, so a child that still holds
    stdout (``sleep 1000 &``) cannot hold the call open. On timeout (TimedOut), cancellation or evalh's
    exit the whole group is killed. OSError when the program cannot start. With ``max_output_bytes``,
    a program writing more to stdout is killed as soon as it does (OutputTooLarge): nothing past the
    cap is kept."""
    transport, protocol = await _start(argv, cwd, max_output_bytes)
    pid = transport.get_pid()
    remember_group(pid)
    try:
        try:
            async with asyncio.timeout(timeout_s):
                # asyncio.wait leaves the futures as they are when cancelled: _end still waits on exited
                await asyncio.wait(
                    [protocol.exited, protocol.overflowed], return_when=asyncio.FIRST_COMPLETED
                )
        except TimeoutError:
            raise TimedOut(timeout_s) from None
        kill_group(pid)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_DRAIN_S):
                await protocol.closed
        if protocol.overflowed.done():  # while it ran, or in what its pipes held when it exited
            raise OutputTooLarge(max_output_bytes or 0)
        returncode = transport.get_returncode()
        return Finished(
            returncode if returncode is not None else -1, bytes(protocol.output[1]), bytes(protocol.output[2])
        )
    finally:
        await _end(transport, protocol)
