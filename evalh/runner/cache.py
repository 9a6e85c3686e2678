"""A persistent SQLite cache for embeddings, token vectors and completions.

Keys are sha256 of canonical JSON of non-secret identity fields (provider id, model, dimensions, ...)
plus sha256 of the text, so no API key or raw text is stored in a key. Location: ``$EVALH_CACHE_DIR``,
else the user cache dir (``$XDG_CACHE_HOME/evalh`` or ``~/.cache/evalh``). A disabled cache
(``--no-cache``) answers every lookup with a miss and stores nothing.

A cache is never a reason for a row to fail. A damaged file (not SQLite, truncated, "malformed") is
moved aside to ``<name>.corrupt-<timestamp>`` and a new one is started; a cache that cannot be used at all
(read-only, a file where its directory goes, locked) is left alone and the run goes on uncached. Either
way one warning paragraph on stderr names the file and what evalh did.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from evalh.errors import EvalhError
from evalh.sqlite_files import SIDE_FILES, DamagedDatabase, check_header, move_aside

__all__ = ["Cache", "cache_dir"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
"""
_CHUNK = 500  # SQLite's bound-parameter limit is 999 on old builds

log = logging.getLogger("evalh.cache")
T = TypeVar("T")


def cache_dir() -> Path:
    configured = os.environ.get("EVALH_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalh"


class Cache:
    """Namespaced key -> bytes store. Thread-safe; opened lazily on first use."""

    def __init__(self, path: Path | None, *, enabled: bool = True) -> None:
        self.path = path
        self.enabled = enabled and path is not None
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @classmethod
    def open(cls, enabled: bool = True) -> Cache:
        return cls(cache_dir() / "cache.sqlite3", enabled=enabled)

    @staticmethod
    def key(identity: Mapping[str, Any], text: str) -> str:
        """sha256 over the canonical JSON of the identity and the sha256 of the text."""
        text_hash = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        canonical = json.dumps({"identity": identity, "text": text_hash}, sort_keys=True, default=str)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def _use(self, operation: Callable[[sqlite3.Connection], T], default: T) -> T:
        """``operation`` on the open database, under the lock; ``default`` once the cache is off.

        A damaged database is moved aside and the operation retried on a new one; any other failure
        turns the cache off for the rest of the run. Each with one warning."""
        with self._lock:
            for _ in range(2):
                if not self.enabled:
                    return default
                try:
                    return operation(self._db())
                except DamagedDatabase as error:
                    self._quarantine(str(error))
                except sqlite3.DatabaseError as error:
                    if isinstance(error, sqlite3.OperationalError):
                        self._give_up(str(error))
                    else:  # SQLITE_CORRUPT / SQLITE_NOTADB
                        self._quarantine(str(error))
                except (OSError, sqlite3.Error) as error:
                    self._give_up(getattr(error, "strerror", None) or str(error))
            return default

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            assert self.path is not None
            folder = self.path.parent
            if folder.exists() and not folder.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, f"{folder} is a file, not a directory")
            folder.mkdir(parents=True, exist_ok=True)
            check_header(self.path)
            connection = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")
                connection.executescript(_SCHEMA)
            except BaseException:
                connection.close()
                raise
            self._connection = connection
        return self._connection

    def _disconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _quarantine(self, reason: str) -> None:
        """Move the damaged file (and its -wal/-shm) aside so the next use starts a new cache."""
        assert self.path is not None
        self._disconnect()
        try:
            moved = move_aside(self.path)
        except OSError as error:
            self._give_up(f"it is damaged ({reason}) and cannot be moved aside: {error.strerror or error}")
            return
        _warn(
            f"evalh: warning: the cache {self.path} is damaged ({reason}); evalh moved it to {moved} and "
            "starts a new, empty cache, so this run recomputes what the old one held. Delete the moved "
            "file once you no longer need it."
        )

    def _give_up(self, reason: str) -> None:
        self._disconnect()
        self.enabled = False
        _warn(
            f"evalh: warning: cannot use the cache {self.path} ({reason}); this run goes on without a "
            "cache. Set EVALH_CACHE_DIR to a writable directory, or pass --no-cache to silence this."
        )

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        if not self.enabled or not keys:
            return {}
        unique = list(dict.fromkeys(keys))

        def select(db: sqlite3.Connection) -> dict[str, bytes]:
            found: dict[str, bytes] = {}
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT key, value FROM entries WHERE namespace = ? AND key IN ({marks})",
                    (namespace, *chunk),
                )
                found.update({key: bytes(value) for key, value in rows})
            return found

        return self._use(select, {})

    def get(self, namespace: str, key: str) -> bytes | None:
        return self.get_many(namespace, [key]).get(key)

    def put_many(self, namespace: str, items: Mapping[str, bytes]) -> None:
        if not self.enabled or not items:
            return
        now = time.time()
        rows = [(namespace, key, value, now) for key, value in items.items()]

        def insert(db: sqlite3.Connection) -> None:
            db.executemany(
                "INSERT OR REPLACE INTO entries (namespace, key, value, created) VALUES (?, ?, ?, ?)", rows
            )
            db.commit()

        self._use(insert, None)

    def put(self, namespace: str, key: str, value: bytes) -> None:
        self.put_many(namespace, {key: value})

    def info(self) -> dict[str, Any]:
        """Where the cache is, its size on disk and its entries per namespace."""
        assert self.path is not None
        counts: dict[str, int] = {}
        if self.path.is_file():
            query = "SELECT namespace, COUNT(*) FROM entries GROUP BY namespace"
            rows: list[tuple[str, int]] = self._use(lambda db: db.execute(query).fetchall(), [])
            counts = dict(rows)
        size = 0
        if self.path.parent.is_dir():
            size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return {"path": str(self.path), "bytes": size, "entries": counts, "enabled": self.enabled}

    def clear(self) -> int:
        """Delete every entry; returns how many there were. A cache that cannot be read (damaged,
        read-only) is deleted outright; an EvalhError only when even that fails."""
        assert self.path is not None
        if not self.path.is_file():
            return 0
        with self._lock:
            try:
                db = self._db()
                (count,) = db.execute("SELECT COUNT(*) FROM entries").fetchone()
                db.execute("DELETE FROM entries")
                db.commit()
                db.execute("VACUUM")
                return int(count)
            except (DamagedDatabase, OSError, sqlite3.Error):
                self._disconnect()
            try:
                for suffix in ("", *SIDE_FILES):
                    self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            except OSError as error:
                raise EvalhError(
                    f"cannot clear the cache: {error.strerror or error}",
                    where=str(self.path),
                    hint="Delete the file by hand, or set EVALH_CACHE_DIR to another directory",
                ) from error
        return 0

    def close(self) -> None:
        with self._lock:
            self._disconnect()


_WARNED: set[str] = set()


def _warn(message: str) -> None:
    """Once per message and process: several caches of one run may meet the same file."""
    if message not in _WARNED:
        _WARNED.add(message)
        log.warning(message)
