"""A ``ratings`` record another program changed (SQLite keeps whatever value a column is given): reading
the run is exit 2 naming the row and how to clear its rating, not an internal error; clearing it works."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from evalh.reports.codec_read import row_id
from evalh.store import open_store, store_path
from tests.store.helpers import evalh
from tests.store.test_ratings import _record, _rows_by_description


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("score = 'abc'", "its score (0 to 1) is not a rating's"),
        ("score = 2", "its score (0 to 1) is not a rating's"),
        ("pass = 'yes'", "its pass (0 or 1) is not a rating's"),
        ("reviewer = x'ff'", "its row id, comment, reviewer and time (text) is not a rating's"),
    ],
)
def test_a_damaged_rating_is_a_clear_error_and_can_be_cleared(tmp_path: Path, damage: str, says: str) -> None:
    run_id = _record(tmp_path)
    with open_store() as store:
        failing = row_id(_rows_by_description(store, run_id)["two?"])
        store.rate(run_id, failing, passed=True)
    with sqlite3.connect(store_path()) as db:
        db.execute(f"UPDATE ratings SET {damage}")
    shown = evalh("runs", "show", "latest", "--json")
    assert shown.exit_code == 2, shown.output
    assert f"the run store's rating of the row '{failing}' is damaged: {says}" in shown.output
    assert f"evalh runs rate RUN {failing} --clear" in shown.output
    assert evalh("runs", "rate", "latest", failing, "--clear").exit_code == 0
    cleared = evalh("runs", "show", "latest", "--json")
    assert cleared.exit_code == 0 and '"rating"' not in cleared.output  # the graded run again
