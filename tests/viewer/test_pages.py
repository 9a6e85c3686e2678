"""A run served a page of matrix lines at a time: the pages of a stored run (read from the store a page
at a time) and of a report file hold exactly the whole run's viewer data, and a comparison of stored
runs (their rows read one at a time) is the comparison of their reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalh.reports.viewdata import run_view
from evalh.store import open_store
from evalh.store.compare import compare_reports
from evalh.viewer.pages import FIRST_PAGE_LINES
from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import GivenRuns, RunSource, StoredRuns
from tests.store.helpers import evalh

_CONFIG = {
    "description": "pages ✓",
    "prompts": [
        {"id": "a", "label": "a", "raw": "Say {{ n }}"},
        {"id": "b", "label": "b", "raw": "Tell {{ n }}"},
    ],
    "providers": ["echo"],
    "evaluateOptions": {"repeat": 2},
    "tests": [
        {
            "description": f"test {i} ünï",
            "vars": {"n": str(i)},
            "assert": [
                {"type": "contains", "value": "Say", "metric": "said"},
                {"type": "icontains", "value": str(i % 3), "metric": f"third-{i % 2}"},
            ],
        }
        for i in range(7)
    ],
}


@pytest.fixture
def stored(tmp_path: Path) -> list[str]:
    """Two stored runs of the same suite (14 matrix lines, two columns, metrics), oldest first."""
    config = tmp_path / "pages.yaml"
    config.write_text(json.dumps(_CONFIG), encoding="utf-8")
    for _ in range(2):
        result = evalh("run", config, "--no-cache", "--no-table", "--no-progress-bar")
        assert result.exit_code == 1, result.output
    with open_store() as store:
        return [run.id for run in reversed(store.list_runs())]


def _whole(source: RunSource, ref: str, limit: int) -> dict[str, Any]:
    """Every page of a run put together."""
    first = source.page(ref, 0, limit)
    lines = list(first["lines"])
    while len(lines) < first["total"]:
        page = source.page(ref, len(lines), limit)
        assert page["offset"] == len(lines) and page["lines"], page
        lines += page["lines"]
    return {key: first[key] for key in ("run", "columns", "metrics", "repeats") if key in first} | {
        "lines": lines
    }


@pytest.mark.parametrize("limit", [1, 3, 1000])
def test_stored_pages_hold_the_whole_view(stored: list[str], limit: int) -> None:
    with open_store() as store:
        whole = run_view(store.load_run(stored[-1]), stored[-1])
    assert len(whole["lines"]) == 14 and whole["metrics"] == ["said", "third-0", "third-1"]
    pages = _whole(StoredRuns(), stored[-1], limit)
    with open_store() as store:  # a stored run's cells carry their rows' ids (what a rating names)
        ids = [str(row["id"]) for row in store.iter_rows(stored[-1])]
    assert sorted(cell.pop("id") for line in pages["lines"] for cell in line["cells"]) == sorted(ids)
    assert pages == whole
    assert _without_ids(StoredRuns().page("latest", 13, 5)["lines"]) == whole["lines"][13:]


def _without_ids(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**line, "cells": [{k: v for k, v in c.items() if k != "id"} for c in line["cells"]]}
        for line in lines
    ]


def test_report_file_pages_hold_the_whole_view(stored: list[str], tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    assert evalh("runs", "show", "--json", stored[-1]).stdout
    path.write_text(evalh("runs", "show", "--json", stored[-1]).stdout, encoding="utf-8")
    whole = run_view(json.loads(path.read_text(encoding="utf-8")), "run.json")
    assert _whole(GivenRuns([str(path)]), "run.json", 4) == whole


def test_the_api_serves_a_first_page_and_the_rest_on_request(stored: list[str]) -> None:
    server = ViewerServer(StoredRuns())
    server.start()
    try:
        first = httpx.get(server.url + "api/runs/latest").json()
        assert first["total"] == 14 and first["offset"] == 0
        assert len(first["lines"]) == min(14, FIRST_PAGE_LINES)
        later = httpx.get(server.url + "api/runs/latest?offset=10&limit=2").json()
        assert later["lines"] == first["lines"][10:12] and later["offset"] == 10
        for query in ("limit=0", "offset=-1", "offset=x", "limit=1.5"):
            bad = httpx.get(server.url + "api/runs/latest?" + query)
            assert bad.status_code == 400 and "offset and limit" in bad.json()["error"], query
        assert httpx.get(server.url + "api/runs/nope?offset=1").status_code == 404
    finally:
        server.close()


def test_stored_runs_compare_as_their_reports(stored: list[str]) -> None:
    server = ViewerServer(StoredRuns())
    server.start()
    try:
        url = server.url + f"api/compare?baseline={stored[0]}&current={stored[1]}"
        served = httpx.get(url).json()
    finally:
        server.close()
    with open_store() as store:
        before, after = store.load_run(stored[0]), store.load_run(stored[1])
    expected = compare_reports(before, after).to_json()
    assert served["unchanged"] == expected["unchanged"] == 28
    for group in ("regressions", "newFailures", "fixes", "scoreChanges", "added", "removed"):
        assert [{k: v for k, v in c.items() if k != "column"} for c in served[group]] == expected[group]
    assert served["current"] == run_view(after, stored[1])["run"]
