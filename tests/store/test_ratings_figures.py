"""A rated run's figures follow its ratings everywhere a report shows them: ``results.evalh.passRate``,
``results.aggregates`` (counts, pass rates, mean scores, per column) and each repeated test's verdict
figures; clearing gives the graded figures back byte for byte, and an export imports back to them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalh.reports.codec_read import row_id
from evalh.reports.viewdata import run_summary
from evalh.store import open_store
from evalh.store.export import indented_report
from tests.store.helpers import evalh, write_config

_EIGHT = {f"q{n}?": ("yes" if n < 4 else "no") for n in range(8)}  # 4 of 8 pass


def _record(tmp_path: Path, answers: dict[str, str], *options: str) -> str:
    result = evalh("run", write_config(tmp_path, answers), "--no-table", *options)
    assert result.exit_code in (0, 1), result.output
    with open_store() as store:
        return store.resolve("latest").id


def _shown(run_id: str) -> dict[str, Any]:
    result = evalh("runs", "show", run_id, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["results"]  # type: ignore[no-any-return]


def _exported(run_id: str) -> str:
    with open_store() as store:
        return "".join(indented_report(store.load_run(run_id, lazy=True)))


def _rate(run_id: str, description: str, *, passed: bool, score: float | None = None) -> str:
    with open_store() as store:
        (row,) = [row for row in store.iter_rows(run_id) if row["description"] == description]
        store.rate(run_id, row_id(row), passed=passed, score=score)
    return row_id(row)


def test_rating_one_row_of_eight_moves_the_pass_rate_and_the_aggregates(tmp_path: Path) -> None:
    run_id = _record(tmp_path, _EIGHT)
    graded = _shown(run_id)
    assert graded["evalh"]["passRate"] == 50.0
    before = _exported(run_id)
    rated_id = _rate(run_id, "q5?", passed=True, score=0.5)
    rated = _shown(run_id)
    assert (rated["stats"]["successes"], rated["evalh"]["passRate"]) == (5, 62.5)
    aggregates = rated["aggregates"]
    assert aggregates["counts"] == {"rows": 8, "passed": 5, "failed": 3, "errors": 0}
    assert aggregates["passRate"] == 62.5
    assert aggregates["meanScore"] == pytest.approx(graded["aggregates"]["meanScore"] + 0.5 / 8)
    (column,) = aggregates["columns"]
    assert (column["passed"], column["failed"], column["passRate"]) == (5, 3, 62.5)
    assert column["meanScore"] == pytest.approx(aggregates["meanScore"])
    # what a rating does not decide stays graded (README "Rating results")
    assert aggregates["assertionTypes"] == graded["aggregates"]["assertionTypes"]
    with open_store() as store:  # the viewer's run summary, from the stored run
        summary = run_summary(store.load_head(run_id), run_id)
    assert (summary["passed"], summary["passRate"]) == (5, 62.5)
    table = evalh("runs", "show", run_id)
    assert "62.5" in table.output, table.output
    with open_store() as store:
        store.clear_rating(run_id, rated_id)
    assert _exported(run_id) == before  # the graded run, byte for byte


def test_an_exported_rated_run_imports_back_with_the_same_figures(tmp_path: Path) -> None:
    run_id = _record(tmp_path, _EIGHT)
    _rate(run_id, "q1?", passed=False)
    _rate(run_id, "q6?", passed=True, score=0.75)
    exported = json.loads(_exported(run_id))
    with open_store() as store:
        store.delete(run_id)
        imported = store.import_report(exported, source="r.json")
        loaded = store.load_run(imported.id)["results"]
    for key in ("stats", "aggregates", "prompts"):
        assert loaded[key] == exported["results"][key], key
    for key in ("passRate", "repeats"):  # the block's "store" says where the run came from
        assert loaded["evalh"].get(key) == exported["results"]["evalh"].get(key), key


def test_a_repeated_tests_verdict_follows_the_rating_of_one_repeat(tmp_path: Path) -> None:
    run_id = _record(tmp_path, {"a?": "yes", "b?": "no"}, "--repeat", "3")
    graded = _shown(run_id)["evalh"]["repeats"]
    assert graded["testsPassed"] == 1
    before = _exported(run_id)
    with open_store() as store:
        first = next(row for row in store.iter_rows(run_id) if row["description"] == "a?")
        store.rate(run_id, row_id(first), passed=False)
    rated = _shown(run_id)
    repeats = rated["evalh"]["repeats"]
    by_test = {test["testIdx"]: test for test in repeats["tests"]}
    test = by_test[first["testIdx"]]
    assert (test["passes"], test["runs"], test["flaky"], test["pass"]) == (2, 3, True, False)
    assert (test["passAll"], test["passAny"]) == (False, True)
    assert test["passRate"] == pytest.approx(2 / 3)
    assert test["passRateInterval"] != graded["tests"][0]["passRateInterval"]
    assert repeats["testsPassed"] == 0
    assert rated["stats"]["passRateInterval"] != json.loads(before)["results"]["stats"]["passRateInterval"]
    with open_store() as store:
        store.clear_rating(run_id, row_id(first))
    assert _exported(run_id) == before
