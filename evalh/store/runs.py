"""The run store's queries: list, resolve a reference, load a run as its JSON report, delete, prune,
import a report file, and start recording a run (:class:`~evalh.store.recorder.RunRecorder`).

A run reference is a run id (or a prefix naming exactly one run), ``latest`` (the newest run) or
``latest~N`` (the run N before it). A stored run loads as the same dict a ``-o results.json`` report
holds, so diff, import and the viewer treat both alike.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from evalh.common.sqlite_files import move_aside
from evalh.errors import ConfigError, StoreError
from evalh.model.verdict import pass_rate
from evalh.reports.codec import rated_row
from evalh.reports.codec_ratings import rated_results
from evalh.reports.streamed import EncodedConfig
from evalh.store import ratings
from evalh.store.database import connect, store_path
from evalh.store.imports import import_report
from evalh.store.liveness import RunLock, settle_abandoned
from evalh.store.ratings import RATED_COUNTS, Rating
from evalh.store.recorder import RunRecorder, json_text, write_config

__all__ = ["RunStore", "RunSummary", "latest_offset", "open_store"]

_LATEST = re.compile(r"latest(?:~([0-9]+))?")
_BEYOND_ANY_STORE = 2**63 - 1  # SQLite's largest integer: latest~N beyond it names no run, as N does
_COLUMNS = (
    "seq, id, created_at, description, config_path, source, state, row_count, "
    "runs.passed + COALESCE(rated.passed, 0), runs.failed + COALESCE(rated.failed, 0), "
    "runs.errors + COALESCE(rated.errors, 0), duration_ms"
)
# a reference's hint where a JSON report file is not taken (a rating is stored with a run)
_STORED_ONLY = "latest~N (to rate a JSON report file, import it first: `evalh runs import FILE`)"
_RUNS = f"runs {RATED_COUNTS}"  # each run with its counts as its ratings make them
T = TypeVar("T")
_POSITIONS_PER_QUERY = 500  # bound parameters per query (SQLite allows 999 before 3.32)


@dataclass(frozen=True)
class RunSummary:
    """One stored run, without its rows. ``state``: ``running`` (still recording), ``complete``,
    ``interrupted`` (stopped by a signal) or ``incomplete`` (its process ended without finishing it:
    killed, crashed; see :mod:`evalh.store.liveness`); ``source``: ``run`` or ``import``."""

    seq: int
    id: str
    created_at: str
    description: str | None
    config_path: str | None
    source: str
    state: str
    rows: int
    passed: int
    failed: int
    errors: int
    duration_ms: float | None

    @property
    def pass_rate(self) -> float:
        """Percentage of rows that passed (errors count against it); 100.0 without rows."""
        return pass_rate(self.passed, self.rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "createdAt": self.created_at,
            "description": self.description,
            "configPath": self.config_path,
            "source": self.source,
            "state": self.state,
            "rows": self.rows,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "passRate": self.pass_rate,
            "durationMs": self.duration_ms,
        }


def latest_offset(ref: str) -> int | None:
    """N for ``latest~N`` (0 for ``latest``), None for any other reference. An N no store can reach
    (SQLite's OFFSET is a 64-bit integer; Python refuses to read 4,300 digits) is kept just within it, so
    it names no run rather than overflowing."""
    latest = _LATEST.fullmatch(ref.strip())
    if latest is None:
        return None
    digits = latest.group(1) or "0"
    return int(digits) if len(digits) < len(str(_BEYOND_ANY_STORE)) else _BEYOND_ANY_STORE


def open_store(path: Path | None = None) -> RunStore:
    """The run store (default ``$EVALH_HOME/runs.sqlite3``), created if missing. StoreError when it
    cannot be used; a damaged file is moved aside with a warning first."""
    return RunStore(path)


class RunStore:
    """An open run store. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or store_path()
        self._db: sqlite3.Connection | None = connect(self.path)
        self._settle_abandoned()

    def _settle_abandoned(self) -> None:
        """Runs whose recording process died (SIGKILL, a crash) become ``incomplete`` now. A store busy
        with another writer is settled at a later opening; a damaged one was moved aside (StoreError)."""
        try:
            self._query(lambda db: settle_abandoned(db, self.path, self.transaction))
        except StoreError:
            if self._db is None:  # damaged, and moved aside: the store cannot be used
                raise

    def __enter__(self) -> RunStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            db.close()

    def _query(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """``operation`` on the open store; damage found now moves the file aside (StoreError)."""
        if self._db is None:
            raise StoreError("the run store is closed", where=str(self.path))
        try:
            return operation(self._db)
        except sqlite3.IntegrityError:
            raise  # a broken constraint (a run id taken): the caller's to handle, not damage
        except sqlite3.OperationalError as error:
            raise StoreError(f"cannot use the run store: {error}", where=str(self.path)) from error
        except sqlite3.DatabaseError as error:
            self.close()
            moved = move_aside(self.path)
            raise StoreError(
                f"the run store is damaged ({error}); evalh moved it to {moved}",
                where=str(self.path),
                hint="Run again: a new, empty store is started",
            ) from error

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: concurrent writers wait for each other)."""
        assert self._db is not None, "the run store is closed"
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def list_runs(self, limit: int | None = None) -> list[RunSummary]:
        """The stored runs, newest first (at most ``limit``)."""
        sql = f"SELECT {_COLUMNS} FROM {_RUNS} ORDER BY seq DESC LIMIT ?"
        found = self._query(lambda db: db.execute(sql, (-1 if limit is None else limit,)).fetchall())
        return [RunSummary(*row) for row in found]

    def resolve(self, ref: str, *, report_files: bool = True) -> RunSummary:
        """The run ``ref`` names (see the module docstring); ConfigError (exit 2) when none or several,
        its hint offering a JSON report file only when the command takes one (``report_files``)."""
        ref = ref.strip()
        back = latest_offset(ref)
        if back is not None:
            sql = f"SELECT {_COLUMNS} FROM {_RUNS} ORDER BY seq DESC LIMIT 1 OFFSET ?"
            found = self._query(lambda db: db.execute(sql, (back,)).fetchall())
        else:
            sql = f"SELECT {_COLUMNS} FROM {_RUNS} WHERE id = ? OR substr(id, 1, length(?)) = ? ORDER BY seq"
            found = self._query(lambda db: db.execute(sql, (ref, ref, ref)).fetchall())
            exact = [row for row in found if row[1] == ref]
            found = exact or found
        if len(found) == 1:
            return RunSummary(*found[0])
        if not found:
            count = self._query(lambda db: db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
            raise ConfigError(
                f"no run {ref!r} in the run store {self.path} ({count} run(s) stored)",
                hint="`evalh runs list` shows the stored runs; a reference is a run id, latest or "
                + ("latest~N, or a JSON report file" if report_files else _STORED_ONLY),
            )
        ids = ", ".join(row[1] for row in found[:5])
        raise ConfigError(f"{ref!r} names {len(found)} runs ({ids})", hint="Give more of the run id")

    def latest_of(
        self, config_path: str | None, description: str | None, back: int = 0, *, complete: bool = True
    ) -> RunSummary | None:
        """The newest run (``back`` runs before it) recorded from this config path with this description,
        or None (``--baseline latest`` compares a run with the runs of its own config). ``complete``:
        only runs that finished (an interrupted or killed run lacks rows, which would compare as new)."""
        finished = "AND state = 'complete' " if complete else ""
        sql = (
            f"SELECT {_COLUMNS} FROM {_RUNS} WHERE config_path IS ? AND description IS ? {finished}"
            "ORDER BY seq DESC LIMIT 1 OFFSET ?"
        )
        found = self._query(lambda db: db.execute(sql, (config_path, description, back)).fetchall())
        return RunSummary(*found[0]) if found else None

    def iter_rows(self, ref: str) -> Iterator[dict[str, Any]]:
        """The rows of a run, in the order they finished, one at a time."""
        return self._rows(self.resolve(ref).seq)

    def _rows(self, seq: int) -> Iterator[dict[str, Any]]:
        rated = self._ratings(seq)
        sql = "SELECT position, body FROM rows WHERE run_seq = ? ORDER BY position"
        cursor = self._query(lambda db: db.execute(sql, (seq,)))
        for position, body in cursor:
            yield _rated(json.loads(body), rated.get(position))

    def _ratings(self, seq: int) -> dict[int, Rating]:
        return self._query(lambda db: ratings.ratings_by_position(db, seq))

    def _rated_head(self, document: dict[str, Any], seq: int) -> dict[str, Any]:
        """The stored header with its figures as the run's ratings make them."""
        rated = self._ratings(seq)
        if rated and isinstance(document.get("results"), dict):
            changes = self._query(lambda db: list(ratings.rated_changes(db, seq, rated)))
            document["results"] = rated_results(document["results"], changes)
        return document

    def rate(
        self,
        ref: str,
        row_id: str,
        *,
        passed: bool,
        score: float | None = None,
        comment: str = "",
        reviewer: str | None = None,
    ) -> Rating:
        """Rate the row ``row_id`` (its ``id`` in the JSON report) of the run ``ref``: its verdict is
        ``passed`` from now on, with ``score`` (default 1 or 0) and ``comment``; by ``reviewer`` (default
        :func:`~evalh.store.ratings.reviewer_name`). Replaces the row's rating; RatingError (exit 2) for
        an unknown row, a run still recording, a score outside 0-1 or a comment over 4,000 characters."""
        run = self.resolve(ref)
        rating = Rating.of(row_id, passed=passed, score=score, comment=comment, reviewer=reviewer)
        return self._query(lambda db: ratings.save(self.transaction, (run.seq, run.id, run.state), rating))

    def clear_rating(self, ref: str, row_id: str) -> bool:
        """Clear the row's rating (its graded verdict is its own again); False when it had none."""
        run = self.resolve(ref)
        return self._query(lambda db: ratings.clear(self.transaction, (run.seq, run.id, run.state), row_id))

    def ratings(self, ref: str) -> dict[str, Rating]:
        """The run's ratings by row id."""
        return {rating.row_id: rating for rating in self._ratings(self.resolve(ref).seq).values()}

    def load_run(self, ref: str, *, lazy: bool = False) -> dict[str, Any]:
        """The run as its JSON report (``evalId``, ``results.results`` and the rest). ``lazy``: its config
        as :class:`~evalh.store.export.JSONText` and its rows as :class:`~evalh.store.export.JSONItems`
        (read from the store as they are written out, see :func:`~evalh.store.export.indented_report`)."""
        summary = self.resolve(ref)
        # runs.config: a run an older evalh started on a store that a newer one migrated meanwhile
        sql = (
            "SELECT header, COALESCE(CAST(configs.config AS TEXT), runs.config) FROM runs "
            "LEFT JOIN configs ON configs.run_seq = runs.seq WHERE seq = ?"
        )
        header, config = self._query(lambda db: db.execute(sql, (summary.seq,)).fetchone())
        from evalh.store.export import JSONItems, JSONText  # reading a run back: a recording run needs none

        document = self._rated_head(json.loads(header), summary.seq)
        if config is not None:
            document = _with_config(document, JSONText(config) if lazy else json.loads(config))
        rows = self._rows(summary.seq)
        return _with_rows(document, summary, JSONItems(rows) if lazy else list(rows))

    def load_head(self, ref: str) -> dict[str, Any]:
        """The run's JSON report without its rows and its config (its figures, for a summary)."""
        summary = self.resolve(ref)
        sql = "SELECT header FROM runs WHERE seq = ?"
        (header,) = self._query(lambda db: db.execute(sql, (summary.seq,)).fetchone())
        return _with_rows(self._rated_head(json.loads(header), summary.seq), summary, [])

    def row_fields(self, ref: str, *paths: str) -> Iterator[tuple[int, list[Any]]]:
        """Each row's position and its values at ``paths`` (two or more SQLite JSON paths, ``$.testIdx``),
        read by SQLite: no row is decoded whole in Python."""
        if len(paths) < 2:
            raise ValueError("row_fields takes two or more paths")  # one path answers a value, not a list
        seq = self.resolve(ref).seq
        marks = ", ".join("?" for _ in paths)
        sql = f"SELECT position, json_extract(body, {marks}) FROM rows WHERE run_seq = ? ORDER BY position"
        rated = self._ratings(seq)
        rated_rows = dict(zip(sorted(rated), self._rows_at(seq, rated, rated), strict=True))
        cursor = self._query(lambda db: db.execute(sql, (*paths, seq)))
        for position, values in cursor:
            row = rated_rows.get(position)
            yield position, json.loads(values) if row is None else [_json_at(row, path) for path in paths]

    def rows_at(self, ref: str, positions: Iterable[int]) -> Iterator[dict[str, Any]]:
        """The rows of the run at ``positions`` (see :meth:`row_fields`), in stored order."""
        seq = self.resolve(ref).seq
        return self._rows_at(seq, positions, self._ratings(seq))

    def _rows_at(
        self, seq: int, positions: Iterable[int], rated: Mapping[int, Rating]
    ) -> Iterator[dict[str, Any]]:
        wanted = sorted(set(positions))
        for start in range(0, len(wanted), _POSITIONS_PER_QUERY):
            chunk = wanted[start : start + _POSITIONS_PER_QUERY]
            marks = ", ".join("?" for _ in chunk)
            sql = f"SELECT position, body FROM rows WHERE run_seq = ? AND position IN ({marks}) ORDER BY 1"
            for position, body in self._query(functools.partial(_fetch_all, sql, (seq, *chunk))):
                yield _rated(json.loads(body), rated.get(position))

    def has_run(self, run_id: str) -> bool:
        """Whether a run with exactly this id is stored."""
        sql = "SELECT 1 FROM runs WHERE id = ?"
        return self._query(lambda db: db.execute(sql, (run_id,)).fetchone()) is not None

    def delete(self, ref: str) -> RunSummary:
        summary = self.resolve(ref)
        self._query(lambda db: self._delete_seqs(db, [summary.seq]))
        return summary

    def prune(self, keep: int) -> list[RunSummary]:
        """Delete every run but the newest ``keep``; returns the deleted runs."""
        doomed = self.list_runs()[max(keep, 0) :]
        if doomed:
            self._query(lambda db: self._delete_seqs(db, [run.seq for run in doomed]))
        return doomed

    def _delete_seqs(self, db: sqlite3.Connection, seqs: list[int]) -> None:
        with self.transaction():
            db.executemany("DELETE FROM rows WHERE run_seq = ?", [(seq,) for seq in seqs])
            db.executemany("DELETE FROM configs WHERE run_seq = ?", [(seq,) for seq in seqs])
            db.executemany("DELETE FROM ratings WHERE run_seq = ?", [(seq,) for seq in seqs])
            db.executemany("DELETE FROM runs WHERE seq = ?", [(seq,) for seq in seqs])

    def start(
        self,
        run_id: str,
        header: Mapping[str, Any],
        *,
        config: EncodedConfig | None,
        config_path: str | None,
        description: str | None,
        source: str = "run",
    ) -> RunRecorder:
        """Record a new run: its row is written now (state ``running``); rows follow through the
        recorder as they finish, and :meth:`RunRecorder.finish` completes it. ``config`` (the
        redacted config's JSON text, see ``ConfigEcho``; None: :meth:`RunRecorder.finish` stores it)
        goes into a row of its own (:func:`~evalh.store.recorder.write_config`)."""
        created = str(header.get("results", {}).get("timestamp") or "")
        sql = (
            "INSERT INTO runs (id, created_at, description, config_path, source, state, header) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)"
        )

        def insert(db: sqlite3.Connection) -> int:
            values = (run_id, created, description, config_path, source, "running", json_text(header))
            with self.transaction():
                seq = int(db.execute(sql, values).lastrowid or 0)
                if config is not None:
                    write_config(db, seq, config, where=str(self.path))
            return seq

        seq = self._query(insert)
        return RunRecorder(self, run_id, seq, RunLock.hold(self.path, seq, run_id))

    def import_report(self, document: Mapping[str, Any], *, source: str) -> RunSummary:
        """Store a JSON report (an evalh or promptfoo ``-o results.json``) as a run (see
        :func:`evalh.store.imports.import_report`)."""
        return import_report(self, document, source=source)

    def save_ratings(self, run: RunSummary, rated: Iterable[tuple[int, Rating]]) -> None:
        """Store ``rated`` (each row's position and rating) for ``run``, as they are (``runs import``)."""
        self._query(lambda db: ratings.save_at(self.transaction, run.seq, rated))


def _rated(row: dict[str, Any], rating: Rating | None) -> dict[str, Any]:
    return row if rating is None else dict(rated_row(row, rating.to_json()))


def _json_at(value: Any, path: str) -> Any:
    """The value at a SQLite JSON path of object keys (``$.a.b``) in a decoded row, as json_extract
    gives it (None when absent)."""
    for key in path.removeprefix("$.").split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _fetch_all(sql: str, values: tuple[Any, ...], db: sqlite3.Connection) -> list[Any]:
    return db.execute(sql, values).fetchall()


def _with_rows(document: dict[str, Any], summary: RunSummary, rows: Any) -> dict[str, Any]:
    """The stored report with ``rows`` and the run's state in the store."""
    results = document.setdefault("results", {})
    results["results"] = rows
    results.setdefault("evalh", {})["store"] = {"state": summary.state, "source": summary.source}
    return document


def _with_config(header: dict[str, Any], config: Any) -> dict[str, Any]:
    """The stored header with the run's config (its own table since schema version 5) put back
    after ``results``, where a JSON report has it."""
    document: dict[str, Any] = {}
    for key, value in header.items():
        document[key] = value
        if key == "results":
            document["config"] = config
    if "config" not in document:  # a header without ``results`` (not written by evalh)
        document["config"] = config
    return document
