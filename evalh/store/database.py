"""Where the run store lives and how it is opened: WAL mode for concurrent runs, migrations, and a
damaged file moved aside.

Location: ``$EVALH_HOME/runs.sqlite3``, ``$EVALH_HOME`` defaulting to ``~/.evalh``. A damaged file
(not SQLite, truncated, "malformed") is renamed ``runs.sqlite3.corrupt-<timestamp>`` with one warning
and a new store is started; nothing about the store is ever fatal to ``evalh run``.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

from evalh.common.environment import getenv
from evalh.common.sqlite_files import DamagedDatabase, check_header, move_aside
from evalh.errors import StoreError
from evalh.store.schema import NewerStore, migrate

__all__ = ["connect", "evalh_home", "store_path", "warn"]

STORE_NAME = "runs.sqlite3"
BUSY_TIMEOUT_S = 60.0  # a concurrent run holds the write lock for one batch at a time

log = logging.getLogger("evalh.store")


def evalh_home() -> Path:
    """``$EVALH_HOME``, else ``~/.evalh``."""
    configured = getenv("EVALH_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".evalh"


def store_path() -> Path:
    return evalh_home() / STORE_NAME


def warn(message: str) -> None:
    log.warning(f"evalh: warning: {message}")


def _open(path: Path) -> sqlite3.Connection:
    check_header(path)
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    try:
        _use_wal(db)
        db.execute("PRAGMA synchronous=NORMAL")
        migrate(db)
    except BaseException:
        db.close()
        raise
    return db


def _use_wal(db: sqlite3.Connection) -> None:
    """Put the store in WAL mode (kept in the file, so set once). Switching reads the file and then
    needs it exclusively, and SQLite answers a concurrent opener BUSY at once rather than call the
    busy handler (waiting could deadlock two switchers): so wait here, re-reading the mode, which the
    other opener has usually just set."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.005
    while db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return  # WAL, or a mode SQLite keeps instead (no shared memory): the store works either way
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


def _cannot(path: Path, reason: str) -> StoreError:
    return StoreError(
        f"cannot use the run store: {reason}",
        where=str(path),
        hint="Set EVALH_HOME to a writable directory (`evalh run --no-write` runs without recording)",
    )


def connect(path: Path | None = None) -> sqlite3.Connection:
    """The open store at ``path`` (default :func:`store_path`), created and migrated as needed.

    A damaged file is moved aside with a warning and a new store started. StoreError when the store
    cannot be used at all (its directory is not writable, a newer evalh wrote it, it is locked)."""
    path = path or store_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _cannot(path, f"cannot create its directory ({error.strerror or error})") from error
    for attempt in range(2):
        try:
            return _open(path)
        except NewerStore as error:
            raise StoreError(
                f"the run store was written by a newer evalh ({error})",
                where=str(path),
                hint="Upgrade evalh, or set EVALH_HOME to another directory",
            ) from error
        except (DamagedDatabase, sqlite3.DatabaseError) as error:
            if isinstance(error, sqlite3.OperationalError) or attempt:
                raise _cannot(path, str(error)) from error
            _set_aside(path, str(error))
        except OSError as error:  # a directory where the file goes, a file that cannot be read
            raise _cannot(path, f"it cannot be read ({error.strerror or error})") from error
    raise AssertionError("unreachable")  # pragma: no cover


def _set_aside(path: Path, reason: str) -> None:
    try:
        moved = move_aside(path)
    except OSError as error:
        raise _cannot(path, f"it is damaged ({reason}) and cannot be moved aside: {error}") from error
    warn(
        f"the run store {path} is damaged ({reason}); evalh moved it to {moved} and starts a new, empty "
        "store. Delete the moved file once you no longer need its runs."
    )
