"""select-best and max-score through a real run (the CLI in process): graded after every row of a test,
across its prompts and providers; the winner passes, the others fail; rows are written once, final.
The grader is a real Python provider (tests/fixtures/comparing/grader.py) that answers like a model."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.config.test_promptfoo_semantics import evalh, run_rows, write

FIXTURE = Path(__file__).parent.parent / "fixtures" / "comparing"

PROMPTS = """
prompts:
  - "Short note on {{topic}}"
  - "A longer note on {{topic}}, with apples and pears"
  - "Note on {{topic}} with apples"
providers: [echo]
defaultTest:
  options:
    provider: file://grader.py
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "p")
    return tmp_path / "p"


def _verdicts(rows: list[dict[str, Any]]) -> list[bool]:
    return [row["success"] for row in sorted(rows, key=lambda r: (r["testIdx"], r["promptIdx"]))]


def _last_component(row: dict[str, Any]) -> dict[str, Any]:
    component: dict[str, Any] = row["gradingResult"]["componentResults"][-1]
    return component


def test_select_best_passes_the_graders_pick_and_fails_the_others(project: Path) -> None:
    config = write(
        project / "c.yaml",
        PROMPTS
        + """
tests:
  - vars: {topic: fruit}
    assert:
      - type: contains
        value: fruit
      - type: select-best
        value: mentions pears
""",
    )
    result, rows = run_rows(config)
    assert _verdicts(rows) == [False, True, False]
    loser = rows[0]
    assert loser["score"] == 0
    assert loser["gradingResult"]["reason"] == "select-best: Output not selected: mentions pears"
    assert _last_component(rows[1])["reason"] == "Output selected as the best: mentions pears"
    assert [c["assertion"]["type"] for c in loser["gradingResult"]["componentResults"]] == [
        "contains",
        "select-best",
    ]
    # the grader saw the criteria and every output once, by index, in column order
    (asked,) = [json.loads(line) for line in (project / "graded.jsonl").read_text().splitlines()]
    assert "following criteria: mentions pears" in asked
    assert asked.index('<Text index="0">\nShort note on fruit') < asked.index('<Text index="2">')
    assert result.exit_code == 1
    # the console's summary counts the final verdicts
    assert re.search(r"Passed\s+1\n", result.stdout) and re.search(r"Failed\s+2\n", result.stdout)


def test_a_reply_without_a_usable_index_fails_every_row(project: Path) -> None:
    config = write(
        project / "c.yaml",
        PROMPTS + "tests:\n  - vars: {topic: x}\n    assert: [{type: select-best, value: fits nothing}]\n",
    )
    _, rows = run_rows(config)
    assert _verdicts(rows) == [False, False, False]
    assert {_last_component(row)["reason"] for row in rows} == {"Invalid select-best verdict: NaN"}
    assert all(row["failureReason"] == 1 for row in rows)  # a failed assertion, not an error


def test_max_score_picks_the_first_highest_average(project: Path) -> None:
    config = write(
        project / "c.yaml",
        PROMPTS
        + """
tests:
  - vars: {topic: trees}
    assert:
      - {type: contains, value: apples}
      - {type: contains, value: pears}
      - type: max-score
  - vars: {topic: rocks}
    assert:
      - {type: contains, value: rocks}
      - {type: max-score, value: {threshold: 1.5, method: sum}}
""",
    )
    _, rows = run_rows(config)
    assert _verdicts(rows) == [False, True, False, False, False, False]
    winner = next(row for row in rows if row["testIdx"] == 0 and row["promptIdx"] == 1)
    assert _last_component(winner)["reason"] == "Selected as highest scoring output (score: 1.000)"
    first = next(row for row in rows if row["testIdx"] == 1 and row["promptIdx"] == 0)
    # a tie of sums (1 each) below the threshold: nobody wins, the first tied row says why
    assert first["gradingResult"]["reason"] == "max-score: Not selected - score 1.000 below threshold 1.5"


def test_a_test_with_one_output_is_an_error_and_the_run_goes_on(project: Path) -> None:
    config = write(
        project / "c.yaml",
        """
prompts: ["Note on {{topic}}"]
providers: [echo]
tests:
  - vars: {topic: a}
    assert: [{type: contains, value: a}, {type: max-score}]
  - vars: {topic: b}
    assert: [{type: contains, value: b}]
""",
    )
    result, rows = run_rows(config)
    assert [row["failureReason"] for row in rows] == [2, 0]  # ERROR, then a pass
    assert "max-score compares a test's outputs across prompts and providers" in rows[0]["error"]
    assert result.exit_code != 0


def test_each_repeat_is_compared_on_its_own(project: Path) -> None:
    config = write(
        project / "c.yaml",
        PROMPTS + "tests:\n  - vars: {topic: x}\n    assert: [{type: select-best, value: has apples}]\n",
    )
    _, rows = run_rows(config, "--repeat", "2", "--no-cache")
    winners = sorted((row["repeatIdx"], row["promptIdx"]) for row in rows if row["success"])
    assert winners == [(0, 1), (1, 1)]
    assert len((project / "graded.jsonl").read_text().splitlines()) == 2


def test_a_streamed_row_is_written_once_with_its_final_verdict(project: Path) -> None:
    config = write(
        project / "c.yaml",
        PROMPTS
        + """
tests:
  - vars: {topic: x}
    assert: [{type: select-best, value: mentions pears}]
  - vars: {topic: y}
    assert: [{type: contains, value: y}]
""",
    )
    stream = project / "rows.jsonl"
    result = evalh("run", str(config), "-o", str(stream), "--no-table", "--no-progress-bar")
    lines = [json.loads(line) for line in stream.read_text().splitlines()]
    assert len(lines) == 6
    compared = sorted((row["promptIdx"], row["success"]) for row in lines if row["testIdx"] == 0)
    assert compared == [(0, False), (1, True), (2, False)]
    assert result.exit_code == 1


@pytest.mark.parametrize(
    ("asserts", "problem"),
    [
        ("[{type: not-select-best, value: short}, {type: contains, value: a}]", "has no not- form"),
        (
            "[{type: assert-set, assert: [{type: max-score}, {type: contains, value: a}]}]",
            "not in an assert-set",
        ),
        ("[{type: max-score}]", "needs another assertion"),
    ],
)
def test_misplaced_comparisons_are_config_errors(project: Path, asserts: str, problem: str) -> None:
    config = write(project / "c.yaml", PROMPTS + f"tests:\n  - vars: {{topic: x}}\n    assert: {asserts}\n")
    result = evalh("validate", str(config))
    assert result.exit_code == 2
    assert problem in result.stderr
    assert "c.yaml:" in result.stderr and "tests[0].assert[0]" in result.stderr


FLAKY = """
from pathlib import Path


def call_api(prompt, options, context):
    if "pears" in prompt and not (Path(__file__).parent / "up").exists():
        return {"error": "the service is down"}
    return {"output": prompt}
"""


def test_retrying_an_errored_row_regrades_its_whole_comparison(project: Path) -> None:
    write(project / "flaky.py", FLAKY)
    config = write(
        project / "c.yaml",
        PROMPTS.replace("providers: [echo]", "providers: [file://flaky.py]")
        + "tests:\n  - vars: {topic: x}\n    assert: [{type: select-best, value: mentions pears}]\n",
    )
    report = project / "out.json"
    first = evalh("run", str(config), "-o", str(report), "--no-table", "--no-cache")
    rows = json.loads(report.read_text())["results"]["results"]
    assert [row["failureReason"] for row in sorted(rows, key=lambda r: r["promptIdx"])] == [0, 2, 1]
    assert first.exit_code != 0
    (project / "up").write_text("")
    evalh("run", str(config), "-o", str(report), "--no-table", "--retry-errors", "--no-cache")
    rows = json.loads(report.read_text())["results"]["results"]
    # every row of the test ran again and was compared together: the row that errored now wins
    assert _verdicts(rows) == [False, True, False]
    assert len((project / "graded.jsonl").read_text().splitlines()) == 2


def test_the_criteria_reach_the_grader_as_written(project: Path) -> None:
    # promptfoo renders no var into select-best's criteria: "{{fruit}}" names no text, the first wins
    config = write(
        project / "c.yaml",
        PROMPTS
        + "tests:\n  - vars: {topic: x, fruit: pears}\n"
        + "    assert: [{type: select-best, value: 'mentions {{fruit}}'}]\n",
    )
    _, rows = run_rows(config)
    assert _verdicts(rows) == [True, False, False]
    (asked,) = [json.loads(line) for line in (project / "graded.jsonl").read_text().splitlines()]
    assert "following criteria: mentions {{fruit}}" in asked
