"""assertScoringFunction through a real run (the CLI in process): a Python function in a worker and a
JavaScript one in the embedded engine decide the verdict (the functions of the compat corpus's
benchmarks/compat/scoring-function, which promptfoo agrees with)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.config.test_promptfoo_semantics import evalh, run_rows, write

FIXTURE = Path(__file__).resolve().parents[2] / "benchmarks" / "compat" / "scoring-function"

HEAD = """
prompts: ["Tell me about {{topic}}"]
providers: [echo]
defaultTest:
  assertScoringFunction: file://scoring.py
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "p").mkdir()
    for name in ("scoring.py", "scoring.js"):
        shutil.copy(FIXTURE / name, tmp_path / "p" / name)
    return tmp_path / "p"


def _by_description(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["testCase"]["description"]: row for row in rows}


def test_the_functions_result_replaces_the_verdict(project: Path) -> None:
    config = write(
        project / "c.yaml",
        HEAD
        + """
tests:
  - description: mean
    vars: {topic: cats}
    assert:
      - {type: contains, value: cats, metric: topic}
      - {type: contains, value: dogs, metric: other}
      - {type: contains, value: Tell, metric: start}
  - description: named
    vars: {topic: fish}
    threshold: 0.3
    assertScoringFunction: file://scoring.py:any_pass
    assert:
      - {type: contains, value: birds}
      - {type: icontains, value: FISH}
      - {type: equals, value: nope}
  - description: javascript
    vars: {topic: ants}
    assertScoringFunction: file://scoring.js
    assert:
      - {type: contains, value: ants, metric: a}
      - {type: contains, value: bees, metric: b}
""",
    )
    result, rows = run_rows(config)
    by = _by_description(rows)
    mean = by["mean"]  # one assertion failed, but the mean of the named scores (2/3) passes
    assert mean["success"] is True
    assert mean["score"] == pytest.approx(2 / 3)
    assert mean["gradingResult"]["reason"] == "mean of 3 named scores is 0.67"
    named = by["named"]  # componentResults, their assertions and the threshold reach the function
    assert named["success"] is True
    assert named["gradingResult"]["reason"] == "1 of 3 passed (contains first)"
    assert named["namedScores"] == {"passed_share": pytest.approx(1 / 3)}  # returned: they replace
    javascript = by["javascript"]
    assert javascript["success"] is False
    assert javascript["gradingResult"]["reason"] == "lowest named score 0 of 2 results"
    assert result.exit_code == 1


def test_a_function_without_a_grading_result_makes_the_row_an_error(project: Path) -> None:
    config = write(
        project / "c.yaml",
        HEAD
        + """
tests:
  - vars: {topic: cats}
    assertScoringFunction: file://scoring.py:broken
    assert: [{type: contains, value: cats}]
""",
    )
    _, rows = run_rows(config)
    assert rows[0]["failureReason"] == 2
    assert rows[0]["error"].startswith("Scoring function error: file://scoring.py:broken: ")
    assert "must return a GradingResult" in rows[0]["error"]


def test_a_test_without_assertions_is_not_scored_by_it(project: Path) -> None:
    config = write(project / "c.yaml", HEAD + "tests:\n  - vars: {topic: x}\n")
    _, rows = run_rows(config)
    assert rows[0]["success"] is True and rows[0]["score"] == 1


@pytest.mark.parametrize(
    ("value", "where", "problem"),
    [
        ("file://missing.py", "defaultTest.assertScoringFunction", "missing.py was not found"),
        ("file://score.txt", "defaultTest.assertScoringFunction", "must be Python (.py) or JavaScript"),
    ],
)
def test_a_bad_scoring_function_is_a_located_config_error(
    project: Path, value: str, where: str, problem: str
) -> None:
    config = write(
        project / "c.yaml",
        f"prompts: [hi]\nproviders: [echo]\ndefaultTest:\n  assertScoringFunction: {value}\n"
        "tests:\n  - assert: [{type: contains, value: hi}]\n",
    )
    result = evalh("validate", str(config))
    assert result.exit_code == 2
    assert where in result.stderr and problem in result.stderr
    assert "c.yaml:4:" in result.stderr
