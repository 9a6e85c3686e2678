"""Which stored runs are still being recorded, and settling those whose process is gone.

A run's recording process holds an exclusive ``flock`` on a file of its own beside the store
(``runs.sqlite3.live/<seq>``, holding the run's id) from the run's start until it is finished. The
kernel drops the lock when that process ends, however it ends (SIGKILL, a crash, the OOM killer), and
does not care about pid reuse or clocks. So a run still ``running`` whose file is no longer locked was
abandoned: :func:`settle_abandoned`, called whenever the store is opened, marks it ``incomplete`` with
the counts of the rows it stored. A ``flock`` belongs to one open file, so a process that opens the file
again (another run in the same process) sees its own live run as held, as it should.

A run without a file (recorded by an older evalh, or where the file could not be made) is left as it
is: a missing file proves nothing. Without ``fcntl`` (Windows) no run is ever settled.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["INCOMPLETE", "RunLock", "live_dir", "settle_abandoned"]

INCOMPLETE = "incomplete"

Transaction = Callable[[], AbstractContextManager[sqlite3.Connection]]


def live_dir(store: Path) -> Path:
    """The folder of the live runs' lock files, beside the store."""
    return store.with_name(store.name + ".live")


def _locked(path: Path, *, create: bool) -> IO[str] | None:
    """``path`` opened and exclusively locked without waiting; None when another open file holds it,
    or when it cannot be opened (missing, without ``create``)."""
    if fcntl is None:
        return None
    try:
        file = open(path, "a+" if create else "r", encoding="utf-8")  # noqa: SIM115 - kept open: the lock
    except OSError:
        return None
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        file.close()
        return None
    return file


class RunLock:
    """The lock a recording process holds on its run for as long as it records it."""

    def __init__(self, path: Path, file: IO[str]) -> None:
        self.path = path
        self._file: IO[str] | None = file

    @classmethod
    def hold(cls, store: Path, seq: int, run_id: str) -> RunLock | None:
        """The lock of the run ``seq`` (``run_id`` written in its file), or None when it cannot be
        taken: the run is then recorded as before, only never settled if its process dies.

        The run's row is already stored as ``running`` when this is called, so another process opening
        the store may look for its file at any moment. The file is therefore made and locked under a
        name of its own and renamed into place: it appears already locked and holding the run's id. (Made
        at its place, a process opening the store between its creation and its lock could take the lock
        first, and the run would never be settled if killed.)"""
        folder = live_dir(store)
        with contextlib.suppress(OSError):
            folder.mkdir(exist_ok=True)
        path = folder / str(seq)
        making = folder / f".{seq}.{os.getpid()}"  # seq is the store's own: no other run makes it
        file = _locked(making, create=True)
        if file is None:
            return None
        try:
            file.truncate(0)
            file.write(run_id)
            file.flush()
            os.replace(making, path)
        except OSError:
            with contextlib.suppress(OSError):
                making.unlink()
            file.close()
            return None
        return cls(path, file)

    def release(self, *, finished: bool) -> None:
        """Stop holding the run. ``finished``: its final state is stored, so its file goes too;
        otherwise (recording gave up) the file stays and the run is settled as incomplete later."""
        if self._file is None:
            return
        file, self._file = self._file, None
        if finished:
            with contextlib.suppress(OSError):
                self.path.unlink()
        file.close()


def _abandoned(store: Path, runs: list[tuple[int, str]]) -> Iterator[tuple[int, IO[str]]]:
    """The runs among ``runs`` (seq, id) whose recording process is gone, each with its lock file,
    locked by us (closed by the caller)."""
    folder = live_dir(store)
    for seq, run_id in runs:
        file = _locked(folder / str(seq), create=False)
        if file is None:
            continue
        if file.read() != run_id:  # left by another store once at this path: not this run's
            file.close()
            continue
        yield seq, file


def settle_abandoned(db: sqlite3.Connection, store: Path, transaction: Transaction) -> None:
    """Mark ``incomplete`` every ``running`` run whose recording process is gone, with the counts of
    its stored rows (its figures until then: only what a finished run writes at its end is missing)."""
    if fcntl is None:
        return
    running = db.execute("SELECT seq, id FROM runs WHERE state = 'running'").fetchall()
    for seq, file in _abandoned(store, running) if running else ():
        try:
            with transaction() as tx:
                _settle(tx, seq)
            with contextlib.suppress(OSError):
                os.unlink(file.name)
        finally:
            file.close()


def _settle(db: sqlite3.Connection, seq: int) -> None:
    """Under the write lock: the run may have finished since it was found running."""
    (state,) = db.execute("SELECT state FROM runs WHERE seq = ?", (seq,)).fetchone() or ("",)
    if state != "running":
        return
    found = dict(db.execute("SELECT status, COUNT(*) FROM rows WHERE run_seq = ? GROUP BY status", (seq,)))
    counts = {status: int(found.get(status, 0)) for status in ("pass", "fail", "error")}
    stats = {"successes": counts["pass"], "failures": counts["fail"], "errors": counts["error"]}
    db.execute(
        "UPDATE runs SET state = ?, row_count = ?, passed = ?, failed = ?, errors = ?, "
        "header = json_set(header, '$.results.stats', json(?)) WHERE seq = ?",
        (
            INCOMPLETE,
            sum(counts.values()),
            counts["pass"],
            counts["fail"],
            counts["error"],
            json.dumps(stats),
            seq,
        ),
    )
