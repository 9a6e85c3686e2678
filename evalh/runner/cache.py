"""A persistent SQLite cache for embeddings, token vectors and completions.

Keys are sha256 of canonical JSON of non-secret identity fields (provider id, model, dimensions, ...)
plus sha256 of the text, so no API key or raw text is stored in a key. Location: ``$EVALH_CACHE_DIR``,
else the user cache dir (``$XDG_CACHE_HOME/evalh`` or ``~/.cache/evalh``). A disabled cache
(``--no-cache``) answers every lookup with a miss and stores nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalh.errors import EvalhError

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

    @contextlib.contextmanager
    def _locked(self) -> Iterator[sqlite3.Connection]:
        """The open database, under the lock. A cache that cannot be opened or used (a file where the
        directory goes, no permission, a full disk, a corrupt file) is an EvalhError naming it."""
        with self._lock:
            try:
                yield self._db()
            except (OSError, sqlite3.Error) as error:
                raise EvalhError(
                    f"cannot use the cache: {error}",
                    where=str(self.path),
                    hint="Set EVALH_CACHE_DIR to a writable directory, or run with --no-cache",
                ) from error

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.executescript(_SCHEMA)
            self._connection = connection
        return self._connection

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        if not self.enabled or not keys:
            return {}
        found: dict[str, bytes] = {}
        with self._locked() as db:
            unique = list(dict.fromkeys(keys))
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT key, value FROM entries WHERE namespace = ? AND key IN ({marks})",
                    (namespace, *chunk),
                )
                found.update({key: bytes(value) for key, value in rows})
        return found

    def get(self, namespace: str, key: str) -> bytes | None:
        return self.get_many(namespace, [key]).get(key)

    def put_many(self, namespace: str, items: Mapping[str, bytes]) -> None:
        if not self.enabled or not items:
            return
        now = time.time()
        with self._locked() as db:
            db.executemany(
                "INSERT OR REPLACE INTO entries (namespace, key, value, created) VALUES (?, ?, ?, ?)",
                [(namespace, key, value, now) for key, value in items.items()],
            )
            db.commit()

    def put(self, namespace: str, key: str, value: bytes) -> None:
        self.put_many(namespace, {key: value})

    def info(self) -> dict[str, Any]:
        """Where the cache is, its size on disk and its entries per namespace."""
        assert self.path is not None
        counts: dict[str, int] = {}
        if self.path.exists():
            with self._locked() as db:
                rows = db.execute("SELECT namespace, COUNT(*) FROM entries GROUP BY namespace")
                counts = {namespace: count for namespace, count in rows}
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return {"path": str(self.path), "bytes": size, "entries": counts, "enabled": self.enabled}

    def clear(self) -> int:
        """Delete every entry; returns how many there were."""
        assert self.path is not None
        if not self.path.exists():
            return 0
        with self._locked() as db:
            (count,) = db.execute("SELECT COUNT(*) FROM entries").fetchone()
            db.execute("DELETE FROM entries")
            db.commit()
            db.execute("VACUUM")
        return int(count)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
