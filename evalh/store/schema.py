"""The run store's tables and their migrations.

Version 1 holds runs (their JSON report without rows, as ``header``) and rows (one promptfoo
``EvaluateResult`` each, as ``body``). Version 2 adds each row's identity (``test_key``: ``row_key``, see
:mod:`evalh.store.identity`), backfilled from the stored bodies, so one row can be followed across
runs. Version 3 moves each run's config out of its header into a column of its own (``config``),
so finishing a run rewrites only the small header, never the config (every test: tens of MB at
50,000 tests). Version 4 makes ``rows`` an ordinary rowid table: its bodies (a few KB each) overflow
a ``WITHOUT ROWID`` table's pages, which made each insert cost about twice as much CPU. Version 5
moves each config out of the ``runs`` row into a table of its own (``configs``, one UTF-8 ``BLOB``
per run, keyed by the run's ``seq``): SQLite rewrites a whole record on UPDATE, so finishing a run
still read and rewrote its config (70 MB of memory and 0.7 s at 50,000 tests), and a config written
in place (``zeroblob`` then ``blobopen``) is never held whole. ``runs.config`` stays, NULL but for a
run an older evalh started before a newer one migrated the store (readers fall back to it): dropping
a column needs SQLite 3.35, newer than some systems' Python 3.11 links. Version 6 adds ``ratings``:
a person's verdict on a row (:mod:`evalh.store.ratings`), one per row, kept beside the row's body, which
stays the graded result (clearing a rating restores it exactly). A store is
migrated when opened, inside one ``BEGIN IMMEDIATE`` transaction, so two processes opening an old
store at once migrate it once. A store written by a newer evalh is refused, never
downgraded.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Callable

from evalh.store.identity import row_key

__all__ = ["SCHEMA_VERSION", "NewerStore", "migrate", "stored_version"]

SCHEMA_VERSION = 6

_V1 = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    description TEXT,
    config_path TEXT,
    source TEXT NOT NULL,
    state TEXT NOT NULL,
    row_count INTEGER NOT NULL DEFAULT 0,
    passed INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    duration_ms REAL,
    header TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rows (
    run_seq INTEGER NOT NULL,
    position INTEGER NOT NULL,
    status TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_seq, position)
) WITHOUT ROWID;
"""


def _to_v1(db: sqlite3.Connection) -> None:
    for statement in _V1.split(";"):  # not executescript: it would commit the migration's transaction
        if statement.strip():
            db.execute(statement)


def _to_v2(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE rows ADD COLUMN test_key TEXT")
    found = db.execute("SELECT run_seq, position, body FROM rows").fetchall()
    keys = [(row_key(json.loads(body)), seq, position) for seq, position, body in found]
    db.executemany("UPDATE rows SET test_key = ? WHERE run_seq = ? AND position = ?", keys)
    db.execute("CREATE INDEX IF NOT EXISTS rows_by_test ON rows (test_key)")


def _to_v3(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE runs ADD COLUMN config TEXT")
    # In SQL, one run at a time: a stored header may hold a config of tens of MB. ``json_quote`` of
    # the extracted value keeps it JSON text whatever its type (an object passes through unchanged).
    db.execute(
        "UPDATE runs SET config = json_quote(json_extract(header, '$.config')), "
        "header = json_remove(header, '$.config') WHERE json_type(header, '$.config') IS NOT NULL"
    )


_V4_ROWS = """
CREATE TABLE rows_v4 (
    run_seq INTEGER NOT NULL,
    position INTEGER NOT NULL,
    status TEXT NOT NULL,
    body TEXT NOT NULL,
    test_key TEXT,
    PRIMARY KEY (run_seq, position)
)
"""


def _to_v4(db: sqlite3.Connection) -> None:
    db.execute(_V4_ROWS)
    db.execute(
        "INSERT INTO rows_v4 (run_seq, position, status, body, test_key) "
        "SELECT run_seq, position, status, body, test_key FROM rows"
    )
    db.execute("DROP TABLE rows")  # and its index rows_by_test
    db.execute("ALTER TABLE rows_v4 RENAME TO rows")
    db.execute("CREATE INDEX rows_by_test ON rows (test_key)")


_V5_CONFIGS = "CREATE TABLE configs (run_seq INTEGER PRIMARY KEY, config BLOB NOT NULL)"


def _to_v5(db: sqlite3.Connection) -> None:
    db.execute(_V5_CONFIGS)
    # As UTF-8 bytes, as a config written in place is; readers take it back with CAST(config AS TEXT).
    # One run at a time: the pages each copy frees are reused by the next, so the file does not grow by
    # every stored config at once (a store with gigabytes of history needed as much free disk again).
    seqs = [seq for (seq,) in db.execute("SELECT seq FROM runs WHERE config IS NOT NULL")]
    for seq in seqs:
        db.execute(
            "INSERT INTO configs (run_seq, config) SELECT seq, CAST(config AS BLOB) FROM runs WHERE seq = ?",
            (seq,),
        )
        db.execute("UPDATE runs SET config = NULL WHERE seq = ?", (seq,))


_V6_RATINGS = """
CREATE TABLE ratings (
    run_seq INTEGER NOT NULL,
    position INTEGER NOT NULL,
    row_id TEXT NOT NULL,
    pass INTEGER NOT NULL,
    score REAL NOT NULL,
    comment TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    rated_at TEXT NOT NULL,
    PRIMARY KEY (run_seq, position)
)
"""


def _to_v6(db: sqlite3.Connection) -> None:
    db.execute(_V6_RATINGS)


# Each step takes the store from the version before it to its own; never edit a released step.
_STEPS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _to_v1,
    2: _to_v2,
    3: _to_v3,
    4: _to_v4,
    5: _to_v5,
    6: _to_v6,
}


class NewerStore(Exception):
    """The store was written by a newer evalh (its schema version is above ours)."""


def stored_version(db: sqlite3.Connection) -> int:
    """The store's schema version; 0 for a new, empty database."""
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'")
    if exists.fetchone() is None:
        return 0
    (version,) = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
    return int(version)


def migrate(db: sqlite3.Connection) -> None:
    """Bring the store to :data:`SCHEMA_VERSION` (``db`` in autocommit mode). NewerStore when it is
    already past it."""
    if stored_version(db) == SCHEMA_VERSION:
        return  # the common case, without taking the write lock
    db.execute("BEGIN IMMEDIATE")
    try:
        version = stored_version(db)  # again, under the lock: another process may have migrated
        if version > SCHEMA_VERSION:
            raise NewerStore(f"schema version {version}; this evalh knows up to {SCHEMA_VERSION}")
        for target in range(version + 1, SCHEMA_VERSION + 1):
            _STEPS[target](db)
            now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            db.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (target, now))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
