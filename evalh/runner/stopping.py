"""How a run stops early: a signal cancels the run's task at once, and the rows finished so far stand.

:func:`run_until_stopped` runs the run's coroutine in its own event loop with a handler for each stop
signal (Ctrl-C's SIGINT always; the CLI adds SIGTERM and SIGHUP, which CI cancellation, ``timeout``
and ``docker stop`` send). The first signal cancels every task: in-flight provider calls and grading
are abandoned, not awaited, so the run ends within moments whatever it was waiting for. Work already
handed to a thread cannot be cancelled; the loop does not wait for it (the CLI exits without joining
such threads, see ``evalh.cli.app.main``). Further signals while the run is stopping change nothing; once
the loop is closed the handlers are gone, so a signal during report writing has its usual effect
(reports are written atomically, so none is left half-written).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["CLI_STOP_SIGNALS", "DEFAULT_STOP_SIGNALS", "run_until_stopped"]

# How long tasks get to unwind once cancelled (kill a command, close a connection) before being cancelled
# again: their clean-up is quick, and a stop must not wait on anything slow.
UNWIND_S = 1.0
DEFAULT_STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT,)
# SIGHUP does not exist on Windows
CLI_STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    sig for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if sig is not None
)


_Handlers = dict[signal.Signals, Any]


def _install(loop: asyncio.AbstractEventLoop, signals: Sequence[signal.Signals], stop: Any) -> _Handlers:
    """Handlers for ``signals`` where the process lets us set them; returns the handlers they replace."""
    if threading.current_thread() is not threading.main_thread():
        return {}  # only the main thread may handle signals; Ctrl-C then raises KeyboardInterrupt there
    replaced: _Handlers = {}
    for sig in signals:
        previous = signal.getsignal(sig)
        if sig == signal.SIGINT and previous is not signal.default_int_handler:
            continue  # the embedding program handles (or ignores) Ctrl-C itself
        try:
            loop.add_signal_handler(sig, stop, sig)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, or no such signal here
            continue
        replaced[sig] = previous
    return replaced


def _restore(loop: asyncio.AbstractEventLoop, replaced: _Handlers) -> None:
    for sig, previous in replaced.items():
        loop.remove_signal_handler(sig)
        signal.signal(sig, previous if previous is not None else signal.SIG_DFL)


def _cancel_remaining(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is still pending and let it unwind (``finally`` blocks close clients and caches, an
    ``exec:`` command is killed and reaped). A task already cancelled is given :data:`UNWIND_S` to
    finish unwinding before it is cancelled again."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        if not task.cancelling():
            task.cancel()
    if pending:
        _done, stuck = loop.run_until_complete(asyncio.wait(pending, timeout=UNWIND_S))
        for task in stuck:
            task.cancel()
        if stuck:
            loop.run_until_complete(asyncio.gather(*stuck, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())


def run_until_stopped(
    main: Coroutine[Any, Any, None],
    signals: Sequence[signal.Signals] = DEFAULT_STOP_SIGNALS,
    on_stop: Callable[[], None] | None = None,
) -> str | None:
    """Run ``main`` to its end and return None, or return the name of the signal (``"SIGTERM"``) that
    stopped it early. Exceptions from ``main`` propagate.

    ``on_stop`` is called once, when the first signal arrives and before anything is cancelled: what
    finishes after it was abandoned by the stop (a cancelled call that unwound into an error), not done."""
    loop = asyncio.new_event_loop()
    executor = ThreadPoolExecutor(thread_name_prefix="evalh-run")
    loop.set_default_executor(executor)
    asyncio.set_event_loop(loop)  # as asyncio.run does, for code that asks the policy for the loop
    task = loop.create_task(main)
    stopped: list[str] = []

    def stop(sig: signal.Signals) -> None:
        if not stopped:
            stopped.append(sig.name)
            if on_stop is not None:
                on_stop()
            task.cancel()

    replaced = _install(loop, signals, stop)
    try:
        try:
            loop.run_until_complete(task)
        except KeyboardInterrupt:  # Ctrl-C where no handler could be installed
            stop(signal.SIGINT)
        except asyncio.CancelledError:
            if not stopped:
                raise
        finally:
            _cancel_remaining(loop)  # signals meanwhile still only stop (again: nothing more to do)
    finally:
        _restore(loop, replaced)  # a signal from here on (report writing) has its usual effect
        # a thread stuck in user code must not hold up the stop; finished work is already collected
        executor.shutdown(wait=not stopped, cancel_futures=True)
        asyncio.set_event_loop(None)
        loop.close()
    return stopped[0] if stopped else None
