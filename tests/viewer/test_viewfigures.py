"""What the run page shows beside its lines (evalh/reports/viewfigures.py): each column's pass rate and
mean score, which agree with the report's own per-prompt metrics, and the metadata filter's choices; the
same from a report file and from the run store (whose index reads no row whole)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalh.model import Status
from evalh.reports.codec_read import column_indexes, row_id, row_status
from evalh.reports.viewdata import run_view
from evalh.store import open_store
from evalh.viewer.sources import GivenRuns, StoredRuns
from tests.store.helpers import evalh

_CONFIG = {
    "description": "figures",
    "prompts": [
        {"id": "a", "label": "a", "raw": "Say {{ n }}"},
        {"id": "b", "label": "b", "raw": "Tell {{ n }}"},
    ],
    "providers": ["echo"],
    "tests": [
        {
            "vars": {"n": str(i)},
            "metadata": {"kind": ["odd", "even"][i % 2], "rank": i % 3, "tags": ["x", 2], "ctl": "a\x1bb"}
            if i < 5
            else {},
            "assert": [
                {"type": "contains", "value": "Say"},
                {"type": "icontains", "value": str(i % 3)},
            ],
        }
        for i in range(7)
    ],
}


@pytest.fixture
def report(tmp_path: Path) -> Path:
    config = tmp_path / "figures.yaml"
    config.write_text(json.dumps(_CONFIG), encoding="utf-8")
    out = tmp_path / "figures.json"
    result = evalh("run", config, "-o", out, "--no-cache", "--no-write", "--no-table", "--no-progress-bar")
    assert result.exit_code == 1, result.output
    return out


def test_column_figures_agree_with_the_reports_own_metrics(report: Path) -> None:
    data = json.loads(report.read_text(encoding="utf-8"))
    columns = run_view(data, "r")["columns"]
    for column, prompt in zip(columns, data["results"]["prompts"], strict=True):
        metrics = prompt["metrics"]
        total = metrics["testPassCount"] + metrics["testFailCount"] + metrics["testErrorCount"]
        assert (column["passed"], column["total"]) == (metrics["testPassCount"], total)
        assert column["passRate"] == pytest.approx(100 * metrics["testPassCount"] / total)
        assert column["meanScore"] == pytest.approx(metrics["score"] / total)
        assert column["text"] == prompt["raw"]  # the prompt as written, for the header's hover
    assert [column["passed"] for column in columns] != [columns[0]["total"]] * 2  # a column that fails


def test_metadata_as_text_per_line_and_as_the_filters_choices(report: Path) -> None:
    view = run_view(json.loads(report.read_text(encoding="utf-8")), "r")
    assert view["metadata"] == {
        "kind": ["even", "odd"],
        "rank": ["0", "1", "2"],
        "tags": ['["x", 2]'],  # a JSON value as compact JSON
        "ctl": ["a\\x1bb"],  # a control character as a visible escape, as every page shows one
    }
    assert [line.get("metadata", {}).get("kind") for line in view["lines"]] == [
        "odd", "even", "odd", "even", "odd", None, None,
    ]  # fmt: skip
    assert "metadata" not in view["lines"][5]  # a test without metadata: nothing added to its line


def test_a_run_without_metadata_has_no_choices(report: Path) -> None:
    data = json.loads(report.read_text(encoding="utf-8"))
    for row in data["results"]["results"]:
        row["metadata"] = {}
    assert "metadata" not in run_view(data, "r")


def _first_page(source: Any, ref: str) -> dict[str, Any]:
    page = source.page(ref, 0, 3)
    return {key: page.get(key) for key in ("columns", "metadata")}


def test_a_stored_run_has_the_same_figures_and_choices_as_its_report(report: Path) -> None:
    with open_store() as store:
        run_id = store.import_report(json.loads(report.read_text(encoding="utf-8")), source="f").id
    stored = _first_page(StoredRuns(), run_id)
    given = _first_page(GivenRuns([str(report)]), "figures.json")
    assert stored == given  # the whole run's, on the first page of 3 lines
    assert stored["metadata"] is not None and len(stored["columns"]) == 2


def test_a_rating_moves_its_columns_figures(report: Path) -> None:
    """A person's verdict is the row's (the shared ratings contract), so its column's header counts it."""
    with open_store() as store:
        run_id = store.import_report(json.loads(report.read_text(encoding="utf-8")), source="f").id
        before = _first_page(StoredRuns(), run_id)
        failed = next(row for row in store.iter_rows(run_id) if row_status(row) is not Status.PASS)
        store.rate(run_id, row_id(failed), passed=True, comment="fine by me")
    after = _first_page(StoredRuns(), run_id)  # a new source: a finished run's index is kept per source
    rated = [column["key"] for column in after["columns"]].index(list(column_indexes(failed)))
    moved = [(b["passed"], a["passed"]) for b, a in zip(before["columns"], after["columns"], strict=True)]
    assert moved[rated] == (before["columns"][rated]["passed"], before["columns"][rated]["passed"] + 1)
    assert all(b == a for index, (b, a) in enumerate(moved) if index != rated)
    assert after["columns"][rated]["meanScore"] > before["columns"][rated]["meanScore"]
    assert after["metadata"] == before["metadata"]  # a rated row's metadata read as an unrated one's
