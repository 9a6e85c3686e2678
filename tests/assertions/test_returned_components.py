"""A javascript/python assertion that returns promptfoo's GradingResult with ``componentResults``: the
report lists those results right after the assertion, as promptfoo does (and as an assert-set's children
are listed), each with the assertion when it names none; a report read back keeps them in place, so the
next assertion is still read as itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.config.load import load_suite
from evalh.reports.codec import result_to_json
from evalh.reports.codec_check import read_report_file
from evalh.reports.codec_read import result_from_row
from evalh.runner.plan import Job

_GRADER = """module.exports = (output) => ({
  pass: true,
  score: 0.75,
  reason: 'two checks',
  componentResults: [
    {pass: true, score: 1, reason: 'says hi'},
    {pass: false, score: 0.5, reason: 'too short', assertion: {type: 'custom-length'}},
  ],
});
"""


def _run(tmp_path: Path, grader: str = _GRADER) -> dict[str, Any]:
    (tmp_path / "grade.js").write_text(grader, encoding="utf-8")
    config = {
        "prompts": ["hi {{ name }}"],
        "providers": ["echo"],
        "tests": [
            {
                "vars": {"name": "Ada"},
                "assert": [
                    {"type": "javascript", "value": "file://grade.js"},
                    {"type": "contains", "value": "Ada"},
                ],
            }
        ],
    }
    (tmp_path / "c.yaml").write_text(json.dumps(config), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["run", str(tmp_path / "c.yaml"), "-o", str(tmp_path / "out.json"), "--no-write"]
    )
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    loaded: dict[str, Any] = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    return loaded


def test_returned_results_are_listed_after_their_assertion(tmp_path: Path) -> None:
    (row,) = _run(tmp_path)["results"]["results"]
    components = row["gradingResult"]["componentResults"]
    assert [c["reason"] for c in components][:3] == ["two checks", "says hi", "too short"]
    parent, first, second, contains = components
    assert parent["assertion"]["type"] == "javascript" and "componentResults" in parent
    assert [c["pass"] for c in parent["componentResults"]] == [True, False]
    assert first["assertion"] == parent["assertion"]  # none named: the assertion that returned it
    assert second["assertion"] == {"type": "custom-length"}
    assert (first["score"], second["score"]) == (1, 0.5)
    assert contains["assertion"]["type"] == "contains" and contains["pass"] is True
    assert "componentResults" not in parent["metadata"]


def test_a_report_read_back_keeps_them_and_the_next_assertion(tmp_path: Path) -> None:
    _run(tmp_path)
    rows = read_report_file(tmp_path / "out.json")["results"]["results"]
    suite = load_suite(tmp_path / "c.yaml")
    job = Job(
        index=0,
        test=suite.tests[0],
        prompt=suite.prompts[0],
        provider=suite.providers[0],
        prompt_index=0,
        provider_index=0,
        repeat_index=0,
        rendered_prompt="hi Ada",
    )
    again = result_to_json(result_from_row(rows[0], job))
    assert again["gradingResult"]["componentResults"] == rows[0]["gradingResult"]["componentResults"]


@pytest.mark.parametrize(
    "returned",
    ["[{pass: 'yes', score: 1}]", "[{score: 1}]", "'not a list'", "[{pass: true, score: 'high'}]"],
)
def test_results_not_shaped_as_grading_results_fail_the_assertion(tmp_path: Path, returned: str) -> None:
    grader = (
        f"module.exports = () => ({{pass: true, score: 1, reason: 'x', componentResults: {returned}}});\n"
    )
    (row,) = _run(tmp_path, grader)["results"]["results"]
    parent = row["gradingResult"]["componentResults"][0]
    assert parent["pass"] is False and "componentResults that are not a list of results" in parent["reason"]
