"""ordinal-distance: hand-computed scores, label reading, errors naming the scale, static checks."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from evalh.assertions.ordinal import ordinal_score
from evalh.assertions.registry import get_assertion
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.model import AssertionResult, AssertionSpec
from evalh.runner.scoring import finalize
from tests.assertions.helpers import declared_problems, grade, make_context

SCALE = ["low", "medium", "high", "urgent"]


def run(output: Any, value: Any, threshold: float | None = None, **config: Any) -> AssertionResult:
    full_config: Mapping[str, Any] = {"scale": SCALE, **config}
    return grade(
        make_context("ordinal-distance", value=value, output=output, threshold=threshold, config=full_config)
    )


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("urgent", "urgent", 1.0),
        ("high", "urgent", 2 / 3),
        ("medium", "urgent", 1 / 3),
        ("low", "urgent", 0.0),
        ("urgent", "low", 0.0),
        ("medium", "high", 2 / 3),
    ],
)
def test_hand_computed_scores(output: str, expected: str, score: float) -> None:
    result = run(output, expected)
    assert result.score == pytest.approx(score)
    assert result.passed is (score == 1.0)  # default threshold 1.0: the exact label
    assert not result.error


def test_reason_and_details() -> None:
    result = run("High", "urgent", threshold=0.66)
    assert result.passed
    assert result.reason == (
        "Label 'high' is 1 step from expected 'urgent' on low < medium < high < urgent: "
        "score 0.6667 is greater than or equal to threshold 0.66"
    )
    assert result.details["distance"] == 1 and result.details["label"] == "high"
    far = run("low", "urgent", threshold=0.5)
    assert far.reason.endswith("score 0 is less than threshold 0.5") and "3 steps" in far.reason


def test_negation_inverts_the_score() -> None:
    result = run("high", "urgent")
    negated = finalize(AssertionSpec(type="ordinal-distance", negate=True, value="urgent"), result)
    assert negated.passed and negated.score == pytest.approx(1 / 3)


def test_label_reading_is_lenient_about_case_space_quotes_and_punctuation() -> None:
    assert run('  "Urgent."\n', "urgent").score == 1.0
    assert run("MEDIUM!", "Medium").score == 1.0
    assert run({"priority": "high"}, "high", field="priority").score == 1.0
    assert run('{"priority": "low", "why": "minor"}', "urgent", field="priority").score == 0.0


def test_numeric_likert_scale_and_unicode_labels() -> None:
    likert = grade(make_context("ordinal-distance", value=5, output="4", config={"scale": [1, 2, 3, 4, 5]}))
    assert likert.score == pytest.approx(0.75)
    config = {"scale": ["faible", "modéré", "élevé"]}
    assert grade(make_context("ordinal-distance", value="Élevé", output="MODÉRÉ", config=config)).score == 0.5
    decomposed = "mode\u0301re\u0301"  # "modéré" with combining accents
    assert (
        grade(make_context("ordinal-distance", value="modéré", output=decomposed, config=config)).score == 1.0
    )


def test_unknown_output_label_is_an_error_naming_the_scale() -> None:
    result = run("severe", "high")
    assert result.error and not result.passed
    assert result.reason == "output label 'severe' is not on the scale low < medium < high < urgent"
    negated = finalize(AssertionSpec(type="ordinal-distance", negate=True, value="high"), result)
    assert negated.error and not negated.passed
    missing = run("plain text", "high", field="priority")
    assert missing.error and "no JSON field 'priority'" in missing.reason


@pytest.mark.parametrize(
    ("value", "config", "problem"),
    [
        ("high", {}, "value: needs config.scale: an ordered list of labels"),
        ("high", {"scale": "low,high"}, "config.scale: must be a list (got a string 'low,high')"),
        ("high", {"scale": ["high"]}, "config.scale: must have at least 2 item(s)"),
        ("high", {"scale": ["High", "high"]}, "value: needs distinct labels in config.scale"),
        (None, {"scale": SCALE}, ": missing required key 'value'"),
        ("severe", {"scale": SCALE}, "value: expected label 'severe' is not on the scale low < medium"),
        ("high", {"scale": SCALE, "field": 3}, "config.field: must be a string"),
    ],
)
def test_declared_rules(value: Any, config: dict[str, Any], problem: str) -> None:
    given = {"value": value} if value is not None else {}
    assertion = {"type": "ordinal-distance", "config": config, **given}
    found = declared_problems(assertion)
    assert any(text.startswith(problem) for text in found), found


def test_declared_rules_accept_good_values() -> None:
    definition = get_assertion("ordinal-distance")
    assert definition is not None
    assert definition.family == "ordinal" and definition.default_threshold == 1.0
    assert (
        declared_problems({"type": "ordinal-distance", "value": "Urgent", "config": {"scale": SCALE}}) == []
    )


@pytest.mark.parametrize(("expected", "valid"), [("high", True), ("severe", False)])
def test_a_templated_value_is_checked_once_rendered(tmp_path: Path, expected: str, valid: bool) -> None:
    config = tmp_path / "evalh.yaml"
    config.write_text(
        f"tests:\n  - vars: {{expected: {expected}}}\n    output: high\n    assert:\n"
        "      - {type: ordinal-distance, value: '{{ expected }}', config: {scale: [low, high]}}\n",
        encoding="utf-8",
    )
    if valid:
        load_suite(config)
        return
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    shown = caught.value.render()
    assert "tests[0].assert[0].value: ordinal-distance: expected label 'severe' is not on the scale" in shown


def test_score_is_symmetric_and_falls_by_equal_steps() -> None:
    for size in range(2, 8):
        scores = [ordinal_score(i, 0, size) for i in range(size)]
        assert scores[0] == 1.0 and scores[-1] == 0.0
        steps = {round(a - b, 12) for a, b in pairwise(scores)}
        assert steps == {round(1 / (size - 1), 12)}
        assert all(
            ordinal_score(i, j, size) == ordinal_score(j, i, size) for i in range(size) for j in range(size)
        )


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "ordinal-distance": {"value": "high", "output": "High.", "config": {"scale": ["low", "medium", "high"]}},
}
