"""A JSON report as the viewer's matrix (evalh/reports/viewdata.py)."""

from __future__ import annotations

import json
from typing import Any

from evalh.reports.json import to_promptfoo_json
from evalh.reports.viewdata import run_view
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


def test_the_run_says_in_its_own_words_how_many_outputs_came_from_the_cache() -> None:
    report = _report()
    block = report["results"]["evalh"]["cache"]
    assert run_view(report, "r1")["run"]["cache"] == block["summary"]
    block.update(fromCache=3, summary="<script>alert(1)</script>")  # a file's text is never shown
    expected = f"3 of {block['outputs']} outputs from the cache; --no-cache calls the providers"
    assert run_view(report, "r1")["run"]["cache"] == expected
    block["fromCache"] = block["outputs"] + 1  # impossible figures: nothing said
    assert run_view(report, "r1")["run"]["cache"] is None
    del report["results"]["evalh"]["cache"]  # a report from before: nothing said
    assert run_view(report, "r1")["run"]["cache"] is None
