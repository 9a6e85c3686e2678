"""The CSV written from a rated run: its ``Comment`` column holds the rating's comment, as promptfoo's CSV
holds ``gradingResult.comment`` (a new user's rated run had an empty Comment column), guarded against
formula injection as every text cell is; an unrated row's cell stays empty."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from evalh.store import open_store
from tests.store.helpers import evalh, write_config

COMMENT = '=HYPERLINK("http://x") wrong policy, <b>see</b> {{ 7*7 }}'


def test_the_comment_column_is_the_rating_comment(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"one?": "yes", "two?": "no", "three?": "yes"})
    assert evalh("run", config, "--no-table").exit_code in (0, 1)
    with open_store() as store:
        rows = sorted(store.iter_rows("latest"), key=lambda row: row["testIdx"])
        store.rate("latest", str(rows[0]["id"]), passed=False, comment=COMMENT)
        store.rate("latest", str(rows[1]["id"]), passed=True)  # no comment
    out = tmp_path / "rated.csv"
    assert evalh("runs", "show", "latest", "-o", str(out)).exit_code == 0
    table = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    by_test = {line["Description"]: line for line in table}
    assert by_test["one?"]["Status"] == "FAIL" and by_test["one?"]["Comment"] == "'" + COMMENT
    assert by_test["two?"]["Status"] == "PASS" and by_test["two?"]["Comment"] == ""
    assert by_test["three?"]["Status"] == "PASS" and by_test["three?"]["Comment"] == ""  # unrated
