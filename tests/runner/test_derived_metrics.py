"""derivedMetrics (promptfoo): math expressions over each column's summed named scores and __count,
computed once in runner/aggregates.py, written among the named scores of the JSON report and printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalh.model import NamedTotal
from evalh.runner.aggregates import derived_metrics
from evalh.runtimes.math_expressions import (
    ExpressionFailed,
    evaluate,
    expression_names,
    expression_problem,
)
from tests.config.test_promptfoo_semantics import evalh, write

CONFIG = """
prompts: ["{{answer}}"]
providers: [echo]
derivedMetrics:
  - name: precision
    value: tp / (tp + fp)
  - name: scaled
    value: 2 * precision ^ 2 / (precision + 1)
  - name: per_row
    value: tp / __count
tests:
  - vars: {answer: "yes"}
    assert: &checks
      - {type: equals, value: "yes", metric: tp}
      - {type: equals, value: "no", metric: fp}
  - vars: {answer: "no"}
    assert: *checks
  - vars: {answer: "yes"}
    assert: *checks
"""


def test_mathjs_syntax_and_safety() -> None:
    assert evaluate("2 * 3 ^ 2", {}) == 18.0  # ^ is a power, above *
    assert evaluate("-2 ^ 2", {}) == -4.0
    assert evaluate("max(a, b) + sqrt(16) + mean(1, 3)", {"a": 1, "b": 2}) == 8.0
    assert evaluate("1 / 0", {}) == float("inf")
    with pytest.raises(ExpressionFailed):
        evaluate("missing + 1", {})
    assert expression_names("max(a, b) / __count + pi") == {"a", "b", "__count"}
    assert expression_problem("a +") is not None
    assert "unknown function 'open'" in (expression_problem("open('x')") or "")
    assert "not allowed" in (expression_problem("a.__class__") or "")
    assert "is not a number" in (expression_problem("'text'") or "")


def test_derived_metrics_run_in_order_over_sums() -> None:
    totals = {"tp": NamedTotal(3.0, 4), "fp": NamedTotal(1.0, 4)}
    metrics = (("p", "tp / (tp + fp)"), ("double", "p * 2"), ("bad", "nope + 1"), ("inf", "1 / 0"))
    assert derived_metrics(metrics, totals, 4) == {"p": 0.75, "double": 1.5, "bad": 0.0, "inf": None}


def test_through_the_cli_json_report_and_console(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", CONFIG)
    report = tmp_path / "out.json"
    result = evalh("run", str(config), "-o", str(report), "--no-progress-bar")
    assert result.exit_code == 1  # the fp assertions fail
    data = json.loads(report.read_text(encoding="utf-8"))["results"]
    named = data["prompts"][0]["metrics"]["namedScores"]
    assert named["tp"] == 2.0 and named["fp"] == 1.0
    assert named["precision"] == pytest.approx(2 / 3)
    assert named["scaled"] == pytest.approx(2 * (2 / 3) ** 2 / (5 / 3))
    assert named["per_row"] == pytest.approx(2 / 3)
    derived = data["aggregates"]["derivedMetrics"]
    assert [row["precision"] for row in derived] == [pytest.approx(2 / 3)]
    assert "Derived metrics" in result.stdout and "per_row" in result.stdout and "0.533" in result.stdout


def test_bad_expressions_are_located_and_unknown_names_warned(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        CONFIG.replace("value: tp / __count", "value: tp / / __count").replace(
            "value: tp / (tp + fp)", "value: tp / (tp + fpp)"
        ),
    )
    result = evalh("validate", str(config))
    assert result.exit_code == 2
    assert "c.yaml:10:5 derivedMetrics[2].value: derived metric 'per_row': not a math expression" in (
        result.stderr
    )
    assert "c.yaml:6:5 derivedMetrics[0].value: derived metric 'precision' uses 'fpp'" in result.stderr
    strict = evalh("validate", str(config), "--strict")
    assert strict.exit_code == 2 and "3 problems" not in strict.stderr
