"""A persistent SQLite cache for embeddings, token vectors and completions.

Keys are sha256 of canonical JSON of non-secret identity fields (provider id, model, dimensions, ...)
plus sha256 of the text, so no API key or raw text is stored in a key. Location: ``$EVALH_CACHE_DIR``,
else the user cache dir (``$XDG_CACHE_HOME/evalh`` or ``~/.cache/evalh``).

A run uses the cache in one of three ways (:func:`cache_mode`): it reads and writes it; with
``--no-cache`` it reads nothing but writes every fresh answer (so the next plain run sees the live app's
answers, not the ones from before the app changed); with ``--repeat`` above 1 or
``EVALH_CACHE_ENABLED=false`` it neither reads nor writes. An entry older than ``EVALH_CACHE_TTL``
seconds (14 days by default, as promptfoo's ``PROMPTFOO_CACHE_TTL``) is a miss, and is replaced.

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
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from evalh.common.cache_location import cache_dir, cache_enabled, first_setting
from evalh.common.notices import warn
from evalh.common.sqlite_files import SIDE_FILES, DamagedDatabase, check_header, move_aside
from evalh.errors import ConfigError, EvalhError
from evalh.model import AssertionSpec, CacheMode, RunOptions, Suite
from evalh.providers.registry import may_cache

__all__ = ["DEFAULT_TTL_S", "Cache", "cache_dir", "cache_mode", "cache_ttl_s", "warn_latency_with_cache"]

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

DEFAULT_TTL_S = 14 * 24 * 3600  # promptfoo's default PROMPTFOO_CACHE_TTL
_TTL_VARS = ("EVALH_CACHE_TTL", "PROMPTFOO_CACHE_TTL")

log = logging.getLogger("evalh.cache")
T = TypeVar("T")


def cache_mode(options: RunOptions) -> CacheMode:
    """How a run with ``options`` uses the cache (see the module docstring)."""
    if options.repeat > 1 or not cache_enabled():
        return CacheMode.OFF
    return CacheMode.USE if options.cache else CacheMode.REFRESH


def cache_ttl_s() -> float:
    """How old an entry may be and still be read, in seconds (``EVALH_CACHE_TTL``)."""
    setting = first_setting(_TTL_VARS)
    if setting is None:
        return DEFAULT_TTL_S
    name, value = setting
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise ConfigError(
            f"must be a number of seconds above 0 (got {value!r})",
            where=name,
            hint=f"Set {name}=1209600 for 14 days, or unset it for that default",
        )
    return seconds


def _latency_checks(specs: Sequence[AssertionSpec]) -> Iterator[AssertionSpec]:
    for spec in specs:
        if spec.type == "latency":
            yield spec
        yield from _latency_checks(spec.children)


def warn_latency_with_cache(suite: Suite) -> None:
    """``evalh validate``: a latency check is skipped on every cached output, so with the cache on it
    may time nothing at all; one warning names the first and how many there are."""
    if cache_mode(suite.evaluate_options) is not CacheMode.USE or not any(map(may_cache, suite.providers)):
        return  # no answer of a provider under test can come from the cache: every one is timed
    found = [spec for test in suite.tests for spec in _latency_checks(test.asserts)]
    if not found:
        return
    where = " ".join(filter(None, (suite.config_path, found[0].path))) or "latency"
    count = f"{len(found)} latency assertions" if len(found) > 1 else "a latency assertion"
    error = ConfigError(
        f"the suite has {count} and the cache is on: a cached output is not timed, so latency is "
        "skipped (not applicable) on each row answered from the cache",
        where=where,
        hint="Run with --no-cache to time every call (evaluateOptions.cache: false does the same), or "
        "set cache: false in the config of the provider under test",
    )
    warn(error, where=where, subject="latency with the cache on")


class Cache:
    """Namespaced key -> bytes store. Thread-safe; opened lazily on first use.

    ``enabled`` False: every lookup misses and nothing is stored. ``read`` False (``--no-cache``):
    every lookup misses, and what is stored replaces the old entry. An entry older than ``ttl_s``
    seconds misses."""

    def __init__(
        self, path: Path | None, *, enabled: bool = True, read: bool = True, ttl_s: float = DEFAULT_TTL_S
    ) -> None:
        self.path = path
        self.enabled = enabled and path is not None
        self.read = read
        self.ttl_s = ttl_s
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @classmethod
    def open(cls, mode: CacheMode | bool = CacheMode.USE) -> Cache:
        """The user's cache, used as ``mode`` says (True: USE, False: OFF); raises ConfigError for a bad
        ``EVALH_CACHE_TTL``."""
        if isinstance(mode, bool):
            mode = CacheMode.USE if mode else CacheMode.OFF
        enabled = mode is not CacheMode.OFF
        ttl_s = cache_ttl_s() if enabled else DEFAULT_TTL_S
        return cls(cache_dir() / "cache.sqlite3", enabled=enabled, read=mode is CacheMode.USE, ttl_s=ttl_s)

    @staticmethod
    def key(identity: Mapping[str, Any], text: str) -> str:
        """sha256 over the canonical JSON of the identity and the sha256 of the text."""
        return Cache.keyer(identity)(text)

    @staticmethod
    def keyer(identity: Mapping[str, Any]) -> Callable[[str], str]:
        """:meth:`key` with ``identity`` fixed, for many texts: the canonical JSON of the identity is
        written once, not once per text (a third of the key's cost, 0.1 s of 5,452 texts)."""
        # sort_keys puts "identity" before "text", and a hex digest needs no escaping: the canonical
        # text is this head, the quoted digest and the closing brace
        empty = json.dumps({"identity": identity, "text": ""}, sort_keys=True, default=str)
        head = empty[: -len('""}')].encode("utf-8")

        def key_of(text: str) -> str:
            text_hash = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            return hashlib.sha256(b'%s"%s"}' % (head, text_hash.encode("ascii"))).hexdigest()

        return key_of

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
            "cache. Set EVALH_CACHE_DIR to a writable directory, or EVALH_CACHE_ENABLED=false to silence "
            "this."
        )

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        if not self.enabled or not self.read or not keys:
            return {}
        unique = list(dict.fromkeys(keys))
        oldest = time.time() - self.ttl_s

        def select(db: sqlite3.Connection) -> dict[str, bytes]:
            found: dict[str, bytes] = {}
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    "SELECT key, value FROM entries WHERE namespace = ? AND created >= ? "
                    f"AND key IN ({marks})",
                    (namespace, oldest, *chunk),
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
        return {
            "path": str(self.path),
            "bytes": size,
            "entries": counts,
            "enabled": self.enabled,
            "ttlSeconds": self.ttl_s,
        }

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
