"""The one rule for telling a damaged SQLite file (cache, run store) from one another process is writing.

A live database must never be moved aside: that would lose a concurrent run's rows. These cases are the
states another evalh process leaves the file in for a moment; the concurrent-writers test in
tests/store/test_store.py exercises them for real, but only now and then.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from evalh.common.sqlite_files import DamagedDatabase, check_header


def whole_database(path: Path) -> bytes:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x TEXT)")
        db.executemany("INSERT INTO t VALUES (?)", [("x" * 500,) for _ in range(200)])
    db.close()
    return path.read_bytes()


def test_a_whole_database_and_an_empty_file_pass(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    whole_database(path)
    check_header(path)
    empty = tmp_path / "empty.sqlite3"
    empty.write_bytes(b"")
    check_header(empty)


def test_a_first_page_being_written_is_not_damage(tmp_path: Path) -> None:
    data = whole_database(tmp_path / "db.sqlite3")
    for cut in (5, 16, 60):  # a reader may see any prefix of the header while it is written
        partial = tmp_path / f"partial{cut}.sqlite3"
        partial.write_bytes(data[:cut])
        check_header(partial)


def test_a_short_file_beside_a_wal_is_a_checkpoint_in_progress(tmp_path: Path) -> None:
    data = whole_database(tmp_path / "db.sqlite3")
    live = tmp_path / "live.sqlite3"
    live.write_bytes(data[:5000])  # page 1 claims more pages than the file has, for now
    (tmp_path / "live.sqlite3-wal").write_bytes(b"")
    check_header(live)


def test_garbage_and_a_truncated_file_without_a_wal_are_damaged(tmp_path: Path) -> None:
    data = whole_database(tmp_path / "db.sqlite3")
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"not a database" * 100)
    truncated = tmp_path / "truncated.sqlite3"
    truncated.write_bytes(data[:5000])
    short_garbage = tmp_path / "short.sqlite3"
    short_garbage.write_bytes(b"hello")
    for path in (garbage, truncated, short_garbage):
        with pytest.raises(DamagedDatabase):
            check_header(path)
