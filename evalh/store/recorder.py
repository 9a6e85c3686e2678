"""Recording one run into the store as its rows finish: rows are buffered and written
:data:`BATCH_ROWS` at a time, or :data:`FLUSH_AFTER_S` after the first of them finished when they come
slowly, one transaction per batch, so memory stays bounded, a concurrent run waits at most one batch for
the write lock, and a run whose process is killed loses at most its last second of rows. Each batch
updates the run's counts too, so a run still recording is listed with its progress. Every text stored
goes through :mod:`evalh.secrets` (registered secret values replaced; the config is redacted by the caller
with ``redact_config``).

Recording is never a reason for a run to fail: the first problem turns the recorder off with one
warning, and the run goes on.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalh.errors import StoreError
from evalh.reports.streamed import EncodedConfig, row_text
from evalh.store.database import warn
from evalh.store.identity import row_key, stored_status

if TYPE_CHECKING:
    from evalh.store.liveness import RunLock
    from evalh.store.runs import RunStore

__all__ = ["BATCH_ROWS", "FLUSH_AFTER_S", "RunRecorder", "json_text", "write_config"]

# Rows per transaction: each commit writes the WAL's frames and header again, so 5,000 rows in batches
# of 100 cost a fifth more CPU than in batches of 500; a batch of 500 rows of a few KB holds the write
# lock a few milliseconds. Slow rows are written by FLUSH_AFTER_S whatever the batch size.
BATCH_ROWS = 500
# the statements of every batch, one text each: sqlite3 keeps them prepared in its statement cache
_INSERT_ROWS = "INSERT INTO rows (run_seq, position, status, test_key, body) VALUES (?, ?, ?, ?, ?)"
_UPDATE_COUNTS = "UPDATE runs SET row_count = ?, passed = ?, failed = ?, errors = ? WHERE seq = ?"
# Rows wait at most this long for their batch (in the run's event loop): a SIGKILL loses at most them.
FLUSH_AFTER_S = 1.0


def json_text(value: Any) -> str:
    """``value`` as the JSON text the store keeps: lone surrogates escaped, secret values redacted."""
    return row_text(value)


def _json_path(key: str) -> str:
    """SQLite's JSON path of a top-level key (quoted: a key may hold any character)."""
    return "$." + json.dumps(key)


class RunRecorder:
    """Writes the rows of one run (made by :meth:`RunStore.start`)."""

    def __init__(self, store: RunStore, run_id: str, seq: int, lock: RunLock | None = None) -> None:
        self.run_id = run_id
        self._store = store
        self._seq = seq
        self._lock = lock  # held while recording: see evalh.store.liveness
        self._pending: list[tuple[int, int, str, str, str]] = []
        self._position = 0
        self._counts = {"pass": 0, "fail": 0, "error": 0}
        self._timer: asyncio.TimerHandle | None = None
        self.working = True

    def add(self, row: Mapping[str, Any], text: str | None = None) -> None:
        """One finished row (a promptfoo ``EvaluateResult`` dict); written with its batch. ``text``:
        the row's JSON text when the caller encoded it already (it must be :func:`json_text` of it)."""
        if not self.working:
            return
        status = stored_status(row)
        self._counts[status] += 1
        body = json_text(row) if text is None else text
        self._pending.append((self._seq, self._position, status, row_key(row), body))
        self._position += 1
        if len(self._pending) >= BATCH_ROWS:
            self._flush()
        elif self._timer is None:
            self._flush_soon()

    def _flush_soon(self) -> None:
        """Write the pending rows :data:`FLUSH_AFTER_S` from now, in the run's event loop (none: an
        import, which finishes at once)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(FLUSH_AFTER_S, self._flush)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, []
        if not pending or not self.working:
            return
        counts = (
            self._position,
            self._counts["pass"],
            self._counts["fail"],
            self._counts["error"],
            self._seq,
        )
        try:
            with self._store.transaction() as db:
                db.executemany(_INSERT_ROWS, pending)
                db.execute(_UPDATE_COUNTS, counts)
        except (sqlite3.Error, StoreError) as error:
            self._give_up(error)

    def finish(
        self, header: Mapping[str, Any], *, interrupted: bool, config: EncodedConfig | None = None
    ) -> None:
        """Write the last rows and the run's report around them (``header``: the JSON report without
        rows); the run's state becomes ``complete`` or ``interrupted``. Each key of ``header`` is set
        in the header stored at the start; ``config``, when the run was started without one, goes into
        its own table (:func:`write_config`), so only the small ``runs`` row is rewritten."""
        self._flush()
        if not self.working:
            return
        results = header.get("results") or {}
        stats = results.get("stats") or {}
        keys = [str(key) for key in header]
        paths = ", ".join("?, json(?)" for _ in keys)
        values = (
            *[value for key in keys for value in (_json_path(key), json_text(header[key]))],
            "interrupted" if interrupted else "complete",
            self._position,
            self._counts["pass"],
            self._counts["fail"],
            self._counts["error"],
            stats.get("durationMs"),
            self._seq,
        )
        sql = (
            f"UPDATE runs SET header = json_set(header, {paths}), state = ?, row_count = ?, passed = ?, "
            "failed = ?, errors = ?, duration_ms = ? WHERE seq = ?"
        )
        try:
            with self._store.transaction() as db:
                if config is not None:
                    write_config(db, self._seq, config, where=str(self._store.path))
                db.execute(sql, values)
        except (sqlite3.Error, StoreError) as error:
            self._give_up(error)
            return
        if self._lock is not None:
            self._lock.release(finished=True)

    def _give_up(self, error: Exception) -> None:
        self.working = False
        if self._lock is not None:  # the run stays "running" until the next opening settles it
            self._lock.release(finished=False)
        warn(
            f"cannot record the run {self.run_id} in the run store {self._store.path} ({error}); the run "
            "goes on and its reports are written, but the store holds it only in part"
        )


def write_config(db: sqlite3.Connection, seq: int, config: EncodedConfig, *, where: str) -> None:
    """The run's config into its row of ``configs``: room for it made (``zeroblob``), then its blocks
    written in place, never bound whole (sqlite3 keeps a bound value alive with its cached statement)
    and never in the ``runs`` row that finishing a run updates (SQLite rewrites a record whole).
    StoreError (the caller's transaction is rolled back) when they cannot be read or are not
    ``config.size`` bytes."""
    db.execute("INSERT INTO configs (run_seq, config) VALUES (?, zeroblob(?))", (seq, config.size))
    written = 0
    try:
        with db.blobopen("configs", "config", seq) as blob:
            for block in config.blocks():
                written += len(block)
                if written > config.size:
                    break  # the blob cannot grow: more bytes than announced are a bug
                blob.write(block)
    except OSError as error:
        raise StoreError(f"cannot read the run's config to store it: {error}", where=where) from error
    if written != config.size:
        raise StoreError(f"the run's config is not the {config.size} bytes announced", where=where)
