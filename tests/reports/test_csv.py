"""The CSV report in promptfoo's web-UI export layout."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from evalh.reports.csv import to_csv_text
from evalh.reports.writers import write_reports
from tests.reports.golden import assert_golden
from tests.reports.sample import sample_run


def _read(tmp_path: Path) -> list[list[str]]:
    (path,) = write_reports(sample_run(), [tmp_path / "r.csv"])
    return list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8"), newline="")))


def test_header_layout(tmp_path: Path) -> None:
    header = _read(tmp_path)[0]
    per_column = ["Status", "Score", "Named Scores", "Grader Reason", "Comment"]
    assert header == [
        "Description",
        "name",
        "extra",
        "[echo] greet",
        *per_column,
        "[echo] chat",
        *per_column,
        "[gpt] greet",
        *per_column,
        "[gpt] chat",
        *per_column,
    ]


def test_one_line_per_test_with_cells_per_column(tmp_path: Path) -> None:
    lines = _read(tmp_path)[1:]
    assert len(lines) == 3
    first = lines[0]
    assert first[:3] == ["greets Ada", "Ada", ""]
    assert first[3:6] == ["Hello Ada!", "PASS", "0.96"]
    assert json.loads(first[6]) == {"accuracy": pytest.approx(0.955)}
    assert first[7:9] == ["All assertions passed", ""]
    assert first[9:12] == ["Greetings, human.", "FAIL", "0.71"]
    assert first[13] == "Similarity 0.42 is less than threshold 0.8"
    second = lines[1]
    assert second[:3] == ["", "Bob", '{"k": [1, 2]}']
    assert second[21:24] == [
        "openai:chat:gpt-4o-mini: HTTP 500 server error after 5 attempts",
        "ERROR",
        "0.00",
    ]
    third = lines[2]
    assert third[0] == "odd output, line\nbreak"
    assert third[4] == "ERROR"
    assert "\\x1b[31mred" in third[3] and "\\udcff" in third[3] and "\x1b" not in third[3]


def test_csv_matches_golden() -> None:
    assert_golden("report.csv", to_csv_text(sample_run()))
