"""A JSON report as the viewer's matrix (reports/viewdata.py) and two runs paired (viewer/compare.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

from evalh.reports.json import to_promptfoo_json
from evalh.reports.viewdata import run_view
from evalh.viewer.compare import compare_views
from tests.reports.sample import sample_run


def _report() -> dict[str, Any]:
    return json.loads(json.dumps(to_promptfoo_json(sample_run())))  # as read back from the file


def test_the_matrix_of_a_run() -> None:
    view = run_view(_report(), "r1")
    assert [c["label"] for c in view["columns"]] == [
        "[echo] greet",
        "[gpt] greet",
        "[echo] chat",
        "[gpt] chat",
    ]
    assert [(line["test"], line["repeat"]) for line in view["lines"]] == [(0, 0), (1, 0), (2, 0)]
    statuses = [[cell["status"] for cell in line["cells"]] for line in view["lines"]]
    assert statuses == [
        ["PASS", "PASS", "FAIL", "FAIL"],
        ["PASS"] * 3 + ["ERROR"],
        ["ERROR", "FAIL", "FAIL", "FAIL"],
    ]
    assert view["metrics"] == ["accuracy"]
    assert (view["run"]["ref"], view["run"]["description"], view["run"]["rows"]) == ("r1", "Sample suite", 12)
    assert (view["run"]["passed"], view["run"]["failed"], view["run"]["errors"]) == (5, 5, 2)


def test_a_cell_has_what_the_detail_panel_shows() -> None:
    cell = run_view(_report(), "r1")["lines"][0]["cells"][2]
    assert (cell["status"], cell["reason"]) == ("FAIL", "Similarity 0.42 is less than threshold 0.8")
    assert cell["output"] == "Greetings, human."
    assert cell["prompt"] == "[user]\nHi Ada"  # a chat prompt as its messages
    assert cell["latencyMs"] == 110 and cell["gradingTokens"]["total"] == 12
    similar = cell["assertions"][1]
    assert (similar["type"], similar["pass"], similar["score"], similar["threshold"]) == (
        "similar",
        False,
        0.42,
        0.8,
    )


def test_an_assert_set_shows_its_children_once_indented() -> None:
    cell = run_view(_report(), "r1")["lines"][1]["cells"][0]
    assert [(a["type"], a.get("depth", 0)) for a in cell["assertions"]] == [
        ("not-contains", 0), ("assert-set", 0), ("equals", 1), ("icontains", 1),
    ]  # fmt: skip


def test_a_report_without_prompts_takes_its_columns_from_the_rows() -> None:
    report = _report()
    del report["results"]["prompts"]
    assert [c["label"] for c in run_view(report, "r")["columns"]] == [
        "[echo] greet", "[gpt] greet", "[echo] chat", "[gpt] chat",
    ]  # fmt: skip


def test_compare_pairs_by_test_not_position() -> None:
    before = run_view(_report(), "a")
    after = copy.deepcopy(before)
    after["run"]["ref"] = "b"
    line0, line1, line2 = after["lines"]
    line0["cells"][0] = dict(line0["cells"][0], status="FAIL", score=0.1, reason="now wrong")  # regression
    line2["cells"][1] = dict(line2["cells"][1], status="PASS", score=1.0, reason="")  # fixed
    line1["cells"][1] = dict(line1["cells"][1], score=0.5)  # same verdict, another score
    line1["cells"][3] = None  # gone
    after["lines"] = [line2, line1, line0, dict(line0, description="brand new", cells=line0["cells"])]
    diff = compare_views(before, after)
    assert diff["counts"] == {"regression": 1, "fixed": 1, "changed": 1, "added": 4, "removed": 1, "same": 8}
    first = diff["pairs"][0]
    assert (first["kind"], first["column"], first["before"]["status"], first["after"]["reason"]) == (
        "regression", "[echo] greet", "PASS", "now wrong",
    )  # fmt: skip
    assert [p["kind"] for p in diff["pairs"]][:3] == ["regression", "fixed", "changed"]
