"""The CSV report's ``Comment`` cell holds a rated row's comment, as promptfoo's export fills it from
``gradingResult.comment`` (it was always empty), guarded as every other text cell is."""

from __future__ import annotations

import csv
import io

from evalh.reports.csv import to_csv_text
from tests.reports.sample import sample_run
from tests.reports.test_rated_reports import _rated_run


def _comments(text: str) -> list[str]:
    rows = list(csv.reader(io.StringIO(text)))
    columns = [at for at, name in enumerate(rows[0]) if name == "Comment"]
    return [row[at] for row in rows[1:] for at in columns]


def test_a_rated_row_has_its_comment_in_the_csv() -> None:
    run, _ = _rated_run(passed=True, comment='=HYPERLINK("http://x") close enough\x1b[2J')
    comments = _comments(to_csv_text(run))
    assert '\'=HYPERLINK("http://x") close enough\\x1b[2J' in comments  # formula-safe, controls escaped
    assert sum(bool(comment) for comment in comments) == 1


def test_a_run_without_ratings_has_empty_comments() -> None:
    assert set(_comments(to_csv_text(sample_run()))) == {""}
