"""A rated row in every report written from a run: the JSON row as the store reads it (promptfoo's manual
rating, ``rating`` beside it), the comment as data in Markdown (escaped), JUnit (XML-escaped) and the
console, and a run without ratings written exactly as before."""

from __future__ import annotations

import dataclasses
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema

from evalh.model import RowRating, RunRecord, Status
from evalh.reports.codec import MANUAL_REASON, graded_row, rated_row, rating_to_json, result_to_json
from evalh.reports.codec_read import rating_from_json, row_rating
from evalh.reports.json import to_promptfoo_json
from evalh.reports.junit import to_junit_xml
from evalh.reports.markdown import to_markdown
from evalh.reports.table import print_report
from evalh.runner.aggregates import compute_aggregates
from tests.reports.sample import sample_run

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "report.schema.json"
HOSTILE = "[bold]x[/] <img src=x onerror=alert(1)> {{ 7*7 }} & @team ]]>"


def _rated_run(passed: bool, comment: str = HOSTILE) -> tuple[RunRecord, dict[str, Any]]:
    """The sample run with its first row rated; and that row's JSON as the run store reads it."""
    run = sample_run()
    first = run.results[0]
    rating = {"pass": passed, "score": 0.5, "comment": comment, "reviewer": "ana <a@b>", "ratedAt": "t"}
    stored = dict(rated_row(result_to_json(first), rating))
    rated = dataclasses.replace(
        first,
        status=Status.PASS if passed else Status.FAIL,
        score=0.5,
        reason=MANUAL_REASON,
        rating=rating_from_json(stored),
    )
    results = (rated, *run.results[1:])
    aggregates = compute_aggregates(run.suite, results)  # the columns' rows are the rated ones
    return dataclasses.replace(run, results=results, aggregates=aggregates), stored


def test_a_rated_result_writes_the_row_the_store_reads() -> None:
    run, stored = _rated_run(passed=False)
    written = result_to_json(run.results[0])
    assert written == stored
    assert row_rating(written) == {k: v for k, v in stored["rating"].items() if k != "graded"}
    assert graded_row(written)[0] == result_to_json(sample_run().results[0])


def test_a_report_with_rated_rows_is_valid_against_the_report_schema() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    for passed in (True, False):
        run, _ = _rated_run(passed)
        report = to_promptfoo_json(run, eval_id="eval-rated")
        error_row = next(row for row in run.results if row.status is Status.ERROR and not row.assertions)
        unrated = result_to_json(error_row)
        rating = {"pass": passed, "score": 1.0, "comment": "", "reviewer": "r", "ratedAt": "t"}
        report["results"]["results"].append(dict(rated_row(unrated, rating)))
        validator.validate(report)  # the rated rows, an ERROR row rated included
        assert sum("rating" in row for row in report["results"]["results"]) == 2


def test_rating_to_json_is_what_row_rating_reads() -> None:
    rating = RowRating(passed=True, score=1.0, comment="c", reviewer="r", rated_at="t")
    row = rated_row({"id": "x", "success": False}, rating_to_json(rating))
    assert row_rating(row) == rating_to_json(rating)


def test_markdown_lists_rated_rows_with_the_comment_escaped() -> None:
    run, _ = _rated_run(passed=False)
    text = to_markdown(run)
    assert "### Rated by people (1)" in text
    (line,) = [line for line in text.splitlines() if "onerror" in line and "| fail |" in line]
    assert "<img" not in line and "&lt;img src\\=x onerror\\=alert\\(1\\)&gt;" in line
    assert "\\[bold\\]" in line and "\\{\\{ 7\\*7 \\}\\}" in line and "@\u200bteam" in line
    assert "ana &lt;a@\u200bb&gt;" in line


def test_junit_keeps_the_comment_as_escaped_data() -> None:
    run, _ = _rated_run(passed=False)
    root = ET.fromstring(to_junit_xml(run))
    rated = [case for case in root.iter("testcase") if case.find("properties") is not None]
    (case,) = [c for c in rated if c.find("properties/property[@name='rating']") is not None]
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["rating"] == "fail" and properties["ratingComment"] == HOSTILE
    assert properties["ratingReviewer"] == "ana <a@b>"
    failure = case.find("failure")
    assert failure is not None and f"Rated fail by ana <a@b>: {HOSTILE}" in (failure.text or "")


def test_the_console_marks_a_rated_cell_and_prints_its_comment_as_text() -> None:
    _, stored = _rated_run(passed=True)
    out = io.StringIO()
    print_report({"results": {"results": [stored]}}, console_file=out, cell_limit=200)
    assert "(rated)" in out.getvalue() and f"rated by ana <a@b>: {HOSTILE}" in out.getvalue()


def test_a_run_without_ratings_writes_no_rating_anywhere() -> None:
    run = sample_run()
    assert "Rated by people" not in to_markdown(run)
    assert b"rating" not in to_junit_xml(run)
    assert all("rating" not in json.dumps(result_to_json(row)) for row in run.results)


def test_the_markdown_comparison_marks_a_rated_verdict() -> None:
    change = {
        "test": "greets Ada",
        "provider": "echo",
        "prompt": "greet",
        "before": {"status": "pass", "score": 1.0, "reason": ""},
        "after": {"status": "fail", "score": 0.0, "reason": "rated by ana: <b>no</b>", "rated": True},
    }
    comparison = {
        "baseline": {"id": "a", "rows": 1, "passed": 1, "passRate": 100.0},
        "current": {"id": "b", "rows": 1, "passed": 0, "passRate": 0.0},
        "tolerance": 0.01,
        "regressions": [change],
        **{group: [] for group in ("newFailures", "fixes", "scoreChanges", "added", "removed")},
        "unchanged": 0,
        "newFailureCount": 1,
    }
    text = to_markdown(sample_run(), comparison=comparison)
    (line,) = [line for line in text.splitlines() if "rated by ana" in line]
    assert "| PASS 1.00 | FAIL 0.00 (rated) |" in line and "&lt;b&gt;no&lt;/b&gt;" in line
