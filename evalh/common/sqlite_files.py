"""SQLite files evalh keeps for the user (the cache, the run store): is one whole, and moving a damaged
one aside. A leaf module (stdlib only), so the cache and the store share one rule.
"""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["SIDE_FILES", "DamagedDatabase", "check_header", "move_aside"]

_MAGIC = b"SQLite format 3\x00"
SIDE_FILES = ("-wal", "-shm", "-journal")


class DamagedDatabase(Exception):
    """The file is not a whole SQLite database."""


def check_header(path: Path) -> None:
    """DamagedDatabase when ``path`` exists but is not a whole SQLite database: the 100-byte header must
    begin with SQLite's magic, and the file must be as long as the header says (when it says so
    reliably)."""
    try:
        with path.open("rb") as file:
            header = file.read(100)
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if not (header.startswith(_MAGIC) or _MAGIC.startswith(header)):
        raise DamagedDatabase("not an SQLite database")
    if len(header) < 100:
        return  # empty, or another process is writing its first page: SQLite's locking takes over
    if path.with_name(path.name + "-wal").exists():
        # In WAL mode another process may be checkpointing: it writes page 1 (the new size) before the
        # pages that extend the file, so a short file is no sign of damage; SQLite reads through the WAL.
        return
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if pages and header[24:28] == header[92:96] and size < pages * page_size:
        raise DamagedDatabase(f"truncated: {size:,} of {pages * page_size:,} bytes")


def move_aside(path: Path) -> Path:
    """Rename ``path`` and its -wal/-shm/-journal to ``<name>.corrupt-<timestamp>[-wal...]``; returns the
    new name. Raises OSError when a file cannot be moved."""
    moved = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", *SIDE_FILES):
        source = path.with_name(path.name + suffix)
        if source.exists():
            source.rename(moved.with_name(moved.name + suffix))
    return moved
